// What the two config shapes' readers share (config_json.cpp reads mixprec's shape,
// quark_config.cpp Quark's): where a value sits for messages, the typed readers of plain JSON
// values, the extra_options object (the same in both shapes) and the checks every config gets
// once it is read.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "mixprec/config.h"
#include "mixprec/enum_names.h"
#include "mixprec/error.h"
#include "mixprec/log.h"

namespace mixprec::config {

using Json = nlohmann::ordered_json;

// Where a value sits in the config (label and key path), for messages.
class Where {
 public:
  Where(const std::string& label, std::string path) : label_(label), path_(std::move(path)) {}

  Where operator/(std::string_view key) const {
    return {label_, path_.empty() ? std::string(key) : path_ + "." + std::string(key)};
  }
  Where operator[](size_t index) const { return {label_, path_ + "[" + std::to_string(index) + "]"}; }

  // "LABEL: PATH PROBLEM", e.g. "cfg.json: extra_options.NumCalibSamples must be an integer".
  [[noreturn]] void fail(const std::string& problem) const { throw_bad_input(label_, subject() + " " + problem); }
  void warn(const std::string& problem) const { log_warning(prefix() + subject() + " " + problem); }
  void note(const std::string& problem) const { log_info(prefix() + subject() + " " + problem); }
  const std::string& label() const { return label_; }
  const std::string& path() const { return path_; }

 private:
  std::string prefix() const { return label_.empty() ? "" : label_ + ": "; }
  std::string subject() const { return path_.empty() ? "the config" : path_; }

  const std::string& label_;
  std::string path_;
};

bool read_bool(const Json& json, const Where& at);          // "must be true or false"
int64_t read_integer(const Json& json, const Where& at);    // "must be an integer"
double read_number(const Json& json, const Where& at);      // "must be a finite number"
std::string read_string(const Json& json, const Where& at); // "must be a string"
std::vector<std::string> read_strings(const Json& json, const Where& at);  // a list of strings

// A value named by one of `names` (an EnumNames table); `what` says what it names.
template <class E>
E read_named(const Json& json, const Where& at, const EnumNames<E>& names, const char* what) {
  const std::string name = read_string(json, at);
  const auto value = names.from_name(name);
  if (!value) at.fail("names an unknown " + std::string(what) + " \"" + name + "\" (known: " + names.list() + ")");
  return *value;
}

// The extra_options object: its known keys read into ExtraOptions, the others warned about and
// kept; and the object written back with every option.
ExtraOptions read_extra_options(const Json& json, const Where& at);
Json extra_options_to_json(const ExtraOptions& extra);
bool is_extra_option(std::string_view key);

// Checks that need the whole config (ranges, algo_config against extra_options, regexes); the
// end of reading either shape.
void check_config(const QuantConfig& config, const std::string& label);

}  // namespace mixprec::config
