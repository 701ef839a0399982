// The VAIML compiler options, vitisai_config.json and the --edge-quant-auto probe (mixprec/vitisai.h).
#include "mixprec/vitisai.h"

#include <algorithm>
#include <filesystem>

#include "mixprec/model_io.h"
#include "mixprec/tensor.h"
#include "rewrite/strip_edge_qdq.h"

namespace mixprec {
namespace {
namespace fs = std::filesystem;

constexpr char kMatchPowerOfTwo[] = "match-power-of-two-quant-kernel=1";

EdgeBuild build(const onnx::ModelProto& model, const std::string& label, const EdgeProbeParams& params,
                SessionOptions options, const std::string& configuration, const std::string& file) {
  options.optimization = GraphOptimization::kExtended;  // compile's saved graph: fused, still portable
  options.optimized_model_path = (fs::path(params.work_dir) / file).string();
  Session::from_model(model, label, options);
  const onnx::ModelProto optimized = load_model(options.optimized_model_path);
  EdgeBuild b{.configuration = configuration, .optimized_model_path = options.optimized_model_path};
  b.kernels = optimized.graph().node_size();
  const EdgeQdqCount edges = count_edge_qdq(optimized.graph());
  b.edge_kernels = edges.quantized_inputs + edges.dequantized_outputs;
  b.partition = partition_report(*params.macs, optimized);
  return b;
}

std::vector<std::string> missing_from(const std::vector<std::string>& these, const std::vector<std::string>& others) {
  std::vector<std::string> out;
  for (const auto& node : these) {
    if (std::ranges::find(others, node) == others.end()) out.push_back(node);
  }
  return out;
}

}  // namespace

std::string CompilerOptions::fe_args() const {
  std::vector<std::string> flags;
  if (match_power_of_two) flags.emplace_back(kMatchPowerOfTwo);
  if (const std::string edge = edge_flag(input_in_runtime, output_in_runtime); !edge.empty()) flags.push_back(edge);
  flags.insert(flags.end(), extra_flags.begin(), extra_flags.end());
  std::string out;
  for (const auto& flag : flags) out += (out.empty() ? "" : " ") + flag;
  return out;
}

std::string edge_flag(bool inputs, bool outputs) {
  if (inputs && outputs) return "edge-quantization-in-rt=1";
  if (inputs) return "input-quantization-in-rt=1";
  if (outputs) return "output-dequantization-in-rt=1";
  return "";
}

CompilerOptions derive_compiler_options(const ModelAnalysis& model, const std::vector<FormatId>& formats) {
  CompilerOptions options;
  const Coverage& c = model.coverage;
  const int64_t float_compute = c.bf16 + c.fp16 + c.float32;
  const auto uses = [&](FormatId id) { return std::ranges::find(formats, id) != formats.end(); };
  // FP16 where the model's float compute is FP16 (ve2's lifts); BF16 otherwise.
  const bool fp16 = (c.fp16 > 0 && c.bf16 == 0) || (uses(FormatId::kFloat16) && !uses(FormatId::kBFloat16));
  const bool block = std::ranges::any_of(formats, [](FormatId id) { return block_format(id) != nullptr; });
  if (c.compute_nodes == 0) {
    options.model_kind = "no compute nodes";
  } else if (block) {
    // A block format's quantize-dequantize leaves float arithmetic between its ops.
    options.model_kind = "block formats";
    (fp16 ? options.f32_to_f16 : options.f32_to_bf16) = true;
    options.match_power_of_two = std::ranges::any_of(formats, [](FormatId id) { return format_traits(id).is_qdq; });
  } else if (float_compute == 0) {
    options.model_kind = "integer only";
  } else {
    options.model_kind = c.quantized > 0 ? "integer and float islands" : "float only";
    (fp16 ? options.f32_to_f16 : options.f32_to_bf16) = true;
    options.match_power_of_two = c.quantized > 0;
  }
  if (block) {
    options.notes.push_back("block formats (" + format_names(formats) +
                            "): their compiler flags come from the plugin that supplies them on the NPU");
  }
  return options;
}

nlohmann::ordered_json vitisai_config_json(const CompilerOptions& options, const std::string& device) {
  nlohmann::ordered_json vaiml = {{"keep_outputs", true},
                                  {"optimize_level", 2},
                                  {"enable_f32_to_bf16_conversion", options.f32_to_bf16}};
  if (options.f32_to_f16) vaiml["enable_f32_to_f16_conversion"] = true;
  vaiml["logging_level"] = "info";
  vaiml["fe_args"] = options.fe_args();
  vaiml["device"] = device;
  return {{"passes", nlohmann::ordered_json::array({{{"name", "vaiml_partition"},
                                                     {"plugin", "vaip-pass_vaiml_partition"},
                                                     {"vaiml_config", vaiml}}})},
          {"target", "VAIML"},
          {"targets", nlohmann::ordered_json::array({{{"name", "VAIML"}, {"pass", {"vaiml_partition"}}}})}};
}

const char* to_string(EdgeAdvice advice) {
  switch (advice) {
    case EdgeAdvice::kNotApplicable: return "does not apply";
    case EdgeAdvice::kEnable: return "enable";
    case EdgeAdvice::kDisable: return "disable";
    case EdgeAdvice::kNoChange: return "no change";
  }
  return "?";
}

void decide_edge_advice(EdgeProbe& probe) {
  EdgeBuild& without = probe.builds.at(0);
  EdgeBuild& with = probe.builds.at(1);
  with.fallbacks = missing_from(with.partition.float_nodes, without.partition.float_nodes);
  without.fallbacks = missing_from(without.partition.float_nodes, with.partition.float_nodes);
  const int64_t drop = without.kernels - with.kernels;
  if (!with.fallbacks.empty()) {
    probe.advice = EdgeAdvice::kDisable;
    probe.reason = std::to_string(with.fallbacks.size()) + " compute node(s) fall back to float with the flag (" +
                   with.fallbacks.front() + (with.fallbacks.size() > 1 ? ", ..." : "") + ")";
  } else if (drop > 0) {
    probe.advice = EdgeAdvice::kEnable;
    probe.reason = "the kernel count falls by " + std::to_string(drop) + " (" + std::to_string(without.kernels) +
                   " -> " + std::to_string(with.kernels) + ") and no compute node falls back to float";
  } else {
    probe.advice = EdgeAdvice::kNoChange;
    probe.reason = "the kernel count does not fall (" + std::to_string(without.kernels) + " -> " +
                   std::to_string(with.kernels) + ")";
  }
}

EdgeProbe probe_edge_quantization(const EdgeProbeParams& params) {
  const onnx::ModelProto model = load_model(params.model_path);
  const std::vector<rewrite::EdgeSite> sites = rewrite::match_edge_qdq(model, params.model_path);
  EdgeProbe probe;
  for (const auto& site : sites) {
    probe.boundaries.push_back({.input = site.input,
                                .tensor = site.tensor,
                                .node = site.node,
                                .codes = site.codes != 0 ? dtype_name(dtype_from_onnx(site.codes)) : "?",
                                .scale = site.scale,
                                .zero_point = site.zero_point,
                                .axis = site.axis,
                                .excluded = site.excluded});
    if (site.excluded.empty()) (site.input ? probe.inputs : probe.outputs) = true;
  }
  probe.flag = edge_flag(probe.inputs, probe.outputs);
  if (sites.empty()) {
    probe.reason = "no Q on a graph input and no DQ on a graph output: edge quantization does not apply";
    return probe;
  }
  if (!probe.inputs && !probe.outputs) {
    probe.reason = "no edge Q/DQ is standalone (each is part of a fake-quant pair or shares its tensor): "
                   "edge quantization does not apply";
    return probe;
  }
  const std::string provider = params.without.provider;
  probe.counted_by = params.emulate
                         ? "ONNX Runtime's optimized graph on " + provider +
                               ", the runtime's part emulated by taking the edge Q/DQ out; these are not the NPU "
                               "compiler's kernel counts"
                         : "the optimized graph of the " + provider + " provider with each config file";
  // Emulated, the build takes out exactly the standalone edges: the flag for those; the provider
  // gets the umbrella flag (VITIS.md's step 3) and takes what it can.
  const std::string flag_row = params.emulate ? probe.flag : edge_flag(true, true);
  probe.builds.push_back(build(model, params.model_path, params, params.without, "edge Q/DQ as kernels",
                               "edge_probe.without.optimized.onnx"));
  if (params.emulate) {
    const onnx::ModelProto stripped = rewrite::strip_edge_qdq(model, sites);
    const std::string path = (fs::path(params.work_dir) / "edge_probe.onnx").string();
    save_model(stripped, path);
    probe.builds.push_back(build(stripped, path, params, params.with, flag_row, "edge_probe.with.optimized.onnx"));
  } else {
    probe.builds.push_back(
        build(model, params.model_path, params, params.with, flag_row, "edge_probe.with.optimized.onnx"));
  }
  probe.builds[1].runtime_edges = std::ranges::count_if(probe.boundaries, [](const EdgeBoundary& b) { return b.excluded.empty(); });
  decide_edge_advice(probe);
  return probe;
}

}  // namespace mixprec
