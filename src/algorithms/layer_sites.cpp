#include "algorithms/layer_sites.h"

#include <algorithm>
#include <map>
#include <set>

#include "common/digest.h"
#include "mixprec/tensor_proto.h"

namespace mixprec::algorithms {
namespace {

bool produced_by_dq(const ir::GraphView& view, const std::string& name) {
  const auto p = view.producer(name);
  return p && view.node(*p).op_type() == "DequantizeLinear";
}

}  // namespace

std::vector<LayerSite> layer_sites(const onnx::ModelProto& prepared, const onnx::ModelProto& quantized,
                                   const SiteRule& rule, const std::string& label) {
  const ir::GraphView qview(quantized.graph(), label);
  std::map<std::string, bool> quantized_nodes;
  for (size_t i = 0; i < qview.node_count(); ++i) {
    const onnx::NodeProto& n = qview.node(i);
    if (n.input_size() < 2) continue;
    const bool weight = produced_by_dq(qview, n.input(1));
    quantized_nodes[n.name()] = rule.integer_weight ? weight : weight || produced_by_dq(qview, n.input(0));
  }
  const ir::GraphView view(prepared.graph(), label);
  std::vector<LayerSite> sites;
  std::vector<size_t> level_of(view.node_count(), 0);  // sites strictly above, +1 for a site itself
  for (size_t index : view.topological_order()) {
    const onnx::NodeProto& node = view.node(index);
    size_t above = 0;
    for (const auto& in : node.input()) {
      if (const auto p = view.producer(in)) above = std::max(above, level_of[*p]);
    }
    level_of[index] = above;
    const bool listed = std::ranges::find(rule.op_types, node.op_type()) != rule.op_types.end();
    if (!listed || !node.domain().empty() || node.input_size() < 2 || node.output_size() != 1 || node.name().empty()) {
      continue;
    }
    const onnx::TensorProto* weight = view.initializer(node.input(1));
    const auto q = quantized_nodes.find(node.name());
    if (!weight || weight->data_type() != onnx::TensorProto::FLOAT || weight->dims_size() < 2 ||
        q == quantized_nodes.end() || !q->second) {
      continue;
    }
    if (rule.accept && !rule.accept(view, node)) continue;
    sites.push_back({.node = node.name(), .output = node.output(0), .index = index, .level = above});
    level_of[index] = above + 1;
  }
  return sites;
}

onnx::ModelProto upstream_of(onnx::ModelProto model, const std::vector<std::string>& outputs, const std::string& label) {
  std::vector<bool> keep;
  {
    const ir::GraphView view(model.graph(), label);
    for (size_t i = 0; i < view.node_count(); ++i) {
      if (!view.subgraphs(i).empty()) return model;
    }
    keep.assign(view.node_count(), false);
    std::vector<std::string> pending(outputs.begin(), outputs.end());
    while (!pending.empty()) {
      const std::string name = std::move(pending.back());
      pending.pop_back();
      const auto p = view.producer(name);
      if (!p || keep[*p]) continue;
      keep[*p] = true;
      for (const auto& in : view.node(*p).input()) {
        if (!in.empty()) pending.push_back(in);
      }
    }
  }
  onnx::GraphProto& graph = *model.mutable_graph();
  auto* nodes = graph.mutable_node();
  for (int i = nodes->size() - 1; i >= 0; --i) {
    if (!keep[static_cast<size_t>(i)]) nodes->DeleteSubrange(i, 1);
  }
  std::set<std::string> read;
  for (const auto& node : graph.node()) read.insert(node.input().begin(), node.input().end());
  auto* inits = graph.mutable_initializer();
  for (int i = inits->size() - 1; i >= 0; --i) {
    if (!read.count(inits->Get(i).name())) inits->DeleteSubrange(i, 1);
  }
  graph.clear_output();  // Session::from_model exposes `outputs`
  return model;
}

bool private_float(const ir::GraphView& view, const std::string& name) {
  const onnx::TensorProto* init = view.initializer(name);
  return init && init->data_type() == onnx::TensorProto::FLOAT && view.consumers(name).size() == 1;
}

std::map<std::string, uint64_t> tensor_digests(const onnx::ModelProto& model, const std::string& label) {
  std::map<std::string, uint64_t> digests;
  const onnx::GraphProto& graph = model.graph();
  for (const auto& input : graph.input()) {
    Fnv1a d;
    d.add("input");
    d.add(input.name());
    d.add(input.type().SerializeAsString());
    digests[input.name()] = d.value();
  }
  for (const auto& init : graph.initializer()) {
    onnx::TensorProto unnamed = init;
    unnamed.clear_name();
    Fnv1a d;
    d.add("initializer");
    d.add(unnamed.SerializeAsString());
    digests[init.name()] = d.value();
  }
  const ir::GraphView view(graph, label);
  for (size_t index : view.topological_order()) {
    const onnx::NodeProto& node = view.node(index);
    onnx::NodeProto bare = node;
    bare.clear_name();
    bare.clear_input();
    bare.clear_output();
    bare.clear_doc_string();
    Fnv1a d;
    d.add(bare.SerializeAsString());
    for (const auto& in : node.input()) {
      const auto it = digests.find(in);
      d.add(in.empty() ? "absent" : it == digests.end() ? "outer:" + in : std::to_string(it->second));
    }
    for (int k = 0; k < node.output_size(); ++k) {
      if (node.output(k).empty()) continue;
      Fnv1a out;
      out.add(std::to_string(d.value()));
      out.add(std::to_string(k));
      digests[node.output(k)] = out.value();
    }
  }
  return digests;
}

onnx::TensorProto* find_initializer(onnx::ModelProto& model, const std::string& name) {
  for (auto& init : *model.mutable_graph()->mutable_initializer()) {
    if (init.name() == name) return &init;
  }
  return nullptr;
}

void replace_values(onnx::TensorProto& proto, const std::vector<float>& values) {
  const std::vector<int64_t> dims(proto.dims().begin(), proto.dims().end());
  const std::string name = proto.name();
  proto = tensor_to_proto(Tensor::from_floats(dims, values), name);
}

}  // namespace mixprec::algorithms
