#include <iostream>
#include <memory>

#include "common.h"
#include "mixprec/jobs.h"
#include "mixprec/jobs_report.h"
#include "mixprec/error.h"
#include "mixprec/plan.h"

namespace mixprec::cli {

Command add_quantize(CLI::App& app) {
  struct Flags {
    std::string model, output, config, preset, calib_method, stats, plan, fp_precision = "bf16";
    std::vector<std::string> fp_nodes;
    bool make_static = false, ffn_only = false;
    SampleFlags data;
    DeploymentFlags deployment;
    PluginFlags plugins;
    ConfigFormatFlag config_format;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "quantize", "Quantize a model with a config or preset; writes the model and its effective config beside it");
  cmd->add_option("MODEL", flags->model, "float ONNX model (with --plan: default the plan's model)");
  cmd->add_option("-o,--output", flags->output, "quantized model to write")->required();
  auto* config = cmd->add_option("--config", flags->config, "JSON config, in mixprec's shape or Quark's QConfig shape");
  auto* preset = cmd->add_option("--preset", flags->preset, "a preset: " + preset_list())->excludes(config);
  cmd->add_option("--plan", flags->plan, "execute a quant_plan.json written by `mixprec plan`")->excludes(config)->excludes(preset);
  flags->data.add_to(*cmd, "--calibration-data", 0);
  cmd->add_option("--fp-nodes", flags->fp_nodes,
                  "nodes kept at --fp-precision, exact names, comma-separated or repeated (the Vitis AI quantize "
                  "script's option; regexes go in the config's target_node_names)")
      ->delimiter(',');
  cmd->add_option("--fp-precision", flags->fp_precision, "bf16 or fp16: the precision of --fp-nodes")->capture_default_str();
  cmd->add_flag("--ffn-only", flags->ffn_only,
                "quantize only the feed-forward parts (the MLP blocks' and attention projections' MatMul/Gemm that "
                "`analyze` lists) with the config's global layer; Softmax, LayerNorm and the rest stay float");
  cmd->add_flag("--make-static", flags->make_static,
                "write fully static shapes (the VAIML compiler needs them): the inputs take the calibration samples' "
                "shape (--input-shape / --image-size pin it) and every tensor its shape from a run");
  cmd->add_option("--calib-method", flags->calib_method,
                  "MinMax, Percentile, Entropy, MinMSE, PowerOfTwo_NonOverflow, PowerOfTwo_MinMSE, or a --use-plugin "
                  "plugin's (overrides the config)");
  cmd->add_option("--stats", flags->stats,
                  "calibration statistics: reused when the file exists, written after calibrating otherwise");
  flags->deployment.add_to(*cmd, "execution provider the written model must also load on (calibration runs on CPU)");
  flags->plugins.add_to(*cmd);
  flags->config_format.add_to(*cmd, "the effective config written beside the model (OUTPUT.config.json)");
  cmd->footer(kExitCodesHelp);
  return {cmd, [flags] {
            QuantizeParams params;
            params.setup.model_path = flags->model;
            params.setup.calibration = flags->data.resolve();
            params.setup.progress = progress_bar("calibrating");
            params.output_path = flags->output;
            params.config = {.path = flags->config, .preset = flags->preset};
            params.config_shape = flags->config_format.resolve();
            params.stats_path = flags->stats;
            params.deployment = flags->deployment.resolve();
            flags->plugins.load(params.deployment.profile().name);
            if (!flags->calib_method.empty()) params.calib_method = parse_calib_method(flags->calib_method);
            params.fp_nodes = flags->fp_nodes;
            params.make_static = flags->make_static;
            params.ffn_only = flags->ffn_only;
            if (flags->fp_precision != "bf16" && flags->fp_precision != "fp16") {
              throw_bad_input("", "unknown --fp-precision '" + flags->fp_precision + "' (bf16, fp16)");
            }
            params.fp_precision = flags->fp_precision == "fp16" ? FormatId::kFloat16 : FormatId::kBFloat16;
            if (flags->plan.empty() && flags->model.empty()) throw_bad_input("", "quantize needs MODEL (or --plan)");
            const QuantizeReport r = flags->plan.empty() ? quantize_job(params) : quantize_with_plan(flags->plan, params);
            std::cout << quantize_text(r);
            return kExitOk;
          }};
}

Command add_dequantize(CLI::App& app) {
  struct Flags {
    std::string model, output;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "dequantize", "Strip Q/DQ and cast pairs (ours or another tool's), folding quantized weights back to float");
  cmd->add_option("MODEL", flags->model, "quantized ONNX model")->required();
  cmd->add_option("-o,--output", flags->output, "float model to write")->required();
  cmd->footer(kExitCodesHelp);
  return {cmd, [flags] {
            const DequantizeReport r = dequantize_job(flags->model, flags->output);
            std::cout << dequantize_text(r);
            return kExitOk;
          }};
}

Command add_patch(CLI::App& app) {
  struct Flags {
    std::string model, output;
    SampleFlags data;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "patch", "The VitisAI provider's patch edits (VITIS.md): com.microsoft Q/DQ retagged, BFP sub_block_shift_bits "
               "written, shape/data_type on custom quant ops, bf16/fp16 zero points in their codes' type; outputs checked "
               "bit-identical");
  cmd->add_option("MODEL", flags->model, "ONNX model (quantized by mixprec, Quark or another tool)")->required();
  cmd->add_option("-o,--output", flags->output, "patched model to write")->required();
  flags->data.add_to(*cmd, "--data", 1);
  cmd->footer(kExitCodesHelp);
  return {cmd, [flags] {
            PatchParams params;
            params.setup.model_path = flags->model;
            params.setup.evaluation = flags->data.resolve();
            params.output_path = flags->output;
            const PatchReport r = patch_job(params);
            std::cout << patch_text(r);
            return kExitOk;
          }};
}

}  // namespace mixprec::cli
