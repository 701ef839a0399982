#include "ir/node_builder.h"

#include <cassert>
#include <utility>

namespace mixprec::ir {
namespace {

void take_names(const onnx::GraphProto& graph, NameAllocator& names) {
  for (const auto* infos : {&graph.input(), &graph.output(), &graph.value_info()}) {
    for (const onnx::ValueInfoProto& info : *infos) names.reserve(info.name());
  }
  for (const onnx::TensorProto& tensor : graph.initializer()) names.reserve(tensor.name());
  for (const onnx::SparseTensorProto& tensor : graph.sparse_initializer()) names.reserve(tensor.values().name());
  for (const onnx::NodeProto& node : graph.node()) {
    names.reserve(node.name());
    for (const std::string& input : node.input()) names.reserve(input);
    for (const std::string& output : node.output()) names.reserve(output);
    for (const onnx::AttributeProto& attribute : node.attribute()) {
      if (attribute.has_g()) take_names(attribute.g(), names);
      for (const onnx::GraphProto& subgraph : attribute.graphs()) take_names(subgraph, names);
    }
  }
}

}  // namespace

NameAllocator::NameAllocator(const onnx::ModelProto& model) { take_names(model.graph(), *this); }

void NameAllocator::reserve(const std::string& name) {
  if (!name.empty()) used_.insert(name);
}

bool NameAllocator::taken(const std::string& name) const { return used_.contains(name); }

std::string NameAllocator::fresh(const std::string& base) {
  assert(!base.empty());
  std::string name = base;
  for (int suffix = 1; taken(name); ++suffix) name = base + "_" + std::to_string(suffix);
  used_.insert(name);
  return name;
}

onnx::NodeProto make_node(NodeSpec spec) {
  onnx::NodeProto node;
  node.set_op_type(std::move(spec.op_type));
  if (!spec.domain.empty()) node.set_domain(std::move(spec.domain));
  node.set_name(std::move(spec.name));
  for (std::string& input : spec.inputs) node.add_input(std::move(input));
  for (std::string& output : spec.outputs) node.add_output(std::move(output));
  for (onnx::AttributeProto& attribute : spec.attributes) *node.add_attribute() = std::move(attribute);
  return node;
}

onnx::AttributeProto make_int_attribute(const std::string& name, int64_t value) {
  onnx::AttributeProto attribute;
  attribute.set_name(name);
  attribute.set_type(onnx::AttributeProto::INT);
  attribute.set_i(value);
  return attribute;
}

onnx::AttributeProto make_ints_attribute(const std::string& name, const std::vector<int64_t>& values) {
  onnx::AttributeProto attribute;
  attribute.set_name(name);
  attribute.set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) attribute.add_ints(v);
  return attribute;
}

onnx::AttributeProto make_float_attribute(const std::string& name, float value) {
  onnx::AttributeProto attribute;
  attribute.set_name(name);
  attribute.set_type(onnx::AttributeProto::FLOAT);
  attribute.set_f(value);
  return attribute;
}

onnx::AttributeProto make_string_attribute(const std::string& name, const std::string& value) {
  onnx::AttributeProto attribute;
  attribute.set_name(name);
  attribute.set_type(onnx::AttributeProto::STRING);
  attribute.set_s(value);
  return attribute;
}

void set_attribute(onnx::NodeProto& node, onnx::AttributeProto attribute) {
  auto* attributes = node.mutable_attribute();
  for (int i = attributes->size() - 1; i >= 0; --i) {
    if (attributes->Get(i).name() == attribute.name()) attributes->DeleteSubrange(i, 1);
  }
  *node.add_attribute() = std::move(attribute);
}

}  // namespace mixprec::ir
