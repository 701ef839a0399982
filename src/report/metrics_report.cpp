#include "mixprec/metrics_report.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>

#include "metrics/metric_text.h"

namespace mixprec {
namespace {

using Json = nlohmann::ordered_json;

Json optional_json(const std::optional<double>& value) { return value ? Json(*value) : Json(nullptr); }

struct Column {
  const char* header;
  bool numeric;  // right-aligned
};

constexpr Column kColumns[] = {
    {"model", false},    {"output", false}, {"PSNR", true},   {"SQNR", true}, {"pass rate", true},
    {"max abs err", true}, {"cosine", true},  {"top-1", true}, {"top-5", true},
};
constexpr size_t kColumnCount = std::size(kColumns);
using Line = std::array<std::string, kColumnCount>;

std::string decibels(const OutputMetrics& output, AccuracyTarget::Metric metric, double value) {
  return output.mse == 0 ? "inf" : metrics::measured_text(metric, value);
}

std::string agreement(const std::optional<double>& value) {
  return value ? metrics::measured_text(AccuracyTarget::kTop1, *value) : "-";
}

std::string general(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", value);
  return text;
}

Line cells(const std::string& label, const OutputMetrics& output) {
  if (output.elements == 0) return {label, output.name, "-", "-", "-", "-", "-", "-", "-"};
  return {label,
          output.name,
          decibels(output, AccuracyTarget::kPsnr, output.psnr_db),
          decibels(output, AccuracyTarget::kSqnr, output.sqnr_db),
          metrics::measured_text(AccuracyTarget::kPassRate, output.pass_rate),
          general(output.max_abs_error),
          metrics::measured_text(AccuracyTarget::kCosine, output.cosine),
          agreement(output.top1_agreement),
          agreement(output.top5_agreement)};
}

// Why a line's numbers need a second look, or "".
std::string note(const std::string& label, const OutputMetrics& output) {
  const std::string subject = label + " output '" + output.name + "': ";
  if (output.elements == 0) return subject + "no elements were compared";
  if (output.nonfinite_count == 0) return "";
  return subject + std::to_string(output.nonfinite_count) + " of " + std::to_string(output.elements) +
         " values are NaN or Inf; they fail the pass rate and are left out of the other error columns";
}

}  // namespace

nlohmann::ordered_json metrics_to_json(const OutputMetrics& metrics) {
  Json json;
  json["name"] = metrics.name;
  json["samples"] = metrics.samples;
  json["elements"] = metrics.elements;
  json["nonfinite_count"] = metrics.nonfinite_count;
  json["psnr_db"] = metrics.psnr_db;
  json["sqnr_db"] = metrics.sqnr_db;
  json["mse"] = metrics.mse;
  json["max_abs_error"] = metrics.max_abs_error;
  json["cosine"] = metrics.cosine;
  json["pass_rate"] = metrics.pass_rate;
  json["tolerance"] = {{"atol", metrics.tolerance.atol}, {"rtol", metrics.tolerance.rtol}};
  json["reference"] = {{"min", metrics.reference_min}, {"max", metrics.reference_max}, {"peak", metrics.reference_peak}};
  json["topk_rows"] = metrics.topk_rows;
  json["top1_agreement"] = optional_json(metrics.top1_agreement);
  json["top5_agreement"] = optional_json(metrics.top5_agreement);
  json["top1_flip_margins"] = metrics.top1_flip_margins;
  json["median_top1_margin"] = optional_json(metrics.median_top1_margin);
  return json;
}

nlohmann::ordered_json verdict_to_json(const Verdict& verdict) {
  Json json;
  json["pass"] = verdict.pass;
  json["criterion"] = verdict.criterion;
  json["reason"] = verdict.reason;
  return json;
}

std::string metrics_table(const std::vector<LabeledMetrics>& rows, TaskType task) {
  // Regression and detection outputs have no classes: argmax agreement over their last axis
  // would be a number without a meaning, so those columns are left out.
  const bool classes = task != TaskType::kRegression && task != TaskType::kDetection;
  const size_t columns = classes ? kColumnCount : kColumnCount - 2;
  std::vector<Line> lines;
  std::vector<std::string> notes;
  Line header;
  std::transform(std::begin(kColumns), std::end(kColumns), header.begin(), [](const Column& c) { return c.header; });
  lines.push_back(header);
  for (const auto& [label, outputs] : rows) {
    for (size_t i = 0; i < outputs.size(); ++i) {
      lines.push_back(cells(i == 0 ? label : "", outputs[i]));
      if (std::string text = note(label, outputs[i]); !text.empty()) notes.push_back(std::move(text));
    }
  }

  std::array<size_t, kColumnCount> widths{};
  for (const Line& line : lines) {
    for (size_t c = 0; c < columns; ++c) widths[c] = std::max(widths[c], line[c].size());
  }
  std::string text;
  for (const Line& line : lines) {
    std::string row;
    for (size_t c = 0; c < columns; ++c) {
      const std::string padding(widths[c] - line[c].size(), ' ');
      row += "  " + (kColumns[c].numeric ? padding + line[c] : line[c] + padding);
    }
    row.erase(row.find_last_not_of(' ') + 1);
    text += row + "\n";
  }
  for (const std::string& line : notes) text += "  note: " + line + "\n";
  return text;
}

}  // namespace mixprec
