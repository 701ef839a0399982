// guide: SPEC's phases in order, each reported as it ends with a typed result. Full mode:
//   analyze -> config (given, or make_plan()'s for the deployment and the architecture) ->
//   calibrate -> baseline (FP32 reference, cached) -> quantize -> recover (a proposed config
//   that misses: the plan's recovery ladder, best rung kept) -> validate -> explore (when
//   asked and the config misses) -> compile (session with every graph optimization on the
//   chosen provider, coverage and islands of the final model) -> exec (latencies, when asked).
// dry-run and requantize modes run mixprec/workflow.h; --strategy ladder runs the ladder.
#include "mixprec/guide.h"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <sstream>

#include "common/text.h"
#include "common/timing.h"
#include "evaluation/work_dir_lock.h"
#include "evaluation/workbench.h"
#include "mixprec/devices.h"
#include "mixprec/error.h"
#include "mixprec/log.h"
#include "mixprec/model_io.h"
#include "mixprec/stop.h"

namespace mixprec {
namespace {
namespace fs = std::filesystem;

constexpr EnumName<GuideMode> kModeNames[] = {
    {GuideMode::kFull, "full"}, {GuideMode::kDryRun, "dry-run"}, {GuideMode::kRequantize, "requantize"}};
constexpr EnumName<GuideStage> kStageNames[] = {{GuideStage::kCompile, "compile"}, {GuideStage::kExec, "exec"}};
constexpr EnumName<EdgeQuant> kEdgeNames[] = {{EdgeQuant::kAuto, "auto"},
                                              {EdgeQuant::kNone, "none"},
                                              {EdgeQuant::kInput, "input"},
                                              {EdgeQuant::kOutput, "output"},
                                              {EdgeQuant::kBoth, "both"}};
constexpr EnumName<PhaseStatus> kStatusNames[] = {{PhaseStatus::kDone, "done"},
                                                  {PhaseStatus::kPass, "pass"},
                                                  {PhaseStatus::kFail, "fail"},
                                                  {PhaseStatus::kSkipped, "skipped"},
                                                  {PhaseStatus::kNotRun, "not run"}};

// Which edges each request quantizes on the device.
struct EdgeRow {
  EdgeQuant edge;
  bool inputs, outputs;
};
constexpr EdgeRow kEdges[] = {{EdgeQuant::kAuto, false, false},
                              {EdgeQuant::kNone, false, false},
                              {EdgeQuant::kInput, true, false},
                              {EdgeQuant::kOutput, false, true},
                              {EdgeQuant::kBoth, true, true}};
const EdgeRow& edge_row(EdgeQuant edge) {
  return *std::ranges::find_if(kEdges, [&](const EdgeRow& row) { return row.edge == edge; });
}
constexpr char kVitisAi[] = "VitisAIExecutionProvider";

bool is_vitisai(const std::string& provider) { return provider == "VitisAI" || provider == kVitisAi; }

// `runs` timed calls of `once`, after one untimed warm-up (first-run allocations and lazy
// initialisation).
LatencyStats time_calls(const std::function<void()>& once, size_t runs) {
  once();
  std::vector<double> times;
  for (size_t i = 0; i < runs; ++i) {
    const auto t0 = Clock::now();
    once();
    times.push_back(milliseconds_since(t0));
  }
  return summarize_latency(std::move(times));
}

LatencyStats time_runs(const Session& session, const NamedTensors& sample, size_t runs) {
  return time_calls([&] { session.run(sample); }, runs);
}

// The model with its standalone edge Q/DQ taken out (the --edge-quant-auto probe's), timed as a
// runtime doing them on the host would run it: each run quantizes the edge inputs, runs, and
// dequantizes the edge outputs. nullopt (with a warning) for codes the host cannot produce here.
std::optional<LatencyStats> time_edges_on_host(const EdgeProbe& probe, const std::string& model_path,
                                               const SessionOptions& options, const NamedTensors& sample, size_t runs) {
  struct HostEdge {
    FormatId format;
    QuantParams params;
  };
  std::map<std::string, HostEdge> inputs, outputs;
  for (const EdgeBoundary& b : probe.boundaries) {
    if (!b.excluded.empty()) continue;
    const auto format = format_from_name(b.codes);
    if (!format || !format_traits(*format).is_qdq) {
      log_warning(model_path + ": edge '" + b.tensor + "' has " + b.codes + " codes, which the host timing does not "
                  "produce; the edges-on-host run is not timed");
      return std::nullopt;
    }
    HostEdge edge{*format, {.scale = b.scale, .zero_point = b.zero_point, .axis = b.axis}};
    if (edge.params.zero_point.empty()) edge.params.zero_point.assign(edge.params.scale.size(), 0);
    (b.input ? inputs : outputs).emplace(b.tensor, std::move(edge));
  }
  const Session session = Session::from_file(model_path, options);
  const auto once = [&] {
    NamedTensors feed;
    for (const auto& [name, tensor] : sample) {
      const auto it = inputs.find(name);
      feed.emplace_back(name, it == inputs.end() ? tensor : quantize_tensor(tensor, it->second.params, it->second.format));
    }
    NamedTensors out = session.run(feed);
    for (auto& [name, tensor] : out) {
      if (const auto it = outputs.find(name); it != outputs.end()) tensor = dequantize_tensor(tensor, it->second.params);
    }
  };
  return time_calls(once, runs);
}

bool integer_only(const QuantConfig& config) {
  const auto formats = formats_used(config);
  return !formats.empty() && std::ranges::all_of(formats, [](FormatId f) { return format_traits(f).is_qdq; });
}
bool mixed(const QuantConfig& config) {
  const auto formats = formats_used(config);
  return std::ranges::any_of(formats, [](FormatId f) { return format_traits(f).is_qdq; }) &&
         std::ranges::any_of(formats, [](FormatId f) { return !format_traits(f).is_qdq; });
}

class Guide {
 public:
  Guide(const GuideParams& params, const PhaseCallback& on_phase) : params_(params), on_phase_(on_phase) {}

  GuideReport run() {
    WarningCollector warnings;
    report_.mode = params_.mode;
    device_ = &params_.deployment.profile();  // an unknown device fails before any work
    report_.device = device_->name;
    if (params_.setup.work_dir.empty()) throw_bad_input("", "guide needs a work dir");
    if (params_.edge_quant_auto && params_.edge_quant != EdgeQuant::kAuto) {
      throw_bad_input("", std::string("--edge-quant-auto measures which edge flag to set; it conflicts with --edge-quant ") +
                              to_string(params_.edge_quant));
    }
    if (!params_.plugin.empty()) {
      const char* other = params_.mode != GuideMode::kFull ? "--mode " : params_.ladder ? "--strategy ladder"
                          : params_.explore ? "--explore" : !params_.config_path.empty() ? "--config" : nullptr;
      if (other != nullptr) {
        throw_bad_input("", "--plugin " + params_.plugin + " quantizes in place of the config, quantize and explore "
                            "phases; it does not combine with " + other +
                            (params_.mode != GuideMode::kFull ? std::string(to_string(params_.mode)) : ""));
      }
    }
    const WorkDirLock lock(params_.setup.work_dir);  // creates it; one run at a time
    switch (params_.mode) {
      case GuideMode::kFull: params_.plugin.empty() ? full() : plugin_mode(); break;
      case GuideMode::kDryRun: dry(); break;
      case GuideMode::kRequantize: requantize_mode(); break;
    }
    report_.warnings = warnings.warnings();
    return report_;
  }

 private:
  void begin(const std::string& name) {
    phase_start_ = Clock::now();
    current_ = GuidePhase{.name = name};
  }
  // `seconds`: the phase's own time when it is measured inside a longer step.
  void end(PhaseResult result, std::optional<double> seconds = std::nullopt) {
    current_.result = std::move(result);
    current_.seconds = seconds.value_or(seconds_since(phase_start_));
    report_.phases.push_back(current_);
    if (on_phase_) on_phase_(current_);
  }
  static PhaseStatus pass_fail(bool pass) { return pass ? PhaseStatus::kPass : PhaseStatus::kFail; }
  std::string work_file(const std::string& name) const { return (fs::path(params_.setup.work_dir) / name).string(); }

  // The workbench of the phases after config: accuracy on CPU (the workbench's own rule), the
  // statistics in the work dir, shared with explore, the ladder and a rerun.
  Workbench workbench(const QuantConfig& config) const {
    return Workbench(params_.setup, params_.deployment,
                     {.prepare = prepare_options(config),
                      .calibration_samples = static_cast<size_t>(config.extra.num_calib_samples)});
  }

  // --- full mode -------------------------------------------------------------------------
  void full() {
    const ModelAnalysis analysis = analyze();
    if (params_.ladder) {
      ladder_strategy();
      return;
    }
    const QuantConfig config = choose_config(analysis);

    begin("calibrate");
    Workbench bench = workbench(config);
    objective_.emplace(params_.setup.criterion.target, bench.task().type);
    end(CalibrateResult{.reused = bench.stats_reused(),
                        .stats_path = bench.stats_path(),
                        .data_description = bench.stats().data_description,
                        .tensors = bench.stats().tensors.size()},
        bench.calibration_seconds());

    begin("baseline");
    end(BaselineResult{.data_description = bench.data_description(),
                       .samples = bench.samples(),
                       .seconds = bench.reference_seconds()},
        bench.reference_seconds());

    begin("quantize");
    QuantizeResult quantize;
    QuantConfig chosen = config;
    // A proposed config tries the methods the device allows unless --calib-method names one.
    const bool try_methods = params_.config_path.empty() && !params_.search.calib_method;
    Evaluation quantized = try_methods ? choose_calibration(bench, chosen, quantize) : bench.evaluate(chosen);
    quantize.kept = chosen.extra.calib_method;
    report_.final_model_path = quantize.model_path = work_file("quantized.onnx");
    report_.final_config_path = quantize.config_path = work_file("quantized.config.json");
    write_quantized(bench, chosen, quantized);
    quantize.layers = bench.node_formats(chosen, *device_).size();
    quantize.integer_layers = bench.quantized_layers(chosen).size();
    quantize.formats = formats_used(chosen);
    end(std::move(quantize));

    recover_phase(bench, chosen, quantized);

    begin("validate");
    current_.status = pass_fail(quantized.verdict.pass);
    report_.pass = quantized.verdict.pass;
    report_.criterion = quantized.verdict.criterion;
    end(ValidateResult{.task = bench.task().type, .metrics = quantized.metrics, .verdict = quantized.verdict});

    explore_phase(chosen, quantized);
    compile_phase(bench, chosen);
    report_.time_vs_bf16 =
        report_.explore() ? report_.explore()->final_time_vs_bf16 : bench.time_vs_full_bf16(chosen, *device_);
  }

  // --- --plugin: the plugin quantizes; validate and compile follow -------------------------
  void plugin_mode() {
    const ModelAnalysis analysis = analyze();
    begin("plugin");
    const PluginManifest manifest =
        resolve_plugin(params_.plugin, plugin_search_path(params_.plugin_dirs), device_->name);
    if (!manifest.consent.empty() && !params_.plugin_consent) {
      throw_bad_input(manifest.manifest_path, "plugin '" + manifest.name + "' runs only with consent (--yes): " +
                                                  manifest.consent);
    }
    allow_plugin_formats(manifest);
    std::stringstream flags(manifest.compiler_flags);
    for (std::string flag; flags >> flag;) plugin_flags_.push_back(flag);
    PluginResult result{.manifest = manifest, .args = params_.plugin_args};
    const PluginHost host{.model_path = params_.setup.model_path,
                          .device = device_->name,
                          .work_dir = params_.setup.work_dir,
                          .op_types = op_types_of(analysis),
                          .quantize = [&](const std::string& json, const std::string& output) {
                            plugin_quantize(manifest, json, output);
                            ++result.host_quantizations;
                          },
                          .register_custom_ops = [](const std::string& library) { register_custom_op_library(library); }};
    result.run = run_plugin(manifest, params_.plugin_args, host);
    if (result.run.config_path.empty()) {
      throw_bad_input(manifest.manifest_path, "plugin '" + manifest.name + "' returned a model without its config; "
                                              "compile needs the config (the host's quantize writes one)");
    }
    report_.final_model_path = result.run.model_path;
    report_.final_config_path = result.run.config_path;
    end(std::move(result));

    const QuantConfig config = load_config(report_.final_config_path);
    if (const auto why = device_rejects(*device_, formats_used(config))) throw_bad_input(report_.final_config_path, *why);
    if (!plugin_bench_) plugin_bench_.emplace(workbench(config));
    begin("validate");
    const Evaluation e = plugin_bench_->evaluate_model(load_model(report_.final_model_path));
    current_.status = pass_fail(e.verdict.pass);
    report_.pass = e.verdict.pass;
    report_.criterion = e.verdict.criterion;
    end(ValidateResult{.task = plugin_bench_->task().type, .metrics = e.metrics, .verdict = e.verdict});
    compile_phase(*plugin_bench_, config);
    report_.time_vs_bf16 = plugin_bench_->time_vs_full_bf16(config, *device_);
  }

  static std::vector<std::string> op_types_of(const ModelAnalysis& analysis) {
    std::vector<std::string> out;
    for (const auto& count : analysis.op_histogram) out.push_back(count.op_type);
    return out;
  }

  // The device as the plugin extends it: the formats its manifest adds, on its devices. A
  // format the device's profile has no speed for is priced as BF16 there (said once).
  void allow_plugin_formats(const PluginManifest& manifest) {
    plugin_formats_.assign(device_->formats.begin(), device_->formats.end());
    for (const auto& name : manifest.formats) {
      const auto id = format_from_name(name);
      if (!id) {
        throw_bad_input(manifest.manifest_path, "\"adds\": format '" + name + "' is not built in, and plugin " + manifest.name +
                                                    " has not added it (its own formats need --use-plugin " + manifest.name + ")");
      }
      if (std::ranges::find(plugin_formats_, *id) == plugin_formats_.end()) plugin_formats_.push_back(*id);
    }
    std::ranges::sort(plugin_formats_);
    plugin_device_ = *device_;
    plugin_device_.formats = plugin_formats_;
    RelativeThroughput& speed = plugin_device_.throughput;
    for (const auto& name : manifest.formats) {
      const FormatId id = *format_from_name(name);
      if (added_format(id) != nullptr || relative_speed(plugin_device_, id) > 0) continue;  // an added one has its speed_as
      const bool fp8 = id == FormatId::kFp8E4M3 || id == FormatId::kFp8E5M2;
      const bool int4 = id == FormatId::kInt4 || id == FormatId::kUInt4;
      double& field = format_traits(id).is_block ? speed.block : fp8 ? speed.fp8 : int4 ? speed.int4 : speed.bf16;
      if (field > 0) continue;
      field = speed.bf16;
      log_warning(std::string(device_->name) + "'s profile has no speed for " + name + " (plugin " + manifest.name +
                  "): expected compute times price it as BF16");
    }
    device_ = &plugin_device_;
  }

  // The host's quantize for the plugin: the run's model under the plugin's config, calibrated
  // once per run (the first config sets the workbench's preparation), written with its config.
  void plugin_quantize(const PluginManifest& manifest, const std::string& json, const std::string& output) {
    const std::string label = "plugin " + manifest.name + "'s config";
    nlohmann::ordered_json parsed;
    try {
      parsed = nlohmann::ordered_json::parse(json);
    } catch (const nlohmann::json::exception& e) {
      throw_bad_input(label, std::string("not valid JSON: ") + e.what());
    }
    const QuantConfig config = parse_config(parsed, label);
    if (const auto why = device_rejects(*device_, formats_used(config))) throw_bad_input(label, *why);
    if (!plugin_bench_) plugin_bench_.emplace(workbench(config));
    save_model(plugin_bench_->for_writing(plugin_bench_->build(config), output), output);
    save_config(config, fs::path(output).replace_extension(".config.json").string(), params_.config_shape);
  }

  // --strategy ladder: the ladder replaces config/quantize/validate/explore; the rung it keeps
  // goes through compile (and exec).
  void ladder_strategy() {
    begin("ladder");
    LadderReport r = ladder({params_.setup, params_.deployment});
    report_.pass = r.chosen != "float";
    current_.status = pass_fail(report_.pass);
    const std::string chosen = r.chosen;
    if (report_.pass) {
      report_.final_model_path = r.chosen_model_path;
      report_.final_config_path = work_file("ladder_" + chosen + ".config.json");
      save_config(*preset_config(chosen), report_.final_config_path, params_.config_shape);
      report_.criterion = r.rungs.back().verdict.criterion;
    }
    end(std::move(r));
    if (!report_.pass) return;
    const QuantConfig config = *preset_config(chosen);
    Workbench bench = workbench(config);  // the ladder's statistics: no second calibration
    compile_phase(bench, config);
    report_.time_vs_bf16 = bench.time_vs_full_bf16(config, *device_);
  }

  // A proposed config tries every calibration method its formats allow (power-of-two ones on
  // devices that need them) on the same statistics, and keeps the one that does best: one
  // rewrite and one evaluation each, no new calibration.
  Evaluation choose_calibration(Workbench& bench, QuantConfig& config, QuantizeResult& result) {
    std::optional<Evaluation> best;
    CalibMethod best_method = config.extra.calib_method;
    for (const auto& method : all_calib_methods()) {
      if (device_->requires_power_of_two != method.power_of_two) continue;
      QuantConfig trial = config;
      trial.extra.calib_method = method.method;
      Evaluation e = bench.evaluate(trial);
      result.methods.push_back({method.method, e.psnr_db, e.verdict.pass});
      if (!best || better(e, *best)) {
        best = std::move(e);
        best_method = method.method;
      }
    }
    config.extra.calib_method = best_method;
    warn_methods_below_reference(result.methods);
    return std::move(*best);
  }

  // A method that falls more than kMethodMarginDb below the plain range (MinMax, or
  // PowerOfTwo_NonOverflow on power-of-two devices) on this model is a warning: guide keeps the
  // best one anyway, but a user who names that method for this model (--calib-method, a config)
  // should know what it costs.
  static constexpr double kMethodMarginDb = 3.0;
  void warn_methods_below_reference(const std::vector<MethodTrial>& methods) const {
    const CalibMethod reference = device_->requires_power_of_two ? CalibMethod::kPowerOfTwoNonOverflow : CalibMethod::kMinMax;
    const auto plain = std::ranges::find(methods, reference, &MethodTrial::method);
    if (plain == methods.end()) return;
    for (const MethodTrial& m : methods) {
      const double below = plain->psnr_db - m.psnr_db;
      if (m.method == reference || !(below > kMethodMarginDb)) continue;
      log_warning(params_.setup.model_path + ": calibration method " + calib_method_traits(m.method).name + " is " +
                  text::fixed(below, 1) + " dB below " + calib_method_traits(reference).name + " on this model (" +
                  text::fixed(m.psnr_db, 2) + " vs " + text::fixed(plain->psnr_db, 2) + " dB worst-output PSNR, margin " +
                  text::fixed(kMethodMarginDb, 0) +
                  " dB): guide keeps the best method, but a config or --calib-method that names this one loses that much");
    }
  }

  // The worst top-1 agreement over the outputs that have one; 2 when none has.
  static double worst_top1(const Evaluation& e) {
    double worst = 2;
    for (const auto& m : e.metrics) worst = std::min(worst, m.top1_agreement.value_or(2.0));
    return worst;
  }
  // Pass first, then what explore maximises (the target's metric on the worst output, else the
  // task's own measure), then worst PSNR.
  bool better(const Evaluation& a, const Evaluation& b) const {
    if (a.verdict.pass != b.verdict.pass) return a.verdict.pass;
    const double objective_a = (*objective_)(a.metrics), objective_b = (*objective_)(b.metrics);
    if (objective_a != objective_b) return objective_a > objective_b;
    return a.psnr_db > b.psnr_db;
  }

  // quantized.onnx and its config: the quantize phase's, then the recovery rung kept.
  void write_quantized(const Workbench& bench, const QuantConfig& config, const Evaluation& evaluation) {
    save_model(bench.for_writing(*evaluation.model, work_file("quantized.onnx")), work_file("quantized.onnx"));
    save_config(config, work_file("quantized.config.json"), params_.config_shape);
  }

  RecoveryTrial trial_of(const QuantConfig& config, const Evaluation& e, double seconds) const {
    RecoveryTrial t{.algorithms = algorithm_labels(config),
                    .metrics = e.metrics,
                    .verdict = e.verdict,
                    .psnr_db = e.psnr_db,
                    .seconds = seconds,
                    .learned_layers = e.learned_layers,
                    .reused_layers = e.reused_layers};
    if (const double top1 = worst_top1(e); top1 <= 1) t.top1 = top1;
    return t;
  }

  // A proposed config that misses its criterion tries the plan's recovery ladder: each rung
  // adds its algorithms (which run after the rewrite, so the statistics are shared) and is
  // measured; then, when the config has CLE, the plan's rungs without it, on statistics of
  // their own. The first rung that passes ends the ladder. The best of the quantize phase's
  // config and the rungs becomes the config validate judges and explore starts from.
  void recover_phase(Workbench& bench, QuantConfig& config, Evaluation& quantized) {
    begin("recover");
    RecoverResult result{.needed = !quantized.verdict.pass};
    result.trials.push_back(trial_of(config, quantized, quantized.seconds));
    if (!result.needed) {
      result.skipped = "not needed: the config meets the criterion";
    } else if (!params_.config_path.empty()) {
      result.skipped = "the config is given: it runs the algorithms it lists";
    } else if (!params_.recover) {
      result.skipped = "--no-recover";
    } else if (recovery_ladder_.empty()) {
      result.skipped = "the plan has no recovery ladder for this preset and model";
    }
    if (!result.skipped.empty()) {
      current_.status = result.needed ? PhaseStatus::kNotRun : PhaseStatus::kSkipped;
      end(std::move(result));
      return;
    }
    QuantConfig best_config = config;
    Workbench* best_bench = &bench;
    // The rungs without the config's CLE need statistics of the model without it: a second
    // workbench, built at the first such rung (its calibration counted in that rung's time) and
    // gone after this phase; explore calibrates from its statistics file in the work dir.
    std::optional<Workbench> without_cle;
    const auto try_rung = [&](const std::vector<AlgorithmEntry>& rung, bool with_cle) {
      QuantConfig trial = config;
      if (!with_cle) std::erase_if(trial.algorithms, [](const AlgorithmEntry& a) { return a.name == "cle"; });
      trial.algorithms.insert(trial.algorithms.end(), rung.begin(), rung.end());
      const auto t0 = Clock::now();
      if (!with_cle && !without_cle) without_cle.emplace(workbench(trial));
      Workbench& rung_bench = with_cle ? bench : *without_cle;
      Evaluation e = rung_bench.evaluate(trial);
      RecoveryTrial row = trial_of(trial, e, seconds_since(t0));
      const RecoveryRun& run = rung_bench.last_recovery();
      if (run.reconstruction) row.reconstruction_seconds = run.reconstruction->seconds;
      if (run.bias_correction) {
        row.bias_correction_seconds = run.bias_correction->seconds;
        row.corrected_biases = run.bias_correction->layers;
        row.reused_biases = run.bias_correction->reused;
      }
      result.trials.push_back(std::move(row));
      if (better(e, quantized)) {
        quantized = std::move(e);
        best_config = trial;
        best_bench = &rung_bench;
        result.kept = result.trials.size() - 1;
      }
      return !quantized.verdict.pass && !stop_requested();  // go on
    };
    bool go_on = true;
    for (const auto& rung : recovery_ladder_) {
      if (!(go_on = try_rung(rung, true))) break;
    }
    const bool has_cle = std::ranges::any_of(config.algorithms, [](const AlgorithmEntry& a) { return a.name == "cle"; });
    for (const auto& rung : recovery_ladder_without_cle_) {
      if (!go_on || !has_cle) break;
      go_on = try_rung(rung, false);
    }
    if (result.kept > 0) {
      config = best_config;
      write_quantized(*best_bench, config, quantized);
      result.model_path = work_file("quantized.onnx");
      result.config_path = work_file("quantized.config.json");
    }
    throw_if_stopped(work_file("quantized.onnx"), "the best rung so far is in quantized.onnx");
    current_.status = pass_fail(quantized.verdict.pass);
    end(std::move(result));
  }

  ModelAnalysis analyze() {
    begin("analyze");
    const std::string& model_path = params_.setup.model_path;
    const onnx::ModelProto model = load_model(model_path);
    ModelAnalysis analysis = analyze_model(model, model_path);
    if (analysis.quantization.state != QuantState::kFloat) {
      throw_bad_input(model_path, std::string("already quantized (") + to_string(analysis.quantization.state) +
                                      "): use --mode requantize --config CONFIG to quantize it differently");
    }
    end(AnalyzeResult{analysis});
    return analysis;
  }

  // The given config, or the plan's for this deployment (the one recommendation table), with
  // the accuracy goal. An unknown architecture gets the plan's draft, confirmed (guide is
  // headless) and reported as such.
  QuantConfig choose_config(const ModelAnalysis& analysis) {
    begin("config");
    ConfigResult result;
    QuantConfig config;
    if (!params_.config_path.empty()) {
      config = load_config(params_.config_path);
      result.given_path = params_.config_path;
    } else {
      PlanParams plan;
      plan.setup = params_.setup;
      plan.target = plan_target_for(params_.deployment, analysis.architecture.type);
      plan.goal = PlanGoal::kAccuracy;
      plan.device = plan_target_traits(plan.target).npu ? params_.deployment.device : "";
      plan.confirmed = true;
      plan.backend_risk = false;
      result.plan = make_plan(plan);
      config = result.plan->config;
      recovery_ladder_ = result.plan->recovery_ladder;
      recovery_ladder_without_cle_ = result.plan->recovery_ladder_without_cle;
      if (analysis.architecture.type == Architecture::kUnknown) {
        log_warning(params_.setup.model_path + ": architecture unknown: the proposed config is the plan's draft for " +
                    to_string(plan.target) + "; review " + work_file("quantized.config.json") + " or give --config");
      }
    }
    if (params_.search.calib_method) override_calib_method(config, *params_.search.calib_method);
    if (const auto why = device_rejects(*device_, formats_used(config))) {
      throw_bad_input(params_.config_path.empty() ? params_.setup.model_path : params_.config_path, *why);
    }
    // Before any work: a config --config-format's shape cannot hold fails now.
    config_file_text(config, params_.config_shape, work_file("quantized.config.json"));
    result.formats = formats_used(config);
    end(std::move(result));
    return config;
  }

  void explore_phase(const QuantConfig& config, const Evaluation& quantized) {
    begin("explore");
    ExplorePhaseResult result{.requested = params_.explore, .needed = !quantized.verdict.pass, .search = params_.search};
    if (!params_.explore || quantized.verdict.pass) {
      current_.status = params_.explore ? PhaseStatus::kSkipped : PhaseStatus::kNotRun;
      end(std::move(result));
      return;
    }
    SearchOptions search = params_.search;
    search.base_config = config;  // its calibration method is the quantize phase's choice
    result.search = search;
    ExploreResult r = explore({params_.setup, params_.deployment, search, params_.config_shape});
    current_.status = pass_fail(r.final_verdict.pass);
    report_.final_model_path = r.final_model_path;
    report_.final_config_path = r.final_config_path;
    report_.pass = r.final_verdict.pass;
    report_.criterion = r.final_verdict.criterion;
    result.result = std::move(r);
    end(std::move(result));
  }

  // The edge-quantization request against what the final model does (a warning on a mismatch).
  EdgeCheck edge_check(const ModelAnalysis& final_analysis) const {
    EdgeCheck check;
    for (const auto& input : final_analysis.inputs) check.float_inputs += input.dtype == "float32" ? 1 : 0;
    check.outputs = static_cast<int64_t>(final_analysis.outputs.size());
    check.quantized_inputs = final_analysis.quantization.edge_quantized_inputs;
    check.dequantized_outputs = final_analysis.quantization.edge_dequantized_outputs;
    check.requested = params_.edge_quant;
    if (check.requested == EdgeQuant::kAuto) {  // what the model does: some edge quantized counts
      check.requested = check.quantized_inputs > 0 ? (check.dequantized_outputs > 0 ? EdgeQuant::kBoth : EdgeQuant::kInput)
                                                   : (check.dequantized_outputs > 0 ? EdgeQuant::kOutput : EdgeQuant::kNone);
    }
    const EdgeRow& row = edge_row(check.requested);
    check.checked = params_.edge_quant != EdgeQuant::kAuto;
    const bool inputs_match =
        !check.checked || (row.inputs ? check.quantized_inputs == check.float_inputs : check.quantized_inputs == 0);
    const bool outputs_match =
        !check.checked || (row.outputs ? check.dequantized_outputs == check.outputs : check.dequantized_outputs == 0);
    check.matches = inputs_match && outputs_match;
    if (!check.matches) {
      log_warning(report_.final_model_path + ": --edge-quant " + to_string(check.requested) + " but the model " +
                  (!inputs_match ? "quantizes " + std::to_string(check.quantized_inputs) + " of " +
                                       std::to_string(check.float_inputs) + " inputs"
                                 : "dequantizes " + std::to_string(check.dequantized_outputs) + " of " +
                                       std::to_string(check.outputs) + " outputs") +
                  " at its edge; the host must " + (row.inputs ? "quantize" : "pass float to") + " the inputs and " +
                  (row.outputs ? "dequantize" : "read float from") + " the outputs accordingly");
    }
    return check;
  }

  // The compiler options the final model needs, with runtime edge quantization as requested
  // (auto: none, the boundary Q/DQ become NPU kernels) or as --edge-quant-auto measured it.
  CompilerOptions compiler_options(const ModelAnalysis& final_analysis, const QuantConfig& final_config,
                                   const EdgeCheck& edges, const std::optional<EdgeProbe>& probe) const {
    CompilerOptions compiler = derive_compiler_options(final_analysis, formats_used(final_config));
    compiler.extra_flags = plugin_flags_;
    if (probe) {
      compiler.input_in_runtime = probe->advice == EdgeAdvice::kEnable && probe->inputs;
      compiler.output_in_runtime = probe->advice == EdgeAdvice::kEnable && probe->outputs;
    } else if (edges.checked) {
      compiler.input_in_runtime = edge_row(edges.requested).inputs;
      compiler.output_in_runtime = edge_row(edges.requested).outputs;
    }
    return compiler;
  }

  // For NPU devices and the VitisAI provider: vitisai_config.json (what the provider reads as
  // its config_file: the compiler options) and deployment.json (the provider options, cache
  // folder and key, the user's --ep-option values winning; device, formats, edges, compiler
  // options and why).
  void write_provider_config(const QuantConfig& final_config, const EdgeCheck& edges, SessionOptions& options,
                             CompileResult& result) {
    if (!device_->requires_power_of_two && !is_vitisai(params_.deployment.provider)) return;
    const std::string path = work_file("vitisai_config.json");
    std::map<std::string, std::string> provider_options = {
        {"config_file", fs::absolute(path).string()},
        {"cache_dir", fs::absolute(work_file("vitisai_cache")).string()},
        {"cache_key", fs::path(report_.final_model_path).stem().string()},
        {"log_level", "warning"}};
    for (const auto& [key, value] : params_.deployment.provider_options) provider_options[key] = value;
    std::vector<std::string> formats;
    for (FormatId id : formats_used(final_config)) formats.emplace_back(format_traits(id).name);
    const CompilerOptions& compiler = result.compiler;
    nlohmann::ordered_json edge_record = {{"requested", to_string(edges.requested)},
                                          {"float_inputs", edges.float_inputs},
                                          {"quantized_inputs", edges.quantized_inputs},
                                          {"outputs", edges.outputs},
                                          {"dequantized_outputs", edges.dequantized_outputs},
                                          {"matches", edges.matches}};
    if (result.edge_probe) {
      edge_record["auto"] = {{"advice", to_string(result.edge_probe->advice)},
                             {"reason", result.edge_probe->reason},
                             {"flag", result.edge_probe->flag}};
    }
    const nlohmann::ordered_json deployment = {
        {"provider", kVitisAi},
        {"provider_options", provider_options},
        {"device", {{"name", device_->name}, {"description", device_->description},
                    {"power_of_two_scales", device_->requires_power_of_two}}},
        {"model", fs::absolute(report_.final_model_path).string()},
        {"formats", formats},
        {"edge_quant", edge_record},
        {"compiler_options", {{"model", compiler.model_kind},
                              {"enable_f32_to_bf16_conversion", compiler.f32_to_bf16},
                              {"enable_f32_to_f16_conversion", compiler.f32_to_f16},
                              {"fe_args", compiler.fe_args()},
                              {"notes", compiler.notes}}},
    };
    write_file_atomically(path, vitisai_config_json(compiler, device_->name).dump(2) + "\n");
    const std::string record = work_file("deployment.json");
    write_file_atomically(record, deployment.dump(2) + "\n");
    report_.provider_config_path = result.provider_config_path = path;
    result.deployment_path = record;
    result.provider_cache_dir = provider_options["cache_dir"];
    if (is_vitisai(params_.deployment.provider)) options.provider_options = provider_options;
  }

  // --edge-quant-auto: the final model built with and without runtime edge quantization. With
  // the VitisAI provider each build reads its own config file; elsewhere the runtime's part is
  // emulated on the chosen provider.
  EdgeProbe probe_edges(Workbench& bench, const ModelAnalysis& final_analysis, const QuantConfig& final_config,
                        const EdgeCheck& edges, const SessionOptions& options) const {
    EdgeProbeParams p{.model_path = report_.final_model_path, .macs = &bench.macs(), .without = options,
                      .with = options, .emulate = !is_vitisai(params_.deployment.provider),
                      .work_dir = params_.setup.work_dir};
    if (!p.emulate) {
      CompilerOptions compiler = compiler_options(final_analysis, final_config, edges, std::nullopt);
      compiler.input_in_runtime = compiler.output_in_runtime = false;
      const auto write = [&](const std::string& file, SessionOptions& session) {
        write_file_atomically(work_file(file), vitisai_config_json(compiler, device_->name).dump(2) + "\n");
        session.provider_options["config_file"] = fs::absolute(work_file(file)).string();
        session.provider_options["cache_dir"] = fs::absolute(work_file("vitisai_cache")).string();
        session.provider_options["cache_key"] = fs::path(file).stem().string();
        for (const auto& [key, value] : params_.deployment.provider_options) session.provider_options[key] = value;
      };
      write("vitisai_config.edge_off.json", p.without);
      compiler.input_in_runtime = compiler.output_in_runtime = true;
      write("vitisai_config.edge_on.json", p.with);
    }
    EdgeProbe probe = probe_edge_quantization(p);
    if (probe.advice == EdgeAdvice::kDisable) {
      log_warning(report_.final_model_path + ": --edge-quant-auto: " + probe.reason + "; the edge flag is left off");
    }
    return probe;
  }

  void compile_phase(Workbench& bench, const QuantConfig& config) {
    begin("compile");
    CompileResult result{.provider = params_.deployment.provider, .device = device_->name};
    SessionOptions options = params_.deployment.session(GraphOptimization::kAll);
    const ModelAnalysis final_analysis = analyze_model(load_model(report_.final_model_path), report_.final_model_path);
    const QuantConfig final_config = load_config(report_.final_config_path);
    result.edges = edge_check(final_analysis);
    if (params_.edge_quant_auto) result.edge_probe = probe_edges(bench, final_analysis, final_config, result.edges, options);
    result.compiler = compiler_options(final_analysis, final_config, result.edges, result.edge_probe);
    write_provider_config(final_config, result.edges, options, result);
    const auto t0 = Clock::now();
    const Session final_session = Session::from_file(report_.final_model_path, options);
    result.session_ms = milliseconds_since(t0);
    // The saved graph stops at the extended level: the fusions into integer kernels are done,
    // the CPU-specific memory layout (NCHWc) is not, so the file stays portable.
    SessionOptions saving = options;
    saving.optimization = GraphOptimization::kExtended;
    saving.optimized_model_path = result.optimized_model_path = work_file("final.optimized.onnx");
    Session::from_file(report_.final_model_path, saving);
    result.partition = partition_report(bench.macs(), load_model(saving.optimized_model_path));
    result.coverage = final_analysis.coverage;
    result.islands = final_analysis.islands;
    result.time_vs_bf16 = bench.time_vs_full_bf16(final_config, *device_);
    result.start_time_vs_bf16 = bench.time_vs_full_bf16(config, *device_);
    result.macs = bench.macs().total;
    for (const auto& note : bench.macs().notes) log_warning(params_.setup.model_path + ": MAC estimate: " + note);
    end(std::move(result));
    if (params_.stage != GuideStage::kExec) return;

    begin("exec");
    ExecResult exec{.provider = params_.deployment.provider};
    const Session reference = Session::from_file(params_.setup.model_path, options);
    exec.fp32 = time_runs(reference, bench.sample(0), params_.latency_runs);
    exec.final_model = time_runs(final_session, bench.sample(0), params_.latency_runs);
    const CompileResult* compiled = report_.result<CompileResult>();
    if (compiled != nullptr && compiled->edge_probe && compiled->edge_probe->builds.size() == 2 &&
        !is_vitisai(params_.deployment.provider)) {
      exec.edges_on_host = time_edges_on_host(*compiled->edge_probe, work_file("edge_probe.onnx"), options,
                                              bench.sample(0), params_.latency_runs);
    }
    // The references a mixed-precision deployment is judged against: full BF16, and the full
    // INT8 starting config when the final model differs from it.
    const auto time_config = [&](const QuantConfig& timed, const std::string& file) {
      save_model(bench.build(timed), work_file(file));
      return time_runs(Session::from_file(work_file(file), options), bench.sample(0), params_.latency_runs);
    };
    exec.full_bf16 = time_config(*preset_config("BF16"), "exec_full_bf16.onnx");
    exec.integer_start = integer_only(config);
    if (exec.integer_start && !(final_config == config)) exec.full_int8 = time_config(config, "exec_full_int8.onnx");
    exec.mixed_final = mixed(final_config);
    end(std::move(exec));
  }

  // --- the other modes -------------------------------------------------------------------
  void dry() {
    begin("dry-run");
    DryRunReport r = dry_run({params_.setup, params_.deployment});
    end(std::move(r));
  }

  void requantize_mode() {
    if (params_.config_path.empty()) throw_bad_input("", "--mode requantize needs --config (the new config)");
    begin("requantize");
    RequantizeParams p{params_.setup, params_.deployment};
    p.config.path = params_.config_path;
    p.output_path = work_file("requantized.onnx");
    p.config_shape = params_.config_shape;
    RequantizeReport r = requantize(p);
    current_.status = pass_fail(r.new_verdict.pass);
    report_.pass = r.new_verdict.pass;
    report_.final_model_path = r.output_path;
    report_.final_config_path = r.config_path;
    report_.criterion = r.new_verdict.criterion;
    end(std::move(r));
  }

  const GuideParams& params_;
  const PhaseCallback& on_phase_;
  const DeviceProfile* device_ = nullptr;
  GuideReport report_;
  std::vector<std::vector<AlgorithmEntry>> recovery_ladder_;  // the proposed config's plan's
  std::vector<std::vector<AlgorithmEntry>> recovery_ladder_without_cle_;
  std::optional<AccuracyObjective> objective_;              // set once the workbench knows the task
  // --plugin: the workbench of the host's quantize and of validate/compile, the device with the
  // formats the plugin adds, and its compiler flags.
  std::optional<Workbench> plugin_bench_;
  std::vector<FormatId> plugin_formats_;
  DeviceProfile plugin_device_{};
  std::vector<std::string> plugin_flags_;
  GuidePhase current_;
  Clock::time_point phase_start_;
};

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t\r") - first + 1);
}

}  // namespace

const EnumNames<GuideMode>& guide_mode_names() {
  static constexpr EnumNames<GuideMode> names{kModeNames};
  return names;
}
const EnumNames<GuideStage>& guide_stage_names() {
  static constexpr EnumNames<GuideStage> names{kStageNames};
  return names;
}
const EnumNames<EdgeQuant>& edge_quant_names() {
  static constexpr EnumNames<EdgeQuant> names{kEdgeNames};
  return names;
}
const EnumNames<PhaseStatus>& phase_status_names() {
  static constexpr EnumNames<PhaseStatus> names{kStatusNames};
  return names;
}

GuideReport guide(const GuideParams& params, const PhaseCallback& on_phase) { return Guide(params, on_phase).run(); }

std::vector<std::pair<std::string, std::string>> read_env_script(const std::string& path) {
  std::istringstream lines(read_file(path, "environment script"));
  std::vector<std::pair<std::string, std::string>> variables;
  size_t number = 0;
  for (std::string line; std::getline(lines, line);) {
    ++number;
    line = trim(line);
    if (line.empty() || line[0] == '#') continue;
    if (line.rfind("export ", 0) == 0) line = trim(line.substr(7));
    const auto eq = line.find('=');
    const std::string name = eq == std::string::npos ? "" : line.substr(0, eq);
    const bool valid_name = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
                            name.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") ==
                                std::string::npos;
    if (!valid_name) {
      throw_bad_input(path, "line " + std::to_string(number) + ": '" + line +
                                "' is not NAME=VALUE (only variable assignments can be applied without a shell)");
    }
    std::string value = line.substr(eq + 1);
    if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') && value.back() == value.front()) {
      value = value.substr(1, value.size() - 2);
    }
    variables.emplace_back(name, value);
  }
  return variables;
}

}  // namespace mixprec
