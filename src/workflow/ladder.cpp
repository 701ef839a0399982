// ladder: SPEC's shallow ladder, w8a8 -> w8a16 -> float, stopping at the first rung that meets
// the task's criterion (classification: top-1 agreement; regression: PSNR and pass rate; or
// the user's target). Rungs are data: one row each.
#include <filesystem>

#include "mixprec/devices.h"
#include "mixprec/error.h"
#include "mixprec/log.h"
#include "mixprec/model_io.h"
#include "mixprec/workflow.h"
#include "search/workbench.h"
#include "workflow/evaluate_preset.h"

namespace mixprec {
namespace {
namespace fs = std::filesystem;

struct RungRow {
  const char* label;
  const char* power_of_two_preset;  // on devices that need power-of-two scales
  const char* preset;               // elsewhere
};
constexpr RungRow kRungs[] = {
    {"w8a8", "XINT8", "U8S8"},  // U8S8: the int8 preset ONNX Runtime's CPU kernels fuse
    {"w8a16", "A16W8", "A16W8"},
};

}  // namespace

LadderReport ladder(const LadderParams& params) {
  WarningCollector warnings;
  const DeviceProfile& device = device_profile(params.device);
  LadderReport report;
  report.device = device.name;
  fs::create_directories(params.work_dir);
  // The rungs share one preparation and calibration: the first rung's.
  const QuantConfig first = *preset_config(device.requires_power_of_two ? kRungs[0].power_of_two_preset : kRungs[0].preset);
  Workbench bench({.model_path = params.model_path,
                   .stats_path = (fs::path(params.work_dir) / "stats.json").string(),
                   .calibration = params.calibration,
                   .evaluation = params.evaluation,
                   .calibration_samples = static_cast<size_t>(first.extra.num_calib_samples),
                   .prepare = prepare_options(first),
                   .tolerance = params.tolerance,
                   .target = params.target,
                   .progress = params.progress});
  report.task = bench.task();
  report.samples = bench.samples();
  report.data_description = bench.data_description();
  report.runtimes.push_back({"CPUExecutionProvider", params.model_path, true, "FP32 reference and every accuracy run"});

  for (const auto& row : kRungs) {
    const std::string preset = device.requires_power_of_two ? row.power_of_two_preset : row.preset;
    LadderRung rung;
    const Evaluation e =
        evaluate_preset(bench, device, preset, std::string(row.label) + " (" + preset + ")",
                        (fs::path(params.work_dir) / ("ladder_" + preset + ".onnx")).string(), rung);
    if (params.session.provider != "CPU" && params.session.provider != "CPUExecutionProvider") {
      RuntimeTrial trial{params.session.provider, rung.model_path, false, ""};
      try {
        Session::from_model(*e.model, params.model_path, params.session);
        trial.ok = true;
        trial.detail = "session built";
      } catch (const Error& error) {
        trial.detail = error.message();
      }
      report.runtimes.push_back(std::move(trial));
    }
    const bool usable = rung.verdict.pass && rung.on_device;
    report.rungs.push_back(std::move(rung));
    if (usable) {
      report.chosen = preset;
      report.chosen_model_path = report.rungs.back().model_path;
      report.follow_up = report.rungs.back().label + " meets the criterion: deploy " + report.chosen_model_path;
      break;
    }
  }
  if (report.chosen.empty()) {
    report.chosen = "float";
    std::string numbers;
    for (const auto& rung : report.rungs) {
      numbers += (numbers.empty() ? "" : "; ") + rung.label + " " + (rung.verdict.pass ? "passes" : "misses") + " (" +
                 rung.verdict.reason + ")" + (rung.on_device ? "" : " and " + rung.device_note);
    }
    report.follow_up = numbers + ". The float model stays. Next: mixed precision with the few sensitive layers "
                                 "in BF16 (`mixprec guide --explore`), or a looser criterion.";
  }
  report.warnings = warnings.warnings();
  return report;
}

}  // namespace mixprec
