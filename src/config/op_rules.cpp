#include "config/op_rules.h"

#include <algorithm>
#include <optional>

#include "analysis/op_table.h"
#include "mixprec/config.h"

namespace mixprec::selection {
namespace {

using enum OpRole;
using onnx::TensorProto;

// clang-format off
constexpr OpRule kOpRules[] = {
  // op_type               role             weight bias scaling
  {"Conv",                 kWeighted,       1,     2},
  {"ConvTranspose",        kWeighted,       1,     2},
  {"Gemm",                 kWeighted,       1,     2},
  {"MatMul",               kWeighted,       1,    -1},
  {"Add",                  kArithmetic},
  {"Mul",                  kArithmetic},
  {"AveragePool",          kArithmetic},
  {"GlobalAveragePool",    kArithmetic},
  {"Shape",                kShapeIndex},
  {"Size",                 kShapeIndex},
  {"Range",                kShapeIndex},
  {"ConstantOfShape",      kShapeIndex},
  {"NonZero",              kShapeIndex},
  // A scale that collapses "var + eps" or "x - mean" to a handful of codes ruins the result.
  {"Pow",                  kNormalization},
  {"Sqrt",                 kNormalization},
  {"Reciprocal",           kNormalization},
  {"Div",                  kNormalization,  -1,    -1,   1},
  {"ReduceMean",           kNormalization},
  {"ReduceSum",            kNormalization},
  {"Exp",                  kNormalization},
  {"Erf",                  kNormalization},
};
// clang-format on

constexpr OpRule kOtherRule{};

// How a node's outputs get their element type.
enum class OutputType : uint8_t {
  kInput0,          // same as input 0 (type-preserving data movement and arithmetic)
  kInput1,          // same as input 1
  kInt64,
  kBool,
  kCastTo,          // the `to` attribute
  kValueAttribute,  // the type of the value attribute (Constant, ConstantOfShape)
};

struct TypeRule {
  std::string_view op_type;
  OutputType output;
};

using enum OutputType;

// clang-format off
constexpr TypeRule kTypeRules[] = {
  {"Shape", kInt64}, {"Size", kInt64}, {"NonZero", kInt64}, {"ArgMax", kInt64}, {"ArgMin", kInt64},
  {"NonMaxSuppression", kInt64},
  {"Equal", kBool}, {"Less", kBool}, {"LessOrEqual", kBool}, {"Greater", kBool},
  {"GreaterOrEqual", kBool}, {"Not", kBool}, {"And", kBool}, {"Or", kBool}, {"Xor", kBool},
  {"IsNaN", kBool}, {"IsInf", kBool},
  {"Cast", kCastTo}, {"Constant", kValueAttribute}, {"ConstantOfShape", kValueAttribute},
  {"CastLike", kInput1}, {"Where", kInput1}, {"DequantizeLinear", kInput1},
  {"Identity", kInput0}, {"Reshape", kInput0}, {"Squeeze", kInput0}, {"Unsqueeze", kInput0},
  {"Flatten", kInput0}, {"Transpose", kInput0}, {"Concat", kInput0}, {"Split", kInput0},
  {"Slice", kInput0}, {"Gather", kInput0}, {"GatherElements", kInput0}, {"GatherND", kInput0},
  {"Expand", kInput0}, {"Tile", kInput0}, {"Range", kInput0}, {"ReduceProd", kInput0},
  {"ReduceMin", kInput0}, {"ReduceMax", kInput0}, {"ReduceSum", kInput0},
  {"Add", kInput0}, {"Sub", kInput0}, {"Mul", kInput0}, {"Div", kInput0}, {"Mod", kInput0},
  {"Neg", kInput0}, {"Abs", kInput0}, {"Min", kInput0}, {"Max", kInput0}, {"Clip", kInput0},
  {"Floor", kInput0}, {"Ceil", kInput0}, {"Round", kInput0},
};

// Constant's typed value attributes; "value" (a tensor) carries its own type.
constexpr std::pair<std::string_view, int32_t> kValueAttributeTypes[] = {
  {"value_float", TensorProto::FLOAT},   {"value_floats", TensorProto::FLOAT},
  {"value_int", TensorProto::INT64},     {"value_ints", TensorProto::INT64},
  {"value_string", TensorProto::STRING}, {"value_strings", TensorProto::STRING},
};
// clang-format on

template <class Row>
const Row* find_row(std::span<const Row> rows, std::string_view domain, std::string_view op_type) {
  if (!analysis::is_default_domain(domain)) return nullptr;
  const auto it = std::ranges::find(rows, op_type, &Row::op_type);
  return it == rows.end() ? nullptr : &*it;
}

std::optional<int32_t> value_attribute_type(const onnx::NodeProto& node) {
  for (const onnx::AttributeProto& attribute : node.attribute()) {
    if (attribute.name() == "value") return attribute.t().data_type();
    for (const auto& [name, type] : kValueAttributeTypes) {
      if (attribute.name() == name) return type;
    }
  }
  // ConstantOfShape without a value fills float zeros.
  return node.op_type() == "ConstantOfShape" ? std::optional<int32_t>(TensorProto::FLOAT) : std::nullopt;
}

std::optional<int32_t> output_type(const onnx::NodeProto& node,
                                   const std::unordered_map<std::string, int32_t>& types) {
  const TypeRule* rule = find_row<TypeRule>(kTypeRules, node.domain(), node.op_type());
  if (rule == nullptr) return std::nullopt;
  const auto input_type = [&](int index) -> std::optional<int32_t> {
    if (index >= node.input_size()) return std::nullopt;
    const auto it = types.find(node.input(index));
    return it == types.end() ? std::nullopt : std::optional<int32_t>(it->second);
  };
  switch (rule->output) {
    case kInput0: return input_type(0);
    case kInput1: return input_type(1);
    case kInt64: return TensorProto::INT64;
    case kBool: return TensorProto::BOOL;
    case kCastTo: {
      const std::optional<int64_t> to = ir::int_attribute(node, "to");
      return to ? std::optional<int32_t>(static_cast<int32_t>(*to)) : std::nullopt;
    }
    case kValueAttribute: return value_attribute_type(node);
  }
  return std::nullopt;
}

}  // namespace

const OpRule& op_rule(std::string_view domain, std::string_view op_type) {
  const OpRule* rule = find_row<OpRule>(op_rules(), domain, op_type);
  return rule != nullptr ? *rule : kOtherRule;
}

std::span<const OpRule> op_rules() { return kOpRules; }

std::unordered_map<std::string, int32_t> infer_element_types(const ir::GraphView& graph) {
  std::unordered_map<std::string, int32_t> types;
  const onnx::GraphProto& proto = graph.graph();
  for (const auto* infos : {&proto.input(), &proto.output(), &proto.value_info()}) {
    for (const onnx::ValueInfoProto& info : *infos) {
      if (info.type().has_tensor_type() && info.type().tensor_type().elem_type() != TensorProto::UNDEFINED) {
        types.emplace(info.name(), info.type().tensor_type().elem_type());
      }
    }
  }
  for (const TensorProto& initializer : proto.initializer()) types.emplace(initializer.name(), initializer.data_type());
  for (size_t index : graph.topological_order()) {
    const onnx::NodeProto& node = graph.node(index);
    const std::optional<int32_t> type = output_type(node, types);
    if (!type) continue;
    for (const std::string& output : node.output()) {
      if (!output.empty()) types.emplace(output, *type);  // declared types win
    }
  }
  return types;
}

bool is_integer_or_bool_type(int32_t elem_type) {
  switch (elem_type) {
    case TensorProto::UINT8: case TensorProto::INT8: case TensorProto::UINT16: case TensorProto::INT16:
    case TensorProto::INT32: case TensorProto::INT64: case TensorProto::UINT32: case TensorProto::UINT64:
    case TensorProto::BOOL:
      return true;
    default:
      return false;
  }
}

}  // namespace mixprec::selection

namespace mixprec {

std::vector<std::string> default_op_types_to_quantize() {
  std::vector<std::string> op_types;
  for (const selection::OpRule& rule : selection::op_rules()) {
    if (rule.role == selection::OpRole::kWeighted || rule.role == selection::OpRole::kArithmetic) {
      op_types.emplace_back(rule.op_type);
    }
  }
  return op_types;
}

}  // namespace mixprec
