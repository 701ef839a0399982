#include "analysis/model_graph.h"

#include <algorithm>

namespace mixprec::analysis {

ModelGraph::ModelGraph(const onnx::GraphProto& graph, const std::string& model_path)
    : root_(graph, model_path), nodes_(root_.nested_nodes()) {
  traits_.reserve(nodes_.size());
  for (size_t id = 0; id < nodes_.size(); ++id) {
    ids_.emplace(nodes_[id], id);
    traits_.push_back(ir::find_op_traits(nodes_[id].node().domain(), nodes_[id].node().op_type()));
  }

  predecessors_.resize(nodes_.size());
  for (size_t id = 0; id < nodes_.size(); ++id) {
    std::vector<size_t>& preds = predecessors_[id];
    for (const std::string& input : node(id).input()) {
      if (const auto source = producer(id, input)) preds.push_back(*source);
    }
    for (const ir::GraphView* subgraph : nodes_[id].graph->subgraphs(nodes_[id].index)) {
      for (const onnx::ValueInfoProto& output : subgraph->graph().output()) {
        if (const auto source = subgraph->resolve_producer(output.name())) preds.push_back(ids_.at(*source));
      }
    }
    std::sort(preds.begin(), preds.end());
    preds.erase(std::unique(preds.begin(), preds.end()), preds.end());
  }
}

bool ModelGraph::has_flag(size_t id, uint8_t flag) const {
  return traits_[id] != nullptr && (traits_[id]->flags & flag) != 0;
}

ir::QuantRole ModelGraph::quant_role(size_t id) const {
  return traits_[id] == nullptr ? ir::QuantRole::kNone : traits_[id]->quant_role;
}

std::optional<size_t> ModelGraph::producer(size_t id, std::string_view name) const {
  if (name.empty()) return std::nullopt;
  const auto source = nodes_[id].graph->resolve_producer(name);
  if (!source) return std::nullopt;
  return ids_.at(*source);
}

std::optional<size_t> ModelGraph::main_producer(std::string_view name) const {
  const auto index = root_.producer(name);
  if (!index) return std::nullopt;
  return ids_.at(ir::NodeRef{&root_, *index});
}

int32_t ModelGraph::element_type(size_t id, std::string_view name) const {
  const ir::GraphView& scope = *nodes_[id].graph;
  if (const onnx::TensorProto* tensor = scope.resolve_initializer(name)) return tensor->data_type();
  if (const onnx::ValueInfoProto* info = scope.resolve_value_info(name);
      info != nullptr && info->type().has_tensor_type() && info->type().tensor_type().elem_type() != 0) {
    return info->type().tensor_type().elem_type();
  }
  if (const auto source = producer(id, name)) {
    if (const auto to = cast_target(*source)) return static_cast<int32_t>(*to);
  }
  return onnx::TensorProto::UNDEFINED;
}

std::optional<int64_t> ModelGraph::cast_target(size_t id) const {
  const onnx::NodeProto& n = node(id);
  if (n.op_type() != "Cast" || !ir::is_default_domain(n.domain())) return std::nullopt;
  return ir::int_attribute(n, "to");
}

int32_t ModelGraph::cast_back_source_type(size_t id) const {
  if (cast_target(id) != onnx::TensorProto::FLOAT || node(id).input_size() < 1) return onnx::TensorProto::UNDEFINED;
  const int32_t source = element_type(id, node(id).input(0));
  return source == onnx::TensorProto::BFLOAT16 || source == onnx::TensorProto::FLOAT16 ? source
                                                                                     : onnx::TensorProto::UNDEFINED;
}

}  // namespace mixprec::analysis

namespace mixprec {

bool is_compute_op(std::string_view domain, std::string_view op_type) {
  const ir::OpTraits* traits = ir::find_op_traits(domain, op_type);
  return traits != nullptr && (traits->flags & ir::kCompute) != 0;
}

}  // namespace mixprec
