// The quantize, dequantize and block fake-quantization operators mixprec recognises, by
// (op_type, domain): ONNX's, com.microsoft's, Quark's com.amd.quark ones and their older
// com.vai.quantize names. Shared by strip_quantization and vaip_patch.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include <onnx/onnx_pb.h>

#include "ir/graph_view.h"
#include "mixprec/tensor.h"

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

// The values of dequantize node `dq` of `view` when its codes, scale and zero point are all
// initializers: (q - zp) x scale per tensor, along its axis (default 1), or per block of its
// block_size along it. nullopt when one of them is computed. kBadInput (naming `label`) for a
// zero point that is not a finite code or an axis outside the codes' shape. Shared by
// strip_quantization (folding weights back to floats) and bias correction (the bias as stored).
std::optional<Tensor> dequantize_constant(const ir::GraphView& view, const onnx::NodeProto& dq, const std::string& label);

}  // namespace mixprec::rewrite
