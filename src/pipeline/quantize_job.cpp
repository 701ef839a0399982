#include <chrono>
#include <filesystem>

#include "mixprec/error.h"
#include "mixprec/log.h"
#include "mixprec/model_io.h"
#include "mixprec/pipeline.h"

namespace mixprec {
namespace {
namespace fs = std::filesystem;

void refuse_overwriting_input(const std::string& input, const std::string& output) {
  std::error_code ec;
  if (output.empty()) throw_bad_input("", "no output path given");
  if (fs::exists(output, ec) && fs::equivalent(input, output, ec)) {
    throw_bad_input(output, "the output would overwrite the input model");
  }
}

QuantConfig resolve_config(const QuantizeParams& params) {
  if (static_cast<int>(!params.config_path.empty()) + static_cast<int>(!params.preset.empty()) +
          static_cast<int>(params.config.has_value()) > 1) {
    throw_bad_input(params.config_path, "give one of a config, a preset or a plan");
  }
  QuantConfig config;
  if (params.config) {
    config = *params.config;
  } else if (!params.config_path.empty()) {
    config = load_config(params.config_path);
  } else if (auto preset = preset_config(params.preset)) {
    config = *preset;
  } else {
    std::string known;
    for (const auto& name : preset_names()) known += (known.empty() ? "" : ", ") + name;
    throw_bad_input("", params.preset.empty() ? "give --config or --preset (" + known + ")"
                                              : "unknown preset '" + params.preset + "' (known: " + known + ")");
  }
  if (params.calib_method) {
    // The user's method wins everywhere, including specs that name their own.
    config.extra.calib_method = *params.calib_method;
    for (auto* layer : {&config.global}) {
      for (auto* spec : {&layer->input_tensors, &layer->output_tensors}) {
        if (*spec) (*spec)->calib_method.reset();
      }
    }
    for (auto& override_ : config.specific) {
      for (auto* spec : {&override_.layer_config.input_tensors, &override_.layer_config.output_tensors}) {
        if (*spec) (*spec)->calib_method.reset();
      }
    }
  }
  return config;
}

bool integer_activations(const NodeAssignment& a) {
  for (const auto* spec : {&a.config.input_tensors, &a.config.output_tensors}) {
    if (*spec && format_traits((*spec)->format).is_integer) return true;
  }
  return false;
}

void count_precisions(const std::vector<NodeAssignment>& assignment, QuantizeReport& report) {
  for (const auto& a : assignment) {
    ++report.nodes;
    const auto& c = a.config;
    auto uses = [&](FormatId f) {
      for (const auto* spec : {&c.input_tensors, &c.weight, &c.bias, &c.output_tensors}) {
        if (*spec && (*spec)->format == f) return true;
      }
      return false;
    };
    if (a.excluded || (!c.input_tensors && !c.weight && !c.bias && !c.output_tensors)) {
      ++report.nodes_float;
    } else if (uses(FormatId::kBFloat16)) {
      ++report.nodes_bf16;
    } else if (uses(FormatId::kFloat16)) {
      ++report.nodes_fp16;
    } else if (integer_activations(a) || (c.weight && format_traits(c.weight->format).is_integer)) {
      ++report.nodes_integer;
    } else {
      ++report.nodes_float;
    }
  }
}

std::string config_path_for(const std::string& output) {
  return fs::path(output).replace_extension(".config.json").string();
}

}  // namespace

QuantizeReport quantize_job(const QuantizeParams& params) {
  WarningCollector warnings;
  QuantizeReport report;
  refuse_overwriting_input(params.model_path, params.output_path);
  const QuantConfig config = resolve_config(params);
  const onnx::ModelProto model = load_model(params.model_path);
  const onnx::ModelProto prepared =
      prepare_model(model, prepare_options(config), params.model_path, &report.prepare);
  const std::vector<NodeAssignment> assignment = assign_layers(config, prepared, params.model_path);
  count_precisions(assignment, report);

  CalibrationStats stats;
  const bool needs_stats = std::any_of(assignment.begin(), assignment.end(), [](const NodeAssignment& a) {
    return !a.excluded && integer_activations(a);
  });
  std::error_code ec;
  if (needs_stats && !params.stats_path.empty() && fs::exists(params.stats_path, ec)) {
    stats = load_stats(params.stats_path);
    if (stats.model_fingerprint != model_fingerprint(prepared)) {
      throw_bad_input(params.stats_path, "statistics were collected on another model (fingerprint " +
                                             stats.model_fingerprint + ", this model " +
                                             model_fingerprint(prepared) + ")");
    }
    report.stats_reused = true;
    report.stats_path = params.stats_path;
    report.calibration_samples = stats.samples;
    report.data_description = stats.data_description;
  } else if (needs_stats) {
    Session probe = Session::from_model(prepared, params.model_path, params.session);
    DataSpec data = params.calibration;
    if (data.data.files.empty() && data.data.random_samples == 0) {
      if (!config.extra.use_random_data) {
        throw_bad_input(params.model_path, "calibration needs data: give --calibration-data, or set "
                                           "extra_options.UseRandomData");
      }
      data.data.random_samples = static_cast<size_t>(config.extra.num_calib_samples);
    }
    const auto source = open_samples(data, probe.inputs(), params.model_path);
    if (source->size() < 4) {
      log_warning(source->describe() + ": fewer than 4 calibration samples; ranges will be noisy");
    }
    const auto start = std::chrono::steady_clock::now();
    stats = calibrate_model(prepared, params.model_path, *source,
                            {.session = params.session,
                             .max_samples = static_cast<size_t>(config.extra.num_calib_samples),
                             .progress = params.progress});
    report.calibration_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    report.calibrated = true;
    report.calibration_samples = stats.samples;
    report.data_description = stats.data_description;
    if (!params.stats_path.empty()) {
      save_stats(stats, params.stats_path);
      report.stats_path = params.stats_path;
    }
  }

  const QuantizeOptions options = quantize_options(config);
  // Ranks seen by calibration first (exact); without a calibration pass, one run on the first
  // sample of the given data (or one seeded random sample when every input shape is known).
  std::optional<NamedTensors> rank_sample;
  if (stats.ranks.empty()) {
    const Session probe = Session::from_model(prepared, params.model_path, params.session);
    DataSpec data = params.calibration;
    if (data.data.files.empty()) data.data.random_samples = 1;
    try {
      rank_sample = open_samples(data, probe.inputs(), params.model_path)->sample(0);
    } catch (const Error&) {
      if (!params.calibration.data.files.empty()) throw;  // the user's data is bad: say so
      // Dynamic input dims and no data: static inference alone must do.
    }
  }
  std::map<std::string, int64_t> ranks =
      infer_tensor_ranks(prepared, params.model_path, rank_sample ? &*rank_sample : nullptr);
  for (const auto& [name, rank] : stats.ranks) ranks[name] = rank;
  const RankLookup rank_of = [&ranks](const std::string& name) -> std::optional<int64_t> {
    auto it = ranks.find(name);
    return it == ranks.end() ? std::nullopt : std::optional<int64_t>(it->second);
  };
  onnx::ModelProto quantized;
  try {
    quantized = quantize_model(prepared, assignment, stats, options, params.model_path, rank_of, &report.rewrite);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kUnsupported || rank_sample || e.message().find("rank") == std::string::npos) throw;
    throw Error(e.kind(), e.file(),
                e.message() + "; give --calibration-data or --input-shape so mixprec can run the model once and "
                              "learn the ranks");
  }
  // ONNX Runtime is the judge of validity: nothing is written unless it loads the result.
  Session::from_model(quantized, params.output_path, params.session);
  save_model(quantized, params.output_path);
  report.output_path = params.output_path;
  report.config_path = config_path_for(params.output_path);
  save_config(config, report.config_path);
  report.warnings = warnings.warnings();
  return report;
}

DequantizeReport dequantize_job(const std::string& model_path, const std::string& output_path) {
  WarningCollector warnings;
  DequantizeReport report;
  refuse_overwriting_input(model_path, output_path);
  const onnx::ModelProto model = load_model(model_path);
  const onnx::ModelProto stripped = strip_quantization(model, model_path, &report.strip);
  Session::from_model(stripped, output_path);
  save_model(stripped, output_path);
  report.output_path = output_path;
  report.warnings = warnings.warnings();
  return report;
}

}  // namespace mixprec
