// The pass order, in one place.
//   prepare_model:  Constant nodes → initializers → name nodes → fold BatchNormalization into Conv
//                   → (FoldConvAffine) fold per-channel Mul/Add into Conv → (CLE) equalize layers
//                   → (SmoothQuant) one float pass for the MatMul activations' ranges, smooth them
//   quantize_model: insert Q/DQ and cast pairs → (OrtCpuFusion) place them for ONNX Runtime's
//                   CPU fusions → (MatMulNBits) 4-bit MatMul weights as MatMulNBits → find the
//                   float weights ONNX Runtime will quantize itself → raise the opset as far as
//                   the formats (and its Round there) need → warn about those weights
#include <algorithm>
#include <map>
#include <utility>

#include "common/text.h"
#include "common/timing.h"
#include "mixprec/algorithms.h"
#include "mixprec/config.h"
#include "mixprec/error.h"
#include "mixprec/log.h"
#include "mixprec/rewrite.h"
#include "rewrite/constants_to_initializers.h"
#include "rewrite/fold_affine.h"
#include "rewrite/fold_batchnorm.h"
#include "rewrite/graph_edit.h"
#include "rewrite/insert_qdq.h"
#include "rewrite/matmul_nbits.h"
#include "rewrite/ort_weight_quantization.h"
#include "rewrite/place_for_ort_fusion.h"
#include "rewrite/qdq_pairs.h"
#include "rewrite/upgrade_opset.h"

namespace mixprec {
namespace {

// The added passes `calls` on `model`, in order; "name (origin): seconds" for each.
std::vector<std::string> run_added_passes(onnx::ModelProto& model, const std::vector<PassCall>& calls,
                                          const std::string& label) {
  std::vector<std::string> done;
  for (const PassCall& call : calls) {
    const AddedPass* pass = find_added_pass(call.name);
    if (pass == nullptr) {
      throw_bad_input(label, "the config runs pass " + call.name + ", which no plugin of this run adds (name its plugin with --use-plugin)");
    }
    const auto start = Clock::now();
    pass->run(model, call.params, label);
    done.push_back(call.name + " (" + pass->origin + "): " + text::fixed(seconds_since(start), 2) + " s");
  }
  return done;
}

}  // namespace

onnx::ModelProto prepare_model(onnx::ModelProto model, const PrepareOptions& options, const std::string& label,
                               PrepareSummary* summary, const ChannelMaximaFn* channel_maxima) {
  onnx::ModelProto out = std::move(model);
  PrepareSummary local;
  PrepareSummary& s = summary ? *summary : local;
  s.constants_converted = rewrite::constants_to_initializers(out);
  s.named_nodes = ensure_node_names(out);
  if (options.fold_batchnorm) s.folded_batchnorms = rewrite::fold_batchnorm(out, label);
  if (options.fold_affine) s.folded_affines = rewrite::fold_affine(out, label);
  if (options.cle) s.cle = equalize_layers(out, *options.cle, label);
  if (options.smooth_quant) {
    if (!channel_maxima || !*channel_maxima) {
      throw Error(ErrorKind::kInternal, label, "SmoothQuant needs its float pass (channel_maxima)");
    }
    const auto start = Clock::now();
    const std::vector<std::string> activations = smooth_quant_activations(out, label);
    size_t samples = 0;
    const ChannelMaxima maxima = activations.empty() ? ChannelMaxima{} : (*channel_maxima)(out, activations, samples);
    s.smooth_quant = smooth_quant(out, *options.smooth_quant, maxima, label);
    s.smooth_quant->samples = samples;
    s.smooth_quant->seconds = seconds_since(start);
  }
  s.passes = run_added_passes(out, options.passes, label);
  return out;
}

PrepareOptions prepare_options(const QuantConfig& config) {
  const AlgorithmRecipe recipe = algorithm_recipe(config);
  return {.fold_batchnorm = config.extra.convert_bn_to_conv,
          .fold_affine = config.extra.fold_conv_affine,
          .cle = recipe.cle,
          .smooth_quant = recipe.smooth_quant,
          .passes = recipe.passes_of(PassStage::kFloat)};
}

QuantizeOptions quantize_options(const QuantConfig& config) {
  QuantizeOptions options;
  options.calib_method = config.extra.calib_method;
  options.activation_symmetric = config.extra.activation_symmetric;
  options.unsigned_relu = config.extra.use_unsigned_relu;
  options.int32_bias = config.extra.int32_bias;
  options.ort_cpu_fusion = config.extra.ort_cpu_fusion;
  options.matmul_nbits = config.extra.matmul_nbits;
  options.passes = algorithm_recipe(config).passes_of(PassStage::kQuantized);
  return options;
}

onnx::ModelProto quantize_model(onnx::ModelProto prepared, const std::vector<NodeAssignment>& assignment,
                                const CalibrationStats& stats, const QuantizeOptions& options,
                                const std::string& label, const RankLookup& rank_of, RewriteSummary* summary) {
  RewriteSummary local;
  RewriteSummary& s = summary ? *summary : local;
  // place_for_ort_fusion reads the prepared model's float biases after insert_qdq: keep it then.
  onnx::ModelProto out = options.ort_cpu_fusion ? prepared : std::move(prepared);
  s.opset_from = rewrite::default_opset(out);
  int64_t needed = rewrite::insert_qdq(out, assignment, stats, options, label, s);
  if (options.unsigned_relu && s.unsigned_relu_pairs == 0) {
    s.notes.push_back("UseUnsignedReLU: no integer-quantized activation is the output of a Relu or of a Clip with lower "
                      "bound 0; nothing was made unsigned");
  }
  if (options.ort_cpu_fusion) {
    needed = std::max(needed, rewrite::place_for_ort_fusion(out, prepared, assignment, stats, options, label, s));
  }
  if (options.matmul_nbits) {
    const rewrite::MatMulNBitsSummary nbits = rewrite::use_matmul_nbits(out, label);
    s.matmul_nbits = nbits.replaced;
    if (!nbits.kept.empty()) {
      s.notes.push_back("MatMulNBits: " + std::to_string(nbits.kept.size()) +
                        " 4-bit MatMul weights stay DequantizeLinear (" + nbits.kept.front() +
                        (nbits.kept.size() > 1 ? "; ..." : "") + ")");
    }
  }
  // Float weights ONNX Runtime quantizes itself at load: said below; with a bias, its Round
  // needs opset 11 (as for a float bias between integer operands, insert_qdq).
  const std::vector<rewrite::OrtQuantizedWeight> at_load = rewrite::ort_quantized_float_weights(out, label);
  for (const auto& weight : at_load) {
    s.ort_quantized_weights.push_back(weight.node);
    if (weight.with_bias) needed = std::max(needed, rewrite::kOpsetOrtBiasQuantization);
  }
  const OpsetUpgradeResult upgrade = upgrade_opset(out, std::max(needed, s.opset_from), label, rank_of);
  s.opset_to = rewrite::default_opset(out);
  // One note per kind of adaptation ("18 x Clip: min/max attributes -> inputs"), not per node.
  std::map<std::string, int> kinds;
  for (const auto& note : upgrade.adapted) {
    const size_t name_start = note.find(" '");
    const size_t name_end = note.find("': ");
    const bool parsed = name_start != std::string::npos && name_end != std::string::npos && name_end > name_start;
    ++kinds[parsed ? note.substr(0, name_start) + ": " + note.substr(name_end + 3) : note];
  }
  for (const auto& [kind, count] : kinds) {
    s.notes.push_back("opset " + std::to_string(upgrade.from) + "→" + std::to_string(upgrade.to) + ": " +
                      std::to_string(count) + " x " + kind);
  }
  for (const std::string& done : run_added_passes(out, options.passes, label)) s.notes.push_back("pass " + done);
  if (!s.ort_quantized_weights.empty()) {
    const std::vector<std::string>& nodes = s.ort_quantized_weights;
    constexpr size_t kNamed = 3;
    const auto end = nodes.begin() + static_cast<long>(std::min(kNamed, nodes.size()));
    log_warning(label + ": " + std::to_string(nodes.size()) +
                " Conv/ConvTranspose/Gemm nodes keep float weights next to a quantized input (" +
                text::join(std::vector<std::string>(nodes.begin(), end), ", ") + (nodes.size() > kNamed ? ", ..." : "") +
                "); ONNX Runtime quantizes such weights to int8 itself when it loads the model (per tensor, "
                "symmetric; its WeightBiasQuantization, at every optimization level but none), so they run as int8 "
                "here and in any ONNX Runtime deployment: give them a weight format, or keep their input float too");
  }
  return out;
}

}  // namespace mixprec
