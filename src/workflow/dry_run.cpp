// dry-run: full BF16, full FP16, full INT8 (the deployment's int8 preset) and A16W8, each measured against FP32 on the same
// samples from one calibration, and SPEC's recommendation rule:
//   INT8 passes -> use it; INT8 fails and BF16 passes -> mixed precision with exploration;
//   both fail -> the model needs looser tolerances or other changes.
// Every row is evaluated on CPU whatever the device (every format is CPU-evaluable); the device
// decides which rows may be recommended.
#include <algorithm>
#include <cmath>
#include <filesystem>

#include "mixprec/devices.h"
#include "mixprec/error.h"
#include "mixprec/explore.h"
#include "mixprec/log.h"
#include "mixprec/model_io.h"
#include "mixprec/recommend.h"
#include "mixprec/stop.h"
#include "mixprec/workflow.h"
#include "evaluation/work_dir_lock.h"
#include "evaluation/workbench.h"
#include "workflow/evaluate_preset.h"

namespace mixprec {
namespace {
namespace fs = std::filesystem;

struct DryRunChoice {
  const char* label;
  const char* preset;  // nullptr: the deployment's int8 preset (recommend.h), labelled "full INT8 (<preset>)"
};
constexpr DryRunChoice kChoices[] = {
    {"full BF16", "BF16"},
    {"full FP16", "FP16"},
    {"full INT8", nullptr},
    {"A16W8", "A16W8"},
};

const DryRunRow* find_row(const DryRunReport& report, const std::string& preset) {
  for (const auto& row : report.rows) {
    if (row.preset == preset) return &row;
  }
  return nullptr;
}

std::string outcome(const DryRunRow& row) {
  return row.label + (row.verdict.pass ? " passes" : " misses") + " (" + row.verdict.reason + ")";
}

Recommendation recommend(const DryRunReport& report, const std::string& int8_preset) {
  const DryRunRow& int8 = *find_row(report, int8_preset);
  const DryRunRow& bf16 = *find_row(report, "BF16");
  if (int8.verdict.pass && int8.on_device) {
    return {"int8", outcome(int8) + ": use full INT8, no layer needs more precision"};
  }
  if (bf16.verdict.pass) {
    return {"explore", outcome(int8) + " and " + outcome(bf16) +
                           ": quantize to mixed precision, INT8 with the few sensitive layers in BF16; run "
                           "`mixprec guide --explore` (or `mixprec explore`) to find them"};
  }
  std::string reason = outcome(int8) + " and " + outcome(bf16) + ": INT8 with BF16 layers will not reach the criterion";
  std::string alternatives;
  for (const char* preset : {"FP16", "A16W8"}) {
    const DryRunRow* row = find_row(report, preset);
    if (row && row->verdict.pass) {
      alternatives += "; " + row->label + " passes" +
                      (row->on_device ? " and " + report.device + " runs it: consider it" : " but " + row->device_note);
    }
  }
  return {"rethink", reason + alternatives + "; otherwise loosen the tolerances or the target, or change the model"};
}

// The evaluations each search spends at most, from G candidates: two baselines (full INT8, full
// lift), the start's calibration methods beyond the first, then layer-error's two passes and
// greedy's min(50, G) steps or bisection's log2(0.3 G) + 1 with, by default, a re-ranking (two
// passes) after each step that misses and kDefaultTrim trim steps within what min(50, G) leaves
// (one kept for the island fill); the cost search's G + 2 log2 G + 3.
std::vector<ExploreEstimate> explore_estimates(size_t g, const DryRunRow& int8, const DeviceProfile& device) {
  const auto ceil_log2 = [](size_t n) {
    return static_cast<size_t>(std::ceil(std::log2(static_cast<double>(std::max<size_t>(2, n)))));
  };
  size_t methods = 0;
  for (const auto& method : all_calib_methods()) methods += method.power_of_two == device.requires_power_of_two ? 1 : 0;
  const size_t fixed = 2 + (methods > 0 ? methods - 1 : 0);
  const size_t budget = std::max<size_t>(1, static_cast<size_t>(0.3 * static_cast<double>(g)));
  const size_t steps = std::min(kMaxIterationsCap, g), bisection = ceil_log2(budget) + 1;
  const size_t trim = std::min(kDefaultTrim, steps > bisection + 1 ? steps - bisection - 1 : 0);
  const std::vector<std::pair<const char*, size_t>> counts = {
      {"greedy", fixed + 2 + steps},
      {"bisection", fixed + 2 + bisection + 2 * ceil_log2(budget) + trim},
      {"cost", fixed + g + 2 * ceil_log2(g) + 3},
  };
  std::vector<ExploreEstimate> estimates;
  for (const auto& [search, evaluations] : counts) {
    estimates.push_back({search, evaluations, static_cast<double>(evaluations) * int8.seconds});
  }
  return estimates;
}

}  // namespace

DryRunReport dry_run(const DryRunParams& params) {
  WarningCollector warnings;
  const DeviceProfile& device = params.deployment.profile();
  DryRunReport report;
  report.device = device.name;
  const std::string& work_dir = params.setup.work_dir;
  const WorkDirLock lock(work_dir);  // creates it; one run at a time

  const std::string int8_preset = int8_preset_for(params.deployment);
  const QuantConfig int8 = *preset_config(int8_preset);
  Workbench bench(params.setup, params.deployment,
                  {.prepare = prepare_options(int8),  // the rows share the INT8 row's preparation
                   .calibration_samples = static_cast<size_t>(int8.extra.num_calib_samples)});
  report.task = bench.task();
  report.samples = bench.samples();
  report.data_description = bench.data_description();
  report.calibration_seconds = bench.calibration_seconds();
  report.reference_seconds = bench.reference_seconds();

  for (const auto& choice : kChoices) {
    const std::string preset = choice.preset ? choice.preset : int8_preset;
    const std::string label = choice.preset ? choice.label : std::string(choice.label) + " (" + preset + ")";
    DryRunRow row;
    evaluate_preset(bench, device, preset, label, (fs::path(work_dir) / ("dry_run_" + preset + ".onnx")).string(), row);
    if (!params.deployment.on_cpu()) report.runtimes.push_back(try_on_provider(params.deployment, row.model_path));
    report.rows.push_back(std::move(row));
    throw_if_stopped(work_dir, "the rows measured so far are the dry_run_*.onnx files here");
  }
  report.recommendation = recommend(report, int8_preset);
  report.candidates = bench.quantized_layers(int8).size();
  report.seconds_per_evaluation = find_row(report, int8_preset)->seconds;
  report.explore_estimates = explore_estimates(report.candidates, *find_row(report, int8_preset), device);
  report.warnings = warnings.warnings();
  return report;
}

}  // namespace mixprec
