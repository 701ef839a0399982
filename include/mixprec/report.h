// Reports: plain result structs rendered as JSON (machine-readable, stable key order) and as
// aligned terminal tables (for people). Rendering never fails and never changes the results.
#pragma once

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "mixprec/analysis.h"

namespace mixprec {

// The analysis as JSON. Keys, in this order (stable across runs and versions; new keys are only
// appended):
//   model        {path, ir_version, opsets{domain: version}, producer_name, producer_version,
//                 graph_name, node_count}
//   quantization {state, quantize_linear, dequantize_linear, cast_pairs_bf16, cast_pairs_fp16,
//                 qoperator_nodes, custom_domain_nodes, dtypes[]}
//   inputs, outputs  [{name, dtype, shape}]; shape is null when the rank is unknown, else a list
//                 whose items are numbers, symbolic names, or "?"
//   op_histogram [{op_type, count}]
//   compute_ops  [{op_type, total, quantized, bf16, fp16, float}]
//   coverage     {compute_nodes, quantized, bf16, fp16, float, quantized_percent, emulated_percent}
//   islands      {quantized, float, bf16, fp16, list[{precision, node_count, first_node, last_node}]}
//   task         {type, reason}
// Enum values are spelled as to_string() spells them.
nlohmann::ordered_json analysis_to_json(const ModelAnalysis& analysis);

struct AnalysisTableOptions {
  size_t max_ops = 15;      // op histogram rows shown (the rest are summarised in one line)
  size_t max_islands = 20;  // island rows shown
};

// The analysis as a human table: sections Model, Quantization, Inputs, Outputs, Op histogram,
// Coverage, Islands, Task type; columns aligned; ends with a newline.
std::string analysis_to_table(const ModelAnalysis& analysis, const AnalysisTableOptions& options = {});

}  // namespace mixprec
