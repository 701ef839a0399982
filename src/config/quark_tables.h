// Quark's names, as data: its data types and what mixprec format each is, the enums of its
// tensor config (ScaleType, CalibMethod, QuantGranularity), how its calibration methods map
// onto mixprec's, and its algorithms' parameters. quark_config.cpp reads and writes Quark's
// shape with these rows; a format mixprec gains (INT4, say) is one row's FormatId here.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "mixprec/calibration.h"
#include "mixprec/formats.h"

namespace mixprec::config::quark {

// One Quark data_type. A name without a format is one mixprec cannot express yet: reading it is
// an error that lists the supported ones.
struct DataTypeRow {
  const char* name;                      // Quark's data_type ("Int8", "BFP16")
  std::optional<FormatId> format;        // with ScaleType.Float32 (the scale of a float format)
  std::optional<FormatId> power_of_two;  // with ScaleType.PowerOf2
  bool int32_bias = false;               // as a bias: extra_options.Int32Bias (int32 codes at
                                         // input scale x weight scale)
};
std::span<const DataTypeRow> data_types();
const DataTypeRow* find_data_type(std::string_view name);
// The row whose format or power_of_two is `format`; nullptr when Quark has none.
const DataTypeRow* data_type_of(FormatId format);
// "Int8, UInt8, ..., Float16, Int32 (as a bias)": the names a config may use today.
std::string supported_data_types();

enum class ScaleType { kFloat32, kPowerOf2, kInt16 };
enum class Method { kMinMax, kMinMse, kPercentile, kEntropy, kLayerwisePercentile, kDistribution };
enum class Granularity { kTensor, kChannel, kGroup };
// Quark's QConfig names no group size: QuantGranularity.Group reads as groups of this many
// weights (the block size of ONNX Runtime's MatMulNBits quantizer default), and only this size
// is written back as Group.
inline constexpr int64_t kGroupSize = 32;

// One of Quark's enums: its class name and members, each supported by mixprec or not (yet).
template <class E>
struct EnumMember {
  E value;
  const char* name;
  bool supported;
};
template <class E>
struct EnumClass {
  const char* name;  // "ScaleType": Quark writes "ScaleType.PowerOf2"
  std::span<const EnumMember<E>> members;

  const EnumMember<E>& member(E value) const {
    for (const EnumMember<E>& row : members) {
      if (row.value == value) return row;
    }
    return members.front();  // every value has a row (the tables list them all)
  }
  std::string spelled(E value) const { return std::string(name) + "." + member(value).name; }
  // "Float32, PowerOf2": every member's name, or the supported ones'.
  std::string names(bool supported_only) const {
    std::string out;
    for (const EnumMember<E>& row : members) {
      if (supported_only && !row.supported) continue;
      out += (out.empty() ? "" : ", ") + std::string(row.name);
    }
    return out;
  }
};
const EnumClass<ScaleType>& scale_types();
const EnumClass<Method>& methods();
const EnumClass<Granularity>& granularities();

// mixprec's calibration method for Quark's method at a scale type (Quark's own mapping: MinMax
// with power-of-two scales is PowerOfTwo_NonOverflow, MinMSE PowerOfTwo_MinMSE); nullopt for
// a method mixprec does not have.
std::optional<CalibMethod> calib_method_of(Method method, bool power_of_two);
// Quark's spelling of a mixprec method; the scale type comes from the format.
Method method_of(CalibMethod method);

// One of Quark's algo_config names. `used` are the parameters mixprec reads; `unused` Quark's
// others (devices, batching, ...), warned about and not used.
struct AlgorithmRow {
  const char* name;          // Quark's ("smooth_quant")
  const char* mixprec_name;  // algo_config's in mixprec's shape ("smoothquant")
  bool implemented;
  std::span<const char* const> used;
  std::span<const char* const> unused;
};
std::span<const AlgorithmRow> algorithms();

// A parameter of Quark's AdaRoundConfig / AdaQuantConfig that mixprec does not read, by its
// algo_config name and its extra_options.FastFinetune key, with the value (JSON text) at which
// Quark does what mixprec does anyway: "*" any value (it tunes only Quark's memory, logging or
// loading), nullptr none (mixprec always learns full-batch on every calibration sample).
struct UnusedReconstructionKey {
  const char* param;          // "early_stop"
  const char* fast_finetune;  // "EarlyStop"; nullptr when Quark's FastFinetune has no spelling known here
  const char* same_as;        // "false"
};
const UnusedReconstructionKey* find_unused_reconstruction_key(std::string_view name);  // either name
// Whether `value` is one at which Quark does what mixprec does (strings compared ignoring case);
// such a key is accepted without a warning.
bool does_what_mixprec_does(const UnusedReconstructionKey& key, const nlohmann::ordered_json& value);
const AlgorithmRow* find_algorithm_by_mixprec_name(std::string_view name);
const AlgorithmRow* find_algorithm(std::string_view name);

}  // namespace mixprec::config::quark
