#include "rewrite/graph_edit.h"

#include <functional>

namespace mixprec::rewrite {
namespace {

void for_each_graph(const onnx::GraphProto& graph, const std::function<void(const onnx::GraphProto&)>& visit) {
  visit(graph);
  for (const auto& node : graph.node()) {
    for (const auto& attr : node.attribute()) {
      if (attr.has_g()) for_each_graph(attr.g(), visit);
      for (const auto& g : attr.graphs()) for_each_graph(g, visit);
    }
  }
}

void collect_reads(const onnx::GraphProto& graph, std::unordered_set<std::string>& reads) {
  for_each_graph(graph, [&](const onnx::GraphProto& g) {
    for (const auto& node : g.node()) reads.insert(node.input().begin(), node.input().end());
    for (const auto& out : g.output()) reads.insert(out.name());
  });
}

void replace_reads_in(onnx::GraphProto& graph, const std::string& from, const std::string& to) {
  for (auto& node : *graph.mutable_node()) {
    for (auto& input : *node.mutable_input()) {
      if (input == from) input = to;
    }
    for (auto& attr : *node.mutable_attribute()) {
      // A subgraph that defines `from` itself shadows the outer name; ONNX forbids that
      // (names are unique across scopes), so a plain rename is safe.
      if (attr.has_g()) replace_reads_in(*attr.mutable_g(), from, to);
      for (auto& g : *attr.mutable_graphs()) replace_reads_in(g, from, to);
    }
  }
}

}  // namespace

NameAllocator::NameAllocator(const onnx::ModelProto& model) {
  for_each_graph(model.graph(), [&](const onnx::GraphProto& g) {
    for (const auto& node : g.node()) {
      used_.insert(node.name());
      used_.insert(node.input().begin(), node.input().end());
      used_.insert(node.output().begin(), node.output().end());
    }
    for (const auto& init : g.initializer()) used_.insert(init.name());
    for (const auto& vi : g.input()) used_.insert(vi.name());
    for (const auto& vi : g.output()) used_.insert(vi.name());
    for (const auto& vi : g.value_info()) used_.insert(vi.name());
  });
}

std::string NameAllocator::fresh(const std::string& base) {
  std::string name = base;
  for (int i = 1; used_.count(name); ++i) name = base + "_" + std::to_string(i);
  used_.insert(name);
  return name;
}

onnx::NodeProto make_node(const std::string& op_type, const std::vector<std::string>& inputs,
                          const std::vector<std::string>& outputs, const std::string& name, const std::string& domain) {
  onnx::NodeProto node;
  node.set_op_type(op_type);
  node.set_name(name);
  if (!domain.empty()) node.set_domain(domain);
  for (const auto& in : inputs) node.add_input(in);
  for (const auto& out : outputs) node.add_output(out);
  return node;
}

void set_int_attribute(onnx::NodeProto& node, const std::string& name, int64_t value) {
  for (auto& attr : *node.mutable_attribute()) {
    if (attr.name() == name) {
      attr.set_i(value);
      return;
    }
  }
  auto* attr = node.add_attribute();
  attr->set_name(name);
  attr->set_type(onnx::AttributeProto::INT);
  attr->set_i(value);
}

std::unordered_map<std::string, const onnx::TensorProto*> index_initializers(const onnx::GraphProto& graph) {
  std::unordered_map<std::string, const onnx::TensorProto*> out;
  for (const auto& init : graph.initializer()) out.emplace(init.name(), &init);
  return out;
}

void remove_unused(onnx::GraphProto& graph) {
  std::unordered_set<std::string> reads;
  collect_reads(graph, reads);
  auto* inits = graph.mutable_initializer();
  for (int i = inits->size() - 1; i >= 0; --i) {
    if (!reads.count(inits->Get(i).name())) inits->DeleteSubrange(i, 1);
  }
  std::unordered_set<std::string> produced;
  for (const auto& node : graph.node()) produced.insert(node.output().begin(), node.output().end());
  auto* infos = graph.mutable_value_info();
  for (int i = infos->size() - 1; i >= 0; --i) {
    if (!produced.count(infos->Get(i).name())) infos->DeleteSubrange(i, 1);
  }
}

void replace_reads(onnx::GraphProto& graph, const std::string& from, const std::string& to) {
  replace_reads_in(graph, from, to);
}

void rename_tensor(onnx::GraphProto& graph, const std::string& from, const std::string& to) {
  replace_reads_in(graph, from, to);
  for (auto& node : *graph.mutable_node()) {
    for (auto& output : *node.mutable_output()) {
      if (output == from) output = to;
    }
  }
  for (auto& out : *graph.mutable_output()) {
    if (out.name() == from) out.set_name(to);
  }
  for (auto& vi : *graph.mutable_value_info()) {
    if (vi.name() == from) vi.set_name(to);
  }
}

int64_t default_opset(const onnx::ModelProto& model) {
  for (const auto& op : model.opset_import()) {
    if (op.domain().empty() || op.domain() == "ai.onnx") return op.version();
  }
  return 0;
}

}  // namespace mixprec::rewrite
