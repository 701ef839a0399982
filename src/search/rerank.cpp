// Adaptive ranking's one step, shared by bisection and greedy (search.h).
#include <algorithm>

#include "mixprec/error.h"

#include "search/search.h"

namespace mixprec::search {

void rerank_after(Evaluator& evaluator, const std::set<std::string>& lifted, std::vector<std::string>& order,
                  size_t from) {
  if (from >= order.size()) return;
  const std::vector<std::string> rest(order.begin() + static_cast<long>(from), order.end());
  std::vector<std::string> reranked = evaluator.rerank(lifted, rest);
  std::vector<std::string> given = rest, returned = reranked;
  std::ranges::sort(given);
  std::ranges::sort(returned);
  if (given != returned) throw Error(ErrorKind::kInternal, "", "a re-ranking returned other candidates than it was given");
  std::ranges::copy(reranked, order.begin() + static_cast<long>(from));
}

}  // namespace mixprec::search
