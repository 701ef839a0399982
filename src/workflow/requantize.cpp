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
#include "evaluation/work_dir_lock.h"
#include "evaluation/workbench.h"
#include "jobs/model_and_config.h"

namespace mixprec {
namespace {
namespace fs = std::filesystem;
}  // namespace

RequantizeReport requantize(const RequantizeParams& params) {
  WarningCollector warnings;
  RequantizeReport report;
  if (params.config.given() == 0) {
    throw_bad_input("", "requantize needs the new config (--config FILE or --preset NAME)");
  }
  const QuantConfig config = resolve_config(params.config);  // a bad config fails before any work
  if (params.output_path.empty()) throw_bad_input("", "requantize needs an output path");
  report.config_path = fs::path(params.output_path).replace_extension(".config.json").string();
  // So does a config --config-format's shape cannot hold.
  const std::string config_json = config_file_text(config, params.config_shape, report.config_path);
  const std::string& model_path = params.setup.model_path;
  const onnx::ModelProto quantized = load_model(model_path);
  const ModelAnalysis analysis = analyze_model(quantized, model_path);
  if (analysis.quantization.state == QuantState::kFloat) {
    throw_bad_input(model_path, "not quantized, nothing to strip: use `mixprec quantize`");
  }
  const WorkDirLock lock(params.setup.work_dir);  // creates it; one run at a time
  report.stripped_path = (fs::path(params.setup.work_dir) / "stripped.onnx").string();
  save_model(strip_quantization(quantized, model_path, &report.strip), report.stripped_path);

  EvaluationSetup stripped = params.setup;  // the float model inside is what both are measured against
  stripped.model_path = report.stripped_path;
  Workbench bench(stripped, params.deployment,
                  {.prepare = prepare_options(config),
                   .calibration_samples = static_cast<size_t>(config.extra.num_calib_samples)});
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

  // Both files or neither, as quantize writes them.
  save_model_and_config(bench.for_writing(*fresh.model, params.output_path), config, params.output_path, report.config_path,
                        config_json);
  report.output_path = params.output_path;
  if (!params.deployment.on_cpu()) report.runtimes.push_back(try_on_provider(params.deployment, report.output_path));
  report.warnings = warnings.warnings();
  return report;
}

}  // namespace mixprec
