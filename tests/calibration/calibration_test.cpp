// Streaming statistics, the range methods and the statistics file.
#include "mixprec/calibration.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <fstream>
#include <limits>
#include <numbers>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "mixprec/error.h"
#include "support/temp_dir.h"

namespace mixprec {
namespace {
namespace fs = std::filesystem;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// N(0, 1) from a fixed seed by Box-Muller over mt19937, whose output the standard fixes
// (std::normal_distribution's algorithm is left to the library).
std::vector<float> gaussian(size_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  const auto uniform = [&] { return (static_cast<double>(rng() >> 8) + 0.5) / 16777216.0; };  // (0, 1)
  std::vector<float> values;
  while (values.size() < count) {
    const double radius = std::sqrt(-2.0 * std::log(uniform()));
    const double angle = 2.0 * std::numbers::pi * uniform();
    values.push_back(static_cast<float>(radius * std::cos(angle)));
    values.push_back(static_cast<float>(radius * std::sin(angle)));
  }
  values.resize(count);
  return values;
}

TensorStats collect(std::span<const float> values, size_t batch) {
  StatsCollector collector;
  for (size_t start = 0; start < values.size(); start += batch) {
    collector.update(values.subspan(start, std::min(batch, values.size() - start)));
  }
  return collector.stats();
}

uint64_t hist_sum(const TensorStats& stats) {
  return std::accumulate(stats.hist.begin(), stats.hist.end(), uint64_t{0});
}

TEST(HistogramCollector, BinsAndRangeDoubling) {
  StatsCollector collector;
  collector.update(std::vector<float>{0.5f});
  // R = 1, the smallest 2^k above 0.5; w = 2R / 2048 = 2^-10; bin = floor(0.5 / 2^-10) + 1024 = 1536.
  EXPECT_EQ(collector.stats().hist_range, 1.0f);
  EXPECT_EQ(collector.stats().hist[1536], 1u);

  collector.update(std::vector<float>{3.0f, -4.0f});
  // R = 4 (two doublings; -4 >= -R is inside), w = 2^-8:
  // 0.5 -> 128 + 1024 = 1152; 3 -> 768 + 1024 = 1792; -4 -> -1024 + 1024 = 0.
  const TensorStats& stats = collector.stats();
  EXPECT_EQ(stats.hist_range, 4.0f);
  EXPECT_EQ(stats.hist[1152], 1u);
  EXPECT_EQ(stats.hist[1792], 1u);
  EXPECT_EQ(stats.hist[0], 1u);
  EXPECT_EQ(stats.count, 3u);
  EXPECT_EQ(hist_sum(stats), 3u);
  EXPECT_EQ(stats.min, -4.0f);
  EXPECT_EQ(stats.max, 3.0f);

  collector.update(std::vector<float>{4.0f});
  // 4 is not < 4: R = 8, w = 2^-7: 0.5 -> 1088; 3 -> 1408; -4 -> 512; 4 -> 1536.
  EXPECT_EQ(collector.stats().hist_range, 8.0f);
  for (size_t bin : {1088, 1408, 512, 1536}) EXPECT_EQ(collector.stats().hist[bin], 1u) << bin;
  EXPECT_EQ(hist_sum(collector.stats()), 4u);
}

TEST(HistogramCollector, DoublingKeepsCountsAndTotal) {
  std::vector<float> values = gaussian(5000, 1);
  values.push_back(1000.0f);  // R grows from 8 to 1024 in the last batch: 7 doublings at once
  const TensorStats streamed = collect(values, 5000);
  EXPECT_EQ(streamed.hist_range, 1024.0f);
  EXPECT_EQ(streamed.count, 5001u);
  EXPECT_EQ(hist_sum(streamed), 5001u);
  // The merged histogram is the one binned directly at R = 1024 (outlier first).
  std::vector<float> outlier_first = values;
  std::rotate(outlier_first.rbegin(), outlier_first.rbegin() + 1, outlier_first.rend());
  EXPECT_EQ(collect(outlier_first, outlier_first.size()), streamed);
}

TEST(HistogramCollector, SameValuesInAnyBatchesGiveIdenticalStats) {
  std::vector<float> values = gaussian(10000, 2);
  values[3000] = 100.0f;
  values[7000] = -1e4f;
  values[50] = kNaN;
  values[60] = kInf;
  const TensorStats whole = collect(values, values.size());
  EXPECT_EQ(collect(values, 7), whole);
  EXPECT_EQ(collect(values, 1000), whole);
  std::vector<float> reversed(values.rbegin(), values.rend());
  EXPECT_EQ(collect(reversed, 333), whole);
  EXPECT_EQ(whole.nan_count, 2u);
  EXPECT_EQ(whole.count, 9998u);
}

TEST(HistogramCollector, MemoryIsFixed) {
  StatsCollector collector;
  const std::vector<float> batch = gaussian(1000, 3);
  std::vector<float> scaled(batch.size());
  for (int b = 0; b < 1000; ++b) {
    // Growing magnitudes force repeated doublings.
    std::transform(batch.begin(), batch.end(), scaled.begin(), [&](float v) { return v * static_cast<float>(b + 1); });
    collector.update(scaled);
    ASSERT_EQ(collector.stats().hist.size(), kHistogramBins);
  }
  EXPECT_EQ(collector.stats().count, 1000000u);
  EXPECT_EQ(hist_sum(collector.stats()), 1000000u);
}

TEST(HistogramCollector, ZerosAndNonFiniteValues) {
  StatsCollector collector;
  collector.update(std::vector<float>{kNaN, kInf, -kInf});
  EXPECT_TRUE(collector.stats().hist.empty());
  EXPECT_EQ(collector.stats().count, 0u);
  EXPECT_EQ(collector.stats().nan_count, 3u);

  collector.update(std::vector<float>{0.0f, -0.0f, kNaN});
  const TensorStats& stats = collector.stats();
  EXPECT_EQ(stats.hist_range, kHistogramRangeMin);
  EXPECT_EQ(stats.hist[kHistogramBins / 2], 2u);  // both zeros start the positive half
  EXPECT_EQ(stats.count, 2u);
  EXPECT_EQ(stats.nan_count, 4u);
  EXPECT_EQ(stats.min, 0.0f);
  EXPECT_EQ(stats.max, 0.0f);
}

// The vectorized binning must put every value in the bin the definition gives:
// bin = floor(x / w) + kHistogramBins / 2 with w = 2R / kHistogramBins, clamped to the ends.
TEST(HistogramCollector, VectorizedBinningMatchesTheDefinition) {
  std::vector<float> values = {-1.5f, -1.0f, -0.5f, -1e-30f, -0.0f, 0.0f, 1e-30f, 0.5f, 1.0f, 1.5f,
                               -3.9999998f, 3.9999998f, -2.0f, 2.0f, 0.0039062f, -0.0039062f};
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int i = 0; i < 10001; ++i) values.push_back(normal(rng));  // odd count: the scalar tail runs too
  StatsCollector collector;
  collector.update(values);
  const TensorStats& s = collector.stats();
  std::vector<uint64_t> expected(kHistogramBins, 0);
  const double width = 2.0 * static_cast<double>(s.hist_range) / static_cast<double>(kHistogramBins);
  for (float x : values) {
    const auto bin = static_cast<int64_t>(std::floor(static_cast<double>(x) / width)) +
                     static_cast<int64_t>(kHistogramBins / 2);
    ++expected[static_cast<size_t>(std::clamp<int64_t>(bin, 0, kHistogramBins - 1))];
  }
  EXPECT_EQ(s.hist, expected);
  EXPECT_EQ(s.count, values.size());
}

// An added method (a plugin's): found by name after the built-in ones, its range checked and
// widened to 0 as compute_range promises, its name unique.
// The table only grows, so the method outlives this test: later tests in the same process see it
// in every sweep. Its state is static (a reference to a local would dangle) and ends as MinMax.
TEST(CalibMethodTable, AnAddedMethodJoinsTheTable) {
  static float low, high;
  static bool test_over;
  low = 0.25f, high = 3.0f, test_over = false;
  const CalibMethod added = add_calib_method(
      {.name = "TestAddedRange", .origin = "test", .range = [](const TensorStats& s, FormatId, const RangeOptions&) {
         return test_over ? Range{s.min, s.max} : Range{low, high};
       }});
  EXPECT_TRUE(is_added_calib_method(added));
  EXPECT_FALSE(is_added_calib_method(CalibMethod::kPowerOfTwoMinMse));
  EXPECT_EQ(calib_method_from_name("TestAddedRange"), added);
  EXPECT_STREQ(calib_method_traits(added).name, "TestAddedRange");
  StatsCollector c;
  c.update(std::vector<float>{1, 2, 3});
  const Range r = compute_range(c.stats(), added, FormatId::kInt8);
  EXPECT_EQ(r.min, 0.0f);  // [0.25, 3] widened to contain 0
  EXPECT_EQ(r.max, 3.0f);
  // Float formats get MinMax without asking the method.
  EXPECT_EQ(compute_range(c.stats(), added, FormatId::kBFloat16).max, 3.0f);
  high = std::numeric_limits<float>::quiet_NaN();
  EXPECT_THROW(compute_range(c.stats(), added, FormatId::kInt8), Error);
  low = 2.0f, high = 1.0f;
  EXPECT_THROW(compute_range(c.stats(), added, FormatId::kInt8), Error);
  const auto range = [](const TensorStats&, FormatId, const RangeOptions&) { return Range{}; };
  EXPECT_THROW(add_calib_method({.name = "TestAddedRange", .origin = "test", .range = range}), Error);
  EXPECT_THROW(add_calib_method({.name = "MinMax", .origin = "test", .range = range}), Error);
  EXPECT_THROW(add_calib_method({.name = "TestNoFunction", .origin = "test"}), Error);
  test_over = true;
}

TEST(CalibMethodTable, NamesRoundTrip) {
  size_t index = 0;
  for (const CalibMethodTraits& traits : all_calib_methods()) {
    if (is_added_calib_method(traits.method)) continue;  // another test's, in this process
    EXPECT_EQ(static_cast<size_t>(traits.method), index++);
    EXPECT_EQ(calib_method_from_name(traits.name), traits.method);
    EXPECT_STREQ(calib_method_traits(traits.method).name, traits.name);
  }
  EXPECT_EQ(index, 6u);
  EXPECT_EQ(calib_method_from_name("PowerOfTwo_MinMSE"), CalibMethod::kPowerOfTwoMinMse);
  EXPECT_TRUE(calib_method_traits(CalibMethod::kPowerOfTwoNonOverflow).power_of_two);
  EXPECT_FALSE(calib_method_traits(CalibMethod::kMinMax).needs_histogram);
  EXPECT_EQ(calib_method_from_name("minmax"), std::nullopt);
}

// 10^6 draws of N(0, 1) and four outliers at +-50 (4e-6 of the data, below Percentile's
// default 1e-5 tail): R = 64, bins 1/16 wide.
std::vector<float> outlier_values() {
  std::vector<float> values = gaussian(1000000, 7);
  values.insert(values.end(), {50.0f, -50.0f, 50.0f, -50.0f});
  return values;
}

const TensorStats& outlier_stats() {
  static const TensorStats stats = collect(outlier_values(), 4096);
  return stats;
}

// The Gaussian body reaches about 5; a good int8 clipping range for Percentile and Entropy
// lies between its bulk and the outliers. The upper bound is where the histogram's resolution
// puts the narrowest int8 KL window (128 bins of 1/16: T >= 8, see compute_range).
constexpr float kClipLow = 2.0f;
constexpr float kClipHigh = 10.0f;

TEST(RangeMethods, MinMaxCoversTheOutliers) {
  const Range range = compute_range(outlier_stats(), CalibMethod::kMinMax, FormatId::kInt8);
  EXPECT_EQ(range.min, -50.0f);
  EXPECT_EQ(range.max, 50.0f);
}

TEST(RangeMethods, PercentileAndEntropyClipTheOutliers) {
  for (CalibMethod method : {CalibMethod::kPercentile, CalibMethod::kEntropy}) {
    const Range range = compute_range(outlier_stats(), method, FormatId::kInt8);
    const char* name = calib_method_traits(method).name;
    EXPECT_GT(range.max, kClipLow) << name;
    EXPECT_LT(range.max, kClipHigh) << name;
    EXPECT_LT(range.min, -kClipLow) << name;
    EXPECT_GT(range.min, -kClipHigh) << name;
  }
}

TEST(RangeMethods, MinMseFindsTheSquaredErrorOptimum) {
  // Clipping at T costs about N * s^2 / 12 of rounding (s = T / 127, N = 10^6) plus 4 * (50 - T)^2
  // for the outliers. The derivative 10^6 * 2T / (127^2 * 12) - 8 * (50 - T) = 10.33 T - 400 + 8 T
  // vanishes at T = 21.8: far below 50, yet above where Entropy clips, because squared error
  // weighs the four outliers' large errors heavily.
  const Range range = compute_range(outlier_stats(), CalibMethod::kMinMse, FormatId::kInt8);
  EXPECT_GT(range.max, 15.0f);
  EXPECT_LT(range.max, 25.0f);
  EXPECT_EQ(range.min, -range.max);
}

TEST(RangeMethods, PercentileInterpolatesTheMagnitudeQuantile) {
  // 99.999% of 1000004 values is 999994.00004, so the threshold lies in the bin of the
  // 999995th smallest |x|: the 10th largest, i.e. the 6th largest draw after the 4 outliers.
  const TensorStats& stats = outlier_stats();
  const Range range = compute_range(stats, CalibMethod::kPercentile, FormatId::kInt8);
  EXPECT_EQ(range.min, -range.max);
  std::vector<float> magnitudes = gaussian(1000000, 7);
  for (float& v : magnitudes) v = std::abs(v);
  std::sort(magnitudes.begin(), magnitudes.end(), std::greater<>());
  EXPECT_NEAR(range.max, magnitudes[5], 1.0 / 16);  // within its bin
  // 100% keeps everything.
  const Range all = compute_range(stats, CalibMethod::kPercentile, FormatId::kInt8, {.percentile = 100});
  EXPECT_EQ(all.min, -50.0f);
  EXPECT_EQ(all.max, 50.0f);
}

TEST(RangeMethods, PowerOfTwoNonOverflowCoversTheRange) {
  // 50 / 127 = 0.394 -> 2^-1; the range is [-127 * 0.5, 127 * 0.5] = [-63.5, 63.5].
  const Range range = compute_range(outlier_stats(), CalibMethod::kPowerOfTwoNonOverflow, FormatId::kXInt8);
  EXPECT_EQ(range.min, -63.5f);
  EXPECT_EQ(range.max, 63.5f);
  EXPECT_EQ(choose_params(FormatId::kXInt8, range.min, range.max).scale[0], 0.5f);
  EXPECT_EQ(choose_params(FormatId::kInt8, range.min, range.max).scale[0], 0.5f);  // without the rule too
}

TEST(RangeMethods, PowerOfTwoMinMseChoosesASmallerPowerOfTwo) {
  const Range range = compute_range(outlier_stats(), CalibMethod::kPowerOfTwoMinMse, FormatId::kXInt8);
  const float scale = choose_params(FormatId::kInt8, range.min, range.max).scale[0];
  int exponent = 0;
  EXPECT_EQ(std::frexp(scale, &exponent), 0.5f) << scale;  // a power of two
  EXPECT_LT(scale, 0.5f);
  EXPECT_GE(scale, 0.5f / 16);  // the search goes 4 steps below 2^k0
  EXPECT_EQ(range.max, 127 * scale);
}

TEST(RangeMethods, IndependentOfHowTheDataWasBatched) {
  const TensorStats other = collect(outlier_values(), 777);
  for (const CalibMethodTraits& traits : all_calib_methods()) {
    const Range a = compute_range(outlier_stats(), traits.method, FormatId::kXInt8);
    const Range b = compute_range(other, traits.method, FormatId::kXInt8);
    EXPECT_EQ(a.min, b.min) << traits.name;
    EXPECT_EQ(a.max, b.max) << traits.name;
  }
}

TEST(RangeMethods, EntropyUsesTheFormatsLevels) {
  // int16 has 65535 codes: no window of a 2048-bin histogram is wide enough to lose anything
  // to rounding, so there is nothing to trade clipping against: MinMax.
  const Range range = compute_range(outlier_stats(), CalibMethod::kEntropy, FormatId::kInt16);
  EXPECT_EQ(range.min, -50.0f);
  EXPECT_EQ(range.max, 50.0f);
}

TEST(RangeMethods, AsymmetricKeepsOneSidedDataOneSided) {
  std::vector<float> values = gaussian(50000, 11);
  for (float& v : values) v = std::abs(v);  // post-ReLU-like
  values.push_back(40.0f);
  const TensorStats stats = collect(values, values.size());
  for (CalibMethod method : {CalibMethod::kPercentile, CalibMethod::kEntropy, CalibMethod::kMinMse}) {
    // 99.99% of 50001 values: 5 lie above the threshold, so it clips the outlier.
    const Range range = compute_range(stats, method, FormatId::kUInt8, {.percentile = 99.99, .symmetric = false});
    EXPECT_EQ(range.min, 0.0f) << calib_method_traits(method).name;
    EXPECT_GT(range.max, kClipLow) << calib_method_traits(method).name;
    EXPECT_LT(range.max, 40.0f) << calib_method_traits(method).name;
  }
}

TEST(RangeMethods, EmptyStatsAndFloatFormats) {
  for (const CalibMethodTraits& traits : all_calib_methods()) {
    const Range empty = compute_range(TensorStats{}, traits.method, FormatId::kInt8);
    EXPECT_EQ(empty.min, 0.0f) << traits.name;
    EXPECT_EQ(empty.max, 0.0f) << traits.name;
    const Range bf16 = compute_range(outlier_stats(), traits.method, FormatId::kBFloat16);
    EXPECT_EQ(bf16.min, -50.0f) << traits.name;
    EXPECT_EQ(bf16.max, 50.0f) << traits.name;
  }
}

TEST(RangeMethods, PowerOfTwoAsymmetricSpendsEveryCodeOnOneSidedData) {
  // UseUnsignedReLU's case: 100000 values evenly in [0, 1) and one at 10. Squared errors by
  // hand (rounding: n s^2 / 12; clipping the outlier at c: (10 - c)^2):
  //   symmetric, codes -127..127: s = 1/8: 130; s = 1/16 (c = 7.94): 32.6 + 4.2; s = 1/32 (c = 3.97): 8.1 + 36.4
  //   asymmetric, codes 0..255 (zero point -128): s = 1/16: 32.6; s = 1/32 (c = 7.97): 8.1 + 4.1;
  //   s = 1/64 (c = 3.98): 2.0 + 36.2
  // so MinMSE takes 1/16 symmetric and 1/32 asymmetric: the same clipping, half the step.
  std::vector<float> values(100000);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) / static_cast<float>(values.size());
  values.push_back(10.0f);
  const TensorStats stats = collect(values, 4096);
  const Range symmetric = compute_range(stats, CalibMethod::kPowerOfTwoMinMse, FormatId::kXInt8);
  EXPECT_EQ(choose_params(FormatId::kXInt8, symmetric.min, symmetric.max).scale[0], 1.0f / 16);
  const Range asymmetric = compute_range(stats, CalibMethod::kPowerOfTwoMinMse, FormatId::kXInt8, {.symmetric = false});
  EXPECT_EQ(asymmetric.min, 0.0f);
  EXPECT_EQ(asymmetric.max, 255.0f / 32);
  const QuantParams params = choose_params(FormatId::kXInt8, asymmetric.min, asymmetric.max, {.symmetric = false});
  EXPECT_EQ(params.scale[0], 1.0f / 32);
  EXPECT_EQ(params.zero_point[0], -128);
  // NonOverflow: 10 / 255 rounded up to 1/16, the grid [0, 255 / 16] from zero point -128.
  const Range widest = compute_range(stats, CalibMethod::kPowerOfTwoNonOverflow, FormatId::kXInt8, {.symmetric = false});
  EXPECT_EQ(widest.min, 0.0f);
  EXPECT_EQ(widest.max, 255.0f / 16);
  // Data reaching below 0 puts its minimum on the lowest code as nearly as the grid allows:
  // [-1, 10] at 1/16 (11 / 255 rounded up): zero point round(-128 + 16) = -112.
  values.push_back(-1.0f);
  const TensorStats two_sided = collect(values, 4096);
  const Range shifted = compute_range(two_sided, CalibMethod::kPowerOfTwoNonOverflow, FormatId::kXInt8, {.symmetric = false});
  EXPECT_EQ(shifted.min, -1.0f);
  EXPECT_EQ(shifted.max, 239.0f / 16);
  EXPECT_EQ(choose_params(FormatId::kXInt8, shifted.min, shifted.max, {.symmetric = false}).zero_point[0], -112);
}

TEST(RangeMethods, BadOptionsAreBadInput) {
  for (double percentile : {30.0, 100.5, std::nan("")}) {
    EXPECT_THROW(compute_range(outlier_stats(), CalibMethod::kPercentile, FormatId::kInt8, {.percentile = percentile}),
                 Error);
  }
}

class StatsFileTest : public testing::TempDirTest {
 protected:
  static std::string read(const std::string& file) {
    std::ifstream in(file);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  static void write(const std::string& file, const std::string& text) { std::ofstream(file) << text; }
};

TEST_F(StatsFileTest, RoundTripIsExact) {
  CalibrationStats stats;
  stats.model_fingerprint = "sha256:0123";
  stats.samples = 8;
  stats.data_description = "8 images from data/ (224x224, mean/std ImageNet)";
  stats.tensors["/backbone/conv1/Conv_output_0"] = outlier_stats();
  stats.tensors["never \"seen\""] = TensorStats{.nan_count = 12};
  StatsCollector tiny;
  tiny.update(std::vector<float>{0.1f, -1e-7f, 3.3f});
  stats.tensors["tiny"] = tiny.stats();
  stats.ranks = {{"tiny", 1}, {"shape_of_tiny", 1}};  // ranks of non-float tensors are kept too

  const std::string file = path("stats.json");
  save_stats(stats, file);
  EXPECT_EQ(load_stats(file), stats);

  const std::string text = read(file);
  EXPECT_NE(text.find("\"format\": \"mixprec-stats\""), std::string::npos);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 8 + 1 + 3 + 2);  // header (ranks included), "tensors", one per tensor, closing
  EXPECT_LT(text.size(), 8000u);  // run-length coded: far below 3 x 2048 counts
}

// One value, 1.0: R = 2, w = 2^-9, bin = floor(1 / 2^-9) + 1024 = 1536, so the histogram is
// 1536 empty bins, a 1, and 511 empty bins.
std::string one_value_file() {
  return R"({"format": "mixprec-stats", "version": 1, "model_fingerprint": "", "samples": 1,
"data_description": "", "histogram_bins": 2048, "ranks": {}, "tensors": {
"x": {"min": 1.0, "max": 1.0, "count": 1, "nan_count": 0, "hist_range": 2.0, "hist": [-1536, 1, -511]}}})";
}

TEST_F(StatsFileTest, LoadsTheDocumentedLayout) {
  const std::string file = path("one.json");
  write(file, one_value_file());
  StatsCollector collector;
  collector.update(std::vector<float>{1.0f});
  EXPECT_EQ(load_stats(file).tensors.at("x"), collector.stats());
}

TEST_F(StatsFileTest, CorruptFilesAreBadInputNamingTheFile) {
  struct Corruption {
    std::string from, to, expected;
  };
  const std::string good = one_value_file();
  const std::vector<Corruption> corruptions = {
      {"\"tensors\": {", "\"tensors\": {{", "JSON"},
      {"mixprec-stats", "onnx", "format"},
      {"\"version\": 1", "\"version\": 2", "version"},
      {"\"count\": 1", "\"count\": 2", "histogram holds 1 values, count says 2"},
      {"\"count\": 1", "\"count\": -1", "tensors.x.count must be a non-negative integer"},
      {"-511]", "-512]", "more than 2048 bins"},
      {"-511]", "-510]", "holds 2047 bins"},
      {"[-1536", "[-1536.5", "must hold integers"},
      {"\"min\": 1.0", "\"min\": \"one\"", "tensors.x.min must be a finite number"},
      {"\"hist_range\": 2.0", "\"hist_range\": 3.0", "power of two"},
      {"\"nan_count\": 0,", "", "tensors.x.nan_count is missing"},
      {"\"nan_count\": 0", "\"nan_count\": 0, \"mean\": 1", "tensors.x.mean is not a statistics key"},
      {"\"histogram_bins\": 2048", "\"histogram_bins\": 1024", "histogram_bins must be 2048"},
  };
  const std::string file = path("corrupt.json");
  for (const Corruption& corruption : corruptions) {
    std::string text = good;
    const size_t at = text.find(corruption.from);
    ASSERT_NE(at, std::string::npos) << corruption.from;
    text.replace(at, corruption.from.size(), corruption.to);
    write(file, text);
    try {
      load_stats(file);
      FAIL() << "loaded with " << corruption.to;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kBadInput) << e.what();
      EXPECT_EQ(e.file(), file);
      EXPECT_NE(std::string(e.what()).find(file + ": "), std::string::npos) << e.what();
      EXPECT_NE(e.message().find(corruption.expected), std::string::npos) << e.message();
    }
  }
}

TEST_F(StatsFileTest, MissingFileIsIoError) {
  try {
    load_stats(path("absent.json"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
    EXPECT_EQ(e.file(), path("absent.json"));
  }
}

}  // namespace
}  // namespace mixprec
