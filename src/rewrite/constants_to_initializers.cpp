// constants_to_initializers: weights exported as Constant nodes become initializers.
//
//   Before:  Constant(value=T) → w → Conv(x, w)
//   After:   initializer w = T  → Conv(x, w)
//
// Exporters such as paddle2onnx emit every weight as a Constant node; the rewrite passes
// (BatchNormalization folding, offline weight quantization) look for initializers, so this
// runs first. Constants with a tensor-valued attribute (`value`, `value_float(s)`,
// `value_int(s)`) are converted, in the main graph and in If/Loop/Scan bodies (a body's constant
// becomes an initializer of that body); sparse and string constants stay.
#include "rewrite/constants_to_initializers.h"

#include <optional>

namespace mixprec::rewrite {
namespace {

std::optional<onnx::TensorProto> constant_value(const onnx::NodeProto& node) {
  if (node.op_type() != "Constant" || !(node.domain().empty() || node.domain() == "ai.onnx") ||
      node.output_size() != 1 || node.attribute_size() != 1) {
    return std::nullopt;
  }
  const onnx::AttributeProto& attr = node.attribute(0);
  onnx::TensorProto tensor;
  if (attr.name() == "value" && attr.has_t()) {
    if (attr.t().data_type() == onnx::TensorProto::STRING) return std::nullopt;
    tensor = attr.t();
  } else if (attr.name() == "value_float") {
    tensor.set_data_type(onnx::TensorProto::FLOAT);
    tensor.add_float_data(attr.f());
  } else if (attr.name() == "value_floats") {
    tensor.set_data_type(onnx::TensorProto::FLOAT);
    tensor.add_dims(attr.floats_size());
    for (float v : attr.floats()) tensor.add_float_data(v);
  } else if (attr.name() == "value_int") {
    tensor.set_data_type(onnx::TensorProto::INT64);
    tensor.add_int64_data(attr.i());
  } else if (attr.name() == "value_ints") {
    tensor.set_data_type(onnx::TensorProto::INT64);
    tensor.add_dims(attr.ints_size());
    for (int64_t v : attr.ints()) tensor.add_int64_data(v);
  } else {
    return std::nullopt;
  }
  tensor.set_name(node.output(0));
  return tensor;
}

size_t constants_to_graph_initializers(onnx::GraphProto& graph) {
  google::protobuf::RepeatedPtrField<onnx::NodeProto> kept;
  size_t converted = 0;
  for (auto& node : *graph.mutable_node()) {
    for (auto& attribute : *node.mutable_attribute()) {
      if (attribute.has_g()) converted += constants_to_graph_initializers(*attribute.mutable_g());
      for (auto& body : *attribute.mutable_graphs()) converted += constants_to_graph_initializers(body);
    }
    if (auto tensor = constant_value(node)) {
      *graph.add_initializer() = std::move(*tensor);
      ++converted;
    } else {
      *kept.Add() = std::move(node);
    }
  }
  graph.mutable_node()->Swap(&kept);
  return converted;
}

}  // namespace

size_t constants_to_initializers(onnx::ModelProto& model) { return constants_to_graph_initializers(*model.mutable_graph()); }

}  // namespace mixprec::rewrite
