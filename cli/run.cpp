#include <filesystem>
#include <iostream>
#include <memory>

#include "common.h"
#include "mixprec/error.h"
#include "mixprec/jobs_report.h"
#include "mixprec/run.h"

namespace mixprec::cli {
Command add_run(CLI::App& app) {
  struct Flags {
    std::string model;
    SampleFlags data;
    DeploymentFlags deployment;
    std::string save_outputs;
    size_t runs = 10;
    size_t warmup = 1;
    bool json = false;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand("run", "Run the FP32 baseline: outputs, latency (min/median) and throughput");
  cmd->add_option("MODEL", flags->model, "ONNX model")->required();
  flags->data.add_to(*cmd, "--data", 8);
  flags->deployment.add_to(*cmd, "execution provider: CPU, CUDA, VitisAI, ... (CPU always falls back)");
  cmd->add_option("--save-outputs", flags->save_outputs, "write every output to this .npz");
  cmd->add_option("--runs", flags->runs, "timed runs at least (cycling over the samples)")->capture_default_str();
  cmd->add_option("--warmup", flags->warmup, "untimed warm-up runs")->capture_default_str();
  cmd->add_flag("--json", flags->json, "print the report as JSON");
  cmd->footer(kExitCodesHelp);
  return {cmd, [flags] {
            RunParams params;
            params.setup.model_path = flags->model;
            params.setup.evaluation = flags->data.resolve();
            params.deployment = flags->deployment.resolve();  // every graph optimization: a deployment latency
            params.min_timed_runs = flags->runs;
            params.warmup_runs = flags->warmup;
            params.save_outputs_path = flags->save_outputs;
            if (!params.save_outputs_path.empty()) {
              std::error_code ec;
              if (std::filesystem::equivalent(params.save_outputs_path, params.setup.model_path, ec)) {
                throw_bad_input(params.save_outputs_path, "--save-outputs would overwrite the input model");
              }
            }
            const RunReport report = run_model(params);
            std::cout << (flags->json ? run_to_json(report).dump(2) + "\n" : run_text(report));
            return kExitOk;
          }};
}

}  // namespace mixprec::cli
