// Calibration statistics on disk, so a model is calibrated once and its statistics reused by
// every exploration iteration and run. The layout puts one tensor per line, so two files
// diff line by line:
//   {
//     "format": "mixprec-stats",
//     "version": 1,
//     "model_fingerprint": "...",
//     "samples": 8,
//     "data_description": "...",
//     "histogram_bins": 2048,
//     "ranks": {"conv1_out": 4, ...},      (the rank of every tensor the pass saw)
//     "body_shapes": {"If_0_conv_in": [1, 4, 8], ...},   (only when the model has If/Loop/Scan bodies)
//     "tensors": {
//       "conv1_out": {"min":-1.5,"max":3.25,"count":4096,"nan_count":0,"hist_range":4.0,"hist":[-1000,3,17,-1046]},
//       ...
//     }
//   }
// "hist" is run-length coded: a non-negative integer is one bin's count, a negative -n stands
// for n empty bins (activation histograms are mostly empty: data fills at most the middle
// half, and outliers leave long gaps). [] means no finite value was seen.
// Floats are written as the shortest decimal that reads back to the same double, and every
// float widens to double exactly, so a load gives back the very same bits.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

#include "common/json_text.h"
#include "mixprec/calibration.h"
#include "mixprec/error.h"
#include "mixprec/model_io.h"

namespace mixprec {
namespace {

using Json = nlohmann::ordered_json;

constexpr const char* kFileFormat = "mixprec-stats";
constexpr int64_t kFileVersion = 1;

Json encode_histogram(const std::vector<uint64_t>& hist) {
  Json runs = Json::array();
  int64_t empty = 0;
  for (uint64_t count : hist) {
    if (count == 0) {
      ++empty;
      continue;
    }
    if (empty > 0) runs.push_back(-empty);
    empty = 0;
    runs.push_back(count);
  }
  if (empty > 0) runs.push_back(-empty);
  return runs;
}

Json tensor_to_json(const TensorStats& stats) {
  return Json{{"min", stats.min},
              {"max", stats.max},
              {"count", stats.count},
              {"nan_count", stats.nan_count},
              {"hist_range", stats.hist_range},
              {"hist", encode_histogram(stats.hist)}};
}

// Typed access to the parsed document; every failure names the file and the key path
// ("tensors.conv1_out.count must be a non-negative integer").
class Reader {
 public:
  explicit Reader(const std::string& path) : path_(path) {}

  [[noreturn]] void fail(const std::string& where, const std::string& problem) const {
    throw_bad_input(path_, where.empty() ? problem : where + " " + problem);
  }

  // `object` must be an object with exactly `keys`.
  // `keys` must all be there; `optional` ones may be.
  void expect_keys(const Json& object, const std::string& where, std::initializer_list<const char*> keys,
                   std::initializer_list<const char*> optional = {}) const {
    if (!object.is_object()) fail(where, "must be an object");
    const auto listed = [&](std::initializer_list<const char*> list, const std::string& name) {
      return std::find_if(list.begin(), list.end(), [&](const char* key) { return name == key; }) != list.end();
    };
    for (const auto& item : object.items()) {
      if (!listed(keys, item.key()) && !listed(optional, item.key())) {
        fail(key_path(where, item.key().c_str()), "is not a statistics key");
      }
    }
    for (const char* key : keys) {
      if (!object.contains(key)) fail(key_path(where, key), "is missing");
    }
  }

  uint64_t unsigned_at(const Json& object, const std::string& where, const char* key) const {
    const Json& value = object.at(key);
    if (!value.is_number_unsigned()) fail(key_path(where, key), "must be a non-negative integer");
    return value.get<uint64_t>();
  }

  float float_at(const Json& object, const std::string& where, const char* key) const {
    const Json& value = object.at(key);
    constexpr double kFloatMax = std::numeric_limits<float>::max();
    if (!value.is_number() || !(std::fabs(value.get<double>()) <= kFloatMax)) {
      fail(key_path(where, key), "must be a finite number in float range");
    }
    return static_cast<float>(value.get<double>());
  }

  std::string string_at(const Json& object, const std::string& where, const char* key) const {
    const Json& value = object.at(key);
    if (!value.is_string()) fail(key_path(where, key), "must be a string");
    return value.get<std::string>();
  }

  static std::string key_path(const std::string& where, const char* key) {
    return where.empty() ? key : where + "." + key;
  }

 private:
  const std::string& path_;
};

std::vector<uint64_t> decode_histogram(const Reader& reader, const Json& runs, const std::string& where) {
  if (!runs.is_array()) reader.fail(where, "must be an array");
  std::vector<uint64_t> hist;
  for (const Json& run : runs) {
    uint64_t bins = 1;
    uint64_t count = 0;
    if (run.is_number_unsigned()) {
      count = run.get<uint64_t>();
    } else if (run.is_number_integer()) {
      bins = static_cast<uint64_t>(-(run.get<int64_t>() + 1)) + 1;  // -n: n empty bins (no overflow at INT64_MIN)
    } else {
      reader.fail(where, "must hold integers (counts, or -n for n empty bins)");
    }
    // Bounded before inserting, so a corrupt run cannot allocate without limit.
    if (bins > kHistogramBins - hist.size()) {
      reader.fail(where, "holds more than " + std::to_string(kHistogramBins) + " bins");
    }
    hist.insert(hist.end(), bins, count);
  }
  if (!hist.empty() && hist.size() != kHistogramBins) {
    reader.fail(where, "holds " + std::to_string(hist.size()) + " bins, expected " + std::to_string(kHistogramBins));
  }
  return hist;
}

TensorStats tensor_from_json(const Reader& reader, const Json& object, const std::string& where) {
  reader.expect_keys(object, where, {"min", "max", "count", "nan_count", "hist_range", "hist"});
  TensorStats stats;
  stats.min = reader.float_at(object, where, "min");
  stats.max = reader.float_at(object, where, "max");
  stats.count = reader.unsigned_at(object, where, "count");
  stats.nan_count = reader.unsigned_at(object, where, "nan_count");
  stats.hist_range = reader.float_at(object, where, "hist_range");
  stats.hist = decode_histogram(reader, object.at("hist"), Reader::key_path(where, "hist"));

  // The invariants the collector guarantees and compute_range relies on.
  uint64_t sum = 0;
  for (uint64_t count : stats.hist) sum += count;
  if (sum != stats.count) {
    reader.fail(where, "histogram holds " + std::to_string(sum) + " values, count says " + std::to_string(stats.count));
  }
  if (stats.min > stats.max) reader.fail(where, "has min > max");
  int exponent = 0;
  const bool power_of_two = std::frexp(stats.hist_range, &exponent) == 0.5f;
  if (!stats.hist.empty() && !(power_of_two && stats.hist_range >= kHistogramRangeMin)) {
    reader.fail(Reader::key_path(where, "hist_range"), "must be a power of two >= 2^-24");
  }
  return stats;
}

CalibrationStats stats_from_json(const Json& doc, const std::string& path) {
  const Reader reader(path);
  if (!doc.is_object() || !doc.contains("format") || doc.at("format") != kFileFormat) {
    reader.fail("format", std::string("must be \"") + kFileFormat + "\": not a mixprec statistics file");
  }
  if (!doc.contains("version") || doc.at("version") != kFileVersion) {
    reader.fail("version", "must be " + std::to_string(kFileVersion) + " (a file from another mixprec version?)");
  }
  reader.expect_keys(doc, "", {"format", "version", "model_fingerprint", "samples", "data_description",
                               "histogram_bins", "ranks", "tensors"},
                     {"body_shapes"});
  if (reader.unsigned_at(doc, "", "histogram_bins") != kHistogramBins) {
    reader.fail("histogram_bins", "must be " + std::to_string(kHistogramBins));
  }

  CalibrationStats stats;
  stats.model_fingerprint = reader.string_at(doc, "", "model_fingerprint");
  stats.samples = reader.unsigned_at(doc, "", "samples");
  stats.data_description = reader.string_at(doc, "", "data_description");
  const Json& ranks = doc.at("ranks");
  if (!ranks.is_object()) reader.fail("ranks", "must be an object");
  for (const auto& item : ranks.items()) {
    if (!item.value().is_number_unsigned()) reader.fail("ranks." + item.key(), "must be a non-negative integer");
    stats.ranks.emplace(item.key(), item.value().get<int64_t>());
  }
  if (doc.contains("body_shapes")) {
    const Json& shapes = doc.at("body_shapes");
    if (!shapes.is_object()) reader.fail("body_shapes", "must be an object");
    for (const auto& item : shapes.items()) {
      const auto bad = [&] { reader.fail("body_shapes." + item.key(), "must be a list of non-negative integers"); };
      if (!item.value().is_array()) bad();
      std::vector<int64_t> dims;
      for (const Json& dim : item.value()) {
        if (!dim.is_number_unsigned()) bad();
        dims.push_back(dim.get<int64_t>());
      }
      stats.body_shapes.emplace(item.key(), std::move(dims));
    }
  }
  const Json& tensors = doc.at("tensors");
  if (!tensors.is_object()) reader.fail("tensors", "must be an object");
  for (const auto& item : tensors.items()) {
    stats.tensors.emplace(item.key(), tensor_from_json(reader, item.value(), "tensors." + item.key()));
  }
  return stats;
}

}  // namespace

void save_stats(const CalibrationStats& stats, const std::string& path) {
  std::string text = "{\n";
  try {
    const auto line = [&](const char* key, const Json& value) {
      text += "  " + Json(key).dump() + ": " + value.dump() + ",\n";
    };
    line("format", kFileFormat);
    line("version", kFileVersion);
    line("model_fingerprint", stats.model_fingerprint);
    line("samples", stats.samples);
    line("data_description", stats.data_description);
    line("histogram_bins", kHistogramBins);
    line("ranks", Json(stats.ranks));
    if (!stats.body_shapes.empty()) line("body_shapes", Json(stats.body_shapes));
    text += "  \"tensors\": {";
    const char* separator = "\n";
    for (const auto& [name, tensor] : stats.tensors) {
      text += separator;
      text += "    " + Json(name).dump() + ": " + tensor_to_json(tensor).dump();
      separator = ",\n";
    }
  } catch (const Json::exception& e) {
    // dump() refuses strings that are not UTF-8; a name that cannot be written cannot be found again.
    throw_bad_input(path, std::string("cannot write the statistics: ") + e.what());
  }
  text += "\n  }\n}\n";
  write_file_atomically(path, text);
}

CalibrationStats parse_stats(std::string_view text, const std::string& label) {
  const Json doc = json_text::parse_json(text, label, "a JSON statistics file");
  return json_text::with_json_errors(label, "a statistics file", [&] { return stats_from_json(doc, label); });
}

CalibrationStats load_stats(const std::string& path) { return parse_stats(read_file(path, "statistics file"), path); }

}  // namespace mixprec
