#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>

#include "common.h"
#include "mixprec/runtime.h"
#include "mixprec/error.h"
#include "mixprec/guide.h"
#include "mixprec/log.h"

namespace mixprec::cli {

Command add_guide(CLI::App& app) {
  struct Flags {
    std::string model, config, device = "ve2", mode = "full", stage = "compile", work_dir, env_script,
                edge_quant = "auto";
    std::string ranking = "layer-error", search = "greedy", lift = "BF16", strategy = "default";
    bool explore = false;
    double budget = 0.3;
    size_t max_iterations = 0;
    std::vector<std::string> calibration;
    SampleFlags data;
    RuntimeFlags runtime;
    CriterionFlags criterion;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "guide", "The whole workflow in one command: analyze, baseline, quantize, validate, explore, compile/exec");
  cmd->add_option("--model", flags->model, "float ONNX model (quantized, with --mode requantize)")->required();
  cmd->add_option("--config", flags->config, "Quark-style config JSON (default: proposed from the analysis)");
  cmd->add_option("--device", flags->device, "stx, ve2 or cpu")->capture_default_str();
  cmd->add_option("--mode", flags->mode, "full, dry-run or requantize")->capture_default_str();
  cmd->add_option("--edge-quant", flags->edge_quant,
                  "auto, none, input, output or both: which edges the device quantizes (recorded in vitisai_config.json; "
                  "compile checks the model against an explicit value)")
      ->capture_default_str();
  cmd->add_option("--stage", flags->stage, "compile, or exec to also time FP32 vs the final model")
      ->capture_default_str();
  cmd->add_option("--strategy", flags->strategy,
                  "default (quantize, validate, explore) or ladder (w8a8, then w8a16, else float)")
      ->capture_default_str();
  cmd->add_flag("--explore", flags->explore, "search the fewest layers to lift to BF16 when the config misses");
  cmd->add_option("--ranking", flags->ranking, "exploration ranking: dynamic-range, measured or layer-error")->capture_default_str();
  cmd->add_option("--search", flags->search, "exploration search: greedy or bisection")->capture_default_str();
  cmd->add_option("--bf16-budget", flags->budget, "exploration: largest share of candidate layers lifted")
      ->capture_default_str();
  cmd->add_option("--max-iters", flags->max_iterations, "exploration: most steps (0: min(50, candidate layers))")
      ->capture_default_str();
  cmd->add_option("--lift", flags->lift, "exploration lifts layers to BF16, or FP16 where the device runs it")
      ->capture_default_str();
  flags->criterion.add_to(*cmd);
  cmd->add_option("--calibration-data", flags->calibration, "calibration files, pictures or folders")->required();
  flags->data.add_to(*cmd, "--data", 0);
  cmd->add_option("--work-dir", flags->work_dir, "every file the run writes (default: MODEL_STEM.mixprec)");
  cmd->add_option("-t", flags->env_script,
                  "environment script: NAME=VALUE lines applied before any work (MIXPREC_ORT_LIB=PATH selects the ONNX "
                  "Runtime library)");
  flags->runtime.add_to(*cmd);
  cmd->footer(std::string(kExitCodesHelp) + " guide exits 3 when the final model misses the criterion.");
  return {cmd, [flags] {
            GuideParams params;
            params.model_path = flags->model;
            params.config_path = flags->config;
            params.device = flags->device;
            const auto mode = guide_mode_from_name(flags->mode);
            if (!mode) throw_bad_input("", "unknown --mode '" + flags->mode + "' (full, dry-run, requantize)");
            params.mode = *mode;
            const auto stage = guide_stage_from_name(flags->stage);
            if (!stage) throw_bad_input("", "unknown --stage '" + flags->stage + "' (compile, exec)");
            params.stage = *stage;
            const auto edge = edge_quant_from_name(flags->edge_quant);
            if (!edge) throw_bad_input("", "unknown --edge-quant '" + flags->edge_quant + "' (auto, none, input, output, both)");
            params.edge_quant = *edge;
            params.explore = flags->explore;
            if (flags->strategy != "default" && flags->strategy != "ladder") {
              throw_bad_input("", "unknown --strategy '" + flags->strategy + "' (default, ladder)");
            }
            params.ladder = flags->strategy == "ladder";
            const auto ranking = ranking_from_name(flags->ranking);
            if (!ranking) throw_bad_input("", "unknown --ranking '" + flags->ranking + "' (dynamic-range, measured, layer-error)");
            params.ranking = *ranking;
            params.lift = flags->lift;
            params.bf16_budget = flags->budget;
            params.max_iterations = flags->max_iterations;
            const auto search = search_mode_from_name(flags->search);
            if (!search) throw_bad_input("", "unknown --search '" + flags->search + "' (greedy, bisection)");
            params.search = *search;
            params.target = flags->criterion.resolve_target();
            params.tolerance = flags->criterion.tolerance;
            params.evaluation = flags->data.resolve();
            params.calibration = calibration_spec(params.evaluation, flags->calibration);
            if (params.evaluation.data.files.empty() && params.evaluation.data.random_samples == 0) {
              log_warning("no --data: evaluating on the calibration data; give held-out samples with --data");
              params.evaluation.data.files = flags->calibration;
            }
            params.work_dir = work_dir_or_default(flags->work_dir, flags->model, ".mixprec");
            if (!flags->env_script.empty()) {
              const auto variables = read_env_script(flags->env_script);
              for (const auto& [name, value] : variables) ::setenv(name.c_str(), value.c_str(), 1);
              std::cout << "environment: " << variables.size() << " variables from " << flags->env_script << "\n";
            }
            params.session = flags->runtime.resolve();
            params.progress = progress_bar("calibrating");
            std::cout << "mixprec guide: " << params.model_path << ", mode " << to_string(params.mode) << ", device "
                      << params.device << ", stage " << to_string(params.stage)
                      << (params.explore ? ", explore" : "") << ", work dir " << params.work_dir << "\n"
                      << "runtime: ONNX Runtime " << runtime_version() << " (" << runtime_library() << ")\n";
            const GuideReport r = guide(params, [](const GuidePhase& phase) {
              std::printf("\n== %s: %s (%.2f s)\n", phase.name.c_str(), phase.status.c_str(), phase.seconds);
              for (const auto& line : phase.lines) std::printf("   %s\n", line.c_str());
              std::fflush(stdout);
            });
            std::cout << "\n== report\n";
            for (const auto& phase : r.phases) {
              std::printf("   %-11s %-8s %8.2f s\n", phase.name.c_str(), phase.status.c_str(), phase.seconds);
            }
            if (!r.final_model_path.empty()) {
              std::cout << "   model   " << r.final_model_path << "\n   config  " << r.final_config_path << "\n";
            }
            std::cout << "   " << r.outcome << "\n";
            if (params.mode == GuideMode::kDryRun) return kExitOk;
            return r.pass ? kExitOk : kExitAccuracyFailure;
          }};
}

}  // namespace mixprec::cli
