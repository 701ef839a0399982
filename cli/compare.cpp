#include <iostream>
#include <memory>

#include "common.h"
#include "mixprec/jobs.h"
#include "mixprec/jobs_report.h"

namespace mixprec::cli {

Command add_compare(CLI::App& app) {
  struct Flags {
    std::string reference, model;
    SampleFlags data;
    CriterionFlags criterion;
    DeploymentFlags deployment;
    bool json = false;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "compare", "Compare a model's outputs with a reference model's on the same inputs; verdict by task type");
  cmd->add_option("REFERENCE", flags->reference, "reference (FP32) model")->required();
  cmd->add_option("MODEL", flags->model, "model to judge")->required();
  flags->data.add_to(*cmd, "--data", 100);
  flags->criterion.add_to(*cmd);
  cmd->add_flag("--json", flags->json, "print JSON");
  flags->deployment.add_to(*cmd, "execution provider both models run on: CPU, CUDA, VitisAI, ... (CPU always falls back)");
  cmd->footer(std::string(kExitCodesHelp) + " compare exits 3 when the model misses the accuracy criterion.");
  return {cmd, [flags] {
            CompareParams params;
            params.setup.model_path = flags->reference;
            params.setup.evaluation = flags->data.resolve();
            params.setup.criterion = {.tolerance = flags->criterion.tolerance, .target = flags->criterion.resolve_target()};
            params.setup.progress = progress_bar("comparing");
            params.candidate_path = flags->model;
            params.deployment = flags->deployment.resolve();
            const CompareReport r = compare_job(params);
            std::cout << (flags->json ? compare_to_json(r, params.setup.model_path, params.candidate_path).dump(2) + "\n"
                                      : compare_text(r, params.candidate_path));
            return r.verdict.pass ? kExitOk : kExitAccuracyFailure;
          }};
}

}  // namespace mixprec::cli
