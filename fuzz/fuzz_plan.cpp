// Plan files: parse with the loader's limits, validate against the shipped schema, read the
// plan and its embedded config; a plan that reads writes back to JSON that reads the same.
#include "common/json_text.h"
#include "fuzz_support.h"
#include "mixprec/plan.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mixprec;
  fuzz::silence_log();
  const std::string label = "fuzz.plan.json";
  QuantPlan plan;
  try {
    const auto json = json_text::parse_json(fuzz::text_of(data, size), label, "JSON");
    plan = json_text::with_json_errors(label, "a quantization plan", [&] { return plan_from_json(json, label); });
  } catch (const Error&) {
    return 0;
  }
  (void)plan_blocker(plan);
  nlohmann::ordered_json written;
  try {
    written = plan_to_json(plan);
    (void)written.dump();
  } catch (const nlohmann::json::exception&) {
    return 0;  // strings that are not UTF-8 cannot be written
  }
  MIXPREC_FUZZ_CHECK(plan_to_json(plan_from_json(written, "written")) == written);
  return 0;
}
