// explore: the smallest set of layers to lift from INT8 to BF16 for the model to meet its
// accuracy criterion (SPEC "Exploration").
//
// Calibrate once (or reuse the work dir's statistics), cache the FP32 reference outputs, then
// every step is one graph rewrite from those statistics plus one evaluation pass: no step
// re-runs calibration or the FP32 model. The greedy search (SPEC's) promotes one layer at a
// time in ranking order under the guardrails: a promotion that does not improve the objective
// by more than the metric's min_gain is skipped, one that makes it worse is rolled back; after
// the first sweep the skipped layers are tried once more against the new state (a layer that
// gains nothing alone can gain once a noisier one is lifted); it stops when the criterion is
// met, on a PSNR plateau (< 0.5 dB over 3 accepted promotions), at the BF16 budget, or after
// max iterations. The bisection search finds the fewest top-ranked layers that meet the
// criterion within the budget instead, in about log2(budget) evaluations.
// Early exits: full INT8 already passes (for classification: the pre-exploration gate), or full
// BF16 fails (out of reach by precision alone).
//
// Accuracy is measured on CPU (accuracy_session) whatever the deployment's provider; the
// deployment's device gates the formats and gives the expected speed-up, and a provider other
// than CPU is asked to load the final model (ExploreResult::runtime_check).
//
// The work dir always holds the best assignment so far: final.onnx and final_config.json are
// rewritten after every accepted promotion, ledger.jsonl gets one flushed line per step, and
// sensitivity.json the ranking. Same inputs and seed give the same ledger (timings aside).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mixprec/config.h"
#include "mixprec/enum_names.h"
#include "mixprec/evaluation.h"
#include "mixprec/metrics.h"

namespace mixprec {

// Default: layer-error. Measured on the PP-OCR models with a bisection over each ranking (the
// fewest top-ranked layers lifted to BF16 that meet the criterion): cls (top-1 on 16 pictures)
// 59 of 117 layers with layer-error, 102 with dynamic-range, 112 with measured; det (PSNR > 30
// dB) 204 of 249 with layer-error, 221 with dynamic-range. layer-error costs 2 passes, measured
// one evaluation per layer.
enum class Ranking {
  kDynamicRange,  // max |activation| over the layer's inputs seen in calibration (no evaluation)
  kMeasured,      // objective gain when only that layer is lifted to BF16 (one evaluation each)
  kLayerError,    // noise each layer adds in full INT8: output noise-to-signal ratio minus its
                  // inputs' worst, from one FP32 and one INT8 pass with every layer exposed
  kInjectedNoise, // noise each layer injects itself in full INT8: its output against the layer run
                  // alone in float on the INT8 model's own inputs (one exposed pass, then each layer)
};
const EnumNames<Ranking>& ranking_names();  // "dynamic-range", "measured", "layer-error", "injected-noise"
inline const char* to_string(Ranking ranking) { return ranking_names().name(ranking); }

enum class SearchMode {
  kGreedy,     // SPEC: one promotion per step in ranking order, with the skip/rollback/plateau guardrails
  kBisection,  // the smallest k whose top-k ranked layers meet the criterion, ~log2(budget) evaluations
  kCost,       // the cheapest assignment (expected time) that meets it: each layer's demotion from the
               // full lift measured, then bisection, refinement and island moves (~G + 2 log2 G + 5)
};
const EnumNames<SearchMode>& search_mode_names();  // "greedy", "bisection", "cost"
inline const char* to_string(SearchMode mode) { return search_mode_names().name(mode); }

// What the search starts from and what it may do.
struct SearchOptions {
  std::string base_preset = "XINT8";       // the INT8 starting point
  std::optional<QuantConfig> base_config;  // a config instead of a preset (its integer layers are the candidates)
  // The precision a promoted layer is lifted to: "BF16" (SPEC's default) or "FP16" on devices
  // that run it (ve2, cpu): FP16 keeps 3 more mantissa bits where the range allows; or a block
  // format the device runs (MX9, BFP16, ...). A ladder of them, comma-separated ("MX9,BF16"):
  // rung 1 is the search with the first format; only when it cannot meet the criterion, rung 2
  // raises some of the layers rung 1 left at its format to the second, and so on (explore.cpp,
  // "The ladder").
  std::string lift = "BF16";
  // Share of the candidate layers a rung may lift (whatever `lift` is). A ladder's rungs share
  // it: rung 1 lifts at most this share off the base; a later rung raises at most this share of
  // the base's candidates to its format. Its candidates are off the base already, so the count
  // off the base does not grow, except where a rung's full lift missed: then every candidate is
  // at that rung's format for the next rung to raise from.
  double bf16_budget = 0.3;
  // The answer's expected compute time relative to full BF16 on the device at most this
  // (--time-budget 0.6); 0: no time budget. The cost search honours it; the others report it.
  // For a ladder: its answer as a whole, every layer priced at its own rung's speed.
  double time_budget = 0;
  // 0: min(50, compute layers); cost search: G + 2 ceil(log2 G) + 5. A ladder's rungs share it
  // (their steps together).
  size_t max_iterations = 0;
  // The calibration method of the starting point. nullopt: a preset start tries every method
  // the device allows on the same statistics and keeps the best (as guide's quantize phase);
  // a config start keeps its own.
  std::optional<CalibMethod> calib_method;
  // After the search, spend what max_iterations leaves on filling the trade-off curve
  // (pareto.json) with prefixes of the search's final order, instead of stopping.
  bool pareto = false;
  Ranking ranking = Ranking::kLayerError;
  SearchMode search = SearchMode::kGreedy;
  // Adaptive ranking (layer-error or injected-noise, bisection or greedy): the candidates not yet
  // decided are scored again in the current mixed state, from one exposed pass, after each
  // bisection round that misses and each accepted greedy promotion (the FP32 reference is
  // cached), so a layer whose error only shows once its neighbours are lifted moves up.
  // nullopt: on for a bisection over layer-error or injected-noise (it wins or ties on every
  // model measured: det 320 PSNR > 30 0.757x full BF16 against 0.898x, det 640 0.789x against
  // 1.000x), off otherwise (SPEC's greedy stays as SPEC has it).
  std::optional<bool> adaptive;
  // After a bisection or greedy that meets the criterion, up to this many evaluations (within
  // max_iterations, one kept for the island fill) drop its fewest layers back to INT8 where the
  // criterion still holds (search::trim): the lowest-ranked layer whose drop misses is kept, the
  // largest block ranked above it that can go is dropped, and so on up the order. A ranking
  // that puts one needed layer low lifts every layer above it; trimming finds it (det 320x320,
  // PSNR > 30, 100 evaluations: fewest 218 -> 91 with layer-error, 132 -> 44 with
  // injected-noise). 0: no trimming. nullopt: kDefaultTrim for a bisection without pareto (the
  // curve gets what max_iterations leaves), 0 otherwise (SPEC's greedy stays as SPEC has it).
  std::optional<size_t> trim;
  // Continue from the work dir's ledger (after a crash or Ctrl-C): the statistics and ranking on
  // disk are reused, the ledger's steps are replayed without evaluation, and the search goes on
  // from the first step not recorded, ending as an uninterrupted run would. The run's settings
  // (run.json) must match; kBadInput otherwise, or when there is nothing to resume.
  bool resume = false;
};

// Whether `options` rank adaptively: `adaptive` when given, else its default (above).
bool adaptive_ranking(const SearchOptions& options);

// The default max_iterations of greedy and bisection: min(kMaxIterationsCap, G).
inline constexpr size_t kMaxIterationsCap = 50;

// The default trimming of a bisection: as many evaluations as the default max_iterations
// (min(kMaxIterationsCap, G)) leaves. Measured on det 320x320 XINT8, PSNR > 30, default
// max_iterations, the answer (after the island fill) by trim evaluations:
//   layer-error:    0: 235 layers at 0.746x full BF16; 20: 194 at 0.713x; 41 (all left): 189 at 0.713x
//   injected-noise: 0: 227 at 0.895x;                  20: 216 at 0.886x; 41 (all left): 199 at 0.738x
inline constexpr size_t kDefaultTrim = kMaxIterationsCap;

// The evaluations `options` allow trimming: `trim` when given, else its default (above).
size_t trim_tries(const SearchOptions& options);

struct ExploreParams {
  EvaluationSetup setup;        // work_dir is required
  DeploymentTarget deployment;  // device: its formats must include the base's; its speeds give the expected speed-up
  SearchOptions search;
  // The shape of final_config.json and pareto/'s configs (not a setting of the search: --resume
  // may change it). Quark's fails before any work when the starting point holds what it cannot say.
  ConfigShape config_shape = ConfigShape::kMixprec;
};

// What a step's trial did to the best assignment so far.
enum class Decision {
  kAccepted,    // greedy: the objective improved (by more than the metric's min_gain), kept
  kSkipped,     // greedy: no change beyond min_gain, not kept (retried once after the first sweep)
  kRolledBack,  // greedy: worse, not kept
  kMeets,       // bisection: the top k meet the criterion; trimming: so does the set without a block
  kMisses,      // bisection: they miss it; trimming: the set without the block misses it
  kMeasured,    // cost search: a layer demoted alone from the full lift, to price it; the trade-off
                // curve: a point filled in
};
// "accepted", "skipped", "rolled back", "meets", "misses", "measured"
const EnumNames<Decision>& decision_names();
inline const char* to_string(Decision decision) { return decision_names().name(decision); }

// One line of the ledger.
struct ExploreStep {
  size_t index = 0;
  std::string layer;              // the layer promoted in this step (bisection: "top <k>")
  Decision decision = Decision::kSkipped;
  size_t sweep = 1;               // greedy: 2 for the retry of the layers the first sweep skipped
  double objective = 0;           // see ExploreResult::objective_name
  double psnr_db = 0;             // worst output
  double pass_rate = 0;           // worst output
  bool meets_criterion = false;
  size_t lifted_layers = 0;       // in the best assignment so far, after the decision
  double seconds = 0;             // rewrite + evaluation
  double time_vs_bf16 = 1;        // the trial's expected compute time vs full BF16 on the device
  size_t transitions = 0;         // the trial's INT8 <-> float boundaries
  // AdaRound / AdaQuant in the config: the layers this trial learned, and those it took from the
  // work dir's learned weights (learned by an earlier trial with the same upstream and format).
  size_t learned_layers = 0;
  size_t reused_layers = 0;
  // A ladder's rung whose layers this step raised (1-based) and its format; 0 and empty for a
  // single lift, whose ledger lines carry neither.
  size_t rung = 0;
  std::string lift;
};

// A point of the trade-off curve: an evaluated assignment.
struct ParetoPoint {
  size_t step = 0;                // its ledger step (0: a baseline)
  std::string label;
  size_t lifted = 0;
  double time_vs_bf16 = 1;
  double objective = 0;
  double psnr_db = 0;
  double pass_rate = 0;
  bool meets = false;
  size_t transitions = 0;
  std::string config_path;        // relative to the work dir (pareto/point_<step>.json)
};

// One rung of a lift ladder (ExploreResult::rungs).
struct LiftRung {
  std::string lift;                // its format's preset name
  size_t candidates = 0;           // the layers it could raise: rung 1, the base's; then the previous rung's
  size_t lifted = 0;               // the final assignment's layers at this rung
  std::vector<OutputMetrics> full_metrics;  // every candidate raised to it (the rest as the rung started)
  bool full_lift_passes = false;
  double full_time_vs_bf16 = 1;    // the full lift's expected compute time vs full BF16
  bool ran = false;                // false: an earlier rung met the criterion
  std::string stop_reason;
  size_t first_step = 0, steps = 0;  // its ledger steps: first_step .. first_step + steps - 1
};

struct ExploreResult {
  std::string stop_reason;
  std::string objective_name;      // "worst-output PSNR (dB)", "worst-output top-1 agreement", ...
  TaskInference task;
  size_t compute_layers = 0;       // candidates: every layer the base preset puts in integer formats
  std::vector<std::string> ranking;  // candidates, most sensitive first
  std::vector<std::string> lifted_layers;  // the final assignment's lifted layers
  std::vector<std::string> lifted_formats; // each one's format (its rung's preset name), as lifted_layers
  std::vector<LiftRung> rungs;             // the ladder's rungs (one for a single lift)
  std::vector<OutputMetrics> int8_metrics, lifted_metrics, final_metrics;  // lifted: every candidate lifted
  Verdict final_verdict;
  std::vector<ExploreStep> steps;
  // Evaluation passes spent (baselines, ranking, steps). A resumed run counts them as the
  // uninterrupted run would (its replayed steps and the ranking it read back included);
  // evaluations_this_run is what this process spent.
  size_t evaluations = 0;
  size_t evaluations_this_run = 0;
  size_t reranks = 0;              // adaptive ranking: re-scorings of the remaining candidates
  size_t rerank_evaluations = 0;   // ... and the evaluation passes they took (in `evaluations`)
  size_t trimmed = 0;              // layers trimming dropped from the searches' fewest (SearchOptions::trim)
  size_t resumed_steps = 0;        // steps replayed from the ledger (resume)
  double calibration_seconds = 0;  // 0 when statistics were reused
  // Expected compute time on the device relative to full BF16 (MAC-weighted nominal speeds of
  // the device profile): final assignment and full INT8.
  double final_time_vs_bf16 = 1, int8_time_vs_bf16 = 1;
  size_t final_transitions = 0;
  CalibMethod calib_method = CalibMethod::kMinMax;  // of the starting point
  // The starting point as reports name it ("XINT8", "MX9", "the base config") and whether it
  // has Q/DQ activations (a block or float start has no calibration method).
  std::string base_name = "INT8";
  bool base_calibrated = true;
  std::vector<ParetoPoint> pareto;  // the non-dominated evaluated points, cheapest first (pareto.json)
  std::optional<RuntimeTrial> runtime_check;  // the final model on a provider other than CPU
  double seconds = 0;
  std::string final_model_path, final_config_path, ledger_path;
  std::vector<std::string> warnings;
};

// Called after each step is on disk (to print progress lines). Steps replayed by a resume are
// not reported again.
using StepCallback = std::function<void(const ExploreStep&)>;

// The guardrails' decisions, as pure functions (higher is better).
// A promotion is accepted when it improves the objective by more than `min_gain`, skipped when
// it changes it by no more than that and rolled back when it makes it worse. A coarse objective
// (top-1 agreement over a few samples moves in steps of 1/samples) ties often: a tie is broken
// by the worst-output PSNR (by more than PSNR's min_gain), so a step that brings the outputs
// closer without flipping a row still counts.
Decision promotion_decision(double best_objective, double trial_objective, double best_psnr_db = 0,
                            double trial_psnr_db = 0, double min_gain = 0);
// The points no other point beats on both expected time (lower) and objective (higher),
// cheapest first; among equal points the earliest step stays.
std::vector<ParetoPoint> pareto_front(std::vector<ParetoPoint> points);
// PSNR plateau: the last `window` accepted promotions gained less than `min_gain_db` together.
// `gains_db` holds the PSNR gain of every accepted promotion, in order.
bool psnr_plateau(const std::vector<double>& gains_db, size_t window = 3, double min_gain_db = 0.5);

// The rungs of `lift` ("MX9,BF16" -> {"MX9", "BF16"}; spaces around a name are dropped). Each
// must be a preset of a float or block format, named once; kBadInput naming the offending rung
// otherwise (explore also checks each against the device).
std::vector<std::string> lift_ladder(const std::string& lift);

ExploreResult explore(const ExploreParams& params, const StepCallback& on_step = {});

}  // namespace mixprec
