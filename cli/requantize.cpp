#include <filesystem>
#include <iostream>
#include <memory>

#include "common.h"
#include "mixprec/error.h"
#include "mixprec/workflow_report.h"

namespace mixprec::cli {

Command add_requantize(CLI::App& app) {
  struct Flags {
    std::string model, config, preset, output, work_dir;
    std::vector<std::string> calibration;
    SampleFlags data;
    RuntimeFlags runtime;
    CriterionFlags criterion;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "requantize", "Strip a quantized model's quantization, quantize it again with a new config, report the delta");
  cmd->add_option("QMODEL", flags->model, "quantized ONNX model (Q/DQ or cast pairs)")->required();
  cmd->add_option("--config", flags->config, "the new Quark-style config JSON");
  cmd->add_option("--preset", flags->preset, "or a preset: XINT8, A8W8, U8S8, A16W8, BF16, FP16");
  cmd->add_option("-o,--output", flags->output, "the requantized model")->required();
  cmd->add_option("--work-dir", flags->work_dir, "stripped.onnx and statistics (default: OUTPUT_STEM.requantize)");
  cmd->add_option("--calibration-data", flags->calibration, "calibration files, pictures or folders")->required();
  flags->data.add_to(*cmd, "--data", 100);
  flags->criterion.add_to(*cmd);
  flags->runtime.add_to(*cmd);
  cmd->footer(std::string(kExitCodesHelp) + " requantize exits 3 when the new model misses the criterion.");
  return {cmd, [flags] {
            RequantizeParams params;
            params.model_path = flags->model;
            params.config_path = flags->config;
            params.preset = flags->preset;
            params.output_path = flags->output;
            params.work_dir = flags->work_dir.empty()
                                  ? (std::filesystem::path(flags->output).parent_path() /
                                     (std::filesystem::path(flags->output).stem().string() + ".requantize"))
                                        .string()
                                  : flags->work_dir;
            params.evaluation = flags->data.resolve();
            params.calibration = calibration_spec(params.evaluation, flags->calibration);
            params.tolerance = flags->criterion.tolerance;
            params.target = flags->criterion.resolve_target();
            params.session = flags->runtime.resolve();
            params.progress = progress_bar("calibrating");
            const RequantizeReport r = requantize(params);
            std::cout << requantize_text(r);
            return r.new_verdict.pass ? kExitOk : kExitAccuracyFailure;
          }};
}

}  // namespace mixprec::cli
