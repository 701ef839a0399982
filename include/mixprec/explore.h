// explore: the smallest set of layers to lift from INT8 to BF16 for the model to meet its
// accuracy criterion (SPEC "Exploration").
//
// Calibrate once (or reuse the work dir's statistics), cache the FP32 reference outputs, then
// every step is one graph rewrite from those statistics plus one evaluation pass: no step
// re-runs calibration or the FP32 model. Promotions happen one layer at a time in ranking order
// under the SPEC guardrails: a promotion that does not improve the objective is skipped, one
// that makes it worse is rolled back; the search stops when the criterion is met, on a PSNR
// plateau (< 0.5 dB over 3 accepted promotions), at the BF16 budget, or after max iterations.
// Early exits: full INT8 already passes (for classification: the pre-exploration gate), or full
// BF16 fails (out of reach by precision alone).
//
// The work dir always holds the best assignment so far: final.onnx and final_config.json are
// rewritten after every accepted promotion, ledger.jsonl gets one flushed line per step, and
// sensitivity.json the ranking. Same inputs and seed give the same ledger (timings aside).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "mixprec/metrics.h"
#include "mixprec/pipeline.h"

namespace mixprec {

enum class Ranking {
  kDynamicRange,  // max |activation| over the layer's inputs seen in calibration (no evaluation)
  kMeasured,      // objective gain when only that layer is lifted to BF16 (one evaluation each)
};
const char* to_string(Ranking ranking);
std::optional<Ranking> ranking_from_name(const std::string& name);

struct ExploreParams {
  std::string model_path;
  std::string work_dir;
  std::string base_preset = "XINT8";  // the INT8 starting point
  DataSpec calibration;
  DataSpec evaluation;
  Tolerance tolerance;
  std::optional<AccuracyTarget> target;
  double bf16_budget = 0.3;   // share of the candidate layers that may be lifted
  size_t max_iterations = 0;  // 0: min(50, compute layers)
  Ranking ranking = Ranking::kDynamicRange;
  SessionOptions session;
  ProgressFn progress;        // calibration progress
};

// One line of the ledger.
struct ExploreStep {
  size_t index = 0;
  std::string layer;              // the layer promoted in this step
  std::string decision;           // "accepted", "skipped" (no gain), "rolled back" (worse)
  double objective = 0;           // see ExploreResult::objective_name
  double psnr_db = 0;             // worst output
  double pass_rate = 0;           // worst output
  bool meets_criterion = false;
  size_t bf16_layers = 0;         // after the decision
  double seconds = 0;             // rewrite + evaluation
};

struct ExploreResult {
  std::string stop_reason;
  std::string objective_name;      // "worst-output PSNR (dB)", "worst-output top-1 agreement", ...
  TaskInference task;
  size_t compute_layers = 0;       // candidates: every layer the base preset puts in integer formats
  std::vector<std::string> ranking;  // candidates, most sensitive first
  std::vector<std::string> bf16_layers;  // the final assignment's lifted layers
  std::vector<OutputMetrics> int8_metrics, bf16_metrics, final_metrics;
  Verdict final_verdict;
  std::vector<ExploreStep> steps;
  size_t evaluations = 0;          // evaluation passes spent (baselines, ranking, steps)
  double calibration_seconds = 0;  // 0 when statistics were reused
  double seconds = 0;
  std::string final_model_path, final_config_path, ledger_path;
  std::vector<std::string> warnings;
};

// Called after each step (to print progress lines).
using StepCallback = std::function<void(const ExploreStep&)>;

ExploreResult explore(const ExploreParams& params, const StepCallback& on_step = {});

}  // namespace mixprec
