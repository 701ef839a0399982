#include <iostream>
#include <memory>

#include "common.h"
#include "mixprec/devices.h"
#include "mixprec/error.h"
#include "mixprec/workflow_report.h"

namespace mixprec::cli {

Command add_ladder(CLI::App& app) {
  struct Flags {
    std::string model, work_dir;
    SetupFlags setup;
    DeploymentFlags deployment;
    PluginFlags plugins;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "ladder", "Shallow ladder: w8a8, then w8a16 if it misses, else keep float and say what to try next");
  cmd->add_option("MODEL", flags->model, "float ONNX model")->required();
  cmd->add_option("--work-dir", flags->work_dir, "statistics and the rung models (default: MODEL_STEM.ladder)");
  flags->setup.add_to(*cmd, 100,
                      "calibration files, pictures or folders (default: the --data files, else seeded random data, "
                      "with a warning)");
  flags->deployment.add_to(*cmd, "execution provider tried on every rung model (accuracy runs on CPU)",
                           "stx, ve2 or cpu (w8a8 is XINT8 where power-of-two scales are needed)");
  flags->plugins.add_to(*cmd);
  cmd->footer(std::string(kExitCodesHelp) + " ladder exits 3 when no rung meets the criterion (float stays).");
  return {cmd, [flags] {
            LadderParams params;
            params.deployment = flags->deployment.resolve();
            flags->plugins.load(params.deployment.profile().name);
            params.setup = flags->setup.resolve(flags->model, work_dir_or_default(flags->work_dir, flags->model, ".ladder"),
                                                "calibrating");
            const LadderReport r = ladder(params);
            std::cout << ladder_text(r);
            return r.chosen == "float" ? kExitAccuracyFailure : kExitOk;
          }};
}

}  // namespace mixprec::cli
