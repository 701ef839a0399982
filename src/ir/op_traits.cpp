#include "ir/op_traits.h"

#include <cassert>
#include <initializer_list>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/graph_view.h"

namespace mixprec::ir {
namespace {

constexpr uint16_t inputs(std::initializer_list<int> indices) {
  uint16_t mask = 0;
  for (int i : indices) mask = static_cast<uint16_t>(mask | (1u << i));
  return mask;
}

constexpr std::string_view kMs = "com.microsoft";
constexpr std::string_view kAnyCustom = "*";

using QR = QuantRole;
using CR = ConfigRole;
using Ax = WeightAxis;
using Out = OutputType;
using Ort = OrtFusionGroup;
using Mac = MacFormula;

// The rows, by what the op is. Columns left out keep their defaults (OpTraits). Sources: the
// ONNX and com.microsoft operator specs (inputs, output types), ONNX Runtime's CPU QDQ
// selectors (ort_fusion: qdq_selector_action_transformer.cc, relu/clip_quantizelinear.cc).
// clang-format off
constexpr OpTraits kOpTable[] = {
  // --- Float compute. The weighted ops come first: default_op_types_to_quantize() lists them
  // in this order, then the arithmetic below.
  {.op_type = "Conv",          .flags = kCompute, .operand_inputs = inputs({0, 1}),
   .config_role = CR::kWeighted, .weight_input = 1, .bias_input = 2, .weight_axis = Ax::kAxis0,
   .ort_fusion = Ort::kConv, .macs = Mac::kConv},
  {.op_type = "ConvTranspose", .flags = kCompute, .operand_inputs = inputs({0, 1}),
   .config_role = CR::kWeighted, .weight_input = 1, .bias_input = 2, .weight_axis = Ax::kAxis1,
   .macs = Mac::kConvTranspose},
  {.op_type = "Gemm",          .flags = kCompute, .operand_inputs = inputs({0, 1}),
   .config_role = CR::kWeighted, .weight_input = 1, .bias_input = 2, .weight_axis = Ax::kGemmTransB,
   .ort_fusion = Ort::kGemm, .macs = Mac::kGemm},
  {.op_type = "MatMul",        .flags = kCompute, .operand_inputs = inputs({0, 1}),
   .config_role = CR::kWeighted, .weight_input = 1, .weight_axis = Ax::kLast,
   .ort_fusion = Ort::kMatMul, .macs = Mac::kMatMul},
  {.op_type = "Einsum",    .flags = kCompute, .operand_inputs = kAllInputs},
  {.op_type = "Attention", .flags = kCompute, .operand_inputs = inputs({0, 1, 2})},
  // Recurrent ops: X, initial_h (and initial_c) get the input spec, W [dirs, gates x hidden, in],
  // R and P the weight spec (per channel along the gates x hidden axis), B the bias spec. ONNX
  // Runtime's CPU LSTM/GRU/RNN take float only, so an integer format is emulated through DQ
  // (Q/DQ on the activations, DQ on the stored int8 weights) and bf16/fp16 through cast pairs;
  // the recurrence itself (gates, cell and hidden state between time steps) runs inside the op
  // in float and cannot be quantized from the graph.
  {.op_type = "LSTM",      .flags = kCompute, .operand_inputs = inputs({0, 1, 2}),
   .config_role = CR::kWeighted, .weight_input = 1, .bias_input = 3, .extra_weight_inputs = inputs({2, 7}),
   .weight_axis = Ax::kAxis1, .macs = Mac::kRecurrent},
  {.op_type = "GRU",       .flags = kCompute, .operand_inputs = inputs({0, 1, 2}),
   .config_role = CR::kWeighted, .weight_input = 1, .bias_input = 3, .extra_weight_inputs = inputs({2}),
   .weight_axis = Ax::kAxis1, .macs = Mac::kRecurrent},
  {.op_type = "RNN",       .flags = kCompute, .operand_inputs = inputs({0, 1, 2}),
   .config_role = CR::kWeighted, .weight_input = 1, .bias_input = 3, .extra_weight_inputs = inputs({2}),
   .weight_axis = Ax::kAxis1, .macs = Mac::kRecurrent},
  {.domain = kMs, .op_type = "Attention",           .flags = kCompute, .operand_inputs = inputs({0, 1})},
  {.domain = kMs, .op_type = "MultiHeadAttention",  .flags = kCompute, .operand_inputs = inputs({0, 1, 2})},
  {.domain = kMs, .op_type = "GroupQueryAttention", .flags = kCompute, .operand_inputs = inputs({0, 1, 2})},
  {.domain = kMs, .op_type = "FusedConv",   .flags = kCompute, .operand_inputs = inputs({0, 1}),
   .weight_input = 1, .bias_input = 2, .macs = Mac::kConv},
  {.domain = kMs, .op_type = "FusedGemm",   .flags = kCompute, .operand_inputs = inputs({0, 1}),
   .weight_input = 1, .bias_input = 2, .macs = Mac::kGemm},
  {.domain = kMs, .op_type = "FusedMatMul", .flags = kCompute, .operand_inputs = inputs({0, 1})},

  // --- Quantized compute kernels (QOperator format, dynamic and weight-only quantization).
  // They have the float kernels' shapes, with their operands at other indices.
  {.op_type = "QLinearConv",   .flags = kCompute, .quant_role = QR::kQOperator,
   .quant_type_inputs = inputs({2, 5, 7}), .weight_input = 3, .bias_input = 8, .macs = Mac::kConv},
  {.op_type = "QLinearMatMul", .flags = kCompute, .quant_role = QR::kQOperator,
   .quant_type_inputs = inputs({2, 5, 7}), .weight_input = 3, .macs = Mac::kMatMul},
  {.op_type = "ConvInteger",   .flags = kCompute, .quant_role = QR::kQOperator,
   .quant_type_inputs = inputs({0, 1, 2, 3}), .weight_input = 1, .macs = Mac::kConv},
  {.op_type = "MatMulInteger", .flags = kCompute, .quant_role = QR::kQOperator,
   .quant_type_inputs = inputs({0, 1, 2, 3}), .weight_input = 1, .macs = Mac::kMatMul},
  {.domain = kMs, .op_type = "QGemm", .flags = kCompute, .quant_role = QR::kQOperator,
   .quant_type_inputs = inputs({2, 5, 8}), .weight_input = 3, .bias_input = 6, .macs = Mac::kGemm},
  {.domain = kMs, .op_type = "QAttention",            .flags = kCompute, .quant_role = QR::kQOperator,
   .quant_type_inputs = inputs({6, 7})},
  {.domain = kMs, .op_type = "DynamicQuantizeMatMul", .flags = kCompute, .quant_role = QR::kQOperator,
   .quant_type_inputs = inputs({1, 3})},
  {.domain = kMs, .op_type = "MatMulIntegerToFloat",  .flags = kCompute, .quant_role = QR::kQOperator,
   .quant_type_inputs = inputs({0, 1, 4, 5})},
  {.domain = kMs, .op_type = "DynamicQuantizeLSTM",   .flags = kCompute, .quant_role = QR::kQOperator},
  {.domain = kMs, .op_type = "MatMulNBits",           .flags = kCompute, .quant_role = QR::kQOperator},

  // --- Quantized non-compute ops.
  {.op_type = "DynamicQuantizeLinear", .quant_role = QR::kQOperator},
  {.domain = kMs, .op_type = "QLinearAdd",               .quant_role = QR::kQOperator, .quant_type_inputs = inputs({2, 5, 7})},
  {.domain = kMs, .op_type = "QLinearMul",               .quant_role = QR::kQOperator, .quant_type_inputs = inputs({2, 5, 7})},
  {.domain = kMs, .op_type = "QLinearSigmoid",           .quant_role = QR::kQOperator, .quant_type_inputs = inputs({2, 4})},
  {.domain = kMs, .op_type = "QLinearLeakyRelu",         .quant_role = QR::kQOperator, .quant_type_inputs = inputs({2, 4})},
  {.domain = kMs, .op_type = "QLinearSoftmax",           .quant_role = QR::kQOperator, .quant_type_inputs = inputs({2, 4})},
  {.domain = kMs, .op_type = "QLinearAveragePool",       .quant_role = QR::kQOperator, .quant_type_inputs = inputs({2, 4})},
  {.domain = kMs, .op_type = "QLinearGlobalAveragePool", .quant_role = QR::kQOperator, .quant_type_inputs = inputs({2, 4})},
  {.domain = kMs, .op_type = "QLinearConcat",            .quant_role = QR::kQOperator, .quant_type_inputs = inputs({1})},

  // --- Quantize / dequantize.
  {.op_type = "QuantizeLinear",   .flags = kRepresentationOnly, .quant_role = QR::kQuantize,
   .quant_type_inputs = inputs({2})},
  {.op_type = "DequantizeLinear", .flags = kRepresentationOnly, .quant_role = QR::kDequantize,
   .quant_type_inputs = inputs({0, 2}), .output_type = Out::kInput1},
  // Vendor quantize ops in any other domain, matched by suffix (com.microsoft QuantizeLinear,
  // com.amd.quark ExtendedQuantizeLinear / BFPQuantizeDequantize, com.vai.quantize
  // VitisDequantizeLinear, ...). Suffixes are case-sensitive: "DequantizeLinear" does not end
  // with "QuantizeLinear".
  {.domain = kAnyCustom, .op_type = "DequantizeLinear",   .flags = kRepresentationOnly,
   .quant_role = QR::kDequantize, .quant_type_inputs = inputs({0, 2})},
  {.domain = kAnyCustom, .op_type = "QuantizeLinear",     .flags = kRepresentationOnly,
   .quant_role = QR::kQuantize, .quant_type_inputs = inputs({2})},
  {.domain = kAnyCustom, .op_type = "QuantizeDequantize", .flags = kRepresentationOnly,
   .quant_role = QR::kQuantizeDequantize},
  // com.vai.quantize BFPFixNeuron / MXFixNeuron: the block ops' former names.
  {.domain = kAnyCustom, .op_type = "FixNeuron", .flags = kRepresentationOnly,
   .quant_role = QR::kQuantizeDequantize},

  // --- Plumbing: the same values in another place or representation.
  {.op_type = "Identity",  .flags = kLayoutOnly | kRepresentationOnly, .output_type = Out::kInput0},
  {.op_type = "Cast",      .flags = kRepresentationOnly, .output_type = Out::kCastTo},
  {.op_type = "CastLike",  .output_type = Out::kInput1},
  {.op_type = "Reshape",   .flags = kLayoutOnly, .output_type = Out::kInput0, .ort_fusion = Ort::kDropQdq},
  {.op_type = "Transpose", .flags = kLayoutOnly, .output_type = Out::kInput0, .ort_fusion = Ort::kDropQdq},
  {.op_type = "Squeeze",   .flags = kLayoutOnly, .output_type = Out::kInput0, .ort_fusion = Ort::kDropQdq},
  {.op_type = "Unsqueeze", .flags = kLayoutOnly, .output_type = Out::kInput0, .ort_fusion = Ort::kDropQdq},
  {.op_type = "Flatten",   .flags = kLayoutOnly, .output_type = Out::kInput0, .ort_fusion = Ort::kDropQdq},
  // Data movement: input 0 is the data (ORT runs kDropQdq ops on the codes).
  {.op_type = "Concat",         .output_type = Out::kInput0, .ort_fusion = Ort::kVariadic},
  {.op_type = "Split",          .output_type = Out::kInput0},
  {.op_type = "Slice",          .output_type = Out::kInput0, .ort_fusion = Ort::kDropQdq},
  {.op_type = "Gather",         .output_type = Out::kInput0, .ort_fusion = Ort::kDropQdq},
  {.op_type = "GatherElements", .output_type = Out::kInput0, .ort_fusion = Ort::kDropQdq},
  {.op_type = "GatherND",       .output_type = Out::kInput0},
  {.op_type = "Expand",         .output_type = Out::kInput0, .ort_fusion = Ort::kDropQdq},
  {.op_type = "Tile",           .output_type = Out::kInput0, .ort_fusion = Ort::kDropQdq},
  {.op_type = "MaxPool",        .ort_fusion = Ort::kDropQdq},
  {.op_type = "Resize",         .ort_fusion = Ort::kDropQdq},
  {.op_type = "Where",          .output_type = Out::kInput1},

  // --- Arithmetic an int8 accelerator runs natively (quantized by default).
  {.op_type = "Add", .flags = kNormalizationOperand, .config_role = CR::kArithmetic,
   .output_type = Out::kInput0, .ort_fusion = Ort::kBinary},
  {.op_type = "Mul", .flags = kNormalizationOperand, .config_role = CR::kArithmetic,
   .output_type = Out::kInput0, .ort_fusion = Ort::kBinary},
  {.op_type = "AveragePool",       .config_role = CR::kArithmetic, .ort_fusion = Ort::kUnary},
  {.op_type = "GlobalAveragePool", .config_role = CR::kArithmetic, .ort_fusion = Ort::kUnary},
  // Other element-wise ops.
  {.op_type = "Sub",   .flags = kNormalizationOperand, .output_type = Out::kInput0},
  {.op_type = "Mod",   .output_type = Out::kInput0},
  {.op_type = "Neg",   .output_type = Out::kInput0},
  {.op_type = "Abs",   .output_type = Out::kInput0},
  {.op_type = "Min",   .output_type = Out::kInput0},
  {.op_type = "Max",   .output_type = Out::kInput0},
  {.op_type = "Floor", .output_type = Out::kInput0},
  {.op_type = "Ceil",  .output_type = Out::kInput0},
  {.op_type = "Round", .output_type = Out::kInput0},
  {.op_type = "Clip",  .flags = kBoundedOutput, .output_type = Out::kInput0, .ort_fusion = Ort::kQuantizeClamp},
  {.op_type = "Relu",  .ort_fusion = Ort::kQuantizeClamp},
  // ORT's unary selector also takes Softmax; OrtCpuFusion does not place its output Q.
  {.op_type = "Sigmoid",   .flags = kBoundedOutput, .ort_fusion = Ort::kUnary},
  {.op_type = "HardSigmoid", .flags = kBoundedOutput},
  {.op_type = "Tanh",        .flags = kBoundedOutput},
  {.op_type = "Softmax",     .flags = kBoundedOutput},
  {.op_type = "LeakyRelu", .ort_fusion = Ort::kUnary},
  {.op_type = "ReduceProd", .output_type = Out::kInput0},
  {.op_type = "ReduceMin",  .output_type = Out::kInput0},
  {.op_type = "ReduceMax",  .output_type = Out::kInput0},

  // --- Normalization arithmetic (never quantized): a scale that collapses "var + eps" or
  // "x - mean" to a handful of codes ruins the result.
  {.op_type = "Pow",        .config_role = CR::kNormalization},
  {.op_type = "Sqrt",       .config_role = CR::kNormalization},
  {.op_type = "Reciprocal", .config_role = CR::kNormalization},
  {.op_type = "Div",        .config_role = CR::kNormalization, .scaling_input = 1, .output_type = Out::kInput0},
  {.op_type = "ReduceMean", .config_role = CR::kNormalization},
  {.op_type = "ReduceSum",  .config_role = CR::kNormalization, .output_type = Out::kInput0},
  {.op_type = "Exp",        .config_role = CR::kNormalization},
  {.op_type = "Erf",        .config_role = CR::kNormalization},

  // --- Shapes, indices and masks (never quantized).
  {.op_type = "Shape",           .config_role = CR::kShapeIndex, .output_type = Out::kInt64},
  {.op_type = "Size",            .config_role = CR::kShapeIndex, .output_type = Out::kInt64},
  {.op_type = "Range",           .config_role = CR::kShapeIndex, .output_type = Out::kInput0},
  {.op_type = "ConstantOfShape", .config_role = CR::kShapeIndex, .output_type = Out::kValueAttribute},
  {.op_type = "NonZero",         .config_role = CR::kShapeIndex, .output_type = Out::kInt64},
  {.op_type = "Constant", .output_type = Out::kValueAttribute},
  {.op_type = "ArgMax",   .output_type = Out::kInt64},
  {.op_type = "ArgMin",   .output_type = Out::kInt64},
  {.op_type = "Equal",          .output_type = Out::kBool},
  {.op_type = "Less",           .output_type = Out::kBool},
  {.op_type = "LessOrEqual",    .output_type = Out::kBool},
  {.op_type = "Greater",        .output_type = Out::kBool},
  {.op_type = "GreaterOrEqual", .output_type = Out::kBool},
  {.op_type = "Not",            .output_type = Out::kBool},
  {.op_type = "And",            .output_type = Out::kBool},
  {.op_type = "Or",             .output_type = Out::kBool},
  {.op_type = "Xor",            .output_type = Out::kBool},
  {.op_type = "IsNaN",          .output_type = Out::kBool},
  {.op_type = "IsInf",          .output_type = Out::kBool},

  // --- Detection post-processing.
  {.op_type = "NonMaxSuppression", .flags = kDetectionPostprocess, .output_type = Out::kInt64},
  {.op_type = "TopK",              .flags = kDetectionPostprocess},
  {.op_type = "ScatterND",         .flags = kDetectionPostprocess},
};
// clang-format on

constexpr OpTraits kPlainOp{};

struct TableIndex {
  std::unordered_map<std::string, const OpTraits*> exact;  // "domain:op_type", default domain ""
  std::vector<const OpTraits*> custom_suffixes;

  TableIndex() {
    for (const OpTraits& row : kOpTable) {
      if (row.domain == kAnyCustom) {
        custom_suffixes.push_back(&row);
        continue;
      }
      [[maybe_unused]] const bool unique =
          exact.emplace(std::string(row.domain) + ":" + std::string(row.op_type), &row).second;
      assert(unique && "one row per (domain, op_type)");
    }
  }
};

const TableIndex& table_index() {
  static const TableIndex index;
  return index;
}

}  // namespace

const OpTraits* find_op_traits(std::string_view domain, std::string_view op_type) {
  const TableIndex& index = table_index();
  const std::string key =
      std::string(is_default_domain(domain) ? std::string_view() : domain) + ":" + std::string(op_type);
  if (const auto it = index.exact.find(key); it != index.exact.end()) return it->second;
  if (is_default_domain(domain)) return nullptr;
  for (const OpTraits* row : index.custom_suffixes) {
    if (op_type.ends_with(row->op_type)) return row;
  }
  return nullptr;
}

const OpTraits& op_traits(std::string_view domain, std::string_view op_type) {
  const OpTraits* traits = find_op_traits(domain, op_type);
  return traits != nullptr ? *traits : kPlainOp;
}

const OpTraits& op_traits(const onnx::NodeProto& node) { return op_traits(node.domain(), node.op_type()); }

std::span<const OpTraits> op_traits_table() { return kOpTable; }

int64_t weight_reduction_axis(const onnx::NodeProto& node, int64_t weight_rank) {
  const std::string& op = node.op_type();
  if (weight_rank < 2) return 0;
  if (op == "ConvTranspose") return 0;
  if (op == "MatMul") return weight_rank - 2;
  if (op == "Gemm") return int_attribute(node, "transB").value_or(0) != 0 ? 1 : 0;
  if (op == "LSTM" || op == "GRU" || op == "RNN") return weight_rank - 1;
  return 1;
}

int64_t weight_channel_axis(const OpTraits& traits, const onnx::NodeProto& node, int weight_rank) {
  switch (traits.weight_axis) {
    case WeightAxis::kAxis0: return 0;
    case WeightAxis::kAxis1: return 1;
    case WeightAxis::kGemmTransB:
      return int_attribute(node, "transB").value_or(0) != 0 ? 0 : 1;
    case WeightAxis::kLast: return weight_rank - 1;
  }
  return 0;
}

}  // namespace mixprec::ir
