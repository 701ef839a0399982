// Trimming a search's fewest layers: the lowest-ranked lifted layers dropped back to INT8, a
// block at a time, where the criterion still holds without them (search.h).
//
//   Before:  the top 218 ranked layers lifted (a bisection: the top 217 miss, the top 216 and
//            the 218th meet)
//   After:   91 of them, in 100 evaluations (det 320x320, PSNR > 30, layer-error)
//
// A bisection only learns where the ranking's prefix starts to meet the criterion. When the
// layer that makes it meet is ranked low (the 218th above), every layer ranked between the
// layers really needed and it is lifted with it, though with it lifted most of them are not
// needed. Trimming finds that layer and those: the lowest-ranked layer whose drop misses is
// needed and kept (pinned), and the layers ranked just above it are dropped in the largest
// block that still meets the criterion, found by doubling the block (1, 2, 4, ...) until it
// misses and bisecting between the last two sizes. Then the next lowest-ranked layer left is
// tried the same way. A block of d layers costs about 2 log2 d evaluations where dropping them
// one at a time costs d; a needed layer costs one.
#include <algorithm>
#include <map>
#include <optional>

#include "search/search.h"

namespace mixprec::search {
namespace {

class Trim {
 public:
  Trim(const SearchOutcome& found, size_t tries, const KnownMiss& known_miss, Evaluator& evaluator,
       SearchObserver& observer)
      : outcome_(found), tries_(tries), known_miss_(known_miss), evaluator_(evaluator), observer_(observer) {
    // The lifted layers by their place in the search's final order, most worth lifting first;
    // a layer the order does not hold (none, for bisection or greedy) goes last.
    std::map<std::string, size_t> place;
    for (size_t i = 0; i < found.order.size(); ++i) place.emplace(found.order[i], i);
    const auto at = [&](const std::string& layer) {
      const auto it = place.find(layer);
      return it == place.end() ? found.order.size() : it->second;
    };
    rest_.assign(found.lifted.begin(), found.lifted.end());
    std::stable_sort(rest_.begin(), rest_.end(), [&](const std::string& a, const std::string& b) { return at(a) < at(b); });
  }

  SearchOutcome run() {
    const size_t before = outcome_.lifted.size();
    while (!rest_.empty() && evaluations_ < tries_) {
      // The largest block of the lowest-ranked layers in rest_ whose drop meets the criterion
      // (0: even the lowest-ranked alone is needed).
      size_t meets = 0, misses = rest_.size() + 1;
      for (size_t d = 1; d <= rest_.size();) {
        const std::optional<bool> pass = drop(d);
        if (!pass) break;  // out of tries
        if (!*pass) {
          misses = d;
          break;
        }
        meets = d;
        if (d == rest_.size()) break;
        d = std::min(2 * d, rest_.size());
      }
      while (misses - meets > 1 && misses <= rest_.size()) {
        const size_t d = meets + (misses - meets) / 2;
        const std::optional<bool> pass = drop(d);
        if (!pass) break;
        (*pass ? meets : misses) = d;
      }
      rest_.resize(rest_.size() - meets);
      if (rest_.empty()) break;         // every layer not found needed was dropped
      if (misses - meets != 1) break;  // out of tries before the block was found
      // Dropping one more misses: the lowest-ranked layer left is needed.
      pinned_.insert(rest_.back());
      rest_.pop_back();
    }
    outcome_.stop_reason += "; trimming dropped " + std::to_string(before - outcome_.lifted.size()) + " of them in " +
                            std::to_string(evaluations_) + (evaluations_ == 1 ? " evaluation" : " evaluations") +
                            " (" + std::to_string(outcome_.lifted.size()) + " left)";
    return std::move(outcome_);
  }

 private:
  // The lowest-ranked d layers of rest_ dropped (the pinned stay): whether that meets the
  // criterion, a miss measured before or one evaluation; nullopt when out of tries.
  std::optional<bool> drop(size_t d) {
    std::set<std::string> trial(pinned_);
    trial.insert(rest_.begin(), rest_.end() - static_cast<long>(d));
    if (known_miss_(trial)) return false;
    if (evaluations_ == tries_) return std::nullopt;
    ++evaluations_;
    const std::string label = "trim: drop the " + std::to_string(d) + " lowest-ranked of " +
                              std::to_string(rest_.size()) + " (" + std::to_string(trial.size()) + " left)";
    const Score score = evaluator_.evaluate(trial, label);
    if (score.pass) {
      outcome_.lifted = trial;
      outcome_.best = score;
      observer_.on_best(trial, score);
    }
    observer_.on_step(scored_step(0, label, score.pass ? Decision::kMeets : Decision::kMisses, score,
                                  outcome_.lifted.size()),
                      score, trial);
    return score.pass;
  }

  SearchOutcome outcome_;
  const size_t tries_;
  const KnownMiss& known_miss_;
  Evaluator& evaluator_;
  SearchObserver& observer_;
  std::vector<std::string> rest_;   // lifted and not yet found needed, most worth lifting first
  std::set<std::string> pinned_;    // found needed: dropping it (and the block above) missed
  size_t evaluations_ = 0;
};

}  // namespace

SearchOutcome trim(const SearchOutcome& found, size_t tries, const KnownMiss& known_miss, Evaluator& evaluator,
                   SearchObserver& observer) {
  if (!found.best.pass || tries == 0) return found;
  return Trim(found, tries, known_miss, evaluator, observer).run();
}

}  // namespace mixprec::search
