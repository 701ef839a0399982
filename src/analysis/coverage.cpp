// Precision of each compute node and the coverage figures derived from it (definitions in
// include/mixprec/analysis.h).
#include <algorithm>
#include <map>

#include "analysis/model_graph.h"

namespace mixprec::analysis {
namespace {

// Precision delivered by the node that (through layout-only ops) feeds an operand.
Precision operand_precision(const ModelGraph& graph, size_t reader, const std::string& name) {
  std::optional<size_t> source = graph.producer(reader, name);
  while (source && graph.has_flag(*source, ir::kLayoutOnly) && graph.node(*source).input_size() > 0) {
    source = graph.producer(*source, graph.node(*source).input(0));
  }
  if (!source) return Precision::kFloat;
  const ir::QuantRole role = graph.quant_role(*source);
  if (role == ir::QuantRole::kDequantize || role == ir::QuantRole::kQuantizeDequantize) return Precision::kQuantized;
  switch (graph.cast_back_source_type(*source)) {
    case onnx::TensorProto::BFLOAT16: return Precision::kBFloat16;
    case onnx::TensorProto::FLOAT16: return Precision::kFloat16;
    default: return Precision::kFloat;
  }
}

// Whether operand `name` of `reader` comes straight from a block fake-quantization node (BFP/MX).
bool from_block_node(const ModelGraph& graph, size_t reader, const std::string& name) {
  const std::optional<size_t> source = graph.producer(reader, name);
  return source && graph.quant_role(*source) == ir::QuantRole::kQuantizeDequantize;
}

Precision compute_precision(const ModelGraph& graph, size_t id) {
  if (graph.quant_role(id) == ir::QuantRole::kQOperator) return Precision::kQuantized;
  const onnx::NodeProto& n = graph.node(id);
  const uint16_t operands = graph.traits(id)->operand_inputs;
  // Block formats round constant weights offline: beside a block-quantized activation, a
  // weight initializer is taken as rounded too.
  bool block_activation = false;
  for (int i = 0; i < n.input_size(); ++i) {
    if (ir::mask_has_input(operands, i) && !n.input(i).empty()) block_activation |= from_block_node(graph, id, n.input(i));
  }
  std::optional<Precision> common;
  for (int i = 0; i < n.input_size(); ++i) {
    if (!ir::mask_has_input(operands, i) || n.input(i).empty()) continue;
    if (block_activation && graph.ref(id).graph->resolve_initializer(n.input(i)) != nullptr) continue;
    const Precision precision = operand_precision(graph, id, n.input(i));
    if (common && *common != precision) return Precision::kFloat;
    common = precision;
  }
  return common.value_or(Precision::kFloat);
}

// The per-precision counter of a ComputeOpCount.
int64_t& count_of(ComputeOpCount& row, Precision precision) {
  switch (precision) {
    case Precision::kQuantized: return row.quantized;
    case Precision::kBFloat16: return row.bf16;
    case Precision::kFloat16: return row.fp16;
    case Precision::kFloat: break;
  }
  return row.float32;
}

}  // namespace

std::vector<std::optional<Precision>> classify_compute_nodes(const ModelGraph& graph) {
  std::vector<std::optional<Precision>> precisions(graph.size());
  for (size_t id = 0; id < graph.size(); ++id) {
    if (graph.has_flag(id, ir::kCompute)) precisions[id] = compute_precision(graph, id);
  }
  return precisions;
}

std::vector<ComputeOpCount> count_compute_ops(const ModelGraph& graph,
                                              const std::vector<std::optional<Precision>>& precisions) {
  std::map<std::string, ComputeOpCount> by_type;
  for (size_t id = 0; id < graph.size(); ++id) {
    if (!precisions[id]) continue;
    const std::string op_type = ir::qualified_op_type(graph.node(id));
    ComputeOpCount& row = by_type[op_type];
    row.op_type = op_type;
    ++row.total;
    ++count_of(row, *precisions[id]);
  }
  std::vector<ComputeOpCount> rows;
  for (auto& [name, row] : by_type) rows.push_back(std::move(row));
  // by_type is ordered by name, so a stable sort on the count breaks ties by name.
  std::stable_sort(rows.begin(), rows.end(), [](const ComputeOpCount& a, const ComputeOpCount& b) {
    return a.total > b.total;
  });
  return rows;
}

Coverage summarize_coverage(const std::vector<ComputeOpCount>& compute_ops) {
  Coverage coverage;
  for (const ComputeOpCount& row : compute_ops) {
    coverage.compute_nodes += row.total;
    coverage.quantized += row.quantized;
    coverage.bf16 += row.bf16;
    coverage.fp16 += row.fp16;
    coverage.float32 += row.float32;
  }
  if (coverage.compute_nodes > 0) {
    const double total = static_cast<double>(coverage.compute_nodes);
    coverage.quantized_percent = 100.0 * static_cast<double>(coverage.quantized) / total;
    coverage.emulated_percent = 100.0 * static_cast<double>(coverage.bf16 + coverage.fp16) / total;
  }
  return coverage;
}

std::vector<GraphCoverage> summarize_graph_coverage(const ModelGraph& graph,
                                                    const std::vector<std::optional<Precision>>& precisions) {
  std::vector<GraphCoverage> rows;
  std::map<const ir::GraphView*, size_t> row_of;
  bool any_body = false;
  for (size_t id = 0; id < graph.size(); ++id) {
    if (!precisions[id]) continue;
    const ir::GraphView* scope = graph.ref(id).graph;
    auto [it, added] = row_of.emplace(scope, rows.size());
    if (added) rows.push_back({scope->scope_name().empty() ? "main" : scope->scope_name(), {}});
    any_body = any_body || !scope->scope_name().empty();
    Coverage& c = rows[it->second].coverage;
    ++c.compute_nodes;
    switch (*precisions[id]) {
      case Precision::kQuantized: ++c.quantized; break;
      case Precision::kBFloat16: ++c.bf16; break;
      case Precision::kFloat16: ++c.fp16; break;
      case Precision::kFloat: ++c.float32; break;
    }
  }
  if (!any_body) return {};
  for (GraphCoverage& row : rows) {
    Coverage& c = row.coverage;
    const double total = static_cast<double>(c.compute_nodes);
    c.quantized_percent = 100.0 * static_cast<double>(c.quantized) / total;
    c.emulated_percent = 100.0 * static_cast<double>(c.bf16 + c.fp16) / total;
  }
  // The main graph first, then bodies in the order their first compute node appears.
  std::stable_partition(rows.begin(), rows.end(), [](const GraphCoverage& r) { return r.graph == "main"; });
  return rows;
}

}  // namespace mixprec::analysis
