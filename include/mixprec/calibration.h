// Calibration: per-tensor activation statistics collected in ONE streaming pass, and the
// range methods computed from them.
//
// Memory is fixed per tensor (min, max, a fixed-size histogram), whatever the number of
// samples: the histogram covers [-R, R) with kHistogramBins bins; when a value beyond R
// arrives, R doubles (adjacent bins merge pairwise) as many times as needed, so earlier data
// is never re-read. Because R is always a power of two and a bin index is computed exactly,
// merging is exact: the statistics are those of binning every value directly at the final R.
// So collection is deterministic, and more: the same values give the same statistics, bit for
// bit, however they are split into batches and in whatever order they arrive.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mixprec/formats.h"

namespace mixprec {

inline constexpr size_t kHistogramBins = 2048;
// The smallest R, so that a tensor of zeros still has a histogram. Below any meaningful
// activation magnitude; the bins are still 2^-34 wide there.
inline constexpr float kHistogramRangeMin = 1.0f / (1 << 24);

// What one pass learned about one tensor. Finite values only, except nan_count.
// Bin i covers [-R + i*w, -R + (i+1)*w) with w = 2R / kHistogramBins, so bin kHistogramBins / 2
// starts at 0. R is the smallest power of two >= kHistogramRangeMin with -R <= min and max < R
// (values of magnitude 2^127 and more, beyond the largest power of two a float holds, land in
// the edge bins).
struct TensorStats {
  float min = 0, max = 0;       // over every finite value seen (0, 0 before the first)
  uint64_t count = 0;           // finite values seen; always the sum of hist
  uint64_t nan_count = 0;       // NaN/Inf values (skipped by every statistic)
  float hist_range = 0;         // R: the histogram covers [-R, R)
  std::vector<uint64_t> hist;   // kHistogramBins counts (empty until the first finite value)

  bool operator==(const TensorStats&) const = default;
};

// Streaming collector for one tensor.
class StatsCollector {
 public:
  void update(std::span<const float> values);
  const TensorStats& stats() const { return stats_; }

 private:
  TensorStats stats_;
};

// Statistics of a whole model: tensor name -> stats, plus how they were made.
struct CalibrationStats {
  std::string model_fingerprint;  // set by the calibration driver; lets a user-given stats file be checked against the model
  uint64_t samples = 0;
  std::string data_description;
  std::map<std::string, TensorStats> tensors;
  // Rank of every tensor the pass saw (float or not): an opset upgrade needs ranks that
  // ONNX Runtime's static inference cannot always give, and a reused stats file must carry them.
  std::map<std::string, int64_t> ranks;
  // The first sample's shape of each float tensor the pass saw inside an If/Loop/Scan body:
  // shape inference does not reach into bodies, and the MAC estimate needs them.
  std::map<std::string, std::vector<int64_t>> body_shapes;

  bool operator==(const CalibrationStats&) const = default;
};

// JSON with a {"format": "mixprec-stats", "version": 1} header, one tensor per line so two
// files diff line by line; histograms are run-length coded (a negative number -n stands for n
// empty bins). Saving is atomic (kIo when the file cannot be written). Loading gives exactly
// the statistics that were saved; kIo when the file cannot be read, kBadInput naming the file
// and the offending key for anything else: not JSON, another format or version, a missing or
// mistyped field, a histogram that does not hold kHistogramBins bins summing to count.
void save_stats(const CalibrationStats& stats, const std::string& path);
CalibrationStats load_stats(const std::string& path);
// The same reading on the text of such a file; `label` names it in errors.
CalibrationStats parse_stats(std::string_view text, const std::string& label);

enum class CalibMethod : uint8_t {
  kMinMax,
  kPercentile,            // |x| percentile (default 99.999); both tails when asymmetric
  kEntropy,               // KL divergence (TensorRT style) over the histogram
  kMinMse,                // range minimising the quantization MSE over the histogram
  kPowerOfTwoNonOverflow, // MinMax, then the scale rounded up to 2^k (no value overflows)
  kPowerOfTwoMinMse,      // the 2^k scale with the smallest quantization MSE
};

// One row per method: name as in configs ("MinMax", "Percentile", "Entropy", "MinMSE",
// "PowerOfTwo_NonOverflow", "PowerOfTwo_MinMSE"), whether it yields power-of-two scales, and
// whether it reads the histogram (the others need only min and max).
struct CalibMethodTraits {
  CalibMethod method;
  const char* name;
  bool power_of_two;
  bool needs_histogram;
  // The method cuts by the histogram's shape (a KL divergence, a percentile), not by the
  // error it causes: on a bounded activation's output (an SE gate) it keeps at least the
  // observed range, since there are no outliers to cut (rewrite/qdq_pairs.cpp). The MSE
  // methods weigh the clipping error themselves and keep their range.
  bool keeps_bounded_range;
};
const CalibMethodTraits& calib_method_traits(CalibMethod method);
// The built-in methods in CalibMethod order, then the added ones (add_calib_method) in the
// order they were added.
std::vector<CalibMethodTraits> all_calib_methods();
std::optional<CalibMethod> calib_method_from_name(std::string_view name);
bool is_added_calib_method(CalibMethod method);

struct RangeOptions {
  double percentile = 99.999;  // Percentile only; must be in (50, 100]
  bool symmetric = true;       // the quantization the range is for (see compute_range)
};

// The float range [rmin, rmax] to quantize `stats` into `format` with `method`. The result
// always contains 0 and is finite; no values seen gives [0, 0]. Searches are deterministic
// (fixed candidate lists, ties go to the wider range).
//  MinMax:      [min, max].
//  Percentile:  symmetric: the `percentile` of |x|, interpolated within its bin; asymmetric:
//               the (100 - p) and p percentiles of x.
//  Entropy:     TensorRT's KL search: over clipping windows of the histogram (symmetric:
//               [-T, T]; asymmetric: [a*min, a*max] for a in (0, 1]) at least as many bins wide
//               as the format has codes in the window, the one minimising the KL divergence
//               between the clipped histogram (outliers piled into the edge bins) and its
//               quantized version (bins merged into code-sized groups and spread back over the
//               group's non-empty bins). A histogram narrower than that is kept whole.
//  MinMSE:      over the same windows (any width), the one whose quantize-dequantize (with the
//               parameters choose_params gives for it) has the least squared error summed over
//               the histogram's bin centres, clipping error included. Searched coarse to fine
//               (every k-th window, then the neighbours of the best): about 100 windows.
//  PowerOfTwo_NonOverflow: the MinMax scale rounded up to 2^k0.
//  PowerOfTwo_MinMSE:      of the scales 2^(k0-4) .. 2^k0, the one with the least squared error.
// Clipping methods keep the result inside [min, max] (then widened to 0), so a one-sided
// tensor keeps its sign. The power-of-two methods need symmetric quantization and return [-q*2^k, q*2^k] with q = symmetric_qmax(format), so that
// choose_params gives back exactly 2^k with or without its power-of-two option.
// kBadInput (no file) for options a method cannot honour: a power-of-two method with
// symmetric = false, a percentile outside (50, 100].
// Searches use the format's code range; float formats need no clipping and get MinMax.
// The histogram's resolution bounds the search: with R = 64 (outliers at 50) a bin is 1/16
// wide, and an int8 Entropy window (255 codes) is at least 128 bins: T >= 8.
struct Range {
  float min = 0, max = 0;
};
Range compute_range(const TensorStats& stats, CalibMethod method, FormatId format, const RangeOptions& options = {});

// Calibration methods added at run time (a plugin's, mixprec/plugins.h): from then on a config,
// --calib-method and guide's method sweep name them as they name the built-in ones. Their
// CalibMethod values follow the built-in ones, in the order they are added; they are the
// process's own (files name methods, never their numbers). Add them before any run starts: the
// table is read without a lock.
//   range: the float range of one tensor's statistics for `format` (a Q/DQ format; float formats
//   get MinMax without asking, as every method does). It may throw Error. compute_range checks
//   what it returns: a finite min <= max, widened to contain 0; a power-of-two method needs
//   symmetric quantization, as the built-in ones do.
struct AddedCalibMethod {
  std::string name;    // unique among all methods, built-in ones included
  std::string origin;  // who added it ("plugin calib-aciq"): named in its errors
  bool power_of_two = false;
  bool needs_histogram = true;
  bool keeps_bounded_range = false;
  std::function<Range(const TensorStats& stats, FormatId format, const RangeOptions& options)> range;
};
// kBadInput (no file) for an empty or taken name or a missing range function.
CalibMethod add_calib_method(AddedCalibMethod method);

}  // namespace mixprec
