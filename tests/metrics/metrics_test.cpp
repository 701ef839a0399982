#include "mixprec/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "metrics/decimal_text.h"
#include "mixprec/error.h"
#include "mixprec/metrics_report.h"

namespace mixprec {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();
// Hand-worked values below are printed to 4 decimals; compare to that precision.
constexpr double kHandTolerance = 1e-4;

Tensor floats(Shape shape, std::vector<float> values) { return Tensor::from_floats(std::move(shape), values); }
Tensor labels(Shape shape, std::vector<float> values) {
  return Tensor::from_floats(DType::kInt64, std::move(shape), values);
}

OutputMetrics compare(const Tensor& reference, const Tensor& candidate, Tolerance tolerance = {}) {
  OutputComparer comparer("y", tolerance);
  comparer.add(reference, candidate);
  return comparer.result();
}

void expect_same(const OutputMetrics& a, const OutputMetrics& b) {
  EXPECT_EQ(a.elements, b.elements);
  EXPECT_EQ(a.nonfinite_count, b.nonfinite_count);
  EXPECT_DOUBLE_EQ(a.mse, b.mse);
  EXPECT_DOUBLE_EQ(a.psnr_db, b.psnr_db);
  EXPECT_DOUBLE_EQ(a.sqnr_db, b.sqnr_db);
  EXPECT_DOUBLE_EQ(a.cosine, b.cosine);
  EXPECT_DOUBLE_EQ(a.max_abs_error, b.max_abs_error);
  EXPECT_DOUBLE_EQ(a.pass_rate, b.pass_rate);
  EXPECT_DOUBLE_EQ(a.reference_min, b.reference_min);
  EXPECT_DOUBLE_EQ(a.reference_max, b.reference_max);
  EXPECT_DOUBLE_EQ(a.reference_peak, b.reference_peak);
  EXPECT_EQ(a.topk_rows, b.topk_rows);
  EXPECT_EQ(a.top1_agreement, b.top1_agreement);
  EXPECT_EQ(a.top5_agreement, b.top5_agreement);
}

template <typename F>
Error catch_error(F&& f) {
  try {
    f();
  } catch (const Error& error) {
    return error;
  }
  ADD_FAILURE() << "no mixprec::Error thrown";
  return Error(ErrorKind::kInternal, "", "");
}

// ---- OutputComparer: element statistics ----

TEST(MetricsComparer, HandWorkedValues) {
  // ref [1,2,3,4], cand [1,2,3,5]: one error of 1.
  const OutputMetrics m = compare(floats({4}, {1, 2, 3, 4}), floats({4}, {1, 2, 3, 5}));
  EXPECT_EQ(m.name, "y");
  EXPECT_EQ(m.samples, 1);
  EXPECT_EQ(m.elements, 4);
  EXPECT_DOUBLE_EQ(m.mse, 0.25);
  EXPECT_NEAR(m.psnr_db, 18.0618, kHandTolerance);  // 10 log10(4^2 / 0.25) = 10 log10(64)
  EXPECT_NEAR(m.sqnr_db, 14.7712, kHandTolerance);  // 10 log10(30 / 1)
  EXPECT_DOUBLE_EQ(m.pass_rate, 0.75);              // |5 - 4| > 0.015 + 0.01 * 4
  EXPECT_DOUBLE_EQ(m.cosine, 34 / std::sqrt(30.0 * 39.0));  // dot 1+4+9+20, |ref|^2 30, |cand|^2 39
  EXPECT_DOUBLE_EQ(m.max_abs_error, 1);
  EXPECT_DOUBLE_EQ(m.reference_min, 1);
  EXPECT_DOUBLE_EQ(m.reference_max, 4);
  EXPECT_DOUBLE_EQ(m.reference_peak, 4);
  EXPECT_EQ(m.nonfinite_count, 0);
  EXPECT_FALSE(m.top1_agreement);  // rank 1 floats: no class axis
}

TEST(MetricsComparer, PeakIsLargestMagnitudeAcrossSamples) {
  OutputComparer comparer("y");
  comparer.add(floats({2}, {1, -8}), floats({2}, {1, -8}));
  comparer.add(floats({2}, {2, 4}), floats({2}, {2, 5}));
  const OutputMetrics m = comparer.result();
  EXPECT_DOUBLE_EQ(m.reference_peak, 8);
  EXPECT_DOUBLE_EQ(m.reference_min, -8);
  EXPECT_DOUBLE_EQ(m.reference_max, 4);
  EXPECT_NEAR(m.psnr_db, 24.0824, kHandTolerance);  // 10 log10(64 / 0.25)
}

TEST(MetricsComparer, PassRateBoundaryIsInclusive) {
  // atol 0.5 + rtol 0.25 * |2| = 1 exactly (all values binary-exact).
  const Tolerance tolerance{.atol = 0.5, .rtol = 0.25};
  EXPECT_DOUBLE_EQ(compare(floats({1}, {2}), floats({1}, {3}), tolerance).pass_rate, 1);
  EXPECT_DOUBLE_EQ(compare(floats({1}, {2}), floats({1}, {3.0001f}), tolerance).pass_rate, 0);
  EXPECT_DOUBLE_EQ(compare(floats({1}, {-2}), floats({1}, {-1}), tolerance).pass_rate, 1);
}

TEST(MetricsComparer, StreamingEqualsOneCombinedSample) {
  const std::vector<float> ref = {0.5f, -1, 2, 3, 7, 1, -4, 0.25f};
  const std::vector<float> cand = {0.6f, -1, 2.2f, 2.5f, 7, 1.5f, -3, 0.25f};
  OutputComparer streamed("y");
  streamed.add(floats({1, 4}, {ref.begin(), ref.begin() + 4}), floats({1, 4}, {cand.begin(), cand.begin() + 4}));
  streamed.add(floats({1, 4}, {ref.begin() + 4, ref.end()}), floats({1, 4}, {cand.begin() + 4, cand.end()}));
  const OutputMetrics combined = compare(floats({2, 4}, ref), floats({2, 4}, cand));
  const OutputMetrics result = streamed.result();
  EXPECT_EQ(result.samples, 2);
  expect_same(result, combined);
  EXPECT_EQ(result.topk_rows, 2);
}

TEST(MetricsComparer, ExactMatchCapsDecibels) {
  const OutputMetrics m = compare(floats({3}, {1, -2, 3}), floats({3}, {1, -2, 3}));
  EXPECT_EQ(m.mse, 0);
  EXPECT_EQ(m.psnr_db, kMaxDb);
  EXPECT_EQ(m.sqnr_db, kMaxDb);
  EXPECT_DOUBLE_EQ(m.cosine, 1);
  EXPECT_DOUBLE_EQ(m.pass_rate, 1);
}

TEST(MetricsComparer, ZeroReferenceEdgeCases) {
  const OutputMetrics both_zero = compare(floats({2}, {0, 0}), floats({2}, {0, 0}));
  EXPECT_EQ(both_zero.psnr_db, kMaxDb);
  EXPECT_DOUBLE_EQ(both_zero.cosine, 1);

  const OutputMetrics zero_reference = compare(floats({2}, {0, 0}), floats({2}, {0.5f, 0}));
  EXPECT_EQ(zero_reference.psnr_db, -kMaxDb);  // peak 0: log10(0) clamps
  EXPECT_EQ(zero_reference.sqnr_db, -kMaxDb);
  EXPECT_DOUBLE_EQ(zero_reference.cosine, 0);
}

TEST(MetricsComparer, NonFiniteCandidateIsCountedAndNeverPasses) {
  const OutputMetrics m = compare(floats({5}, {1, 2, 3, 4, 5}), floats({5}, {1, kNaN, 3, 5, kInf}));
  EXPECT_EQ(m.elements, 5);
  EXPECT_EQ(m.nonfinite_count, 2);
  EXPECT_DOUBLE_EQ(m.pass_rate, 2.0 / 5);
  // Error statistics over the finite elements 1, 3, 4 -> 1, 3, 5.
  EXPECT_DOUBLE_EQ(m.mse, 1.0 / 3);
  EXPECT_NEAR(m.psnr_db, 18.7506, kHandTolerance);  // 10 log10(25 / (1/3)), peak 5 over all elements
  EXPECT_DOUBLE_EQ(m.max_abs_error, 1);
  EXPECT_TRUE(std::isfinite(m.cosine));
}

TEST(MetricsComparer, NonFiniteReferenceThrowsAndLeavesComparerUnchanged) {
  OutputComparer comparer("logits");
  comparer.add(floats({2}, {1, 2}), floats({2}, {1, 2.5f}));
  const OutputMetrics before = comparer.result();
  const Error error = catch_error([&] { comparer.add(floats({2}, {1, kNaN}), floats({2}, {1, 2})); });
  EXPECT_EQ(error.kind(), ErrorKind::kBadInput);
  EXPECT_NE(error.message().find("output 'logits'"), std::string::npos) << error.message();
  EXPECT_NE(error.message().find("element 1 of sample 1"), std::string::npos) << error.message();
  EXPECT_EQ(comparer.result().samples, 1);
  expect_same(comparer.result(), before);
}

TEST(MetricsComparer, ShapeMismatchNamesOutputAndShapes) {
  OutputComparer comparer("boxes");
  const Error error = catch_error([&] { comparer.add(floats({1, 4}, {1, 2, 3, 4}), floats({4}, {1, 2, 3, 4})); });
  EXPECT_EQ(error.kind(), ErrorKind::kBadInput);
  EXPECT_EQ(error.message(), "output 'boxes': candidate shape 4 differs from reference shape 1x4 (sample 0)");
}

TEST(MetricsComparer, CandidateDtypeMayDiffer) {
  const std::vector<float> values = {0.5f, -1.25f, 3};  // exact in float16
  const OutputMetrics m = compare(floats({3}, values), Tensor::from_floats(DType::kFloat16, {3}, values));
  EXPECT_EQ(m.mse, 0);
}

TEST(MetricsComparer, RejectsInvalidTolerance) {
  EXPECT_EQ(catch_error([] { OutputComparer("y", {.atol = -1}); }).kind(), ErrorKind::kBadInput);
  EXPECT_EQ(catch_error([] { OutputComparer("y", {.rtol = std::nan("")}); }).kind(), ErrorKind::kBadInput);
}

TEST(MetricsComparer, EmptyOutputsKeepDefaults) {
  OutputComparer comparer("y");
  comparer.add(floats({0, 4}, {}), floats({0, 4}, {}));
  const OutputMetrics m = comparer.result();
  EXPECT_EQ(m.samples, 1);
  EXPECT_EQ(m.elements, 0);
  EXPECT_EQ(m.psnr_db, kMaxDb);
  EXPECT_FALSE(m.top1_agreement);
}

// ---- OutputComparer: top-k ----

TEST(TopKAgreement, ClassScoresPerRow) {
  // Row 0: both argmax 1. Row 1: reference argmax 0; the candidate ranks class 0 second.
  const OutputMetrics m = compare(floats({2, 3}, {0.1f, 0.9f, 0, 0.5f, 0.2f, 0.3f}),
                                  floats({2, 3}, {0.2f, 0.8f, 0, 0.3f, 0.6f, 0.1f}));
  EXPECT_EQ(m.topk_rows, 2);
  EXPECT_EQ(m.top1_agreement, 0.5);
  EXPECT_EQ(m.top5_agreement, 1.0);  // C <= 5: every class is in the top 5
}

TEST(TopKAgreement, TopFiveExcludesTheSixth) {
  // Reference argmax is class 0 in both rows; the candidate ranks it 5th, then 6th.
  const OutputMetrics m = compare(floats({2, 7}, {9, 1, 1, 1, 1, 1, 1, 9, 1, 1, 1, 1, 1, 1}),
                                  floats({2, 7}, {5, 6, 7, 8, 9, 1, 1, 4, 5, 6, 7, 8, 9, 1}));
  EXPECT_EQ(m.top1_agreement, 0.0);
  EXPECT_EQ(m.top5_agreement, 0.5);
}

TEST(TopKAgreement, TiesGoToTheLowerIndex) {
  // Reference [1, 1, 0] picks class 0; candidate [0.5, 0.5, 0] too; [0.4, 0.5, 0.5] ranks it 3rd.
  EXPECT_EQ(compare(floats({1, 3}, {1, 1, 0}), floats({1, 3}, {0.5f, 0.5f, 0})).top1_agreement, 1.0);
  EXPECT_EQ(compare(floats({1, 3}, {1, 1, 0}), floats({1, 3}, {0.4f, 0.5f, 0.5f})).top1_agreement, 0.0);
}

TEST(TopKAgreement, PerTimeStepForRankThree) {
  // [N=1, T=3, C=2]: steps 0 and 2 agree.
  const OutputMetrics m = compare(floats({1, 3, 2}, {1, 0, 0, 1, 1, 0}), floats({1, 3, 2}, {0.9f, 0.1f, 0.6f, 0.4f, 2, 1}));
  EXPECT_EQ(m.topk_rows, 3);
  EXPECT_DOUBLE_EQ(*m.top1_agreement, 2.0 / 3);
}

TEST(TopKAgreement, NaNRowNeverAgrees) {
  const OutputMetrics m = compare(floats({2, 2}, {1, 0, 1, 0}), floats({2, 2}, {1, kNaN, 1, 0}));
  EXPECT_EQ(m.top1_agreement, 0.5);
  EXPECT_EQ(m.top5_agreement, 0.5);
}

TEST(TopKAgreement, IntegerLabelsCompareByEquality) {
  const OutputMetrics m = compare(labels({4}, {3, 1, 2, 0}), labels({4}, {3, 1, 0, 0}));
  EXPECT_EQ(m.topk_rows, 4);
  EXPECT_EQ(m.top1_agreement, 0.75);
  EXPECT_FALSE(m.top5_agreement);
}

TEST(TopKAgreement, AbsentWithoutClassAxis) {
  EXPECT_FALSE(compare(floats({1, 2, 1, 1}, {1, 2}), floats({1, 2, 1, 1}, {1, 2})).top1_agreement);  // rank 4
  EXPECT_FALSE(compare(floats({2, 1}, {1, 2}), floats({2, 1}, {1, 2})).top1_agreement);  // one class
  EXPECT_FALSE(compare(Tensor::from_floats(DType::kBool, {2}, std::vector<float>{1, 0}),
                       Tensor::from_floats(DType::kBool, {2}, std::vector<float>{1, 0}))
                   .top1_agreement);
}

TEST(TopKAgreement, AbsentWhenSamplesDisagreeOnKind) {
  OutputComparer comparer("y");
  comparer.add(floats({1, 2}, {1, 0}), floats({1, 2}, {1, 0}));
  comparer.add(floats({2}, {1, 0}), floats({2}, {1, 0}));
  EXPECT_FALSE(comparer.result().top1_agreement);
}

// ---- ModelComparer ----

TEST(MetricsModelComparer, MatchesOutputsByName) {
  ModelComparer comparer;
  comparer.add({{"a", floats({1}, {1})}, {"b", floats({1}, {2})}}, {{"b", floats({1}, {2})}, {"a", floats({1}, {3})}});
  const std::vector<OutputMetrics> results = comparer.results();
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].name, "a");
  EXPECT_DOUBLE_EQ(results[0].mse, 4);
  EXPECT_EQ(results[1].name, "b");
  EXPECT_EQ(results[1].mse, 0);
}

TEST(MetricsModelComparer, MissingOrExtraOutputThrowsAndLeavesComparerUnchanged) {
  ModelComparer comparer;
  const NamedTensors sample = {{"a", floats({1}, {1})}, {"b", floats({1}, {2})}};
  comparer.add(sample, sample);
  const auto message = [&](const NamedTensors& reference, const NamedTensors& candidate) {
    const Error error = catch_error([&] { comparer.add(reference, candidate); });
    EXPECT_EQ(error.kind(), ErrorKind::kBadInput);
    return error.message();
  };
  EXPECT_EQ(message(sample, {{"a", floats({1}, {1})}}), "the candidate lacks output 'b'");
  EXPECT_EQ(message({{"a", floats({1}, {1})}}, sample), "the reference lacks output 'b'");
  NamedTensors extra = sample;
  extra.emplace_back("c", floats({1}, {0}));
  EXPECT_EQ(message(sample, extra), "the candidate has an extra output 'c'");
  NamedTensors twice = sample;
  twice.emplace_back("a", floats({1}, {0}));
  EXPECT_EQ(message(sample, twice), "the candidate holds more than one output 'a'");
  // A later output's shape mismatch must not leave the earlier output counted.
  EXPECT_NE(message(sample, {{"a", floats({1}, {1})}, {"b", floats({2}, {2, 2})}}).find("output 'b'"), std::string::npos);
  for (const OutputMetrics& output : comparer.results()) EXPECT_EQ(output.samples, 1) << output.name;
}

TEST(MetricsModelComparer, EmptyFirstSampleThrows) {
  ModelComparer comparer;
  EXPECT_EQ(catch_error([&] { comparer.add({}, {}); }).kind(), ErrorKind::kBadInput);
  EXPECT_TRUE(comparer.results().empty());
  // A first sample whose second output does not match leaves no output behind either.
  EXPECT_EQ(catch_error([&] {
              comparer.add({{"a", floats({1}, {1})}, {"b", floats({1}, {2})}}, {{"a", floats({1}, {1})}, {"b", floats({2}, {2, 2})}});
            }).kind(),
            ErrorKind::kBadInput);
  EXPECT_TRUE(comparer.results().empty());
}

// ---- parse_target ----

TEST(TargetParse, AcceptsEveryMetricOperatorAndUnit) {
  struct Case {
    const char* expr;
    AccuracyTarget::Metric metric;
    AccuracyTarget::Op op;
    double value;
  };
  const Case cases[] = {
      {"psnr>30", AccuracyTarget::kPsnr, AccuracyTarget::kGreater, 30},
      {"sqnr>=25", AccuracyTarget::kSqnr, AccuracyTarget::kGreaterEqual, 25},
      {"cosine>0.999", AccuracyTarget::kCosine, AccuracyTarget::kGreater, 0.999},
      {"top1>=0.99", AccuracyTarget::kTop1, AccuracyTarget::kGreaterEqual, 0.99},
      {"pass_rate>=0.999", AccuracyTarget::kPassRate, AccuracyTarget::kGreaterEqual, 0.999},
      {"pass_rate>=99.9%", AccuracyTarget::kPassRate, AccuracyTarget::kGreaterEqual, 0.999},
      {"  PSNR  >  30.5 dB ", AccuracyTarget::kPsnr, AccuracyTarget::kGreater, 30.5},
      {"top1 >= 100 %", AccuracyTarget::kTop1, AccuracyTarget::kGreaterEqual, 1},
      {"sqnr<40", AccuracyTarget::kSqnr, AccuracyTarget::kLess, 40},
      {"cosine>-0.5", AccuracyTarget::kCosine, AccuracyTarget::kGreater, -0.5},
  };
  for (const Case& c : cases) {
    const AccuracyTarget target = parse_target(c.expr);
    EXPECT_EQ(target.metric, c.metric) << c.expr;
    EXPECT_EQ(target.op, c.op) << c.expr;
    EXPECT_DOUBLE_EQ(target.value, c.value) << c.expr;
  }
  EXPECT_EQ(parse_target("  psnr > 30 ").text, "psnr > 30");
}

TEST(TargetParse, PercentIsTheExactDecimalFraction) {
  // 99.9 / 100 is one ulp above 0.999; the parser must give 0.999 itself, so that a pass rate of
  // exactly 999/1000 meets "pass_rate>=99.9%".
  EXPECT_EQ(parse_target("pass_rate>=99.9%").value, 0.999);
  EXPECT_EQ(parse_target("pass_rate>=99.99%").value, 0.9999);
  EXPECT_EQ(parse_target("top1>=9.99e1%").value, 0.999);
  EXPECT_EQ(parse_target("top1>=9990E-2%").value, 0.999);
  EXPECT_EQ(parse_target("top1>=0.0999e+3%").value, 0.999);
  EXPECT_TRUE(meets(parse_target("pass_rate>=99.9%"), 999.0 / 1000));
}

TEST(TargetParse, RejectsMalformedExpressions) {
  struct Case {
    const char* expr;
    const char* detail;
  };
  const Case cases[] = {
      {"", "it is empty"},
      {">30", "it does not start with a metric"},
      {"accuracy>0.9", "unknown metric 'accuracy'"},
      {"psnr", "no operator after 'psnr'"},
      {"psnr 30", "no operator after 'psnr'"},
      {"psnr=>30", "unknown operator '=>'"},
      {"psnr<=30", "unknown operator '<='"},
      {"psnr>", "no value after '>'"},
      {"psnr>abc", "'abc' is not a finite number"},
      {"psnr>inf", "'inf' is not a finite number"},
      {"psnr>nan", "'nan' is not a finite number"},
      {"psnr>30x", "unexpected 'x' after the value (psnr takes only 'dB')"},
      {"psnr>30%", "unexpected '%' after the value (psnr takes only 'dB')"},
      {"cosine>0.9dB", "unexpected 'dB' after the value (cosine takes no unit)"},
      {"cosine>2", "2 is outside the range of cosine, [-1, 1]"},
      {"top1>=99", "99 is outside the range of top1, [0, 1] or [0%, 100%]; for a percentage write 99%"},
      {"pass_rate>=150%", "150% is outside the range of pass_rate, [0, 1] or [0%, 100%]"},
  };
  for (const Case& c : cases) {
    const Error error = catch_error([&] { parse_target(c.expr); });
    EXPECT_EQ(error.kind(), ErrorKind::kBadInput) << c.expr;
    EXPECT_EQ(error.message(), "accuracy target '" + std::string(c.expr) + "': " + c.detail +
                                   "; expected METRIC OP VALUE with METRIC one of psnr, sqnr, cosine, top1, pass_rate "
                                   "and OP one of >, >=, < (e.g. \"psnr>30\", \"pass_rate>=99.9%\")");
  }
}

TEST(TargetParse, CanonicalTextParsesBack) {
  for (const TaskType task : {TaskType::kClassification, TaskType::kDetection, TaskType::kRegression,
                              TaskType::kSequence, TaskType::kUnknown}) {
    for (const AccuracyTarget& target : default_targets(task)) {
      const AccuracyTarget parsed = parse_target(target.text);
      EXPECT_EQ(parsed.metric, target.metric) << target.text;
      EXPECT_EQ(parsed.op, target.op) << target.text;
      EXPECT_DOUBLE_EQ(parsed.value, target.value) << target.text;
    }
  }
  EXPECT_EQ(make_target(AccuracyTarget::kPassRate, AccuracyTarget::kGreaterEqual, 0.999).text, "pass_rate>=99.9%");
  EXPECT_EQ(make_target(AccuracyTarget::kCosine, AccuracyTarget::kGreater, 0.9995).text, "cosine>0.9995");
  EXPECT_EQ(make_target(AccuracyTarget::kSqnr, AccuracyTarget::kLess, 40).text, "sqnr<40");
}

TEST(TargetParse, MetricTableIsComplete) {
  ASSERT_EQ(all_metric_traits().size(), 5u);
  for (const MetricTraits& traits : all_metric_traits()) {
    EXPECT_EQ(&metric_traits(traits.metric), &traits);
    EXPECT_STREQ(to_string(traits.metric), traits.name);
  }
  EXPECT_STREQ(to_string(AccuracyTarget::kGreaterEqual), ">=");
}

// ---- judge ----

OutputMetrics measured(const std::string& name, double psnr_db, double pass_rate) {
  OutputMetrics m;
  m.name = name;
  m.samples = 100;
  m.elements = 1000;
  m.mse = 0.01;
  m.psnr_db = psnr_db;
  m.sqnr_db = psnr_db - 3;
  m.cosine = 0.999;
  m.pass_rate = pass_rate;
  return m;
}

OutputMetrics scores(const std::string& name, double top1, double psnr_db = 12) {
  OutputMetrics m = measured(name, psnr_db, 0.5);
  m.topk_rows = 1000;
  m.top1_agreement = top1;
  m.top5_agreement = 1;
  return m;
}

TEST(VerdictJudge, RegressionDefaults) {
  const Verdict pass = judge(TaskType::kRegression, {measured("y", 35.5, 0.9995), measured("z", 31, 0.9999)}, {});
  EXPECT_TRUE(pass.pass);
  EXPECT_EQ(pass.criterion, "psnr>=30 and pass_rate>=99.9% on every output (regression)");
  EXPECT_EQ(pass.reason, "output 'z': PSNR 31.00 dB >= 30 dB; output 'y': pass rate 99.950% >= 99.9%");

  const Verdict fail = judge(TaskType::kRegression, {measured("y", 27.4, 0.9989999), measured("z", 31, 0.9999)}, {});
  EXPECT_FALSE(fail.pass);
  // Cut, not rounded: 99.89999% must not print as the 99.900% it misses.
  EXPECT_EQ(fail.reason, "output 'y': PSNR 27.40 dB < 30 dB; output 'y': pass rate 99.899% < 99.9%");
}

TEST(VerdictJudge, ThresholdsAreInclusive) {
  EXPECT_TRUE(judge(TaskType::kRegression, {measured("y", kDefaultPsnrDb, kDefaultPassRate)}, {}).pass);
}

TEST(VerdictJudge, UnknownAndDetectionUseRegressionCriteriaPerOutput) {
  const std::vector<OutputMetrics> outputs = {measured("boxes", 40, 1), measured("scores", 29.99, 1)};
  for (const TaskType task : {TaskType::kUnknown, TaskType::kDetection}) {
    const Verdict verdict = judge(task, outputs, {});
    EXPECT_FALSE(verdict.pass) << to_string(task);
    EXPECT_EQ(verdict.reason, "output 'scores': PSNR 29.99 dB < 30 dB") << to_string(task);
  }
  EXPECT_EQ(judge(TaskType::kDetection, outputs, {}).criterion,
            "psnr>=30 and pass_rate>=99.9% on every output (detection: per output until boxes are matched)");
}

TEST(VerdictJudge, ClassificationNeedsEveryRowToAgreeAndIgnoresPsnr) {
  const Verdict pass = judge(TaskType::kClassification, {scores("logits", 1.0, 8)}, {});
  EXPECT_TRUE(pass.pass) << pass.reason;
  EXPECT_EQ(pass.criterion, "top1>=100% on every output (classification: top-1 agrees with FP32 on every row)");

  const Verdict fail = judge(TaskType::kClassification, {scores("logits", 0.998)}, {});
  EXPECT_FALSE(fail.pass);
  EXPECT_EQ(fail.reason, "output 'logits': top-1 agreement 99.800% < 100% (2 of 1000 rows differ)");
}

// A row's margin is the reference's top-1 score minus its second; the rows that flip are listed
// by theirs beside the median over all rows. Rows (reference -> candidate), margins worked by hand:
// (0.7 0.2 0.1) kept, 0.5; (0.4 0.35 0.25) -> (0.3 0.45 0.25) flips, 0.05; (0.1 0.1 0.8) kept, 0.7;
// (0.2 0.5 0.3) -> (0.6 0.1 0.3) flips, 0.2. Median of 0.05, 0.2, 0.5, 0.7: 0.35.
TEST(VerdictJudge, ClassificationNamesHowCloseTheDifferingRowsWere) {
  const Tensor reference = floats({4, 3}, {0.7f, 0.2f, 0.1f, 0.4f, 0.35f, 0.25f, 0.1f, 0.1f, 0.8f, 0.2f, 0.5f, 0.3f});
  const Tensor candidate = floats({4, 3}, {0.7f, 0.2f, 0.1f, 0.3f, 0.45f, 0.25f, 0.1f, 0.1f, 0.8f, 0.6f, 0.1f, 0.3f});
  const OutputMetrics m = compare(reference, candidate);
  ASSERT_EQ(m.top1_flip_margins.size(), 2u);
  EXPECT_NEAR(m.top1_flip_margins[0], 0.05, 1e-6);
  EXPECT_NEAR(m.top1_flip_margins[1], 0.2, 1e-6);
  EXPECT_NEAR(m.median_top1_margin.value(), 0.35, 1e-6);
  EXPECT_EQ(judge(TaskType::kClassification, {m}, {}).reason,
            "output 'y': top-1 agreement 50.000% < 100% (2 of 4 rows differ; the reference led them by 0.05 and 0.2, its "
            "median row by 0.35)");
  // Over two samples the rows add up; past three flips the text gives their range and median.
  OutputComparer twice("y");
  twice.add(reference, candidate);
  twice.add(reference, candidate);
  EXPECT_EQ(judge(TaskType::kClassification, {twice.result()}, {}).reason,
            "output 'y': top-1 agreement 50.000% < 100% (4 of 8 rows differ; the reference led them by 0.05 to 0.2 (median "
            "0.2), its median row by 0.35)");
  // Labels have no scores, so no margins.
  EXPECT_TRUE(compare(labels({2}, {1, 2}), labels({2}, {1, 3})).top1_flip_margins.empty());
}

TEST(VerdictJudge, ClassificationWithoutClassScoresFails) {
  const Verdict verdict = judge(TaskType::kClassification, {measured("features", 50, 1)}, {});
  EXPECT_FALSE(verdict.pass);
  EXPECT_EQ(verdict.reason,
            "output 'features': no class scores ([N, C] or [N, T, C] floats) or integer labels to measure top-1 "
            "agreement on");
}

TEST(VerdictJudge, SequenceAllowsAFewTimeSteps) {
  EXPECT_TRUE(judge(TaskType::kSequence, {scores("probs", 0.999)}, {}).pass);
  const Verdict fail = judge(TaskType::kSequence, {scores("probs", 0.998)}, {});
  EXPECT_FALSE(fail.pass);
  EXPECT_EQ(fail.criterion, "top1>=99.9% on every output (sequence: top-1 per time step)");
  EXPECT_EQ(fail.reason, "output 'probs': top-1 agreement 99.800% < 99.9% (2 of 1000 rows differ)");
}

TEST(VerdictJudge, TargetReplacesDefaultAndAppliesToWorstOutput) {
  // Top-1 agreement of 50% fails classification's default, but the target asks for PSNR only.
  const std::vector<OutputMetrics> outputs = {scores("a", 0.5, 35), scores("b", 0.5, 25)};
  const Verdict psnr20 = judge(TaskType::kClassification, outputs, parse_target("psnr > 20"));
  EXPECT_TRUE(psnr20.pass);
  EXPECT_EQ(psnr20.criterion, "psnr > 20 on every output (target)");
  EXPECT_EQ(psnr20.reason, "output 'b': PSNR 25.00 dB > 20 dB");

  const Verdict psnr30 = judge(TaskType::kClassification, outputs, parse_target("psnr>30"));
  EXPECT_FALSE(psnr30.pass);
  EXPECT_EQ(psnr30.reason, "output 'b': PSNR 25.00 dB <= 30 dB");

  // "<" judges the largest value.
  const Verdict sqnr = judge(TaskType::kRegression, outputs, parse_target("sqnr<30"));
  EXPECT_FALSE(sqnr.pass);
  EXPECT_EQ(sqnr.reason, "output 'a': SQNR 32.00 dB >= 30 dB");
  EXPECT_TRUE(judge(TaskType::kRegression, outputs, parse_target("sqnr<33")).pass);

  EXPECT_TRUE(judge(TaskType::kRegression, outputs, parse_target("cosine>=0.999")).pass);
  EXPECT_FALSE(judge(TaskType::kRegression, outputs, parse_target("cosine>0.999")).pass);
}

TEST(VerdictJudge, NonFiniteOrEmptyOutputsAlwaysFail) {
  OutputMetrics nan = scores("logits", 1.0, 60);
  nan.nonfinite_count = 3;
  const Verdict with_nan = judge(TaskType::kClassification, {nan}, parse_target("top1>=0"));
  EXPECT_FALSE(with_nan.pass);
  EXPECT_EQ(with_nan.reason, "output 'logits': 3 of 1000 values are NaN or Inf");

  OutputMetrics empty;
  empty.name = "y";
  EXPECT_EQ(judge(TaskType::kRegression, {empty}, {}).reason, "output 'y': no elements were compared");

  const Verdict none = judge(TaskType::kRegression, {}, {});
  EXPECT_FALSE(none.pass);
  EXPECT_EQ(none.reason, "no outputs were compared");
}

TEST(VerdictJudge, WorksOnMeasuredMetrics) {
  // ref [1,2,3,4] vs [1,2,3,5]: PSNR 18.06 dB and pass rate 75% fail regression.
  const OutputMetrics m = compare(floats({4}, {1, 2, 3, 4}), floats({4}, {1, 2, 3, 5}));
  EXPECT_EQ(judge(TaskType::kRegression, {m}, {}).reason,
            "output 'y': PSNR 18.06 dB < 30 dB; output 'y': pass rate 75.000% < 99.9%");
}

// ---- text and reports ----

TEST(MetricsDecimalText, CutsInsteadOfRounding) {
  using metrics::cut_decimal;
  using metrics::shortest_decimal;
  EXPECT_EQ(cut_decimal(0.9989999, 3, 2), "99.899");
  EXPECT_EQ(cut_decimal(0.999, 3, 2), "99.900");
  EXPECT_EQ(cut_decimal(27.4, 2), "27.40");
  EXPECT_EQ(cut_decimal(-27.456, 2), "-27.45");
  EXPECT_EQ(cut_decimal(-0.0001, 2), "0.00");
  EXPECT_EQ(cut_decimal(123.9, 0), "123");
  EXPECT_EQ(cut_decimal(1e-7, 3, 2), "0.000");
  EXPECT_EQ(cut_decimal(std::numeric_limits<double>::denorm_min(), 2), "0.00");
  EXPECT_EQ(cut_decimal(std::numeric_limits<double>::max(), 0).size(), 309u);
  EXPECT_EQ(cut_decimal(std::nan(""), 2), "nan");
  EXPECT_EQ(cut_decimal(-HUGE_VAL, 2), "-inf");
  EXPECT_EQ(shortest_decimal(0.999, 2), "99.9");
  EXPECT_EQ(shortest_decimal(1, 2), "100");
  EXPECT_EQ(shortest_decimal(30), "30");
  EXPECT_EQ(shortest_decimal(0.0005, 2), "0.05");
  EXPECT_EQ(shortest_decimal(-0.5), "-0.5");
}

TEST(MetricsReport, JsonHasStableKeysAndFiniteNumbers) {
  const OutputMetrics m = compare(floats({1, 2}, {1, 2}), floats({1, 2}, {1, 2}));
  const nlohmann::ordered_json json = metrics_to_json(m);
  std::vector<std::string> keys;
  for (const auto& item : json.items()) keys.push_back(item.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"name", "samples", "elements", "nonfinite_count", "psnr_db", "sqnr_db",
                                            "mse", "max_abs_error", "cosine", "pass_rate", "tolerance", "reference",
                                            "topk_rows", "top1_agreement", "top5_agreement", "top1_flip_margins",
                                            "median_top1_margin"}));
  EXPECT_EQ(json["psnr_db"], kMaxDb);
  EXPECT_EQ(json["top1_agreement"], 1.0);
  EXPECT_EQ(json["tolerance"].dump(), R"({"atol":0.015,"rtol":0.01})");
  EXPECT_TRUE(metrics_to_json(compare(floats({2}, {1, 2}), floats({2}, {1, 2})))["top1_agreement"].is_null());

  EXPECT_EQ(verdict_to_json({.pass = true, .criterion = "c", .reason = "r"}).dump(),
            R"({"pass":true,"criterion":"c","reason":"r"})");
}

TEST(MetricsReport, TableAlignsColumnsAndNotesNonFinite) {
  OutputMetrics nan_output = compare(floats({2}, {1, 2}), floats({2}, {1, kNaN}));
  nan_output.name = "aux";
  const std::string table = metrics_table({
      {"FP32", {compare(floats({1, 2}, {1, 2}), floats({1, 2}, {1, 2}))}},
      {"INT8", {compare(floats({1, 4}, {1, 2, 3, 4}), floats({1, 4}, {1, 2, 3, 5})), nan_output}},
  });
  EXPECT_EQ(table,
            "  model  output      PSNR      SQNR  pass rate  max abs err    cosine     top-1     top-5\n"
            "  FP32   y            inf       inf   100.000%            0  1.000000  100.000%  100.000%\n"
            "  INT8   y       18.06 dB  14.77 dB    75.000%            1  0.993999  100.000%  100.000%\n"
            "         aux          inf       inf    50.000%            0  1.000000         -         -\n"
            "  note: INT8 output 'aux': 1 of 2 values are NaN or Inf; they fail the pass rate and are left out "
            "of the other error columns\n");
}

TEST(MetricsReport, RegressionOutputsHaveNoTopKColumns) {
  // A [1, 4] map judged as regression: argmax agreement over its last axis means nothing.
  const std::vector<LabeledMetrics> rows = {{"INT8", {compare(floats({1, 4}, {1, 2, 3, 4}), floats({1, 4}, {1, 2, 3, 5}))}}};
  EXPECT_EQ(metrics_table(rows, TaskType::kRegression),
            "  model  output      PSNR      SQNR  pass rate  max abs err    cosine\n"
            "  INT8   y       18.06 dB  14.77 dB    75.000%            1  0.993999\n");
  EXPECT_NE(metrics_table(rows, TaskType::kClassification).find("top-1"), std::string::npos);
  EXPECT_EQ(metrics_table(rows, TaskType::kDetection).find("top-1"), std::string::npos);
}

}  // namespace
}  // namespace mixprec
