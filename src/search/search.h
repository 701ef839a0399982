// The two searches over a ranking, written against an Evaluator so they know nothing about
// workbenches, files or resuming (explore.cpp wires them up; tests drive them with a fake).
#pragma once

#include <cstddef>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "mixprec/explore.h"
#include "mixprec/metrics.h"

namespace mixprec::search {

// An evaluation in the search's terms. A score replayed from the ledger has numbers only.
struct Score {
  std::shared_ptr<const onnx::ModelProto> model;  // null when replayed
  std::vector<OutputMetrics> metrics;             // empty when replayed
  bool pass = false;                              // meets the criterion
  double objective = 0;                           // higher is better
  double psnr_db = 0;                             // worst output
  double pass_rate = 0;                           // worst output
  double seconds = 0;                             // rewrite + evaluation (the ledger's, when replayed)
  bool replayed = false;
};

// What a search asks: the score of the starting point with `lifted` layers lifted. `label`
// names the trial in the ledger (the layer, or "top <k>"). Deterministic: the same set gives
// the same score.
class Evaluator {
 public:
  virtual ~Evaluator() = default;
  virtual Score evaluate(const std::set<std::string>& lifted, const std::string& label) = 0;
};

// What a search tells: each step once decided (the step carries its index and the best
// assignment's size), and each new best assignment as it is found.
class SearchObserver {
 public:
  virtual ~SearchObserver() = default;
  virtual void on_step(const ExploreStep& step, const Score& score) = 0;
  virtual void on_best(const std::set<std::string>& lifted, const Score& score) = 0;
};

struct SearchLimits {
  size_t budget = 1;          // most layers lifted (>= 1)
  size_t max_iterations = 1;  // most steps
  double min_gain = 0;        // the objective's min_gain (MetricTraits)
  std::string lift = "BF16";  // for stop reasons
};

struct SearchOutcome {
  std::string stop_reason;
  std::set<std::string> lifted;  // the best assignment found
  Score best;
};

// SPEC's greedy search from `start` (full INT8): layers in ranking order, one step each;
// accepted / skipped / rolled back by promotion_decision; after the sweep, the skipped layers
// whose state has changed since (a later promotion was accepted) are tried once more, in
// ranking order. Stops when the criterion is met, on the PSNR plateau after an accepted step,
// at the budget or at max_iterations.
SearchOutcome greedy(const std::vector<std::string>& ranking, const Score& start, const SearchLimits& limits,
                     Evaluator& evaluator, SearchObserver& observer);

// Bisection over the ranked list (AIMET AMP's idea): the smallest k such that lifting the top k
// meets the criterion, in about log2(budget) evaluations. Tries the budget first: when even
// that misses, the target is out of reach within the budget. `all_lifted` is the score of
// every candidate lifted (a baseline already measured), reused when the budget allows them all.
SearchOutcome bisection(const std::vector<std::string>& ranking, const Score& start, const Score& all_lifted,
                        const SearchLimits& limits, Evaluator& evaluator, SearchObserver& observer);

}  // namespace mixprec::search
