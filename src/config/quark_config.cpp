// Quark's serialised QConfig shape (what amd/Quark's quark.onnx QConfig.to_dict() writes and
// from_dict() reads, and what Olive's QuarkQuantization pass takes) <-> QuantConfig.
//
//   { "global_config": LAYER,
//     "specific_layer_config": [[LAYER | null, [node names, ^...* patterns]], ...],
//     "layer_type_config": [[LAYER | null, [op types]], ...],
//     "exclude": [node name | ^...* pattern | [[start nodes], [end nodes]], ...],
//     "algo_config": [{"name": "cle", "cle_steps": 2}, ...],
//     "use_external_data_format": bool, "extra_options": {...},
//     "quant_mode": "static", "quant_format": "QDQ" }                      (Olive's: notes)
//   LAYER  = { "input_tensors" (or Quark's former "activation"): TENSOR, "weight": TENSOR,
//              "bias": TENSOR, "output_tensors": TENSOR }
//   TENSOR = { "symmetric": bool, "scale_type": "ScaleType.PowerOf2", "calibration_method":
//              "CalibMethod.MinMSE", "quant_granularity": "QuantGranularity.Tensor",
//              "data_type": "Int8" }        (enum members with or without their class prefix)
//
// Reading (the names are quark_tables.cpp's rows):
// - data_type + scale_type -> format: Int8 + PowerOf2 = XInt8Spec, Int8 + Float32 = Int8Spec,
//   UInt8, Int16, UInt16, BFloat16, Float16, the block formats (BFP16, MX4/6/9, MXInt8,
//   MXFP8/6/4); an Int32 bias is Int32Bias (the bias left unset). A scale type absent is
//   Float32, a granularity absent Tensor (Olive leaves them out). Conflicts (PowerOf2 with
//   UInt16 or asymmetric, Channel on XInt8Spec, a float or a block format) and what mixprec
//   cannot express yet (UInt32, Int32 outside a bias, ScaleType.Int16, LayerwisePercentile,
//   Distribution) are errors naming the key and what is supported.
// - quant_granularity Channel -> params.per_channel (along the op's weight channel axis);
//   Group (weights) -> params.group_size 32 (quark::kGroupSize, with a warning: Quark's shape
//   has no size), written back as Group only for that size. Int4/UInt4 -> Int4Spec/UInt4Spec.
// - calibration_method + scale_type -> calib_method (MinMax + PowerOf2 = PowerOfTwo_NonOverflow
//   and MinMSE + PowerOf2 = PowerOfTwo_MinMSE, as Quark maps them); symmetric -> symmetric.
//   Either is left unset when it is what the spec inherits (extra_options.CalibMethod as Quark
//   spells it; ActivationSymmetric for activations, symmetric for weights and biases), so that
//   a config mixprec writes in this shape reads back as it was. Float and block formats are not
//   calibrated: their symmetric and calibration_method are not used (a warning when they say
//   otherwise).
// - specific_layer_config: a LayerOverride per pair, in order (the last match wins, as in
//   Quark); a null layer keeps its nodes in float. Subgraph targets are an error.
// - layer_type_config: a LayerTypeOverride per pair (null: excluded).
// - exclude: patterns as they are (matched against whole names: a warning when one does not end
//   in ".*" or "$", where Quark's search would also match longer names), exact names as escaped
//   regexes, [[starts], [ends]] as every (start, end) pair in exclude.subgraphs (the same nodes:
//   those on a path from a start to an end).
// - algo_config: cle, bias_correction, adaround, adaquant, smooth_quant (mixprec's
//   "smoothquant") with the parameters mixprec has (cle_scale_append_bias sets
//   extra_options.CLEScaleAppendBias unless that is given, as in Quark); Quark's other
//   parameters are warnings; gptq, auto_mixprecision and quarot are errors.
// - extra_options as in mixprec's shape (unknown options warn and are kept); OpTypesToQuantize
//   equal to the default table reads as unset.
// - any other key, at any level but extra_options, is an error naming the key and the accepted
//   ones (a top-level extra option: move it under extra_options).
// Writing is the inverse in Quark's key order: every TENSOR key, with its class prefix, holding
// what mixprec does (inherited values resolved); every extra option (Quark warns about mixprec's
// own and ignores them), OpTypesToQuantize resolved (Quark's empty list quantizes every op type
// it supports). What the shape cannot say is an error: unknown keys, params.ch_axis, a
// calib_method whose Quark spelling reads back as another method (MinMSE on XInt8Spec, a
// power-of-two method on Int8Spec), algo_config's mode and target, an exclude regex that is
// neither a name nor a pattern with ".*". An explicit Float32Spec is written as no tensor (the
// same: left in float).
#include "config/quark_config.h"

#include <algorithm>
#include <iterator>
#include <span>

#include "common/text.h"
#include "config/quark_tables.h"

namespace mixprec::config {
namespace {

using quark::Granularity;
using quark::Method;
using quark::ScaleType;

// Which tensor of a layer: activations inherit ActivationSymmetric, weights and biases are
// symmetric unless they say otherwise.
enum class Role { kActivation, kWeight, kBias };

struct LayerKey {
  const char* key;
  std::optional<TensorQuantSpec> LayerConfig::*member;
  Role role;
};
constexpr LayerKey kLayerKeys[] = {
    {"input_tensors", &LayerConfig::input_tensors, Role::kActivation},
    {"weight", &LayerConfig::weight, Role::kWeight},
    {"bias", &LayerConfig::bias, Role::kBias},
    {"output_tensors", &LayerConfig::output_tensors, Role::kActivation},
};

bool inherited_symmetric(Role role, const ExtraOptions& extra) {
  return role == Role::kActivation ? extra.activation_symmetric : true;
}

std::string names_of(std::span<const char* const> names) {
  return text::join_each(names, [](const char* name) { return std::string(name); });
}

// --- Reading -------------------------------------------------------------------------------------

// A member of `type`, spelled "Class.Member" (Quark's to_dict) or "Member" (Olive's).
template <class E>
E read_member(const Json& json, const Where& at, const quark::EnumClass<E>& type) {
  std::string name = read_string(json, at);
  const std::string prefix = std::string(type.name) + ".";
  if (name.find('.') != std::string::npos) {
    if (!name.starts_with(prefix)) {
      at.fail("names \"" + name + "\", which is not a " + type.name + " (known: " + type.names(false) + ")");
    }
    name.erase(0, prefix.size());
  }
  for (const quark::EnumMember<E>& member : type.members) {
    if (name != member.name) continue;
    if (!member.supported) at.fail(name + " is not supported yet; supported: " + type.names(true));
    return member.value;
  }
  at.fail("names an unknown " + std::string(type.name) + " \"" + name + "\" (known: " + type.names(false) +
          ", with or without \"" + prefix + "\")");
}

// One tensor config as Quark states it.
struct QuarkTensor {
  std::optional<bool> symmetric;
  ScaleType scale = ScaleType::kFloat32;
  std::optional<Method> method;
  Granularity granularity = Granularity::kTensor;
  const quark::DataTypeRow* data_type = nullptr;
};

const quark::DataTypeRow* read_data_type(const Json& json, const Where& at) {
  const std::string name = read_string(json, at);
  const quark::DataTypeRow* row = quark::find_data_type(name);
  if (!row) {
    at.fail("names an unknown data type \"" + name + "\" (Quark's: " +
            text::join_each(quark::data_types(), [](const quark::DataTypeRow& r) { return std::string(r.name); }) + ")");
  }
  return row;
}

struct TensorKey {
  const char* key;
  void (*read)(const Json& json, const Where& at, QuarkTensor& out);
};
constexpr TensorKey kTensorKeys[] = {
    {"symmetric", [](const Json& json, const Where& at, QuarkTensor& out) { out.symmetric = read_bool(json, at); }},
    {"scale_type",
     [](const Json& json, const Where& at, QuarkTensor& out) { out.scale = read_member(json, at, quark::scale_types()); }},
    {"calibration_method",
     [](const Json& json, const Where& at, QuarkTensor& out) { out.method = read_member(json, at, quark::methods()); }},
    {"quant_granularity",
     [](const Json& json, const Where& at, QuarkTensor& out) { out.granularity = read_member(json, at, quark::granularities()); }},
    {"data_type", [](const Json& json, const Where& at, QuarkTensor& out) { out.data_type = read_data_type(json, at); }},
};

QuarkTensor read_tensor(const Json& json, const Where& at) {
  if (!json.is_object()) at.fail("must be an object {\"data_type\": \"Int8\", ...} or null");
  if (!json.contains("data_type")) at.fail("must name a data_type (\"data_type\": \"Int8\", ...)");
  QuarkTensor tensor;
  for (const auto& item : json.items()) {
    const auto key = std::ranges::find(kTensorKeys, std::string_view(item.key()), &TensorKey::key);
    if (key == std::end(kTensorKeys)) {
      (at / item.key()).fail("is not a key of Quark's tensor config (known: " +
                             text::join_each(kTensorKeys, [](const TensorKey& k) { return std::string(k.key); }) + ")");
    }
    key->read(item.value(), at / item.key(), tensor);
  }
  return tensor;
}

// The spec a Quark tensor config means; nullopt for an Int32 bias (Int32Bias quantizes it).
std::optional<TensorQuantSpec> to_spec(const QuarkTensor& tensor, const Where& at, Role role, const ExtraOptions& extra) {
  const quark::DataTypeRow& data_type = *tensor.data_type;
  const bool power_of_two = tensor.scale == ScaleType::kPowerOf2;
  if (role == Role::kBias && data_type.int32_bias) {
    if (power_of_two || tensor.granularity != Granularity::kTensor || tensor.symmetric == false) {
      at.fail("is an Int32 bias, which mixprec quantizes as Int32Bias does: symmetric, ScaleType.Float32, per tensor");
    }
    if (!extra.int32_bias) {
      (at / "data_type").fail("Int32 needs extra_options.Int32Bias true (mixprec gives every quantized bias int32 codes, or none)");
    }
    return std::nullopt;
  }
  if (!data_type.format && !data_type.power_of_two) {
    (at / "data_type").fail(std::string(data_type.name) + " is not supported yet; supported: " + quark::supported_data_types());
  }
  const std::optional<FormatId> format = power_of_two ? data_type.power_of_two : data_type.format;
  if (!format) {
    (at / "scale_type").fail("PowerOf2 conflicts with data_type " + std::string(data_type.name) +
                             ": mixprec's power-of-two scales are Int8's (XInt8Spec)");
  }
  const FormatTraits& traits = format_traits(*format);
  TensorQuantSpec spec{.format = *format};
  if (tensor.granularity == Granularity::kChannel) {
    if (!traits.per_channel_allowed) {
      (at / "quant_granularity").fail(std::string("Channel conflicts with ") + traits.spec_name + ", which takes one scale per tensor");
    }
    spec.per_channel = true;
  } else if (tensor.granularity == Granularity::kGroup) {
    if (role != Role::kWeight) (at / "quant_granularity").fail("Group applies to weights only (groups along the reduction axis)");
    if (!traits.is_qdq || !traits.per_channel_allowed) {
      (at / "quant_granularity").fail(std::string("Group conflicts with ") + traits.spec_name + ", which takes one scale per tensor");
    }
    spec.group_size = quark::kGroupSize;
    (at / "quant_granularity")
        .warn("Group: Quark's QConfig names no group size; mixprec uses groups of " + std::to_string(quark::kGroupSize) +
              " along the reduction axis (mixprec's config shape can say params.group_size)");
  }
  if (!traits.is_qdq) {
    const std::string unused = std::string("has no effect on ") + data_type.name +
                               (traits.is_block ? " (a block format, not calibrated)" : " (a cast, not calibrated)");
    if (tensor.symmetric == false) (at / "symmetric").warn(unused);
    if (tensor.method && *tensor.method != Method::kMinMax) (at / "calibration_method").warn(unused);
    return spec;
  }
  if (traits.power_of_two_scale) {
    if (tensor.symmetric == false) (at / "symmetric").fail("false conflicts with scale_type PowerOf2 (XInt8Spec is symmetric)");
  } else if (tensor.symmetric && *tensor.symmetric != inherited_symmetric(role, extra)) {
    spec.symmetric = tensor.symmetric;
  }
  if (tensor.method && *tensor.method != quark::method_of(extra.calib_method)) {
    spec.calib_method = quark::calib_method_of(*tensor.method, traits.power_of_two_scale);
  }
  return spec;
}

LayerConfig read_layer(const Json& json, const Where& at, const ExtraOptions& extra) {
  if (!json.is_object()) at.fail("must be an object {\"input_tensors\": {...}, \"weight\": {...}} or null");
  if (json.contains("activation") && json.contains("input_tensors")) {
    at.fail("gives both activation and input_tensors (Quark's former and current names of the same tensors): keep input_tensors");
  }
  LayerConfig layer;
  for (const auto& item : json.items()) {
    const Where key = at / item.key();
    std::string_view name = item.key();
    if (name == "activation") {
      key.warn("is Quark's former name of input_tensors: read as input_tensors");
      name = "input_tensors";
    }
    const auto row = std::ranges::find(kLayerKeys, name, &LayerKey::key);
    if (row == std::end(kLayerKeys)) {
      key.fail("is not a key of Quark's layer config (known: input_tensors, weight, bias, output_tensors; activation "
               "as input_tensors)");
    }
    if (!item.value().is_null()) layer.*row->member = to_spec(read_tensor(item.value(), key), key, row->role, extra);
  }
  return layer;
}

// What is being read: the config so far, and the extra_options object as given.
struct QuarkRead {
  QuantConfig config;
  const Json* extra_options = nullptr;
};

// [LAYER | null, [names]]: the layer (nullopt for null) and the list's strings. `what` names them.
std::pair<std::optional<LayerConfig>, std::vector<std::string>> read_pair(const Json& json, const Where& at,
                                                                          const char* what, const ExtraOptions& extra) {
  if (!json.is_array() || json.size() != 2) at.fail(std::string("must be a [layer, [") + what + "]] pair (a layer config or null, then a list)");
  std::optional<LayerConfig> layer;
  if (!json[0].is_null()) layer = read_layer(json[0], at[0], extra);
  return {layer, read_strings(json[1], at[1])};
}

void check_pair_list(const Json& json, const Where& at, const char* what) {
  if (!json.is_array()) at.fail(std::string("must be a list of [layer, [") + what + "]] pairs (Quark's to_dict form)");
}

void read_specific(const Json& json, const Where& at, QuarkRead& read) {
  if (json.is_null()) return;
  check_pair_list(json, at, "node names");
  for (size_t i = 0; i < json.size(); ++i) {
    if (json[i].is_array() && json[i].size() == 2 && json[i][1].is_array()) {
      for (size_t j = 0; j < json[i][1].size(); ++j) {
        if (!json[i][1][j].is_array()) continue;
        at[i][1][j].fail("is a subgraph ([start nodes], [end nodes]), which mixprec's specific_layer_config does not "
                         "take: list its nodes, or a ^...* pattern");
      }
    }
    auto [layer, names] = read_pair(json[i], at[i], "node names", read.config.extra);
    read.config.specific.push_back({.target_node_names = std::move(names), .layer_config = layer.value_or(LayerConfig{})});
  }
}

void read_layer_types(const Json& json, const Where& at, QuarkRead& read) {
  if (json.is_null()) return;
  check_pair_list(json, at, "op types");
  for (size_t i = 0; i < json.size(); ++i) {
    auto [layer, op_types] = read_pair(json[i], at[i], "op types", read.config.extra);
    read.config.layer_types.push_back({.op_types = std::move(op_types), .layer_config = std::move(layer)});
  }
}

// RE2's metacharacters: escaping them turns a node name into the regex matching only it.
constexpr std::string_view kRegexSpecial = "\\.^$|?*+()[]{}";

std::string quote_name(std::string_view name) {
  std::string regex;
  for (const char c : name) {
    if (kRegexSpecial.find(c) != std::string_view::npos) regex += '\\';
    regex += c;
  }
  return regex;
}

// The name `regex` matches when it matches exactly one (escaped metacharacters only).
std::optional<std::string> quoted_name(std::string_view regex) {
  std::string name;
  for (size_t i = 0; i < regex.size(); ++i) {
    const bool special = kRegexSpecial.find(regex[i]) != std::string_view::npos;
    if (special && regex[i] != '\\') return std::nullopt;
    if (!special) {
      name += regex[i];
    } else if (i + 1 < regex.size() && kRegexSpecial.find(regex[i + 1]) != std::string_view::npos) {
      name += regex[++i];
    } else {
      return std::nullopt;  // a class such as \d
    }
  }
  return name;
}

// Quark's rule (and mixprec's for target_node_names): a regex starts with '^' and has ".*".
bool is_quark_pattern(std::string_view text) { return text.starts_with('^') && text.find(".*") != std::string_view::npos; }

void add_excluded_name(const std::string& text, const Where& at, ExcludeConfig& exclude) {
  if (is_quark_pattern(text)) {
    if (!text.ends_with(".*") && !text.ends_with("$")) {
      at.warn("is matched against whole node names: Quark's search would also match the names it only begins");
    }
    exclude.node_names.push_back(text);
    return;
  }
  if (text.starts_with('^')) at.warn("starts with '^' but has no \".*\": matched as an exact node name (Quark skips such a pattern)");
  exclude.node_names.push_back(quote_name(text));
}

// One side of a subgraph: a node name or a list of them.
std::vector<std::string> subgraph_ends(const Json& json, const Where& at) {
  if (json.is_string()) return {json.get<std::string>()};
  return read_strings(json, at);
}

// A subgraph of S starts and E ends is S x E (start, end) pairs: bounded, so a hostile list
// cannot ask for billions of them.
constexpr size_t kMaxSubgraphPairs = 1024;

void read_exclude(const Json& json, const Where& at, QuarkRead& read) {
  if (json.is_null()) return;
  if (!json.is_array()) at.fail("must be a list of node names, ^...* patterns and [[start nodes], [end nodes]] subgraphs");
  ExcludeConfig& exclude = read.config.exclude;
  for (size_t i = 0; i < json.size(); ++i) {
    const Json& item = json[i];
    if (item.is_string()) {
      add_excluded_name(item.get<std::string>(), at[i], exclude);
    } else if (item.is_array() && item.size() == 2) {
      const std::vector<std::string> starts = subgraph_ends(item[0], at[i][0]), ends = subgraph_ends(item[1], at[i][1]);
      if (starts.size() * ends.size() > kMaxSubgraphPairs) {
        at[i].fail("names " + std::to_string(starts.size()) + " start and " + std::to_string(ends.size()) +
                   " end nodes: at most " + std::to_string(kMaxSubgraphPairs) + " (start, end) pairs");
      }
      for (const std::string& start : starts) {
        for (const std::string& end : ends) exclude.subgraphs.emplace_back(start, end);
      }
    } else {
      at[i].fail("must be a node name, a ^...* pattern or a [[start nodes], [end nodes]] subgraph");
    }
  }
}

// The parameters mixprec reads from Quark's algorithm configs.
struct AlgorithmParam {
  const char* name;
  void (*read)(const Json& json, const Where& at, AlgorithmEntry& entry, QuarkRead& read);
};
constexpr AlgorithmParam kAlgorithmParams[] = {
    {"cle_steps", [](const Json& json, const Where& at, AlgorithmEntry& entry, QuarkRead&) { entry.cle_steps = read_integer(json, at); }},
    {"cle_scale_append_bias",
     [](const Json& json, const Where& at, AlgorithmEntry&, QuarkRead& read) {
       const bool value = read_bool(json, at);
       // As Quark's CLEConfig: an extra option that says it wins.
       if (read.extra_options && read.extra_options->contains("CLEScaleAppendBias")) {
         if (value != read.config.extra.cle_scale_append_bias) at.warn("is overridden by extra_options.CLEScaleAppendBias");
         return;
       }
       read.config.extra.cle_scale_append_bias = value;
     }},
    {"num_iterations",
     [](const Json& json, const Where& at, AlgorithmEntry& entry, QuarkRead&) { entry.num_iterations = read_integer(json, at); }},
    {"learning_rate",
     [](const Json& json, const Where& at, AlgorithmEntry& entry, QuarkRead&) { entry.learning_rate = read_number(json, at); }},
    {"reg_param", [](const Json& json, const Where& at, AlgorithmEntry& entry, QuarkRead&) { entry.reg_param = read_number(json, at); }},
    {"drop_ratio", [](const Json& json, const Where& at, AlgorithmEntry& entry, QuarkRead&) { entry.drop_ratio = read_number(json, at); }},
    {"update_bias", [](const Json& json, const Where& at, AlgorithmEntry& entry, QuarkRead&) { entry.update_bias = read_bool(json, at); }},
    {"selective_update",
     [](const Json& json, const Where& at, AlgorithmEntry& entry, QuarkRead&) { entry.selective_update = read_bool(json, at); }},
    {"beta_range",
     [](const Json& json, const Where& at, AlgorithmEntry& entry, QuarkRead&) {
       if (!json.is_array()) at.fail("must be a list [start, end]");
       std::vector<double>& range = entry.beta_range.emplace();
       for (size_t i = 0; i < json.size(); ++i) range.push_back(read_number(json[i], at[i]));
     }},
    {"warm_start", [](const Json& json, const Where& at, AlgorithmEntry& entry, QuarkRead&) { entry.warm_start = read_number(json, at); }},
    {"target_op_type",
     [](const Json& json, const Where& at, AlgorithmEntry& entry, QuarkRead&) {
       if (!json.is_array()) at.fail("must be a list of op types");
       std::vector<std::string>& op_types = entry.target_op_type.emplace();
       for (size_t i = 0; i < json.size(); ++i) {
         if (!json[i].is_string()) at[i].fail("must be an op type name");
         op_types.push_back(json[i].get<std::string>());
       }
     }},
    {"lr_adjust",
     [](const Json& json, const Where& at, AlgorithmEntry& entry, QuarkRead&) {
       if (!json.is_array()) at.fail("must be a list [threshold, learning rate]");
       std::vector<double>& pair = entry.lr_adjust.emplace();
       for (size_t i = 0; i < json.size(); ++i) pair.push_back(read_number(json[i], at[i]));
     }},
    {"alpha", [](const Json& json, const Where& at, AlgorithmEntry& entry, QuarkRead&) { entry.alpha = read_number(json, at); }},
};

AlgorithmEntry read_algorithm(const Json& json, const Where& at, QuarkRead& read) {
  if (!json.is_object()) at.fail("must be an object {\"name\": \"cle\", ...}");
  if (!json.contains("name")) at.fail("must name an algorithm (\"name\": \"cle\")");
  AlgorithmEntry entry{.name = read_string(json["name"], at / "name")};
  const quark::AlgorithmRow* row = quark::find_algorithm(entry.name);
  if (!row && find_added_pass(entry.name)) {  // a plugin's pass: its parameters are its own
    for (const auto& item : json.items()) {
      if (item.key() != "name") entry.params[item.key()] = item.value();
    }
    return entry;
  }
  std::vector<std::string> implemented;
  for (const quark::AlgorithmRow& algorithm : quark::algorithms()) {
    if (algorithm.implemented) implemented.emplace_back(algorithm.name);
  }
  if (!row) {
    (at / "name").fail("names an unknown algorithm \"" + entry.name + "\" (Quark's: " +
                       text::join_each(quark::algorithms(), [](const quark::AlgorithmRow& r) { return std::string(r.name); }) + ")");
  }
  if (!row->implemented) {
    (at / "name").fail("names " + entry.name + ", which mixprec does not implement yet (implemented: " + text::join(implemented) + ")");
  }
  // Quark's parameters mixprec does not read, where their value asks for other than what mixprec
  // does (a config Quark wrote lists every one, mostly at such values): one warning per entry.
  std::vector<std::string> unused;
  for (const auto& item : json.items()) {
    if (item.key() == "name") continue;
    const Where param = at / item.key();
    if (std::ranges::find(row->used, std::string_view(item.key())) != row->used.end()) {
      std::ranges::find(kAlgorithmParams, std::string_view(item.key()), &AlgorithmParam::name)->read(item.value(), param, entry, read);
    } else if (std::ranges::find(row->unused, std::string_view(item.key())) != row->unused.end()) {
      const quark::UnusedReconstructionKey* key = quark::find_unused_reconstruction_key(item.key());
      if (!key || !quark::does_what_mixprec_does(*key, item.value())) unused.push_back(item.key());
    } else {
      const std::string known = names_of(row->used) + (row->used.empty() || row->unused.empty() ? "" : ", ") + names_of(row->unused);
      param.fail("is not a parameter of Quark's " + entry.name + (known.empty() ? " (it takes none)" : " (known: " + known + ")"));
    }
  }
  if (!unused.empty()) {
    const std::string why = " mixprec does not use (mixprec runs " + entry.name + " on CPU with every calibration sample; "
                            "it takes " + (row->used.empty() ? "no parameters" : names_of(row->used)) + ")";
    if (unused.size() == 1) {
      (at / unused[0]).warn("is a parameter of Quark's " + entry.name + " that" + why);
    } else {
      at.warn("has " + text::join(unused) + ", parameters of Quark's " + entry.name + " that" + why);
    }
  }
  entry.name = row->mixprec_name;
  return entry;
}

void read_algorithms(const Json& json, const Where& at, QuarkRead& read) {
  if (json.is_null()) return;
  if (!json.is_array()) at.fail("must be a list of {\"name\": ..., parameters} objects");
  for (size_t i = 0; i < json.size(); ++i) read.config.algorithms.push_back(read_algorithm(json[i], at[i], read));
}

// Olive's keys: a note when mixprec does what they ask, a warning when it does not.
void read_olive_choice(const Json& json, const Where& at, const char* expected, const std::string& what_mixprec_does) {
  const std::string value = read_string(json, at);
  if (text::equal_ignoring_case(value, expected)) {
    at.note("is " + value + ": " + what_mixprec_does);
  } else {
    at.warn("is " + value + ", which is ignored: " + what_mixprec_does);
  }
}

struct TopLevelKey {
  const char* key;
  void (*read)(const Json& json, const Where& at, QuarkRead& read);
};
constexpr TopLevelKey kTopLevelKeys[] = {
    {"global_config",
     [](const Json& json, const Where& at, QuarkRead& read) {
       if (!json.is_null()) read.config.global = read_layer(json, at, read.config.extra);
     }},
    {"specific_layer_config", read_specific},
    {"layer_type_config", read_layer_types},
    {"exclude", read_exclude},
    {"algo_config", read_algorithms},
    {"use_external_data_format",
     [](const Json& json, const Where& at, QuarkRead& read) { read.config.use_external_data_format = read_bool(json, at); }},
    {"extra_options", [](const Json&, const Where&, QuarkRead&) {}},  // read first: the tensors inherit from it
    {"quant_mode",
     [](const Json& json, const Where& at, QuarkRead&) {
       read_olive_choice(json, at, "static", "mixprec quantizes statically, with ranges calibrated once");
     }},
    {"quant_format",
     [](const Json& json, const Where& at, QuarkRead&) {
       read_olive_choice(json, at, "QDQ", "mixprec writes QuantizeLinear/DequantizeLinear pairs (and casts for BF16/FP16)");
     }},
};

// --- Writing -------------------------------------------------------------------------------------

// The writer's messages name no file: the caller knows which one it writes.
const std::string kNoFile;

[[noreturn]] void no_equivalent(const Where& at, const std::string& why) {
  at.fail("has no equivalent in Quark's config shape (" + why + ")");
}

void refuse_unknown(const Json& unknown, const Where& at, const char* what) {
  if (!unknown.empty()) no_equivalent(at / unknown.begin().key(), std::string("not a key of ") + what);
}

// Methods with the same ranges on `format`: the same, or MinMax and PowerOfTwo_NonOverflow on a
// power-of-two format (its scale is rounded up to 2^k either way).
bool same_ranges(CalibMethod a, CalibMethod b, const FormatTraits& format) {
  const auto min_max = [](CalibMethod m) { return m == CalibMethod::kMinMax || m == CalibMethod::kPowerOfTwoNonOverflow; };
  return a == b || (format.power_of_two_scale && min_max(a) && min_max(b));
}

Json tensor_to_json(const TensorQuantSpec& spec, const Where& at, Role role, const ExtraOptions& extra) {
  refuse_unknown(spec.unknown_keys, at, "Quark's tensor config");
  refuse_unknown(spec.unknown_params, at / "params", "Quark's tensor config");
  if (spec.reduce_range) no_equivalent(at / "params.reduce_range", "Quark's QuantizationSpec has no reduced range");
  if (spec.ch_axis) {
    no_equivalent(at / "params.ch_axis", "Quark takes channel axes per op type, in extra_options.QDQOpTypePerChannelSupportToAxis");
  }
  const FormatTraits& traits = format_traits(spec.format);
  const quark::DataTypeRow* data_type = quark::data_type_of(spec.format);
  if (!data_type) no_equivalent(at / "spec", std::string("Quark has no data type for ") + traits.spec_name);
  const ScaleType scale = traits.power_of_two_scale ? ScaleType::kPowerOf2 : ScaleType::kFloat32;
  bool symmetric = true;
  Method method = Method::kMinMax;  // a cast's: Quark's BFloat16Spec and Float16 defaults
  if (traits.is_qdq) {
    symmetric = traits.power_of_two_scale || spec.symmetric.value_or(inherited_symmetric(role, extra));
    const CalibMethod calib_method = spec.calib_method.value_or(extra.calib_method);
    method = quark::method_of(calib_method);
    const std::optional<CalibMethod> read_back = quark::calib_method_of(method, traits.power_of_two_scale);
    if (spec.calib_method && !same_ranges(*read_back, calib_method, traits)) {
      no_equivalent(at / "params.calib_method",
                    std::string(calib_method_traits(calib_method).name) + " on " + traits.spec_name + ": Quark's " +
                        quark::methods().spelled(method) + " with " + quark::scale_types().spelled(scale) + " is " +
                        calib_method_traits(*read_back).name);
    }
  }
  if (spec.group_size && *spec.group_size != quark::kGroupSize) {
    no_equivalent(at / "params.group_size", "Quark's QuantGranularity.Group names no size; only groups of " +
                                                std::to_string(quark::kGroupSize) + " read back as themselves");
  }
  const Granularity granularity = spec.group_size                                ? Granularity::kGroup
                                  : spec.per_channel && traits.per_channel_allowed ? Granularity::kChannel
                                                                                   : Granularity::kTensor;
  return {{"symmetric", symmetric},
          {"scale_type", quark::scale_types().spelled(scale)},
          {"calibration_method", quark::methods().spelled(method)},
          {"quant_granularity", quark::granularities().spelled(granularity)},
          {"data_type", data_type->name}};
}

Json layer_to_json(const LayerConfig& layer, const Where& at, const ExtraOptions& extra) {
  refuse_unknown(layer.unknown_keys, at, "Quark's layer config");
  Json json = Json::object();
  for (const LayerKey& key : kLayerKeys) {
    const std::optional<TensorQuantSpec>& spec = layer.*key.member;
    if (spec && spec->format != FormatId::kFloat32) json[key.key] = tensor_to_json(*spec, at / key.key, key.role, extra);
  }
  return json;
}

// A layer, or null for one that leaves every tensor in float.
Json layer_or_null(const std::optional<LayerConfig>& layer, const Where& at, const ExtraOptions& extra) {
  return layer && *layer != LayerConfig{} ? layer_to_json(*layer, at, extra) : Json(nullptr);
}

// [[layer | null, names], ...]: `parts` gives an entry's layer and names.
template <class Entry, class Parts>
Json pairs_to_json(const std::vector<Entry>& entries, const Where& at, const char* what, const ExtraOptions& extra,
                   Parts parts) {
  Json json = Json::array();
  for (size_t i = 0; i < entries.size(); ++i) {
    refuse_unknown(entries[i].unknown_keys, at[i], what);
    const auto [layer, names] = parts(entries[i]);
    json.push_back(Json::array({layer_or_null(layer, at[i] / "layer_config", extra), names}));
  }
  return json;
}

Json exclude_to_json(const ExcludeConfig& exclude, const Where& at) {
  refuse_unknown(exclude.unknown_keys, at, "Quark's exclude list");
  Json json = Json::array();
  for (size_t i = 0; i < exclude.node_names.size(); ++i) {
    const std::string& regex = exclude.node_names[i];
    if (const std::optional<std::string> name = quoted_name(regex)) {
      if (is_quark_pattern(*name)) no_equivalent((at / "node_names")[i], "Quark would read the node name " + *name + " as a pattern");
      json.push_back(*name);
    } else if (is_quark_pattern(regex)) {
      json.push_back(regex);
    } else if (regex.find(".*") != std::string::npos) {
      json.push_back("^(?:" + regex + ")$");  // anchored: the whole name, as mixprec matches it
    } else {
      no_equivalent((at / "node_names")[i],
                    "Quark's exclude takes node names and patterns that start with ^ and contain .*");
    }
  }
  for (const auto& [start, end] : exclude.subgraphs) json.push_back(Json::array({Json::array({start}), Json::array({end})}));
  return json;
}

Json algorithm_to_json(const AlgorithmEntry& entry, const Where& at) {
  if (entry.mode) no_equivalent(at / "mode", "Quark's bias correction takes no parameters");
  if (entry.target) no_equivalent(at / "target", std::string("Quark's ") + entry.name + " has no target");
  if (entry.name == "scale_search") no_equivalent(at / "name", "Quark has no activation scale search (mixprec's own)");
  const quark::AlgorithmRow* row = quark::find_algorithm_by_mixprec_name(entry.name);
  Json json = {{"name", row ? row->name : entry.name.c_str()}};
  if (entry.cle_steps) json["cle_steps"] = *entry.cle_steps;
  if (entry.num_iterations) json["num_iterations"] = *entry.num_iterations;
  if (entry.learning_rate) json["learning_rate"] = *entry.learning_rate;
  if (entry.reg_param) json["reg_param"] = *entry.reg_param;
  if (entry.drop_ratio) json["drop_ratio"] = *entry.drop_ratio;
  if (entry.update_bias) json["update_bias"] = *entry.update_bias;
  if (entry.selective_update) json["selective_update"] = *entry.selective_update;
  if (entry.beta_range) json["beta_range"] = *entry.beta_range;
  if (entry.warm_start) json["warm_start"] = *entry.warm_start;
  if (entry.lr_adjust) json["lr_adjust"] = *entry.lr_adjust;
  if (entry.target_op_type) json["target_op_type"] = *entry.target_op_type;
  if (entry.alpha) json["alpha"] = *entry.alpha;
  for (const auto& item : entry.params.items()) json[item.key()] = item.value();
  return json;
}

}  // namespace

QuantConfig parse_quark_config(const Json& json, const std::string& label) {
  const Where root(label, "");
  if (!json.is_object()) root.fail("must be an object");
  QuarkRead read;
  if (const auto extra = json.find("extra_options"); extra != json.end() && !extra->is_null()) {
    read.config.extra = read_extra_options(*extra, root / "extra_options");
    read.extra_options = &*extra;
  }
  if (read.config.extra.op_types_to_quantize == default_op_types_to_quantize()) read.config.extra.op_types_to_quantize.clear();
  for (const auto& item : json.items()) {
    const auto key = std::ranges::find(kTopLevelKeys, std::string_view(item.key()), &TopLevelKey::key);
    if (key != std::end(kTopLevelKeys)) {
      key->read(item.value(), root / item.key(), read);
    } else if (is_extra_option(item.key())) {
      (root / item.key()).fail("is an extra option: move it under extra_options");
    } else {
      (root / item.key()).fail("is not a key of Quark's QConfig (known: " +
                               text::join_each(kTopLevelKeys, [](const TopLevelKey& k) { return std::string(k.key); }) + ")");
    }
  }
  return read.config;
}

Json quark_config_to_json(const QuantConfig& config) {
  const Where root(kNoFile, "");
  refuse_unknown(config.unknown_keys, root, "Quark's QConfig");
  const ExtraOptions& extra = config.extra;
  Json json = Json::object();
  json["global_config"] = layer_to_json(config.global, root / "global_config", extra);
  json["specific_layer_config"] =
      pairs_to_json(config.specific, root / "specific_layer_config", "Quark's [layer, names] pair", extra,
                    [](const LayerOverride& entry) { return std::pair(std::optional(entry.layer_config), entry.target_node_names); });
  json["layer_type_config"] =
      pairs_to_json(config.layer_types, root / "layer_type_config", "Quark's [layer, op types] pair", extra,
                    [](const LayerTypeOverride& entry) { return std::pair(entry.layer_config, entry.op_types); });
  json["exclude"] = exclude_to_json(config.exclude, root / "exclude");
  Json algorithms = Json::array();
  for (size_t i = 0; i < config.algorithms.size(); ++i) {
    algorithms.push_back(algorithm_to_json(config.algorithms[i], (root / "algo_config")[i]));
  }
  json["algo_config"] = std::move(algorithms);
  json["use_external_data_format"] = config.use_external_data_format;
  Json extra_json = extra_options_to_json(extra);
  if (extra.op_types_to_quantize.empty()) extra_json["OpTypesToQuantize"] = default_op_types_to_quantize();
  json["extra_options"] = std::move(extra_json);
  return json;
}

}  // namespace mixprec::config
