// Op rules for node selection: what the config may do with each op type (quantize by default,
// never quantize, which inputs are weight and bias) and a light element-type inference that
// recognises shape and index computations in graphs without value_info.
//
// Both tables cover default-domain ops only; ops of other domains are kOther with unknown
// output types.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>

#include <onnx/onnx_pb.h>

#include "ir/graph_view.h"

namespace mixprec::selection {

enum class OpRole : uint8_t {
  kOther,          // quantized only when listed in OpTypesToQuantize
  kWeighted,       // compute op with weight (and bias) inputs; quantized by default
  kArithmetic,     // arithmetic an int8 accelerator runs natively; quantized by default
  kShapeIndex,     // computes shapes or indices: never quantized
  kNormalization,  // decomposed LayerNorm/Softmax/GELU arithmetic: never quantized
};

struct OpRule {
  std::string_view op_type;
  OpRole role = OpRole::kOther;
  int weight_input = -1;  // kWeighted: index of the weight input
  int bias_input = -1;    // kWeighted: index of the bias input; -1 when the op has none
  // kNormalization: when this input is a constant, the op is plain scaling (hardswish's "/ 6"),
  // not normalization arithmetic; -1 when the op always normalizes.
  int scaling_input = -1;
};

// The row for an op, or a kOther row (no weight, no bias) for ops outside the table.
const OpRule& op_rule(std::string_view domain, std::string_view op_type);
std::span<const OpRule> op_rules();

// Element-wise ops that belong to a decomposed normalization when they read the output of a
// kNormalization op: LayerNorm's "x - mean", "var + eps" and "* gamma", GELU's "erf + 1".
inline constexpr std::string_view kNormalizationOperandOps[] = {"Add", "Sub", "Mul"};

// ONNX element types of the values of one graph (not of its subgraphs): declared types
// (inputs, outputs, value_info) and initializers first, then, in topological order, node
// outputs from the output-type table (Shape → int64, Cast → its `to`, Gather/Concat/Reshape/...
// → their data input's type, ...). Values whose type cannot be told are absent.
std::unordered_map<std::string, int32_t> infer_element_types(const ir::GraphView& graph);

// Integer and bool element types: the types of shapes, indices and masks (nothing to quantize).
bool is_integer_or_bool_type(int32_t elem_type);

}  // namespace mixprec::selection
