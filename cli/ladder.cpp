#include <iostream>
#include <memory>

#include "common.h"
#include "mixprec/devices.h"
#include "mixprec/error.h"
#include "mixprec/workflow_report.h"

namespace mixprec::cli {

Command add_ladder(CLI::App& app) {
  struct Flags {
    std::string model, work_dir, device = "ve2";
    std::vector<std::string> calibration;
    SampleFlags data;
    RuntimeFlags runtime;
    CriterionFlags criterion;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "ladder", "Shallow ladder: w8a8, then w8a16 if it misses, else keep float and say what to try next");
  cmd->add_option("MODEL", flags->model, "float ONNX model")->required();
  cmd->add_option("--device", flags->device, "stx, ve2 or cpu (w8a8 is XINT8 where power-of-two scales are needed)")
      ->capture_default_str();
  cmd->add_option("--work-dir", flags->work_dir, "statistics and the rung models (default: MODEL_STEM.ladder)");
  cmd->add_option("--calibration-data", flags->calibration, "calibration files, pictures or folders")->required();
  flags->data.add_to(*cmd, "--data", 100);
  flags->criterion.add_to(*cmd);
  flags->runtime.add_to(*cmd);
  cmd->footer(std::string(kExitCodesHelp) + " ladder exits 3 when no rung meets the criterion (float stays).");
  return {cmd, [flags] {
            LadderParams params;
            params.model_path = flags->model;
            params.work_dir = work_dir_or_default(flags->work_dir, flags->model, ".ladder");
            params.evaluation = flags->data.resolve();
            params.calibration = calibration_spec(params.evaluation, flags->calibration);
            params.device = flags->device;
            device_profile(params.device);  // an unknown device fails before any work
            params.tolerance = flags->criterion.tolerance;
            params.target = flags->criterion.resolve_target();
            params.session = flags->runtime.resolve();
            params.progress = progress_bar("calibrating");
            const LadderReport r = ladder(params);
            std::cout << ladder_text(r);
            return r.chosen == "float" ? kExitAccuracyFailure : kExitOk;
          }};
}

}  // namespace mixprec::cli
