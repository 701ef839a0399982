#include "mixprec/jobs_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <sstream>

#include "common/text.h"
#include "mixprec/metrics_report.h"

namespace mixprec {
namespace {
using Json = nlohmann::ordered_json;
using text::fixed;

// A model output loss (algorithms/output_error.h: the output error power over the output power)
// as an SQNR: -10 log10 of it.
std::string output_sqnr(double loss) {
  return loss > 0 ? fixed(-10 * std::log10(loss)) + " dB" : std::string("exact");
}

// Default stream formatting of a double (6 significant digits), as the terminal reports use.
std::string general(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

Json specs_json(const std::vector<InputSpec>& specs) {
  Json out = Json::array();
  for (const auto& s : specs) out.push_back({{"name", s.name}, {"dtype", dtype_name(s.dtype)}, {"shape", s.shape}});
  return out;
}

}  // namespace

std::string quantize_text(const QuantizeReport& r) {
  std::ostringstream out;
  out << "model        " << r.output_path << "\n"
      << "config       " << r.config_path << "\n"
      << "nodes        " << r.nodes << ": " << r.nodes_integer << " integer, "
      << (r.nodes_fp8 ? std::to_string(r.nodes_fp8) + " fp8, " : "") << r.nodes_bf16 << " bf16, "
      << r.nodes_fp16 << " fp16, " << (r.nodes_block ? std::to_string(r.nodes_block) + " block (BFP/MX), " : "")
      << r.nodes_float << " float\n"
      << "inserted     " << r.rewrite.qdq_pairs << " Q/DQ pairs"
      << (r.rewrite.unsigned_relu_pairs
              ? " (" + std::to_string(r.rewrite.unsigned_relu_pairs) + " on ReLU outputs unsigned: UseUnsignedReLU)"
              : "")
      << ", " << r.rewrite.cast_pairs << " cast pairs, "
      << (r.rewrite.block_ops ? std::to_string(r.rewrite.block_ops) + " BFP/MX nodes, " : "")
      << (r.rewrite.added_format_ops ? std::to_string(r.rewrite.added_format_ops) + " plugin-format nodes, " : "")
      << (r.rewrite.matmul_nbits ? std::to_string(r.rewrite.matmul_nbits) + " MatMulNBits, " : "")
      << r.rewrite.quantized_weights << " weights/biases stored quantized\n"
      << "prepared     " << r.prepare.constants_converted << " Constant nodes made initializers, "
      << r.prepare.folded_batchnorms << " BatchNormalization and " << r.prepare.folded_affines
      << " per-channel Mul/Add folded into Conv, " << r.prepare.named_nodes << " nodes named\n"
      << "opset        " << r.rewrite.opset_from << " -> " << r.rewrite.opset_to << "\n";
  if (!r.ffn_nodes.empty()) {
    constexpr size_t kNamed = 8;  // a deep transformer has hundreds: the written config lists them all
    const std::vector<std::string> named(r.ffn_nodes.begin(),
                                         r.ffn_nodes.begin() + static_cast<long>(std::min(kNamed, r.ffn_nodes.size())));
    out << "ffn-only     " << r.ffn_nodes.size() << " MatMul/Gemm (" << r.ffn_summary << ") take the global layer: "
        << text::join(named) << (r.ffn_nodes.size() > kNamed ? ", ... (all in the config)" : "") << "\n";
  }
  if (r.calibrated) {
    out << "calibration  " << r.data_description << ", " << r.calibration_samples << " used, " << fixed(r.calibration_seconds)
        << " s" << (r.stats_path.empty() ? "" : ", statistics saved to " + r.stats_path) << "\n";
  } else if (r.stats_reused) {
    out << "calibration  reused " << r.stats_path << " (" << r.calibration_samples << " samples)\n";
  }
  if (const auto& cle = r.prepare.cle) {
    out << "cle          " << cle->pairs << " layer pairs equalized, ";
    if (cle->mul_tails) out << cle->mul_tails << " layers into the constant Mul after them, ";
    out << cle->steps << " step" << (cle->steps == 1 ? "" : "s")
        << ", last change " << general(cle->last_change);
    if (cle->clip6_replaced) out << ", " << cle->clip6_replaced << " Clip(0,6) made Relu";
    out << ", " << fixed(cle->seconds) << " s\n";
    for (const auto& note : cle->notes) out << "note         " << note << "\n";
  }
  if (const auto& sq = r.prepare.smooth_quant) {
    out << "smoothquant  " << sq->groups << " activations smoothed (alpha " << general(sq->alpha) << ") for " << sq->layers
        << " MatMul/Gemm layers: " << sq->folded << " folded into their producer, " << sq->muls << " through a float Mul"
        << "; channel scales up to " << general(sq->max_scale_ratio) << "x apart; " << sq->samples << " samples, "
        << fixed(sq->seconds) << " s\n";
    for (const auto& note : sq->notes) out << "note         " << note << "\n";
  }
  for (const auto& pass : r.prepare.passes) out << "pass         " << pass << " (on the float model)\n";
  if (const auto& ss = r.scale_search) {
    const auto db = output_sqnr;
    const auto finer = std::ranges::count_if(ss->shifts, [](const auto& s) { return s.second < 0; });
    out << "scale search " << ss->shifts.size() << " of " << ss->tensors << " activation scales moved (" << finer
        << " finer, " << ss->shifts.size() - static_cast<size_t>(finer) << " coarser) on " << ss->samples
        << " samples in " << ss->trials << " trials";
    if (ss->biases > 0) out << " (" << ss->biases << " int32 biases requantized with them)";
    out << ", output SQNR " << db(ss->loss_before) << " -> " << db(ss->loss_after)
        << " (summed over outputs)";
    if (ss->loss_rebuilt) out << ", " << db(*ss->loss_rebuilt) << " rewritten";
    if (ss->validation_before && ss->validation_after) {
      out << "; " << ss->validation_samples << " held-out samples " << db(*ss->validation_before) << " -> "
          << db(*ss->validation_after) << (ss->rejected ? ": not kept" : "");
    }
    out << ", " << fixed(ss->seconds) << " s\n";
    for (const auto& note : ss->notes) out << "note         " << note << "\n";
  }
  if (const auto& rc = r.reconstruction) {
    double nearest = 0, learned = 0;
    for (const auto& layer : rc->per_layer) {
      nearest += layer.loss_nearest;
      learned += layer.loss_learned;
    }
    out << std::left << std::setw(13) << reconstruction_method_names().name(rc->method) << rc->layers << " layers learned ("
        << rc->iterations << " steps each"
        << (rc->drop_ratio < 1 ? ", drop_ratio " + general(rc->drop_ratio) + ": that share of input elements quantized" : "")
        << (rc->update_bias ? ", " + std::to_string(rc->biases) + " biases learned too" : "") << ") in " << rc->levels
        << " levels on " << rc->samples << " samples, loss "
        << general(nearest) << " -> " << general(learned) << " (nearest -> learned, summed), " << fixed(rc->seconds) << " s";
    if (rc->lr_adjust) {
      out << "; lr_adjust: " << rc->lr_adjusted << " of " << rc->per_layer.size() << " layers above MSE "
          << general(rc->lr_adjust->threshold) << " learned at " << general(rc->lr_adjust->learning_rate);
    }
    if (rc->selective_update) {
      out << "; selective_update: " << rc->layers - rc->rejected << " kept, " << rc->rejected
          << " given their weights back, output SQNR " << output_sqnr(rc->output_loss_before) << " -> "
          << output_sqnr(rc->output_loss_after);
    }
    if (!rc->per_layer.empty()) {
      const auto slowest = std::ranges::max_element(rc->per_layer, {}, &LayerReconstruction::seconds);
      out << ", " << fixed(rc->seconds / static_cast<double>(rc->per_layer.size())) << " s per layer (slowest "
          << slowest->node << ", " << fixed(slowest->seconds) << " s)";
    }
    out << "\n";
    for (const auto& note : rc->notes) out << "note         " << note << "\n";
  }
  if (const auto& bc = r.bias_correction) {
    out << "bias corr.   " << bc->layers << " biases corrected (mode " << bias_correction_mode_names().name(bc->mode) << ") in " << bc->levels << " levels on " << bc->samples
        << " samples, mean |shift| "
        << general(bc->mean_abs_shift) << ", " << bc->damped_channels << " channels damped, " << fixed(bc->seconds) << " s\n";
    for (const auto& note : bc->notes) out << "note         " << note << "\n";
  }
  const StaticShapeSummary& shapes = r.static_shapes;
  if (shapes.checked) {
    out << "shapes       static: " << shapes.value_infos << " tensors' shapes declared from one run and checked";
    if (shapes.inputs_pinned) out << ", inputs pinned to " << text::join(shapes.inputs);
    out << "\n";
    if (shapes.body_value_infos > 0 || !shapes.body_dynamic.empty()) {
      out << "  in bodies  " << shapes.body_value_infos << " static shapes inferred inside If/Loop/Scan bodies, "
          << shapes.body_dynamic.size() << " dims left dynamic or undeclared\n";
    }
  } else if (!shapes.dynamic_in_input.empty()) {
    out << "shapes       the input model has " << shapes.dynamic_in_input.size() << " dynamic dims ("
        << shapes.dynamic_in_input.front() << (shapes.dynamic_in_input.size() > 1 ? ", ..." : "")
        << "): written as they are; --make-static pins them\n";
  }
  for (const auto& note : r.rewrite.notes) out << "note         " << note << "\n";
  for (const auto& line : r.float_weights) out << "left float   " << line << "\n";
  return out.str();
}

std::string dequantize_text(const DequantizeReport& r) {
  std::ostringstream out;
  out << "model    " << r.output_path << "\n"
      << "removed  " << r.strip.qdq_pairs << " Q/DQ pairs, " << r.strip.cast_pairs << " cast pairs"
      << (r.strip.block_nodes ? ", " + std::to_string(r.strip.block_nodes) + " BFP/MX nodes" : "") << "; "
      << r.strip.folded_initializers << " initializers folded back to float\n";
  for (const auto& note : r.strip.notes) out << "note     " << note << "\n";
  return out.str();
}

std::string patch_text(const PatchReport& r) {
  std::ostringstream out;
  const VaipPatchSummary& s = r.summary;
  out << "model    " << r.output_path << "\n"
      << "edits    " << s.edits() << (s.edits() == 0 ? " (nothing to patch: the model is written unchanged)" : "") << "\n"
      << "  com.microsoft Q/DQ to the default domain   " << s.retagged << "\n"
      << "  BFP sub_block_shift_bits written (1)       " << s.shift_bits_written << "\n"
      << "  shape / data_type attributes added         " << s.shape_attributes << "\n"
      << "  bf16/fp16 zero points in their codes' type " << s.zero_points_fixed << "\n";
  for (const auto& fix : s.zero_point_fixes) out << "fixed    " << fix << "\n";
  for (const auto& kept : s.kept) out << "kept     " << kept << "\n";
  out << "checked  " << r.outputs_compared << " output(s) bit-identical to the "
      << (r.reference.empty() ? "input model's" : "input model's with its zero points fixed") << " on " << r.samples
      << " sample(s) (" << r.data_description << ")\n";
  if (!r.reference.empty()) out << "note     " << r.reference << "\n";
  return out.str();
}

std::string mha_mx9_text(const MhaMx9Report& r) {
  std::ostringstream out;
  out << "model    " << r.output_path << "\n";
  for (const auto& pinned : r.pinned_inputs) out << "pinned   " << pinned << "\n";
  if (!r.summary.opset_raised.empty()) out << "opset    " << r.summary.opset_raised << " (Cast to bfloat16 needs 13)\n";
  out << "attention blocks " << r.summary.attention_blocks << "\n";
  for (const MhaMx9Step& step : r.summary.steps) {
    char line[96];
    std::snprintf(line, sizeof line, "  %-36s %4zu", step.name.c_str(), step.edits);
    out << line;
    if (!step.nodes.empty()) {
      out << "  (" << step.nodes.front() << (step.nodes.size() > 1 ? ", ..." : "") << ")";
    }
    out << "\n";
    for (const auto& note : step.notes) out << "    note: " << note << "\n";
  }
  out << "static   every tensor's shape static after each step (shape inference, data propagation)\n"
      << "checked  against the input model on " << r.samples << " sample(s) (" << r.data_description << ")\n"
      << metrics_table({{"mha-mx9", r.metrics}}, TaskType::kUnknown);
  return out.str();
}

std::string compare_text(const CompareReport& r, const std::string& model_label) {
  std::ostringstream out;
  out << "task     " << to_string(r.task.type) << " (" << r.task.reason << ")\n"
      << "data     " << r.data_description << "\n"
      << metrics_table({{model_label, r.outputs}}, r.task.type) << "verdict  " << (r.verdict.pass ? "PASS" : "FAIL") << ": "
      << r.verdict.criterion << "\n"
      << "         " << r.verdict.reason << "\n";
  return out.str();
}

Json compare_to_json(const CompareReport& r, const std::string& reference, const std::string& model) {
  Json j;
  j["reference"] = reference;
  j["model"] = model;
  j["task"] = {{"type", to_string(r.task.type)}, {"reason", r.task.reason}};
  j["samples"] = r.samples;
  j["data"] = r.data_description;
  j["outputs"] = Json::array();
  for (const auto& m : r.outputs) j["outputs"].push_back(metrics_to_json(m));
  j["verdict"] = verdict_to_json(r.verdict);
  j["warnings"] = r.warnings;
  return j;
}

std::string run_text(const RunReport& r) {
  std::ostringstream out;
  out << "model      " << r.model_path << "\n"
      << "runtime    ONNX Runtime " << r.runtime_version << ", provider " << r.provider << "\n"
      << "data       " << r.data_description << "\n";
  for (const auto& s : r.inputs) {
    out << "input      " << s.name << "  " << dtype_name(s.dtype) << "  " << shape_to_string(s.shape) << "\n";
  }
  for (const auto& s : r.outputs) {
    out << "output     " << s.name << "  " << dtype_name(s.dtype) << "  " << shape_to_string(s.shape) << "\n";
  }
  const LatencyStats& l = r.latency;
  out << "session    " << fixed(r.session_create_ms, 1) << " ms to create\n"
      << "latency    min " << fixed(l.min_ms) << " ms  median " << fixed(l.median_ms) << " ms  mean " << fixed(l.mean_ms)
      << " ms  p90 " << fixed(l.p90_ms) << " ms  (" << l.runs << " runs)\n"
      << "throughput " << fixed(r.inferences_per_second, 1) << " inferences/s, " << fixed(r.items_per_second, 1)
      << " items/s\n";
  if (!r.saved_outputs_path.empty()) out << "outputs    " << r.saved_outputs_path << "\n";
  return out.str();
}

Json run_to_json(const RunReport& r) {
  const LatencyStats& l = r.latency;
  return {{"model", r.model_path},
          {"runtime", {{"name", "onnxruntime"}, {"version", r.runtime_version}, {"provider", r.provider}}},
          {"data", r.data_description},
          {"samples", r.samples},
          {"inputs", specs_json(r.inputs)},
          {"outputs", specs_json(r.outputs)},
          {"session_create_ms", r.session_create_ms},
          {"latency_ms",
           {{"runs", l.runs}, {"min", l.min_ms}, {"median", l.median_ms}, {"mean", l.mean_ms}, {"p90", l.p90_ms},
            {"max", l.max_ms}}},
          {"inferences_per_second", r.inferences_per_second},
          {"items_per_second", r.items_per_second},
          {"saved_outputs", r.saved_outputs_path},
          {"warnings", r.warnings}};
}

std::string explore_step_line(const ExploreStep& s) {
  char line[512];
  std::snprintf(line, sizeof line,
                "step %3zu  %-40s %-11s objective %9.4f  PSNR %7.2f dB  pass %8.4f%%  best %3zu lifted  %.2f s%s%s%s\n",
                s.index, s.layer.c_str(), to_string(s.decision), s.objective, s.psnr_db, 100 * s.pass_rate,
                s.lifted_layers, s.seconds, s.sweep > 1 ? "  (retry)" : "", s.lift.empty() ? "" : "  to ",
                s.lift.c_str());
  std::string text = line;
  if (s.learned_layers + s.reused_layers > 0) {  // before the newline
    text.insert(text.size() - 1, "  (" + std::to_string(s.learned_layers) + " layers learned, " +
                                     std::to_string(s.reused_layers) + " reused)");
  }
  return text;
}

std::string lifted_per_rung(const ExploreResult& r) {
  std::vector<std::string> parts;
  for (const auto& rung : r.rungs) {
    if (rung.lifted > 0) parts.push_back(std::to_string(rung.lifted) + " to " + rung.lift);
  }
  return parts.empty() ? "none" : text::join(parts);
}

std::string explore_text(const ExploreResult& r, const std::string& lift, const std::string& device) {
  std::ostringstream out;
  if (r.resumed_steps) out << "resumed     " << r.resumed_steps << " steps from the ledger\n";
  out << "task        " << to_string(r.task.type) << "\n"
      << "stopped     " << r.stop_reason << "\n"
      << "lifted      " << r.lifted_layers.size() << " of " << r.compute_layers << " candidate layers to " << lift;
  const bool ladder = r.rungs.size() > 1;
  if (ladder) out << ": " << lifted_per_rung(r);
  out << "\n";
  for (size_t i = 0; i < r.lifted_layers.size(); ++i) {
    out << "            " << r.lifted_layers[i] << (ladder ? "  " + r.lifted_formats.at(i) : "") << "\n";
  }
  std::vector<LabeledMetrics> rows = {{"full " + r.base_name, r.int8_metrics}};
  for (size_t i = 0; i < r.rungs.size() && (i == 0 || r.rungs[i].ran); ++i) {
    // A later rung's full lift raises the previous rung's layers (all of them when it lifted every one).
    const std::string label = !ladder ? lift : i == 0 ? r.rungs[0].lift : r.rungs[i].lift + " (rung " + std::to_string(i + 1) + ")";
    rows.push_back({"full " + label, i == 0 ? r.lifted_metrics : r.rungs[i].full_metrics});
  }
  rows.push_back({"final", r.final_metrics});
  out << metrics_table(rows, r.task.type)
      << "verdict     " << (r.final_verdict.pass ? "PASS" : "FAIL") << ": " << r.final_verdict.reason << "\n"
      << "expected    " << general(r.final_time_vs_bf16) << "x the compute time of full BF16 on " << device
      << " (full " << r.base_name << ": " << general(r.int8_time_vs_bf16) << "x; nominal device speeds), "
      << r.final_transitions << " INT8/float boundaries\n"
      << "start       full " << r.base_name
      << (r.base_calibrated ? std::string(" calibrated with ") + calib_method_traits(r.calib_method).name
                            : std::string(" (no calibration: no Q/DQ activations)"))
      << "\n"
      << "spent       " << r.evaluations << " evaluations"
      << (r.reranks > 0 ? " (" + std::to_string(r.rerank_evaluations) + " of them in " + std::to_string(r.reranks) +
                              " adaptive re-rankings)"
                        : std::string())
      << ", " << general(r.seconds) << " s (calibration " << general(r.calibration_seconds) << " s)\n";
  if (r.runtime_check) {
    out << "runtime     " << r.runtime_check->runtime << ": "
        << (r.runtime_check->ok ? "loads the final model" : "FAILED: " + r.runtime_check->detail) << "\n";
  }
  if (!r.pareto.empty()) {
    out << "trade-off   " << r.pareto.size() << " non-dominated points (pareto.json):";
    for (const auto& p : r.pareto) {
      out << " " << fixed(p.time_vs_bf16) << "x/" << fixed(p.objective) << (p.meets ? "*" : "");
    }
    out << "  (time vs full BF16 / objective; * meets)\n";
  }
  out << "work dir    " << r.final_model_path << ", " << r.final_config_path << ", " << r.ledger_path << "\n";
  return out.str();
}

}  // namespace mixprec
