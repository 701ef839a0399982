// GraphView: a light read-only index over one onnx::GraphProto and, recursively, the
// subgraphs held by its nodes' GRAPH/GRAPHS attributes (If, Loop, Scan ...).
//
// Contract:
// - The view borrows the GraphProto: the proto must outlive the view and must not change while
//   the view is alive. Views are neither copyable nor movable (subgraph views point at their
//   enclosing view).
// - Construction validates the graph and throws mixprec::Error (kBadInput, naming
//   `source_file` and the node) when a node input is never defined (not a graph input, an
//   initializer, a node output of this graph or a name visible from an enclosing graph), when
//   two nodes (or a node and a graph input/initializer) define the same name, or when the nodes
//   form a cycle.
// - Names follow ONNX lexical scoping: a subgraph sees every name of its enclosing graphs. A
//   name defined outside a subgraph and used inside it is an *implicit input* of the node that
//   owns the subgraph; in the enclosing graph that node counts as a consumer of the name and is
//   ordered after its producer.
// - Empty input names (omitted optional inputs) are ignored everywhere.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <onnx/onnx_pb.h>

namespace mixprec::ir {

class GraphView;

// A node of some graph in the view tree.
struct NodeRef {
  const GraphView* graph = nullptr;
  size_t index = 0;

  const onnx::NodeProto& node() const;
  bool operator==(const NodeRef&) const = default;
};

struct NodeRefHash {
  size_t operator()(const NodeRef& ref) const noexcept;
};

class GraphView {
 public:
  // Indexes and validates `graph` and all its subgraphs. `source_file` names the model in errors.
  GraphView(const onnx::GraphProto& graph, std::string source_file);
  ~GraphView();
  GraphView(const GraphView&) = delete;
  GraphView& operator=(const GraphView&) = delete;

  const onnx::GraphProto& graph() const { return graph_; }
  const std::string& source_file() const { return source_file_; }

  size_t node_count() const { return static_cast<size_t>(graph_.node_size()); }
  const onnx::NodeProto& node(size_t index) const;

  // Index of the node of THIS graph that outputs `name`; nullopt for graph inputs, initializers,
  // names of enclosing graphs and unknown names.
  std::optional<size_t> producer(std::string_view name) const;
  // Nodes of THIS graph that read `name`, directly or through a subgraph (implicit input);
  // ascending, without duplicates. Empty when nobody reads it.
  const std::vector<size_t>& consumers(std::string_view name) const;

  const onnx::TensorProto* initializer(std::string_view name) const;
  bool is_initializer(std::string_view name) const { return initializer(name) != nullptr; }
  // Graph inputs that are not initializers (the values a caller must feed), in graph order.
  const std::vector<std::string>& input_names() const { return input_names_; }
  bool is_graph_output(std::string_view name) const;

  // Node indices in topological order (Kahn); among ready nodes the lowest index goes first, so
  // an already sorted graph keeps its order.
  const std::vector<size_t>& topological_order() const { return topological_order_; }

  // --- Scoping ---------------------------------------------------------------------------------
  // The enclosing graph, or nullptr for the main graph.
  const GraphView* outer() const { return outer_; }
  // Where this subgraph hangs in its enclosing graph: e.g. "If_0.then_branch" or
  // "Loop_3.body"; empty for the main graph.
  const std::string& scope_name() const { return scope_name_; }
  // The subgraph views owned by node `index`, in attribute order (GRAPHS in element order).
  std::vector<const GraphView*> subgraphs(size_t index) const;
  // The producer of `name` as seen from this graph: this graph first, then enclosing graphs.
  // nullopt when `name` is a graph input or initializer of the scope that defines it.
  std::optional<NodeRef> resolve_producer(std::string_view name) const;
  // The initializer `name` as seen from this graph (this graph first, then enclosing graphs).
  const onnx::TensorProto* resolve_initializer(std::string_view name) const;
  // The declared ValueInfo (graph input, output or value_info) of `name` in this graph or an
  // enclosing one; nullptr when undeclared.
  const onnx::ValueInfoProto* resolve_value_info(std::string_view name) const;

  // Every node of this graph and its subgraphs, in *nested topological order*: graph nodes in
  // topological order, each preceded by the nodes of its subgraphs (recursively, attribute
  // order). A node's subgraphs run as part of the node, so this order respects data flow.
  std::vector<NodeRef> nested_nodes() const;

 private:
  GraphView(const onnx::GraphProto& graph, std::string source_file, const GraphView* outer,
            std::string scope_name);
  void index_definitions();
  void build_subgraphs();
  void index_uses();
  void sort_topologically();
  void append_nested(std::vector<NodeRef>* out) const;
  // True when `name` is a graph input, initializer or node output of this graph.
  bool defines_locally(std::string_view name) const;
  bool is_visible(std::string_view name) const;
  // Names read inside this graph (and its subgraphs) that this graph does not define.
  const std::vector<std::string>& free_names() const { return free_names_; }
  [[noreturn]] void fail(const std::string& message) const;

  const onnx::GraphProto& graph_;
  std::string source_file_;
  const GraphView* outer_ = nullptr;
  std::string scope_name_;

  // string_view keys point into graph_, which outlives the view.
  std::unordered_map<std::string_view, size_t> producers_;
  std::unordered_map<std::string_view, std::vector<size_t>> consumers_;
  std::unordered_map<std::string_view, const onnx::TensorProto*> initializers_;
  std::unordered_map<std::string_view, const onnx::ValueInfoProto*> value_infos_;
  std::unordered_set<std::string_view> graph_inputs_;
  std::unordered_set<std::string_view> graph_outputs_;
  std::vector<std::string> input_names_;
  std::vector<size_t> topological_order_;
  std::vector<std::string> free_names_;
  // subgraphs_[i] = views of node i's subgraphs.
  std::vector<std::vector<std::unique_ptr<GraphView>>> subgraphs_;
};

// A readable, unique-enough label for reports and errors: the node name, or "<op_type>#<index>"
// when unnamed, prefixed by the subgraph scope ("If_0.then_branch/") for nested nodes.
std::string node_label(const NodeRef& ref);

// Attribute `name` of `node`, or nullptr.
const onnx::AttributeProto* find_attribute(const onnx::NodeProto& node, std::string_view name);

// The value of attribute `name` of `node` when it exists with the type (INT, FLOAT, STRING,
// INTS); nullopt when it is absent or has another type.
std::optional<int64_t> int_attribute(const onnx::NodeProto& node, std::string_view name);
std::optional<float> float_attribute(const onnx::NodeProto& node, std::string_view name);
std::optional<std::string> string_attribute(const onnx::NodeProto& node, std::string_view name);
std::optional<std::vector<int64_t>> ints_attribute(const onnx::NodeProto& node, std::string_view name);

}  // namespace mixprec::ir
