#include <algorithm>
#include <cstdio>
#include <vector>

#include "mixprec/report.h"

namespace mixprec {
namespace {

using Json = nlohmann::ordered_json;

Json shape_json(const std::optional<std::vector<Dim>>& shape) {
  if (!shape) return nullptr;
  Json dims = Json::array();
  for (const Dim& dim : *shape) {
    if (dim.value) {
      dims.push_back(*dim.value);
    } else {
      dims.push_back(dim.to_string());
    }
  }
  return dims;
}

Json tensors_json(const std::vector<TensorInfo>& tensors) {
  Json list = Json::array();
  for (const TensorInfo& tensor : tensors) {
    list.push_back({{"name", tensor.name}, {"dtype", tensor.dtype}, {"shape", shape_json(tensor.shape)}});
  }
  return list;
}

std::string percent(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f%%", value);
  return text;
}

std::string join(const std::vector<std::string>& items, const char* separator) {
  std::string text;
  for (const std::string& item : items) {
    if (!item.empty()) text += (text.empty() ? "" : separator) + item;
  }
  return text;
}

// Left-aligned columns separated by two spaces, each line indented by two spaces.
class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header = {}) {
    if (!header.empty()) rows_.push_back(std::move(header));
  }
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }

  std::string render() const {
    std::vector<size_t> widths;
    for (const auto& row : rows_) {
      widths.resize(std::max(widths.size(), row.size()), 0);
      for (size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
    }
    std::string text;
    for (const auto& row : rows_) {
      std::string line = " ";
      for (size_t c = 0; c < row.size(); ++c) {
        line += " " + row[c];
        if (c + 1 < row.size()) line += std::string(widths[c] - row[c].size() + 1, ' ');
      }
      text += line + "\n";
    }
    return text;
  }

 private:
  std::vector<std::vector<std::string>> rows_;
};

std::string section(const std::string& title, const TextTable& table) { return title + "\n" + table.render() + "\n"; }

std::string tensors_section(const std::string& title, const std::vector<TensorInfo>& tensors) {
  TextTable table({"name", "dtype", "shape"});
  for (const TensorInfo& tensor : tensors) table.add({tensor.name, tensor.dtype, dims_to_string(tensor.shape)});
  return section(title, table);
}

}  // namespace

nlohmann::ordered_json analysis_to_json(const ModelAnalysis& analysis) {
  Json opsets = Json::object();
  for (const auto& [domain, version] : analysis.opsets) opsets[domain] = version;
  const QuantizationSummary& quant = analysis.quantization;

  Json histogram = Json::array();
  for (const OpCount& op : analysis.op_histogram) histogram.push_back({{"op_type", op.op_type}, {"count", op.count}});
  Json compute_ops = Json::array();
  for (const ComputeOpCount& op : analysis.compute_ops) {
    compute_ops.push_back({{"op_type", op.op_type},
                           {"total", op.total},
                           {"quantized", op.quantized},
                           {"bf16", op.bf16},
                           {"fp16", op.fp16},
                           {"float", op.float32}});
  }
  Json islands = Json::array();
  for (const Island& island : analysis.islands.islands) {
    islands.push_back({{"precision", to_string(island.precision)},
                       {"node_count", island.node_count},
                       {"first_node", island.first_node},
                       {"last_node", island.last_node}});
  }
  const Coverage& coverage = analysis.coverage;

  Json json;
  json["model"] = {{"path", analysis.model_path},
                   {"ir_version", analysis.ir_version},
                   {"opsets", opsets},
                   {"producer_name", analysis.producer_name},
                   {"producer_version", analysis.producer_version},
                   {"graph_name", analysis.graph_name},
                   {"node_count", analysis.node_count}};
  json["quantization"] = {{"state", to_string(quant.state)},
                          {"quantize_linear", quant.quantize_linear},
                          {"dequantize_linear", quant.dequantize_linear},
                          {"cast_pairs_bf16", quant.cast_pairs_bf16},
                          {"cast_pairs_fp16", quant.cast_pairs_fp16},
                          {"qoperator_nodes", quant.qoperator_nodes},
                          {"custom_domain_nodes", quant.custom_domain_nodes},
                          {"dtypes", quant.dtypes},
                          {"edge_quantized_inputs", quant.edge_quantized_inputs},
                          {"edge_dequantized_outputs", quant.edge_dequantized_outputs}};
  json["inputs"] = tensors_json(analysis.inputs);
  json["outputs"] = tensors_json(analysis.outputs);
  json["dynamic_dims"] = analysis.dynamic_dims;
  json["body_dynamic_dims"] = analysis.body_dynamic_dims;
  json["op_histogram"] = std::move(histogram);
  json["compute_ops"] = std::move(compute_ops);
  const auto coverage_json = [](const Coverage& c) {
    return Json{{"compute_nodes", c.compute_nodes}, {"quantized", c.quantized},
                {"bf16", c.bf16},                   {"fp16", c.fp16},
                {"float", c.float32},               {"quantized_percent", c.quantized_percent},
                {"emulated_percent", c.emulated_percent}};
  };
  json["coverage"] = coverage_json(coverage);
  Json graph_coverage = Json::array();
  for (const GraphCoverage& row : analysis.graph_coverage) {
    Json entry = coverage_json(row.coverage);
    entry["graph"] = row.graph;
    graph_coverage.push_back(std::move(entry));
  }
  json["graph_coverage"] = std::move(graph_coverage);
  json["islands"] = {{"quantized", analysis.islands.quantized_islands},
                     {"float", analysis.islands.float_islands},
                     {"bf16", analysis.islands.bf16_islands},
                     {"fp16", analysis.islands.fp16_islands},
                     {"list", std::move(islands)}};
  json["task"] = {{"type", to_string(analysis.task.type)}, {"reason", analysis.task.reason}};
  const ArchitectureInference& arch = analysis.architecture;
  json["architecture"] = {{"type", to_string(arch.type)},           {"reason", arch.reason},
                          {"conv_nodes", arch.conv_nodes},          {"matmul_nodes", arch.matmul_nodes},
                          {"attention_blocks", arch.attention_blocks}, {"normalizations", arch.normalizations},
                          {"recurrent_nodes", arch.recurrent_nodes}, {"attention_matmuls", arch.attention_matmuls}};
  json["architecture"]["mlp_blocks"] = Json::array();
  for (const MlpBlock& b : arch.mlp_blocks) {
    json["architecture"]["mlp_blocks"].push_back({{"up", b.up}, {"activation", b.activation}, {"down", b.down}});
  }
  json["architecture"]["attention_projections"] = Json::array();
  for (const AttentionProjection& p : arch.attention_projections) {
    json["architecture"]["attention_projections"].push_back({{"node", p.node}, {"role", p.role}});
  }
  return json;
}

std::string analysis_to_table(const ModelAnalysis& analysis, const AnalysisTableOptions& options) {
  std::string text;

  std::vector<std::string> opsets;
  for (const auto& [domain, version] : analysis.opsets) opsets.push_back(domain + " " + std::to_string(version));
  TextTable model;
  model.add({"path", analysis.model_path});
  model.add({"ir_version", std::to_string(analysis.ir_version)});
  model.add({"opsets", join(opsets, ", ")});
  model.add({"producer", join({analysis.producer_name, analysis.producer_version}, " ")});
  model.add({"graph", analysis.graph_name});
  model.add({"nodes", std::to_string(analysis.node_count)});
  text += section("Model", model);

  const QuantizationSummary& quant = analysis.quantization;
  TextTable quantization;
  quantization.add({"state", to_string(quant.state)});
  quantization.add({"QuantizeLinear", std::to_string(quant.quantize_linear)});
  quantization.add({"DequantizeLinear", std::to_string(quant.dequantize_linear)});
  quantization.add({"cast pairs bf16", std::to_string(quant.cast_pairs_bf16)});
  quantization.add({"cast pairs fp16", std::to_string(quant.cast_pairs_fp16)});
  quantization.add({"QOperator nodes", std::to_string(quant.qoperator_nodes)});
  quantization.add({"custom-domain quant nodes", std::to_string(quant.custom_domain_nodes)});
  quantization.add({"edge: Q at inputs", std::to_string(quant.edge_quantized_inputs)});
  quantization.add({"edge: DQ at outputs", std::to_string(quant.edge_dequantized_outputs)});
  quantization.add({"dtypes", quant.dtypes.empty() ? "-" : join(quant.dtypes, ", ")});
  text += section("Quantization", quantization);

  text += tensors_section("Inputs", analysis.inputs);
  text += tensors_section("Outputs", analysis.outputs);
  {
    const std::vector<std::string>& dims = analysis.dynamic_dims;
    constexpr size_t kShown = 4;
    std::vector<std::string> shown(dims.begin(), dims.begin() + static_cast<long>(std::min(kShown, dims.size())));
    TextTable shapes;
    shapes.add({"static", dims.empty() ? "yes: every declared input, output and value_info dim is a number"
                                       : "no: " + std::to_string(dims.size()) + " dynamic dims (" + join(shown, ", ") +
                                             (dims.size() > kShown ? ", ..." : "") + "); quantize --make-static pins them"});
    if (const auto& body = analysis.body_dynamic_dims; !body.empty()) {
      std::vector<std::string> first(body.begin(), body.begin() + static_cast<long>(std::min(kShown, body.size())));
      shapes.add({"in bodies", std::to_string(body.size()) + " dynamic or undeclared dims inside If/Loop/Scan bodies (" +
                                   join(first, ", ") + (body.size() > kShown ? ", ..." : "") +
                                   "); quantize --make-static infers what the main graph's shapes determine"});
    }
    text += section("Shapes", shapes);
  }

  TextTable histogram({"op_type", "count"});
  const size_t shown_ops = std::min(options.max_ops, analysis.op_histogram.size());
  for (size_t i = 0; i < shown_ops; ++i) {
    histogram.add({analysis.op_histogram[i].op_type, std::to_string(analysis.op_histogram[i].count)});
  }
  if (shown_ops < analysis.op_histogram.size()) {
    int64_t rest = 0;
    for (size_t i = shown_ops; i < analysis.op_histogram.size(); ++i) rest += analysis.op_histogram[i].count;
    histogram.add({std::to_string(analysis.op_histogram.size() - shown_ops) + " more op types", std::to_string(rest)});
  }
  text += section("Op histogram (" + std::to_string(analysis.op_histogram.size()) + " op types)", histogram);

  const Coverage& coverage = analysis.coverage;
  TextTable compute({"op_type", "total", "quantized", "bf16", "fp16", "float"});
  auto add_counts = [&compute](const std::string& name, int64_t total, int64_t quantized, int64_t bf16, int64_t fp16,
                               int64_t float32) {
    compute.add({name, std::to_string(total), std::to_string(quantized), std::to_string(bf16), std::to_string(fp16),
                 std::to_string(float32)});
  };
  for (const ComputeOpCount& op : analysis.compute_ops) {
    add_counts(op.op_type, op.total, op.quantized, op.bf16, op.fp16, op.float32);
  }
  add_counts("all compute", coverage.compute_nodes, coverage.quantized, coverage.bf16, coverage.fp16,
             coverage.float32);
  text += section("Coverage (quantized " + percent(coverage.quantized_percent) + ", emulated bf16/fp16 " +
                      percent(coverage.emulated_percent) + " of compute nodes)",
                  compute);

  if (!analysis.graph_coverage.empty()) {
    TextTable by_graph({"graph", "compute", "quantized", "bf16", "fp16", "float"});
    for (const GraphCoverage& row : analysis.graph_coverage) {
      const Coverage& c = row.coverage;
      by_graph.add({row.graph, std::to_string(c.compute_nodes), std::to_string(c.quantized), std::to_string(c.bf16),
                    std::to_string(c.fp16), std::to_string(c.float32)});
    }
    text += section("Coverage by graph (" + std::to_string(analysis.graph_coverage.size()) +
                        " graphs with compute nodes; If/Loop/Scan bodies by path)",
                    by_graph);
  }

  const IslandSummary& summary = analysis.islands;
  TextTable islands({"#", "precision", "nodes", "first", "last"});
  const size_t shown_islands = std::min(options.max_islands, summary.islands.size());
  for (size_t i = 0; i < shown_islands; ++i) {
    const Island& island = summary.islands[i];
    islands.add({std::to_string(i + 1), to_string(island.precision), std::to_string(island.node_count),
                 island.first_node, island.last_node});
  }
  if (shown_islands < summary.islands.size()) {
    islands.add({"...", std::to_string(summary.islands.size() - shown_islands) + " more islands"});
  }
  text += section("Islands (" + std::to_string(summary.islands.size()) + ": " +
                      std::to_string(summary.quantized_islands) + " quantized, " +
                      std::to_string(summary.float_islands) + " float, " + std::to_string(summary.bf16_islands) +
                      " bf16, " + std::to_string(summary.fp16_islands) + " fp16)",
                  islands);

  TextTable task;
  task.add({"type", to_string(analysis.task.type)});
  task.add({"reason", analysis.task.reason});
  text += section("Task type", task);
  TextTable architecture;
  architecture.add({"type", to_string(analysis.architecture.type)});
  architecture.add({"reason", analysis.architecture.reason});
  architecture.add({"mlp blocks", std::to_string(analysis.architecture.mlp_blocks.size())});
  architecture.add({"attention projections", std::to_string(analysis.architecture.attention_projections.size())});
  text += section("Architecture", architecture);
  if (!analysis.architecture.mlp_blocks.empty() || !analysis.architecture.attention_projections.empty()) {
    TextTable ffn;
    ffn.add({"part", "node", "detail"});
    for (const MlpBlock& b : analysis.architecture.mlp_blocks) {
      ffn.add({"mlp up", b.up, b.activation + " -> " + b.down});
    }
    for (const AttentionProjection& p : analysis.architecture.attention_projections) {
      ffn.add({"attention " + p.role, p.node, ""});
    }
    text += section("Feed-forward and attention projections (weight MatMul/Gemm)", ffn);
  }
  text.pop_back();  // one trailing newline, not a blank line
  return text;
}

}  // namespace mixprec
