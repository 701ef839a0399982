// The calib-aciq plugin: ACIQ (Banner, Nahshan, Soudry 2019, "Post training 4-bit quantization
// of convolutional networks for rapid-deployment"), a calibration method that needs no search:
// it fits a Laplace distribution to the activation and clips where the expected quantization
// error is smallest.
//
// For a Laplace(mu, b) variable quantized uniformly with 2^M levels over [mu - alpha, mu +
// alpha], the expected squared error is about
//     2 b^2 exp(-alpha / b)          (clipping: the tails beyond alpha)
//   + alpha^2 / (3 * 4^M)            (rounding: a step of 2 alpha / 2^M, uniform error)
// and its derivative vanishes at alpha = t b with t e^t = 3 * 4^M (t = 9.89 for M = 8, 5.03
// for M = 4: the paper's table), solved here by Newton's method for any code count.
//
// From the histogram (bin centres): symmetric quantization fits around 0, b = E|x|, and clips
// at [-alpha, alpha]; asymmetric fits around the mean, b = E|x - mean|, and clips at
// [mean - alpha, mean + alpha]; both are then kept inside [min, max], so a one-sided tensor
// stays one-sided. (Fitting a one-sided tensor with the exponential instead, t e^t = 12 * 4^M,
// measured no better: det 320x320 U8S8 23.7 dB against 23.8.) FP8 grids are not uniform: they
// get [min, max].
//
// It speaks only the C interface of mixprec/plugin_abi.h and links nothing of mixprec.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "mixprec/plugin_abi.h"

namespace {

void set(char* out, size_t size, const std::string& text) {
  if (out == nullptr || size == 0) return;
  const size_t n = text.size() < size ? text.size() : size - 1;
  std::memcpy(out, text.data(), n);
  out[n] = '\0';
}

// The root of t e^t = c (c > 1): Newton on f(t) = t + ln t - ln c, which is increasing and
// concave, from t = ln c (f >= 0 there), so the iterates fall monotonically onto the root.
double clip_ratio(double c) {
  double t = std::log(c);
  for (int i = 0; i < 50; ++i) {
    const double step = (t + std::log(t) - std::log(c)) / (1 + 1 / t);
    t -= step;
    if (std::fabs(step) < 1e-12 * t) break;
  }
  return t;
}

extern "C" int aciq_range(void*, const MixprecTensorStats* stats, const MixprecFormatInfo* format, float* range_min,
                          float* range_max, char* error, size_t error_size) {
  *range_min = stats->min;
  *range_max = stats->max;
  if (!format->integer_codes || stats->count == 0 || stats->bin_count == 0) return 0;
  const double levels = static_cast<double>(format->qmax - format->qmin + 1);
  if (!(levels >= 2)) {
    set(error, error_size, std::string("format ") + format->name + " has fewer than 2 codes");
    return 1;
  }
  const double width = 2.0 * stats->range / static_cast<double>(stats->bin_count);
  const auto centre = [&](size_t i) { return -static_cast<double>(stats->range) + (static_cast<double>(i) + 0.5) * width; };
  double total = 0, sum = 0;
  for (size_t i = 0; i < stats->bin_count; ++i) {
    total += static_cast<double>(stats->bins[i]);
    sum += static_cast<double>(stats->bins[i]) * centre(i);
  }
  if (total <= 0) return 0;
  const double mean = format->symmetric ? 0.0 : sum / total;
  double deviation = 0;
  for (size_t i = 0; i < stats->bin_count; ++i) deviation += static_cast<double>(stats->bins[i]) * std::fabs(centre(i) - mean);
  const double b = deviation / total;
  if (!(b > 0)) return 0;  // a constant tensor: its range as seen
  // levels = 2^M, so 3 * 4^M = 3 * levels^2.
  const double alpha = clip_ratio(3.0 * levels * levels) * b;
  const double lo = format->symmetric ? -alpha : mean - alpha;
  const double hi = format->symmetric ? alpha : mean + alpha;
  *range_min = static_cast<float>(std::max<double>(lo, stats->min));
  *range_max = static_cast<float>(std::min<double>(hi, stats->max));
  return 0;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) uint32_t mixprec_plugin_abi_version(void) {
  return MIXPREC_PLUGIN_ABI_VERSION;
}

extern "C" __attribute__((visibility("default"))) int mixprec_plugin_register(MixprecRegistry* registry,
                                                                              const MixprecRegisterApi* api, char* error,
                                                                              size_t error_size) {
  char why[MIXPREC_PLUGIN_ERROR_MAX] = {0};
  if (api->add_calibration_method(registry, "ACIQ", MIXPREC_CALIB_NEEDS_HISTOGRAM | MIXPREC_CALIB_KEEPS_BOUNDED_RANGE,
                                  aciq_range, nullptr, why, sizeof why) != 0) {
    set(error, error_size, why);
    return 1;
  }
  return 0;
}
