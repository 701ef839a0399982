#include "rewrite/ort_weight_quantization.h"

#include <set>

#include "ir/graph_view.h"

namespace mixprec::rewrite {
namespace {

bool is_layer(const std::string& op_type) {
  return op_type == "Conv" || op_type == "ConvTranspose" || op_type == "Gemm";
}

// Rank 0, or rank 1 of one element, as ONNX Runtime's optimizer_utils::IsScalar reads a shape:
// from the initializer, else from the declared type; unknown is not scalar.
bool is_scalar(const ir::GraphView& graph, const std::string& name) {
  if (const onnx::TensorProto* init = graph.resolve_initializer(name)) {
    return init->dims_size() == 0 || (init->dims_size() == 1 && init->dims(0) == 1);
  }
  const onnx::ValueInfoProto* info = graph.resolve_value_info(name);
  if (info == nullptr || !info->type().tensor_type().has_shape()) return false;
  const auto& shape = info->type().tensor_type().shape();
  return shape.dim_size() == 0 ||
         (shape.dim_size() == 1 && shape.dim(0).has_dim_value() && shape.dim(0).dim_value() == 1);
}

// The node's only way out reaches a QuantizeLinear, through Relu or Clip at most, with one
// consumer at every step.
bool leads_to_quantize(const ir::GraphView& graph, size_t index) {
  for (const onnx::NodeProto* node = &graph.node(index);;) {
    if (node->output_size() != 1) return false;
    const std::vector<size_t>& readers = graph.consumers(node->output(0));
    if (readers.size() != 1) return false;
    node = &graph.node(readers.front());
    if (node->op_type() == "QuantizeLinear") return true;
    if (node->op_type() != "Relu" && node->op_type() != "Clip") return false;
  }
}

// The weight must be an initializer no graph input overrides (`fed`: IR < 4 lists initializers
// as inputs too, and ONNX Runtime then treats them as fed, not constant).
bool quantized_at_load(const ir::GraphView& graph, size_t index, const std::set<std::string>& fed) {
  const onnx::NodeProto& node = graph.node(index);
  if (!is_layer(node.op_type()) || node.input_size() < 2) return false;
  const auto input = graph.producer(node.input(0));
  if (!input || graph.node(*input).op_type() != "DequantizeLinear" || graph.node(*input).input_size() < 2 ||
      !is_scalar(graph, graph.node(*input).input(1))) {
    return false;
  }
  if (!leads_to_quantize(graph, index)) return false;
  if (graph.producer(node.input(1))) return false;  // a computed or dequantized weight: at most the bias changes
  const onnx::TensorProto* weight = graph.resolve_initializer(node.input(1));
  if (weight == nullptr || weight->data_type() != onnx::TensorProto::FLOAT || fed.count(node.input(1))) return false;
  if (node.input_size() >= 3 && !node.input(2).empty()) {  // a bias it cannot quantize stops it all
    const onnx::TensorProto* bias = graph.resolve_initializer(node.input(2));
    if (bias == nullptr || bias->dims_size() != 1) return false;
  }
  return true;
}

}  // namespace

std::vector<OrtQuantizedWeight> ort_quantized_float_weights(const onnx::ModelProto& model, const std::string& label) {
  const ir::GraphView view(model.graph(), label);
  std::set<std::string> fed;
  for (const auto& input : model.graph().input()) fed.insert(input.name());
  std::vector<OrtQuantizedWeight> found;
  for (const ir::NodeRef& ref : view.nested_nodes()) {
    if (!quantized_at_load(*ref.graph, ref.index, fed)) continue;
    const onnx::NodeProto& node = ref.node();
    found.push_back({ir::node_label(ref), node.input_size() >= 3 && !node.input(2).empty()});
  }
  return found;
}

}  // namespace mixprec::rewrite
