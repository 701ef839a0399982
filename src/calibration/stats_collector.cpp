// Streaming min/max/histogram of one tensor. The contract, and why merging bins is exact, is
// in mixprec/calibration.h.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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

namespace {

struct Extremes {
  float lo = std::numeric_limits<float>::infinity();
  float hi = -std::numeric_limits<float>::infinity();
  uint64_t nonfinite = 0;
};

// min, max and the count of NaN/Inf in one pass written so the compiler vectorizes it: the
// extremes are only meaningful when nonfinite == 0 (the caller falls back otherwise).
Extremes scan_extremes(std::span<const float> values) {
  Extremes e;
  float lo = e.lo, hi = e.hi;
  uint32_t nonfinite = 0;  // per chunk, so the counter stays 32-bit lanes
  constexpr size_t kChunk = 1 << 20;
  for (size_t begin = 0; begin < values.size(); begin += kChunk) {
    const size_t end = std::min(values.size(), begin + kChunk);
    nonfinite = 0;
#pragma omp simd reduction(min : lo) reduction(max : hi) reduction(+ : nonfinite)
    for (size_t i = begin; i < end; ++i) {
      const float v = values[i];
      uint32_t bits;
      std::memcpy(&bits, &v, sizeof bits);
      nonfinite += (bits & 0x7f800000u) == 0x7f800000u;
      lo = v < lo ? v : lo;
      hi = v > hi ? v : hi;
    }
    e.nonfinite += nonfinite;
  }
  e.lo = lo;
  e.hi = hi;
  return e;
}

Extremes scan_extremes_slow(std::span<const float> values) {
  Extremes e;
  for (float value : values) {
    if (!std::isfinite(value)) {
      ++e.nonfinite;
      continue;
    }
    e.lo = std::min(e.lo, value);
    e.hi = std::max(e.hi, value);
  }
  return e;
}

// bins[i] = clamp(floor(values[i] * inverse_width) + kCentreBin, 0, kHistogramBins - 1), exactly
// as floor_to_int computes it, four values at a time with SSE2 (every x86-64 has it).
void compute_bins(const float* values, size_t n, double inverse_width, int32_t* bins) {
  constexpr int32_t kCentre = static_cast<int32_t>(kCentreBin);
  constexpr int32_t kLast = static_cast<int32_t>(kHistogramBins) - 1;
  size_t i = 0;
#if defined(__SSE2__)
  const __m128d inverse = _mm_set1_pd(inverse_width);
  const __m128i centre = _mm_set1_epi32(kCentre);
  const __m128i last = _mm_set1_epi32(kLast);
  const __m128i zero = _mm_setzero_si128();
  // floor of two doubles as two int32 in the low half: truncate, then step down where the
  // truncation went up (negative non-integers); the compare mask is -1 there.
  const auto floor2 = [](__m128d y) {
    const __m128i truncated = _mm_cvttpd_epi32(y);
    const __m128d above = _mm_cmpgt_pd(_mm_cvtepi32_pd(truncated), y);
    return _mm_add_epi32(truncated, _mm_shuffle_epi32(_mm_castpd_si128(above), _MM_SHUFFLE(3, 3, 2, 0)));
  };
  for (; i + 4 <= n; i += 4) {
    const __m128 v = _mm_loadu_ps(values + i);
    const __m128i low = floor2(_mm_mul_pd(_mm_cvtps_pd(v), inverse));
    const __m128i high = floor2(_mm_mul_pd(_mm_cvtps_pd(_mm_movehl_ps(v, v)), inverse));
    __m128i bin = _mm_add_epi32(_mm_unpacklo_epi64(low, high), centre);
    bin = _mm_andnot_si128(_mm_cmplt_epi32(bin, zero), bin);
    const __m128i beyond = _mm_cmpgt_epi32(bin, last);
    bin = _mm_or_si128(_mm_and_si128(beyond, last), _mm_andnot_si128(beyond, bin));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(bins + i), bin);
  }
#endif
  for (; i < n; ++i) {
    const int64_t bin = floor_to_int(static_cast<double>(values[i]) * inverse_width) + kCentre;
    bins[i] = static_cast<int32_t>(std::clamp<int64_t>(bin, 0, kLast));
  }
}

// Adds every (finite) value to `hist`. Bin indices are computed a chunk at a time with SIMD
// (|value / w| <= 2^11 here, so 32-bit integers hold them: R covers every value except beyond
// kHistogramRangeMax, where 1 / w is tiny); the counts go to four
// interleaved histograms, so runs of equal values (the zeros after a ReLU) do not serialize on
// one counter. Blocks of at most 2^30 values keep the 32-bit counters from overflowing.
void bin_finite(std::span<const float> values, double inverse_width, std::vector<uint64_t>& hist) {
  constexpr size_t kChunk = 256;
  constexpr size_t kWays = 4;
  constexpr size_t kBlock = size_t{1} << 30;
  std::vector<uint32_t> ways(kWays * kHistogramBins);
  int32_t bins[kChunk];
  for (size_t block = 0; block < values.size(); block += kBlock) {
    std::fill(ways.begin(), ways.end(), 0u);
    const size_t block_end = std::min(values.size(), block + kBlock);
    for (size_t begin = block; begin < block_end; begin += kChunk) {
      const size_t n = std::min(kChunk, block_end - begin);
      const float* chunk = values.data() + begin;
      compute_bins(chunk, n, inverse_width, bins);
      size_t i = 0;
      for (; i + kWays <= n; i += kWays) {
        for (size_t w = 0; w < kWays; ++w) ++ways[w * kHistogramBins + static_cast<size_t>(bins[i + w])];
      }
      for (; i < n; ++i) ++ways[static_cast<size_t>(bins[i])];
    }
    for (size_t b = 0; b < kHistogramBins; ++b) {
      for (size_t w = 0; w < kWays; ++w) hist[b] += ways[w * kHistogramBins + b];
    }
  }
}

}  // namespace

void StatsCollector::update(std::span<const float> values) {
  // This batch's extremes first, so R grows (and bins merge) at most once per batch.
  Extremes e = scan_extremes(values);
  const bool all_finite = e.nonfinite == 0;
  if (!all_finite) e = scan_extremes_slow(values);
  const uint64_t finite = values.size() - e.nonfinite;
  stats_.nan_count += e.nonfinite;
  if (finite == 0) return;
  const float lo = e.lo, hi = e.hi;

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
  if (all_finite) {
    bin_finite(values, inverse_width, stats_.hist);
  } else {
    constexpr auto kLastBin = static_cast<int64_t>(kHistogramBins) - 1;
    for (float value : values) {
      if (!std::isfinite(value)) continue;
      const int64_t bin = floor_to_int(static_cast<double>(value) * inverse_width) + kCentreBin;
      ++stats_.hist[static_cast<size_t>(std::clamp<int64_t>(bin, 0, kLastBin))];
    }
  }
  stats_.count += finite;
}

}  // namespace mixprec
