// Bisection over the ranked list: the fewest top-ranked layers that meet the criterion.
#include <algorithm>

#include "search/search.h"

namespace mixprec::search {

SearchOutcome bisection(const std::vector<std::string>& ranked, const Score& start, const Score& all_lifted,
                        const SearchLimits& limits, Evaluator& evaluator, SearchObserver& observer) {
  SearchOutcome outcome;
  outcome.best = start;
  outcome.order = ranked;
  std::vector<std::string>& ranking = outcome.order;  // re-ranked behind each miss when adaptive
  const auto fewest = [&](size_t k) {
    return "bisection: the top " + std::to_string(k) + " ranked layers are the fewest that meet the criterion";
  };
  size_t lo = 0;  // the top lo layers miss (full INT8 does)
  const size_t cap = std::min(limits.budget, ranking.size());
  size_t hi = cap;
  size_t k = hi;
  bool found = false;
  if (hi == ranking.size()) {
    // The budget allows every candidate: that is the full-lift baseline, already measured.
    found = true;
    outcome.best = all_lifted;
    outcome.lifted.insert(ranking.begin(), ranking.end());
    observer.on_best(outcome.lifted, outcome.best);
    k = lo + (hi - lo) / 2;
    if (hi - lo <= 1) {
      outcome.stop_reason = fewest(hi);
      return outcome;
    }
  }
  for (size_t steps = 0;;) {
    if (steps >= limits.max_iterations) {
      outcome.stop_reason = "max iterations (" + std::to_string(limits.max_iterations) + ")";
      return outcome;
    }
    const std::set<std::string> trial(ranking.begin(), ranking.begin() + static_cast<long>(k));
    const Score score = evaluator.evaluate(trial, "top " + std::to_string(k));
    // The best so far: the smallest passing set, else the highest objective.
    const bool better = score.pass ? (!found || k < outcome.lifted.size())
                                   : (!found && promotion_decision(outcome.best.objective, score.objective,
                                                                   outcome.best.psnr_db, score.psnr_db,
                                                                   limits.min_gain) == Decision::kAccepted);
    if (better) {
      outcome.best = score;
      outcome.lifted = trial;
      found = found || score.pass;
      observer.on_best(outcome.lifted, score);
    }
    (score.pass ? hi : lo) = k;
    observer.on_step(scored_step(++steps, "top " + std::to_string(k), score.pass ? Decision::kMeets : Decision::kMisses,
                                 score, outcome.lifted.size()),
                     score, trial);
    if (!found && k == cap) {
      outcome.stop_reason = limits.lift + " budget: the top " + std::to_string(k) + " of " +
                            std::to_string(ranking.size()) + " candidate layers still miss the criterion";
      return outcome;
    }
    if (hi - lo <= 1) {
      outcome.stop_reason = fewest(hi);
      return outcome;
    }
    if (limits.adaptive && !score.pass) {
      // Every answer from here holds the top k: the rest are ranked again in the state they leave.
      rerank_after(evaluator, trial, ranking, k);
    }
    k = lo + (hi - lo) / 2;
  }
}

}  // namespace mixprec::search
