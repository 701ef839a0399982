// Scale / zero-point choice and the quantize-dequantize arithmetic of the integer formats; the
// cast round trip of the float formats. The contracts are in mixprec/formats.h.
#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstddef>
#include <limits>
#include <string>

#include "mixprec/error.h"
#include "mixprec/formats.h"

namespace mixprec {
namespace {

[[noreturn]] void throw_internal(const std::string& message) { throw Error(ErrorKind::kInternal, "", message); }

// A NaN bound stands for "unknown", so it becomes the extreme on its side; infinities are
// clamped to the largest finite magnitude.
double finite_bound(float bound, float extreme) {
  constexpr double kFloatMax = std::numeric_limits<float>::max();
  if (std::isnan(bound)) return extreme;
  return std::clamp(static_cast<double>(bound), -kFloatMax, kFloatMax);
}

// 2^ceil(log2(scale)) computed exactly (a log2 in floating point could land on the wrong side
// of an exact power of two): frexp gives scale = m * 2^e with m in [0.5, 1), and m == 0.5
// means scale already is 2^(e-1). `scale` must be > 0.
double round_up_to_power_of_two(double scale) {
  int exponent = 0;
  const double mantissa = std::frexp(scale, &exponent);
  return mantissa == 0.5 ? scale : std::ldexp(1.0, exponent);
}

// Which channel an element of a row-major tensor belongs to, for one scale per slice along
// `axis` (axis -1: a single channel).
struct ChannelLayout {
  size_t channels = 1;
  size_t inner = 1;  // elements per step of the axis: product of the dims after it
  size_t channel_of(size_t element) const { return (element / inner) % channels; }
};

ChannelLayout channel_layout(const Shape& shape, int64_t axis) {
  ChannelLayout layout;
  if (axis < 0) return layout;
  layout.channels = static_cast<size_t>(shape[static_cast<size_t>(axis)]);
  for (size_t d = static_cast<size_t>(axis) + 1; d < shape.size(); ++d) layout.inner *= static_cast<size_t>(shape[d]);
  return layout;
}

// One element through the cast pair storage(x) -> float, using the dtype table's conversions
// (round to nearest even for bf16/fp16, identity for fp32).
float cast_round_trip(float x, DType storage) {
  const DTypeTraits& traits = dtype_traits(storage);
  std::byte element[sizeof(float)];
  float back = 0;
  traits.from_float(&x, element, 1);
  traits.to_float(element, &back, 1);
  return back;
}

}  // namespace

int64_t symmetric_qmax(FormatId format) {
  const FormatTraits& traits = format_traits(format);
  return traits.qmin < 0 ? traits.qmax : (traits.qmax - traits.qmin) / 2;
}

QuantParams choose_params(FormatId format, float rmin, float rmax, const ParamOptions& options) {
  const FormatTraits& traits = format_traits(format);
  if (!traits.is_integer) return {};
  const double lo = std::min(finite_bound(rmin, std::numeric_limits<float>::lowest()), 0.0);
  const double hi = std::max(finite_bound(rmax, std::numeric_limits<float>::max()), 0.0);
  const auto qmin = static_cast<double>(traits.qmin);
  const auto qmax = static_cast<double>(traits.qmax);

  double scale = options.symmetric ? std::max(-lo, hi) / static_cast<double>(symmetric_qmax(format))
                                   : (hi - lo) / (qmax - qmin);
  // kMinScale is itself a power of two, so flooring first keeps the power-of-two rule intact
  // and keeps 0 away from round_up_to_power_of_two.
  scale = std::max(scale, static_cast<double>(kMinScale));
  if (traits.power_of_two_scale || options.power_of_two) scale = round_up_to_power_of_two(scale);
  const auto scale_used = static_cast<float>(scale);

  int32_t zero_point = 0;
  if (options.symmetric) {
    zero_point = traits.qmin < 0 ? 0 : static_cast<int32_t>((traits.qmin + traits.qmax + 1) / 2);
  } else {
    // From the float scale the graph will carry, so rmin lands on qmin as closely as it can.
    const double zero = std::nearbyint(qmin - lo / static_cast<double>(scale_used));
    zero_point = static_cast<int32_t>(std::clamp(zero, qmin, qmax));
  }
  return {{scale_used}, {zero_point}, -1};
}

Quantizer::Quantizer(FormatId format, float scale, int32_t zero_point)
    : scale_(scale),
      zero_point_(zero_point),
      qmin_(static_cast<float>(format_traits(format).qmin)),
      qmax_(static_cast<float>(format_traits(format).qmax)) {
  assert(format_traits(format).is_integer);
}

int32_t quantize_value(float x, float scale, int32_t zero_point, FormatId format) {
  return Quantizer(format, scale, zero_point).quantize(x);
}

void fake_quantize_blocks(const BlockFormat& block, std::span<const float> values, std::span<const int64_t> shape,
                          int64_t axis, std::span<float> out) {
  if (block.mx) {
    mx_fake_quantize(values, shape, axis, block.mx_spec, out);
  } else {
    bfp_fake_quantize(values, shape, axis, block.bfp, out);
  }
}

float fake_quantize_value(float x, const QuantParams& params, size_t channel, FormatId format) {
  const FormatTraits& traits = format_traits(format);
  if (const BlockFormat* block = block_format(format)) {
    // x alone in its block (the rest zeros): its own exponent is the block's.
    const int64_t size = block->mx ? block->mx_spec.block_size : block->bfp.block_size;
    std::vector<float> values(static_cast<size_t>(size), 0.0f);
    values[0] = x;
    fake_quantize_blocks(*block, values, std::vector<int64_t>{size}, 0, values);
    return values[0];
  }
  if (!traits.is_integer) return cast_round_trip(x, traits.storage);
  assert(channel < params.scale.size() && channel < params.zero_point.size());
  return Quantizer(format, params.scale[channel], params.zero_point[channel]).fake_quantize(x);
}

Tensor quantize_tensor(const Tensor& values, const QuantParams& params, FormatId format) {
  const FormatTraits& traits = format_traits(format);
  assert(dtype_traits(values.dtype()).is_float);
  if (traits.is_block) throw_internal("quantize_tensor: block formats are rounded along an axis (block_formats.h)");
  std::vector<float> floats = values.to_floats();
  if (!traits.is_integer) return Tensor::from_floats(traits.storage, values.shape(), floats);

  const Shape& shape = values.shape();
  const bool axis_fits = params.axis < static_cast<int64_t>(shape.size());
  const ChannelLayout layout = channel_layout(shape, axis_fits ? params.axis : -1);
  if (!axis_fits || params.scale.size() != layout.channels || params.zero_point.size() != layout.channels) {
    throw_internal("quantize_tensor: " + std::to_string(params.scale.size()) + " scales and " +
                   std::to_string(params.zero_point.size()) + " zero points along axis " +
                   std::to_string(params.axis) + " do not fit a tensor of shape " + shape_to_string(shape));
  }
  std::vector<Quantizer> quantizers;
  for (size_t c = 0; c < layout.channels; ++c) quantizers.emplace_back(format, params.scale[c], params.zero_point[c]);
  for (size_t i = 0; i < floats.size(); ++i) {
    floats[i] = static_cast<float>(quantizers[layout.channel_of(i)].quantize(floats[i]));
  }
  // The codes are integers inside the storage type's range, so this conversion is exact.
  return Tensor::from_floats(traits.storage, shape, floats);
}

QuantParams choose_weight_params(const Tensor& weight, FormatId format, int64_t axis, const ParamOptions& options) {
  const FormatTraits& traits = format_traits(format);
  const Shape& shape = weight.shape();
  if (axis < -1 || axis >= static_cast<int64_t>(shape.size())) {
    throw_bad_input("", "channel axis " + std::to_string(axis) + " is out of range for a weight of shape " +
                            shape_to_string(shape));
  }
  if (!traits.is_integer) return {};
  if (axis >= 0 && !traits.per_channel_allowed) {
    throw_bad_input("", std::string(traits.spec_name) + " is per tensor: it has no per-channel parameters");
  }

  const ChannelLayout layout = channel_layout(shape, axis);
  // +inf/-inf start values: a channel with no (non-NaN) element keeps lo > hi and is treated
  // as all zeros below. NaN fails both comparisons, so it is skipped.
  std::vector<float> lo(layout.channels, std::numeric_limits<float>::infinity());
  std::vector<float> hi(layout.channels, -std::numeric_limits<float>::infinity());
  const std::vector<float> values = weight.to_floats();
  for (size_t i = 0; i < values.size(); ++i) {
    const size_t c = layout.channel_of(i);
    if (values[i] < lo[c]) lo[c] = values[i];
    if (values[i] > hi[c]) hi[c] = values[i];
  }

  QuantParams params;
  params.axis = axis;
  for (size_t c = 0; c < layout.channels; ++c) {
    const bool empty = lo[c] > hi[c];
    const QuantParams channel = choose_params(format, empty ? 0.0f : lo[c], empty ? 0.0f : hi[c], options);
    params.scale.push_back(channel.scale[0]);
    params.zero_point.push_back(channel.zero_point[0]);
  }
  return params;
}

std::optional<size_t> saturating_bias_element(const Tensor& bias, std::span<const float> scales) {
  constexpr auto kCodeMax = static_cast<double>(std::numeric_limits<int32_t>::max());
  const std::vector<float> values = bias.to_floats();
  for (size_t i = 0; i < values.size(); ++i) {
    const double scale = scales[scales.size() == 1 ? 0 : i];
    // Rounding can take a code just past the limit to it; only a larger magnitude saturates.
    if (std::fabs(static_cast<double>(values[i]) / scale) > kCodeMax + 0.5) return i;
  }
  return std::nullopt;
}

Tensor quantize_bias(const Tensor& bias, std::span<const float> scales) {
  const std::vector<float> values = bias.to_floats();
  if (scales.size() != 1 && scales.size() != values.size()) {
    throw_internal("quantize_bias: " + std::to_string(scales.size()) + " scales for a bias of shape " +
                   shape_to_string(bias.shape()));
  }
  for (float scale : scales) {
    if (!(std::isfinite(scale) && scale > 0)) throw_internal("quantize_bias: scale " + std::to_string(scale));
  }
  constexpr auto kCodeMin = static_cast<double>(std::numeric_limits<int32_t>::min());
  constexpr auto kCodeMax = static_cast<double>(std::numeric_limits<int32_t>::max());
  Tensor codes(DType::kInt32, bias.shape());
  std::span<int32_t> out = codes.as<int32_t>();
  for (size_t i = 0; i < values.size(); ++i) {
    const double scale = scales[scales.size() == 1 ? 0 : i];
    const double code = std::nearbyint(static_cast<double>(values[i]) / scale);
    out[i] = std::isnan(code) ? 0 : static_cast<int32_t>(std::clamp(code, kCodeMin, kCodeMax));
  }
  return codes;
}

}  // namespace mixprec
