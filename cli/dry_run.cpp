#include <iostream>
#include <memory>

#include "common.h"
#include "mixprec/devices.h"
#include "mixprec/error.h"
#include "mixprec/model_io.h"
#include "mixprec/workflow_report.h"

namespace mixprec::cli {

Command add_dry_run(CLI::App& app) {
  struct Flags {
    std::string model, work_dir;
    SetupFlags setup;
    DeploymentFlags deployment;
    PluginFlags plugins;
    bool json = false;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "dry-run", "Measure full BF16, FP16, INT8 and A16W8 against FP32 and recommend what to do (model untouched)");
  cmd->add_option("MODEL", flags->model, "float ONNX model")->required();
  cmd->add_option("--work-dir", flags->work_dir, "statistics and the evaluated models (default: MODEL_STEM.dry_run)");
  flags->setup.add_to(*cmd, 100,
                      "calibration files, pictures or folders (default: the --data files, else seeded random data, "
                      "with a warning)");
  cmd->add_flag("--json", flags->json, "print JSON");
  flags->deployment.add_to(*cmd, "execution provider each row's model is checked to load on (accuracy runs on CPU)",
                           "target device: stx, ve2 or cpu");
  flags->plugins.add_to(*cmd);
  cmd->footer(kExitCodesHelp);
  return {cmd, [flags] {
            DryRunParams params;
            params.deployment = flags->deployment.resolve();
            flags->plugins.load(params.deployment.profile().name);
            params.setup = flags->setup.resolve(flags->model, work_dir_or_default(flags->work_dir, flags->model, ".dry_run"),
                                                "calibrating");
            const WorkDirReport report("dry-run", params.setup.work_dir, params.setup.model_path);
            const DryRunReport r = dry_run(params);
            const nlohmann::ordered_json j = dry_run_to_json(r);
            write_file_atomically(params.setup.work_dir + "/dry_run.json", j.dump(2) + "\n");
            std::cout << (flags->json ? j.dump(2) + "\n" : dry_run_text(r));
            return kExitOk;
          }};
}

}  // namespace mixprec::cli
