#include "config/element_types.h"

#include <optional>
#include <utility>

#include "ir/op_traits.h"

namespace mixprec::selection {
namespace {

using onnx::TensorProto;
using ir::OutputType;

// Constant's typed value attributes; "value" (a tensor) carries its own type.
// clang-format off
constexpr std::pair<std::string_view, int32_t> kValueAttributeTypes[] = {
  {"value_float", TensorProto::FLOAT},   {"value_floats", TensorProto::FLOAT},
  {"value_int", TensorProto::INT64},     {"value_ints", TensorProto::INT64},
  {"value_string", TensorProto::STRING}, {"value_strings", TensorProto::STRING},
};
// clang-format on

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
  const auto input_type = [&](int index) -> std::optional<int32_t> {
    if (index >= node.input_size()) return std::nullopt;
    const auto it = types.find(node.input(index));
    return it == types.end() ? std::nullopt : std::optional<int32_t>(it->second);
  };
  switch (ir::op_traits(node).output_type) {
    case OutputType::kUnknown: return std::nullopt;
    case OutputType::kInput0: return input_type(0);
    case OutputType::kInput1: return input_type(1);
    case OutputType::kInt64: return TensorProto::INT64;
    case OutputType::kBool: return TensorProto::BOOL;
    case OutputType::kCastTo: {
      const std::optional<int64_t> to = ir::int_attribute(node, "to");
      return to ? std::optional<int32_t>(static_cast<int32_t>(*to)) : std::nullopt;
    }
    case OutputType::kValueAttribute: return value_attribute_type(node);
  }
  return std::nullopt;
}

}  // namespace

std::unordered_map<std::string, int32_t> infer_element_types(const ir::GraphView& graph,
                                                             const std::unordered_map<std::string, int32_t>& outer) {
  std::unordered_map<std::string, int32_t> types = outer;
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

std::unordered_map<std::string, int32_t> infer_nested_element_types(const ir::GraphView& graph,
                                                                    const std::unordered_map<std::string, int32_t>& outer) {
  std::unordered_map<std::string, int32_t> types = infer_element_types(graph, outer);
  std::unordered_map<std::string, int32_t> all = types;
  for (size_t index = 0; index < graph.node_count(); ++index) {
    for (const ir::GraphView* body : graph.subgraphs(index)) all.merge(infer_nested_element_types(*body, types));
  }
  return all;
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

