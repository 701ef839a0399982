// BFP and MX fake quantization (see mixprec/block_formats.h for the contract).
#include "mixprec/block_formats.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <vector>

#include "common/text.h"
#include "mixprec/tensor.h"

namespace mixprec {
namespace {

constexpr uint32_t kExponentMask = 0x7f800000u;
constexpr uint32_t kMantissaMask = 0x007fffffu;
constexpr uint32_t kSignMask = 0x80000000u;
constexpr int kMantissaBits = 23;  // float32's stored mantissa
constexpr int kExponentBias = 127;

constexpr MxElementTraits kMxElements[] = {
    // id                  name        ebits mbits emax max_norm
    {MxElement::kInt8,     "int8",     0,    8,    0,   127.0f},
    {MxElement::kFp8E4M3,  "fp8_e4m3", 4,    3,    8,   448.0f},
    {MxElement::kFp8E5M2,  "fp8_e5m2", 5,    2,    15,  57344.0f},
    {MxElement::kFp6E3M2,  "fp6_e3m2", 3,    2,    4,   28.0f},
    {MxElement::kFp6E2M3,  "fp6_e2m3", 2,    3,    2,   7.5f},
    {MxElement::kFp4E2M1,  "fp4_e2m1", 2,    1,    2,   6.0f},
};
static_assert(std::size(kMxElements) == static_cast<size_t>(MxElement::kFp4E2M1) + 1);

uint32_t biased_exponent(float x) { return (std::bit_cast<uint32_t>(x) & kExponentMask) >> kMantissaBits; }

// The shared exponent of to_bfp and MX: the largest biased exponent, Inf/NaN counted as 0.
uint32_t shared_exponent_finite(std::span<const float> block) {
  uint32_t shared = 0;
  for (float x : block) {
    const uint32_t e = biased_exponent(x);
    if (e != 0xff) shared = std::max(shared, e);
  }
  return shared;
}

uint32_t max_exponent(std::span<const float> values) {
  uint32_t shared = 0;
  for (float x : values) shared = std::max(shared, biased_exponent(x));
  return shared;
}

// 2^e as a float (exact down to 2^-149).
// 2^e as a double, built from its bits (std::ldexp is a library call per use, which the
// per-sub-block loop of to_bfp_prime paid for every two values). Exact for e in [-1022, 1023],
// which every exponent of a float's blocks lies in.
double pow2_double(int e) {
  assert(e >= -1022 && e <= 1023);
  return std::bit_cast<double>(static_cast<uint64_t>(e + 1023) << 52);
}

float pow2(int e) { return static_cast<float>(pow2_double(e)); }

// x rounded to an integer value by `mode`, for |x| < 2^22 (the codes here stay below 2^8):
// adding and taking away 1.5 * 2^23 leaves x rounded half to even by the float addition itself
// (no library call), and ties are then moved as the mode says.
float round_by(float x, BlockRounding mode) {
  constexpr float kRoundingShift = 12582912.0f;  // 1.5 * 2^23
  float r = (x + kRoundingShift) - kRoundingShift;
  if (mode != BlockRounding::kHalfToEven && std::fabs(x - r) == 0.5f) {
    // A tie: away from zero, or toward +infinity.
    r = mode == BlockRounding::kHalfAwayFromZero ? x + std::copysign(0.5f, x) : x + 0.5f;
  }
  return std::copysign(r, x);  // -0.3 rounds to -0, as std::round gives
}

// The integer x >> tail_bits rounded by `mode` on the dropped bits (`negative` is the value's
// sign, for ties toward +infinity); results equal to `upper` are not rounded up.
uint32_t shift_round(uint32_t x, uint32_t tail_bits, uint32_t upper, bool negative, BlockRounding mode) {
  if (tail_bits == 0) return x;
  if (tail_bits > 25) return 0;  // below half of the smallest step even for a 24-bit mantissa
  const uint32_t kept = x >> tail_bits;
  if (kept == upper) return kept;
  const uint32_t half = 1u << (tail_bits - 1);
  const uint32_t tail = x & ((1u << tail_bits) - 1);
  if (tail < half) return kept;
  if (tail > half) return kept + 1;
  switch (mode) {
    case BlockRounding::kHalfAwayFromZero: return kept + 1;
    case BlockRounding::kHalfUp: return negative ? kept : kept + 1;
    case BlockRounding::kHalfToEven: return (kept & 1u) ? kept + 1 : kept;
  }
  return kept;
}

void to_bfp(std::span<const float> in, std::span<float> out, const BfpSpec& spec) {
  uint32_t shared = shared_exponent_finite(in);
  const int mantissa_bits = static_cast<int>(spec.bit_width) - 9;
  int exponent = static_cast<int>(shared) - kExponentBias;
  float scale = pow2(exponent - (mantissa_bits - 1));
  float lowest = 0, highest = 0;
  if (spec.compiler_kernel) {
    // A largest-exponent element that rounds to a code outside [-128, 128) raises the exponent.
    for (float x : in) {
      if (biased_exponent(x) != shared) continue;
      const float code = round_by(x / scale, spec.rounding);
      if (code >= 128 || code < -128) {
        ++exponent;
        scale *= 2.0f;
        break;
      }
    }
    highest = static_cast<float>(std::ldexp(1.0, exponent) * (std::ldexp(1.0, mantissa_bits) - 1));
    lowest = static_cast<float>(-std::ldexp(1.0, exponent) * std::ldexp(1.0, mantissa_bits));
  } else {
    // In double, as Quark's kernel: 2^128 - scale still fits a float when E is 254.
    highest = static_cast<float>(std::ldexp(1.0, exponent + 1) - static_cast<double>(scale));
    lowest = -highest;
  }
  for (size_t i = 0; i < in.size(); ++i) {
    const float x = in[i];
    if (biased_exponent(x) == 0xff) {
      out[i] = x;
      continue;
    }
    out[i] = std::clamp(round_by(x / scale, spec.rounding) * scale, lowest, highest);
  }
}

void to_bfp_prime(std::span<const float> in, std::span<float> out, const BfpSpec& spec) {
  const uint32_t mantissa_bits = static_cast<uint32_t>(spec.bit_width - 9);
  const uint32_t shared = max_exponent(in);
  const uint32_t shift_limit = (1u << spec.sub_block_shift_bits) - 1;
  const uint32_t upper = (1u << (mantissa_bits + 1)) - 1;
  const size_t sub = static_cast<size_t>(spec.sub_block_size);
  for (size_t start = 0; start < in.size(); start += sub) {
    const uint32_t sub_max = max_exponent(in.subspan(start, sub));
    const uint32_t shift = std::min(shared - sub_max, shift_limit);
    // A code's weight: (-1)^s * 2^(E - bias - shift + 1 - m) * code.
    const int step = static_cast<int>(shared) - kExponentBias - static_cast<int>(shift) + 1 - static_cast<int>(mantissa_bits);
    const double unit = pow2_double(step);
    for (size_t i = start; i < start + sub; ++i) {
      const uint32_t bits = std::bit_cast<uint32_t>(in[i]);
      const uint32_t e = (bits & kExponentMask) >> kMantissaBits;
      // Subnormals flush to zero; normal values get their implicit leading 1.
      const uint32_t mantissa = e == 0 ? 0 : (bits & kMantissaMask) | (1u << kMantissaBits);
      const bool negative = (bits & kSignMask) != 0;
      const uint32_t tail = shared - shift - e + kMantissaBits - mantissa_bits + 1;
      const uint32_t code = shift_round(mantissa, tail, upper, negative, spec.rounding);
      if (shared == 0xff) {
        out[i] = std::bit_cast<float>(0x7fffffffu);
        continue;
      }
      const double magnitude = unit * static_cast<double>(code);
      out[i] = static_cast<float>(negative ? -magnitude : magnitude);
    }
  }
}

// Lines along `axis`: outer x line x inner, blocks along the line.
struct Lines {
  int64_t outer = 1, length = 1, inner = 1;
};

Lines lines_of(std::span<const int64_t> shape, int64_t axis) {
  Lines lines;
  if (shape.size() == 1) {
    lines.length = shape[0];
    return lines;
  }
  const int64_t rank = static_cast<int64_t>(shape.size());
  if (axis < 0) axis += rank;
  assert(axis >= 0 && axis < rank);
  for (int64_t d = 0; d < rank; ++d) {
    if (d < axis) lines.outer *= shape[d];
    if (d == axis) lines.length = shape[d];
    if (d > axis) lines.inner *= shape[d];
  }
  return lines;
}

// Blocks along the axis are strided by `inner` in memory: they are gathered kChunk
// neighbouring lines at a time (contiguous runs of kChunk values per row), processed, and
// scattered back the same way, so memory is read and written in order. One work unit is one
// such chunk of lines of one outer index, whole along the axis.
constexpr int64_t kChunk = 64;

size_t units_of(const Lines& lines) {
  return static_cast<size_t>(lines.outer * ((lines.inner + kChunk - 1) / kChunk));
}

template <class BlockFn>
void quantize_unit(std::span<const float> values, const Lines& lines, int64_t block_size, std::span<float> out,
                   size_t unit, const BlockFn& block_fn) {
  const int64_t chunks = (lines.inner + kChunk - 1) / kChunk;
  const int64_t o = static_cast<int64_t>(unit) / chunks;
  const int64_t i0 = (static_cast<int64_t>(unit) % chunks) * kChunk;
  const int64_t n = std::min<int64_t>(kChunk, lines.inner - i0);
  const size_t block = static_cast<size_t>(block_size);
  std::vector<float> in_blocks(block * static_cast<size_t>(n)), out_blocks(block * static_cast<size_t>(n));
  const int64_t line_base = o * lines.length * lines.inner + i0;
  for (int64_t start = 0; start < lines.length; start += block_size) {
    const int64_t count = std::min<int64_t>(block_size, lines.length - start);
    for (int64_t k = 0; k < block_size; ++k) {
      const float* row = k < count ? values.data() + line_base + (start + k) * lines.inner : nullptr;
      for (int64_t j = 0; j < n; ++j) in_blocks[static_cast<size_t>(j) * block + static_cast<size_t>(k)] = row ? row[j] : 0.0f;
    }
    for (int64_t j = 0; j < n; ++j) {
      const size_t at = static_cast<size_t>(j) * block;
      block_fn(std::span<float>(in_blocks.data() + at, block), std::span<float>(out_blocks.data() + at, block));
    }
    for (int64_t k = 0; k < count; ++k) {
      float* row = out.data() + line_base + (start + k) * lines.inner;
      for (int64_t j = 0; j < n; ++j) row[j] = out_blocks[static_cast<size_t>(j) * block + static_cast<size_t>(k)];
    }
  }
}

}  // namespace

const MxElementTraits& mx_element_traits(MxElement element) { return kMxElements[static_cast<size_t>(element)]; }
std::span<const MxElementTraits> all_mx_elements() { return kMxElements; }

bool mx_element_from_name(std::string_view name, MxElement* out) {
  for (const MxElementTraits& row : kMxElements) {
    if (name == row.name) {
      *out = row.id;
      return true;
    }
  }
  return false;
}

std::string mx_element_names() {
  std::vector<std::string> names;
  for (const MxElementTraits& row : kMxElements) names.emplace_back(row.name);
  return text::join(names);
}

std::string check_spec(const BfpSpec& spec) {
  if (spec.bit_width < 10 || spec.bit_width > 16) {
    return "bit_width " + std::to_string(spec.bit_width) + " is outside [10, 16]";
  }
  if (spec.block_size < 1 || spec.block_size > (1 << 20)) return "block_size must be in [1, 1048576]";
  if (static_cast<int>(spec.rounding) > 2) return "rounding_mode must be 0, 1 or 2";
  if (spec.method == BfpMethod::kBfpPrime) {
    if (spec.sub_block_size < 1 || spec.block_size % spec.sub_block_size != 0) {
      return "sub_block_size " + std::to_string(spec.sub_block_size) + " must divide block_size " +
             std::to_string(spec.block_size);
    }
    if (spec.sub_block_shift_bits < 0 || spec.sub_block_shift_bits > 8) return "sub_block_shift_bits must be in [0, 8]";
  }
  return "";
}

std::string check_spec(const MxSpec& spec) {
  if (spec.block_size < 1 || spec.block_size > (1 << 20)) return "block_size must be in [1, 1048576]";
  if (static_cast<int>(spec.rounding) > 2) return "rounding_mode must be 0, 1 or 2";
  return "";
}

void bfp_block(std::span<const float> in, std::span<float> out, const BfpSpec& spec) {
  assert(in.size() == out.size() && static_cast<int64_t>(in.size()) == spec.block_size);
  if (spec.method == BfpMethod::kBfp) {
    to_bfp(in, out, spec);
  } else {
    to_bfp_prime(in, out, spec);
  }
}

void mx_block(std::span<const float> in, std::span<float> out, const MxSpec& spec) {
  assert(in.size() == out.size() && static_cast<int64_t>(in.size()) == spec.block_size);
  const MxElementTraits& element = mx_element_traits(spec.element);
  const int exponent = static_cast<int>(shared_exponent_finite(in)) - kExponentBias - element.emax;
  const float scale = pow2(exponent);  // E8M0
  constexpr float kInt8Step = 1.0f / 64;  // MXINT8's implicit scale 2^-6
  for (size_t i = 0; i < in.size(); ++i) {
    const float x = in[i];
    if (biased_exponent(x) == 0xff) {
      out[i] = x;
      continue;
    }
    float v = x / scale;
    if (element.ebits > 0) {
      v = round_to_minifloat(v, element.ebits, element.mbits, element.max_norm);
    } else {
      v = std::clamp(round_by(v / kInt8Step, spec.rounding), -128.0f, 127.0f) * kInt8Step;
    }
    out[i] = scale * v;
  }
}

size_t block_work_units(std::span<const int64_t> shape, int64_t axis, size_t count) {
  return count <= 1 ? 1 : units_of(lines_of(shape, axis));
}

void bfp_fake_quantize_unit(std::span<const float> values, std::span<const int64_t> shape, int64_t axis,
                            const BfpSpec& spec, std::span<float> out, size_t unit) {
  const auto to_bfloat16 = [&spec](float x) {
    return spec.round_to_bfloat16_first ? bfloat16_to_float(float_to_bfloat16(x)) : x;
  };
  if (values.size() == 1) {
    out[0] = to_bfloat16(values[0]);
    return;
  }
  quantize_unit(values, lines_of(shape, axis), spec.block_size, out, unit,
                [&](std::span<float> in, std::span<float> o) {
                  if (spec.round_to_bfloat16_first) {
                    for (float& x : in) x = to_bfloat16(x);
                  }
                  bfp_block(in, o, spec);
                });
}

void mx_fake_quantize_unit(std::span<const float> values, std::span<const int64_t> shape, int64_t axis,
                           const MxSpec& spec, std::span<float> out, size_t unit) {
  if (values.size() == 1) {
    out[0] = values[0];
    return;
  }
  quantize_unit(values, lines_of(shape, axis), spec.block_size, out, unit,
                [&spec](std::span<float> in, std::span<float> o) { mx_block(in, o, spec); });
}

void bfp_fake_quantize(std::span<const float> values, std::span<const int64_t> shape, int64_t axis,
                       const BfpSpec& spec, std::span<float> out) {
  const size_t units = block_work_units(shape, axis, values.size());
  for (size_t u = 0; u < units; ++u) bfp_fake_quantize_unit(values, shape, axis, spec, out, u);
}

void mx_fake_quantize(std::span<const float> values, std::span<const int64_t> shape, int64_t axis,
                      const MxSpec& spec, std::span<float> out) {
  const size_t units = block_work_units(shape, axis, values.size());
  for (size_t u = 0; u < units; ++u) mx_fake_quantize_unit(values, shape, axis, spec, out, u);
}

}  // namespace mixprec
