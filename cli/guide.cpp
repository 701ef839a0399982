#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>

#include "common.h"
#include "mixprec/runtime.h"
#include "mixprec/error.h"
#include "mixprec/guide.h"
#include "mixprec/guide_report.h"
#include "mixprec/model_io.h"
#include "mixprec/workflow_report.h"

namespace mixprec::cli {

namespace {

// guide --plugin's banner (the library refuses to run the plugin without consent).
bool ask_plugin_consent(const GuideParams& params, bool yes) {
  return plugin_consent(
      resolve_plugin(params.plugin, plugin_search_path(params.plugin_dirs), params.deployment.profile().name), yes);
}

}  // namespace

Command add_guide(CLI::App& app) {
  struct Flags {
    std::string model, config, mode = "full", stage = "compile", work_dir, env_script, edge_quant = "auto";
    std::string strategy = "default", plugin;
    PluginFlags plugins;
    bool explore = false, no_recover = false, edge_quant_auto = false;
    SetupFlags setup;
    DeploymentFlags deployment;
    SearchFlags search;
    ConfigFormatFlag config_format;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "guide", "The whole workflow in one command: analyze, baseline, quantize, validate, explore, compile/exec");
  cmd->add_option("--model", flags->model, "float ONNX model (quantized, with --mode requantize)")->required();
  cmd->add_option("--config", flags->config, "Quark-style config JSON (default: proposed from the analysis)");
  cmd->add_option("--mode", flags->mode, "full, dry-run or requantize")->capture_default_str();
  cmd->add_option("--edge-quant", flags->edge_quant,
                  "auto, none, input, output or both: which edges the runtime (de)quantizes (an explicit value sets "
                  "the fe_args edge flag in vitisai_config.json and compile checks the model against it; auto sets none)")
      ->capture_default_str();
  cmd->add_flag("--edge-quant-auto", flags->edge_quant_auto,
                "compile builds the final model with its edge Q/DQ as kernels and in the runtime, prints both, and "
                "sets the edge flag when the kernel count falls and nothing falls back to float");
  cmd->add_option("--stage", flags->stage, "compile, or exec to also time FP32 vs the final model")
      ->capture_default_str();
  cmd->add_option("--strategy", flags->strategy,
                  "default (quantize, validate, explore) or ladder (w8a8, then w8a16, else float)")
      ->capture_default_str();
  cmd->add_option("--plugin", flags->plugin,
                  "NAME ARGS...: the plugin quantizes (every argument after NAME is the plugin's, passed through); "
                  "validate and compile follow. `mixprec plugins` lists them");
  flags->plugins.add_to(*cmd);
  cmd->add_flag("--explore", flags->explore, "search the fewest layers to lift to BF16 when the config misses");
  cmd->add_flag("--no-recover", flags->no_recover,
                "a proposed config that misses does not try the plan's recovery ladder (bias correction, AdaRound) "
                "before validate and explore");
  flags->search.add_to(*cmd);
  flags->config_format.add_to(*cmd,
                              "the configs the work dir holds (quantized, explore's final and pareto, ladder's, requantized)");
  flags->setup.add_to(*cmd, 0,
                      "calibration files, pictures or folders (default: the --data files, else seeded random data, "
                      "with a warning)");
  cmd->add_option("--work-dir", flags->work_dir, "every file the run writes (default: MODEL_STEM.mixprec)");
  cmd->add_option("-t", flags->env_script,
                  "environment script: NAME=VALUE lines applied before any work (MIXPREC_ORT_LIB=PATH selects the ONNX "
                  "Runtime library)");
  flags->deployment.add_to(*cmd, "execution provider of compile/exec: CPU, CUDA, VitisAI, ... (accuracy runs on CPU)",
                           "stx, ve2 or cpu");
  cmd->footer(std::string(kExitCodesHelp) + " guide exits 3 when the final model misses the criterion.");
  return {cmd, [flags] {
            GuideParams params;
            // The environment first (it may choose the ONNX Runtime library), then the plugins
            // (their methods are known before --calib-method is read).
            if (!flags->env_script.empty()) {
              const auto variables = read_env_script(flags->env_script);
              for (const auto& [name, value] : variables) ::setenv(name.c_str(), value.c_str(), 1);
              std::cout << "environment: " << variables.size() << " variables from " << flags->env_script << "\n";
            }
            params.deployment = flags->deployment.resolve();
            flags->plugins.load(params.deployment.profile().name);
            params.config_path = flags->config;
            params.mode = parse_choice(guide_mode_names(), "--mode", flags->mode);
            params.stage = parse_choice(guide_stage_names(), "--stage", flags->stage);
            params.edge_quant = parse_choice(edge_quant_names(), "--edge-quant", flags->edge_quant);
            params.edge_quant_auto = flags->edge_quant_auto;
            params.plugin = flags->plugin;
            params.plugin_args = plugin_arguments();
            params.plugin_dirs = flags->plugins.dirs;
            params.explore = flags->explore;
            params.recover = !flags->no_recover;
            params.config_shape = flags->config_format.resolve();
            if (flags->strategy != "default" && flags->strategy != "ladder") {
              throw_bad_input("", "unknown --strategy '" + flags->strategy + "' (default, ladder)");
            }
            params.ladder = flags->strategy == "ladder";
            params.search = flags->search.resolve();
            params.setup = flags->setup.resolve(flags->model, work_dir_or_default(flags->work_dir, flags->model, ".mixprec"),
                                                "calibrating");
            if (params.setup.evaluation.empty() && params.setup.calibration.empty()) {
              throw_bad_input("", "give evaluation data with --data (pictures, .npy/.npz) or --random N, or "
                                  "--calibration-data");
            }
            params.plugin_consent = !params.plugin.empty() && ask_plugin_consent(params, flags->plugins.yes);
            std::cout << "mixprec guide: " << params.setup.model_path << ", mode " << to_string(params.mode)
                      << ", device " << params.deployment.device << ", stage " << to_string(params.stage)
                      << (params.explore ? ", explore" : "") << ", work dir " << params.setup.work_dir << "\n"
                      << "runtime: ONNX Runtime " << runtime_version() << " (" << runtime_library() << ")\n";
            const WorkDirReport report("guide", params.setup.work_dir, params.setup.model_path);
            // guide.json holds the phases so far (a crash leaves them); its outcome is null until the end.
            const auto work_file = [&](const char* name) { return params.setup.work_dir + "/" + name; };
            GuideReport so_far{.mode = params.mode, .device = params.deployment.device};
            const GuideReport r = guide(params, [&](const GuidePhase& phase) {
              std::printf("\n== %s: %s (%.2f s)\n", phase.name.c_str(), to_string(phase.status), phase.seconds);
              for (const auto& line : guide_phase_lines(phase)) std::printf("   %s\n", line.c_str());
              std::fflush(stdout);
              so_far.phases.push_back(phase);
              nlohmann::ordered_json j = guide_report_to_json(so_far);
              j["outcome"] = nullptr;
              write_file_atomically(work_file("guide.json"), j.dump(2) + "\n");
              if (const auto* dry = std::get_if<DryRunReport>(&phase.result)) {
                write_file_atomically(work_file("dry_run.json"), dry_run_to_json(*dry).dump(2) + "\n");
              }
            });
            write_file_atomically(work_file("guide.json"), guide_report_to_json(r).dump(2) + "\n");
            std::cout << "\n== report\n" << guide_summary_text(r);
            if (params.mode == GuideMode::kDryRun) return kExitOk;
            return r.pass ? kExitOk : kExitAccuracyFailure;
          }};
}

}  // namespace mixprec::cli
