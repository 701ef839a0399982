// The quantize, dequantize and block fake-quantization operators mixprec recognises, by
// (op_type, domain): ONNX's, com.microsoft's, Quark's com.amd.quark ones and their older
// com.vai.quantize names. Shared by strip_quantization and vaip_patch.
#pragma once

#include <cstddef>

#include <onnx/onnx_pb.h>

namespace mixprec::rewrite {

struct QuantOp {
  const char* op_type;
  const char* domain;
};

inline constexpr QuantOp kQuantizeOps[] = {{"QuantizeLinear", ""},
                                           {"QuantizeLinear", "ai.onnx"},
                                           {"QuantizeLinear", "com.microsoft"},
                                           {"ExtendedQuantizeLinear", "com.amd.quark"},
                                           {"VitisQuantizeLinear", "com.vai.quantize"}};
inline constexpr QuantOp kDequantizeOps[] = {{"DequantizeLinear", ""},
                                             {"DequantizeLinear", "ai.onnx"},
                                             {"DequantizeLinear", "com.microsoft"},
                                             {"ExtendedDequantizeLinear", "com.amd.quark"},
                                             {"VitisDequantizeLinear", "com.vai.quantize"}};
// One node that rounds its input in place (fake quantization).
inline constexpr QuantOp kBlockOps[] = {{"BFPQuantizeDequantize", "com.amd.quark"},
                                        {"MXQuantizeDequantize", "com.amd.quark"},
                                        {"BFPFixNeuron", "com.vai.quantize"},
                                        {"MXFixNeuron", "com.vai.quantize"}};

template <size_t N>
inline bool is_one_of(const onnx::NodeProto& node, const QuantOp (&ops)[N]) {
  for (const QuantOp& op : ops) {
    if (node.op_type() == op.op_type && node.domain() == op.domain) return true;
  }
  return false;
}

}  // namespace mixprec::rewrite
