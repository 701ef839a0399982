// algo_config and the algorithm extra options -> AlgorithmRecipe.
#include <algorithm>
#include <iterator>
#include <optional>
#include <vector>

#include "config/algorithm_table.h"
#include "mixprec/config.h"

namespace mixprec {
namespace config {
namespace {

constexpr const char* kCleParameters[] = {"cle_steps"};
constexpr const char* kBiasCorrectionParameters[] = {"mode"};
constexpr const char* kAdaRoundParameters[] = {"num_iterations", "learning_rate", "reg_param", "target", "drop_ratio",
                                               "selective_update", "beta_range", "warm_start", "lr_adjust", "target_op_type"};
constexpr const char* kAdaQuantParameters[] = {"num_iterations", "learning_rate", "target", "drop_ratio", "update_bias",
                                               "selective_update", "lr_adjust", "target_op_type"};
constexpr const char* kSmoothQuantParameters[] = {"alpha"};
constexpr const char* kScaleSearchParameters[] = {"max_shift", "sweeps", "num_samples", "finer"};

// The reconstruction parameters a config gives, by the names FastFinetuneOptions and
// AlgorithmEntry share.
struct GivenReconstruction {
  std::optional<int64_t> num_iterations;
  std::optional<double> learning_rate;
  std::optional<double> reg_param;
  std::optional<double> drop_ratio;
  std::optional<bool> update_bias;
  std::optional<bool> selective_update;
  std::optional<std::vector<double>> beta_range;
  std::optional<double> warm_start;
  std::optional<std::vector<double>> lr_adjust;
  std::optional<std::vector<std::string>> target_op_type;
};
GivenReconstruction given_by(const auto& from) {
  return {from.num_iterations,   from.learning_rate, from.reg_param,  from.drop_ratio, from.update_bias,
          from.selective_update, from.beta_range,    from.warm_start, from.lr_adjust,  from.target_op_type};
}
// `given`'s values, each unset one from `fallback`.
GivenReconstruction over(GivenReconstruction given, const GivenReconstruction& fallback) {
  const auto fill = [](auto& value, const auto& other) {
    if (!value) value = other;
  };
  fill(given.num_iterations, fallback.num_iterations);
  fill(given.learning_rate, fallback.learning_rate);
  fill(given.reg_param, fallback.reg_param);
  fill(given.drop_ratio, fallback.drop_ratio);
  fill(given.update_bias, fallback.update_bias);
  fill(given.selective_update, fallback.selective_update);
  fill(given.beta_range, fallback.beta_range);
  fill(given.warm_start, fallback.warm_start);
  fill(given.lr_adjust, fallback.lr_adjust);
  fill(given.target_op_type, fallback.target_op_type);
  return given;
}

// clang-format off
constexpr AlgorithmRow kAlgorithms[] = {
  {"cle",             true,  kCleParameters},
  {"adaround",        true,  kAdaRoundParameters},
  {"adaquant",        true,  kAdaQuantParameters},
  {"bias_correction", true,  kBiasCorrectionParameters},
  {"smoothquant",     true,  kSmoothQuantParameters},
  {"scale_search",    true,  kScaleSearchParameters},  // mixprec's own: Quark has none
  // Quark's other names: known, so the message can say they are not implemented.
  {"gptq",            false, {}},
  {"quarot",          false, {}},
};
// clang-format on

}  // namespace

std::span<const AlgorithmRow> algorithm_rows() { return kAlgorithms; }

const AlgorithmRow* find_algorithm(std::string_view name) {
  const auto row = std::ranges::find(kAlgorithms, name, &AlgorithmRow::name);
  return row == std::end(kAlgorithms) ? nullptr : &*row;
}

}  // namespace config

const EnumNames<BiasCorrectionMode>& bias_correction_mode_names() {
  static constexpr EnumName<BiasCorrectionMode> kRows[] = {{BiasCorrectionMode::kModel, "model"},
                                                           {BiasCorrectionMode::kLayer, "layer"}};
  static constexpr EnumNames<BiasCorrectionMode> kNames{kRows};
  return kNames;
}

const EnumNames<ReconstructionMethod>& reconstruction_method_names() {
  static constexpr EnumName<ReconstructionMethod> kRows[] = {{ReconstructionMethod::kAdaRound, "adaround"},
                                                             {ReconstructionMethod::kAdaQuant, "adaquant"}};
  static constexpr EnumNames<ReconstructionMethod> kNames{kRows};
  return kNames;
}

const EnumNames<ReconstructionTarget>& reconstruction_target_names() {
  static constexpr EnumName<ReconstructionTarget> kRows[] = {{ReconstructionTarget::kQuantizedInput, "quantized_input"},
                                                             {ReconstructionTarget::kFloatOutput, "float_output"}};
  static constexpr EnumNames<ReconstructionTarget> kNames{kRows};
  return kNames;
}

std::span<const char* const> reconstructed_op_types() {
  static constexpr const char* kOpTypes[] = {"Conv", "ConvTranspose", "Gemm", "MatMul"};
  return kOpTypes;
}

ReconstructionSettings default_reconstruction(ReconstructionMethod method) {
  ReconstructionSettings settings{.method = method};
  if (method == ReconstructionMethod::kAdaQuant) {
    settings.iterations = 3000;
    settings.learning_rate = 1e-5;
  }
  return settings;
}

std::vector<std::string> algorithm_names() {
  std::vector<std::string> names;
  for (const auto& row : config::algorithm_rows()) {
    if (row.implemented) names.emplace_back(row.name);
  }
  for (const auto& name : added_pass_names()) names.push_back(name);
  return names;
}

std::vector<PassCall> AlgorithmRecipe::passes_of(PassStage stage) const {
  std::vector<PassCall> out;
  std::ranges::copy_if(passes, std::back_inserter(out), [&](const PassCall& p) { return p.stage == stage; });
  return out;
}

std::vector<std::string> AlgorithmRecipe::names() const {
  std::vector<std::string> out;
  const auto add_passes = [&](PassStage stage) {
    for (const PassCall& p : passes_of(stage)) out.push_back(p.name);
  };
  if (cle) out.emplace_back("cle");
  if (smooth_quant) out.emplace_back("smoothquant");
  add_passes(PassStage::kFloat);
  if (scale_search) out.emplace_back("scale_search");
  if (reconstruction) out.emplace_back(reconstruction_method_names().name(reconstruction->method));
  if (bias_correction) out.emplace_back("bias_correction");
  add_passes(PassStage::kQuantized);
  return out;
}

std::vector<std::string> AlgorithmRecipe::labels() const {
  std::vector<std::string> out = names();
  for (std::string& name : out) {
    if (name == "bias_correction") name += std::string(" (") + bias_correction_mode_names().name(*bias_correction) + ")";
  }
  return out;
}

std::vector<std::string> algorithm_labels(const QuantConfig& config) { return algorithm_recipe(config).labels(); }

AlgorithmRecipe algorithm_recipe(const QuantConfig& config) {
  AlgorithmRecipe recipe;
  const ExtraOptions& extra = config.extra;
  const CleSettings cle{.steps = extra.cle_steps,
                        .scale_append_bias = extra.cle_scale_append_bias,
                        .replace_clip6_relu = extra.replace_clip6_relu,
                        .mul_tails = extra.cle_mul_tails};
  if (extra.include_cle) recipe.cle = cle;
  if (extra.bias_correction) recipe.bias_correction = extra.bias_correction_mode;
  if (extra.include_sq) recipe.smooth_quant = SmoothQuantSettings{.alpha = extra.smooth_alpha};
  // Given values over the method's defaults (parse_config checked the two places agree).
  const auto reconstruction = [&](ReconstructionMethod method, const config::GivenReconstruction& given) {
    ReconstructionSettings settings = default_reconstruction(method);
    settings.iterations = given.num_iterations.value_or(settings.iterations);
    settings.learning_rate = given.learning_rate.value_or(settings.learning_rate);
    settings.reg_param = given.reg_param.value_or(settings.reg_param);
    settings.drop_ratio = given.drop_ratio.value_or(settings.drop_ratio);
    // AdaRound learns only the rounding and ignores UpdateBias, as Quark does; AdaQuant has no
    // rounding regulariser to schedule (parse_config warns about both).
    if (method == ReconstructionMethod::kAdaQuant) settings.update_bias = given.update_bias.value_or(settings.update_bias);
    if (method == ReconstructionMethod::kAdaRound) {
      if (given.beta_range) {
        settings.beta_start = (*given.beta_range)[0];
        settings.beta_end = (*given.beta_range)[1];
      }
      settings.warm_start = given.warm_start.value_or(settings.warm_start);
    }
    settings.selective_update = given.selective_update.value_or(settings.selective_update);
    if (given.lr_adjust && given.lr_adjust->size() == 2) {  // [] is Quark's default: none
      settings.lr_adjust =
          ReconstructionSettings::LearningRateAdjust{.threshold = (*given.lr_adjust)[0], .learning_rate = (*given.lr_adjust)[1]};
    }
    // Quark's other target op types (InstanceNormalization, LayerNormalization) are accepted and
    // match no layer mixprec learns (a list of only them leaves the "nothing learned" note).
    if (given.target_op_type) settings.op_types = *given.target_op_type;
    return settings;
  };
  const FastFinetuneOptions& ft = extra.fast_finetune;
  if (extra.include_fast_ft) recipe.reconstruction = reconstruction(ft.optim_algorithm, config::given_by(ft));
  for (const AlgorithmEntry& entry : config.algorithms) {
    if (const AddedPass* pass = find_added_pass(entry.name); pass && !config::find_algorithm(entry.name)) {
      recipe.passes.push_back({.name = entry.name, .stage = pass->stage, .params = entry.params.dump()});
    } else if (entry.name == "cle") {
      recipe.cle = cle;
      if (entry.cle_steps) recipe.cle->steps = *entry.cle_steps;  // parse_config checked they agree
    } else if (entry.name == "smoothquant") {
      recipe.smooth_quant = SmoothQuantSettings{.alpha = entry.alpha.value_or(extra.smooth_alpha)};  // checked to agree
    } else if (entry.name == "scale_search") {
      ScaleSearchSettings& settings = recipe.scale_search.emplace();
      settings.max_shift = entry.max_shift.value_or(settings.max_shift);
      settings.sweeps = entry.sweeps.value_or(settings.sweeps);
      settings.samples = entry.num_samples.value_or(settings.samples);
      settings.finer = entry.finer.value_or(settings.finer);
    } else if (entry.name == "bias_correction") {
      recipe.bias_correction = entry.mode.value_or(extra.bias_correction_mode);
    } else if (const auto method = reconstruction_method_names().from_name(entry.name)) {
      // The entry's values, else FastFinetune's when it names the same method.
      const bool same = extra.include_fast_ft && ft.optim_algorithm == *method;
      const config::GivenReconstruction given = config::given_by(entry);
      recipe.reconstruction = reconstruction(*method, same ? config::over(given, config::given_by(ft)) : given);
      if (entry.target) recipe.reconstruction->target = *entry.target;
    }
  }
  return recipe;
}

}  // namespace mixprec
