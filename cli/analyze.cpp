#include <iostream>
#include <memory>

#include "common.h"
#include "mixprec/analysis.h"
#include "mixprec/model_io.h"
#include "mixprec/report.h"

namespace mixprec::cli {

Command add_analyze(CLI::App& app) {
  struct Flags {
    std::string model;
    bool json = false;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "analyze", "Quantization state, op histogram, inputs/outputs, coverage, islands and task type of a model");
  cmd->add_option("MODEL", flags->model, "ONNX model")->required();
  cmd->add_flag("--json", flags->json, "print stable JSON instead of the table");
  cmd->footer(kExitCodesHelp);
  return {cmd, [flags] {
            // Weights are not needed to analyze: huge external-data models stay on disk.
            const onnx::ModelProto model = load_model(flags->model, {.load_external_data = false});
            const ModelAnalysis analysis = analyze_model(model, flags->model);
            if (flags->json) {
              std::cout << analysis_to_json(analysis).dump(2) << '\n';
            } else {
              std::cout << analysis_to_table(analysis);
            }
            return kExitOk;
          }};
}

}  // namespace mixprec::cli
