// The data the analysis runs on: one row per op it knows (what the op is for compute,
// quantization, layout and post-processing), and the names of ONNX element types.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <onnx/onnx_pb.h>

namespace mixprec::analysis {

enum class QuantRole : uint8_t {
  kNone,
  kQuantize,            // float -> quantized (QuantizeLinear, ExtendedQuantizeLinear, ...)
  kDequantize,          // quantized -> float
  kQuantizeDequantize,  // float -> float through a quantized grid (BFP/MX fake quantization)
  kQOperator,           // quantized kernel or element-wise op on quantized tensors
};

// OpTraits::flags bits.
inline constexpr uint8_t kCompute = 1 << 0;               // counts for coverage and islands
inline constexpr uint8_t kLayoutOnly = 1 << 1;            // moves values, never changes them
inline constexpr uint8_t kRepresentationOnly = 1 << 2;    // same values, another representation
inline constexpr uint8_t kDetectionPostprocess = 1 << 3;  // NMS-style box selection

// Input bit masks (bit i = input i; inputs past bit 15 are never selected).
inline constexpr uint16_t kAllInputs = 0xFFFF;
inline constexpr bool mask_has_input(uint16_t mask, int index) { return index < 16 && ((mask >> index) & 1u) != 0; }

struct OpTraits {
  std::string_view domain;  // "" = default domain; "*" = any non-default domain (suffix rows)
  std::string_view op_type; // exact op type; for "*" rows, a suffix of the op type
  uint8_t flags = 0;
  QuantRole quant_role = QuantRole::kNone;
  uint16_t operand_inputs = 0;    // compute ops: activation and weight inputs (not bias)
  uint16_t quant_type_inputs = 0; // quant ops: inputs whose element type is the quantized type
                                  // (zero points, quantized operands)
};

// The row for (domain, op_type), or nullptr for ops the analysis treats as plain float ops.
// Non-default-domain ops not in the table match the suffix rows ("...DequantizeLinear",
// "...QuantizeLinear", "...QuantizeDequantize"), so vendor quantize ops are recognised without
// listing every vendor.
const OpTraits* find_op_traits(std::string_view domain, std::string_view op_type);

bool is_default_domain(std::string_view domain);
// "op_type" for the default domain, "domain:op_type" otherwise.
std::string qualified_op_type(const onnx::NodeProto& node);

// Lower-case name of an ONNX TensorProto element type ("float32", "bfloat16", "int4", ...);
// "undefined" for 0 and "onnx_type_<n>" for types newer than this table.
std::string onnx_type_name(int32_t elem_type);

}  // namespace mixprec::analysis
