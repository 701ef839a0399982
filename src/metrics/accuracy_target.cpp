// Accuracy targets: the metric and operator tables, parsing, and how values are written.
#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>

#include "common/text.h"
#include "metrics/decimal_text.h"
#include "metrics/metric_text.h"
#include "mixprec/error.h"
#include "mixprec/metrics.h"

namespace mixprec {
namespace {

using Metric = AccuracyTarget::Metric;
using Op = AccuracyTarget::Op;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr std::string_view kPercent = "%";
constexpr int kPercentShift = 2;  // decimal digits between a fraction and its percent

// The smallest change a search counts as a gain. dB: 0.001 dB is far below any decision a
// user makes and far above the rounding of the dB sums (a "gain" of 4.6e-13 dB was seen).
// Fractions move in steps of one sample or element (1/N), far above 1e-9; cosines closer than
// that are the same to float32.
constexpr double kDbGain = 1e-3;
constexpr double kFractionGain = 1e-9;

// In Metric order (checked below).
constexpr MetricTraits kMetrics[] = {
    {AccuracyTarget::kPsnr, "psnr", "PSNR", "dB", 2, -kInf, kInf,
     [](const OutputMetrics& m) -> std::optional<double> { return m.psnr_db; }, kDbGain},
    {AccuracyTarget::kSqnr, "sqnr", "SQNR", "dB", 2, -kInf, kInf,
     [](const OutputMetrics& m) -> std::optional<double> { return m.sqnr_db; }, kDbGain},
    {AccuracyTarget::kCosine, "cosine", "cosine", "", 6, -1, 1,
     [](const OutputMetrics& m) -> std::optional<double> { return m.cosine; }, kFractionGain},
    {AccuracyTarget::kTop1, "top1", "top-1 agreement", "%", 3, 0, 1,
     [](const OutputMetrics& m) { return m.top1_agreement; }, kFractionGain},
    {AccuracyTarget::kPassRate, "pass_rate", "pass rate", "%", 3, 0, 1,
     [](const OutputMetrics& m) -> std::optional<double> { return m.pass_rate; }, kFractionGain},
};
static_assert([] {
  for (size_t i = 0; i < std::size(kMetrics); ++i) {
    if (kMetrics[i].metric != static_cast<Metric>(i)) return false;
  }
  return true;
}());

struct OpTraits {
  Op op;
  const char* text;
  const char* negation;
  bool (*holds)(double value, double threshold);
};

// In Op order (checked below).
constexpr OpTraits kOps[] = {
    {AccuracyTarget::kGreater, ">", "<=", [](double value, double threshold) { return value > threshold; }},
    {AccuracyTarget::kGreaterEqual, ">=", "<", [](double value, double threshold) { return value >= threshold; }},
    {AccuracyTarget::kLess, "<", ">=", [](double value, double threshold) { return value < threshold; }},
};
static_assert([] {
  for (size_t i = 0; i < std::size(kOps); ++i) {
    if (kOps[i].op != static_cast<Op>(i)) return false;
  }
  return true;
}());

const OpTraits& op_traits(Op op) { return kOps[static_cast<size_t>(op)]; }

// Percent-valued metrics are written and shown as percent of their fraction.
int unit_shift(const MetricTraits& traits) { return traits.unit == kPercent ? kPercentShift : 0; }


std::string_view trim(std::string_view text) {
  const auto space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  while (!text.empty() && space(text.front())) text.remove_prefix(1);
  while (!text.empty() && space(text.back())) text.remove_suffix(1);
  return text;
}

// The longest prefix of `text` whose characters satisfy `belongs`, removed from `text`.
template <typename Predicate>
std::string_view take_while(std::string_view& text, Predicate belongs) {
  size_t length = 0;
  while (length < text.size() && belongs(static_cast<unsigned char>(text[length]))) ++length;
  const std::string_view taken = text.substr(0, length);
  text = trim(text.substr(length));
  return taken;
}

// The decimal `number` (text from_chars accepted) divided by 100, correctly rounded: "99.9"
// gives the double nearest 0.999, whereas 99.9 / 100 lands one ulp above it and a pass rate of
// exactly 999/1000 would then miss "pass_rate>=99.9%".
double percent_to_fraction(std::string_view number) {
  const size_t e = number.find_first_of("eE");
  int exponent = 0;
  if (e != std::string_view::npos) {
    std::string_view digits = number.substr(e + 1);
    if (digits.starts_with('+')) digits.remove_prefix(1);
    std::from_chars(digits.data(), digits.data() + digits.size(), exponent);
  }
  const std::string shifted = std::string(number.substr(0, e)) + "e" + std::to_string(exponent - kPercentShift);
  double value = 0;
  std::from_chars(shifted.data(), shifted.data() + shifted.size(), value);
  return value;
}

[[noreturn]] void throw_malformed(const std::string& expr, const std::string& detail) {
  const std::string metrics = text::join_each(kMetrics, [](const MetricTraits& traits) { return traits.name; });
  const std::string ops = text::join_each(kOps, [](const OpTraits& op) { return op.text; });
  throw_bad_input("", "accuracy target '" + expr + "': " + detail + "; expected METRIC OP VALUE with METRIC one of " +
                          metrics + " and OP one of " + ops + " (e.g. \"psnr>30\", \"pass_rate>=99.9%\")");
}

}  // namespace

const MetricTraits& metric_traits(Metric metric) { return kMetrics[static_cast<size_t>(metric)]; }
std::span<const MetricTraits> all_metric_traits() { return kMetrics; }
const char* to_string(Metric metric) { return metric_traits(metric).name; }
const char* to_string(Op op) { return op_traits(op).text; }

AccuracyTarget parse_target(const std::string& expr) {
  std::string_view rest = trim(expr);
  if (rest.empty()) throw_malformed(expr, "it is empty");

  const std::string_view name = take_while(rest, [](unsigned char c) { return std::isalnum(c) || c == '_'; });
  const auto metric = std::find_if(std::begin(kMetrics), std::end(kMetrics),
                                   [&](const MetricTraits& traits) { return text::equal_ignoring_case(traits.name, name); });
  if (metric == std::end(kMetrics)) {
    throw_malformed(expr, name.empty() ? "it does not start with a metric" : "unknown metric '" + std::string(name) + "'");
  }

  const std::string_view op_text = take_while(rest, [](unsigned char c) { return c == '<' || c == '>' || c == '='; });
  const auto op = std::find_if(std::begin(kOps), std::end(kOps), [&](const OpTraits& row) { return row.text == op_text; });
  if (op == std::end(kOps)) {
    throw_malformed(expr, op_text.empty() ? "no operator after '" + std::string(name) + "'"
                                          : "unknown operator '" + std::string(op_text) + "'");
  }

  if (rest.empty()) throw_malformed(expr, "no value after '" + std::string(op_text) + "'");
  double value = 0;
  const auto [end, error] = std::from_chars(rest.data(), rest.data() + rest.size(), value);
  if (error != std::errc() || !std::isfinite(value)) {
    throw_malformed(expr, "'" + std::string(rest) + "' is not a finite number");
  }
  const std::string_view number = rest.substr(0, static_cast<size_t>(end - rest.data()));
  rest = trim(rest.substr(number.size()));
  const bool has_unit = !rest.empty();
  if (has_unit && (*metric->unit == '\0' || !text::equal_ignoring_case(rest, metric->unit))) {
    const std::string allowed = *metric->unit == '\0' ? "no unit" : "only '" + std::string(metric->unit) + "'";
    throw_malformed(expr, "unexpected '" + std::string(rest) + "' after the value (" + metric->name + " takes " +
                              allowed + ")");
  }
  if (has_unit && rest == kPercent) value = percent_to_fraction(number);

  if (value < metric->min || value > metric->max) {
    using metrics::shortest_decimal;
    const bool percent = metric->unit == kPercent;
    std::string detail = (has_unit ? shortest_decimal(value, kPercentShift) + "%" : shortest_decimal(value)) +
                         " is outside the range of " + metric->name + ", [" + shortest_decimal(metric->min) + ", " +
                         shortest_decimal(metric->max) + "]";
    if (percent) {
      detail += " or [" + shortest_decimal(metric->min, kPercentShift) + "%, " +
                shortest_decimal(metric->max, kPercentShift) + "%]";
    }
    if (percent && !has_unit && value / 100 >= metric->min && value / 100 <= metric->max) {
      detail += "; for a percentage write " + shortest_decimal(value) + "%";
    }
    throw_malformed(expr, detail);
  }
  return {.metric = metric->metric, .op = op->op, .value = value, .text = std::string(trim(expr))};
}

AccuracyTarget make_target(Metric metric, Op op, double value) {
  const MetricTraits& traits = metric_traits(metric);
  const std::string unit = traits.unit == kPercent ? "%" : "";
  return {.metric = metric,
          .op = op,
          .value = value,
          .text = traits.name + std::string(op_traits(op).text) +
                  metrics::shortest_decimal(value, unit_shift(traits)) + unit};
}

bool meets(const AccuracyTarget& target, double value) { return op_traits(target.op).holds(value, target.value); }

AccuracyObjective::AccuracyObjective(const std::optional<AccuracyTarget>& target, TaskType task) {
  if (target) {
    metric = target->metric;
    lower_is_better = target->op == AccuracyTarget::kLess;
  } else if (task == TaskType::kClassification || task == TaskType::kSequence) {
    metric = AccuracyTarget::kTop1;
  }
}

std::string AccuracyObjective::name() const { return std::string("worst-output ") + metric_traits(metric).label; }

double AccuracyObjective::operator()(const std::vector<OutputMetrics>& metrics) const {
  const MetricTraits& traits = metric_traits(metric);
  double worst = lower_is_better ? -1e300 : 1e300;
  for (const auto& m : metrics) {
    const double value = traits.value(m).value_or(lower_is_better ? 1e300 : -1e300);
    worst = lower_is_better ? std::max(worst, value) : std::min(worst, value);
  }
  return lower_is_better ? -worst : worst;
}

namespace metrics {

namespace {
std::string with_unit(const MetricTraits& traits, std::string number) {
  if (*traits.unit == '\0') return number;
  return number + (traits.unit == kPercent ? "" : " ") + traits.unit;
}
}  // namespace

std::string measured_text(Metric metric, double value) {
  const MetricTraits& traits = metric_traits(metric);
  return with_unit(traits, cut_decimal(value, traits.decimals, unit_shift(traits)));
}

std::string threshold_text(Metric metric, double value) {
  const MetricTraits& traits = metric_traits(metric);
  return with_unit(traits, shortest_decimal(value, unit_shift(traits)));
}

const char* negated(Op op) { return op_traits(op).negation; }

}  // namespace metrics
}  // namespace mixprec
