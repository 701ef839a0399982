// The rows of quark_tables.h, from amd/Quark's ONNX config classes (quark/onnx/quantization/
// config: data_type.py's dt_name_map, spec.py's enums, algorithm.py's AlgoConfig classes).
#include "config/quark_tables.h"

#include <algorithm>
#include <array>
#include <iterator>

#include "common/text.h"
#include "mixprec/error.h"

namespace mixprec::config::quark {
namespace {

using enum FormatId;

// clang-format off
constexpr DataTypeRow kDataTypes[] = {
  // name         Float32        PowerOf2
  {"Int8",        kInt8,         kXInt8},
  {"UInt8",       kUInt8,        std::nullopt},
  {"Int16",       kInt16,        std::nullopt},
  {"UInt16",      kUInt16,       std::nullopt},
  {"BFloat16",    kBFloat16,     std::nullopt},
  {"Float16",     kFloat16,      std::nullopt},
  {"Int32",       std::nullopt,  std::nullopt, true},
  // Block formats (a shared exponent per block; Quark's block parameters are the format's own).
  {"BFP16",       kBfp16,        std::nullopt},
  {"MX4",         kMx4,          std::nullopt},
  {"MX6",         kMx6,          std::nullopt},
  {"MX9",         kMx9,          std::nullopt},
  {"MXInt8",      kMxInt8,       std::nullopt},
  {"MXFP8E4M3",   kMxFp8E4M3,    std::nullopt},
  {"MXFP8E5M2",   kMxFp8E5M2,    std::nullopt},
  {"MXFP6E3M2",   kMxFp6E3M2,    std::nullopt},
  {"MXFP6E2M3",   kMxFp6E2M3,    std::nullopt},
  {"MXFP4E2M1",   kMxFp4E2M1,    std::nullopt},
  {"Int4",        kInt4,         std::nullopt},
  {"UInt4",       kUInt4,        std::nullopt},
  // Not expressible yet: 32-bit codes outside a bias.
  {"UInt32",      std::nullopt,  std::nullopt},
};

constexpr EnumMember<ScaleType> kScaleTypes[] = {
  {ScaleType::kFloat32,  "Float32",  true},
  {ScaleType::kPowerOf2, "PowerOf2", true},
  {ScaleType::kInt16,    "Int16",    false},
};

constexpr EnumMember<Method> kMethods[] = {
  {Method::kMinMax,              "MinMax",              true},
  {Method::kMinMse,              "MinMSE",              true},
  {Method::kPercentile,          "Percentile",          true},
  {Method::kEntropy,             "Entropy",             true},
  {Method::kLayerwisePercentile, "LayerwisePercentile", false},
  {Method::kDistribution,        "Distribution",        false},
};

constexpr EnumMember<Granularity> kGranularities[] = {
  {Granularity::kTensor,  "Tensor",  true},
  {Granularity::kChannel, "Channel", true},
  {Granularity::kGroup,   "Group",   true},
};

// Quark's method at a scale type -> mixprec's (quark/onnx/quantization/config/maps.py maps
// MinMax + PowerOf2 to PowerOfTwoMethod.NonOverflow and MinMSE + PowerOf2 to PowerOfTwoMethod.MinMSE).
struct MethodRow {
  Method quark;
  bool power_of_two;
  CalibMethod mixprec;
};
constexpr MethodRow kMethodMap[] = {
  {Method::kMinMax,     false, CalibMethod::kMinMax},
  {Method::kMinMax,     true,  CalibMethod::kPowerOfTwoNonOverflow},
  {Method::kMinMse,     false, CalibMethod::kMinMse},
  {Method::kMinMse,     true,  CalibMethod::kPowerOfTwoMinMse},
  {Method::kPercentile, false, CalibMethod::kPercentile},
  {Method::kPercentile, true,  CalibMethod::kPercentile},
  {Method::kEntropy,    false, CalibMethod::kEntropy},
  {Method::kEntropy,    true,  CalibMethod::kEntropy},
};

constexpr const char* kCleUsed[] = {"cle_steps", "cle_scale_append_bias"};
constexpr const char* kCleUnused[] = {"cle_balance_method", "cle_weight_threshold", "cle_scale_use_threshold",
                                      "cle_total_layer_diff_threshold"};
constexpr const char* kAdaRoundUsed[] = {"num_iterations", "learning_rate", "reg_param", "drop_ratio", "selective_update",
                                         "beta_range", "warm_start", "lr_adjust", "target_op_type"};
constexpr const char* kAdaQuantUsed[] = {"num_iterations", "learning_rate", "drop_ratio", "update_bias", "selective_update",
                                         "lr_adjust", "target_op_type"};
constexpr const char* kSmoothQuantUsed[] = {"alpha"};
// AdaRoundConfig's and AdaQuantConfig's other parameters (the same for both), plus: AdaRound's
// update_bias (Quark's AdaRound ignores it too) and AdaQuant's reg_param, beta_range and
// warm_start (the rounding regulariser's, which AdaQuant does not have).
// mixprec learns on CPU, full-batch over every calibration sample, every step, with no random
// draw, against the model given; a key whose value says the same, or that only places Quark's
// work (devices, logging, caching, pinned memory), is accepted without a word.
// clang-format off
constexpr UnusedReconstructionKey kUnusedKeys[] = {
  {"optim_device",         "OptimDevice",       "\"cpu\""},
  {"infer_device",         "InferDevice",       "\"cpu\""},
  {"fixed_seed",           "FixedSeed",         "*"},      // nothing is drawn: every seed gives mixprec's result
  {"data_size",            "DataSize",          nullptr},
  {"batch_size",           "BatchSize",         nullptr},
  {"num_batches",          "NumBatches",        nullptr},
  {"early_stop",           "EarlyStop",         "false"},
  {"output_index",         "OutputIndex",       nullptr},
  {"output_qdq",           "OutputQDQ",         "false"},  // the loss before the output's quantizer
  {"mem_opt_level",        "MemOptLevel",       "1"},      // Quark's default; its level 2 changes what Quark computes
  {"cache_dir",            nullptr,             "*"},
  {"log_period",           "LogPeriod",         "*"},
  {"ref_model_path",       "RefModelPath",      "null"},
  {"dynamic_batch",        "DynamicBatch",      "false"},
  {"parallel",             "Parallel",          "false"},  // layer after layer, each on its learned upstream
  {"select_max_mem_layer", "SelectMaxMemLayer", nullptr},
  {"num_workers",          "NumWorkers",        nullptr},  // it changes what Quark computes
  {"pin_memory",           nullptr,             "*"},
  {"use_gds",              nullptr,             "*"},
};
// clang-format on
constexpr auto kReconstructionUnused = [] {
  std::array<const char*, std::size(kUnusedKeys)> names{};
  for (size_t i = 0; i < names.size(); ++i) names[i] = kUnusedKeys[i].param;
  return names;
}();
template <size_t N>
constexpr auto with_unused(const std::array<const char*, N>& extra) {
  std::array<const char*, kReconstructionUnused.size() + N> names{};
  std::ranges::copy(extra, std::ranges::copy(kReconstructionUnused, names.begin()).out);
  return names;
}
constexpr auto kAdaRoundUnused = with_unused(std::array{"update_bias"});
constexpr auto kAdaQuantUnused = with_unused(std::array{"reg_param", "beta_range", "warm_start"});

constexpr AlgorithmRow kAlgorithms[] = {
  {"cle",               "cle",             true,  kCleUsed,         kCleUnused},
  {"adaround",          "adaround",        true,  kAdaRoundUsed,    kAdaRoundUnused},
  {"adaquant",          "adaquant",        true,  kAdaQuantUsed,    kAdaQuantUnused},
  {"bias_correction",   "bias_correction", true,  {},               {}},
  {"smooth_quant",      "smoothquant",     true,  kSmoothQuantUsed, {}},
  {"gptq",              "gptq",            false, {},               {}},
  {"auto_mixprecision", "auto_mixprecision", false, {},               {}},
  {"quarot",            "quarot",          false, {},               {}},
};
// clang-format on

}  // namespace

std::span<const DataTypeRow> data_types() { return kDataTypes; }

const DataTypeRow* find_data_type(std::string_view name) {
  const auto row = std::ranges::find(kDataTypes, name, &DataTypeRow::name);
  return row == std::end(kDataTypes) ? nullptr : &*row;
}

const DataTypeRow* data_type_of(FormatId format) {
  const auto row = std::ranges::find_if(kDataTypes, [&](const DataTypeRow& r) { return r.format == format || r.power_of_two == format; });
  return row == std::end(kDataTypes) ? nullptr : &*row;
}

std::string supported_data_types() {
  std::string names, bias;
  for (const DataTypeRow& row : kDataTypes) {
    if (row.format || row.power_of_two) names += (names.empty() ? "" : ", ") + std::string(row.name);
    if (row.int32_bias) bias += ", " + std::string(row.name) + " (as a bias)";
  }
  return names + bias;
}

const EnumClass<ScaleType>& scale_types() {
  static constexpr EnumClass<ScaleType> kClass{"ScaleType", kScaleTypes};
  return kClass;
}

const EnumClass<Method>& methods() {
  static constexpr EnumClass<Method> kClass{"CalibMethod", kMethods};
  return kClass;
}

const EnumClass<Granularity>& granularities() {
  static constexpr EnumClass<Granularity> kClass{"QuantGranularity", kGranularities};
  return kClass;
}

std::optional<CalibMethod> calib_method_of(Method method, bool power_of_two) {
  const auto row = std::ranges::find_if(kMethodMap, [&](const MethodRow& r) { return r.quark == method && r.power_of_two == power_of_two; });
  return row == std::end(kMethodMap) ? std::nullopt : std::optional(row->mixprec);
}

Method method_of(CalibMethod method) {
  // Every built-in mixprec method has a row (the first one names its Quark spelling).
  const auto row = std::ranges::find(kMethodMap, method, &MethodRow::mixprec);
  if (row == std::end(kMethodMap)) {
    throw_bad_input("", std::string("Quark's shape has no spelling for calibration method ") + calib_method_traits(method).name +
                            " (a plugin's): write the config in mixprec's shape");
  }
  return row->quark;
}

std::span<const AlgorithmRow> algorithms() { return kAlgorithms; }

const UnusedReconstructionKey* find_unused_reconstruction_key(std::string_view name) {
  const auto row = std::ranges::find_if(kUnusedKeys, [&](const UnusedReconstructionKey& k) {
    return name == k.param || (k.fast_finetune && name == k.fast_finetune);
  });
  return row == std::end(kUnusedKeys) ? nullptr : row;
}

bool does_what_mixprec_does(const UnusedReconstructionKey& key, const nlohmann::ordered_json& value) {
  if (!key.same_as) return false;
  if (std::string_view(key.same_as) == "*") return true;
  const nlohmann::ordered_json same = nlohmann::ordered_json::parse(key.same_as);
  if (same.is_string() && value.is_string()) {
    return text::equal_ignoring_case(same.get<std::string>(), value.get<std::string>());
  }
  return same == value;
}

const AlgorithmRow* find_algorithm(std::string_view name) {
  const auto row = std::ranges::find(kAlgorithms, name, &AlgorithmRow::name);
  return row == std::end(kAlgorithms) ? nullptr : &*row;
}

const AlgorithmRow* find_algorithm_by_mixprec_name(std::string_view name) {
  const auto row = std::ranges::find(kAlgorithms, name, &AlgorithmRow::mixprec_name);
  return row == std::end(kAlgorithms) ? nullptr : &*row;
}

}  // namespace mixprec::config::quark
