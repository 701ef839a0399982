// Workflow reports: dry-run and requantize results as text for people and JSON for tools.
// Rendering never fails and never changes the results.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "mixprec/plan.h"
#include "mixprec/workflow.h"

namespace mixprec {

// The metrics table of every row against FP32, one verdict line per row (with the device's
// availability), and the recommendation with its reason. Ends with a newline.
std::string dry_run_text(const DryRunReport& report);
// {task {type, reason}, device, samples, data, calibration_seconds, reference_seconds,
//  rows [preset_result_to_json], recommendation {action, reason}, runtimes, warnings}
nlohmann::ordered_json dry_run_to_json(const DryRunReport& report);
// A dry-run row or ladder rung: {label, preset, on_device, device_note, verdict, seconds, model,
// outputs [metrics_to_json]}.
nlohmann::ordered_json preset_result_to_json(const PresetResult& result);
// [{runtime, model, ok, detail}]
nlohmann::ordered_json runtime_trials_to_json(const std::vector<RuntimeTrial>& trials);

// One line per runtime tried: "runtime  CUDA: FAILED, <reason> (model)".
std::string runtime_trials_text(const std::vector<RuntimeTrial>& trials);

// Every rung tried with its metrics and verdict, the runtimes tried, and the outcome.
std::string ladder_text(const LadderReport& report);

// Previous and new quantization against the stripped float model, and the delta.
std::string requantize_text(const RequantizeReport& report);

// The plan's intent, its decision table (decision, value, reason), its risks by severity, and
// whether it needs confirmation.
std::string plan_text(const QuantPlan& plan);

}  // namespace mixprec
