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

// Which parameter an element of a row-major tensor uses: one for the tensor (axis -1), one per
// slice along `axis` (block 0), or one per block of `block` elements along `axis`, the
// parameters laid out row-major over the blocked shape (param_shape()).
struct ParamLayout {
  size_t count = 1;   // parameters
  size_t inner = 1;   // elements per step of the axis: product of the dims after it
  size_t length = 1;  // the axis' length
  size_t block = 0;   // elements per block along the axis; 0 = per channel
  size_t blocks = 1;  // blocks per line along the axis
  bool per_tensor = true;
  size_t index_of(size_t element) const {
    if (per_tensor) return 0;
    const size_t along = (element / inner) % length;
    if (block == 0) return along;
    const size_t outer = element / (inner * length);
    return (outer * blocks + along / block) * inner + element % inner;
  }
};

ParamLayout param_layout(const Shape& shape, int64_t axis, int64_t block_size) {
  ParamLayout layout;
  if (axis < 0) return layout;
  layout.per_tensor = false;
  layout.length = static_cast<size_t>(shape[static_cast<size_t>(axis)]);
  for (size_t d = static_cast<size_t>(axis) + 1; d < shape.size(); ++d) layout.inner *= static_cast<size_t>(shape[d]);
  if (block_size <= 0) {
    layout.count = layout.length;
    return layout;
  }
  layout.block = static_cast<size_t>(block_size);
  layout.blocks = (layout.length + layout.block - 1) / layout.block;
  size_t outer = 1;
  for (size_t d = 0; d < static_cast<size_t>(axis); ++d) outer *= static_cast<size_t>(shape[d]);
  layout.count = outer * layout.blocks * layout.inner;
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

Shape param_shape(const QuantParams& params, const Shape& shape) {
  if (params.axis < 0) return {};
  if (params.block_size <= 0) return {static_cast<int64_t>(params.scale.size())};
  Shape blocked = shape;
  int64_t& dim = blocked[static_cast<size_t>(params.axis)];
  dim = (dim + params.block_size - 1) / params.block_size;
  return blocked;
}

QuantParams choose_params(FormatId format, float rmin, float rmax, const ParamOptions& given) {
  const FormatTraits& traits = format_traits(format);
  if (!traits.is_qdq) return {};
  ParamOptions options = given;
  options.symmetric = options.symmetric || !has_integer_codes(format);  // FP8's zero point is 0
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
  assert(format_traits(format).is_qdq);
  switch (format_traits(format).storage) {
    case DType::kFloat8E4M3FN: fp8_ebits_ = 4, fp8_mbits_ = 3; break;
    case DType::kFloat8E5M2: fp8_ebits_ = 5, fp8_mbits_ = 2; break;
    default: break;
  }
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
  if (!traits.is_qdq) return cast_round_trip(x, traits.storage);
  assert(channel < params.scale.size() && channel < params.zero_point.size());
  return Quantizer(format, params.scale[channel], params.zero_point[channel]).fake_quantize(x);
}

Tensor quantize_tensor(const Tensor& values, const QuantParams& params, FormatId format) {
  const FormatTraits& traits = format_traits(format);
  assert(dtype_traits(values.dtype()).is_float);
  if (traits.is_block) throw_internal("quantize_tensor: block formats are rounded along an axis (block_formats.h)");
  std::vector<float> floats = values.to_floats();
  if (!traits.is_qdq) return Tensor::from_floats(traits.storage, values.shape(), floats);

  const Shape& shape = values.shape();
  const bool axis_fits = params.axis < static_cast<int64_t>(shape.size());
  const ParamLayout layout = param_layout(shape, axis_fits ? params.axis : -1, params.block_size);
  if (!axis_fits || params.scale.size() != layout.count || params.zero_point.size() != layout.count) {
    throw_internal("quantize_tensor: " + std::to_string(params.scale.size()) + " scales and " +
                   std::to_string(params.zero_point.size()) + " zero points along axis " +
                   std::to_string(params.axis) + " (block size " + std::to_string(params.block_size) +
                   ") do not fit a tensor of shape " + shape_to_string(shape));
  }
  std::vector<Quantizer> quantizers;
  for (size_t c = 0; c < layout.count; ++c) quantizers.emplace_back(format, params.scale[c], params.zero_point[c]);
  for (size_t i = 0; i < floats.size(); ++i) floats[i] = quantizers[layout.index_of(i)].code(floats[i]);
  // The codes are on the storage type's grid (integers in its range, FP8 values), so this
  // conversion is exact.
  return Tensor::from_floats(traits.storage, shape, floats);
}

Tensor dequantize_tensor(const Tensor& codes, const QuantParams& params) {
  const Shape& shape = codes.shape();
  if (params.axis >= static_cast<int64_t>(shape.size())) {
    throw_bad_input("", "axis " + std::to_string(params.axis) + " is outside codes of shape " + shape_to_string(shape));
  }
  const ParamLayout layout = param_layout(shape, params.axis, params.block_size);
  const bool zeros_fit = params.zero_point.empty() || params.zero_point.size() == layout.count;
  if (params.scale.size() != layout.count || !zeros_fit) {
    throw_bad_input("", std::to_string(params.scale.size()) + " scales and " + std::to_string(params.zero_point.size()) +
                            " zero points for codes of shape " + shape_to_string(shape) + " along axis " +
                            std::to_string(params.axis) + " (block size " + std::to_string(params.block_size) +
                            ") that need " + std::to_string(layout.count));
  }
  const std::vector<float> q = codes.to_floats();
  Tensor out(DType::kFloat32, shape);
  std::span<float> values = out.as<float>();
  for (size_t i = 0; i < q.size(); ++i) {
    const size_t c = layout.index_of(i);
    const float zero = params.zero_point.empty() ? 0.0f : static_cast<float>(params.zero_point[c]);
    values[i] = (q[i] - zero) * params.scale[c];
  }
  return out;
}

QuantParams choose_weight_params(const Tensor& weight, FormatId format, int64_t axis, const ParamOptions& options) {
  const FormatTraits& traits = format_traits(format);
  const Shape& shape = weight.shape();
  if (axis < -1 || axis >= static_cast<int64_t>(shape.size())) {
    throw_bad_input("", "channel axis " + std::to_string(axis) + " is out of range for a weight of shape " +
                            shape_to_string(shape));
  }
  if (!traits.is_qdq) return {};
  if (axis >= 0 && !traits.per_channel_allowed) {
    throw_bad_input("", std::string(traits.spec_name) + " is per tensor: it has no per-channel parameters");
  }
  if (options.block_size < 0 || (options.block_size > 0 && axis < 0)) {
    throw_bad_input("", "block size " + std::to_string(options.block_size) + " needs a positive size and an axis");
  }

  const ParamLayout layout = param_layout(shape, axis, options.block_size);
  // +inf/-inf start values: a channel (block) with no (non-NaN) element keeps lo > hi and is
  // treated as all zeros below. NaN fails both comparisons, so it is skipped.
  std::vector<float> lo(layout.count, std::numeric_limits<float>::infinity());
  std::vector<float> hi(layout.count, -std::numeric_limits<float>::infinity());
  const std::vector<float> values = weight.to_floats();
  for (size_t i = 0; i < values.size(); ++i) {
    const size_t c = layout.index_of(i);
    if (values[i] < lo[c]) lo[c] = values[i];
    if (values[i] > hi[c]) hi[c] = values[i];
  }

  QuantParams params;
  params.axis = axis;
  params.block_size = options.block_size;
  for (size_t c = 0; c < layout.count; ++c) {
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

BiasFit raise_weight_scales_for_bias(const Tensor& bias, float input_scale, std::vector<float>& weight_scales,
                                     bool power_of_two) {
  const std::vector<float> values = bias.to_floats();
  BiasFit fit;
  if (weight_scales.size() != 1 && weight_scales.size() != values.size()) {
    throw_internal("raise_weight_scales_for_bias: " + std::to_string(weight_scales.size()) +
                   " weight scales for a bias of shape " + shape_to_string(bias.shape()));
  }
  // A little below INT32_MAX: the bias scale is stored as a float product, rounded either way.
  constexpr double kCodeLimit = static_cast<double>(std::numeric_limits<int32_t>::max()) * (1.0 - 1e-6);
  for (size_t c = 0; c < weight_scales.size(); ++c) {
    double largest = 0;  // |bias| this scale must reach
    for (size_t i = 0; i < values.size(); ++i) {
      if ((weight_scales.size() == 1 || i == c) && std::isfinite(values[i])) {
        largest = std::max(largest, std::fabs(static_cast<double>(values[i])));
      }
    }
    const double needed = largest / (static_cast<double>(input_scale) * kCodeLimit);
    const double old_scale = weight_scales[c];
    if (needed <= old_scale) continue;
    float raised = power_of_two ? std::exp2f(std::ceil(std::log2f(static_cast<float>(needed))))
                                : static_cast<float>(needed);
    while (static_cast<double>(raised) < needed) raised = std::nextafter(raised, std::numeric_limits<float>::infinity());
    weight_scales[c] = raised;
    ++fit.raised;
    fit.factor = std::max(fit.factor, static_cast<double>(raised) / old_scale);
  }
  return fit;
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
