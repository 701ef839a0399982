// Streaming min/max/histogram of one tensor. The contract, and why merging bins is exact, is
// in mixprec/calibration.h.
#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "mixprec/calibration.h"

namespace mixprec {
namespace {

constexpr auto kCentreBin = static_cast<int64_t>(kHistogramBins / 2);
// The largest power of two a float holds: R stops doubling here.
constexpr float kHistogramRangeMax = 0x1p127f;

// The histogram after R doubled `doublings` times. Bin i holds the values with
// floor(x / w) = i - kCentreBin; at width w * 2^d their index is floor((i - kCentreBin) / 2^d),
// an arithmetic shift (C++20). Offsets fit in 11 bits, so capping the shift below the type's
// width changes nothing.
void widen(std::vector<uint64_t>& hist, int doublings) {
  const int shift = std::min(doublings, 63);
  std::vector<uint64_t> merged(kHistogramBins, 0);
  for (size_t i = 0; i < hist.size(); ++i) {
    const int64_t offset = static_cast<int64_t>(i) - kCentreBin;
    merged[static_cast<size_t>((offset >> shift) + kCentreBin)] += hist[i];
  }
  hist = std::move(merged);
}

// floor(x) for |x| < 2^63, without the libm call std::floor costs on baseline x86-64 (this
// runs once per activation value): truncate toward zero, then step down below zero.
int64_t floor_to_int(double x) {
  const auto truncated = static_cast<int64_t>(x);
  return static_cast<double>(truncated) > x ? truncated - 1 : truncated;
}

}  // namespace

void StatsCollector::update(std::span<const float> values) {
  // This batch's extremes first, so R grows (and bins merge) at most once per batch.
  float lo = std::numeric_limits<float>::infinity();
  float hi = -std::numeric_limits<float>::infinity();
  uint64_t finite = 0;
  for (float value : values) {
    if (!std::isfinite(value)) continue;
    ++finite;
    lo = std::min(lo, value);
    hi = std::max(hi, value);
  }
  stats_.nan_count += values.size() - finite;
  if (finite == 0) return;

  if (stats_.hist.empty()) {
    stats_.min = lo;
    stats_.max = hi;
    stats_.hist.assign(kHistogramBins, 0);
    stats_.hist_range = kHistogramRangeMin;
  } else {
    stats_.min = std::min(stats_.min, lo);
    stats_.max = std::max(stats_.max, hi);
  }
  float range = stats_.hist_range;
  int doublings = 0;
  while ((stats_.min < -range || stats_.max >= range) && range < kHistogramRangeMax) {
    range *= 2;
    ++doublings;
  }
  if (doublings > 0) {
    widen(stats_.hist, doublings);
    stats_.hist_range = range;
  }

  // 1 / w = kCentreBin / R is a power of two, so x / w is exact in double for every float x
  // and floor() gives the true bin: what makes widen() exact. The clamp only acts on values
  // beyond kHistogramRangeMax.
  const double inverse_width = static_cast<double>(kCentreBin) / static_cast<double>(range);
  constexpr auto kLastBin = static_cast<int64_t>(kHistogramBins) - 1;
  for (float value : values) {
    if (!std::isfinite(value)) continue;
    const int64_t bin = floor_to_int(static_cast<double>(value) * inverse_width) + kCentreBin;
    ++stats_.hist[static_cast<size_t>(std::clamp<int64_t>(bin, 0, kLastBin))];
  }
  stats_.count += finite;
}

}  // namespace mixprec
