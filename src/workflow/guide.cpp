// guide: SPEC's phases in order, each reported as it ends. Full mode:
//   analyze -> config (given, or proposed from the analysis and the device) -> calibrate ->
//   baseline (FP32 reference, cached) -> quantize -> validate -> explore (when asked and the
//   config misses) -> compile (session with every graph optimization on the chosen provider,
//   coverage and islands of the final model) -> exec (latency FP32 vs final, when asked).
// dry-run and requantize modes run mixprec/workflow.h and report it as phases.
#include "mixprec/guide.h"

#include <filesystem>
#include <optional>
#include <sstream>

#include "common/text.h"
#include "common/timing.h"
#include "mixprec/devices.h"
#include "mixprec/error.h"
#include "mixprec/log.h"
#include "mixprec/macs.h"
#include "mixprec/model_io.h"
#include "mixprec/run.h"
#include "mixprec/workflow_report.h"
#include "evaluation/workbench.h"

namespace mixprec {
namespace {
namespace fs = std::filesystem;
using text::fixed;

struct ModeRow {
  GuideMode mode;
  const char* name;
};
constexpr ModeRow kModes[] = {{GuideMode::kFull, "full"}, {GuideMode::kDryRun, "dry-run"}, {GuideMode::kRequantize, "requantize"}};
struct StageRow {
  GuideStage stage;
  const char* name;
};
constexpr StageRow kStages[] = {{GuideStage::kCompile, "compile"}, {GuideStage::kExec, "exec"}};
struct EdgeRow {
  EdgeQuant edge;
  const char* name;
  bool inputs, outputs;  // quantized at the device's edge
};
constexpr EdgeRow kEdges[] = {{EdgeQuant::kAuto, "auto", false, false},
                              {EdgeQuant::kNone, "none", false, false},
                              {EdgeQuant::kInput, "input", true, false},
                              {EdgeQuant::kOutput, "output", false, true},
                              {EdgeQuant::kBoth, "both", true, true}};
const EdgeRow& edge_row(EdgeQuant edge) {
  return *std::ranges::find_if(kEdges, [&](const EdgeRow& row) { return row.edge == edge; });
}
constexpr char kVitisAi[] = "VitisAIExecutionProvider";

// The starting config when the user gives none: one row per (device kind, architecture).
struct ProposalRow {
  bool power_of_two_device;
  bool transformer;
  const char* preset;
  const char* why;
};
constexpr ProposalRow kProposals[] = {
    {true, false, "XINT8",
     "a CNN on an NPU: int8 with power-of-two scales everywhere (the device requires them)"},
    {true, true, "XINT8",
     "a transformer on an NPU: power-of-two int8 is what the device runs fastest; attention and normalization "
     "inputs are the usual BF16 candidates, so add --explore if it misses"},
    {false, false, "U8S8",
     "a CNN on CPU: uint8 activations x per-channel int8 weights, placed so ONNX Runtime fuses every quantized op "
     "into integer kernels"},
    {false, true, "U8S8",
     "a transformer on CPU: uint8 x int8 MatMuls with per-channel weights, fused by ONNX Runtime; softmax and "
     "normalization stay float"},
};

std::string worst_line(const std::vector<OutputMetrics>& metrics) {
  double psnr = kMaxDb, pass = 1;
  std::optional<double> top1;
  for (const auto& m : metrics) {
    psnr = std::min(psnr, m.psnr_db);
    pass = std::min(pass, m.pass_rate);
    if (m.top1_agreement) top1 = std::min(top1.value_or(1.0), *m.top1_agreement);
  }
  std::string line = "worst output: PSNR " + fixed(psnr) + " dB, pass rate " + fixed(100 * pass, 3) + "%";
  if (top1) line += ", top-1 agreement " + fixed(100 * *top1, 2) + "%";
  return line;
}

LatencyStats time_runs(const Session& session, const NamedTensors& sample, size_t runs) {
  session.run(sample);  // warm-up: first-run allocations and lazy initialisation
  std::vector<double> times;
  for (size_t i = 0; i < runs; ++i) {
    const auto t0 = Clock::now();
    session.run(sample);
    times.push_back(milliseconds_since(t0));
  }
  return summarize_latency(std::move(times));
}

class Guide {
 public:
  Guide(const GuideParams& params, const PhaseCallback& on_phase) : params_(params), on_phase_(on_phase) {}

  GuideReport run() {
    WarningCollector warnings;
    report_.mode = params_.mode;
    device_ = &params_.deployment.profile();  // an unknown device fails before any work
    if (params_.setup.work_dir.empty()) throw_bad_input("", "guide needs a work dir");
    fs::create_directories(params_.setup.work_dir);
    switch (params_.mode) {
      case GuideMode::kFull: full(); break;
      case GuideMode::kDryRun: dry(); break;
      case GuideMode::kRequantize: requantize_mode(); break;
    }
    report_.warnings = warnings.warnings();
    return report_;
  }

 private:
  GuidePhase& begin(const std::string& name) {
    phase_start_ = Clock::now();
    current_ = GuidePhase{.name = name, .status = "done"};
    return current_;
  }
  // `seconds`: the phase's own time when it is measured inside a longer step.
  void end(std::optional<double> seconds = std::nullopt) {
    current_.seconds = seconds.value_or(seconds_since(phase_start_));
    report_.phases.push_back(current_);
    if (on_phase_) on_phase_(current_);
  }
  // A report's text, one phase line per line.
  void add_lines(const std::string& text) {
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) current_.lines.push_back(line);
  }
  std::string work_file(const std::string& name) const { return (fs::path(params_.setup.work_dir) / name).string(); }

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
    current_.lines.push_back(bench.stats_reused()
                                 ? "statistics reused from " + bench.stats_path()
                                 : bench.stats().data_description + " in " + fixed(bench.calibration_seconds()) +
                                       " s, saved to " + bench.stats_path());
    current_.lines.push_back(std::to_string(bench.stats().tensors.size()) + " tensors (min/max/histogram, streamed)");
    end(bench.calibration_seconds());

    begin("baseline");
    current_.lines.push_back("FP32 on CPU, " + bench.data_description() + ": " +
                             fixed(1000 * bench.reference_seconds() / static_cast<double>(bench.samples())) +
                             " ms per sample; outputs cached as the reference");
    end(bench.reference_seconds());

    begin("quantize");
    QuantConfig chosen = config;
    const Evaluation quantized = params_.config_path.empty() ? choose_calibration(bench, chosen) : bench.evaluate(chosen);
    report_.final_model_path = work_file("quantized.onnx");
    report_.final_config_path = work_file("quantized.config.json");
    save_model(*quantized.model, report_.final_model_path);
    save_config(chosen, report_.final_config_path);
    const auto formats = bench.node_formats(chosen, *device_);
    current_.lines.push_back(std::to_string(formats.size()) + " layers in " + format_names(formats_used(chosen)) + ", " +
                             std::to_string(bench.integer_layers(chosen).size()) + " of them integer");
    current_.lines.push_back("wrote " + report_.final_model_path + " and " + report_.final_config_path);
    end();

    begin("validate");
    current_.status = quantized.verdict.pass ? "pass" : "fail";
    current_.lines.push_back(worst_line(quantized.metrics));
    current_.lines.push_back(quantized.verdict.criterion);
    current_.lines.push_back(quantized.verdict.reason);
    report_.pass = quantized.verdict.pass;
    end();

    explore_phase(chosen, quantized);
    compile_phase(bench, chosen);

    const double time = report_.explore ? report_.explore->final_time_vs_bf16
                                        : bench.time_vs_full_bf16(chosen, *device_);
    report_.outcome = std::string(report_.pass ? "PASS: " : "FAIL: ") + report_.final_model_path +
                      (report_.pass ? " meets " : " misses ") + quantized.verdict.criterion +
                      "; expected compute time on " + device_->name + ": " + fixed(time) + "x full BF16";
    if (!report_.pass && !params_.explore) report_.outcome += ". Add --explore to search the layers to keep in higher precision";
  }

  // --strategy ladder: the ladder replaces config/quantize/validate/explore; the rung it keeps
  // goes through compile (and exec).
  void ladder_strategy() {
    begin("ladder");
    LadderReport r = ladder({params_.setup, params_.deployment});
    add_lines(ladder_text(r));
    report_.pass = r.chosen != "float";
    current_.status = report_.pass ? "pass" : "fail";
    report_.outcome = (report_.pass ? "PASS: " : "FAIL: ") + r.follow_up;
    const std::string chosen = r.chosen;
    if (report_.pass) {
      report_.final_model_path = r.chosen_model_path;
      report_.final_config_path = work_file("ladder_" + chosen + ".config.json");
      save_config(*preset_config(chosen), report_.final_config_path);
    }
    report_.ladder = std::move(r);
    end();
    if (!report_.pass) return;
    const QuantConfig config = *preset_config(chosen);
    Workbench bench = workbench(config);  // the ladder's statistics: no second calibration
    compile_phase(bench, config);
  }

  // A proposed config tries every calibration method its formats allow (power-of-two ones on
  // devices that need them) on the same statistics, and keeps the one that does best: one
  // rewrite and one evaluation each, no new calibration.
  Evaluation choose_calibration(Workbench& bench, QuantConfig& config) {
    std::optional<Evaluation> best;
    CalibMethod best_method = config.extra.calib_method;
    std::string tried;
    for (const auto& method : all_calib_methods()) {
      if (device_->requires_power_of_two != method.power_of_two) continue;
      QuantConfig trial = config;
      trial.extra.calib_method = method.method;
      Evaluation e = bench.evaluate(trial);
      tried += (tried.empty() ? "" : ", ") + std::string(method.name) + " " + fixed(e.psnr_db) + " dB";
      if (!best || better(e, *best)) {
        best = std::move(e);
        best_method = method.method;
      }
    }
    config.extra.calib_method = best_method;
    current_.lines.push_back("calibration methods on the same statistics: " + tried + "; kept " +
                             calib_method_traits(best_method).name);
    return std::move(*best);
  }

  // Pass first, then the task's own measure (top-1 agreement for classes, worst PSNR otherwise).
  bool better(const Evaluation& a, const Evaluation& b) const {
    if (a.verdict.pass != b.verdict.pass) return a.verdict.pass;
    const auto top1 = [](const Evaluation& e) {
      double worst = 2;
      for (const auto& m : e.metrics) worst = std::min(worst, m.top1_agreement.value_or(2.0));
      return worst;
    };
    if (top1(a) != top1(b)) return top1(a) > top1(b);
    return a.psnr_db > b.psnr_db;
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
    current_.lines.push_back("task " + std::string(to_string(analysis.task.type)) + ": " + analysis.task.reason);
    std::string ops;
    for (const auto& op : analysis.compute_ops) ops += (ops.empty() ? "" : ", ") + std::to_string(op.total) + " " + op.op_type;
    current_.lines.push_back(std::to_string(analysis.coverage.compute_nodes) + " compute nodes (" + ops + "), " +
                             std::to_string(analysis.node_count) + " nodes");
    for (const auto& input : analysis.inputs) {
      current_.lines.push_back("input " + input.name + " " + input.dtype + " " + dims_to_string(input.shape));
    }
    for (const auto& output : analysis.outputs) {
      current_.lines.push_back("output " + output.name + " " + output.dtype + " " + dims_to_string(output.shape));
    }
    end();
    return analysis;
  }

  QuantConfig choose_config(const ModelAnalysis& analysis) {
    begin("config");
    QuantConfig config;
    if (!params_.config_path.empty()) {
      config = load_config(params_.config_path);
      current_.lines.push_back("given: " + params_.config_path);
    } else {
      const bool pow2 = device_->requires_power_of_two;
      const bool transformer = analysis.architecture.type == Architecture::kTransformer;
      for (const auto& row : kProposals) {
        if (row.power_of_two_device == pow2 && row.transformer == transformer) {
          config = *preset_config(row.preset);
          current_.lines.push_back(std::string("proposed ") + row.preset + " for " + device_->name + ": " + row.why);
        }
      }
    }
    if (const auto why = device_rejects(*device_, formats_used(config))) {
      throw_bad_input(params_.config_path.empty() ? params_.setup.model_path : params_.config_path, *why);
    }
    current_.lines.push_back("formats: " + format_names(formats_used(config)));
    end();
    return config;
  }

  // The workbench of the phases after config: accuracy on CPU (the workbench's own rule), the
  // statistics in the work dir, shared with explore, the ladder and a rerun.
  Workbench workbench(const QuantConfig& config) const {
    return Workbench(params_.setup, params_.deployment,
                     {.prepare = prepare_options(config),
                      .calibration_samples = static_cast<size_t>(config.extra.num_calib_samples)});
  }

  void explore_phase(const QuantConfig& config, const Evaluation& quantized) {
    begin("explore");
    if (!params_.explore) {
      current_.status = "not run";
      current_.lines.push_back(quantized.verdict.pass ? "not needed: the config meets the criterion"
                                                      : "the config misses the criterion: add --explore");
      end();
      return;
    }
    if (quantized.verdict.pass) {
      current_.status = "skipped";
      current_.lines.push_back("the config already meets the criterion: nothing to lift");
      end();
      return;
    }
    SearchOptions search = params_.search;
    search.base_config = config;
    ExploreResult r = explore({params_.setup, params_.deployment, search}, [this](const ExploreStep& s) {
      current_.lines.push_back("step " + std::to_string(s.index) + " " + s.layer + ": " + to_string(s.decision) + ", PSNR " +
                               fixed(s.psnr_db) + " dB, pass " + fixed(100 * s.pass_rate, 3) + "%, best so far " +
                               std::to_string(s.lifted_layers) + " lifted, " + fixed(s.seconds) + " s");
    });
    current_.status = r.final_verdict.pass ? "pass" : "fail";
    current_.lines.push_back("stopped: " + r.stop_reason);
    // A long list goes to final_config.json; the report names the first few.
    constexpr size_t kLayersShown = 12;
    std::string layers;
    for (size_t k = 0; k < r.lifted_layers.size() && k < kLayersShown; ++k) {
      layers += (layers.empty() ? "" : ", ") + r.lifted_layers[k];
    }
    if (r.lifted_layers.size() > kLayersShown) {
      layers += ", ... (" + std::to_string(r.lifted_layers.size() - kLayersShown) + " more in " + r.final_config_path + ")";
    }
    current_.lines.push_back(std::to_string(r.lifted_layers.size()) + " of " + std::to_string(r.compute_layers) +
                             " layers lifted to " + search.lift + (layers.empty() ? "" : ": " + layers));
    if (!r.final_metrics.empty()) current_.lines.push_back(worst_line(r.final_metrics));
    current_.lines.push_back(std::to_string(r.evaluations) + " evaluations, ranking " + to_string(search.ranking) +
                             ", search " + to_string(search.search) +
                             "; ledger " + r.ledger_path);
    report_.final_model_path = r.final_model_path;
    report_.final_config_path = r.final_config_path;
    report_.pass = r.final_verdict.pass;
    report_.explore = std::move(r);
    end();
  }

  static bool is_vitisai(const std::string& provider) { return provider == "VitisAI" || provider == kVitisAi; }

  // The edge-quantization request against what the final model does; lines, and a warning on
  // a mismatch.
  nlohmann::ordered_json edge_check(const ModelAnalysis& final_analysis) {
    int64_t float_inputs = 0;
    for (const auto& input : final_analysis.inputs) float_inputs += input.dtype == "float32" ? 1 : 0;
    const int64_t outputs = static_cast<int64_t>(final_analysis.outputs.size());
    const int64_t q_in = final_analysis.quantization.edge_quantized_inputs;
    const int64_t dq_out = final_analysis.quantization.edge_dequantized_outputs;
    EdgeQuant requested = params_.edge_quant;
    if (requested == EdgeQuant::kAuto) {  // what the model does: some edge quantized counts
      requested = q_in > 0 ? (dq_out > 0 ? EdgeQuant::kBoth : EdgeQuant::kInput)
                           : (dq_out > 0 ? EdgeQuant::kOutput : EdgeQuant::kNone);
    }
    const EdgeRow& row = edge_row(requested);
    const bool checked = params_.edge_quant != EdgeQuant::kAuto;
    const bool inputs_match = !checked || (row.inputs ? q_in == float_inputs : q_in == 0);
    const bool outputs_match = !checked || (row.outputs ? dq_out == outputs : dq_out == 0);
    current_.lines.push_back("edge quantization: " + std::string(checked ? "requested " : "auto, recorded as ") +
                             row.name + "; the model quantizes " +
                             std::to_string(q_in) + " of " + std::to_string(float_inputs) +
                             " float inputs with a Q and produces " + std::to_string(dq_out) + " of " +
                             std::to_string(outputs) + " outputs with a DQ" +
                             (inputs_match && outputs_match ? "" : ": MISMATCH"));
    if (!inputs_match || !outputs_match) {
      log_warning(report_.final_model_path + ": --edge-quant " + row.name + " but the model " +
                  (!inputs_match ? "quantizes " + std::to_string(q_in) + " of " + std::to_string(float_inputs) + " inputs"
                                 : "dequantizes " + std::to_string(dq_out) + " of " + std::to_string(outputs) +
                                       " outputs") +
                  " at its edge; the host must " + (row.inputs ? "quantize" : "pass float to") +
                  " the inputs and " + (row.outputs ? "dequantize" : "read float from") + " the outputs accordingly");
    }
    return {{"requested", row.name},          {"float_inputs", float_inputs}, {"quantized_inputs", q_in},
            {"outputs", outputs},             {"dequantized_outputs", dq_out},
            {"matches", inputs_match && outputs_match}};
  }

  // vitisai_config.json for NPU devices and the VitisAI provider: provider options (cache
  // folder and key; the user's --ep-option values win), device, formats and edge quantization.
  void write_provider_config(const QuantConfig& final_config, const nlohmann::ordered_json& edges,
                             SessionOptions& options) {
    if (!device_->requires_power_of_two && !is_vitisai(params_.deployment.provider)) return;
    std::map<std::string, std::string> provider_options = {
        {"cache_dir", fs::absolute(work_file("vitisai_cache")).string()},
        {"cache_key", fs::path(report_.final_model_path).stem().string()},
        {"log_level", "warning"}};
    for (const auto& [key, value] : params_.deployment.provider_options) provider_options[key] = value;
    std::vector<std::string> formats;
    for (FormatId id : formats_used(final_config)) formats.emplace_back(format_traits(id).name);
    const nlohmann::ordered_json config = {
        {"provider", kVitisAi},
        {"provider_options", provider_options},
        {"device", {{"name", device_->name}, {"description", device_->description},
                    {"power_of_two_scales", device_->requires_power_of_two}}},
        {"model", fs::absolute(report_.final_model_path).string()},
        {"formats", formats},
        {"edge_quant", edges},
    };
    const std::string path = work_file("vitisai_config.json");
    write_file_atomically(path, config.dump(2) + "\n");
    report_.provider_config_path = path;
    current_.lines.push_back("provider config: " + path + " (VitisAI, cache " + provider_options["cache_dir"] + ")");
    if (is_vitisai(params_.deployment.provider)) options.provider_options = provider_options;
  }

  void compile_phase(Workbench& bench, const QuantConfig& config) {
    begin("compile");
    SessionOptions options = params_.deployment.session(GraphOptimization::kAll);
    const ModelAnalysis final_analysis = analyze_model(load_model(report_.final_model_path), report_.final_model_path);
    const QuantConfig final_config = load_config(report_.final_config_path);
    write_provider_config(final_config, edge_check(final_analysis), options);
    const auto t0 = Clock::now();
    const Session final_session = Session::from_file(report_.final_model_path, options);
    const double build_ms = 1000 * seconds_since(t0);
    // The saved graph stops at the extended level: the fusions into integer kernels are done,
    // the CPU-specific memory layout (NCHWc) is not, so the file stays portable.
    SessionOptions saving = options;
    saving.optimization = GraphOptimization::kExtended;
    saving.optimized_model_path = work_file("final.optimized.onnx");
    Session::from_file(report_.final_model_path, saving);
    current_.lines.push_back("session on " + params_.deployment.provider + " with every graph optimization: " +
                             fixed(build_ms, 1) + " ms; optimized graph " + saving.optimized_model_path);
    partition_lines(bench, load_model(saving.optimized_model_path));
    const Coverage& c = final_analysis.coverage;
    current_.lines.push_back("compute nodes: " + std::to_string(c.quantized) + " integer, " + std::to_string(c.bf16) +
                             " bf16, " + std::to_string(c.fp16) + " fp16, " + std::to_string(c.float32) +
                             " float32 of " + std::to_string(c.compute_nodes));
    const IslandSummary& i = final_analysis.islands;
    current_.lines.push_back(std::to_string(i.islands.size()) + " islands: " + std::to_string(i.quantized_islands) +
                             " integer, " + std::to_string(i.bf16_islands) + " bf16, " +
                             std::to_string(i.fp16_islands) + " fp16, " + std::to_string(i.float_islands) +
                             " float");
    current_.lines.push_back("expected compute time on " + std::string(device_->name) + ": " +
                             fixed(bench.time_vs_full_bf16(final_config, *device_)) + "x full BF16, " +
                             fixed(bench.time_vs_full_bf16(config, *device_)) + "x for the starting config (" +
                             fixed(bench.macs().total / 1e6, 1) + " M MACs, nominal device speeds)");
    for (const auto& note : bench.macs().notes) log_warning(params_.setup.model_path + ": MAC estimate: " + note);
    end();
    if (params_.stage != GuideStage::kExec) return;

    begin("exec");
    const Session reference = Session::from_file(params_.setup.model_path, options);
    const LatencyStats fp32 = time_runs(reference, bench.sample(0), params_.latency_runs);
    const LatencyStats final_latency = time_runs(final_session, bench.sample(0), params_.latency_runs);
    current_.lines.push_back("FP32   min " + fixed(fp32.min_ms) + " ms, median " + fixed(fp32.median_ms) + " ms (" +
                             std::to_string(fp32.runs) + " runs on " + params_.deployment.provider + ")");
    current_.lines.push_back("final  min " + fixed(final_latency.min_ms) + " ms, median " +
                             fixed(final_latency.median_ms) + " ms");
    const double speedup = final_latency.median_ms > 0 ? fp32.median_ms / final_latency.median_ms : 0;
    current_.lines.push_back("speed-up " + fixed(speedup) + "x (median)");
    if (speedup < 1) {
      current_.lines.push_back("red flag: slower than FP32 on " + params_.deployment.provider +
                               ". BF16/FP16 layers run here as emulation (cast pairs), and int8 Q/DQ that the "
                               "provider does not fuse into integer kernels only add work; time it on the device's "
                               "own provider (--ep)");
    }
    // The references a mixed-precision deployment is judged against: full BF16, and the full
    // INT8 starting config when the final model differs from it.
    const auto time_config = [&](const QuantConfig& timed, const std::string& file) {
      save_model(bench.build(timed), work_file(file));
      return time_runs(Session::from_file(work_file(file), options), bench.sample(0), params_.latency_runs);
    };
    const LatencyStats bf16 = time_config(*preset_config("BF16"), "exec_full_bf16.onnx");
    current_.lines.push_back("full BF16  min " + fixed(bf16.min_ms) + " ms, median " + fixed(bf16.median_ms) + " ms");
    const auto integer_only = [](const QuantConfig& checked) {
      const auto formats = formats_used(checked);
      return !formats.empty() && std::ranges::all_of(formats, [](FormatId f) { return format_traits(f).is_integer; });
    };
    const auto mixed = [](const QuantConfig& checked) {
      const auto formats = formats_used(checked);
      return std::ranges::any_of(formats, [](FormatId f) { return format_traits(f).is_integer; }) &&
             std::ranges::any_of(formats, [](FormatId f) { return !format_traits(f).is_integer; });
    };
    if (integer_only(config)) {
      const LatencyStats int8 = final_config == config ? final_latency : time_config(config, "exec_full_int8.onnx");
      if (!(final_config == config)) {
        current_.lines.push_back("full INT8  min " + fixed(int8.min_ms) + " ms, median " + fixed(int8.median_ms) + " ms");
      }
      if (int8.median_ms > bf16.median_ms) {
        current_.lines.push_back("red flag: full INT8 (" + fixed(int8.median_ms) + " ms) is slower than full BF16 (" +
                                 fixed(bf16.median_ms) + " ms) on " + params_.deployment.provider +
                                 ": its Q/DQ are not fused into integer kernels here (see the compile phase's share)");
      }
    }
    if (mixed(final_config) && final_latency.median_ms > bf16.median_ms) {
      current_.lines.push_back("red flag: the mixed model (" + fixed(final_latency.median_ms) +
                               " ms) is slower than full BF16 (" + fixed(bf16.median_ms) + " ms) on " +
                               params_.deployment.provider +
                               ": each INT8/BF16 boundary adds conversions; fewer, larger islands or full BF16 may be "
                               "the better deployment");
    }
    end();
  }

  // Which share of the model's MACs the runtime's kernels run in integer, and what stayed float.
  void partition_lines(Workbench& bench, const onnx::ModelProto& optimized) {
    const PartitionReport p = partition_report(bench.macs(), optimized);
    std::string kernels;
    for (const auto& [op, count] : p.integer_kernels) {
      kernels += (kernels.empty() ? "" : ", ") + std::to_string(count) + " " + op;
    }
    current_.lines.push_back(params_.deployment.provider + " kernels: " + fixed(100 * p.integer_share(), 1) +
                             "% of MACs in integer kernels" + (kernels.empty() ? "" : " (" + kernels + ")") + ", " +
                             std::to_string(p.float_nodes.size()) + " compute nodes in float; " +
                             std::to_string(p.quantize_linear) + " Q / " + std::to_string(p.dequantize_linear) +
                             " DQ left");
    if (!p.float_nodes.empty()) {
      constexpr size_t kShown = 6;
      std::string names;
      for (size_t i = 0; i < p.float_nodes.size() && i < kShown; ++i) names += (i ? ", " : "") + p.float_nodes[i];
      if (p.float_nodes.size() > kShown) names += ", ...";
      current_.lines.push_back("float compute nodes: " + names);
    }
    if (p.unmatched_macs > 0) {
      current_.lines.push_back(fixed(100 * p.unmatched_macs / (p.integer_macs + p.float_macs + p.unmatched_macs), 1) +
                               "% of MACs in nodes the runtime merged away (not attributed)");
    }
  }

  // --- the other modes -------------------------------------------------------------------
  void dry() {
    begin("dry-run");
    DryRunReport r = dry_run({params_.setup, params_.deployment});
    add_lines(dry_run_text(r));
    report_.outcome = "recommendation: " + r.recommendation.action + ": " + r.recommendation.reason;
    write_file_atomically(work_file("dry_run.json"), dry_run_to_json(r).dump(2));
    report_.dry_run = std::move(r);
    end();
  }

  void requantize_mode() {
    if (params_.config_path.empty()) throw_bad_input("", "--mode requantize needs --config (the new config)");
    begin("requantize");
    RequantizeParams p{params_.setup, params_.deployment};
    p.config.path = params_.config_path;
    p.output_path = work_file("requantized.onnx");
    RequantizeReport r = requantize(p);
    add_lines(requantize_text(r));
    current_.status = r.new_verdict.pass ? "pass" : "fail";
    report_.pass = r.new_verdict.pass;
    report_.final_model_path = r.output_path;
    report_.final_config_path = r.config_path;
    report_.outcome = std::string(r.new_verdict.pass ? "PASS: " : "FAIL: ") + r.output_path + "; worst PSNR " +
                      (r.psnr_delta_db >= 0 ? "+" : "") + fixed(r.psnr_delta_db) + " dB against the previous quantization";
    report_.requantize = std::move(r);
    end();
  }

  const GuideParams& params_;
  const PhaseCallback& on_phase_;
  const DeviceProfile* device_ = nullptr;
  GuideReport report_;
  GuidePhase current_;
  Clock::time_point phase_start_;
};

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t\r") - first + 1);
}

}  // namespace

const char* to_string(GuideMode mode) {
  for (const auto& row : kModes) {
    if (row.mode == mode) return row.name;
  }
  return "?";
}
const char* to_string(GuideStage stage) {
  for (const auto& row : kStages) {
    if (row.stage == stage) return row.name;
  }
  return "?";
}
std::optional<GuideMode> guide_mode_from_name(const std::string& name) {
  for (const auto& row : kModes) {
    if (name == row.name) return row.mode;
  }
  return std::nullopt;
}
std::optional<GuideStage> guide_stage_from_name(const std::string& name) {
  for (const auto& row : kStages) {
    if (name == row.name) return row.stage;
  }
  return std::nullopt;
}

const char* to_string(EdgeQuant edge) { return edge_row(edge).name; }
std::optional<EdgeQuant> edge_quant_from_name(std::string_view name) {
  for (const auto& row : kEdges) {
    if (name == row.name) return row.edge;
  }
  return std::nullopt;
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
