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
#include "mixprec/metrics_report.h"

namespace mixprec::cli {
namespace {

constexpr int kExitAborted = 137;  // what a shell reports for a killed process

size_t abort_after_steps() {
  const char* value = std::getenv("MIXPREC_ABORT_AFTER_STEPS");
  if (value == nullptr || *value == '\0') return 0;
  char* end = nullptr;
  const unsigned long long k = std::strtoull(value, &end, 10);
  if (*end != '\0') throw_bad_input("", std::string("MIXPREC_ABORT_AFTER_STEPS must be a step count, got '") + value + "'");
  return static_cast<size_t>(k);
}

}  // namespace

Command add_explore(CLI::App& app) {
  struct Flags {
    std::string model, output, work_dir, ranking = "layer-error", search = "greedy", preset = "XINT8", config, device = "ve2", lift = "BF16";
    std::vector<std::string> calibration;
    SampleFlags data;
    RuntimeFlags runtime;
    CriterionFlags criterion;
    double budget = 0.3;
    size_t max_iterations = 0;
    bool resume = false;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "explore", "Find the fewest layers to lift from INT8 to BF16 (or FP16) for the model to meet its accuracy criterion");
  cmd->add_option("MODEL", flags->model, "float ONNX model")->required();
  cmd->add_option("--work-dir", flags->work_dir, "statistics, ledger.jsonl, sensitivity.json, final model and config")
      ->required();
  cmd->add_option("-o,--output", flags->output, "also copy the final model here");
  cmd->add_option("--calibration-data", flags->calibration, "calibration files, pictures or folders")->required();
  flags->data.add_to(*cmd, "--data", 0);
  cmd->add_option("--preset", flags->preset, "the INT8 starting point (XINT8, A8W8, U8S8)")->capture_default_str();
  cmd->add_option("--config", flags->config, "or a config file as the starting point (its integer layers are the candidates)");
  cmd->add_option("--device", flags->device, "stx, ve2 or cpu: formats allowed and the expected speed-up")
      ->capture_default_str();
  flags->criterion.add_to(*cmd);
  cmd->add_option("--lift", flags->lift, "precision of a promoted layer: BF16, or FP16 where the device runs it")
      ->capture_default_str();
  cmd->add_option("--bf16-budget", flags->budget, "largest share of candidate layers lifted")
      ->capture_default_str();
  cmd->add_option("--max-iters", flags->max_iterations, "most promotions tried (0: min(50, compute layers))")
      ->capture_default_str();
  cmd->add_option("--ranking", flags->ranking, "dynamic-range, measured (one evaluation per layer) or layer-error (two passes)")->capture_default_str();
  cmd->add_option("--search", flags->search,
                  "greedy (one promotion per step, SPEC's guardrails) or bisection (fewest top-ranked layers, ~log2 steps)")
      ->capture_default_str();
  cmd->add_flag("--resume", flags->resume,
                "continue a stopped run from the work dir's ledger (same settings); ends as an uninterrupted run would");
  flags->runtime.add_to(*cmd);
  cmd->footer(std::string(kExitCodesHelp) + " explore exits 3 when the best assignment found misses the criterion.");
  return {cmd, [flags] {
            ExploreParams params;
            params.model_path = flags->model;
            params.work_dir = flags->work_dir;
            params.base_preset = flags->preset;
            if (!flags->config.empty()) params.base_config = load_config(flags->config);
            params.device = flags->device;
            params.lift = flags->lift;
            params.evaluation = flags->data.resolve();
            params.calibration = calibration_spec(params.evaluation, flags->calibration);
            if (params.evaluation.data.files.empty() && params.evaluation.data.random_samples == 0) {
              throw_bad_input("", "give evaluation data with --data (pictures, .npy/.npz) or --random N");
            }
            params.tolerance = flags->criterion.tolerance;
            params.target = flags->criterion.resolve_target();
            params.bf16_budget = flags->budget;
            params.max_iterations = flags->max_iterations;
            const auto ranking = ranking_from_name(flags->ranking);
            if (!ranking) throw_bad_input("", "unknown --ranking '" + flags->ranking + "' (dynamic-range, measured, layer-error)");
            params.ranking = *ranking;
            const auto search = search_mode_from_name(flags->search);
            if (!search) throw_bad_input("", "unknown --search '" + flags->search + "' (greedy, bisection)");
            params.search = *search;
            params.session = flags->runtime.resolve();
            params.resume = flags->resume;
            params.progress = progress_bar("calibrating");
            // MIXPREC_ABORT_AFTER_STEPS=k ends the process abruptly once step k is on disk, as a
            // kill or power cut would: the crash test of --resume.
            const size_t abort_after = abort_after_steps();
            const ExploreResult r = explore(params, [abort_after](const ExploreStep& s) {
              std::printf("step %3zu  %-40s %-11s objective %9.4f  PSNR %7.2f dB  pass %8.4f%%  best %3zu lifted  %.2f s\n",
                          s.index, s.layer.c_str(), s.decision.c_str(), s.objective, s.psnr_db, 100 * s.pass_rate,
                          s.lifted_layers, s.seconds);
              std::fflush(stdout);
              if (abort_after != 0 && s.index >= abort_after) std::_Exit(kExitAborted);
            });
            if (!flags->output.empty()) {
              write_file_atomically(flags->output, read_file(r.final_model_path, "final model"));
            }
            if (r.resumed_steps) std::cout << "resumed     " << r.resumed_steps << " steps from the ledger\n";
            std::cout << "task        " << to_string(r.task.type) << "\n"
                      << "stopped     " << r.stop_reason << "\n"
                      << "lifted      " << r.lifted_layers.size() << " of " << r.compute_layers << " candidate layers to " << params.lift << "\n";
            for (const auto& layer : r.lifted_layers) std::cout << "            " << layer << "\n";
            std::cout << metrics_table({{"full INT8", r.int8_metrics}, {"full " + params.lift, r.lifted_metrics},
                                        {"final", r.final_metrics}})
                      << "verdict     " << (r.final_verdict.pass ? "PASS" : "FAIL") << ": " << r.final_verdict.reason
                      << "\n"
                      << "expected    " << r.final_time_vs_bf16 << "x the compute time of full BF16 on " << params.device
                      << " (full INT8: " << r.int8_time_vs_bf16 << "x; nominal device speeds)\n"
                      << "spent       " << r.evaluations << " evaluations, " << r.seconds << " s (calibration "
                      << r.calibration_seconds << " s)\n"
                      << "work dir    " << r.final_model_path << ", " << r.final_config_path << ", " << r.ledger_path
                      << "\n";
            return r.final_verdict.pass ? kExitOk : kExitAccuracyFailure;
          }};
}

}  // namespace mixprec::cli
