// Presets: named configs, one table row each. A preset fills global_config (input tensors,
// weight, bias; output tensors stay in float: the next node's input quantization covers them,
// or OrtCpuFusion places the output Q ONNX Runtime's fusions need) and the extra options its
// scheme needs; everything else keeps the QuantConfig defaults (no overrides, no exclusions).
#include <algorithm>
#include <cctype>

#include "common/text.h"
#include "ir/op_traits.h"
#include "mixprec/config.h"
#include "mixprec/error.h"

namespace mixprec {
namespace {

struct PresetRow {
  const char* name;
  FormatId activations;  // input tensors of every quantized node
  bool activation_symmetric;
  FormatId weights;
  bool weight_per_channel;  // along the op's output-channel axis
  // nullopt: Int32Bias, i.e. int32 codes with scale = input scale x weight scale.
  std::optional<FormatId> bias;
  CalibMethod calib_method;
  // extra_options.OrtCpuFusion; its preset also quantizes the op types ONNX Runtime's CPU
  // fusions turn into integer kernels beyond the default table (kOrtCpuOpTypes).
  bool ort_cpu_fusion = false;
  int64_t weight_group_size = 0;  // block-wise weights: one scale per this many along the reduction axis
};

// INT4 weights in blocks of 32 along the reduction axis, the block size ONNX Runtime's
// MatMulNBits and most INT4 LLM recipes use.
constexpr int64_t kInt4GroupSize = 32;

// Div (by a constant: it becomes QLinearMul) and Concat (QLinearConcat).
constexpr const char* kOrtCpuOpTypes[] = {"Div", "Concat"};

using enum FormatId;
using enum CalibMethod;

// clang-format off
constexpr PresetRow kPresets[] = {
  // XINT8: NPU int8 (Quark XINT8). Symmetric int8 with power-of-two scales, per tensor, for
  // activations, weights and bias alike; PowerOfTwo_MinMSE picks the 2^k activation scale with
  // the smallest quantization error.
  {"XINT8", kXInt8,     true,  kXInt8,     false, kXInt8,       kPowerOfTwoMinMse},
  // A8W8: int8 kernels on CPU/GPU. Symmetric int8 activations, symmetric int8 per-channel
  // weights, int32 bias; MinMax ranges.
  {"A8W8",  kInt8,      true,  kInt8,      true,  std::nullopt, kMinMax},
  // U8S8: the ONNX Runtime CPU preset (u8 activations x s8 weights, what its x86 integer
  // kernels take). Asymmetric uint8 activations (zero point follows the range, good after
  // ReLU), symmetric int8 per-channel weights (QLinearConv takes per-channel scales; on the
  // PP-OCR models +3 to +5 dB PSNR over per tensor), int32 bias; MinMax; Q/DQ placed for its
  // kernel fusions (OrtCpuFusion).
  {"U8S8",  kUInt8,     false, kInt8,      true,  std::nullopt, kMinMax, true},
  // A16W8: A8W8 with int16 activations (the ladder's step after A8W8: only the activation
  // bits differ). Symmetric int16 activations, int8 per-channel weights, int32 bias; MinMax.
  {"A16W8", kInt16,     true,  kInt8,      true,  std::nullopt, kMinMax},
  // BF16: activations, weights and bias in bfloat16 (exact cast emulation, no calibration).
  {"BF16",  kBFloat16,  true,  kBFloat16,  false, kBFloat16,    kMinMax},
  // FP16: the same in float16.
  {"FP16",  kFloat16,   true,  kFloat16,   false, kFloat16,     kMinMax},
  // S16S16: int16 activations and int16 per-channel weights, int32 bias; MinMax (Quark's
  // S16S16). Input scale x weight scale is ~2^-30 here, so a bias larger than about twice
  // |x| |w| raises its channel's weight scale to fit int32 (insert_qdq warns which). The
  // lift of Quark's S16S16_MIXED_S8S8 search: explore --preset A8W8 --lift S16S16.
  {"S16S16", kInt16,    true,  kInt16,     true,  std::nullopt, kMinMax},
  // Block formats (no calibration: each block takes its shared exponent from its values):
  // activations through a com.amd.quark node, weights rounded offline, bias float. The
  // parameters are Quark's (format_table.cpp).
  {"BFP16",     kBfp16,     true, kBfp16,     false, kFloat32, kMinMax},
  {"MX4",       kMx4,       true, kMx4,       false, kFloat32, kMinMax},
  {"MX6",       kMx6,       true, kMx6,       false, kFloat32, kMinMax},
  {"MX9",       kMx9,       true, kMx9,       false, kFloat32, kMinMax},
  {"MXINT8",    kMxInt8,    true, kMxInt8,    false, kFloat32, kMinMax},
  {"MXFP8E4M3", kMxFp8E4M3, true, kMxFp8E4M3, false, kFloat32, kMinMax},
  {"MXFP8E5M2", kMxFp8E5M2, true, kMxFp8E5M2, false, kFloat32, kMinMax},
  {"MXFP6E3M2", kMxFp6E3M2, true, kMxFp6E3M2, false, kFloat32, kMinMax},
  {"MXFP6E2M3", kMxFp6E2M3, true, kMxFp6E2M3, false, kFloat32, kMinMax},
  {"MXFP4E2M1", kMxFp4E2M1, true, kMxFp4E2M1, false, kFloat32, kMinMax},
  // Quark's mixed-format presets: bfloat16 activations over block-format weights, and MX9
  // activations over int8 weights (per channel; MinMax).
  {"BF16_BFP16",  kBFloat16, true, kBfp16,  false, kBFloat16, kMinMax},
  {"BF16_MXINT8", kBFloat16, true, kMxInt8, false, kBFloat16, kMinMax},
  {"MX9_INT8",    kMx9,      true, kInt8,   true,  kFloat32,  kMinMax},
  // FP8 (OCP E4M3FN / E5M2) Q/DQ: per-tensor activations at scale amax / 448 (57344), weights
  // per output channel, bias float (an FP8 product accumulates in float). ONNX Runtime's
  // float8 QuantizeLinear (opset 21: output_dtype names the type, no zero point).
  {"FP8E4M3",   kFp8E4M3,   true, kFp8E4M3,   true, kFloat32, kMinMax},
  {"FP8E5M2",   kFp8E5M2,   true, kFp8E5M2,   true, kFloat32, kMinMax},
  // INT4 weights in blocks of 32 (opset 21 blocked DequantizeLinear) under int8 / int16
  // activations; the bias stays float (a block-wise weight has several scales per output
  // channel, so no int32 bias scale exists).
  {"A8W4",      kInt8,      true, kInt4,      false, kFloat32, kMinMax, false, kInt4GroupSize},
  {"A16W4",     kInt16,     true, kInt4,      false, kFloat32, kMinMax, false, kInt4GroupSize},
};
// clang-format on

// The accuracy-recovery presets (Quark's <BASE>_ADAROUND / _ADAQUANT): the base preset plus
// CLE (Quark's include_cle defaults on) and the method, as algo_config entries with the
// method's defaults, so the saved config says what ran.
struct RecoveryPresetRow {
  const char* name;
  const char* base;
  ReconstructionMethod method;
};

using enum ReconstructionMethod;

// clang-format off
constexpr RecoveryPresetRow kRecoveryPresets[] = {
  {"XINT8_ADAROUND", "XINT8", kAdaRound},
  {"XINT8_ADAQUANT", "XINT8", kAdaQuant},
  {"A8W8_ADAROUND",  "A8W8",  kAdaRound},
  {"A8W8_ADAQUANT",  "A8W8",  kAdaQuant},
  {"A16W8_ADAROUND", "A16W8", kAdaRound},
  {"A16W8_ADAQUANT", "A16W8", kAdaQuant},
  {"U8S8_ADAROUND",  "U8S8",  kAdaRound},
};
// clang-format on

// Quark's auto-mixed-precision presets, as the exploration they are.
struct SearchPresetRow {
  const char* name;
  const char* base;
  const char* lift;
};

constexpr SearchPresetRow kSearchPresets[] = {
  {"S16S16_MIXED_S8S8", "A8W8", "S16S16"},
};

}  // namespace

std::optional<SearchPreset> search_preset(const std::string& name) {
  const auto row = std::ranges::find_if(
      kSearchPresets, [&](const SearchPresetRow& r) { return text::equal_ignoring_case(r.name, name); });
  if (row == std::end(kSearchPresets)) return std::nullopt;
  return SearchPreset{row->name, row->base, row->lift};
}

std::vector<std::string> default_op_types_to_quantize() {
  std::vector<std::string> op_types;
  for (const ir::OpTraits& row : ir::op_traits_table()) {
    const bool by_default = row.config_role == ir::ConfigRole::kWeighted || row.config_role == ir::ConfigRole::kArithmetic;
    if (by_default && ir::is_default_domain(row.domain)) op_types.emplace_back(row.op_type);
  }
  return op_types;
}

std::optional<QuantConfig> preset_config(const std::string& name) {
  const auto recovery = std::ranges::find_if(kRecoveryPresets, [&](const RecoveryPresetRow& r) {
    return text::equal_ignoring_case(r.name, name);
  });
  if (recovery != std::end(kRecoveryPresets)) {
    QuantConfig config = *preset_config(recovery->base);
    config.algorithms = {{.name = "cle"}, {.name = std::string(reconstruction_method_names().name(recovery->method))}};
    return config;
  }
  const auto row = std::ranges::find_if(kPresets, [&](const PresetRow& r) { return text::equal_ignoring_case(r.name, name); });
  if (row == std::end(kPresets)) return std::nullopt;
  QuantConfig config;
  config.global.input_tensors = TensorQuantSpec{.format = row->activations};
  config.global.weight = TensorQuantSpec{.format = row->weights, .per_channel = row->weight_per_channel};
  if (row->weight_group_size > 0) config.global.weight->group_size = row->weight_group_size;
  // A float bias is said by leaving it out.
  if (row->bias && *row->bias != kFloat32) config.global.bias = TensorQuantSpec{.format = *row->bias};
  config.extra.activation_symmetric = row->activation_symmetric;
  config.extra.int32_bias = !row->bias;
  config.extra.calib_method = row->calib_method;
  config.extra.ort_cpu_fusion = row->ort_cpu_fusion;
  // See ExtraOptions::fold_conv_affine; blocks are finer than channels.
  config.extra.fold_conv_affine = row->weight_per_channel || row->weight_group_size > 0;
  if (row->ort_cpu_fusion) {
    config.extra.op_types_to_quantize = default_op_types_to_quantize();
    config.extra.op_types_to_quantize.insert(config.extra.op_types_to_quantize.end(), std::begin(kOrtCpuOpTypes),
                                             std::end(kOrtCpuOpTypes));
  }
  return config;
}

bool is_preset_op_types(const std::vector<std::string>& op_types) {
  return std::ranges::any_of(kPresets, [&](const PresetRow& row) {
    const std::vector<std::string> listed = preset_config(row.name)->extra.op_types_to_quantize;
    return !listed.empty() && listed == op_types;
  });
}

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const PresetRow& row : kPresets) names.emplace_back(row.name);
  for (const RecoveryPresetRow& row : kRecoveryPresets) names.emplace_back(row.name);
  return names;
}

std::vector<FormatId> formats_used(const QuantConfig& config) {
  std::vector<FormatId> formats;
  const auto add = [&](const LayerConfig& layer) {
    for (const auto* spec : {&layer.input_tensors, &layer.weight, &layer.bias, &layer.output_tensors}) {
      if (*spec) formats.push_back((*spec)->format);
    }
  };
  add(config.global);
  for (const auto& override_ : config.specific) add(override_.layer_config);
  for (const auto& layer_type : config.layer_types) {
    if (layer_type.layer_config) add(*layer_type.layer_config);
  }
  std::sort(formats.begin(), formats.end());
  formats.erase(std::unique(formats.begin(), formats.end()), formats.end());
  return formats;
}

}  // namespace mixprec

namespace mixprec {

size_t ConfigSource::given() const {
  return static_cast<size_t>(!path.empty()) + static_cast<size_t>(!preset.empty()) + static_cast<size_t>(config.has_value());
}

QuantConfig resolve_config(const ConfigSource& source) {
  if (source.given() > 1) throw_bad_input(source.path, "give one of a config, a preset or a plan");
  if (source.config) return *source.config;
  if (!source.path.empty()) return load_config(source.path);
  if (auto preset = preset_config(source.preset)) return *preset;
  if (const auto search = search_preset(source.preset)) {
    throw_bad_input("", search->name + " is a search, not one config (" + search->base + " where it is enough, " +
                            search->lift + " where it is not): mixprec explore MODEL --preset " + search->name +
                            " (the same as --preset " + search->base + " --lift " + search->lift + ")");
  }
  const std::string known = text::join(preset_names());
  throw_bad_input("", source.preset.empty() ? "give --config or --preset (" + known + ")"
                                            : "unknown preset '" + source.preset + "' (known: " + known + ")");
}

void keep_nodes_at(QuantConfig& config, const std::vector<std::string>& nodes, FormatId precision) {
  if (nodes.empty()) return;
  if (precision != FormatId::kBFloat16 && precision != FormatId::kFloat16) {
    throw_bad_input("", std::string("--fp-precision must be bf16 or fp16, not ") + format_traits(precision).name);
  }
  for (const std::string& node : nodes) {
    if (node.empty()) throw_bad_input("", "--fp-nodes has an empty node name");
    if (node.starts_with('^') && node.find(".*") != std::string::npos) {
      throw_bad_input("", "--fp-nodes takes exact node names; '" + node +
                              "' would read as a regex: put it in the config's specific_layer_config target_node_names");
    }
  }
  const TensorQuantSpec spec{.format = precision};
  config.specific.push_back(
      {.target_node_names = nodes, .layer_config = {.input_tensors = spec, .weight = spec, .bias = spec}});
}

void quantize_only_nodes(QuantConfig& config, const std::vector<std::string>& nodes, const std::string& label) {
  if (nodes.empty()) {
    throw_bad_input(label, "--ffn-only: the model has no MLP block or attention projection with a constant weight "
                           "(mixprec analyze lists them)");
  }
  if (!config.global.input_tensors && !config.global.weight) {
    throw_bad_input(label, "--ffn-only: the config's global_config quantizes nothing, so there is no layer to give the "
                           "feed-forward nodes");
  }
  for (const LayerTypeOverride& t : config.layer_types) {
    if (t.layer_config) {
      throw_bad_input(label, "--ffn-only: the config's layer_type_config gives " + text::join(t.op_types) +
                                 " a layer, which would quantize nodes outside the feed-forward parts; drop one of them");
    }
  }
  config.specific.insert(config.specific.begin(), LayerOverride{.target_node_names = nodes, .layer_config = config.global});
  config.global = LayerConfig{};
}

void override_calib_method(QuantConfig& config, CalibMethod method) {
  // The user's method wins everywhere, including specs that name their own.
  config.extra.calib_method = method;
  const auto clear = [](LayerConfig& layer) {
    for (auto* spec : {&layer.input_tensors, &layer.output_tensors}) {
      if (*spec) (*spec)->calib_method.reset();
    }
  };
  clear(config.global);
  for (auto& override_ : config.specific) clear(override_.layer_config);
  for (auto& layer_type : config.layer_types) {
    if (layer_type.layer_config) clear(*layer_type.layer_config);
  }
}

}  // namespace mixprec
