#include <iostream>
#include <memory>

#include "common.h"
#include "mixprec/devices.h"
#include "mixprec/error.h"
#include "mixprec/workflow_report.h"

namespace mixprec::cli {

Command add_dry_run(CLI::App& app) {
  struct Flags {
    std::string model, work_dir, device = "ve2";
    std::vector<std::string> calibration;
    SampleFlags data;
    RuntimeFlags runtime;
    CriterionFlags criterion;
    bool json = false;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "dry-run", "Measure full BF16, FP16, INT8 and A16W8 against FP32 and recommend what to do (model untouched)");
  cmd->add_option("MODEL", flags->model, "float ONNX model")->required();
  cmd->add_option("--device", flags->device, "target device: stx, ve2 or cpu")->capture_default_str();
  cmd->add_option("--work-dir", flags->work_dir, "statistics and the evaluated models (default: MODEL_STEM.dry_run)");
  cmd->add_option("--calibration-data", flags->calibration,
                  "calibration files, pictures or folders (default: the evaluation data, with a warning)");
  flags->data.add_to(*cmd, "--data", 100);
  flags->criterion.add_to(*cmd);
  cmd->add_flag("--json", flags->json, "print JSON");
  flags->runtime.add_to(*cmd);
  cmd->footer(kExitCodesHelp);
  return {cmd, [flags] {
            DryRunParams params;
            params.model_path = flags->model;
            params.work_dir = work_dir_or_default(flags->work_dir, flags->model, ".dry_run");
            params.evaluation = flags->data.resolve();
            params.calibration = calibration_spec(params.evaluation, flags->calibration);
            params.device = flags->device;
            device_profile(params.device);  // an unknown device fails before any work
            params.tolerance = flags->criterion.tolerance;
            params.target = flags->criterion.resolve_target();
            params.session = flags->runtime.resolve();
            params.progress = progress_bar("calibrating");
            const DryRunReport r = dry_run(params);
            std::cout << (flags->json ? dry_run_to_json(r).dump(2) + "\n" : dry_run_text(r));
            return kExitOk;
          }};
}

}  // namespace mixprec::cli
