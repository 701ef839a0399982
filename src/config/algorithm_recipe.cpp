// algo_config and the algorithm extra options -> AlgorithmRecipe.
#include <algorithm>
#include <iterator>

#include "config/algorithm_table.h"
#include "mixprec/config.h"

namespace mixprec {
namespace config {
namespace {

constexpr const char* kCleParameters[] = {"cle_steps"};
constexpr const char* kBiasCorrectionParameters[] = {"mode"};

// clang-format off
constexpr AlgorithmRow kAlgorithms[] = {
  {"cle",             true,  kCleParameters},
  {"bias_correction", true,  kBiasCorrectionParameters},
  // Quark's other names: known, so the message can say they are not implemented (issue 12).
  {"adaround",        false, {}},
  {"adaquant",        false, {}},
  {"smoothquant",     false, {}},
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

std::vector<std::string> algorithm_names() {
  std::vector<std::string> names;
  for (const auto& row : config::algorithm_rows()) {
    if (row.implemented) names.emplace_back(row.name);
  }
  return names;
}

std::vector<std::string> AlgorithmRecipe::names() const {
  std::vector<std::string> out;
  if (cle) out.emplace_back("cle");
  if (bias_correction) out.emplace_back("bias_correction");
  return out;
}

AlgorithmRecipe algorithm_recipe(const QuantConfig& config) {
  AlgorithmRecipe recipe;
  const ExtraOptions& extra = config.extra;
  const CleSettings cle{.steps = extra.cle_steps,
                        .scale_append_bias = extra.cle_scale_append_bias,
                        .replace_clip6_relu = extra.replace_clip6_relu};
  if (extra.include_cle) recipe.cle = cle;
  if (extra.bias_correction) recipe.bias_correction = extra.bias_correction_mode;
  for (const AlgorithmEntry& entry : config.algorithms) {
    if (entry.name == "cle") {
      recipe.cle = cle;
      if (entry.cle_steps) recipe.cle->steps = *entry.cle_steps;  // parse_config checked they agree
    } else if (entry.name == "bias_correction") {
      recipe.bias_correction = entry.mode.value_or(extra.bias_correction_mode);
    }
  }
  return recipe;
}

}  // namespace mixprec
