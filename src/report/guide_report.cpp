// guide's typed phase results as lines for people. One function per phase result type; the
// visitor in guide_phase_lines picks it.
#include "mixprec/guide_report.h"

#include <cstdio>
#include <sstream>

#include "common/text.h"
#include "mixprec/jobs_report.h"
#include "mixprec/metrics_report.h"
#include "mixprec/report.h"
#include "mixprec/workflow_report.h"

namespace mixprec {
namespace {
using text::fixed;
using Lines = std::vector<std::string>;
using Json = nlohmann::ordered_json;

// A report's text, one line per line.
void add_text(Lines& lines, const std::string& text) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
}

// The worst output's numbers; top-1 only where outputs have classes (not regression/detection).
std::string worst_line(const std::vector<OutputMetrics>& metrics, TaskType task) {
  double psnr = kMaxDb, pass = 1;
  std::optional<double> top1;
  for (const auto& m : metrics) {
    psnr = std::min(psnr, m.psnr_db);
    pass = std::min(pass, m.pass_rate);
    if (m.top1_agreement && task != TaskType::kRegression && task != TaskType::kDetection) {
      top1 = std::min(top1.value_or(1.0), *m.top1_agreement);
    }
  }
  std::string line = "worst output: PSNR " + fixed(psnr) + " dB, pass rate " + fixed(100 * pass, 3) + "%";
  if (top1) line += ", top-1 agreement " + fixed(100 * *top1, 2) + "%";
  return line;
}

std::string latency_line(const std::string& label, const LatencyStats& l) {
  return label + "min " + fixed(l.min_ms) + " ms, median " + fixed(l.median_ms) + " ms";
}

// The first `shown` names, then how many more and where they are.
std::string names_shown(const std::vector<std::string>& names, size_t shown, const std::string& where) {
  std::vector<std::string> head(names.begin(), names.begin() + static_cast<long>(std::min(shown, names.size())));
  std::string out = text::join(head);
  if (names.size() > shown) out += ", ... (" + std::to_string(names.size() - shown) + " more" + where + ")";
  return out;
}

Lines lines_of(const AnalyzeResult& r) {
  const ModelAnalysis& a = r.analysis;
  Lines lines;
  lines.push_back("task " + std::string(to_string(a.task.type)) + ": " + a.task.reason);
  lines.push_back("architecture " + std::string(to_string(a.architecture.type)) + ": " + a.architecture.reason);
  std::vector<std::string> ops;
  for (const auto& op : a.compute_ops) ops.push_back(std::to_string(op.total) + " " + op.op_type);
  lines.push_back(std::to_string(a.coverage.compute_nodes) + " compute nodes (" + text::join(ops) + "), " +
                  std::to_string(a.node_count) + " nodes");
  for (const auto& input : a.inputs) lines.push_back("input " + input.name + " " + input.dtype + " " + dims_to_string(input.shape));
  for (const auto& output : a.outputs) {
    lines.push_back("output " + output.name + " " + output.dtype + " " + dims_to_string(output.shape));
  }
  return lines;
}

Lines lines_of(const ConfigResult& r) {
  Lines lines;
  if (!r.given_path.empty()) {
    lines.push_back("given: " + r.given_path);
  } else if (r.plan) {
    const QuantPlan& plan = *r.plan;
    std::string why;
    for (const auto& d : plan.decisions) {
      if (d.decision == "preset") why = d.reason;
    }
    lines.push_back("proposed " + plan.preset + " for " + plan.device + " (plan target " + to_string(plan.target) +
                    ", " + to_string(plan.architecture) + "): " + why);
    lines.push_back("calibration: " + std::string(calib_method_traits(plan.calib_method).name) + " first, up to " +
                    std::to_string(plan.calibration_samples) + " samples (quantize tries every method the device allows)");
    if (!plan.higher_precision_nodes.empty()) {
      lines.push_back(plan.higher_precision_format + ": " + names_shown(plan.higher_precision_nodes, 6, "") +
                      " (attention MatMuls)");
    }
    if (!plan.exclude_node_names.empty()) {
      lines.push_back("kept float: " + names_shown(plan.exclude_node_names, 6, "") + " (attention MatMuls)");
    }
    for (const auto& risk : plan.risks) lines.push_back("risk (" + risk.severity + "): " + risk.risk);
    if (plan.architecture == Architecture::kUnknown) {
      lines.push_back("architecture unknown: this is the plan's draft; review the config or give --config");
    }
  }
  lines.push_back("formats: " + format_names(r.formats));
  return lines;
}

Lines lines_of(const CalibrateResult& r, double seconds) {
  return {r.reused ? "statistics reused from " + r.stats_path
                   : r.data_description + " in " + fixed(seconds) + " s, saved to " + r.stats_path,
          std::to_string(r.tensors) + " tensors (min/max/histogram, streamed)"};
}

Lines lines_of(const BaselineResult& r) {
  const double per_sample = r.samples ? 1000 * r.seconds / static_cast<double>(r.samples) : 0;
  return {"FP32 on CPU, " + r.data_description + ": " + fixed(per_sample) + " ms per sample; outputs cached as the reference"};
}

Lines lines_of(const QuantizeResult& r) {
  Lines lines;
  if (!r.methods.empty()) {
    std::vector<std::string> tried;
    for (const auto& m : r.methods) tried.push_back(std::string(calib_method_traits(m.method).name) + " " + fixed(m.psnr_db) + " dB");
    lines.push_back("calibration methods on the same statistics: " + text::join(tried) + "; kept " +
                    calib_method_traits(r.kept).name);
  }
  lines.push_back(std::to_string(r.layers) + " layers in " + format_names(r.formats) + ", " +
                  std::to_string(r.integer_layers) + " of them integer");
  lines.push_back("wrote " + r.model_path + " and " + r.config_path);
  return lines;
}

std::string algorithms_label(const std::vector<std::string>& algorithms) {
  return algorithms.empty() ? "no algorithm" : text::join(algorithms, " + ");
}

Lines lines_of(const RecoverResult& r) {
  if (!r.skipped.empty()) return {r.skipped};
  Lines lines;
  const double start = r.trials.empty() ? 0 : r.trials.front().psnr_db;
  for (size_t i = 0; i < r.trials.size(); ++i) {
    const RecoveryTrial& t = r.trials[i];
    std::string line = algorithms_label(t.algorithms) + (i == 0 ? " (the quantize phase's)" : "") + ": PSNR " +
                       fixed(t.psnr_db) + " dB";
    if (i > 0) line += " (" + std::string(t.psnr_db >= start ? "+" : "") + fixed(t.psnr_db - start) + ")";
    if (t.top1) line += ", top-1 agreement " + fixed(100 * *t.top1, 2) + "%";
    line += std::string(", ") + (t.verdict.pass ? "pass" : "fail") + ", " + fixed(t.seconds) + " s";
    std::vector<std::string> parts;
    if (t.learned_layers + t.reused_layers > 0) {
      parts.push_back("layers learned " + std::to_string(t.learned_layers) + ", reused " +
                      std::to_string(t.reused_layers) + " in " + fixed(t.reconstruction_seconds) + " s");
    }
    if (t.corrected_biases > 0) {
      parts.push_back(std::to_string(t.corrected_biases) + " biases corrected" +
                      (t.reused_biases ? " (" + std::to_string(t.reused_biases) + " reused)" : "") + " in " +
                      fixed(t.bias_correction_seconds) + " s");
    }
    if (!parts.empty()) line += " (" + text::join(parts, "; ") + ")";
    lines.push_back(line);
  }
  if (r.kept == 0) {
    lines.push_back("kept the quantize phase's config: no rung did better");
  } else {
    lines.push_back("kept " + algorithms_label(r.trials.at(r.kept).algorithms) + ": wrote " + r.model_path + " and " +
                    r.config_path);
  }
  return lines;
}

Lines lines_of(const ValidateResult& r) { return {worst_line(r.metrics, r.task), r.verdict.criterion, r.verdict.reason}; }

Lines lines_of(const ExplorePhaseResult& r) {
  if (!r.requested) {
    return {r.needed ? "the config misses the criterion: add --explore" : "not needed: the config meets the criterion"};
  }
  if (!r.result) return {"the config already meets the criterion: nothing to lift"};
  const ExploreResult& e = *r.result;
  Lines lines;
  for (const auto& s : e.steps) {
    lines.push_back("step " + std::to_string(s.index) + " " + s.layer + ": " + to_string(s.decision) +
                    (s.sweep > 1 ? " (retry)" : "") + ", PSNR " + fixed(s.psnr_db) + " dB, pass " +
                    fixed(100 * s.pass_rate, 3) + "%, best so far " + std::to_string(s.lifted_layers) + " lifted, " +
                    fixed(s.seconds) + " s");
  }
  lines.push_back("stopped: " + e.stop_reason);
  // A long list goes to final_config.json; the report names the first few.
  constexpr size_t kLayersShown = 12;
  // A ladder's layers each name their rung's format.
  std::vector<std::string> names = e.lifted_layers;
  for (size_t i = 0; e.rungs.size() > 1 && i < names.size(); ++i) names[i] += " (" + e.lifted_formats.at(i) + ")";
  const std::string layers = names_shown(names, kLayersShown, " in " + e.final_config_path);
  lines.push_back(std::to_string(e.lifted_layers.size()) + " of " + std::to_string(e.compute_layers) +
                  " layers lifted to " + r.search.lift + (e.rungs.size() > 1 ? " (" + lifted_per_rung(e) + ")" : "") +
                  (layers.empty() ? "" : ": " + layers));
  if (!e.final_metrics.empty()) lines.push_back(worst_line(e.final_metrics, e.task.type));
  lines.push_back(std::to_string(e.evaluations) + " evaluations, ranking " + to_string(r.search.ranking) + ", search " +
                  to_string(r.search.search) + "; ledger " + e.ledger_path);
  if (e.runtime_check) {
    lines.push_back(e.runtime_check->runtime + (e.runtime_check->ok ? " loads the final model"
                                                                    : " cannot load the final model: " + e.runtime_check->detail));
  }
  return lines;
}

Lines lines_of(const PluginResult& r) {
  const PluginManifest& m = r.manifest;
  Lines lines;
  lines.push_back("plugin " + m.name + " " + m.version + (m.description.empty() ? "" : ": " + m.description) + " (" +
                  m.dir + ")");
  lines.push_back("arguments: " + (r.args.empty() ? std::string("none") : text::join(r.args, " ")));
  if (!m.formats.empty()) lines.push_back("formats it adds: " + text::join(m.formats));
  if (!m.compiler_flags.empty()) lines.push_back("compiler flags it adds: " + m.compiler_flags);
  for (const auto& library : r.run.custom_op_libraries) lines.push_back("custom ops registered: " + library);
  lines.push_back("returned " + r.run.model_path + " (config " + r.run.config_path + ") in " + fixed(r.run.seconds, 2) +
                  " s, " + std::to_string(r.host_quantizations) + " quantization(s) through mixprec");
  return lines;
}

Json json_of(const PluginResult& r) {
  const PluginManifest& m = r.manifest;
  return {{"name", m.name}, {"version", m.version}, {"dir", m.dir}, {"args", r.args},
          {"formats", m.formats}, {"compiler_flags", m.compiler_flags}, {"model", r.run.model_path},
          {"config", r.run.config_path}, {"seconds", r.run.seconds}, {"host_quantizations", r.host_quantizations},
          {"custom_op_libraries", r.run.custom_op_libraries}};
}

// --edge-quant-auto: the boundaries, the two builds as VITIS.md's table, the advice.
void lines_of_probe(const EdgeProbe& probe, Lines& lines) {
  lines.push_back("edge quantization auto: " + std::string(to_string(probe.advice)) +
                  (probe.advice == EdgeAdvice::kEnable ? " " + probe.flag : "") + ": " + probe.reason);
  for (const EdgeBoundary& b : probe.boundaries) {
    std::string params = b.codes;
    if (b.scale.size() == 1) params += " scale " + fixed(b.scale[0], 8);
    if (b.scale.size() > 1) params += " " + std::to_string(b.scale.size()) + " scales along axis " + std::to_string(b.axis);
    if (b.zero_point.size() == 1) params += " zero point " + std::to_string(b.zero_point[0]);
    lines.push_back(std::string("  ") + (b.input ? "Q on input '" : "DQ on output '") + b.tensor + "' (" + b.node +
                    "): " + params + (b.excluded.empty() ? "" : "; stays: " + b.excluded));
  }
  if (probe.builds.empty()) return;
  lines.push_back("  counted by " + probe.counted_by);
  const auto row = [](const std::string& a, const std::string& b, const std::string& c, const std::string& d) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "  %-28s %8s %18s %21s", a.c_str(), b.c_str(), c.c_str(), d.c_str());
    return std::string(buf);
  };
  lines.push_back(row("configuration", "kernels", "edge Q/DQ kernels", "edge Q/DQ in runtime"));
  for (const EdgeBuild& b : probe.builds) {
    lines.push_back(row(b.configuration, std::to_string(b.kernels), std::to_string(b.edge_kernels),
                        std::to_string(b.runtime_edges)));
  }
  for (const EdgeBuild& b : probe.builds) {
    for (const auto& node : b.fallbacks) lines.push_back("  " + b.configuration + ": float fallback " + node);
  }
}

Lines lines_of(const CompileResult& r) {
  Lines lines;
  const EdgeCheck& e = r.edges;
  lines.push_back("edge quantization: " + std::string(e.checked ? "requested " : "auto, recorded as ") +
                  to_string(e.requested) + "; the model quantizes " + std::to_string(e.quantized_inputs) + " of " +
                  std::to_string(e.float_inputs) + " float inputs with a Q and produces " +
                  std::to_string(e.dequantized_outputs) + " of " + std::to_string(e.outputs) + " outputs with a DQ" +
                  (e.matches ? "" : ": MISMATCH"));
  if (r.edge_probe) lines_of_probe(*r.edge_probe, lines);
  if (!r.provider_config_path.empty()) {
    const CompilerOptions& c = r.compiler;
    lines.push_back("compiler options (" + c.model_kind + "): enable_f32_to_bf16_conversion=" +
                    (c.f32_to_bf16 ? "true" : "false") + (c.f32_to_f16 ? " enable_f32_to_f16_conversion=true" : "") +
                    " fe_args=\"" + c.fe_args() + "\"");
    for (const auto& note : c.notes) lines.push_back("  note: " + note);
    lines.push_back("provider config: " + r.provider_config_path + " (VitisAI config_file; deployment record " +
                    r.deployment_path + ", cache " + r.provider_cache_dir + ")");
  }
  lines.push_back("session on " + r.provider + " with every graph optimization: " + fixed(r.session_ms, 1) +
                  " ms; optimized graph " + r.optimized_model_path);
  const PartitionReport& p = r.partition;
  std::vector<std::string> kernels;
  for (const auto& [op, count] : p.integer_kernels) kernels.push_back(std::to_string(count) + " " + op);
  lines.push_back(r.provider + " kernels: " + fixed(100 * p.integer_share(), 1) + "% of MACs in integer kernels" +
                  (kernels.empty() ? "" : " (" + text::join(kernels) + ")") + ", " +
                  std::to_string(p.float_nodes.size()) + " compute nodes in float; " +
                  std::to_string(p.quantize_linear) + " Q / " + std::to_string(p.dequantize_linear) + " DQ left");
  if (!p.float_nodes.empty()) lines.push_back("float compute nodes: " + names_shown(p.float_nodes, 6, ""));
  if (p.unmatched_macs > 0) {
    lines.push_back(fixed(100 * p.unmatched_macs / (p.integer_macs + p.float_macs + p.unmatched_macs), 1) +
                    "% of MACs in nodes the runtime merged away (not attributed)");
  }
  // "quantized": behind integer Q/DQ or a block format's quantize-dequantize (analysis counts both).
  const Coverage& c = r.coverage;
  lines.push_back("compute nodes: " + std::to_string(c.quantized) + " quantized, " + std::to_string(c.bf16) + " bf16, " +
                  std::to_string(c.fp16) + " fp16, " + std::to_string(c.float32) + " float32 of " +
                  std::to_string(c.compute_nodes));
  const IslandSummary& i = r.islands;
  lines.push_back(std::to_string(i.islands.size()) + " islands: " + std::to_string(i.quantized_islands) + " quantized, " +
                  std::to_string(i.bf16_islands) + " bf16, " + std::to_string(i.fp16_islands) + " fp16, " +
                  std::to_string(i.float_islands) + " float");
  lines.push_back("expected compute time on " + r.device + ": " + fixed(r.time_vs_bf16) + "x full BF16, " + fixed(r.start_time_vs_bf16) +
                  "x for the starting config (" + fixed(r.macs / 1e6, 1) + " M MACs, nominal device speeds)");
  return lines;
}

Lines lines_of(const ExecResult& r) {
  Lines lines;
  lines.push_back(latency_line("FP32   ", r.fp32) + " (" + std::to_string(r.fp32.runs) + " runs on " + r.provider + ")");
  lines.push_back(latency_line("final  ", r.final_model));
  if (r.edges_on_host) {
    lines.push_back(latency_line("edges on host  ", *r.edges_on_host) + " (--edge-quant-auto's model, its edge Q/DQ " +
                    "done on the host in each run: " +
                    fixed(100 * (r.edges_on_host->median_ms / r.final_model.median_ms - 1), 1) +
                    "% median vs the final model)");
  }
  lines.push_back("speed-up " + fixed(r.speedup()) + "x (median)");
  if (r.speedup() < 1) {
    lines.push_back("red flag: slower than FP32 on " + r.provider +
                    ". BF16/FP16 layers run here as emulation (cast pairs), and int8 Q/DQ that the provider does not "
                    "fuse into integer kernels only add work; time it on the device's own provider (--ep)");
  }
  lines.push_back(latency_line("full BF16  ", r.full_bf16));
  if (r.integer_start) {
    const LatencyStats& int8 = r.full_int8 ? *r.full_int8 : r.final_model;
    if (r.full_int8) lines.push_back(latency_line("full INT8  ", int8));
    if (int8.median_ms > r.full_bf16.median_ms) {
      lines.push_back("red flag: full INT8 (" + fixed(int8.median_ms) + " ms) is slower than full BF16 (" +
                      fixed(r.full_bf16.median_ms) + " ms) on " + r.provider +
                      ": its Q/DQ are not fused into integer kernels here (see the compile phase's share)");
    }
  }
  if (r.mixed_final && r.final_model.median_ms > r.full_bf16.median_ms) {
    lines.push_back("red flag: the mixed model (" + fixed(r.final_model.median_ms) + " ms) is slower than full BF16 (" +
                    fixed(r.full_bf16.median_ms) + " ms) on " + r.provider +
                    ": each INT8/BF16 boundary adds conversions; fewer, larger islands or full BF16 may be the better "
                    "deployment");
  }
  return lines;
}

Lines lines_of(const LadderReport& r) {
  Lines lines;
  add_text(lines, ladder_text(r));
  return lines;
}
Lines lines_of(const DryRunReport& r) {
  Lines lines;
  add_text(lines, dry_run_text(r));
  return lines;
}
Lines lines_of(const RequantizeReport& r) {
  Lines lines;
  add_text(lines, requantize_text(r));
  return lines;
}

// --- JSON: one function per phase result type, as for the lines -----------------------------

Json metrics_json(const std::vector<OutputMetrics>& metrics) {
  Json j = Json::array();
  for (const auto& m : metrics) j.push_back(metrics_to_json(m));
  return j;
}

Json formats_json(const std::vector<FormatId>& formats) {
  Json j = Json::array();
  for (FormatId f : formats) j.push_back(format_traits(f).name);
  return j;
}

Json latency_json(const LatencyStats& l) {
  return {{"runs", l.runs}, {"min_ms", l.min_ms}, {"median_ms", l.median_ms}, {"mean_ms", l.mean_ms},
          {"p90_ms", l.p90_ms}, {"max_ms", l.max_ms}};
}

Json json_of(const AnalyzeResult& r) { return analysis_to_json(r.analysis); }

Json json_of(const ConfigResult& r) {
  return {{"given", r.given_path}, {"plan", r.plan ? plan_to_json(*r.plan) : Json(nullptr)}, {"formats", formats_json(r.formats)}};
}

Json json_of(const CalibrateResult& r) {
  return {{"reused", r.reused}, {"stats", r.stats_path}, {"data", r.data_description}, {"tensors", r.tensors}};
}

Json json_of(const BaselineResult& r) { return {{"data", r.data_description}, {"samples", r.samples}, {"seconds", r.seconds}}; }

Json json_of(const QuantizeResult& r) {
  Json methods = Json::array();
  for (const auto& m : r.methods) {
    methods.push_back({{"method", calib_method_traits(m.method).name}, {"psnr_db", m.psnr_db}, {"pass", m.pass}});
  }
  return {{"methods", methods},          {"kept", calib_method_traits(r.kept).name}, {"layers", r.layers},
          {"integer_layers", r.integer_layers}, {"formats", formats_json(r.formats)}, {"model", r.model_path},
          {"config", r.config_path}};
}

Json json_of(const RecoverResult& r) {
  Json trials = Json::array();
  for (const auto& t : r.trials) {
    trials.push_back({{"algorithms", t.algorithms},
                      {"psnr_db", t.psnr_db},
                      {"top1", t.top1 ? Json(*t.top1) : Json(nullptr)},
                      {"pass", t.verdict.pass},
                      {"outputs", metrics_json(t.metrics)},
                      {"seconds", t.seconds},
                      {"reconstruction_seconds", t.reconstruction_seconds},
                      {"learned_layers", t.learned_layers},
                      {"reused_layers", t.reused_layers},
                      {"bias_correction_seconds", t.bias_correction_seconds},
                      {"corrected_biases", t.corrected_biases},
                      {"reused_biases", t.reused_biases}});
  }
  return {{"needed", r.needed}, {"skipped", r.skipped}, {"trials", trials}, {"kept", r.kept},
          {"model", r.model_path}, {"config", r.config_path}};
}

Json json_of(const ValidateResult& r) {
  return {{"task", to_string(r.task)}, {"outputs", metrics_json(r.metrics)}, {"verdict", verdict_to_json(r.verdict)}};
}

Json json_of(const ExplorePhaseResult& r) {
  const SearchOptions& s = r.search;
  Json j = {{"requested", r.requested},
            {"needed", r.needed},
            {"search", {{"base", s.base_config ? Json("config") : Json(s.base_preset)},
                        {"lift", s.lift},
                        {"bf16_budget", s.bf16_budget},
                        {"time_budget", s.time_budget},
                        {"max_iterations", s.max_iterations},
                        {"calib_method", s.calib_method ? calib_method_traits(*s.calib_method).name : "auto"},
                        {"pareto", s.pareto},
                        {"ranking", to_string(s.ranking)},
                        {"search", to_string(s.search)}}}};
  if (!r.result) return j;
  const ExploreResult& e = *r.result;
  Json result = {{"stop_reason", e.stop_reason},
                 {"objective", e.objective_name},
                 {"task", to_string(e.task.type)},
                 {"compute_layers", e.compute_layers},
                 {"lifted_layers", e.lifted_layers},
                 {"steps", e.steps.size()},
                 {"evaluations", e.evaluations},
                 {"resumed_steps", e.resumed_steps},
                 {"int8_outputs", metrics_json(e.int8_metrics)},
                 {"lifted_outputs", metrics_json(e.lifted_metrics)},
                 {"final_outputs", metrics_json(e.final_metrics)},
                 {"verdict", verdict_to_json(e.final_verdict)},
                 {"final_time_vs_bf16", e.final_time_vs_bf16},
                 {"int8_time_vs_bf16", e.int8_time_vs_bf16},
                 {"final_transitions", e.final_transitions},
                 {"calib_method", calib_method_traits(e.calib_method).name},
                 {"pareto_points", e.pareto.size()},
                 {"seconds", e.seconds},
                 {"final_model", e.final_model_path},
                 {"final_config", e.final_config_path},
                 {"ledger", e.ledger_path}};
  if (e.runtime_check) result["runtime_check"] = runtime_trials_to_json({*e.runtime_check}).front();
  j["result"] = std::move(result);
  return j;
}

Json json_of(const EdgeProbe& probe) {
  Json boundaries = Json::array(), builds = Json::array();
  for (const EdgeBoundary& b : probe.boundaries) {
    boundaries.push_back({{"input", b.input}, {"tensor", b.tensor}, {"node", b.node}, {"codes", b.codes},
                          {"scale", b.scale}, {"zero_point", b.zero_point}, {"axis", b.axis},
                          {"standalone", b.excluded.empty()}, {"excluded", b.excluded}});
  }
  for (const EdgeBuild& b : probe.builds) {
    builds.push_back({{"configuration", b.configuration}, {"kernels", b.kernels}, {"edge_kernels", b.edge_kernels},
                      {"runtime_edges", b.runtime_edges}, {"integer_share", b.partition.integer_share()},
                      {"fallbacks", b.fallbacks}, {"optimized_model", b.optimized_model_path}});
  }
  return {{"advice", to_string(probe.advice)}, {"reason", probe.reason}, {"flag", probe.flag},
          {"counted_by", probe.counted_by}, {"boundaries", boundaries}, {"builds", builds}};
}

Json json_of(const CompileResult& r) {
  const PartitionReport& p = r.partition;
  const EdgeCheck& e = r.edges;
  const Coverage& c = r.coverage;
  const IslandSummary& i = r.islands;
  return {{"provider", r.provider},
          {"device", r.device},
          {"session_ms", r.session_ms},
          {"optimized_model", r.optimized_model_path},
          {"partition", {{"integer_macs", p.integer_macs},
                         {"float_macs", p.float_macs},
                         {"unmatched_macs", p.unmatched_macs},
                         {"integer_share", p.integer_share()},
                         {"integer_kernels", p.integer_kernels},
                         {"float_nodes", p.float_nodes},
                         {"quantize_linear", p.quantize_linear},
                         {"dequantize_linear", p.dequantize_linear}}},
          {"coverage", {{"compute_nodes", c.compute_nodes}, {"quantized", c.quantized}, {"bf16", c.bf16},
                        {"fp16", c.fp16}, {"float", c.float32}}},
          {"islands", {{"total", i.islands.size()}, {"quantized", i.quantized_islands}, {"bf16", i.bf16_islands},
                       {"fp16", i.fp16_islands}, {"float", i.float_islands}}},
          {"time_vs_bf16", r.time_vs_bf16},
          {"start_time_vs_bf16", r.start_time_vs_bf16},
          {"macs", r.macs},
          {"edges", {{"requested", to_string(e.requested)}, {"checked", e.checked}, {"float_inputs", e.float_inputs},
                     {"quantized_inputs", e.quantized_inputs}, {"outputs", e.outputs},
                     {"dequantized_outputs", e.dequantized_outputs}, {"matches", e.matches}}},
          {"edge_probe", r.edge_probe ? json_of(*r.edge_probe) : Json(nullptr)},
          {"compiler_options", {{"model", r.compiler.model_kind}, {"enable_f32_to_bf16_conversion", r.compiler.f32_to_bf16},
                                {"enable_f32_to_f16_conversion", r.compiler.f32_to_f16}, {"fe_args", r.compiler.fe_args()},
                                {"notes", r.compiler.notes}}},
          {"provider_config", r.provider_config_path},
          {"deployment", r.deployment_path},
          {"provider_cache", r.provider_cache_dir}};
}

Json json_of(const ExecResult& r) {
  return {{"provider", r.provider},
          {"fp32", latency_json(r.fp32)},
          {"final", latency_json(r.final_model)},
          {"full_bf16", latency_json(r.full_bf16)},
          {"full_int8", r.full_int8 ? latency_json(*r.full_int8) : Json(nullptr)},
          {"edges_on_host", r.edges_on_host ? latency_json(*r.edges_on_host) : Json(nullptr)},
          {"speedup", r.speedup()},
          {"integer_start", r.integer_start},
          {"mixed_final", r.mixed_final}};
}

Json json_of(const LadderReport& r) {
  Json rungs = Json::array();
  for (const auto& rung : r.rungs) rungs.push_back(preset_result_to_json(rung));
  return {{"task", {{"type", to_string(r.task.type)}, {"reason", r.task.reason}}},
          {"device", r.device},
          {"samples", r.samples},
          {"data", r.data_description},
          {"rungs", rungs},
          {"chosen", r.chosen},
          {"chosen_model", r.chosen_model_path},
          {"follow_up", r.follow_up},
          {"runtimes", runtime_trials_to_json(r.runtimes)},
          {"warnings", r.warnings}};
}

Json json_of(const DryRunReport& r) { return dry_run_to_json(r); }

Json json_of(const RequantizeReport& r) {
  return {{"task", {{"type", to_string(r.task.type)}, {"reason", r.task.reason}}},
          {"stripped", r.stripped_path},
          {"strip", {{"qdq_pairs", r.strip.qdq_pairs}, {"cast_pairs", r.strip.cast_pairs},
                     {"folded_initializers", r.strip.folded_initializers}, {"notes", r.strip.notes}}},
          {"samples", r.samples},
          {"data", r.data_description},
          {"previous_outputs", metrics_json(r.previous_metrics)},
          {"new_outputs", metrics_json(r.new_metrics)},
          {"previous_verdict", verdict_to_json(r.previous_verdict)},
          {"new_verdict", verdict_to_json(r.new_verdict)},
          {"psnr_delta_db", r.psnr_delta_db},
          {"pass_rate_delta", r.pass_rate_delta},
          {"output", r.output_path},
          {"config", r.config_path},
          {"runtimes", runtime_trials_to_json(r.runtimes)},
          {"warnings", r.warnings}};
}

}  // namespace

std::vector<std::string> guide_phase_lines(const GuidePhase& phase) {
  return std::visit(
      [&](const auto& result) -> Lines {
        using T = std::decay_t<decltype(result)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          return {};
        } else if constexpr (std::is_same_v<T, CalibrateResult>) {
          return lines_of(result, phase.seconds);
        } else {
          return lines_of(result);
        }
      },
      phase.result);
}

std::string guide_outcome(const GuideReport& report) {
  if (const auto* dry = report.result<DryRunReport>()) {
    return "recommendation: " + dry->recommendation.action + ": " + dry->recommendation.reason;
  }
  if (const auto* requantized = report.result<RequantizeReport>()) {
    return std::string(requantized->new_verdict.pass ? "PASS: " : "FAIL: ") + requantized->output_path +
           "; worst PSNR " + (requantized->psnr_delta_db >= 0 ? "+" : "") + fixed(requantized->psnr_delta_db) +
           " dB against the previous quantization";
  }
  if (const auto* ladder = report.result<LadderReport>()) {
    return std::string(report.pass ? "PASS: " : "FAIL: ") + ladder->follow_up;
  }
  std::string outcome = std::string(report.pass ? "PASS: " : "FAIL: ") + report.final_model_path +
                        (report.pass ? " meets " : " misses ") + report.criterion + "; expected compute time on " +
                        report.device + ": " + fixed(report.time_vs_bf16) + "x full BF16";
  const auto* explore = report.result<ExplorePhaseResult>();
  if (!report.pass && explore && !explore->requested) {
    outcome += ". Add --explore to search the layers to keep in higher precision";
  }
  return outcome;
}

std::string guide_summary_text(const GuideReport& report) {
  std::ostringstream out;
  for (const auto& phase : report.phases) {
    char line[160];
    std::snprintf(line, sizeof line, "   %-11s %-8s %8.2f s\n", phase.name.c_str(), to_string(phase.status), phase.seconds);
    out << line;
  }
  if (!report.final_model_path.empty()) {
    out << "   model   " << report.final_model_path << "\n   config  " << report.final_config_path << "\n";
  }
  out << "   " << guide_outcome(report) << "\n";
  return out.str();
}

Json guide_phase_to_json(const GuidePhase& phase) {
  Json result = std::visit(
      [](const auto& r) -> Json {
        if constexpr (std::is_same_v<std::decay_t<decltype(r)>, std::monostate>) {
          return nullptr;
        } else {
          return json_of(r);
        }
      },
      phase.result);
  return {{"name", phase.name},
          {"status", to_string(phase.status)},
          {"seconds", phase.seconds},
          {"lines", guide_phase_lines(phase)},
          {"result", std::move(result)}};
}

Json guide_report_to_json(const GuideReport& report) {
  Json phases = Json::array();
  for (const auto& phase : report.phases) phases.push_back(guide_phase_to_json(phase));
  return {{"mode", to_string(report.mode)},
          {"device", report.device},
          {"pass", report.pass},
          {"criterion", report.criterion},
          {"time_vs_bf16", report.time_vs_bf16},
          {"final_model", report.final_model_path},
          {"final_config", report.final_config_path},
          {"provider_config", report.provider_config_path},
          {"outcome", report.phases.empty() ? std::string() : guide_outcome(report)},
          {"phases", std::move(phases)},
          {"warnings", report.warnings}};
}

}  // namespace mixprec
