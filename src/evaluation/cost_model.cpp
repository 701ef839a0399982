#include "evaluation/cost_model.h"

#include <functional>
#include <unordered_map>

#include "ir/graph_view.h"
#include "ir/op_traits.h"

namespace mixprec {
namespace {

bool layout_only(const onnx::NodeProto& node) { return (ir::op_traits(node).flags & ir::kLayoutOnly) != 0; }

}  // namespace

CostModel::CostModel(const onnx::ModelProto& prepared, const MacEstimate& macs, const CalibrationStats& stats,
                     const DeviceProfile& device)
    : device_(device) {
  const ir::GraphView view(prepared.graph(), "prepared model");
  const auto elements = [&](const std::string& tensor) {
    const auto it = stats.tensors.find(tensor);
    if (it == stats.tensors.end() || stats.samples == 0) return 0.0;
    return static_cast<double>(it->second.count) / static_cast<double>(stats.samples);
  };
  // Bodies of If/Loop/Scan nodes first, as they run inside their owner; a body node reading a
  // value of an enclosing graph counts it as an input from outside (like a graph input).
  std::unordered_map<ir::NodeRef, int, ir::NodeRefHash> position;  // node -> nodes_ index
  const std::function<void(const ir::GraphView&)> add_graph = [&](const ir::GraphView& graph) {
    for (size_t index : graph.topological_order()) {
      for (const ir::GraphView* body : graph.subgraphs(index)) add_graph(*body);
      const onnx::NodeProto& proto = graph.node(index);
      Node node;
      node.name = ir::node_label({&graph, index});  // the path assignments name it by
      if (const auto it = macs.nodes.find(node.name); it != macs.nodes.end()) node.macs = it->second.macs;
      node.layout_only = layout_only(proto);
      for (const auto& input : proto.input()) {
        if (input.empty() || graph.resolve_initializer(input) != nullptr) continue;
        const auto producer = graph.producer(input);
        node.inputs.push_back(producer ? position.at({&graph, *producer}) : -1);
        node.input_elements.push_back(elements(input));
      }
      position[{&graph, index}] = static_cast<int>(nodes_.size());
      nodes_.push_back(std::move(node));
    }
  };
  add_graph(view);
  std::vector<size_t> readers(nodes_.size(), 0);
  for (const auto& output : prepared.graph().output()) {
    if (const auto producer = view.producer(output.name())) ++readers[static_cast<size_t>(position.at({&view, *producer}))];
  }
  for (const Node& node : nodes_) {
    for (int producer : node.inputs) {
      if (producer >= 0) ++readers[static_cast<size_t>(producer)];
    }
  }
  next_.assign(nodes_.size(), -1);
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node& node = nodes_[i];
    if (node.inputs.size() == 1 && node.inputs.front() >= 0 && readers[static_cast<size_t>(node.inputs.front())] == 1) {
      next_[static_cast<size_t>(node.inputs.front())] = static_cast<int>(i);
    }
  }
}

std::vector<std::vector<std::string>> CostModel::chains(const std::set<std::string>& candidates) const {
  // The next candidate along the linear path from each candidate, through layout-only nodes.
  std::vector<int> link(nodes_.size(), -1);
  std::vector<bool> linked_to(nodes_.size(), false);
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (!candidates.count(nodes_[i].name)) continue;
    int j = next_[i];
    while (j >= 0 && !candidates.count(nodes_[static_cast<size_t>(j)].name) && nodes_[static_cast<size_t>(j)].layout_only) {
      j = next_[static_cast<size_t>(j)];
    }
    if (j >= 0 && candidates.count(nodes_[static_cast<size_t>(j)].name)) {
      link[i] = j;
      linked_to[static_cast<size_t>(j)] = true;
    }
  }
  std::vector<std::vector<std::string>> chains;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (!candidates.count(nodes_[i].name) || linked_to[i] || link[i] < 0) continue;
    std::vector<std::string> chain;
    for (int j = static_cast<int>(i); j >= 0; j = link[static_cast<size_t>(j)]) chain.push_back(nodes_[static_cast<size_t>(j)].name);
    chains.push_back(std::move(chain));
  }
  return chains;
}

std::vector<bool> CostModel::sides(const std::map<std::string, FormatId>& formats) const {
  std::vector<bool> integer(nodes_.size(), false);
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node& node = nodes_[i];
    if (const auto it = formats.find(node.name); it != formats.end()) {
      integer[i] = format_traits(it->second).is_qdq;
    } else if (node.layout_only && !node.inputs.empty() && node.inputs.front() >= 0) {
      integer[i] = integer[static_cast<size_t>(node.inputs.front())];  // moving values keeps their side
    }
  }
  return integer;
}

AssignmentCost CostModel::cost(const std::map<std::string, FormatId>& formats) const {
  AssignmentCost cost;
  const std::vector<bool> integer = sides(formats);
  const double per_element = device_.boundary_cost;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node& node = nodes_[i];
    const auto it = formats.find(node.name);
    cost.compute += node.macs / relative_speed(device_, it == formats.end() ? FormatId::kFloat32 : it->second);
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      if (node.inputs[k] < 0) continue;  // a graph input: converted from the host's float in every assignment
      if (integer[static_cast<size_t>(node.inputs[k])] != integer[i]) {
        ++cost.transitions;
        cost.boundary += per_element * node.input_elements[k];
      }
    }
  }
  return cost;
}

std::vector<std::set<std::string>> CostModel::islands(const std::map<std::string, FormatId>& formats,
                                                      const std::set<std::string>& candidates) const {
  // Union-find over the candidate nodes joined by an edge whose two ends are on the same side,
  // through layout-only nodes.
  const std::vector<bool> integer = sides(formats);
  std::vector<int> parent(nodes_.size());
  for (size_t i = 0; i < parent.size(); ++i) parent[i] = static_cast<int>(i);
  const auto find = [&](int x) {
    while (parent[static_cast<size_t>(x)] != x) x = parent[static_cast<size_t>(x)] = parent[static_cast<size_t>(parent[static_cast<size_t>(x)])];
    return x;
  };
  for (size_t i = 0; i < nodes_.size(); ++i) {
    for (int producer : nodes_[i].inputs) {
      if (producer >= 0 && integer[static_cast<size_t>(producer)] == integer[i]) {
        parent[static_cast<size_t>(find(producer))] = find(static_cast<int>(i));
      }
    }
  }
  std::map<int, std::set<std::string>> groups;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (candidates.count(nodes_[i].name)) groups[find(static_cast<int>(i))].insert(nodes_[i].name);
  }
  std::vector<std::set<std::string>> out;
  for (auto& [root, members] : groups) out.push_back(std::move(members));
  return out;
}

}  // namespace mixprec
