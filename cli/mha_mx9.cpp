// mixprec mha-mx9: the ViT MHA-MX9 pipeline (the one other place VITIS.md allows graph edits).
#include <iostream>
#include <memory>

#include "common.h"
#include "mixprec/jobs.h"
#include "mixprec/jobs_report.h"

namespace mixprec::cli {

Command add_mha_mx9(CLI::App& app) {
  struct Flags {
    std::string model, output;
    SampleFlags data;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "mha-mx9", "ViT encoders for the NPU: split fused QKV projections, strip Q/DQ on the attention path, wrap the "
                 "attention MatMuls with MX9, residual adds in BF16; static shapes checked after each step, the result "
                 "compared with the input model");
  cmd->add_option("MODEL", flags->model, "ViT encoder (float or QDQ), static shapes or --input-shape")->required();
  cmd->add_option("-o,--output", flags->output, "model to write")->required();
  flags->data.add_to(*cmd, "--data", 4);
  cmd->footer(kExitCodesHelp);
  return {cmd, [flags] {
            MhaMx9Params params;
            params.setup.model_path = flags->model;
            params.setup.evaluation = flags->data.resolve();
            params.output_path = flags->output;
            const MhaMx9Report r = mha_mx9_job(params);
            std::cout << mha_mx9_text(r);
            return kExitOk;
          }};
}

}  // namespace mixprec::cli
