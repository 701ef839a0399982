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
    SetupFlags setup;
    DeploymentFlags deployment;
    PluginFlags plugins;
    ConfigFormatFlag config_format;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "requantize", "Strip a quantized model's quantization, quantize it again with a new config, report the delta");
  cmd->add_option("QMODEL", flags->model, "quantized ONNX model (Q/DQ or cast pairs)")->required();
  cmd->add_option("--config", flags->config, "the new Quark-style config JSON");
  cmd->add_option("--preset", flags->preset, "or a preset: " + preset_list());
  cmd->add_option("-o,--output", flags->output, "the requantized model")->required();
  cmd->add_option("--work-dir", flags->work_dir, "stripped.onnx and statistics (default: OUTPUT_STEM.requantize)");
  flags->setup.add_to(*cmd, 100,
                      "calibration files, pictures or folders (default: the --data files, else seeded random data, "
                      "with a warning)");
  flags->config_format.add_to(*cmd, "the config written beside the model (OUTPUT.config.json)");
  flags->deployment.add_to(*cmd, "execution provider the requantized model is checked to load on (accuracy runs on CPU)");
  flags->plugins.add_to(*cmd);
  cmd->footer(std::string(kExitCodesHelp) + " requantize exits 3 when the new model misses the criterion.");
  return {cmd, [flags] {
            namespace fs = std::filesystem;
            RequantizeParams params;
            const fs::path output(flags->output);
            params.setup = flags->setup.resolve(
                flags->model,
                flags->work_dir.empty() ? (output.parent_path() / (output.stem().string() + ".requantize")).string()
                                        : flags->work_dir,
                "calibrating");
            params.deployment = flags->deployment.resolve();
            flags->plugins.load(params.deployment.profile().name);
            params.config = {.path = flags->config, .preset = flags->preset};
            params.output_path = flags->output;
            params.config_shape = flags->config_format.resolve();
            const RequantizeReport r = requantize(params);
            std::cout << requantize_text(r);
            return r.new_verdict.pass ? kExitOk : kExitAccuracyFailure;
          }};
}

}  // namespace mixprec::cli
