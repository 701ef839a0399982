// Metrics reports: OutputMetrics and Verdicts as JSON (stable key order) and as a comparison
// table for people. Rendering never fails and never changes the results.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "mixprec/metrics.h"

namespace mixprec {

// One output's metrics as JSON. Keys, in this order (new keys are only appended):
//   name, samples, elements, nonfinite_count, psnr_db, sqnr_db, mse, max_abs_error, cosine,
//   pass_rate, tolerance {atol, rtol}, reference {min, max, peak},
//   topk_rows, top1_agreement, top5_agreement   (the agreements are null when absent)
// Every number is finite: a zero MSE shows as psnr_db = sqnr_db = kMaxDb (see metrics.h).
nlohmann::ordered_json metrics_to_json(const OutputMetrics& metrics);

// {pass, criterion, reason}.
nlohmann::ordered_json verdict_to_json(const Verdict& verdict);

// A model (its label: "FP32", "INT8", a file name) and the metrics of each of its outputs.
using LabeledMetrics = std::pair<std::string, std::vector<OutputMetrics>>;

// One line per output; columns model, output, PSNR, SQNR, pass rate, max abs err, cosine,
// top-1, top-5. The model label is shown on its first output's line only. Values are shown as
// in verdicts, digits cut rather than rounded; "inf" for a zero error, "-" where a metric does
// not apply. Outputs with non-finite values or no elements get a note under the table. Ends
// with a newline. For a regression or detection `task` the top-1/top-5 columns are left out
// (their outputs have no classes).
std::string metrics_table(const std::vector<LabeledMetrics>& rows, TaskType task = TaskType::kUnknown);

}  // namespace mixprec
