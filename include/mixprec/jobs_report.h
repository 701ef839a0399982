// The jobs' reports (quantize, dequantize, compare, run) and explore's result as text for people
// and JSON for tools. Rendering never fails and never changes the results.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "mixprec/explore.h"
#include "mixprec/jobs.h"
#include "mixprec/run.h"

namespace mixprec {

// model, config, node counts by precision, what the rewrite inserted and the preparation folded,
// the opset, the calibration (samples used, seconds, where the statistics went) and notes.
std::string quantize_text(const QuantizeReport& report);
std::string dequantize_text(const DequantizeReport& report);
std::string patch_text(const PatchReport& report);
std::string mha_mx9_text(const MhaMx9Report& report);

// task, data, the metrics table and the verdict.
std::string compare_text(const CompareReport& report, const std::string& model_label);
nlohmann::ordered_json compare_to_json(const CompareReport& report, const std::string& reference, const std::string& model);

// model, runtime, data, inputs/outputs, session build, latency and throughput.
std::string run_text(const RunReport& report);
nlohmann::ordered_json run_to_json(const RunReport& report);

// explore's outcome: the stop reason, the lifted layers, the INT8 / full-lift / final metrics,
// the verdict, the expected compute time on `device`, what it cost, the provider check and the
// work dir's files.
std::string explore_text(const ExploreResult& result, const std::string& lift, const std::string& device);
// One line per step as it happens (a ladder's step names its rung's format).
std::string explore_step_line(const ExploreStep& step);
// How many layers a ladder lifted to each rung: "40 to MX9, 12 to BF16" (the rungs that hold any).
std::string lifted_per_rung(const ExploreResult& result);

}  // namespace mixprec
