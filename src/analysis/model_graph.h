// ModelGraph: the analysis passes' shared picture of a model — every node (subgraphs included)
// under a dense id in nested topological order, with its op-table row and its data
// predecessors, plus the element-type facts the passes need. Internal to src/analysis.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <onnx/onnx_pb.h>

#include "ir/op_traits.h"
#include "ir/graph_view.h"
#include "mixprec/analysis.h"

namespace mixprec::analysis {

class ModelGraph {
 public:
  // Throws mixprec::Error kBadInput (naming model_path) when the graph is malformed.
  ModelGraph(const onnx::GraphProto& graph, const std::string& model_path);

  const ir::GraphView& root() const { return root_; }
  size_t size() const { return nodes_.size(); }
  const ir::NodeRef& ref(size_t id) const { return nodes_[id]; }
  const onnx::NodeProto& node(size_t id) const { return nodes_[id].node(); }
  std::string label(size_t id) const { return ir::node_label(nodes_[id]); }
  // The node's op-table row, nullptr for ops the table does not list.
  const ir::OpTraits* traits(size_t id) const { return traits_[id]; }
  bool has_flag(size_t id, uint8_t flag) const;
  ir::QuantRole quant_role(size_t id) const;

  // The id of the node producing `name` as seen from the scope of node `id`; nullopt for graph
  // inputs, initializers and omitted inputs.
  std::optional<size_t> producer(size_t id, std::string_view name) const;
  // The id of the main-graph node producing main-graph value `name`; nullopt for inputs and
  // initializers.
  std::optional<size_t> main_producer(std::string_view name) const;
  // Ids of the nodes whose outputs node `id` reads: producers of its inputs and, for a node
  // owning subgraphs, producers of the subgraphs' outputs. Ascending, unique.
  const std::vector<size_t>& predecessors(size_t id) const { return predecessors_[id]; }

  // Element type of `name` as seen from node `id`'s scope, from (in order) an initializer, a
  // declared ValueInfo, or a producing Cast's `to`; 0 (UNDEFINED) when none says.
  int32_t element_type(size_t id, std::string_view name) const;
  // For a Cast to FLOAT whose input is BFLOAT16 or FLOAT16: that input type. Otherwise 0.
  int32_t cast_back_source_type(size_t id) const;
  // For a Cast (default domain): its `to`. Otherwise nullopt.
  std::optional<int64_t> cast_target(size_t id) const;

 private:
  ir::GraphView root_;
  std::vector<ir::NodeRef> nodes_;
  std::vector<const ir::OpTraits*> traits_;
  std::unordered_map<ir::NodeRef, size_t, ir::NodeRefHash> ids_;
  std::vector<std::vector<size_t>> predecessors_;
};

// The analysis passes, in the order analyze_model() runs them.
QuantizationSummary summarize_quantization(const ModelGraph& graph);
// Precision of every compute node (indexed by id); nullopt for non-compute nodes.
std::vector<std::optional<Precision>> classify_compute_nodes(const ModelGraph& graph);
std::vector<ComputeOpCount> count_compute_ops(const ModelGraph& graph,
                                              const std::vector<std::optional<Precision>>& precisions);
Coverage summarize_coverage(const std::vector<ComputeOpCount>& compute_ops);
std::vector<GraphCoverage> summarize_graph_coverage(const ModelGraph& graph,
                                                    const std::vector<std::optional<Precision>>& precisions);
IslandSummary find_islands(const ModelGraph& graph, const std::vector<std::optional<Precision>>& precisions);
// `outputs` are the main graph's outputs as analyze_model() describes them.
TaskInference infer_task_type(const ModelGraph& graph, const std::vector<TensorInfo>& outputs);
ArchitectureInference infer_architecture(const ModelGraph& graph);

}  // namespace mixprec::analysis
