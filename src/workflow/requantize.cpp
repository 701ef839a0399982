// requantize: the float model inside a quantized one (Q/DQ and cast pairs stripped), quantized
// again with a new config from one calibration, and both quantizations measured against that
// float model on the same samples, so the delta says what the new config changed.
//
// The stripped weights are the old quantization's dequantized values (the original float
// weights are gone), so the old model's own weight rounding does not show in its metrics; its
// activation rounding does.
#include <filesystem>

#include "mixprec/error.h"
#include "mixprec/log.h"
#include "mixprec/model_io.h"
#include "mixprec/workflow.h"
#include "search/workbench.h"

namespace mixprec {
namespace {
namespace fs = std::filesystem;

QuantConfig resolve_config(const RequantizeParams& params) {
  if (!params.config_path.empty() && !params.preset.empty()) {
    throw_bad_input(params.config_path, "give a config file or a preset, not both");
  }
  if (!params.preset.empty()) {
    auto config = preset_config(params.preset);
    if (!config) throw_bad_input("", "unknown preset '" + params.preset + "'");
    return *config;
  }
  if (params.config_path.empty()) throw_bad_input("", "requantize needs the new config (--config FILE or --preset NAME)");
  return load_config(params.config_path);
}

}  // namespace

RequantizeReport requantize(const RequantizeParams& params) {
  WarningCollector warnings;
  RequantizeReport report;
  const QuantConfig config = resolve_config(params);  // a bad config fails before any work
  if (params.output_path.empty()) throw_bad_input("", "requantize needs an output path");
  const onnx::ModelProto quantized = load_model(params.model_path);
  const ModelAnalysis analysis = analyze_model(quantized, params.model_path);
  if (analysis.quantization.state == QuantState::kFloat) {
    throw_bad_input(params.model_path, "not quantized, nothing to strip: use `mixprec quantize`");
  }
  fs::create_directories(params.work_dir);
  report.stripped_path = (fs::path(params.work_dir) / "stripped.onnx").string();
  save_model(strip_quantization(quantized, params.model_path, &report.strip), report.stripped_path);

  Workbench bench({.model_path = report.stripped_path,
                   .stats_path = (fs::path(params.work_dir) / "stats.json").string(),
                   .calibration = params.calibration,
                   .evaluation = params.evaluation,
                   .calibration_samples = static_cast<size_t>(config.extra.num_calib_samples),
                   .prepare = prepare_options(config),
                   .tolerance = params.tolerance,
                   .target = params.target,
                   .session = params.session,
                   .progress = params.progress});
  report.task = bench.task();
  report.samples = bench.samples();
  report.data_description = bench.data_description();

  const Evaluation previous = bench.evaluate_model(quantized);
  const Evaluation fresh = bench.evaluate(config);
  report.previous_metrics = previous.metrics;
  report.previous_verdict = previous.verdict;
  report.new_metrics = fresh.metrics;
  report.new_verdict = fresh.verdict;
  report.psnr_delta_db = fresh.psnr_db - previous.psnr_db;
  report.pass_rate_delta = fresh.pass_rate - previous.pass_rate;

  save_model(*fresh.model, params.output_path);
  report.output_path = params.output_path;
  report.config_path = fs::path(params.output_path).replace_extension(".config.json").string();
  save_config(config, report.config_path);
  report.warnings = warnings.warnings();
  return report;
}

}  // namespace mixprec
