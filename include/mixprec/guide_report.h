// guide's phases and outcome as text for people (mixprec/guide.h holds them as typed results).
// Rendering never fails and never changes the results.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mixprec/guide.h"

namespace mixprec {

// What a phase found, one fact per line (no trailing newlines).
std::vector<std::string> guide_phase_lines(const GuidePhase& phase);

// One paragraph: what to use and why (full mode: PASS/FAIL, the final model, its criterion and
// expected compute time; the ladder's follow-up; dry-run's recommendation; requantize's delta).
std::string guide_outcome(const GuideReport& report);

// The closing summary: one line per phase (name, status, seconds), the final model and config,
// and the outcome. Ends with a newline.
std::string guide_summary_text(const GuideReport& report);

// A phase for tools and for the HTML report: {name, status, seconds, lines (guide_phase_lines),
// result}. result is null for a phase without one, else the phase's typed result: analyze
// analysis_to_json(); dry-run dry_run_to_json(); ladder and dry-run rows preset_result_to_json();
// validate {task, outputs, verdict}; quantize {methods [{method, psnr_db, pass}], kept, layers,
// integer_layers, formats, model, config}; explore {requested, needed, search, result {stop_reason,
// objective, lifted_layers, final_outputs, verdict, final_time_vs_bf16, int8_time_vs_bf16, ...}};
// compile {provider, session_ms, partition {integer_share, integer_kernels, float_nodes, ...},
// coverage, islands, time_vs_bf16, start_time_vs_bf16, macs, edges, ...}; exec {provider, fp32,
// final, full_bf16, full_int8 (latencies {runs, min_ms, median_ms, ...}), speedup, ...}.
// Key order is stable; new keys are only appended.
nlohmann::ordered_json guide_phase_to_json(const GuidePhase& phase);
// {mode, device, pass, criterion, time_vs_bf16, final_model, final_config, provider_config,
// outcome (guide_outcome), phases [guide_phase_to_json], warnings}. A report of the phases so far
// (a run still going, or stopped) has the same shape.
nlohmann::ordered_json guide_report_to_json(const GuideReport& report);

}  // namespace mixprec
