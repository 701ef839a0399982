// SPEC's greedy search: promote layers one at a time in ranking order under the guardrails,
// then give the layers the first sweep skipped one more try against the state they missed.
#include <utility>

#include "search/search.h"

namespace mixprec::search {
namespace {

// SPEC guardrail: stop when PSNR gains less than this over the last kPlateauWindow promotions.
constexpr double kPlateauDb = 0.5;
constexpr size_t kPlateauWindow = 3;

class Greedy {
 public:
  Greedy(const std::vector<std::string>& ranking, const Score& start, const SearchLimits& limits, Evaluator& evaluator,
         SearchObserver& observer)
      : ranking_(ranking), limits_(limits), evaluator_(evaluator), observer_(observer) {
    outcome_.best = start;
  }

  SearchOutcome run() {
    outcome_.order = ranking_;
    std::vector<std::string>& order = outcome_.order;  // re-ranked after each acceptance when adaptive
    // A skipped layer and how many promotions had been accepted when it was skipped: retrying it
    // is worth an evaluation only when the state has changed since.
    std::vector<std::pair<std::string, size_t>> skipped;
    for (size_t i = 0; i < order.size(); ++i) {
      const std::string layer = order[i];
      if (!try_layer(layer, 1)) return std::move(outcome_);
      if (last_ == Decision::kSkipped) skipped.emplace_back(layer, gains_.size());
      if (last_ == Decision::kAccepted && limits_.adaptive) rerank_after(evaluator_, outcome_.lifted, order, i + 1);
    }
    size_t retried = 0;
    for (const auto& [layer, accepted_then] : skipped) {
      if (gains_.size() == accepted_then) continue;  // nothing changed: the same trial, the same score
      ++retried;
      if (!try_layer(layer, 2)) return std::move(outcome_);
    }
    outcome_.stop_reason = retried == 0 ? "every ranked layer was tried"
                                        : "every ranked layer was tried, and " + std::to_string(retried) +
                                              " skipped ones again after later promotions";
    return std::move(outcome_);
  }

 private:
  // One step; false when a guardrail stops the search (stop_reason set).
  bool try_layer(const std::string& layer, size_t sweep) {
    if (steps_ >= limits_.max_iterations) {
      outcome_.stop_reason = "max iterations (" + std::to_string(limits_.max_iterations) + ")";
      return false;
    }
    if (outcome_.lifted.size() >= limits_.budget) {
      outcome_.stop_reason = limits_.lift + " budget: " + std::to_string(outcome_.lifted.size()) + " of " +
                             std::to_string(ranking_.size()) + " candidate layers";
      return false;
    }
    std::set<std::string> trial = outcome_.lifted;
    trial.insert(layer);
    const Score score = evaluator_.evaluate(trial, layer);
    const Score& best = outcome_.best;
    last_ = promotion_decision(best.objective, score.objective, best.psnr_db, score.psnr_db, limits_.min_gain);
    if (last_ == Decision::kAccepted) {
      gains_.push_back(score.psnr_db - best.psnr_db);
      outcome_.lifted = trial;
      outcome_.best = score;
      observer_.on_best(outcome_.lifted, score);
    }
    ExploreStep step = scored_step(++steps_, layer, last_, score, outcome_.lifted.size());
    step.sweep = sweep;
    observer_.on_step(step, score, trial);
    if (outcome_.best.pass) {
      outcome_.stop_reason = "criterion met";
      return false;
    }
    if (last_ == Decision::kAccepted && psnr_plateau(gains_, kPlateauWindow, kPlateauDb)) {
      double recent = 0;
      for (size_t k = gains_.size() - kPlateauWindow; k < gains_.size(); ++k) recent += gains_[k];
      outcome_.stop_reason = "PSNR plateau (+" + std::to_string(recent) + " dB over the last " +
                             std::to_string(kPlateauWindow) + " promotions)";
      return false;
    }
    return true;
  }

  const std::vector<std::string>& ranking_;
  const SearchLimits& limits_;
  Evaluator& evaluator_;
  SearchObserver& observer_;
  SearchOutcome outcome_;
  std::vector<double> gains_;  // PSNR gain of each accepted promotion
  size_t steps_ = 0;
  Decision last_ = Decision::kSkipped;
};

}  // namespace

SearchOutcome greedy(const std::vector<std::string>& ranking, const Score& start, const SearchLimits& limits,
                     Evaluator& evaluator, SearchObserver& observer) {
  return Greedy(ranking, start, limits, evaluator, observer).run();
}

}  // namespace mixprec::search
