#include "rewrite/graph_edit.h"

#include <algorithm>
#include <functional>
#include <unordered_set>

namespace mixprec::rewrite {
namespace {

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

void for_each_graph(const onnx::GraphProto& graph, const std::function<void(const onnx::GraphProto&)>& visit) {
  visit(graph);
  for (const auto& node : graph.node()) {
    for (const auto& attr : node.attribute()) {
      if (attr.has_g()) for_each_graph(attr.g(), visit);
      for (const auto& g : attr.graphs()) for_each_graph(g, visit);
    }
  }
}

void for_each_graph(onnx::GraphProto& graph, const std::function<void(onnx::GraphProto&)>& visit) {
  visit(graph);
  for (auto& node : *graph.mutable_node()) {
    for (auto& attr : *node.mutable_attribute()) {
      if (attr.has_g()) for_each_graph(*attr.mutable_g(), visit);
      for (auto& g : *attr.mutable_graphs()) for_each_graph(g, visit);
    }
  }
}

std::unordered_map<std::string, const onnx::TensorProto*> index_initializers(const onnx::GraphProto& graph) {
  std::unordered_map<std::string, const onnx::TensorProto*> out;
  for (const auto& init : graph.initializer()) out.emplace(init.name(), &init);
  return out;
}

void remove_dead_nodes(onnx::GraphProto& graph) {
  for (bool removed = true; removed;) {
    removed = false;
    std::unordered_set<std::string> reads;
    collect_reads(graph, reads);
    auto& nodes = *graph.mutable_node();
    for (int i = nodes.size() - 1; i >= 0; --i) {
      if (std::none_of(nodes[i].output().begin(), nodes[i].output().end(),
                       [&](const std::string& o) { return reads.contains(o); })) {
        nodes.erase(nodes.begin() + i);
        removed = true;
      }
    }
  }
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
