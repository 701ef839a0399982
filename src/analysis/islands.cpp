// Islands: connected regions of compute nodes of one precision (definition in
// include/mixprec/analysis.h).
#include <cstdint>
#include <numeric>
#include <utility>

#include "analysis/model_graph.h"

namespace mixprec::analysis {
namespace {

class DisjointSets {
 public:
  explicit DisjointSets(size_t count) : parent_(count) { std::iota(parent_.begin(), parent_.end(), size_t{0}); }

  size_t find(size_t x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  }
  // The smaller root wins, so a set's root is its first member in id order.
  void unite(size_t a, size_t b) {
    a = find(a);
    b = find(b);
    if (a > b) std::swap(a, b);
    parent_[b] = a;
  }

 private:
  std::vector<size_t> parent_;
};

int64_t& island_total(IslandSummary& summary, Precision precision) {
  switch (precision) {
    case Precision::kQuantized: return summary.quantized_islands;
    case Precision::kBFloat16: return summary.bf16_islands;
    case Precision::kFloat16: return summary.fp16_islands;
    case Precision::kFloat: break;
  }
  return summary.float_islands;
}

}  // namespace

IslandSummary find_islands(const ModelGraph& graph, const std::vector<std::optional<Precision>>& precisions) {
  DisjointSets sets(graph.size());
  // Walk upstream from every compute node through non-compute nodes; each compute node met is
  // linked to it. `visit_mark` stamps nodes with the current walk, so no per-walk clearing.
  std::vector<size_t> visit_mark(graph.size(), SIZE_MAX);
  std::vector<size_t> stack;
  for (size_t id = 0; id < graph.size(); ++id) {
    if (!precisions[id]) continue;
    stack.assign(graph.predecessors(id).begin(), graph.predecessors(id).end());
    while (!stack.empty()) {
      const size_t current = stack.back();
      stack.pop_back();
      if (visit_mark[current] == id) continue;
      visit_mark[current] = id;
      if (precisions[current]) {
        if (*precisions[current] == *precisions[id]) sets.unite(current, id);
        continue;
      }
      stack.insert(stack.end(), graph.predecessors(current).begin(), graph.predecessors(current).end());
    }
  }

  IslandSummary summary;
  std::vector<size_t> island_of_root(graph.size(), SIZE_MAX);
  for (size_t id = 0; id < graph.size(); ++id) {
    if (!precisions[id]) continue;
    const size_t root = sets.find(id);
    if (island_of_root[root] == SIZE_MAX) {
      island_of_root[root] = summary.islands.size();
      summary.islands.push_back(Island{.precision = *precisions[id], .node_count = 0, .first_node = graph.label(id)});
      ++island_total(summary, *precisions[id]);
    }
    Island& island = summary.islands[island_of_root[root]];
    ++island.node_count;
    island.last_node = graph.label(id);
  }
  return summary;
}

}  // namespace mixprec::analysis
