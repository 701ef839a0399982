// The searches, written against an Evaluator so they know nothing about workbenches, files or
// resuming (explore.cpp wires them up; tests drive them with a fake): SPEC's greedy and the
// bisection over a ranking, and the cost search for the cheapest assignment that meets the
// criterion.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "mixprec/explore.h"
#include "mixprec/metrics.h"

namespace mixprec::search {

// An evaluation in the search's terms. A score replayed from the ledger has numbers only.
struct Score {
  // No model: a search holds many scores, and a model each would be many models (2 GB each for
  // a large one). The model of the assignment kept is built again from its config.
  std::vector<OutputMetrics> metrics;  // empty when replayed
  bool pass = false;                   // meets the criterion
  Verdict verdict;                     // its criterion and reason (empty when replayed)
  double objective = 0;                // higher is better
  double psnr_db = 0;                  // worst output
  double pass_rate = 0;                // worst output
  double seconds = 0;                  // rewrite + evaluation (the ledger's, when replayed)
  double time_vs_bf16 = 1;             // expected compute time of the assignment (cost model)
  size_t transitions = 0;              // its INT8 <-> float boundaries
  size_t learned_layers = 0;           // AdaRound / AdaQuant layers learned for it
  size_t reused_layers = 0;            // ... and taken from the learned-weights store
  bool replayed = false;
};

// The step a search reports for an evaluated `score`: its numbers, with `label`, `decision`
// and the layer count of the best assignment so far.
inline ExploreStep scored_step(size_t index, std::string label, Decision decision, const Score& score,
                               size_t lifted_layers) {
  return {.index = index,
          .layer = std::move(label),
          .decision = decision,
          .objective = score.objective,
          .psnr_db = score.psnr_db,
          .pass_rate = score.pass_rate,
          .meets_criterion = score.pass,
          .lifted_layers = lifted_layers};
}

// Expected times this close (a share of full BF16's) cost the same to the answer: the cost model
// is nominal, and a difference of 1e-5 is noise (det 320x320: the top 217 layers at 0.770550x
// and 30.0 dB, the top 209 at 0.770557x and 36.6 dB).
constexpr double kSameTime = 1e-3;

// Between two assignments that meet the criterion: whether `a` is the better answer than `b`,
// i.e. cheaper by more than kSameTime, or as cheap and more accurate (objective beyond min_gain).
inline bool better_answer(const Score& a, const Score& b, double min_gain) {
  if (a.time_vs_bf16 < b.time_vs_bf16 - kSameTime) return true;
  return a.time_vs_bf16 <= b.time_vs_bf16 + kSameTime && a.objective > b.objective + min_gain;
}

// What an assignment is expected to cost on the device, without evaluating it.
struct Cost {
  double time_vs_bf16 = 1;  // expected compute time relative to full BF16 (search/cost_model.h)
  size_t transitions = 0;
};

// What a search asks: the score of the starting point with `lifted` layers lifted. `label`
// names the trial in the ledger (the layer, or "top <k>"). Deterministic: the same set gives
// the same score.
class Evaluator {
 public:
  virtual ~Evaluator() = default;
  virtual Score evaluate(const std::set<std::string>& lifted, const std::string& label) = 0;
  // The cost model's figure for `lifted` (no evaluation).
  virtual Cost cost(const std::set<std::string>& lifted) const = 0;
  // The islands of an assignment: runs of adjacent candidates on one side (lifted or not),
  // each given by its candidate members.
  virtual std::vector<std::set<std::string>> islands(const std::set<std::string>& lifted) const = 0;
  // The candidates in linear chains (each feeds the next directly or through layout-only ops),
  // in data-flow order: where demoting neighbours together saves the boundaries between them.
  virtual std::vector<std::vector<std::string>> chains() const = 0;
  // `remaining` (candidates not in `lifted`) most worth lifting first, scored again in the
  // mixed state `lifted` leaves (adaptive ranking: what a lifted layer no longer feeds forward
  // changes what the others add). Deterministic. The default keeps their order: an evaluator
  // that cannot score a mixed state.
  virtual std::vector<std::string> rerank(const std::set<std::string>& lifted, const std::vector<std::string>& remaining) {
    (void)lifted;
    return remaining;
  }
};

// What a search tells: each step once decided (the step carries its index and the best
// assignment's size, `lifted` is the step's trial), and each new best assignment as it is found.
class SearchObserver {
 public:
  virtual ~SearchObserver() = default;
  virtual void on_step(const ExploreStep& step, const Score& score, const std::set<std::string>& lifted) = 0;
  virtual void on_best(const std::set<std::string>& lifted, const Score& score) = 0;
};

struct SearchLimits {
  size_t budget = 1;          // most layers lifted (>= 1)
  size_t max_iterations = 1;  // most steps
  double min_gain = 0;        // the objective's min_gain (MetricTraits)
  std::string lift = "BF16";  // for stop reasons
  double time_budget = 0;     // cost search: the answer's expected time vs full BF16 at most this (0: none)
  // Bisection and greedy: re-rank the candidates not yet decided in the current mixed state
  // (Evaluator::rerank) after each bisection round that misses and each accepted promotion.
  bool adaptive = false;
};

struct SearchOutcome {
  std::string stop_reason;
  std::set<std::string> lifted;  // the best assignment found
  Score best;
  // The candidates from most to least worth lifting as the search ended (the ranking, or the
  // cost search's order): what filling the trade-off curve lifts, prefix by prefix.
  std::vector<std::string> order;
  // Cost search: each candidate's measured objective loss when demoted alone from the full lift.
  std::map<std::string, double> scores;
};

// Re-ranks order[from..] in the state `lifted` leaves (Evaluator::rerank), in place; kInternal
// when the evaluator returns other candidates than it was given.
void rerank_after(Evaluator& evaluator, const std::set<std::string>& lifted, std::vector<std::string>& order,
                  size_t from);

// SPEC's greedy search from `start` (full INT8): layers in ranking order, one step each;
// accepted / skipped / rolled back by promotion_decision; after the sweep, the skipped layers
// whose state has changed since (a later promotion was accepted) are tried once more, in
// ranking order. Stops when the criterion is met, on the PSNR plateau after an accepted step,
// at the budget or at max_iterations. Adaptive (limits.adaptive): after each accepted
// promotion the layers the first sweep has not reached are re-ranked in the new state.
SearchOutcome greedy(const std::vector<std::string>& ranking, const Score& start, const SearchLimits& limits,
                     Evaluator& evaluator, SearchObserver& observer);

// Bisection over the ranked list (AIMET AMP's idea): the smallest k such that lifting the top k
// meets the criterion, in about log2(budget) evaluations. Tries the budget first: when even
// that misses, the target is out of reach within the budget. `all_lifted` is the score of
// every candidate lifted (a baseline already measured), reused when the budget allows them all.
// Adaptive (limits.adaptive): when the top k miss, every answer from then on holds them, so the
// candidates after them are re-ranked in the state they leave and the bisection goes on over
// the new order; the answer is still the smallest passing set measured (the top-k sets of an
// earlier order included), so a re-rank can only shrink it. outcome.order is the last order.
SearchOutcome bisection(const std::vector<std::string>& ranking, const Score& start, const Score& all_lifted,
                        const SearchLimits& limits, Evaluator& evaluator, SearchObserver& observer);

// `lifted` with INT8 islands (runs of candidates left INT8, Evaluator::islands) lifted whole,
// the one saving the most expected time first, as long as one saves more than kSameTime and
// the result stays within `budget` layers: the boundaries around a small INT8 island inside a
// lifted region can cost more than the island's BF16 compute. The cost model alone decides (no
// evaluation); the caller evaluates the result. Deterministic.
std::set<std::string> fill_islands(const std::set<std::string>& lifted, size_t budget, const Evaluator& evaluator);

// Whether an assignment was measured before and missed the criterion (no evaluation needed).
using KnownMiss = std::function<bool(const std::set<std::string>&)>;

// A bisection's or greedy's passing answer (`found`: its lifted set, score and final order)
// trimmed (trim.cpp): the lowest-ranked lifted layer whose drop misses the criterion is kept as
// needed, the layers ranked just above it dropped back to INT8 in the largest block that still
// meets it (block sizes 1, 2, 4, ... until one misses, then bisected), and so on up the order.
// At most `tries` evaluations, labelled "trim: drop the <d> lowest-ranked of <n> (<k> left)"
// and reported as meets / misses; a drop `known_miss` says missed before costs none. The result
// is the smallest passing set evaluated, with its score, and found's stop reason with what
// trimming did; found itself when it misses or `tries` is 0. Deterministic.
SearchOutcome trim(const SearchOutcome& found, size_t tries, const KnownMiss& known_miss, Evaluator& evaluator,
                   SearchObserver& observer);

// The cheapest assignment that meets the criterion (expected time, cost_model.h), from the
// top down: `all_lifted` (every candidate lifted) must meet it.
//  1. measure: each candidate demoted alone from the full lift (one evaluation each): its
//     objective loss;
//  2. moves: each candidate alone and each run of 2..4 neighbours of a chain (demoted together
//     they add one boundary instead of one per layer), priced by the cost model (transitions
//     included; a run's loss is the sum of its members'), ordered by loss per unit of time
//     saved; moves that save nothing are never applied;
//  3. bisect the number of moves applied from the front of that order (~log2 G);
//  4. refine past the boundary: the next moves one at a time, kept when the criterion still
//     holds (at most ~log2 G tries, so a non-monotone order does not stop it early);
//  5. islands: every lifted island of one or two layers surrounded by INT8 demoted and every
//     INT8 island of one or two layers inside a lifted region lifted, where that saves time
//     (fewer boundaries): applied cheapest-saving-first as a batch, its prefix bisected.
// Every trial that meets the criterion within the budgets competes for the answer by cost
// (then by objective); `candidates` fixes the order of the measurements (deterministic).
// About G + 2 log2 G + 5 evaluations for G candidates.
SearchOutcome cost_search(const std::vector<std::string>& candidates, const Score& start, const Score& all_lifted,
                          const SearchLimits& limits, Evaluator& evaluator, SearchObserver& observer);

}  // namespace mixprec::search
