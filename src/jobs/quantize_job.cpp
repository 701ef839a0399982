#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>

#include "common/text.h"
#include "evaluation/recovery.h"
#include "evaluation/static_shapes.h"
#include "evaluation/stats_cache.h"
#include "jobs/model_and_config.h"
#include "mixprec/algorithms.h"
#include "mixprec/analysis.h"
#include "mixprec/error.h"
#include "mixprec/jobs.h"
#include "mixprec/log.h"
#include "mixprec/model_io.h"
#include "mixprec/runtime.h"

namespace mixprec {
namespace {
namespace fs = std::filesystem;

bool qdq_activations(const NodeAssignment& a) {
  for (const auto* spec : {&a.config.input_tensors, &a.config.output_tensors}) {
    if (*spec && format_traits((*spec)->format).is_qdq) return true;
  }
  return false;
}

// The report's counter of the precision `a` runs in.
size_t& precision_count(const NodeAssignment& a, QuantizeReport& report) {
  const auto& c = a.config;
  auto uses = [&](FormatId f) {
    for (const auto* spec : {&c.input_tensors, &c.weight, &c.bias, &c.output_tensors}) {
      if (*spec && (*spec)->format == f) return true;
    }
    return false;
  };
  if (a.excluded || (!c.input_tensors && !c.weight && !c.bias && !c.output_tensors)) return report.nodes_float;
  if (uses(FormatId::kBFloat16)) return report.nodes_bf16;
  if (uses(FormatId::kFloat16)) return report.nodes_fp16;
  if (std::ranges::any_of(all_formats(), [&](const FormatTraits& t) { return t.is_block && uses(t.id); })) {
    return report.nodes_block;
  }
  if (std::ranges::any_of(all_formats(), [&](const FormatTraits& t) {
        return t.is_qdq && !has_integer_codes(t.id) && uses(t.id);  // FP8 codes
      })) {
    return report.nodes_fp8;
  }
  if (qdq_activations(a) || (c.weight && format_traits(c.weight->format).is_qdq)) return report.nodes_integer;
  return report.nodes_float;
}

void count_precisions(const std::vector<NodeAssignment>& assignment, QuantizeReport& report) {
  for (const auto& a : assignment) {
    ++report.nodes;
    ++precision_count(a, report);
  }
}

// Body nodes the rewrite left float for want of statistics (a branch calibration never took)
// were counted from their assignment (integer or FP8): they are float, and the summary says which.
void count_unobserved(const std::vector<NodeAssignment>& assignment, QuantizeReport& report) {
  const std::vector<std::string>& unobserved = report.rewrite.unobserved;
  if (unobserved.empty()) return;
  for (const std::string& path : unobserved) {
    const auto a = std::ranges::find(assignment, path, &NodeAssignment::node_name);
    size_t& counted = a == assignment.end() ? report.nodes_integer : precision_count(*a, report);
    if (counted > 0) --counted;
    ++report.nodes_float;
  }
  constexpr size_t kNamed = 3;
  std::vector<std::string> named(unobserved.begin(), unobserved.begin() + static_cast<long>(std::min(kNamed, unobserved.size())));
  report.rewrite.notes.push_back(
      "left float: " + std::to_string(unobserved.size()) + " nodes in If/Loop/Scan bodies calibration never ran (" +
      text::join(named, ", ") + (unobserved.size() > kNamed ? ", ..." : "") + ")");
}

// A U8S8 model's fused kernels on a CPU where they saturate (runtime.h): said once, with the fix.
void warn_if_kernels_saturate(const QuantConfig& config, const DeploymentTarget& deployment) {
  if (!config.extra.ort_cpu_fusion || !deployment.on_cpu() || !cpu_u8s8_kernels_saturate()) return;
  const auto full_range = [](const std::optional<TensorQuantSpec>& weight) {
    return weight && weight->format == FormatId::kInt8 && !weight->reduce_range;
  };
  bool any = full_range(config.global.weight);
  for (const LayerOverride& o : config.specific) any = any || full_range(o.layer_config.weight);
  for (const LayerTypeOverride& t : config.layer_types) any = any || (t.layer_config && full_range(t.layer_config->weight));
  if (!any) return;
  log_warning("this CPU has no AVX-VNNI or AVX512-VNNI: ONNX Runtime's fused u8 x s8 kernels (OrtCpuFusion) add products "
              "in int16 pairs that saturate here, so the model can compute differently from its Q/DQ graph (what mixprec "
              "measures on this CPU includes it); weights with \"reduce_range\": true (7-bit codes, ONNX Runtime's "
              "reduce_range) cannot saturate but round twice as coarsely: measure both for CPUs like this one");
}

std::string config_path_for(const std::string& output) {
  return fs::path(output).replace_extension(".config.json").string();
}

}  // namespace

QuantizeReport quantize_job(const QuantizeParams& params) {
  WarningCollector warnings;
  QuantizeReport report;
  const std::string& label = params.setup.model_path;
  refuse_overwriting_input(label, params.output_path);
  QuantConfig config = resolve_config(params.config);
  if (params.calib_method) override_calib_method(config, *params.calib_method);
  keep_nodes_at(config, params.fp_nodes, params.fp_precision);
  report.config_path = config_path_for(params.output_path);
  // Before any work: a config the requested shape cannot hold fails now, not after calibrating.
  std::string config_json = config_file_text(config, params.config_shape, report.config_path);
  const SessionOptions session = accuracy_session(params.deployment);
  warn_if_kernels_saturate(config, params.deployment);
  // Memory: a model over 2 GB must fit twice, not more (one copy here, one in ONNX Runtime),
  // so the loaded model is consumed by the preparation whenever calibration needs no graph of
  // its own, and every stage below hands its input on instead of copying it.
  onnx::ModelProto model = load_model(label);
  report.static_shapes.dynamic_in_input = dynamic_dims(model);
  const PrepareOptions preparation = prepare_options(config);
  const ChannelMaximaFn measure = smooth_quant_measurer(params.setup, session, static_cast<size_t>(config.extra.num_calib_samples));
  const PrepareOptions calibration = calibration_preparation(preparation);
  const bool own_calibration_graph = calibration.fold_affine != preparation.fold_affine;
  onnx::ModelProto prepared = own_calibration_graph ? prepare_model(model, preparation, label, &report.prepare, &measure)
                                                    : prepare_model(std::move(model), preparation, label, &report.prepare, &measure);
  if (params.ffn_only) {
    // On the prepared model: every node has its name, Constant weights are initializers.
    const ArchitectureInference architecture = analyze_model(prepared, label).architecture;
    report.ffn_nodes = feed_forward_nodes(architecture);
    report.ffn_summary = std::to_string(architecture.mlp_blocks.size()) + " MLP blocks, " +
                         std::to_string(architecture.attention_projections.size()) + " attention projections";
    quantize_only_nodes(config, report.ffn_nodes, label);
    config_json = config_file_text(config, params.config_shape, report.config_path);
  }
  const std::vector<NodeAssignment> assignment = assign_layers(config, prepared, label);
  count_precisions(assignment, report);
  report.float_weights = describe_float_weights(assignment, prepared, label);

  CalibrationStats stats;
  const bool needs_stats = std::any_of(assignment.begin(), assignment.end(), [](const NodeAssignment& a) {
    return !a.excluded && qdq_activations(a);
  });
  std::optional<onnx::ModelProto> calibration_graph;
  if (own_calibration_graph && needs_stats) calibration_graph = prepare_model(std::move(model), calibration, label);
  model.Clear();
  if (needs_stats) {
    CachedStats cached = load_or_collect_stats(
        calibration_graph ? *calibration_graph : prepared, params.setup,
        {.path = params.stats_path,
         .max_samples = static_cast<size_t>(config.extra.num_calib_samples),
         .session = session,
         .config = &config});
    calibration_graph.reset();
    stats = std::move(cached.stats);
    report.stats_reused = cached.reused;
    report.calibrated = !cached.reused;
    report.calibration_seconds = cached.seconds;
    report.stats_path = params.stats_path;
    report.calibration_samples = stats.samples;
    report.data_description = stats.data_description;
  }

  QuantizeOptions options = quantize_options(config);  // the scale search adds its factors
  // Ranks seen by calibration first (exact); without a calibration pass, one run on the first
  // sample of the given data (or one seeded random sample when every input shape is known).
  std::optional<NamedTensors> rank_sample;
  const DataSpec& given = params.setup.calibration;
  if (stats.ranks.empty()) {
    const Session probe = Session::from_model(prepared, label, session);
    DataSpec data = given;
    if (data.data.files.empty()) data.data.random_samples = 1;
    try {
      rank_sample = open_samples(data, probe.inputs(), label)->sample(0);
    } catch (const Error&) {
      if (!given.data.files.empty()) throw;  // the user's data is bad: say so
      // Dynamic input dims and no data: static inference alone must do.
    }
  }
  const std::map<std::string, int64_t> ranks = rank_table(prepared, label, stats, rank_sample ? &*rank_sample : nullptr);
  const AlgorithmRecipe recipe = algorithm_recipe(config);
  const std::optional<BiasCorrectionMode> correct_biases = recipe.bias_correction;
  // The algorithms after the rewrite change the prepared model and rewrite it again: keep it then.
  std::optional<onnx::ModelProto> kept;
  if (recipe.scale_search || recipe.reconstruction || (correct_biases && needs_stats)) kept = prepared;
  onnx::ModelProto quantized;
  try {
    quantized = quantize_model(std::move(prepared), assignment, stats, options, label, rank_lookup(ranks), &report.rewrite);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kUnsupported || rank_sample || e.message().find("rank") == std::string::npos) throw;
    throw Error(e.kind(), e.file(),
                e.message() + "; give --calibration-data or --input-shape so mixprec can run the model once and "
                              "learn the ranks");
  }
  count_unobserved(assignment, report);
  if (kept) {
    const RewriteFn rewrite = [&](const onnx::ModelProto& candidate) {
      return quantize_model(candidate, assignment, stats, options, label, rank_lookup(ranks));
    };
    RecoveryRun run = recover_accuracy(*kept, rewrite, recipe, assignment, params.setup,
                                       static_cast<size_t>(config.extra.num_calib_samples), session, nullptr,
                                       options.activation_range_factors, label);
    report.scale_search = std::move(run.scale_search);
    report.reconstruction = std::move(run.reconstruction);
    report.bias_correction = std::move(run.bias_correction);
    if (run.changed) {
      report.rewrite = {};
      quantized = quantize_model(std::move(*kept), assignment, stats, options, label, rank_lookup(ranks), &report.rewrite);
      report.rewrite.unobserved.clear();  // counted once, after the first rewrite
    }
    kept.reset();
  } else if (correct_biases) {
    report.bias_correction.emplace().notes.push_back("bias_correction: no node has integer activations: nothing corrected");
  }
  // A static model stays static (the VAIML compiler stops on any dynamic dim), and --make-static
  // pins a dynamic one: every tensor's shape from a run, then no dynamic dim may be left.
  if (params.make_static || report.static_shapes.dynamic_in_input.empty()) {
    const auto source = [&] {
      const Session probe = Session::from_model(quantized, label, session);
      return open_samples(calibration_data(params.setup, 2), probe.inputs(), label);
    }();
    std::vector<NamedTensors> samples;
    for (size_t i = 0; i < std::min<size_t>(2, source->size()); ++i) samples.push_back(source->sample(i));
    std::vector<std::string> input_dims = std::move(report.static_shapes.dynamic_in_input);
    report.static_shapes = declare_static_shapes(quantized, samples, params.make_static, session, label, params.output_path);
    report.static_shapes.dynamic_in_input = std::move(input_dims);
  }
  // ONNX Runtime is the judge of validity: nothing is written unless it loads the result, on
  // CPU and on the deployment's provider.
  Session::from_model(quantized, params.output_path, session);
  if (!params.deployment.on_cpu()) Session::from_model(quantized, params.output_path, params.deployment.session());
  report.output_path = params.output_path;
  save_model_and_config(quantized, config, report.output_path, report.config_path, config_json);
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
