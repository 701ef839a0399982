// Task type from the main graph's outputs (rules in include/mixprec/analysis.h).
#include <algorithm>
#include <array>
#include <deque>
#include <string_view>
#include <utility>

#include "analysis/model_graph.h"
#include "common/text.h"

namespace mixprec::analysis {
namespace {

constexpr int64_t kMinClasses = 2;

// A rule for a model with exactly one output.
struct HeadRule {
  TaskType task;
  size_t rank;
  std::array<std::string_view, 5> heads;  // default-domain op types; empty slots unused
  bool needs_classes;                     // last dim must be >= kMinClasses (or not a number)
  std::string_view meaning;
};

constexpr HeadRule kSingleOutputRules[] = {
    {TaskType::kClassification, 2, {"Softmax", "LogSoftmax", "Gemm", "MatMul", "Flatten"}, true,
     "class scores [N, C], C >= 2"},
    {TaskType::kClassification, 1, {"ArgMax"}, false, "a class index per sample [N]"},
    {TaskType::kSequence, 3, {"Softmax", "LogSoftmax", "Gemm", "MatMul"}, true,
     "class scores per time step [N, T, C], C >= 2"},
    {TaskType::kSequence, 2, {"ArgMax"}, false, "a class index per time step [N, T]"},
};

constexpr std::string_view kFloatTypes[] = {"float32", "float16", "bfloat16", "float64"};

// An output together with the node that really computes it.
struct OutputHead {
  const TensorInfo* output;
  std::optional<size_t> head;  // nullopt when the output is a graph input or initializer
  std::string head_op;         // qualified op type, or "a graph input/initializer"
};

OutputHead find_head(const ModelGraph& graph, const TensorInfo& output) {
  std::optional<size_t> head = graph.main_producer(output.name);
  while (head && graph.has_flag(*head, ir::kRepresentationOnly) && graph.node(*head).input_size() > 0) {
    const auto source = graph.producer(*head, graph.node(*head).input(0));
    if (!source) break;
    head = source;
  }
  return {&output, head, head ? ir::qualified_op_type(graph.node(*head)) : "a graph input/initializer"};
}

std::string describe(const OutputHead& out) {
  const std::string rank = out.output->shape ? std::to_string(out.output->shape->size()) : "?";
  return "'" + out.output->name + "' of rank " + rank + " " + dims_to_string(out.output->shape) + " produced by " +
         out.head_op;
}

bool holds(const HeadRule& rule, const OutputHead& out) {
  if (!out.output->shape || out.output->shape->size() != rule.rank || !out.head) return false;
  const std::string& op = out.head_op;
  if (std::find(rule.heads.begin(), rule.heads.end(), op) == rule.heads.end()) return false;
  const std::optional<int64_t>& classes = out.output->shape->back().value;
  return !rule.needs_classes || !classes || *classes >= kMinClasses;
}

struct DetectionOp {
  size_t id;
  int distance;  // the output's producer is at distance 1
  std::string output;
};

// The detection post-processing op nearest to any output, within kDetectionOpMaxDistance.
std::optional<DetectionOp> nearest_detection_op(const ModelGraph& graph, const std::vector<OutputHead>& outputs) {
  std::optional<DetectionOp> best;
  for (const OutputHead& out : outputs) {
    const auto producer = graph.main_producer(out.output->name);
    if (!producer) continue;
    std::vector<bool> seen(graph.size(), false);
    std::deque<std::pair<size_t, int>> queue{{*producer, 1}};
    seen[*producer] = true;
    while (!queue.empty()) {
      const auto [id, distance] = queue.front();
      queue.pop_front();
      if (best && distance >= best->distance) break;
      if (graph.has_flag(id, ir::kDetectionPostprocess)) {
        best = DetectionOp{id, distance, out.output->name};
        break;
      }
      if (distance == kDetectionOpMaxDistance) continue;
      for (size_t pred : graph.predecessors(id)) {
        if (!seen[pred]) {
          seen[pred] = true;
          queue.emplace_back(pred, distance + 1);
        }
      }
    }
  }
  return best;
}

std::string quoted_names(const std::vector<OutputHead>& outputs) {
  std::string names;
  for (const OutputHead& out : outputs) names += (names.empty() ? "'" : ", '") + out.output->name + "'";
  return names;
}

}  // namespace

TaskInference infer_task_type(const ModelGraph& graph, const std::vector<TensorInfo>& outputs) {
  if (outputs.empty()) return {TaskType::kUnknown, "the model has no outputs"};
  std::vector<OutputHead> heads;
  for (const TensorInfo& output : outputs) heads.push_back(find_head(graph, output));

  if (heads.size() >= 2) {
    if (const auto op = nearest_detection_op(graph, heads)) {
      return {TaskType::kDetection,
              std::to_string(heads.size()) + " outputs (" + quoted_names(heads) + ") and " +
                  graph.node(op->id).op_type() + " '" + graph.label(op->id) + "' " + std::to_string(op->distance) +
                  " node(s) upstream of output '" + op->output + "' (detection: several outputs with NMS/TopK/"
                  "ScatterND within " + std::to_string(kDetectionOpMaxDistance) + " nodes of an output)"};
    }
  } else {
    for (const HeadRule& rule : kSingleOutputRules) {
      if (holds(rule, heads.front())) {
        return {rule.task, "one output " + describe(heads.front()) + ": " + std::string(rule.meaning)};
      }
    }
  }

  for (const OutputHead& out : heads) {
    if (!out.output->shape) return {TaskType::kUnknown, "output '" + out.output->name + "' has no declared shape"};
    if (std::find(std::begin(kFloatTypes), std::end(kFloatTypes), out.output->dtype) == std::end(kFloatTypes)) {
      return {TaskType::kUnknown, "output " + describe(out) + " is " + out.output->dtype +
                                      ", not floating point, and no classification/sequence/detection rule holds"};
    }
  }
  const std::string facts = text::join_each(heads, describe, "; ");
  return {TaskType::kRegression,
          "every output is a floating-point tensor consumed directly, and no classification/sequence/detection "
          "rule holds: " + facts};
}

}  // namespace mixprec::analysis
