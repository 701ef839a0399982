// Config JSON: parse with the loader's limits, read the config, compile its patterns, match
// them against node names (taken from the input itself, so matches happen), and check that
// saving and reading again gives the same config.
#include "common/json_text.h"
#include "config/node_pattern.h"
#include "fuzz_support.h"
#include "mixprec/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mixprec;
  fuzz::silence_log();
  const std::string label = "fuzz.config.json";
  QuantConfig config;
  try {
    const auto json = json_text::parse_json(fuzz::text_of(data, size), label, "valid JSON");
    config = json_text::with_json_errors(label, "a config", [&] { return parse_config(json, label); });
  } catch (const Error&) {
    return 0;
  }
  const selection::ConfigPatterns patterns = selection::compile_patterns(config, label);
  std::vector<std::string> names = {"", "/conv1/Conv", std::string(fuzz::text_of(data, std::min<size_t>(size, 64)))};
  for (const auto& entry : config.specific) names.insert(names.end(), entry.target_node_names.begin(), entry.target_node_names.end());
  for (const auto& name : names) {
    for (const auto& targets : patterns.targets) {
      for (const auto& pattern : targets) (void)pattern.matches(name);
    }
    for (const auto& pattern : patterns.excludes) (void)pattern.matches(name);
  }
  // The saved text must read back to the same config (unknown keys included).
  std::string text;
  try {
    text = config_to_json(config).dump();
  } catch (const nlohmann::json::exception&) {
    return 0;  // dump() refuses strings that are not UTF-8, which JSON text may carry escaped
  }
  const QuantConfig again = parse_config(json_text::parse_json(text, "saved", "valid JSON"), "saved");
  MIXPREC_FUZZ_CHECK(config_to_json(again) == config_to_json(config));
  return 0;
}
