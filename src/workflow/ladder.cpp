// ladder: SPEC's shallow ladder, w8a8 -> w8a16 -> float, stopping at the first rung that meets
// the task's criterion (classification: top-1 agreement; regression: PSNR and pass rate; or
// the user's target). Rungs are data: one row each.
#include <filesystem>

#include "mixprec/devices.h"
#include "mixprec/error.h"
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

struct RungRow {
  const char* label;
  const char* preset;  // nullptr: the deployment's int8 preset (recommend.h: XINT8 on NPUs, U8S8 on CPU, A8W8 on CUDA)
};
constexpr RungRow kRungs[] = {{"w8a8", nullptr}, {"w8a16", "A16W8"}};

std::string rung_preset(const RungRow& row, const DeploymentTarget& deployment) {
  return row.preset ? row.preset : int8_preset_for(deployment);
}

}  // namespace

LadderReport ladder(const LadderParams& params) {
  WarningCollector warnings;
  const DeviceProfile& device = params.deployment.profile();
  LadderReport report;
  report.device = device.name;
  const std::string& work_dir = params.setup.work_dir;
  const WorkDirLock lock(work_dir);  // creates it; one run at a time
  // The rungs share one preparation and calibration: the first rung's.
  const QuantConfig first = *preset_config(rung_preset(kRungs[0], params.deployment));
  Workbench bench(params.setup, params.deployment,
                  {.prepare = prepare_options(first),
                   .calibration_samples = static_cast<size_t>(first.extra.num_calib_samples)});
  report.task = bench.task();
  report.samples = bench.samples();
  report.data_description = bench.data_description();
  report.runtimes.push_back(
      {"CPUExecutionProvider", params.setup.model_path, true, "FP32 reference and every accuracy run"});

  for (const auto& row : kRungs) {
    const std::string preset = rung_preset(row, params.deployment);
    LadderRung rung;
    evaluate_preset(bench, device, preset, std::string(row.label) + " (" + preset + ")",
                    (fs::path(work_dir) / ("ladder_" + preset + ".onnx")).string(), rung);
    if (!params.deployment.on_cpu()) report.runtimes.push_back(try_on_provider(params.deployment, rung.model_path));
    const bool usable = rung.verdict.pass && rung.on_device;
    report.rungs.push_back(std::move(rung));
    if (usable) {
      report.chosen = preset;
      report.chosen_model_path = report.rungs.back().model_path;
      report.follow_up = report.rungs.back().label + " meets the criterion: deploy " + report.chosen_model_path;
      break;
    }
    throw_if_stopped(work_dir, "the rungs tried so far are the ladder_*.onnx files here");
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
