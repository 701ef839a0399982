// The workflow modes of SPEC "Modes": dry-run (every full-precision choice measured against
// FP32, and what to do next) and requantize (strip a quantized model, quantize it again with a
// new config, and say what changed). guide (mixprec/guide.h) strings the phases together.
//
// Both calibrate once and run the FP32 reference once (evaluation/workbench), measure accuracy
// on CPU whatever the deployment's provider, never modify the input model, and write every file
// atomically. A provider other than CPU is asked to load the models they produce (RuntimeTrial).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "mixprec/analysis.h"
#include "mixprec/config.h"
#include "mixprec/evaluation.h"
#include "mixprec/metrics.h"
#include "mixprec/rewrite.h"

namespace mixprec {

struct DryRunParams {
  // work_dir: statistics and the evaluated models (dry_run_<preset>.onnx); no calibration data:
  // calibration_data()'s rule.
  EvaluationSetup setup;
  // device: decides which rows may be recommended (FP16 not on stx, ...) and which int8 preset
  // the INT8 row measures; provider: asked to load each row's model.
  DeploymentTarget deployment;
};

// One preset evaluated on CPU against FP32: a dry-run row, a ladder rung.
struct PresetResult {
  std::string label;           // "full BF16", "w8a8 (XINT8)", ...
  std::string preset;
  bool on_device = true;       // the device runs every format of the preset
  std::string device_note;     // why not, when !on_device
  std::vector<OutputMetrics> metrics;
  Verdict verdict;
  double seconds = 0;          // rewrite + evaluation
  std::string model_path;      // the evaluated model, in the work dir
};
using DryRunRow = PresetResult;

struct Recommendation {
  std::string action;          // "int8", "explore", "rethink"
  std::string reason;          // in words, with the numbers behind it
};

// How long an exploration from the INT8 row would take (the Vitis AI workflow asks the dry run):
// the evaluations each search mode spends at most, times the INT8 row's measured seconds.
struct ExploreEstimate {
  std::string search;          // "greedy", "bisection", "cost"
  size_t evaluations = 0;      // at most (defaults: layer-error ranking, budget 0.3; cost: budget 1)
  double seconds = 0;
};

struct DryRunReport {
  TaskInference task;
  std::string device;
  size_t samples = 0;
  std::string data_description;
  double calibration_seconds = 0;  // 0 when the work dir's statistics were reused
  double reference_seconds = 0;    // the FP32 pass
  std::vector<DryRunRow> rows;
  Recommendation recommendation;
  size_t candidates = 0;               // layers the INT8 row puts in integer formats
  double seconds_per_evaluation = 0;   // the INT8 row's rewrite + evaluation
  std::vector<ExploreEstimate> explore_estimates;
  std::vector<RuntimeTrial> runtimes;  // every runtime tried, failed ones included
  std::vector<std::string> warnings;
};

DryRunReport dry_run(const DryRunParams& params);

struct RequantizeParams {
  // model_path: a quantized model (Q/DQ or cast pairs); work_dir: stripped.onnx and the statistics.
  EvaluationSetup setup;
  DeploymentTarget deployment;  // its provider is asked to load the requantized model
  ConfigSource config;          // the new config: a file or a preset
  std::string output_path;
  ConfigShape config_shape = ConfigShape::kMixprec;  // of OUTPUT.config.json
};

struct RequantizeReport {
  TaskInference task;
  std::string stripped_path;   // the float model recovered from the input
  StripSummary strip;
  size_t samples = 0;
  std::string data_description;
  std::vector<OutputMetrics> previous_metrics, new_metrics;  // both against the stripped model
  Verdict previous_verdict, new_verdict;
  double psnr_delta_db = 0;    // worst-output PSNR, new minus previous
  double pass_rate_delta = 0;  // worst-output pass rate, new minus previous
  std::string output_path, config_path;
  std::vector<RuntimeTrial> runtimes;
  std::vector<std::string> warnings;
};

// kBadInput when the model is not quantized (nothing to strip: use quantize).
RequantizeReport requantize(const RequantizeParams& params);

// The shallow ladder (SPEC "Shallow ladder"): w8a8 first (XINT8 on devices that need
// power-of-two scales, U8S8 otherwise); if it misses the task's criterion, w8a16 (A16W8); if
// both miss, the float model stays and the report says what to try next. One calibration,
// one FP32 reference, one evaluation per rung tried.
struct LadderParams {
  EvaluationSetup setup;        // work_dir: statistics and the rung models (ladder_<preset>.onnx)
  DeploymentTarget deployment;  // device: which w8a8 preset; provider: tried on every rung model
};

using LadderRung = PresetResult;

struct LadderReport {
  TaskInference task;
  std::string device;
  size_t samples = 0;
  std::string data_description;
  std::vector<LadderRung> rungs;      // in the order tried; the ladder stops at the first pass
  std::string chosen;                 // the passing rung's preset, or "float"
  std::string chosen_model_path;      // empty for float: the input model stays as it is
  std::string follow_up;              // what to do next, in words
  std::vector<RuntimeTrial> runtimes; // every runtime tried, failed ones included
  std::vector<std::string> warnings;
};

LadderReport ladder(const LadderParams& params);

}  // namespace mixprec
