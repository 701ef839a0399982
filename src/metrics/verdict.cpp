// judge(): the task-aware PASS/FAIL of SPEC "Accuracy criteria" (criteria documented in metrics.h).
#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdio>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/text.h"
#include "metrics/metric_text.h"
#include "mixprec/metrics.h"

namespace mixprec {
namespace {

struct Rule {
  AccuracyTarget::Metric metric;
  AccuracyTarget::Op op;
  double value;
};

constexpr Rule kRegressionRules[] = {
    {AccuracyTarget::kPsnr, AccuracyTarget::kGreaterEqual, kDefaultPsnrDb},
    {AccuracyTarget::kPassRate, AccuracyTarget::kGreaterEqual, kDefaultPassRate},
};
constexpr Rule kClassificationRules[] = {{AccuracyTarget::kTop1, AccuracyTarget::kGreaterEqual, kClassificationTop1}};
constexpr Rule kSequenceRules[] = {{AccuracyTarget::kTop1, AccuracyTarget::kGreaterEqual, kSequenceTop1}};

struct TaskCriteria {
  TaskType task;
  const char* meaning;  // ends the criterion text
  std::span<const Rule> rules;
};

constexpr TaskCriteria kTaskCriteria[] = {
    {TaskType::kClassification, "classification: top-1 agrees with FP32 on every row", kClassificationRules},
    {TaskType::kDetection, "detection: per output until boxes are matched", kRegressionRules},
    {TaskType::kRegression, "regression", kRegressionRules},
    {TaskType::kSequence, "sequence: top-1 per time step", kSequenceRules},
    {TaskType::kUnknown, "unknown task: regression criteria", kRegressionRules},
};

const TaskCriteria& task_criteria(TaskType task) {
  const auto row = std::find_if(std::begin(kTaskCriteria), std::end(kTaskCriteria),
                                [&](const TaskCriteria& criteria) { return criteria.task == task; });
  assert(row != std::end(kTaskCriteria) && "every TaskType needs a row");
  return *row;
}


std::string output_label(const OutputMetrics& output) { return "output '" + output.name + "'"; }

// Three significant digits: "0.206", "1.5e-05".
std::string margin_text(double margin) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", margin);
  return text;
}

// "; the reference led them by 0.21 and 0.35, its median row by 0.57": how close to a tie the
// differing rows were in the reference (OutputMetrics::top1_flip_margins); "" without margins.
std::string flip_margins_text(const OutputMetrics& output) {
  const std::vector<double>& flips = output.top1_flip_margins;
  if (flips.empty() || !output.median_top1_margin) return "";
  std::string led;
  if (flips.size() <= 3) {
    led = text::join_each(flips, margin_text, flips.size() == 2 ? " and " : ", ");
  } else {
    led = margin_text(flips.front()) + " to " + margin_text(flips.back()) + " (median " +
          margin_text(flips[flips.size() / 2]) + ")";
  }
  return "; the reference led " + std::string(flips.size() == 1 ? "it" : "them") + " by " + led + ", its median row by " +
         margin_text(*output.median_top1_margin);
}

// "output 'y': PSNR 27.41 dB < 30 dB", with the relation that actually holds.
std::string describe(const OutputMetrics& output, const AccuracyTarget& target, double value) {
  const MetricTraits& traits = metric_traits(target.metric);
  const char* relation = meets(target, value) ? to_string(target.op) : metrics::negated(target.op);
  std::string text = output_label(output) + ": " + traits.label + " " + metrics::measured_text(target.metric, value) +
                     " " + relation + " " + metrics::threshold_text(target.metric, target.value);
  if (target.metric == AccuracyTarget::kTop1) {
    const int64_t differing = output.topk_rows - std::llround(value * static_cast<double>(output.topk_rows));
    text += " (" + std::to_string(differing) + " of " + std::to_string(output.topk_rows) + " rows differ" +
            flip_margins_text(output) + ")";
  }
  return text;
}

// Why `output` fails whatever the criterion, or "" when it does not.
std::string unmeasurable(const OutputMetrics& output) {
  if (output.elements == 0) return output_label(output) + ": no elements were compared";
  if (output.nonfinite_count > 0) {
    return output_label(output) + ": " + std::to_string(output.nonfinite_count) + " of " +
           std::to_string(output.elements) + " values are NaN or Inf";
  }
  return "";
}

}  // namespace

std::vector<AccuracyTarget> default_targets(TaskType task) {
  std::vector<AccuracyTarget> targets;
  for (const Rule& rule : task_criteria(task).rules) targets.push_back(make_target(rule.metric, rule.op, rule.value));
  return targets;
}

Verdict judge(TaskType task, const std::vector<OutputMetrics>& outputs, const std::optional<AccuracyTarget>& target) {
  const std::vector<AccuracyTarget> targets = target ? std::vector<AccuracyTarget>{*target} : default_targets(task);
  std::vector<std::string> texts;
  for (const AccuracyTarget& t : targets) texts.push_back(t.text);

  Verdict verdict;
  verdict.criterion = text::join(texts, " and ") + " on every output (" +
                      (target ? std::string("target") : std::string(task_criteria(task).meaning)) + ")";
  if (outputs.empty()) {
    verdict.reason = "no outputs were compared";
    return verdict;
  }

  std::vector<std::string> failures;
  for (const OutputMetrics& output : outputs) {
    if (std::string why = unmeasurable(output); !why.empty()) {
      failures.push_back(std::move(why));
      continue;
    }
    for (const AccuracyTarget& t : targets) {
      const std::optional<double> value = metric_traits(t.metric).value(output);
      if (!value) {
        failures.push_back(output_label(output) + ": no class scores ([N, C] or [N, T, C] floats) or integer labels " +
                           "to measure " + metric_traits(t.metric).label + " on");
      } else if (!meets(t, *value)) {
        failures.push_back(describe(output, t, *value));
      }
    }
  }
  verdict.pass = failures.empty();
  if (!verdict.pass) {
    verdict.reason = text::join(failures, "; ");
    return verdict;
  }

  // Every output passed: show how close the worst one came to each requirement.
  std::vector<std::string> closest;
  for (const AccuracyTarget& t : targets) {
    const auto value = [&](const OutputMetrics& output) { return *metric_traits(t.metric).value(output); };
    const auto worse = [&](const OutputMetrics& a, const OutputMetrics& b) {
      return t.op == AccuracyTarget::kLess ? value(a) > value(b) : value(a) < value(b);
    };
    const OutputMetrics& worst = *std::min_element(outputs.begin(), outputs.end(), worse);
    closest.push_back(describe(worst, t, value(worst)));
  }
  verdict.reason = text::join(closest, "; ");
  return verdict;
}

}  // namespace mixprec
