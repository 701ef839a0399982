#include "mixprec/workflow_report.h"

#include <cstdio>
#include <sstream>

#include "mixprec/metrics_report.h"

namespace mixprec {
namespace {

std::string signed_number(double value, const char* unit) {
  char text[64];
  std::snprintf(text, sizeof text, "%+.2f%s", value, unit);
  return text;
}

std::string verdict_word(const Verdict& verdict) { return verdict.pass ? "PASS" : "FAIL"; }

// What dry-run and the ladder share: the task and data, every preset's metrics against FP32,
// and one verdict line per preset with the device's word on it.
std::string preset_results_text(const TaskInference& task, const std::string& data, const std::string& device,
                                const std::vector<PresetResult>& results) {
  std::ostringstream out;
  out << "task     " << to_string(task.type) << " (" << task.reason << ")\n"
      << "data     " << data << "\n"
      << "device   " << device << "\n";
  std::vector<LabeledMetrics> rows;
  for (const auto& result : results) rows.emplace_back(result.label, result.metrics);
  out << metrics_table(rows, task.type);
  size_t width = 0;
  for (const auto& result : results) width = std::max(width, result.label.size());
  for (const auto& result : results) {
    out << result.label << std::string(width - result.label.size() + 2, ' ') << verdict_word(result.verdict) << "  "
        << result.verdict.reason;
    if (!result.on_device) out << "  [not on " << device << ": " << result.device_note << "]";
    out << "\n";
  }
  return out.str();
}

}  // namespace

std::string runtime_trials_text(const std::vector<RuntimeTrial>& trials) {
  std::ostringstream out;
  for (const auto& runtime : trials) {
    out << "runtime  " << runtime.runtime << ": " << (runtime.ok ? "ok" : "FAILED") << ", " << runtime.detail << " ("
        << runtime.model << ")\n";
  }
  return out.str();
}

std::string dry_run_text(const DryRunReport& report) {
  std::ostringstream out;
  out << preset_results_text(report.task, report.data_description, report.device, report.rows);
  if (!report.rows.empty()) out << "criterion  " << report.rows.front().verdict.criterion << "\n";
  if (!report.explore_estimates.empty()) {
    char head[96];
    std::snprintf(head, sizeof head, "explore    from the INT8 row (%zu candidate layers, %.2f s per evaluation):",
                  report.candidates, report.seconds_per_evaluation);
    out << head;
    for (const auto& e : report.explore_estimates) {
      char item[96];
      std::snprintf(item, sizeof item, " %s <= %zu evaluations (~%.0f s)", e.search.c_str(), e.evaluations, e.seconds);
      out << item;
    }
    out << "\n";
  }
  out << runtime_trials_text(report.runtimes);
  out << "recommendation  " << report.recommendation.action << ": " << report.recommendation.reason << "\n";
  return out.str();
}

nlohmann::ordered_json preset_result_to_json(const PresetResult& result) {
  nlohmann::ordered_json j = {{"label", result.label},         {"preset", result.preset},
                              {"on_device", result.on_device}, {"device_note", result.device_note},
                              {"verdict", verdict_to_json(result.verdict)}, {"seconds", result.seconds},
                              {"model", result.model_path}};
  j["outputs"] = nlohmann::ordered_json::array();
  for (const auto& m : result.metrics) j["outputs"].push_back(metrics_to_json(m));
  return j;
}

nlohmann::ordered_json runtime_trials_to_json(const std::vector<RuntimeTrial>& trials) {
  nlohmann::ordered_json j = nlohmann::ordered_json::array();
  for (const auto& trial : trials) {
    j.push_back({{"runtime", trial.runtime}, {"model", trial.model}, {"ok", trial.ok}, {"detail", trial.detail}});
  }
  return j;
}

nlohmann::ordered_json dry_run_to_json(const DryRunReport& report) {
  nlohmann::ordered_json j;
  j["task"] = {{"type", to_string(report.task.type)}, {"reason", report.task.reason}};
  j["device"] = report.device;
  j["samples"] = report.samples;
  j["data"] = report.data_description;
  j["calibration_seconds"] = report.calibration_seconds;
  j["reference_seconds"] = report.reference_seconds;
  j["rows"] = nlohmann::ordered_json::array();
  for (const auto& row : report.rows) j["rows"].push_back(preset_result_to_json(row));
  j["recommendation"] = {{"action", report.recommendation.action}, {"reason", report.recommendation.reason}};
  j["candidates"] = report.candidates;
  j["seconds_per_evaluation"] = report.seconds_per_evaluation;
  j["explore_estimates"] = nlohmann::ordered_json::array();
  for (const auto& e : report.explore_estimates) {
    j["explore_estimates"].push_back({{"search", e.search}, {"evaluations", e.evaluations}, {"seconds", e.seconds}});
  }
  j["runtimes"] = runtime_trials_to_json(report.runtimes);
  j["warnings"] = report.warnings;
  return j;
}

std::string ladder_text(const LadderReport& report) {
  std::ostringstream out;
  out << preset_results_text(report.task, report.data_description, report.device, report.rungs)
      << runtime_trials_text(report.runtimes);
  out << "chosen   " << report.chosen << "\n"
      << "next     " << report.follow_up << "\n";
  return out.str();
}

std::string requantize_text(const RequantizeReport& report) {
  std::ostringstream out;
  out << "task      " << to_string(report.task.type) << " (" << report.task.reason << ")\n"
      << "stripped  " << report.stripped_path << " (" << report.strip.qdq_pairs << " Q/DQ pairs, "
      << report.strip.cast_pairs << " cast pairs, " << report.strip.folded_initializers
      << " initializers back to float)\n"
      << "data      " << report.data_description << "\n"
      << "against the stripped float model:\n"
      << metrics_table({{"previous", report.previous_metrics}, {"new", report.new_metrics}}, report.task.type)
      << "previous  " << verdict_word(report.previous_verdict) << "  " << report.previous_verdict.reason << "\n"
      << "new       " << verdict_word(report.new_verdict) << "  " << report.new_verdict.reason << "\n"
      << "delta     worst PSNR " << signed_number(report.psnr_delta_db, " dB") << ", worst pass rate "
      << signed_number(100 * report.pass_rate_delta, " points") << "\n"
      << "wrote     " << report.output_path << ", " << report.config_path << "\n"
      << runtime_trials_text(report.runtimes);
  return out.str();
}

std::string plan_text(const QuantPlan& plan) {
  std::ostringstream out;
  out << "model    " << plan.model_path << " (" << to_string(plan.architecture) << ", " << to_string(plan.task) << ")\n"
      << "intent   target " << to_string(plan.target) << ", goal " << to_string(plan.goal) << ", device " << plan.device
      << "\n\n";
  size_t decision_width = 8, value_width = 5;
  for (const auto& d : plan.decisions) {
    decision_width = std::max(decision_width, d.decision.size());
    value_width = std::max(value_width, std::min<size_t>(d.value.size(), 48));
  }
  const auto pad = [](const std::string& text, size_t width) {
    return text + std::string(width > text.size() ? width - text.size() : 0, ' ');
  };
  out << pad("decision", decision_width) << "  " << pad("value", value_width) << "  reason\n";
  for (const auto& d : plan.decisions) {
    out << pad(d.decision, decision_width) << "  " << pad(d.value, value_width) << "  " << d.reason << "\n";
  }
  out << "\n";
  if (plan.risks.empty()) {
    out << "risks    none\n";
  } else {
    for (const char* severity : {"high", "medium", "low"}) {
      for (const auto& r : plan.risks) {
        if (r.severity == severity) out << "risk     " << pad(r.severity, 6) << "  " << r.risk << "\n";
      }
    }
  }
  if (plan.requires_confirmation) {
    out << "DRAFT    requires confirmation: review the plan, then rerun with --yes (quantize --plan refuses a draft)\n";
  }
  return out.str();
}

}  // namespace mixprec
