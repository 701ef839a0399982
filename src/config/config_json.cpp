// mixprec's config JSON shape <-> QuantConfig, and the entry points that read either shape
// (Quark's is quark_config.cpp).
//
// The schema is the field tables below: one row per key, in the order config_to_json writes
// them. Reading walks the JSON object, so every key without a row is seen, warned about and
// kept (written back after the known keys). TensorQuantSpec is the one hand-written shape:
// its fields are split between the SPEC object ("spec") and its "params" object.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <span>
#include <variant>

#include "common/json_text.h"
#include "common/text.h"
#include "config/algorithm_table.h"
#include "config/config_reading.h"
#include "config/node_pattern.h"
#include "config/quark_config.h"
#include "config/quark_tables.h"
#include "config/weight_grid.h"
#include "mixprec/config.h"
#include "mixprec/error.h"
#include "mixprec/log.h"
#include "mixprec/model_io.h"

namespace mixprec {
namespace {

using config::Json;
using NodePair = std::pair<std::string, std::string>;

using config::Where;

// --- Field tables ------------------------------------------------------------------------------

// Whether a writer leaves out fields equal to their default (unset optionals, false flags).
enum class Defaults { kWrite, kOmit };

// One key of a JSON object and the member it maps onto; `Types` are the member types the
// owner's table uses.
template <class Owner, class... Types>
struct Field {
  std::string_view key;
  std::variant<Types Owner::*...> member;
};

// SPEC "params" (kept in TensorQuantSpec itself).
const Field<TensorQuantSpec, std::optional<bool>, bool, std::optional<int64_t>, std::optional<CalibMethod>>
    kParamFields[] = {
    {"symmetric", &TensorQuantSpec::symmetric},
    {"per_channel", &TensorQuantSpec::per_channel},
    {"ch_axis", &TensorQuantSpec::ch_axis},
    {"group_size", &TensorQuantSpec::group_size},
    {"reduce_range", &TensorQuantSpec::reduce_range},
    {"calib_method", &TensorQuantSpec::calib_method},
};

// The JSON objects that map one-to-one onto a struct: fields, where unknown keys go, and
// whether defaults are written.
template <class T>
struct Schema;

template <>
struct Schema<QuantConfig> {
  static constexpr Field<QuantConfig, LayerConfig, std::vector<LayerOverride>, std::vector<LayerTypeOverride>,
                         ExcludeConfig, ExtraOptions, std::vector<AlgorithmEntry>, bool>
      kFields[] = {
          {"global_config", &QuantConfig::global},
          {"specific_layer_config", &QuantConfig::specific},
          {"layer_type_config", &QuantConfig::layer_types},  // written only when set (config_to_json)
          {"exclude", &QuantConfig::exclude},
          {"extra_options", &QuantConfig::extra},
          {"algo_config", &QuantConfig::algorithms},                            // the same
          {"use_external_data_format", &QuantConfig::use_external_data_format},  // the same
      };
  static constexpr auto kUnknown = &QuantConfig::unknown_keys;
  static constexpr Defaults kDefaults = Defaults::kWrite;
};

template <>
struct Schema<LayerConfig> {
  static constexpr Field<LayerConfig, std::optional<TensorQuantSpec>> kFields[] = {
      {"input_tensors", &LayerConfig::input_tensors},
      {"weight", &LayerConfig::weight},
      {"bias", &LayerConfig::bias},
      {"output_tensors", &LayerConfig::output_tensors},
  };
  static constexpr auto kUnknown = &LayerConfig::unknown_keys;
  static constexpr Defaults kDefaults = Defaults::kOmit;  // an absent tensor stays in float
};

template <>
struct Schema<LayerOverride> {
  static constexpr Field<LayerOverride, std::vector<std::string>, LayerConfig> kFields[] = {
      {"target_node_names", &LayerOverride::target_node_names},
      {"layer_config", &LayerOverride::layer_config},
  };
  static constexpr auto kUnknown = &LayerOverride::unknown_keys;
  static constexpr Defaults kDefaults = Defaults::kWrite;
};

template <>
struct Schema<LayerTypeOverride> {
  static constexpr Field<LayerTypeOverride, std::vector<std::string>, std::optional<LayerConfig>> kFields[] = {
      {"op_types", &LayerTypeOverride::op_types},
      {"layer_config", &LayerTypeOverride::layer_config},
  };
  static constexpr auto kUnknown = &LayerTypeOverride::unknown_keys;
  static constexpr Defaults kDefaults = Defaults::kWrite;  // a null layer is written as null
};

template <>
struct Schema<ExcludeConfig> {
  static constexpr Field<ExcludeConfig, std::vector<std::string>, std::vector<NodePair>> kFields[] = {
      {"node_names", &ExcludeConfig::node_names},
      {"subgraphs", &ExcludeConfig::subgraphs},
  };
  static constexpr auto kUnknown = &ExcludeConfig::unknown_keys;
  static constexpr Defaults kDefaults = Defaults::kWrite;
};

// A key of Quark's FastFinetune that mixprec does not read: accepted without a word where its
// value asks for what mixprec does anyway, else warned about; either way kept when the config
// is saved. False for a key Quark does not have.
bool quark_fast_finetune_key(const std::string& key, const Json& value, const Where& at) {
  const config::quark::UnusedReconstructionKey* row = config::quark::find_unused_reconstruction_key(key);
  if (!row || !row->fast_finetune || key != row->fast_finetune) return false;
  if (!config::quark::does_what_mixprec_does(*row, value)) {
    (at / key).warn("is a key of Quark's FastFinetune that mixprec does not use (mixprec learns on CPU with every "
                    "calibration sample at once; kept when the config is saved)");
  }
  return true;
}

template <>
struct Schema<FastFinetuneOptions> {
  static constexpr Field<FastFinetuneOptions, ReconstructionMethod, std::optional<int64_t>, std::optional<double>,
                         std::optional<bool>, std::optional<std::vector<double>>, std::optional<std::vector<std::string>>>
      kFields[] = {
      {"OptimAlgorithm", &FastFinetuneOptions::optim_algorithm},
      {"NumIterations", &FastFinetuneOptions::num_iterations},
      {"LearningRate", &FastFinetuneOptions::learning_rate},
      {"RegParam", &FastFinetuneOptions::reg_param},
      {"DropRatio", &FastFinetuneOptions::drop_ratio},
      {"UpdateBias", &FastFinetuneOptions::update_bias},
      {"SelectiveUpdate", &FastFinetuneOptions::selective_update},
      {"BetaRange", &FastFinetuneOptions::beta_range},
      {"WarmStart", &FastFinetuneOptions::warm_start},
      {"LRAdjust", &FastFinetuneOptions::lr_adjust},
      {"TargetOpType", &FastFinetuneOptions::target_op_type},
  };
  static constexpr auto kUnknown = &FastFinetuneOptions::unknown;
  static constexpr auto kOtherToolsKey = &quark_fast_finetune_key;
  static constexpr Defaults kDefaults = Defaults::kOmit;  // unset: the method's defaults
};

template <>
struct Schema<ExtraOptions> {
  static constexpr Field<ExtraOptions, std::vector<std::string>, bool, CalibMethod, int64_t, BiasCorrectionMode,
                         FastFinetuneOptions, double> kFields[] = {
      {"OpTypesToQuantize", &ExtraOptions::op_types_to_quantize},
      {"ActivationSymmetric", &ExtraOptions::activation_symmetric},
      {"UseUnsignedReLU", &ExtraOptions::use_unsigned_relu},
      {"UseRandomData", &ExtraOptions::use_random_data},
      {"ConvertBNToConv", &ExtraOptions::convert_bn_to_conv},
      {"BF16QDQToCast", &ExtraOptions::bf16_qdq_to_cast},
      {"Int32Bias", &ExtraOptions::int32_bias},
      {"OrtCpuFusion", &ExtraOptions::ort_cpu_fusion},
      {"MatMulNBits", &ExtraOptions::matmul_nbits},
      {"FoldConvAffine", &ExtraOptions::fold_conv_affine},
      {"CalibMethod", &ExtraOptions::calib_method},
      {"NumCalibSamples", &ExtraOptions::num_calib_samples},
      {"IncludeCLE", &ExtraOptions::include_cle},
      {"CLESteps", &ExtraOptions::cle_steps},
      {"CLEScaleAppendBias", &ExtraOptions::cle_scale_append_bias},
      {"ReplaceClip6Relu", &ExtraOptions::replace_clip6_relu},
      {"CLEMulTails", &ExtraOptions::cle_mul_tails},
      {"BiasCorrection", &ExtraOptions::bias_correction},
      {"BiasCorrectionMode", &ExtraOptions::bias_correction_mode},
      {"IncludeFastFT", &ExtraOptions::include_fast_ft},
      {"FastFinetune", &ExtraOptions::fast_finetune},
      {"IncludeSQ", &ExtraOptions::include_sq},
      {"SmoothAlpha", &ExtraOptions::smooth_alpha},
  };
  static constexpr auto kUnknown = &ExtraOptions::unknown;
  static constexpr Defaults kDefaults = Defaults::kWrite;  // a saved config states every option
};

template <class T>
concept HasSchema = requires { Schema<T>::kFields; };

// --- Readers and writers, one overload per value type ------------------------------------------
// (Declared up front: the generic ones call each other, and argument-dependent lookup does not
// see this unnamed namespace.)

void read_value(const Json& json, const Where& at, bool& out);
void read_value(const Json& json, const Where& at, int64_t& out);
void read_value(const Json& json, const Where& at, double& out);
void read_value(const Json& json, const Where& at, std::string& out);
void read_value(const Json& json, const Where& at, FormatId& out);
void read_value(const Json& json, const Where& at, CalibMethod& out);
void read_value(const Json& json, const Where& at, BiasCorrectionMode& out);
void read_value(const Json& json, const Where& at, ReconstructionMethod& out);
void read_value(const Json& json, const Where& at, ReconstructionTarget& out);
void read_value(const Json& json, const Where& at, NodePair& out);
void read_value(const Json& json, const Where& at, TensorQuantSpec& out);
void read_value(const Json& json, const Where& at, std::vector<LayerOverride>& out);
void read_value(const Json& json, const Where& at, LayerTypeOverride& out);
void read_value(const Json& json, const Where& at, AlgorithmEntry& out);
template <class T>
void read_value(const Json& json, const Where& at, std::optional<T>& out);
template <class T>
void read_value(const Json& json, const Where& at, std::vector<T>& out);
template <HasSchema T>
void read_value(const Json& json, const Where& at, T& out);

Json to_json_value(bool value);
Json to_json_value(int64_t value);
Json to_json_value(double value);
Json to_json_value(const std::string& value);
Json to_json_value(FormatId value);
Json to_json_value(CalibMethod value);
Json to_json_value(BiasCorrectionMode value);
Json to_json_value(ReconstructionMethod value);
Json to_json_value(ReconstructionTarget value);
Json to_json_value(const NodePair& value);
Json to_json_value(const TensorQuantSpec& value);
Json to_json_value(const AlgorithmEntry& value);
template <class T>
Json to_json_value(const std::optional<T>& value);
template <class T>
Json to_json_value(const std::vector<T>& value);
template <HasSchema T>
Json to_json_value(const T& value);

// Records an unknown key: a visible warning, and the value is kept for saving.
void keep_unknown(const std::string& key, const Json& value, const Where& at, Json& unknown) {
  (at / key).warn("is not a known key: it is not used (kept when the config is saved)");
  unknown[key] = value;
}

// A key another tool defines (Quark's FastFinetune keys mixprec does not read): true when
// `key` is one, after any warning it calls for.
using OtherToolsKey = bool (*)(const std::string& key, const Json& value, const Where& at);

// Reads the `fields` of `owner` from the object `json`; returns the unknown keys.
template <class Owner, class... Types, size_t N>
Json read_fields(const Json& json, const Where& at, const Field<Owner, Types...> (&fields)[N], Owner& owner,
                 OtherToolsKey other_tools = nullptr) {
  if (!json.is_object()) at.fail("must be an object");
  Json unknown = Json::object();
  for (const auto& item : json.items()) {
    const auto field = std::ranges::find(fields, std::string_view(item.key()), &Field<Owner, Types...>::key);
    if (field == std::end(fields)) {
      if (other_tools && other_tools(item.key(), item.value(), at)) {
        unknown[item.key()] = item.value();
      } else {
        keep_unknown(item.key(), item.value(), at, unknown);
      }
      continue;
    }
    std::visit([&](auto member) { read_value(item.value(), at / item.key(), owner.*member); }, field->member);
  }
  return unknown;
}

template <class Owner, class... Types, size_t N>
void write_fields(const Owner& owner, const Field<Owner, Types...> (&fields)[N], Defaults defaults, Json& json) {
  static const Owner kDefault{};
  for (const auto& field : fields) {
    std::visit(
        [&](auto member) {
          if (defaults == Defaults::kOmit && owner.*member == kDefault.*member) return;
          json[std::string(field.key)] = to_json_value(owner.*member);
        },
        field.member);
  }
}

void append_unknown(const Json& unknown, Json& json) {
  for (const auto& item : unknown.items()) json[item.key()] = item.value();
}

template <class Row>
std::string join_names(std::span<const Row> rows, const char* Row::*name) {
  return text::join_each(rows, [&](const Row& row) { return row.*name; });
}

void read_value(const Json& json, const Where& at, bool& out) { out = config::read_bool(json, at); }
void read_value(const Json& json, const Where& at, int64_t& out) { out = config::read_integer(json, at); }
void read_value(const Json& json, const Where& at, double& out) { out = config::read_number(json, at); }
void read_value(const Json& json, const Where& at, std::string& out) { out = config::read_string(json, at); }

void read_value(const Json& json, const Where& at, FormatId& out) {
  std::string name;
  read_value(json, at, name);
  const std::optional<FormatId> format = format_from_name(name);
  if (!format) {
    at.fail("names an unknown spec \"" + name + "\" (known: " + join_names(std::span<const FormatTraits>(all_formats()), &FormatTraits::spec_name) + ")");
  }
  out = *format;
}

void read_value(const Json& json, const Where& at, CalibMethod& out) {
  std::string name;
  read_value(json, at, name);
  const std::optional<CalibMethod> method = calib_method_from_name(name);
  if (!method) {
    at.fail("names an unknown calibration method \"" + name + "\" (known: " +
            join_names(std::span<const CalibMethodTraits>(all_calib_methods()), &CalibMethodTraits::name) +
            "; a plugin's method needs --use-plugin)");
  }
  out = *method;
}

void read_value(const Json& json, const Where& at, BiasCorrectionMode& out) {
  out = config::read_named(json, at, bias_correction_mode_names(), "bias correction mode");
}

void read_value(const Json& json, const Where& at, ReconstructionMethod& out) {
  out = config::read_named(json, at, reconstruction_method_names(), "method");
}

void read_value(const Json& json, const Where& at, ReconstructionTarget& out) {
  out = config::read_named(json, at, reconstruction_target_names(), "target");
}

void read_value(const Json& json, const Where& at, NodePair& out) {
  if (!json.is_array() || json.size() != 2 || !json[0].is_string() || !json[1].is_string()) {
    at.fail("must be a [start, end] pair of node names");
  }
  out = {json[0].get<std::string>(), json[1].get<std::string>()};
}

void read_value(const Json& json, const Where& at, TensorQuantSpec& out) {
  if (!json.is_object()) at.fail("must be an object");
  if (!json.contains("spec")) at.fail("must name a spec (\"spec\": \"Int8Spec\", ...)");
  for (const auto& item : json.items()) {
    if (item.key() == "spec") {
      read_value(item.value(), at / "spec", out.format);
    } else if (item.key() == "params") {
      out.unknown_params = read_fields(item.value(), at / "params", kParamFields, out);
    } else {
      keep_unknown(item.key(), item.value(), at, out.unknown_keys);
    }
  }
  if (out.group_size) {
    if (*out.group_size < 1) (at / "params.group_size").fail("must be a positive number of weights");
    if (!format_traits(out.format).is_qdq || !format_traits(out.format).per_channel_allowed) {
      (at / "params.group_size")
          .fail(std::string("does not apply to ") + format_traits(out.format).spec_name +
                " (groups take Q/DQ formats with per-channel parameters: Int8Spec, Int4Spec, UInt4Spec, ...)");
    }
  }
  if (out.reduce_range && !config::reduces_range(out.format)) {
    (at / "params.reduce_range")
        .fail(std::string("does not apply to ") + format_traits(out.format).spec_name +
              " (it halves the code range of 8-bit integer weights: Int8Spec, UInt8Spec)");
  }
  // insert_qdq quantizes such a spec per tensor: say so rather than drop the request silently.
  if (out.per_channel && !format_traits(out.format).per_channel_allowed) {
    (at / "params.per_channel")
        .warn(std::string("is ignored: ") + format_traits(out.format).spec_name + " takes one scale per tensor");
  }
}

void read_value(const Json& json, const Where& at, std::vector<LayerOverride>& out) {
  if (json.is_object()) {
    at.fail("must be a list of {\"target_node_names\": [...], \"layer_config\": {...}} objects, not a dict "
            "(use the list-of-objects form)");
  }
  read_value<LayerOverride>(json, at, out);
}

void read_value(const Json& json, const Where& at, LayerTypeOverride& out) {
  // An absent layer would read as null, which keeps the op types in float: say it.
  if (json.is_object() && !json.contains("layer_config")) {
    at.fail("must state its layer_config (a layer, or null to keep these op types in float)");
  }
  out.unknown_keys = read_fields(json, at, Schema<LayerTypeOverride>::kFields, out);
}

void check_cle_steps(int64_t steps, const Where& at) {
  if (steps < 1 && steps != -1) at.fail("must be at least 1, or -1 (until the weights stop changing)");
}

void check_smooth_alpha(double alpha, const Where& at) {
  if (!(alpha >= 0 && alpha <= 1)) at.fail("must be in [0, 1] (the share of each activation range moved into the weights)");
}

void read_value(const Json& json, const Where& at, AlgorithmEntry& out) {
  if (!json.is_object()) at.fail("must be an object {\"name\": \"cle\", ...}");
  if (!json.contains("name")) at.fail("must name an algorithm (\"name\": \"cle\")");
  read_value(json["name"], at / "name", out.name);
  if (!config::find_algorithm(out.name) && find_added_pass(out.name)) {
    for (const auto& item : json.items()) {
      if (item.key() != "name") out.params[item.key()] = item.value();
    }
    return;
  }
  const config::AlgorithmRow* row = config::find_algorithm(out.name);
  if (const auto* quark_row = config::quark::find_algorithm(out.name); !row && quark_row) {
    out.name = quark_row->mixprec_name;  // Quark's spelling ("smooth_quant") of one of ours
    row = config::find_algorithm(out.name);
  }
  const std::string known = text::join(algorithm_names());
  if (!row) (at / "name").fail("names an unknown algorithm \"" + out.name + "\" (known: " + known + ")");
  if (!row->implemented) {
    (at / "name").fail("names \"" + out.name + "\", which mixprec does not implement yet (implemented: " + known + ")");
  }
  for (const auto& item : json.items()) {
    if (item.key() == "name") continue;
    if (std::ranges::find(row->parameters, std::string_view(item.key())) == row->parameters.end()) {
      std::vector<std::string> params(row->parameters.begin(), row->parameters.end());
      (at / item.key()).fail("is not a parameter of " + out.name +
                             (params.empty() ? " (it takes none)" : " (known: " + text::join(params) + ")"));
    }
    if (item.key() == "cle_steps") {
      read_value(item.value(), at / item.key(), out.cle_steps.emplace());
      check_cle_steps(*out.cle_steps, at / item.key());
    } else if (item.key() == "mode") {
      read_value(item.value(), at / item.key(), out.mode.emplace());
    } else if (item.key() == "num_iterations") {
      read_value(item.value(), at / item.key(), out.num_iterations.emplace());
    } else if (item.key() == "learning_rate") {
      read_value(item.value(), at / item.key(), out.learning_rate.emplace());
    } else if (item.key() == "reg_param") {
      read_value(item.value(), at / item.key(), out.reg_param.emplace());
    } else if (item.key() == "target") {
      read_value(item.value(), at / item.key(), out.target.emplace());
    } else if (item.key() == "drop_ratio") {
      read_value(item.value(), at / item.key(), out.drop_ratio.emplace());
    } else if (item.key() == "update_bias") {
      read_value(item.value(), at / item.key(), out.update_bias.emplace());
    } else if (item.key() == "selective_update") {
      read_value(item.value(), at / item.key(), out.selective_update.emplace());
    } else if (item.key() == "beta_range") {
      read_value(item.value(), at / item.key(), out.beta_range.emplace());
    } else if (item.key() == "warm_start") {
      read_value(item.value(), at / item.key(), out.warm_start.emplace());
    } else if (item.key() == "lr_adjust") {
      read_value(item.value(), at / item.key(), out.lr_adjust.emplace());
    } else if (item.key() == "target_op_type") {
      read_value(item.value(), at / item.key(), out.target_op_type.emplace());
    } else if (item.key() == "alpha") {
      read_value(item.value(), at / item.key(), out.alpha.emplace());
    } else if (item.key() == "finer") {
      read_value(item.value(), at / item.key(), out.finer.emplace());
    } else if (item.key() == "max_shift" || item.key() == "sweeps" || item.key() == "num_samples") {
      std::optional<int64_t>& value = item.key() == "max_shift" ? out.max_shift : item.key() == "sweeps" ? out.sweeps : out.num_samples;
      read_value(item.value(), at / item.key(), value.emplace());
      if (*value < 1) (at / item.key()).fail("must be at least 1");
    }
  }
}

// What the reconstruction parameters are called where they are given (algo_config entry or
// extra_options.FastFinetune).
struct ReconstructionKeys {
  const char* iterations;
  const char* learning_rate;
  const char* reg_param;
  const char* drop_ratio;
  const char* beta_range;
  const char* warm_start;
  const char* lr_adjust;
  const char* target_op_type;
};
// The ranges of the reconstruction parameters, wherever they are given (`given`: an
// AlgorithmEntry or FastFinetuneOptions, which share the members' names).
void check_reconstruction(const auto& given, const Where& at, const ReconstructionKeys& keys) {
  if (given.num_iterations && *given.num_iterations < 1) (at / keys.iterations).fail("must be at least 1 (Adam steps per layer)");
  if (given.learning_rate && !(*given.learning_rate > 0)) (at / keys.learning_rate).fail("must be greater than 0");
  if (given.reg_param && *given.reg_param < 0) (at / keys.reg_param).fail("must not be negative");
  if (given.drop_ratio && !(*given.drop_ratio >= 0 && *given.drop_ratio <= 1)) {
    (at / keys.drop_ratio).fail("must be in [0, 1] (the chance an input element is the quantized model's)");
  }
  const auto positive = [](double b) { return b > 0 && std::isfinite(b); };
  const auto& beta_range = given.beta_range;
  if (beta_range && (beta_range->size() != 2 || !std::ranges::all_of(*beta_range, positive))) {
    (at / keys.beta_range).fail("must be two numbers above 0, [start, end] (AdaRound's beta falls from start to end)");
  }
  if (given.warm_start && !(*given.warm_start >= 0 && *given.warm_start < 1)) {
    (at / keys.warm_start).fail("must be in [0, 1) (the share of the steps before the rounding regulariser starts)");
  }
  // Empty is Quark's default (), no adjustment.
  const auto& lr_adjust = given.lr_adjust;
  if (lr_adjust && !lr_adjust->empty() &&
      (lr_adjust->size() != 2 || !((*lr_adjust)[0] >= 0 && std::isfinite((*lr_adjust)[0])) || !positive((*lr_adjust)[1]))) {
    (at / keys.lr_adjust)
        .fail("must be [threshold, learning rate], threshold at least 0 and the rate above 0 (a layer whose output's mean "
              "squared error before learning is above threshold learns at that rate), or [] for none");
  }
  if (given.target_op_type) {
    const Where where = at / keys.target_op_type;
    if (given.target_op_type->empty()) where.fail("must list at least one op type (leave it out to learn every one)");
    const std::span<const char* const> learned = reconstructed_op_types();
    for (const std::string& op_type : *given.target_op_type) {
      // Quark's default list also has these two, whose weights mixprec does not learn: they
      // match no layer (a list of only them leaves the summary's "nothing learned" note).
      if (std::ranges::find(learned, op_type) != learned.end() || op_type == "InstanceNormalization" ||
          op_type == "LayerNormalization") {
        continue;
      }
      where.fail("lists \"" + op_type + "\", which is not an op type AdaRound and AdaQuant learn (" +
                 text::join_each(learned, std::identity{}, ", ") + ")");
    }
  }
}

Json to_json_value(const AlgorithmEntry& value) {
  Json json = {{"name", value.name}};
  if (value.cle_steps) json["cle_steps"] = *value.cle_steps;
  if (value.mode) json["mode"] = to_json_value(*value.mode);
  if (value.num_iterations) json["num_iterations"] = *value.num_iterations;
  if (value.learning_rate) json["learning_rate"] = *value.learning_rate;
  if (value.reg_param) json["reg_param"] = *value.reg_param;
  if (value.target) json["target"] = to_json_value(*value.target);
  if (value.drop_ratio) json["drop_ratio"] = *value.drop_ratio;
  if (value.update_bias) json["update_bias"] = *value.update_bias;
  if (value.selective_update) json["selective_update"] = *value.selective_update;
  if (value.beta_range) json["beta_range"] = to_json_value(*value.beta_range);
  if (value.warm_start) json["warm_start"] = *value.warm_start;
  if (value.lr_adjust) json["lr_adjust"] = to_json_value(*value.lr_adjust);
  if (value.target_op_type) json["target_op_type"] = to_json_value(*value.target_op_type);
  if (value.alpha) json["alpha"] = *value.alpha;
  if (value.max_shift) json["max_shift"] = *value.max_shift;
  if (value.sweeps) json["sweeps"] = *value.sweeps;
  if (value.num_samples) json["num_samples"] = *value.num_samples;
  if (value.finer) json["finer"] = *value.finer;
  for (const auto& item : value.params.items()) json[item.key()] = item.value();
  return json;
}

template <class T>
void read_value(const Json& json, const Where& at, std::optional<T>& out) {
  if (json.is_null()) {
    out.reset();
    return;
  }
  read_value(json, at, out.emplace());
}

template <class T>
void read_value(const Json& json, const Where& at, std::vector<T>& out) {
  if (!json.is_array()) at.fail("must be a list");
  out.assign(json.size(), T{});
  for (size_t i = 0; i < json.size(); ++i) read_value(json[i], at[i], out[i]);
}

template <HasSchema T>
void read_value(const Json& json, const Where& at, T& out) {
  if constexpr (requires { Schema<T>::kOtherToolsKey; }) {
    out.*Schema<T>::kUnknown = read_fields(json, at, Schema<T>::kFields, out, Schema<T>::kOtherToolsKey);
  } else {
    out.*Schema<T>::kUnknown = read_fields(json, at, Schema<T>::kFields, out);
  }
}

Json to_json_value(bool value) { return value; }
Json to_json_value(int64_t value) { return value; }
Json to_json_value(double value) { return value; }
Json to_json_value(const std::string& value) { return value; }
Json to_json_value(FormatId value) { return format_traits(value).spec_name; }
Json to_json_value(CalibMethod value) { return calib_method_traits(value).name; }
Json to_json_value(BiasCorrectionMode value) { return bias_correction_mode_names().name(value); }
Json to_json_value(ReconstructionMethod value) { return reconstruction_method_names().name(value); }
Json to_json_value(ReconstructionTarget value) { return reconstruction_target_names().name(value); }
Json to_json_value(const NodePair& value) { return Json::array({value.first, value.second}); }

Json to_json_value(const TensorQuantSpec& value) {
  Json params = Json::object();
  write_fields(value, kParamFields, Defaults::kOmit, params);
  append_unknown(value.unknown_params, params);
  Json json = {{"spec", to_json_value(value.format)}, {"params", std::move(params)}};
  append_unknown(value.unknown_keys, json);
  return json;
}

template <class T>
Json to_json_value(const std::optional<T>& value) {
  return value ? to_json_value(*value) : Json(nullptr);
}

template <class T>
Json to_json_value(const std::vector<T>& value) {
  Json json = Json::array();
  for (const T& element : value) json.push_back(to_json_value(element));
  return json;
}

template <HasSchema T>
Json to_json_value(const T& value) {
  Json json = Json::object();
  write_fields(value, Schema<T>::kFields, Schema<T>::kDefaults, json);
  append_unknown(value.*Schema<T>::kUnknown, json);
  return json;
}

// The first part of `json` that only one shape has, per shape ("" when none).
struct ShapeEvidence {
  std::string mixprec, quark;

  void add(ConfigShape shape, const std::string& what) {
    std::string& first = shape == ConfigShape::kQuark ? quark : mixprec;
    if (first.empty()) first = what;
  }
};

ShapeEvidence shape_evidence(const Json& json) {
  ShapeEvidence evidence;
  if (!json.is_object()) return evidence;
  if (const auto global = json.find("global_config"); global != json.end() && global->is_object()) {
    for (const auto& item : global->items()) {
      const std::string path = "global_config." + item.key();
      if (item.key() == "activation") evidence.add(ConfigShape::kQuark, path + " (Quark's name of input_tensors)");
      if (!item.value().is_object()) continue;
      if (item.value().contains("spec")) evidence.add(ConfigShape::kMixprec, path + ".spec");
      if (item.value().contains("data_type")) evidence.add(ConfigShape::kQuark, path + ".data_type");
    }
  }
  for (const char* key : {"specific_layer_config", "layer_type_config"}) {
    const auto list = json.find(key);
    if (list == json.end() || !list->is_array() || list->empty()) continue;
    if ((*list)[0].is_object()) evidence.add(ConfigShape::kMixprec, std::string(key) + "[0] is an object");
    if ((*list)[0].is_array()) evidence.add(ConfigShape::kQuark, std::string(key) + "[0] is a [layer, names] pair");
  }
  if (const auto exclude = json.find("exclude"); exclude != json.end()) {
    if (exclude->is_object()) evidence.add(ConfigShape::kMixprec, "exclude is an object");
    if (exclude->is_array()) evidence.add(ConfigShape::kQuark, "exclude is a list");
  }
  for (const char* key : {"quant_mode", "quant_format"}) {
    if (json.contains(key)) evidence.add(ConfigShape::kQuark, std::string(key) + " (Olive's)");
  }
  return evidence;
}

}  // namespace

namespace config {

bool read_bool(const Json& json, const Where& at) {
  if (!json.is_boolean()) at.fail("must be true or false");
  return json.get<bool>();
}

int64_t read_integer(const Json& json, const Where& at) {
  const bool fits = json.is_number_integer() &&
                    !(json.is_number_unsigned() &&
                      json.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()));
  if (!fits) at.fail("must be an integer");
  return json.get<int64_t>();
}

double read_number(const Json& json, const Where& at) {
  if (!json.is_number() || !std::isfinite(json.get<double>())) at.fail("must be a finite number");
  return json.get<double>();
}

std::string read_string(const Json& json, const Where& at) {
  if (!json.is_string()) at.fail("must be a string");
  return json.get<std::string>();
}

std::vector<std::string> read_strings(const Json& json, const Where& at) {
  std::vector<std::string> out;
  read_value(json, at, out);
  return out;
}

ExtraOptions read_extra_options(const Json& json, const Where& at) {
  ExtraOptions extra;
  read_value(json, at, extra);
  return extra;
}

Json extra_options_to_json(const ExtraOptions& extra) { return to_json_value(extra); }

bool is_extra_option(std::string_view key) {
  return std::ranges::find(Schema<ExtraOptions>::kFields, key, [](const auto& field) { return field.key; }) !=
         std::end(Schema<ExtraOptions>::kFields);
}

// params.reduce_range shapes a weight's grid; on an activation or a bias it would do nothing.
void check_reduce_range(const LayerConfig& layer, const Where& at) {
  const std::pair<const char*, const std::optional<TensorQuantSpec>*> roles[] = {
      {"input_tensors", &layer.input_tensors}, {"bias", &layer.bias}, {"output_tensors", &layer.output_tensors}};
  for (const auto& [role, spec] : roles) {
    if (*spec && (*spec)->reduce_range) (at / role / "params.reduce_range").fail("applies to weights only");
  }
}

void check_config(const QuantConfig& config, const std::string& label) {
  check_reduce_range(config.global, Where(label, "global_config"));
  for (size_t i = 0; i < config.specific.size(); ++i) {
    check_reduce_range(config.specific[i].layer_config, Where(label, "specific_layer_config")[i] / "layer_config");
  }
  for (size_t i = 0; i < config.layer_types.size(); ++i) {
    if (config.layer_types[i].layer_config) {
      check_reduce_range(*config.layer_types[i].layer_config, Where(label, "layer_type_config")[i] / "layer_config");
    }
  }
  if (config.extra.num_calib_samples < 1) throw_bad_input(label, "extra_options.NumCalibSamples must be at least 1");
  check_cle_steps(config.extra.cle_steps, Where(label, "extra_options.CLESteps"));
  check_smooth_alpha(config.extra.smooth_alpha, Where(label, "extra_options.SmoothAlpha"));
  const FastFinetuneOptions& ft = config.extra.fast_finetune;
  check_reconstruction(ft, Where(label, "extra_options.FastFinetune"),
                       {"NumIterations", "LearningRate", "RegParam", "DropRatio", "BetaRange", "WarmStart", "LRAdjust", "TargetOpType"});
  if (ft.update_bias.value_or(false) && ft.optim_algorithm == ReconstructionMethod::kAdaRound) {
    Where(label, "extra_options.FastFinetune.UpdateBias")
        .warn("is ignored: AdaRound learns only the weights' rounding (as in Quark); AdaQuant takes it");
  }
  if (ft.optim_algorithm == ReconstructionMethod::kAdaQuant) {
    const std::pair<const char*, bool> schedule[] = {{"BetaRange", ft.beta_range.has_value()},
                                                     {"WarmStart", ft.warm_start.has_value()}};
    for (const auto& [key, given] : schedule) {
      if (given) {
        (Where(label, "extra_options.FastFinetune") / key)
            .warn("is ignored: it schedules AdaRound's rounding regulariser, which AdaQuant does not have");
      }
    }
  }
  const auto reconstruction_entries = std::count_if(config.algorithms.begin(), config.algorithms.end(), [](const AlgorithmEntry& e) {
    return reconstruction_method_names().from_name(e.name).has_value();
  });
  for (size_t i = 0; i < config.algorithms.size(); ++i) {
    const AlgorithmEntry& entry = config.algorithms[i];
    const Where at = Where(label, "algo_config")[i];
    const bool repeated = std::count_if(config.algorithms.begin(), config.algorithms.begin() + static_cast<std::ptrdiff_t>(i),
                                        [&](const AlgorithmEntry& e) { return e.name == entry.name; }) > 0;
    if (repeated) at.fail("lists " + entry.name + " a second time");
    // Two places may state the steps; differing values are a conflict, not a silent choice.
    if (entry.cle_steps && config.extra.cle_steps != ExtraOptions{}.cle_steps && *entry.cle_steps != config.extra.cle_steps) {
      (at / "cle_steps").fail("is " + std::to_string(*entry.cle_steps) + " but extra_options.CLESteps is " +
                              std::to_string(config.extra.cle_steps) + ": state the steps once");
    }
    if (entry.alpha) {
      check_smooth_alpha(*entry.alpha, at / "alpha");
      if (config.extra.smooth_alpha != ExtraOptions{}.smooth_alpha && *entry.alpha != config.extra.smooth_alpha) {
        (at / "alpha").fail("is " + text::fixed(*entry.alpha) + " but extra_options.SmoothAlpha is " +
                            text::fixed(config.extra.smooth_alpha) + ": state alpha once");
      }
    }
    const auto method = reconstruction_method_names().from_name(entry.name);
    if (!method) continue;
    check_reconstruction(entry, at,
                         {"num_iterations", "learning_rate", "reg_param", "drop_ratio", "beta_range", "warm_start", "lr_adjust",
                          "target_op_type"});
    const bool same = config.extra.include_fast_ft && ft.optim_algorithm == *method;
    const double drop_ratio = entry.drop_ratio.value_or(same ? ft.drop_ratio.value_or(1.0) : 1.0);
    if (entry.target == ReconstructionTarget::kQuantizedInput && drop_ratio < 1) {
      (at / "target").fail("is quantized_input, which runs no float model, but drop_ratio " + text::fixed(drop_ratio) +
                           " mixes in the float model's input: use target float_output or drop_ratio 1");
    }
    if (reconstruction_entries > 1) {
      at.fail("lists " + entry.name + " beside another of adaround/adaquant: both choose the same weights' codes; keep one");
    }
    if (config.extra.include_fast_ft && ft.optim_algorithm != *method) {
      (at / "name").fail("is " + entry.name + " but extra_options.FastFinetune.OptimAlgorithm is " +
                         reconstruction_method_names().name(ft.optim_algorithm) + " with IncludeFastFT: choose one");
    }
  }
  selection::compile_patterns(config, label);  // an invalid regex fails here, at load time
}

}  // namespace config

const EnumNames<ConfigShape>& config_shape_names() {
  static constexpr EnumName<ConfigShape> kRows[] = {{ConfigShape::kMixprec, "mixprec"}, {ConfigShape::kQuark, "quark"}};
  static constexpr EnumNames<ConfigShape> kNames{kRows};
  return kNames;
}

ConfigShape detect_config_shape(const nlohmann::ordered_json& json, const std::string& label) {
  const ShapeEvidence evidence = shape_evidence(json);
  if (!evidence.mixprec.empty() && !evidence.quark.empty()) {
    throw_bad_input(label, "the config mixes mixprec's shape (" + evidence.mixprec + ") with Quark's (" + evidence.quark +
                               "): write it in one of them");
  }
  return evidence.quark.empty() ? ConfigShape::kMixprec : ConfigShape::kQuark;
}

QuantConfig parse_config(const nlohmann::ordered_json& json, const std::string& label) {
  QuantConfig config;
  if (detect_config_shape(json, label) == ConfigShape::kQuark) {
    log_info((label.empty() ? "" : label + ": ") + "read in Quark's QConfig shape");
    config = config::parse_quark_config(json, label);
  } else {
    read_value(json, Where(label, ""), config);
  }
  config::check_config(config, label);
  return config;
}

QuantConfig load_config(const std::string& path) {
  const Json json = json_text::parse_json(read_file(path, "config"), path, "valid JSON");
  return json_text::with_json_errors(path, "a config", [&] { return parse_config(json, path); });
}

nlohmann::ordered_json config_to_json(const QuantConfig& config, ConfigShape shape) {
  if (shape == ConfigShape::kQuark) return config::quark_config_to_json(config);
  Json json = to_json_value(config);
  // Configs without these keep SPEC.md's shape.
  if (config.layer_types.empty()) json.erase("layer_type_config");
  if (config.algorithms.empty()) json.erase("algo_config");
  if (!config.use_external_data_format) json.erase("use_external_data_format");
  return json;
}

std::string config_file_text(const QuantConfig& config, ConfigShape shape, const std::string& path) {
  try {
    return config_to_json(config, shape).dump(2) + "\n";
  } catch (const Error& error) {
    throw Error(error.kind(), path, error.message());
  }
}

void save_config(const QuantConfig& config, const std::string& path, ConfigShape shape) {
  write_file_atomically(path, config_file_text(config, shape, path));
}

}  // namespace mixprec
