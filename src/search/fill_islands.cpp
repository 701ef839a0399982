// Filling the INT8 islands of a lifted assignment where the cost model says that saves time.
//
//   Before:  ... BF16 BF16 | INT8 INT8 | BF16 BF16 ...   two boundaries, each converting a tensor
//   After:   ... BF16 BF16   BF16 BF16   BF16 BF16 ...   none, at the islands' own BF16 compute
//
// A bisection's or greedy's answer is the fewest layers that meet the criterion, taken from the
// top of a ranking, so they are scattered: between lifted layers sit INT8 layers whose
// boundaries can cost more than lifting them would (det 320x320 from CLE + AdaRound, ranked by
// injected noise: the fewest, 140 layers, expected at 1.205x full BF16). Filling only lifts
// layers, which seldom costs accuracy, but the filled assignment is evaluated before it counts.
#include "search/search.h"

namespace mixprec::search {

std::set<std::string> fill_islands(const std::set<std::string>& lifted, size_t budget, const Evaluator& evaluator) {
  std::set<std::string> filled = lifted;
  double time = evaluator.cost(filled).time_vs_bf16;
  for (;;) {
    const std::set<std::string>* best = nullptr;
    double best_time = time - kSameTime;  // a fill must save more than noise
    std::vector<std::set<std::string>> islands = evaluator.islands(filled);
    for (const auto& island : std::vector<std::set<std::string>>(islands)) {
      if (island.size() < 2 || filled.count(*island.begin())) continue;
      for (const std::string& layer : island) islands.push_back({layer});
    }
    for (const std::set<std::string>& island : islands) {
      if (island.empty() || filled.count(*island.begin()) || filled.size() + island.size() > budget) continue;
      std::set<std::string> trial = filled;
      trial.insert(island.begin(), island.end());
      const double trial_time = evaluator.cost(trial).time_vs_bf16;
      if (trial_time < best_time) {
        best_time = trial_time;
        best = &island;
      }
    }
    if (best == nullptr) return filled;
    filled.insert(best->begin(), best->end());
    time = best_time;
  }
}

}  // namespace mixprec::search
