// The cost search: the cheapest assignment that meets the criterion, from the full lift down
// (search.h). Demoting a layer back to INT8 from a passing assignment is measured where the
// answer lives (most detector layers must stay lifted, so "lift one layer from full INT8"
// says little there), and the cost model prices each move, transitions included.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "search/search.h"

namespace mixprec::search {
namespace {

constexpr size_t kLongestRun = 4;   // neighbours demoted together at most, as one move
constexpr size_t kSmallIsland = 2;  // layers in an island worth a batch move

// A set of candidates demoted together (a single layer, or a run of a chain).
struct Move {
  std::vector<std::string> layers;
  std::string label;
  double loss = 0;    // objective lost when demoted from the full lift (sum over its layers)
  double saving = 0;  // expected time saved then (cost model)
};

size_t ceil_log2(size_t n) { return static_cast<size_t>(std::ceil(std::log2(static_cast<double>(std::max<size_t>(2, n))))); }

class CostSearch {
 public:
  CostSearch(const std::vector<std::string>& candidates, const Score& start, const Score& all_lifted,
             const SearchLimits& limits, Evaluator& evaluator, SearchObserver& observer)
      : candidates_(candidates),
        full_(candidates.begin(), candidates.end()),
        all_lifted_(all_lifted),
        limits_(limits),
        evaluator_(evaluator),
        observer_(observer) {
    outcome_.best = start;  // until a trial within the budgets meets the criterion
    offer(full_, all_lifted);
    current_ = full_;
  }

  SearchOutcome run() {
    if (measure() && bisect() && refine() && islands()) {
      outcome_.stop_reason = found_ ? "cost search: the cheapest assignment found that meets the criterion"
                                    : "cost search: no assignment within the budgets meets the criterion";
    }
    return finish();
  }

 private:
  // --- bookkeeping ---------------------------------------------------------------------------
  bool within_budgets(const std::set<std::string>& lifted, const Score& score) const {
    return lifted.size() <= limits_.budget && (limits_.time_budget <= 0 || score.time_vs_bf16 <= limits_.time_budget);
  }

  // A trial competes for the answer: meeting the criterion within the budgets first, then the
  // lower expected time, then the higher objective.
  void offer(const std::set<std::string>& lifted, const Score& score) {
    if (!within_budgets(lifted, score)) return;
    const Score& best = outcome_.best;
    bool better;
    if (score.pass != found_) {
      better = score.pass;
    } else if (score.pass) {
      better = better_answer(score, best, limits_.min_gain);
    } else {
      better = promotion_decision(best.objective, score.objective, best.psnr_db, score.psnr_db, limits_.min_gain) ==
               Decision::kAccepted;
    }
    if (!better) return;
    found_ = found_ || score.pass;
    outcome_.best = score;
    outcome_.lifted = lifted;
    observer_.on_best(lifted, score);
  }

  // One evaluation recorded as a step; nullopt when the iteration limit stops the search.
  std::optional<Score> trial(const std::set<std::string>& lifted, const std::string& label, Decision if_pass,
                             Decision if_miss) {
    if (steps_ >= limits_.max_iterations) {
      outcome_.stop_reason = "max iterations (" + std::to_string(limits_.max_iterations) + ")";
      return std::nullopt;
    }
    const Score score = evaluator_.evaluate(lifted, label);
    offer(lifted, score);
    observer_.on_step(scored_step(++steps_, label, score.pass ? if_pass : if_miss, score, outcome_.lifted.size()), score,
                      lifted);
    return score;
  }

  SearchOutcome finish() {
    // Most worth lifting first: the layers by measured loss, largest first.
    outcome_.order = candidates_;
    std::stable_sort(outcome_.order.begin(), outcome_.order.end(), [&](const std::string& a, const std::string& b) {
      const auto la = loss_.find(a), lb = loss_.find(b);
      const double va = la == loss_.end() ? 0 : la->second, vb = lb == loss_.end() ? 0 : lb->second;
      return va > vb;
    });
    outcome_.scores = loss_;
    return std::move(outcome_);
  }

  std::set<std::string> without(std::set<std::string> lifted, const std::vector<std::string>& layers) const {
    for (const auto& layer : layers) lifted.erase(layer);
    return lifted;
  }

  // --- 1. measure, 2. moves ------------------------------------------------------------------
  bool measure() {
    for (const std::string& layer : candidates_) {
      const std::optional<Score> score =
          trial(without(full_, {layer}), "demote " + layer, Decision::kMeasured, Decision::kMeasured);
      if (!score) return false;
      loss_[layer] = all_lifted_.objective - score->objective;
    }
    const double full_time = all_lifted_.time_vs_bf16;
    const auto add = [&](std::vector<std::string> layers) {
      Move move{.layers = std::move(layers)};
      for (const auto& layer : move.layers) move.loss += loss_.at(layer);
      move.saving = full_time - evaluator_.cost(without(full_, move.layers)).time_vs_bf16;
      move.label = move.layers.size() == 1 ? move.layers.front()
                                           : move.layers.front() + ".." + move.layers.back() + " (" +
                                                 std::to_string(move.layers.size()) + " layers)";
      if (move.saving > 0) moves_.push_back(std::move(move));
    };
    for (const std::string& layer : candidates_) add({layer});
    for (const auto& chain : evaluator_.chains()) {
      for (size_t length = 2; length <= kLongestRun && length <= chain.size(); ++length) {
        for (size_t first = 0; first + length <= chain.size(); ++first) {
          add({chain.begin() + static_cast<long>(first), chain.begin() + static_cast<long>(first + length)});
        }
      }
    }
    // Loss per unit of time saved, ascending: a move that loses nothing (within min_gain per
    // layer) comes first, the largest saving first.
    const auto key = [&](const Move& m) {
      return std::max(0.0, m.loss - limits_.min_gain * static_cast<double>(m.layers.size())) / m.saving;
    };
    std::stable_sort(moves_.begin(), moves_.end(), [&](const Move& a, const Move& b) {
      const double ka = key(a), kb = key(b);
      return ka != kb ? ka < kb : a.saving > b.saving;
    });
    return true;
  }

  std::set<std::string> applying(size_t k) const {
    std::set<std::string> lifted = full_;
    for (size_t i = 0; i < k; ++i) lifted = without(std::move(lifted), moves_[i].layers);
    return lifted;
  }

  // Moves from the front until the set changes: a run adds nothing once its layers are demoted.
  std::string prefix_label(size_t k) const { return "demote first " + std::to_string(k) + " moves"; }

  // --- 3. bisect -----------------------------------------------------------------------------
  bool bisect() {
    size_t lo = 0;  // applying the first lo moves meets (the full lift does)
    size_t hi = moves_.size() + 1;
    if (!moves_.empty()) {
      const std::optional<Score> all = trial(applying(moves_.size()), prefix_label(moves_.size()), Decision::kMeets,
                                             Decision::kMisses);
      if (!all) return false;
      (all->pass ? lo : hi) = moves_.size();
    }
    while (hi - lo > 1) {
      const size_t k = lo + (hi - lo) / 2;
      const std::optional<Score> score = trial(applying(k), prefix_label(k), Decision::kMeets, Decision::kMisses);
      if (!score) return false;
      (score->pass ? lo : hi) = k;
    }
    current_ = applying(lo);
    boundary_ = lo;
    return true;
  }

  // --- 4. refine -----------------------------------------------------------------------------
  bool refine() {
    // With the bisection's log2(moves) + 1 (moves <= 4 G) and two island tries, the search
    // stays within G + 2 log2 G + 3 steps.
    const size_t log2_g = ceil_log2(candidates_.size());
    const size_t tries = std::max<size_t>(2, log2_g > 3 ? log2_g - 3 : 0);
    size_t tried = 0;
    // The move that made the bisection miss (moves_[boundary_]) is skipped, and so is every
    // later move that contains one of its layers: the others may still fit.
    const std::set<std::string> culprit = boundary_ < moves_.size()
                                              ? std::set<std::string>(moves_[boundary_].layers.begin(),
                                                                      moves_[boundary_].layers.end())
                                              : std::set<std::string>{};
    for (size_t i = boundary_ + 1; i < moves_.size() && tried < tries; ++i) {
      const auto& layers = moves_[i].layers;
      if (std::any_of(layers.begin(), layers.end(), [&](const std::string& l) { return culprit.count(l) > 0; })) continue;
      std::set<std::string> lifted = without(current_, layers);
      if (lifted == current_) continue;  // its layers are demoted already
      ++tried;
      const std::optional<Score> score =
          trial(lifted, "also demote " + moves_[i].label, Decision::kAccepted, Decision::kRolledBack);
      if (!score) return false;
      if (score->pass) current_ = std::move(lifted);
    }
    return true;
  }

  // --- 5. islands ----------------------------------------------------------------------------
  bool islands() {
    struct Flip {
      std::set<std::string> layers;
      bool demote;
      double saving;
    };
    const double now = evaluator_.cost(current_).time_vs_bf16;
    std::vector<Flip> flips;
    for (const auto& island : evaluator_.islands(current_)) {
      if (island.empty() || island.size() > kSmallIsland) continue;
      const bool lifted = current_.count(*island.begin()) > 0;
      std::set<std::string> moved = current_;
      for (const auto& layer : island) {
        if (lifted) moved.erase(layer);
        else moved.insert(layer);
      }
      const double saving = now - evaluator_.cost(moved).time_vs_bf16;
      if (saving > 0) flips.push_back({island, lifted, saving});
    }
    std::stable_sort(flips.begin(), flips.end(), [](const Flip& a, const Flip& b) { return a.saving > b.saving; });
    const auto flipping = [&](size_t k) {
      std::set<std::string> lifted = current_;
      for (size_t i = 0; i < k; ++i) {
        for (const auto& layer : flips[i].layers) {
          if (flips[i].demote) lifted.erase(layer);
          else lifted.insert(layer);
        }
      }
      return lifted;
    };
    // Two tries at most: every flip, else the better half.
    for (const size_t k : {flips.size(), flips.size() / 2}) {
      if (k == 0) break;
      const std::optional<Score> score = trial(flipping(k), "flip " + std::to_string(k) + " small islands",
                                               Decision::kAccepted, Decision::kRolledBack);
      if (!score) return false;
      if (score->pass) break;
    }
    return true;
  }

  const std::vector<std::string>& candidates_;
  const std::set<std::string> full_;
  const Score& all_lifted_;
  const SearchLimits& limits_;
  Evaluator& evaluator_;
  SearchObserver& observer_;
  SearchOutcome outcome_;
  bool found_ = false;
  size_t steps_ = 0;
  std::map<std::string, double> loss_;
  std::vector<Move> moves_;  // in the order they are applied
  size_t boundary_ = 0;
  std::set<std::string> current_;
};

}  // namespace

SearchOutcome cost_search(const std::vector<std::string>& candidates, const Score& start, const Score& all_lifted,
                          const SearchLimits& limits, Evaluator& evaluator, SearchObserver& observer) {
  return CostSearch(candidates, start, all_lifted, limits, evaluator, observer).run();
}

}  // namespace mixprec::search
