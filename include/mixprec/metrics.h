// Metrics (pipeline step 4): how far a candidate model's outputs are from the reference (FP32)
// outputs on the same inputs, and whether that is good enough for the task (SPEC "Accuracy
// criteria").
//
// Contract:
// - Comparers stream over samples: memory does not grow with the sample count (a handful of
//   double accumulators per output), and sums are kept in double. Adding the samples one by one
//   gives the same metrics (up to summation order) as adding one sample that holds them all.
// - The reference must be finite; a NaN or Inf in it throws mixprec::Error kBadInput (nothing
//   can be measured against it). Non-finite candidate values are counted, never pass.
// - Every reported number is finite, so JSON stays valid.
//
// Definitions (over every element of every sample of one output, flattened):
//   err           q - ref, computed in double from both values converted to float
//   passing       |q - ref| <= atol + rtol * |ref|  (numpy.isclose); a NaN/Inf q never passes
//   pass_rate     passing / elements
//   MSE           sum(err^2) / n
//   peak          max |ref| over all samples. PSNR needs the largest value the signal can take;
//                 for 8-bit images that is the fixed 255, but ONNX outputs have no fixed range
//                 (logits, heat maps in [0, 1], embeddings, box coordinates in pixels), so the
//                 reference's own largest magnitude stands in for it.
//   PSNR          10 log10(peak^2 / MSE) dB
//   SQNR          10 log10(sum(ref^2) / sum(err^2)) dB  (signal power over error power; unlike
//                 PSNR it does not depend on one extreme element)
//   cosine        dot(ref, q) / (|ref| |q|); 1 when both are all zero, 0 when only one is
//   max_abs_error max |err|
// Error statistics (MSE, PSNR, SQNR, cosine, max_abs_error) cover the elements whose candidate
// is finite: an FP16 overflow to Inf would otherwise turn every one of them into Inf or NaN and
// hide how the rest of the output fares. nonfinite_count says how many were left out, pass_rate
// counts them as failing, and judge() fails any output that has one.
// A zero MSE gives PSNR and SQNR kMaxDb (not +inf); PSNR and SQNR are clamped to
// [-kMaxDb, kMaxDb] (a nonzero error against an all-zero reference gives -kMaxDb).
//
// Top-k agreement, per *row* (one decision of the model):
//   class scores  a floating-point output of rank 2 [N, C] or rank 3 [N, T, C] with C >= 2: one
//                 row per sample and (rank 3) per time step; top-1 agrees when the argmax over C
//                 is equal, top-5 when the reference argmax is among the candidate's 5 largest
//                 (always, when C <= 5). Ties go to the lower index (numpy.argmax, stable sort).
//                 A row whose candidate holds a NaN never agrees.
//   class labels  an integer output (ArgMax heads: [N] or [N, T]): one row per element; top-1
//                 agrees when the labels are equal; top-5 does not apply.
// Other outputs (and an output whose samples are not all of one kind) have no top-k.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "mixprec/analysis.h"
#include "mixprec/tensor.h"

namespace mixprec {

// Stand-in for an infinite PSNR/SQNR (zero error), and the clamp of both. 200 dB is far above
// any real measurement: float32 rounding alone keeps PSNR below ~150 dB.
inline constexpr double kMaxDb = 200.0;

// Element-wise tolerance of the pass rate (SPEC defaults).
struct Tolerance {
  double atol = 0.015;
  double rtol = 0.01;
};

struct OutputMetrics {
  std::string name;
  Tolerance tolerance;          // the one pass_rate was measured with
  int64_t samples = 0;
  int64_t elements = 0;         // all compared elements, non-finite candidates included
  int64_t nonfinite_count = 0;  // candidate elements that are NaN or +-Inf
  double mse = 0;
  double psnr_db = kMaxDb;
  double sqnr_db = kMaxDb;
  double cosine = 1;
  double max_abs_error = 0;
  double pass_rate = 1;
  double reference_min = 0;     // over all samples; 0 without elements
  double reference_max = 0;
  double reference_peak = 0;    // max |ref|, the PSNR peak
  // Top-k (see above): rows compared, and the fraction of rows that agree. top1_agreement is
  // present for class scores and labels, top5_agreement for class scores only. With zero
  // elements every number above keeps its default (identical empty outputs).
  int64_t topk_rows = 0;
  std::optional<double> top1_agreement;
  std::optional<double> top5_agreement;
  // Class scores: a row's margin is the reference's lead of its top-1 score over its second.
  // The margins of the rows whose top-1 differs, smallest first, and the median margin over all
  // rows: a row that flips with a margin near 0 was a near-tie in the reference, one that flips
  // with about the median margin a decision the candidate changed.
  std::vector<double> top1_flip_margins;
  std::optional<double> median_top1_margin;
};

// Accumulates the metrics of one output over samples.
class OutputComparer {
 public:
  // Throws kBadInput when a tolerance is negative or not finite.
  explicit OutputComparer(std::string name, Tolerance tolerance = {});

  // One sample. Shapes must be equal (kBadInput naming the output and both shapes otherwise);
  // dtypes may differ (both are compared as float). Throws kBadInput for a non-finite reference
  // value. On a throw the comparer is unchanged.
  void add(const Tensor& reference, const Tensor& candidate);

  OutputMetrics result() const;
  const std::string& name() const { return name_; }

 private:
  enum class RowKind { kNone, kScores, kLabels };  // see "Top-k agreement" above
  struct Sums {
    RowKind rows = RowKind::kNone;
    int64_t elements = 0;
    int64_t finite = 0;  // elements with a finite candidate: the error statistics' count
    int64_t passing = 0;
    double error_squared = 0;
    double reference_squared = 0;
    double candidate_squared = 0;
    double dot = 0;
    double max_abs_error = 0;
    double reference_min = 0;  // meaningful once elements > 0
    double reference_max = 0;
    double reference_peak = 0;
    int64_t topk_rows = 0;
    int64_t top1 = 0;
    int64_t top5 = 0;
    std::vector<float> margins;       // class scores: every row's reference margin
    std::vector<float> flip_margins;  // those of the rows whose top-1 differs

    void merge(const Sums& other);  // adds the counts and sums; leaves `rows` alone
  };

 public:
  // add() in two steps, for a caller that adds one sample of several outputs, all or none
  // (ModelComparer): measure_sample() throws as add() does and changes nothing; take() adds
  // what it measured.
  class Measurement {
    friend class OutputComparer;
    Sums sums;
  };
  Measurement measure_sample(const Tensor& reference, const Tensor& candidate) const;
  void take(Measurement&& measurement);

 private:
  // The sums of one sample; throws on a shape mismatch or a non-finite reference.
  Sums measure(const Tensor& reference, const Tensor& candidate) const;

  std::string name_;
  Tolerance tolerance_;
  int64_t samples_ = 0;
  RowKind rows_ = RowKind::kNone;  // of every sample so far; kNone once two samples differ
  Sums sums_;
};

// Compares every output of two models, sample by sample: OutputComparer per output name.
class ModelComparer {
 public:
  explicit ModelComparer(Tolerance tolerance = {});

  // One sample of each model, outputs matched by name. The first call fixes the outputs (in
  // the reference's order); every call must then hold exactly those names in both, else
  // kBadInput naming the missing or extra output. On a throw the comparer is unchanged.
  void add(const NamedTensors& reference, const NamedTensors& candidate);

  // One entry per output, in the reference's order; empty before the first add().
  std::vector<OutputMetrics> results() const;

 private:
  Tolerance tolerance_;
  std::vector<OutputComparer> outputs_;
};

// An accuracy target: "METRIC OP VALUE", e.g. "psnr>30", "pass_rate >= 99.9%".
struct AccuracyTarget {
  enum Metric { kPsnr, kSqnr, kCosine, kTop1, kPassRate };
  enum Op { kGreater, kGreaterEqual, kLess };

  Metric metric = kPsnr;
  Op op = kGreaterEqual;
  double value = 0;  // in the metric's unit: dB, or a fraction (99.9% is stored as 0.999)
  std::string text;  // as the user wrote it (trimmed); canonical for built-in targets
};

// How a metric is written, read and shown; one row per metric (see all_metric_traits()).
struct MetricTraits {
  AccuracyTarget::Metric metric;
  const char* name;        // in target expressions: "psnr", "pass_rate", ...
  const char* label;       // in reasons: "PSNR", "pass rate", ...
  const char* unit;        // "dB", "%" (fractions, shown as percent) or "" (cosine)
  int decimals;            // digits shown after the point, in the unit (cut, not rounded)
  double min, max;         // values a target may name (after a "%" is applied)
  // The metric of one output; nullopt when the output has none (top-1 without class scores).
  std::optional<double> (*value)(const OutputMetrics&);
  double min_gain;         // the smallest change a search counts as a gain, in the metric's own scale
};

const MetricTraits& metric_traits(AccuracyTarget::Metric metric);
std::span<const MetricTraits> all_metric_traits();
const char* to_string(AccuracyTarget::Metric metric);  // the expression name, "psnr"
const char* to_string(AccuracyTarget::Op op);          // ">", ">=", "<"

// Parses "METRIC OP VALUE": METRIC one of psnr, sqnr, cosine, top1, pass_rate (any case); OP
// one of >, >=, <; VALUE a finite decimal number, optionally followed by the metric's unit
// ("dB" for psnr/sqnr, "%" for top1/pass_rate). Whitespace is allowed around each part.
// Fractions (top1, pass_rate) must lie in [0, 1] and cosine in [-1, 1], so "top1>=99" is an
// error that suggests "99%". Malformed → kBadInput quoting the expression and listing the
// metrics and operators.
AccuracyTarget parse_target(const std::string& expr);

// A target built in code; its text is canonical and parses back to it ("pass_rate>=99.9%").
AccuracyTarget make_target(AccuracyTarget::Metric metric, AccuracyTarget::Op op, double value);

// Whether `value` meets `target` (value OP target.value).
bool meets(const AccuracyTarget& target, double value);

// What a search or a choice between candidates maximises: the target's metric on the worst
// output (negated for a "<" target), else the task's own measure (top-1 agreement for
// classification and sequences, worst PSNR otherwise). An output without the metric counts as
// the worst possible value.
struct AccuracyObjective {
  AccuracyTarget::Metric metric = AccuracyTarget::kPsnr;
  bool lower_is_better = false;

  AccuracyObjective(const std::optional<AccuracyTarget>& target, TaskType task);
  std::string name() const;  // "worst-output PSNR", "worst-output top-1 agreement", ...
  double min_gain() const { return metric_traits(metric).min_gain; }
  double operator()(const std::vector<OutputMetrics>& metrics) const;  // higher is better
};

// Default criteria (SPEC "Accuracy criteria"); every one must hold on every output.
//   regression, unknown  PSNR >= 30 dB and pass rate >= 99.9%.
//   detection            the same, per output: boxes are not matched yet (SPEC's IoU >= 0.5
//                        with equal class needs box decoding this module does not do).
//   classification       top-1 agreement = 100%: SPEC asks that top-1 *agrees* with FP32 over
//                        the evaluation set, i.e. on every sample. PSNR of logits is reported
//                        but is not a criterion (logits can move a lot without changing argmax).
//   sequence             per-time-step top-1 agreement >= 99.9% (e.g. OCR recognition, CTC
//                        over [N, T, C]). Requiring every step to agree would fail on near-tie
//                        steps at character boundaries (blank vs. character), which CTC decoding
//                        mostly absorbs; 99.9% reuses SPEC's one stated tolerance for "a share of
//                        units may differ" (the pass rate) with the time step as the unit: on a
//                        100-sample set with T = 40 at most 4 of 4,000 steps may differ.
inline constexpr double kDefaultPsnrDb = 30.0;
inline constexpr double kDefaultPassRate = 0.999;
inline constexpr double kClassificationTop1 = 1.0;
inline constexpr double kSequenceTop1 = 0.999;
std::vector<AccuracyTarget> default_targets(TaskType task);

struct Verdict {
  bool pass = false;
  std::string criterion;  // what was required: "psnr>=30 and pass_rate>=99.9% on every output (regression)"
  std::string reason;     // every failure ("output 'y': PSNR 27.41 dB < 30 dB"), or on a pass the
                          // worst output for each requirement; "; "-separated
};

// Judges the outputs of one candidate. `target`, when given, replaces the task's default
// criteria and must hold on the worst output (= on every output). Whatever the criterion, an
// output fails when it has non-finite values, when it has no elements (nothing was measured),
// or when the criterion needs a metric it lacks (top-1 without class scores or labels). No
// outputs at all is a failure too.
Verdict judge(TaskType task, const std::vector<OutputMetrics>& outputs, const std::optional<AccuracyTarget>& target);

}  // namespace mixprec
