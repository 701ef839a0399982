#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>

#include "common.h"
#include "mixprec/error.h"
#include "mixprec/config.h"
#include "mixprec/explore.h"
#include "mixprec/model_io.h"
#include "mixprec/jobs_report.h"

namespace mixprec::cli {
namespace {

constexpr int kExitAborted = 137;  // what a shell reports for a killed process

// The step count in environment variable `name` (0 when unset).
size_t steps_from_env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return 0;
  char* end = nullptr;
  const unsigned long long k = std::strtoull(value, &end, 10);
  if (*end != '\0') throw_bad_input("", std::string(name) + " must be a step count, got '" + value + "'");
  return static_cast<size_t>(k);
}

}  // namespace

Command add_explore(CLI::App& app) {
  struct Flags {
    std::string model, output, work_dir, preset = "XINT8", config;
    SetupFlags setup;
    DeploymentFlags deployment;
    PluginFlags plugins;
    SearchFlags search;
    ConfigFormatFlag config_format;
    bool resume = false;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "explore", "Find the fewest layers to lift from INT8 to BF16 (or FP16) for the model to meet its accuracy criterion");
  cmd->add_option("MODEL", flags->model, "float ONNX model")->required();
  cmd->add_option("--work-dir", flags->work_dir, "statistics, ledger.jsonl, sensitivity.json, final model and config")
      ->required();
  cmd->add_option("-o,--output", flags->output, "also copy the final model here");
  flags->setup.add_to(*cmd, 0,
                      "calibration files, pictures or folders (default: the --data files, else seeded random data, "
                      "with a warning)");
  cmd->add_option("--preset", flags->preset, "the INT8 starting point (XINT8, A8W8, U8S8, ...; S16S16_MIXED_S8S8 is A8W8 with --lift "
                  "S16S16, Quark's search)")
      ->capture_default_str();
  cmd->add_option("--config", flags->config,
                  "or a config file as the starting point, in mixprec's shape or Quark's (its integer layers are the "
                  "candidates)");
  flags->search.add_to(*cmd);
  flags->config_format.add_to(*cmd, "final_config.json and pareto/'s configs");
  cmd->add_flag("--resume", flags->resume,
                "continue a stopped run from the work dir's ledger (same settings); ends as an uninterrupted run would");
  flags->deployment.add_to(*cmd,
                           "execution provider the final model is checked to load on (accuracy is measured on CPU)",
                           "stx, ve2 or cpu: formats allowed and the expected speed-up");
  flags->plugins.add_to(*cmd);
  cmd->footer(std::string(kExitCodesHelp) + " explore exits 3 when the best assignment found misses the criterion.");
  return {cmd, [flags] {
            ExploreParams params;
            params.setup = flags->setup.resolve(flags->model, flags->work_dir, "calibrating");
            if (params.setup.evaluation.empty()) {
              throw_bad_input("", "give evaluation data with --data (pictures, .npy/.npz) or --random N");
            }
            params.deployment = flags->deployment.resolve();
            flags->plugins.load(params.deployment.profile().name);
            params.search = flags->search.resolve();
            params.search.base_preset = flags->preset;
            if (!flags->config.empty()) params.search.base_config = load_config(flags->config);
            params.search.resume = flags->resume;
            params.config_shape = flags->config_format.resolve();
            const WorkDirReport report("explore", params.setup.work_dir, params.setup.model_path);
            // MIXPREC_ABORT_AFTER_STEPS=k ends the process abruptly once step k is on disk, as a
            // kill or power cut would: the crash test of --resume. MIXPREC_SIGINT_AFTER_STEPS=k
            // sends the process SIGINT there, as a Ctrl-C during step k would.
            const size_t abort_after = steps_from_env("MIXPREC_ABORT_AFTER_STEPS");
            const size_t interrupt_after = steps_from_env("MIXPREC_SIGINT_AFTER_STEPS");
            const ExploreResult r = explore(params, [abort_after, interrupt_after](const ExploreStep& s) {
              std::fputs(explore_step_line(s).c_str(), stdout);
              std::fflush(stdout);
              if (abort_after != 0 && s.index >= abort_after) std::_Exit(kExitAborted);
              if (interrupt_after != 0 && s.index == interrupt_after) std::raise(SIGINT);
            });
            if (!flags->output.empty()) {
              write_file_atomically(flags->output, read_file(r.final_model_path, "final model"));
            }
            // The lift that ran (a search preset names its own).
            std::string lift = r.rungs.empty() ? params.search.lift : "";
            for (const LiftRung& rung : r.rungs) lift += (lift.empty() ? "" : ",") + rung.lift;
            std::cout << explore_text(r, lift, params.deployment.device);
            return r.final_verdict.pass ? kExitOk : kExitAccuracyFailure;
          }};
}

}  // namespace mixprec::cli
