// OutputComparer and ModelComparer: streaming sums over samples (definitions in metrics.h).
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "metrics/decimal_text.h"
#include "mixprec/error.h"
#include "mixprec/metrics.h"

namespace mixprec {
namespace {

constexpr int64_t kMinClasses = 2;  // a class axis of 1 holds a score, not a choice
constexpr size_t kTopK = 5;

// The elements of `tensor` as float, without a copy when they already are float32.
class FloatView {
 public:
  explicit FloatView(const Tensor& tensor) {
    if (tensor.dtype() == DType::kFloat32) {
      values_ = tensor.as<float>();
    } else {
      converted_ = tensor.to_floats();
      values_ = converted_;
    }
  }
  FloatView(const FloatView&) = delete;  // values_ may point into converted_
  FloatView& operator=(const FloatView&) = delete;
  std::span<const float> values() const { return values_; }

 private:
  std::vector<float> converted_;
  std::span<const float> values_;
};

// Size of the class axis when `reference` holds class scores, else 0.
int64_t score_classes(const Tensor& reference) {
  const Shape& shape = reference.shape();
  const bool scores = dtype_traits(reference.dtype()).is_float && (shape.size() == 2 || shape.size() == 3) &&
                      shape.back() >= kMinClasses;
  return scores ? shape.back() : 0;
}

bool holds_labels(const Tensor& reference) {
  return !dtype_traits(reference.dtype()).is_float && reference.dtype() != DType::kBool;
}

// First index of the largest value (numpy.argmax); `row` is finite.
size_t argmax(std::span<const float> row) {
  return static_cast<size_t>(std::max_element(row.begin(), row.end()) - row.begin());
}

// Position of `row[index]` in a stable descending sort of `row` (0: it is the argmax);
// nullopt when the row holds a NaN (no order, so no agreement).
std::optional<size_t> stable_rank(std::span<const float> row, size_t index) {
  const float value = row[index];
  size_t rank = 0;
  for (size_t j = 0; j < row.size(); ++j) {
    if (std::isnan(row[j])) return std::nullopt;
    if (row[j] > value || (row[j] == value && j < index)) ++rank;
  }
  return rank;
}

std::string quoted(const std::string& name) { return "output '" + name + "'"; }

}  // namespace

void OutputComparer::Sums::merge(const Sums& other) {
  if (other.elements == 0) return;
  reference_min = elements == 0 ? other.reference_min : std::min(reference_min, other.reference_min);
  reference_max = elements == 0 ? other.reference_max : std::max(reference_max, other.reference_max);
  reference_peak = std::max(reference_peak, other.reference_peak);
  max_abs_error = std::max(max_abs_error, other.max_abs_error);
  elements += other.elements;
  finite += other.finite;
  passing += other.passing;
  error_squared += other.error_squared;
  reference_squared += other.reference_squared;
  candidate_squared += other.candidate_squared;
  dot += other.dot;
  topk_rows += other.topk_rows;
  top1 += other.top1;
  top5 += other.top5;
  margins.insert(margins.end(), other.margins.begin(), other.margins.end());
  flip_margins.insert(flip_margins.end(), other.flip_margins.begin(), other.flip_margins.end());
}

OutputComparer::OutputComparer(std::string name, Tolerance tolerance)
    : name_(std::move(name)), tolerance_(tolerance) {
  const auto valid = [](double value) { return std::isfinite(value) && value >= 0; };
  if (!valid(tolerance.atol) || !valid(tolerance.rtol)) {
    throw_bad_input("", quoted(name_) + ": tolerance atol " + metrics::shortest_decimal(tolerance.atol) + ", rtol " +
                            metrics::shortest_decimal(tolerance.rtol) + " must be finite and >= 0");
  }
}

OutputComparer::Sums OutputComparer::measure(const Tensor& reference, const Tensor& candidate) const {
  if (reference.shape() != candidate.shape()) {
    throw_bad_input("", quoted(name_) + ": candidate shape " + shape_to_string(candidate.shape()) +
                            " differs from reference shape " + shape_to_string(reference.shape()) + " (sample " +
                            std::to_string(samples_) + ")");
  }
  const FloatView reference_view(reference);
  const FloatView candidate_view(candidate);
  const std::span<const float> ref = reference_view.values();
  const std::span<const float> cand = candidate_view.values();

  Sums sums;
  sums.elements = static_cast<int64_t>(ref.size());
  sums.reference_min = std::numeric_limits<double>::infinity();
  sums.reference_max = -std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < ref.size(); ++i) {
    const double r = ref[i];
    if (!std::isfinite(r)) {
      throw_bad_input("", quoted(name_) + ": the reference holds a non-finite value (" + metrics::shortest_decimal(r) +
                              ") at element " + std::to_string(i) + " of sample " + std::to_string(samples_) +
                              "; nothing can be measured against it");
    }
    sums.reference_min = std::min(sums.reference_min, r);
    sums.reference_max = std::max(sums.reference_max, r);
    sums.reference_peak = std::max(sums.reference_peak, std::abs(r));
    const double q = cand[i];
    if (!std::isfinite(q)) continue;
    const double error = q - r;
    ++sums.finite;
    if (std::abs(error) <= tolerance_.atol + tolerance_.rtol * std::abs(r)) ++sums.passing;
    sums.error_squared += error * error;
    sums.reference_squared += r * r;
    sums.candidate_squared += q * q;
    sums.dot += r * q;
    sums.max_abs_error = std::max(sums.max_abs_error, std::abs(error));
  }

  if (holds_labels(reference)) {
    sums.rows = RowKind::kLabels;
    sums.topk_rows = sums.elements;
    for (size_t i = 0; i < ref.size(); ++i) sums.top1 += ref[i] == cand[i] ? 1 : 0;
  } else if (const int64_t classes = score_classes(reference); classes > 0) {
    sums.rows = RowKind::kScores;
    const auto width = static_cast<size_t>(classes);
    for (size_t start = 0; start < ref.size(); start += width) {
      const std::span<const float> row = ref.subspan(start, width);
      const size_t best = argmax(row);
      float second = -std::numeric_limits<float>::infinity();
      for (size_t j = 0; j < width; ++j) {
        if (j != best) second = std::max(second, row[j]);
      }
      const float margin = row[best] - second;
      const std::optional<size_t> rank = stable_rank(cand.subspan(start, width), best);
      ++sums.topk_rows;
      sums.top1 += rank && *rank == 0 ? 1 : 0;
      sums.top5 += rank && *rank < kTopK ? 1 : 0;
      sums.margins.push_back(margin);
      if (!rank || *rank != 0) sums.flip_margins.push_back(margin);
    }
  }
  return sums;
}

void OutputComparer::add(const Tensor& reference, const Tensor& candidate) { take(measure_sample(reference, candidate)); }

OutputComparer::Measurement OutputComparer::measure_sample(const Tensor& reference, const Tensor& candidate) const {
  Measurement measured;
  measured.sums = measure(reference, candidate);
  return measured;
}

void OutputComparer::take(Measurement&& measurement) {
  const Sums& sample = measurement.sums;
  rows_ = samples_ == 0 || rows_ == sample.rows ? sample.rows : RowKind::kNone;
  sums_.merge(sample);
  ++samples_;
}

OutputMetrics OutputComparer::result() const {
  OutputMetrics out;
  out.name = name_;
  out.tolerance = tolerance_;
  out.samples = samples_;
  out.elements = sums_.elements;
  if (sums_.elements == 0) return out;

  const auto decibels = [](double signal, double noise) {
    if (noise == 0) return kMaxDb;
    return std::clamp(10 * std::log10(signal / noise), -kMaxDb, kMaxDb);  // log10(0) = -inf
  };
  const auto count = [](int64_t value) { return static_cast<double>(value); };
  out.nonfinite_count = sums_.elements - sums_.finite;
  out.mse = sums_.finite == 0 ? 0 : sums_.error_squared / count(sums_.finite);
  out.psnr_db = decibels(sums_.reference_peak * sums_.reference_peak, out.mse);
  out.sqnr_db = decibels(sums_.reference_squared, sums_.error_squared);
  // One sqrt of the product: for identical outputs sqrt(a * a) is exactly a, so cosine is exactly 1.
  const double norms = std::sqrt(sums_.reference_squared * sums_.candidate_squared);
  if (norms > 0) {
    out.cosine = std::clamp(sums_.dot / norms, -1.0, 1.0);
  } else {
    out.cosine = sums_.reference_squared == sums_.candidate_squared ? 1 : 0;
  }
  out.max_abs_error = sums_.max_abs_error;
  out.pass_rate = count(sums_.passing) / count(sums_.elements);
  out.reference_min = sums_.reference_min;
  out.reference_max = sums_.reference_max;
  out.reference_peak = sums_.reference_peak;

  if (rows_ != RowKind::kNone) {
    out.topk_rows = sums_.topk_rows;
    const auto rate = [&](int64_t agreeing) { return count(agreeing) / count(sums_.topk_rows); };
    out.top1_agreement = rate(sums_.top1);
    if (rows_ == RowKind::kScores) {
      out.top5_agreement = rate(sums_.top5);
      out.top1_flip_margins.assign(sums_.flip_margins.begin(), sums_.flip_margins.end());
      std::ranges::sort(out.top1_flip_margins);
      std::vector<float> margins = sums_.margins;
      std::ranges::sort(margins);
      const size_t n = margins.size();
      if (n > 0) out.median_top1_margin = n % 2 == 1 ? margins[n / 2] : (double{margins[n / 2 - 1]} + margins[n / 2]) / 2;
    }
  }
  return out;
}

ModelComparer::ModelComparer(Tolerance tolerance) : tolerance_(tolerance) {}

void ModelComparer::add(const NamedTensors& reference, const NamedTensors& candidate) {
  const auto named = [](const std::string& name) {
    return [&name](const auto& entry) { return entry.first == name; };
  };
  // Every output is checked and measured before any takes its sample, so a throw leaves the
  // comparer as it was without copying what it holds.
  std::vector<OutputComparer> first;  // the first call's outputs
  if (outputs_.empty()) {
    if (reference.empty()) throw_bad_input("", "the reference sample has no outputs to compare");
    for (const auto& [name, tensor] : reference) first.emplace_back(name, tolerance_);
  }
  const std::vector<OutputComparer>& next = outputs_.empty() ? first : outputs_;
  const std::pair<const NamedTensors*, const char*> samples[] = {{&reference, "reference"}, {&candidate, "candidate"}};
  for (const auto& [sample, model] : samples) {
    for (const auto& [name, tensor] : *sample) {
      if (std::none_of(next.begin(), next.end(), [&](const OutputComparer& c) { return c.name() == name; })) {
        throw_bad_input("", "the " + std::string(model) + " has an extra " + quoted(name));
      }
    }
    for (const OutputComparer& output : next) {
      const auto count = std::count_if(sample->begin(), sample->end(), named(output.name()));
      if (count != 1) {
        throw_bad_input("", "the " + std::string(model) + (count == 0 ? " lacks " : " holds more than one ") +
                                quoted(output.name()));
      }
    }
  }
  std::vector<OutputComparer::Measurement> measured;
  measured.reserve(next.size());
  for (const OutputComparer& output : next) {
    const auto tensor = [&](const NamedTensors& sample) -> const Tensor& {
      return std::find_if(sample.begin(), sample.end(), named(output.name()))->second;
    };
    measured.push_back(output.measure_sample(tensor(reference), tensor(candidate)));
  }
  if (outputs_.empty()) outputs_ = std::move(first);
  for (size_t i = 0; i < outputs_.size(); ++i) outputs_[i].take(std::move(measured[i]));
}

std::vector<OutputMetrics> ModelComparer::results() const {
  std::vector<OutputMetrics> out;
  out.reserve(outputs_.size());
  for (const OutputComparer& output : outputs_) out.push_back(output.result());
  return out;
}

}  // namespace mixprec
