// OpTraits: one row per op type holding everything mixprec's stages know about that op, so a
// new op is one row (like ggml's type_traits):
//   analysis  what the op is for compute, quantization, layout and post-processing;
//   config    what a config may do with it (quantize by default, never quantize, which inputs
//             are weight, bias and scaling constant) and the element type of its outputs;
//   rewrite   the output-channel axis of its weight (per-channel quantization) and the ONNX
//             Runtime CPU fusion group it belongs to (where OrtCpuFusion places Q/DQ);
//   macs      the formula that counts its multiply-accumulates.
// Ops without a row are plain float ops: every column at its default (op_traits() returns such
// a row for them).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include <onnx/onnx_pb.h>

#include "ir/onnx_names.h"

namespace mixprec::ir {

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
// Element-wise op that belongs to a decomposed normalization when it reads the output of a
// kNormalization op: LayerNorm's "x - mean", "var + eps" and "* gamma", GELU's "erf + 1".
inline constexpr uint8_t kNormalizationOperand = 1 << 4;
// The output lies in a known bounded interval (Sigmoid, HardSigmoid, Tanh, Softmax, Clip):
// nothing beyond it to clip, so calibration keeps the range the data shows (qdq_pairs.cpp).
inline constexpr uint8_t kBoundedOutput = 1 << 5;

// Input bit masks (bit i = input i; inputs past bit 15 are never selected).
inline constexpr uint16_t kAllInputs = 0xFFFF;
inline constexpr bool mask_has_input(uint16_t mask, int index) { return index < 16 && ((mask >> index) & 1u) != 0; }

// What node selection does with the op (config stage).
enum class ConfigRole : uint8_t {
  kOther,          // quantized only when listed in OpTypesToQuantize
  kWeighted,       // compute op with weight (and bias) inputs; quantized by default
  kArithmetic,     // arithmetic an int8 accelerator runs natively; quantized by default
  kShapeIndex,     // computes shapes or indices: never quantized
  kNormalization,  // decomposed LayerNorm/Softmax/GELU arithmetic: never quantized
};

// The output-channel axis of the weight (what per-channel quantization runs along).
enum class WeightAxis : uint8_t {
  kAxis0,       // W is [C_out, ...] (Conv)
  kAxis1,       // W is [C_in, C_out / group, ...] (ConvTranspose)
  kGemmTransB,  // B is [N, K] with transB, else [K, N]: axis 0 with transB, else 1
  kLast,        // B is [..., K, N] (MatMul)
};

// How the op's multiply-accumulates follow from its shapes (W = the weight_input operand,
// X / A = input 0; see include/mixprec/macs.h for the formulas).
enum class MacFormula : uint8_t {
  kNone,           // not counted
  kConv,           // output elements x prod(W dims[1:])
  kConvTranspose,  // input elements x prod(W dims[1:])
  kMatMul,         // output elements x K
  kGemm,           // M x N x K
  kRecurrent,      // seq x batch x (W elements + R elements)  (LSTM, GRU, RNN)
};
inline constexpr size_t kMacFormulaCount = 6;

// How a node's outputs get their element type when the graph does not declare it (default-
// domain rows only: other domains' output types are unknown).
enum class OutputType : uint8_t {
  kUnknown,
  kInput0,          // same as input 0 (type-preserving data movement and arithmetic)
  kInput1,          // same as input 1
  kInt64,
  kBool,
  kCastTo,          // the `to` attribute
  kValueAttribute,  // the type of the value attribute (Constant, ConstantOfShape)
};

// The group of ONNX Runtime's CPU QDQ selectors (qdq_selector_action_transformer and the
// Relu/Clip-Quantize fusions) the op belongs to: which "DQ -> op -> Q" pattern its CPU
// provider turns into an integer kernel, or runs on the 8-bit codes.
enum class OrtFusionGroup : uint8_t {
  kNone,
  kConv,         // DQ x, DQ w, DQ b -> Conv -> Q                      => QLinearConv
  kMatMul,       // DQ a, DQ b -> MatMul -> Q                          => QLinearMatMul
  kGemm,         // DQ a, DQ b, DQ c -> Gemm -> Q                      => QGemm
  kBinary,       // DQ, DQ -> Add/Mul -> Q                             => QLinearAdd/QLinearMul
  kVariadic,     // DQ... -> Concat -> Q                               => QLinearConcat
  kUnary,        // DQ -> op -> Q                                      => QLinear<op>
  kDropQdq,      // DQ -> data movement -> Q, same scale and zero point => the op on the codes
  kQuantizeClamp,  // op -> Q whose range already clamps (Relu, Clip) => the op is dropped
};

struct OpTraits {
  std::string_view domain;   // "" = default domain; "*" = any non-default domain (suffix rows)
  std::string_view op_type;  // exact op type; for "*" rows, a suffix of the op type
  // Analysis.
  uint8_t flags = 0;
  QuantRole quant_role = QuantRole::kNone;
  uint16_t operand_inputs = 0;     // compute ops: activation and weight inputs (not bias)
  uint16_t quant_type_inputs = 0;  // quant ops: inputs whose element type is the quantized
                                   // type (zero points, quantized operands)
  // Config.
  ConfigRole config_role = ConfigRole::kOther;
  // The weight (W / B) and bias operands; the MAC formula reads weight_input. A config
  // quantizes them as weight and bias only in kWeighted rows (config_weight_input()).
  int8_t weight_input = -1;
  int8_t bias_input = -1;
  // Further constant weight operands quantized with the weight spec (kWeighted rows): a
  // recurrent op's recurrence weights R and peepholes P. Per channel along the same axis.
  uint16_t extra_weight_inputs = 0;
  // kNormalization: when this input is a constant, the op is plain scaling (hardswish's "/ 6"),
  // not normalization arithmetic; -1 when the op always normalizes.
  int8_t scaling_input = -1;
  OutputType output_type = OutputType::kUnknown;
  // Rewrite.
  WeightAxis weight_axis = WeightAxis::kAxis0;
  OrtFusionGroup ort_fusion = OrtFusionGroup::kNone;
  // MACs.
  MacFormula macs = MacFormula::kNone;

  // The inputs a config's weight and bias specs apply to; -1 outside kWeighted rows.
  int config_weight_input() const { return config_role == ConfigRole::kWeighted ? weight_input : -1; }
  int config_bias_input() const { return config_role == ConfigRole::kWeighted ? bias_input : -1; }
};

// The row for (domain, op_type), or nullptr for ops without one. Non-default-domain ops not
// in the table match the suffix rows ("...DequantizeLinear", "...QuantizeLinear",
// "...QuantizeDequantize"), so vendor quantize ops are recognised without listing every vendor.
const OpTraits* find_op_traits(std::string_view domain, std::string_view op_type);
// The row, or a row with every column at its default (a plain float op).
const OpTraits& op_traits(std::string_view domain, std::string_view op_type);
const OpTraits& op_traits(const onnx::NodeProto& node);
// Every row, in table order (default op types to quantize keep this order).
std::span<const OpTraits> op_traits_table();

// The output-channel axis of `node`'s weight, which has `weight_rank` dims.
int64_t weight_channel_axis(const OpTraits& traits, const onnx::NodeProto& node, int weight_rank);
// The reduction (input-channel) axis of `node`'s weight of `weight_rank` dims, along which block
// formats and block-wise parameters group elements: Conv's input channels (1), ConvTranspose's
// (0), K of a MatMul/Gemm weight (by transB), the input axis of a recurrent weight (last).
int64_t weight_reduction_axis(const onnx::NodeProto& node, int64_t weight_rank);

// The doc_string of the Mul SmoothQuant puts in front of MatMuls whose activation it could not
// fold into a producer (algorithms/smooth_quant.cpp): the config stage keeps such a node float,
// so its activation is quantized once, after smoothing.
inline constexpr std::string_view kSmoothQuantScaleDoc = "mixprec: SmoothQuant activation scale (kept float)";

}  // namespace mixprec::ir
