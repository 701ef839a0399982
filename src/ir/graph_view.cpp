#include "ir/graph_view.h"

#include <algorithm>
#include <functional>
#include <queue>

#include "mixprec/error.h"

namespace mixprec::ir {
namespace {

const std::vector<size_t>& no_consumers() {
  static const std::vector<size_t> empty;
  return empty;
}

// Label of a node within its own graph, without scope.
std::string local_label(const onnx::NodeProto& node, size_t index) {
  return node.name().empty() ? node.op_type() + "#" + std::to_string(index) : node.name();
}

// "node 'conv_1' (Conv)" for error messages.
std::string describe_node(const onnx::NodeProto& node, size_t index) {
  return "node '" + local_label(node, index) + "' (" + node.op_type() + ")";
}

}  // namespace

const onnx::NodeProto& NodeRef::node() const { return graph->node(index); }

size_t NodeRefHash::operator()(const NodeRef& ref) const noexcept {
  return std::hash<const GraphView*>{}(ref.graph) ^ (std::hash<size_t>{}(ref.index) * 0x9e3779b97f4a7c15ULL);
}

GraphView::GraphView(const onnx::GraphProto& graph, std::string source_file)
    : GraphView(graph, std::move(source_file), nullptr, "") {}

GraphView::GraphView(const onnx::GraphProto& graph, std::string source_file, const GraphView* outer,
                     std::string scope_name)
    : graph_(graph), source_file_(std::move(source_file)), outer_(outer), scope_name_(std::move(scope_name)) {
  // Definitions first: subgraphs resolve names against their enclosing graphs while they index.
  index_definitions();
  build_subgraphs();
  index_uses();
  sort_topologically();
}

GraphView::~GraphView() = default;

const onnx::NodeProto& GraphView::node(size_t index) const { return graph_.node(static_cast<int>(index)); }

void GraphView::fail(const std::string& message) const {
  throw_bad_input(source_file_, scope_name_.empty() ? message : message + " (in subgraph " + scope_name_ + ")");
}

void GraphView::index_definitions() {
  for (const onnx::TensorProto& tensor : graph_.initializer()) {
    if (!initializers_.emplace(tensor.name(), &tensor).second) {
      fail("initializer '" + tensor.name() + "' is defined twice");
    }
  }
  for (const onnx::ValueInfoProto& input : graph_.input()) {
    if (!graph_inputs_.insert(input.name()).second) fail("graph input '" + input.name() + "' is declared twice");
    value_infos_.emplace(input.name(), &input);
    // An initializer may double as a graph input (its default value); the caller need not feed it.
    if (!is_initializer(input.name())) input_names_.push_back(input.name());
  }
  for (const onnx::ValueInfoProto& output : graph_.output()) {
    graph_outputs_.insert(output.name());
    value_infos_.emplace(output.name(), &output);
  }
  for (const onnx::ValueInfoProto& info : graph_.value_info()) value_infos_.emplace(info.name(), &info);

  for (size_t i = 0; i < node_count(); ++i) {
    const onnx::NodeProto& n = node(i);
    for (const std::string& output : n.output()) {
      if (output.empty()) continue;
      if (graph_inputs_.contains(output) || is_initializer(output)) {
        fail(describe_node(n, i) + " outputs '" + output +
             "', which is already a graph input or initializer");
      }
      const auto [it, inserted] = producers_.emplace(output, i);
      if (!inserted) {
        fail(describe_node(n, i) + " outputs '" + output + "', which " +
             describe_node(node(it->second), it->second) + " already outputs");
      }
    }
  }
}

void GraphView::build_subgraphs() {
  subgraphs_.resize(node_count());
  for (size_t i = 0; i < node_count(); ++i) {
    const onnx::NodeProto& n = node(i);
    const std::string owner = (scope_name_.empty() ? "" : scope_name_ + "/") + local_label(n, i);
    for (const onnx::AttributeProto& attribute : n.attribute()) {
      if (attribute.has_g()) {
        subgraphs_[i].push_back(std::unique_ptr<GraphView>(
            new GraphView(attribute.g(), source_file_, this, owner + "." + attribute.name())));
      }
      for (int k = 0; k < attribute.graphs_size(); ++k) {
        subgraphs_[i].push_back(std::unique_ptr<GraphView>(new GraphView(
            attribute.graphs(k), source_file_, this, owner + "." + attribute.name() + "[" + std::to_string(k) + "]")));
      }
    }
  }
}

bool GraphView::defines_locally(std::string_view name) const {
  return producers_.contains(name) || graph_inputs_.contains(name) || initializers_.contains(name);
}

bool GraphView::is_visible(std::string_view name) const {
  for (const GraphView* scope = this; scope != nullptr; scope = scope->outer_) {
    if (scope->defines_locally(name)) return true;
  }
  return false;
}

void GraphView::index_uses() {
  std::unordered_set<std::string_view> free_seen;
  auto note_free = [&](std::string_view name) {
    if (!defines_locally(name) && free_seen.insert(name).second) free_names_.emplace_back(name);
  };
  auto add_consumer = [&](std::string_view name, size_t i) {
    std::vector<size_t>& list = consumers_[name];
    if (list.empty() || list.back() != i) list.push_back(i);  // nodes are visited in index order
  };

  for (size_t i = 0; i < node_count(); ++i) {
    const onnx::NodeProto& n = node(i);
    for (const std::string& input : n.input()) {
      if (input.empty()) continue;
      if (!is_visible(input)) {
        fail(describe_node(n, i) + " reads '" + input +
             "', which no node, graph input or initializer defines");
      }
      add_consumer(input, i);
      note_free(input);
    }
    for (const auto& subgraph : subgraphs_[i]) {
      for (const std::string& name : subgraph->free_names()) {
        add_consumer(name, i);
        note_free(name);
      }
    }
  }
  for (const onnx::ValueInfoProto& output : graph_.output()) {
    if (!is_visible(output.name())) fail("graph output '" + output.name() + "' is never produced");
    note_free(output.name());
  }
}

void GraphView::sort_topologically() {
  const size_t count = node_count();
  std::vector<size_t> pending_inputs(count, 0);
  std::vector<std::vector<size_t>> successors(count);
  for (const auto& [name, readers] : consumers_) {
    const auto producer_it = producers_.find(name);
    if (producer_it == producers_.end()) continue;
    for (size_t reader : readers) {
      successors[producer_it->second].push_back(reader);
      ++pending_inputs[reader];
    }
  }

  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (size_t i = 0; i < count; ++i) {
    if (pending_inputs[i] == 0) ready.push(i);
  }
  topological_order_.reserve(count);
  while (!ready.empty()) {
    const size_t i = ready.top();
    ready.pop();
    topological_order_.push_back(i);
    for (size_t next : successors[i]) {
      if (--pending_inputs[next] == 0) ready.push(next);
    }
  }
  if (topological_order_.size() != count) {
    const auto stuck = std::find_if(pending_inputs.begin(), pending_inputs.end(), [](size_t n) { return n > 0; });
    const size_t i = static_cast<size_t>(stuck - pending_inputs.begin());
    fail("the graph has a cycle through " + describe_node(node(i), i) + " (" +
         std::to_string(count - topological_order_.size()) + " nodes on or behind cycles)");
  }
}

std::optional<size_t> GraphView::producer(std::string_view name) const {
  const auto it = producers_.find(name);
  if (it == producers_.end()) return std::nullopt;
  return it->second;
}

const std::vector<size_t>& GraphView::consumers(std::string_view name) const {
  const auto it = consumers_.find(name);
  return it == consumers_.end() ? no_consumers() : it->second;
}

const onnx::TensorProto* GraphView::initializer(std::string_view name) const {
  const auto it = initializers_.find(name);
  return it == initializers_.end() ? nullptr : it->second;
}

bool GraphView::is_graph_output(std::string_view name) const { return graph_outputs_.contains(name); }

std::vector<const GraphView*> GraphView::subgraphs(size_t index) const {
  std::vector<const GraphView*> views;
  for (const auto& subgraph : subgraphs_.at(index)) views.push_back(subgraph.get());
  return views;
}

std::optional<NodeRef> GraphView::resolve_producer(std::string_view name) const {
  for (const GraphView* scope = this; scope != nullptr; scope = scope->outer_) {
    if (const auto index = scope->producer(name)) return NodeRef{scope, *index};
    if (scope->defines_locally(name)) return std::nullopt;
  }
  return std::nullopt;
}

const onnx::TensorProto* GraphView::resolve_initializer(std::string_view name) const {
  for (const GraphView* scope = this; scope != nullptr; scope = scope->outer_) {
    if (scope->defines_locally(name)) return scope->initializer(name);
  }
  return nullptr;
}

const onnx::ValueInfoProto* GraphView::resolve_value_info(std::string_view name) const {
  for (const GraphView* scope = this; scope != nullptr; scope = scope->outer_) {
    if (const auto it = scope->value_infos_.find(name); it != scope->value_infos_.end()) return it->second;
    if (scope->defines_locally(name)) return nullptr;
  }
  return nullptr;
}

std::vector<NodeRef> GraphView::nested_nodes() const {
  std::vector<NodeRef> nodes;
  append_nested(&nodes);
  return nodes;
}

void GraphView::append_nested(std::vector<NodeRef>* out) const {
  for (size_t i : topological_order_) {
    for (const auto& subgraph : subgraphs_[i]) subgraph->append_nested(out);
    out->push_back(NodeRef{this, i});
  }
}

std::string node_label(const NodeRef& ref) {
  const std::string local = local_label(ref.node(), ref.index);
  const std::string& scope = ref.graph->scope_name();
  return scope.empty() ? local : scope + "/" + local;
}

const onnx::AttributeProto* find_attribute(const onnx::NodeProto& node, std::string_view name) {
  for (const onnx::AttributeProto& attribute : node.attribute()) {
    if (attribute.name() == name) return &attribute;
  }
  return nullptr;
}

namespace {
const onnx::AttributeProto* typed_attribute(const onnx::NodeProto& node, std::string_view name,
                                            onnx::AttributeProto::AttributeType type) {
  const onnx::AttributeProto* attribute = find_attribute(node, name);
  return attribute != nullptr && attribute->type() == type ? attribute : nullptr;
}
}  // namespace

std::optional<int64_t> int_attribute(const onnx::NodeProto& node, std::string_view name) {
  const auto* a = typed_attribute(node, name, onnx::AttributeProto::INT);
  return a ? std::optional(a->i()) : std::nullopt;
}

std::optional<float> float_attribute(const onnx::NodeProto& node, std::string_view name) {
  const auto* a = typed_attribute(node, name, onnx::AttributeProto::FLOAT);
  return a ? std::optional(a->f()) : std::nullopt;
}

std::optional<std::string> string_attribute(const onnx::NodeProto& node, std::string_view name) {
  const auto* a = typed_attribute(node, name, onnx::AttributeProto::STRING);
  return a ? std::optional(a->s()) : std::nullopt;
}

std::optional<std::vector<int64_t>> ints_attribute(const onnx::NodeProto& node, std::string_view name) {
  const auto* a = typed_attribute(node, name, onnx::AttributeProto::INTS);
  return a ? std::optional(std::vector<int64_t>(a->ints().begin(), a->ints().end())) : std::nullopt;
}

}  // namespace mixprec::ir
