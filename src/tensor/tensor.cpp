#include "mixprec/tensor.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <utility>

#include "mixprec/error.h"

namespace mixprec {
namespace {

// A codec maps one stored element to float and back; the templates below turn it into the
// row functions of the dtype table.
struct Float32Codec {
  using Storage = float;
  static float decode(float value) { return value; }
  static float encode(float value) { return value; }
};

// The narrow float types: a bit pattern and its two conversions.
template <typename Bits, float (*kDecode)(Bits), Bits (*kEncode)(float)>
struct BitsCodec {
  using Storage = Bits;
  static float decode(Bits bits) { return kDecode(bits); }
  static Bits encode(float value) { return kEncode(value); }
};
using Float16Codec = BitsCodec<uint16_t, half_to_float, float_to_half>;
using BFloat16Codec = BitsCodec<uint16_t, bfloat16_to_float, float_to_bfloat16>;
using Float8E4M3FNCodec = BitsCodec<uint8_t, float8e4m3fn_to_float, float_to_float8e4m3fn>;
using Float8E5M2Codec = BitsCodec<uint8_t, float8e5m2_to_float, float_to_float8e5m2>;

template <typename Int>
struct IntCodec {
  using Storage = Int;
  static float decode(Int value) { return static_cast<float>(value); }
  static Int encode(float value) {
    if (std::isnan(value)) return 0;
    // nearbyint rounds half to even in the default rounding mode. The float image of max()
    // rounds up to a power of two for 32/64-bit types, so compare with >= before casting.
    const float rounded = std::nearbyint(value);
    if (rounded <= static_cast<float>(std::numeric_limits<Int>::min())) return std::numeric_limits<Int>::min();
    if (rounded >= static_cast<float>(std::numeric_limits<Int>::max())) return std::numeric_limits<Int>::max();
    return static_cast<Int>(rounded);
  }
};

// 4-bit integers, one per byte in a Tensor (see pack_4bit for the ONNX layout).
template <typename Stored, int kMin, int kMax>
struct Int4Codec {
  using Storage = Stored;
  static float decode(Storage value) { return static_cast<float>(value); }
  static Storage encode(float value) {
    if (std::isnan(value)) return 0;
    return static_cast<Storage>(std::clamp(std::nearbyint(value), static_cast<float>(kMin), static_cast<float>(kMax)));
  }
};

struct BoolCodec {
  using Storage = uint8_t;
  static float decode(uint8_t value) { return value != 0 ? 1.0f : 0.0f; }
  static uint8_t encode(float value) { return value != 0.0f ? 1 : 0; }
};

// memcpy, not reinterpret_cast: element buffers (e.g. inside an npy image) may be unaligned.
template <typename Codec>
void row_to_float(const std::byte* elements, float* out, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    typename Codec::Storage stored;
    std::memcpy(&stored, elements + i * sizeof(stored), sizeof(stored));
    out[i] = Codec::decode(stored);
  }
}

template <typename Codec>
void row_from_float(const float* values, std::byte* out, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    const typename Codec::Storage stored = Codec::encode(values[i]);
    std::memcpy(out + i * sizeof(stored), &stored, sizeof(stored));
  }
}

template <typename Codec>
constexpr DTypeTraits row(DType dtype, const char* name, int32_t onnx_type, const char* npy_descr,
                          bool is_float, int bits = 8 * sizeof(typename Codec::Storage)) {
  return {dtype, name, sizeof(typename Codec::Storage), bits, onnx_type, npy_descr, is_float,
          &row_to_float<Codec>, &row_from_float<Codec>};
}

// ONNX element types newer than the onnx headers Debian ships (onnx.proto's TensorProto.DataType).
constexpr int32_t kOnnxFloat8E4M3FN = 17;
constexpr int32_t kOnnxFloat8E5M2 = 19;
constexpr int32_t kOnnxUInt4 = 21;
constexpr int32_t kOnnxInt4 = 22;

// Indexed by DType; numpy has no bfloat16, so it is stored as 2-byte void ("<V2"), the
// descr ml_dtypes' bfloat16 arrays get from np.save.
constexpr DTypeTraits kDTypeTable[] = {
    row<Float32Codec>(DType::kFloat32, "float32", onnx::TensorProto_DataType_FLOAT, "<f4", true),
    row<Float16Codec>(DType::kFloat16, "float16", onnx::TensorProto_DataType_FLOAT16, "<f2", true),
    row<BFloat16Codec>(DType::kBFloat16, "bfloat16", onnx::TensorProto_DataType_BFLOAT16, "<V2", true),
    row<IntCodec<int8_t>>(DType::kInt8, "int8", onnx::TensorProto_DataType_INT8, "|i1", false),
    row<IntCodec<uint8_t>>(DType::kUInt8, "uint8", onnx::TensorProto_DataType_UINT8, "|u1", false),
    row<IntCodec<int16_t>>(DType::kInt16, "int16", onnx::TensorProto_DataType_INT16, "<i2", false),
    row<IntCodec<uint16_t>>(DType::kUInt16, "uint16", onnx::TensorProto_DataType_UINT16, "<u2", false),
    row<IntCodec<int32_t>>(DType::kInt32, "int32", onnx::TensorProto_DataType_INT32, "<i4", false),
    row<IntCodec<int64_t>>(DType::kInt64, "int64", onnx::TensorProto_DataType_INT64, "<i8", false),
    row<BoolCodec>(DType::kBool, "bool", onnx::TensorProto_DataType_BOOL, "|b1", false),
    row<Float8E4M3FNCodec>(DType::kFloat8E4M3FN, "float8e4m3fn", kOnnxFloat8E4M3FN, "", true),
    row<Float8E5M2Codec>(DType::kFloat8E5M2, "float8e5m2", kOnnxFloat8E5M2, "", true),
    row<Int4Codec<int8_t, -8, 7>>(DType::kInt4, "int4", kOnnxInt4, "", false, 4),
    row<Int4Codec<uint8_t, 0, 15>>(DType::kUInt4, "uint4", kOnnxUInt4, "", false, 4),
};

constexpr bool table_is_indexed_by_dtype() {
  for (size_t i = 0; i < std::size(kDTypeTable); ++i) {
    if (static_cast<size_t>(kDTypeTable[i].dtype) != i) return false;
  }
  return std::size(kDTypeTable) == static_cast<size_t>(DType::kUInt4) + 1;
}
static_assert(table_is_indexed_by_dtype(), "kDTypeTable rows must follow the DType order");

[[noreturn]] void throw_internal(const std::string& message) {
  throw Error(ErrorKind::kInternal, "", message);
}

size_t byte_size_of(DType dtype, const Shape& shape) {
  const auto numel = static_cast<uint64_t>(shape_numel(shape));
  const size_t element_size = dtype_size(dtype);
  if (numel > std::numeric_limits<size_t>::max() / element_size) {
    throw_bad_input("", "tensor " + shape_to_string(shape) + " of " + dtype_name(dtype) + " is too large");
  }
  return static_cast<size_t>(numel) * element_size;
}

}  // namespace

const DTypeTraits& dtype_traits(DType dtype) { return kDTypeTable[static_cast<size_t>(dtype)]; }
std::span<const DTypeTraits> all_dtype_traits() { return kDTypeTable; }
size_t dtype_size(DType dtype) { return dtype_traits(dtype).size; }
const char* dtype_name(DType dtype) { return dtype_traits(dtype).name; }
int32_t dtype_to_onnx(DType dtype) { return dtype_traits(dtype).onnx_type; }

DType dtype_from_onnx(int32_t onnx_type) {
  for (const DTypeTraits& traits : kDTypeTable) {
    if (traits.onnx_type == onnx_type) return traits.dtype;
  }
  const std::string name = onnx::TensorProto_DataType_IsValid(onnx_type)
                         ? onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(onnx_type))
                         : "unknown";
  throw_unsupported("", "ONNX element type " + name + " (" + std::to_string(onnx_type) + ") is not supported");
}

bool dtype_from_name(std::string_view name, DType* out) {
  for (const DTypeTraits& traits : kDTypeTable) {
    if (name == traits.name) {
      *out = traits.dtype;
      return true;
    }
  }
  return false;
}

int64_t shape_numel(const Shape& shape) {
  if (std::any_of(shape.begin(), shape.end(), [](int64_t dim) { return dim < 0; })) {
    throw_internal("shape_numel of unresolved shape " + shape_to_string(shape));
  }
  // Zero first: a zero-size shape has 0 elements however large its other dims are.
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return 0;
  int64_t numel = 1;
  for (int64_t dim : shape) {
    if (numel > std::numeric_limits<int64_t>::max() / dim) {
      throw_bad_input("", "shape " + shape_to_string(shape) + " has more elements than fit in 64 bits");
    }
    numel *= dim;
  }
  return numel;
}

std::string shape_to_string(const Shape& shape) {
  if (shape.empty()) return "scalar";
  std::string text;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) text += 'x';
    text += shape[i] < 0 ? "?" : std::to_string(shape[i]);
  }
  return text;
}

Tensor::Tensor(DType dtype, Shape shape)
    : dtype_(dtype), shape_(std::move(shape)), data_(byte_size_of(dtype_, shape_)) {}

Tensor::Tensor(DType dtype, Shape shape, std::span<const std::byte> bytes) : Tensor(dtype, std::move(shape)) {
  if (bytes.size() != data_.size()) {
    throw_internal("Tensor " + shape_to_string(shape_) + " of " + dtype_name(dtype_) + " needs " +
                   std::to_string(data_.size()) + " bytes, got " + std::to_string(bytes.size()));
  }
  std::copy(bytes.begin(), bytes.end(), data_.begin());
}

Tensor Tensor::from_floats(Shape shape, std::span<const float> values) {
  return from_floats(DType::kFloat32, std::move(shape), values);
}

Tensor Tensor::from_floats(DType dtype, Shape shape, std::span<const float> values) {
  Tensor tensor(dtype, std::move(shape));
  if (values.size() != static_cast<size_t>(tensor.numel())) {
    throw_internal("Tensor::from_floats: shape " + shape_to_string(tensor.shape_) + " needs " +
                   std::to_string(tensor.numel()) + " values, got " + std::to_string(values.size()));
  }
  dtype_traits(dtype).from_float(values.data(), tensor.data(), values.size());
  return tensor;
}

std::vector<float> Tensor::to_floats() const {
  std::vector<float> values(static_cast<size_t>(numel()));
  dtype_traits(dtype_).to_float(data_.data(), values.data(), values.size());
  return values;
}

// The conversions work on bit patterns so that rounding does not depend on the FPU mode and
// NaN payloads survive. Both 16-bit formats share float's sign bit position (bit 31 -> 15).
uint16_t float_to_half(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const auto sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7FFFFFFFu;
  constexpr uint32_t kFloatInf = 0x7F800000u;
  constexpr uint32_t kHalfOverflow = 0x477FF000u;  // 65520: halfway past 65504, ties to inf
  constexpr uint32_t kHalfMinNormal = 0x38800000u;  // 2^-14
  if (magnitude > kFloatInf) {  // NaN: keep the top payload bits, force the quiet bit
    return static_cast<uint16_t>(sign | 0x7E00u | ((magnitude >> 13) & 0x3FFu));
  }
  if (magnitude >= kHalfOverflow) return static_cast<uint16_t>(sign | 0x7C00u);
  if (magnitude >= kHalfMinNormal) {
    // Rebias the exponent (127 -> 15) and round the 13 dropped bits to nearest even; a carry
    // out of the mantissa correctly bumps the exponent.
    const uint32_t odd = (magnitude >> 13) & 1u;
    const uint32_t rebiased = magnitude - ((127u - 15u) << 23) + 0xFFFu + odd;
    return static_cast<uint16_t>(sign | (rebiased >> 13));
  }
  // Subnormal half: the result counts units of 2^-24.
  const uint32_t exponent = magnitude >> 23;
  constexpr uint32_t kMinExponent = 127 - 25;  // below 2^-25 everything rounds to zero
  if (exponent < kMinExponent) return sign;
  const uint32_t mantissa = (magnitude & 0x7FFFFFu) | 0x800000u;
  const uint32_t shift = 126 - exponent;  // 14..24
  uint32_t units = mantissa >> shift;
  const uint32_t remainder = mantissa & ((1u << shift) - 1);
  const uint32_t halfway = 1u << (shift - 1);
  if (remainder > halfway || (remainder == halfway && (units & 1u) != 0)) ++units;
  return static_cast<uint16_t>(sign | units);
}

float half_to_float(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1Fu;
  uint32_t mantissa = bits & 0x3FFu;
  if (exponent == 0x1F) {  // inf, or NaN made quiet
    const uint32_t quiet = mantissa != 0 ? 0x400000u : 0u;
    return std::bit_cast<float>(sign | 0x7F800000u | quiet | (mantissa << 13));
  }
  if (exponent != 0) return std::bit_cast<float>(sign | ((exponent + 127 - 15) << 23) | (mantissa << 13));
  if (mantissa == 0) return std::bit_cast<float>(sign);
  // Subnormal half: normalise; every half subnormal is a normal float.
  uint32_t float_exponent = 127 - 15 + 1;
  while ((mantissa & 0x400u) == 0) {
    mantissa <<= 1;
    --float_exponent;
  }
  return std::bit_cast<float>(sign | (float_exponent << 23) | ((mantissa & 0x3FFu) << 13));
}

uint16_t float_to_bfloat16(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  // Round the 16 dropped bits to nearest even; overflow carries into inf as IEEE requires.
  const uint32_t odd = (bits >> 16) & 1u;
  return static_cast<uint16_t>((bits + 0x7FFFu + odd) >> 16);
}

float bfloat16_to_float(uint16_t bits) {
  const bool nan = (bits & 0x7FFFu) > 0x7F80u;
  return std::bit_cast<float>((static_cast<uint32_t>(bits) << 16) | (nan ? 0x400000u : 0u));
}

// Minifloat rounding on float32's bit pattern: keep the target's mantissa bits (fewer below its
// smallest normal exponent) and round the dropped ones half to even; a carry may move the value
// into the next binade, which the exponent absorbs.
float round_to_minifloat(float x, int ebits, int mbits, float max_norm) {
  constexpr int kMantissaBits = 23;
  constexpr int kExponentBias = 127;
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  int e = static_cast<int>((bits & 0x7f800000u) >> kMantissaBits);
  if (e == 0xff) return x;
  uint32_t mantissa = bits & 0x7fffffu;
  int width = kMantissaBits;  // bits the mantissa occupies, with its implicit 1 for normal values
  if (e != 0) {
    mantissa |= 1u << kMantissaBits;
    ++width;
  }
  const int target_exponent = e - kExponentBias + (1 << (ebits - 1)) - 1;
  const int subnormal_shift = target_exponent > 0 ? 0 : 1 - target_exponent;
  const int tail = kMantissaBits - mbits + subnormal_shift;
  if (tail >= 32) return std::bit_cast<float>(bits & 0x80000000u);  // below half the smallest subnormal
  const uint32_t dropped = mantissa & ((1u << tail) - 1);
  const uint32_t half = 1u << (tail - 1);
  mantissa >>= tail;
  if (dropped > half || (dropped == half && (mantissa & 1u) != 0)) ++mantissa;
  if (mantissa == 0) return std::bit_cast<float>(bits & 0x80000000u);
  mantissa <<= tail;
  if (mantissa >= (1u << width)) {  // rounding carried into the next binade
    if (e != 0) mantissa >>= 1;
    ++e;
  }
  float magnitude = std::bit_cast<float>((static_cast<uint32_t>(e) << kMantissaBits) + (mantissa & 0x7fffffu));
  magnitude = std::min(magnitude, max_norm);
  return std::bit_cast<float>(std::bit_cast<uint32_t>(magnitude) | (bits & 0x80000000u));
}

namespace {

// One FP8 layout: 1 sign, `kE` exponent and `kM` mantissa bits, bias 2^(kE-1) - 1. The rounded
// value is exact in the target, so its bit pattern follows from frexp.
template <int kE, int kM>
uint8_t float8_bits(float rounded) {
  const uint8_t sign = std::signbit(rounded) ? 0x80 : 0;
  const float magnitude = std::fabs(rounded);
  if (magnitude == 0.0f) return sign;
  constexpr int kBias = (1 << (kE - 1)) - 1;
  int exponent = 0;
  const float fraction = std::frexp(magnitude, &exponent);  // magnitude = fraction * 2^exponent
  const int unbiased = exponent - 1;
  if (unbiased < 1 - kBias) {  // subnormal: units of 2^(1 - bias - mbits)
    return static_cast<uint8_t>(sign | static_cast<uint8_t>(std::ldexp(magnitude, kBias - 1 + kM)));
  }
  const auto field = static_cast<uint8_t>(unbiased + kBias);
  const auto mantissa = static_cast<uint8_t>(std::ldexp(fraction * 2.0f - 1.0f, kM));
  return static_cast<uint8_t>(sign | (field << kM) | mantissa);
}

template <int kE, int kM>
float float8_value(uint8_t bits) {
  constexpr int kBias = (1 << (kE - 1)) - 1;
  const int field = (bits >> kM) & ((1 << kE) - 1);
  const int mantissa = bits & ((1 << kM) - 1);
  const float magnitude = field == 0 ? std::ldexp(static_cast<float>(mantissa), 1 - kBias - kM)
                                     : std::ldexp(1.0f + std::ldexp(static_cast<float>(mantissa), -kM), field - kBias);
  return (bits & 0x80) != 0 ? -magnitude : magnitude;
}

// ONNX's saturating cast to an FP8 layout: NaN to its NaN pattern, infinities to the largest
// finite pattern, finite values rounded onto the grid (saturated at `max`).
template <int kE, int kM, uint8_t kNan, uint8_t kLargest>
uint8_t to_float8(float value, float max) {
  const uint8_t sign = std::signbit(value) ? 0x80 : 0;
  if (std::isnan(value)) return sign | kNan;
  if (std::isinf(value)) return sign | kLargest;
  return float8_bits<kE, kM>(round_to_minifloat(value, kE, kM, max));
}

}  // namespace

uint8_t float_to_float8e4m3fn(float value) { return to_float8<4, 3, 0x7F, 0x7E>(value, 448.0f); }

float float8e4m3fn_to_float(uint8_t bits) {
  if ((bits & 0x7F) == 0x7F) return std::numeric_limits<float>::quiet_NaN();
  return float8_value<4, 3>(bits);
}

uint8_t float_to_float8e5m2(float value) { return to_float8<5, 2, 0x7E, 0x7B>(value, 57344.0f); }

float float8e5m2_to_float(uint8_t bits) {
  if ((bits & 0x7C) == 0x7C) {
    if ((bits & 0x03) != 0) return std::numeric_limits<float>::quiet_NaN();
    return (bits & 0x80) != 0 ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
  }
  return float8_value<5, 2>(bits);
}

std::vector<std::byte> pack_4bit(std::span<const std::byte> codes) {
  std::vector<std::byte> packed((codes.size() + 1) / 2);
  for (size_t i = 0; i < codes.size(); ++i) {
    const std::byte nibble = codes[i] & std::byte{0x0F};
    packed[i / 2] |= (i % 2 == 0) ? nibble : (nibble << 4);
  }
  return packed;
}

std::vector<std::byte> unpack_4bit(std::span<const std::byte> packed, size_t count, bool is_signed) {
  if (packed.size() != (count + 1) / 2) {
    throw_internal("unpack_4bit: " + std::to_string(count) + " elements need " + std::to_string((count + 1) / 2) +
                   " bytes, got " + std::to_string(packed.size()));
  }
  std::vector<std::byte> codes(count);
  for (size_t i = 0; i < count; ++i) {
    auto nibble = static_cast<uint8_t>((std::to_integer<uint8_t>(packed[i / 2]) >> (4 * (i % 2))) & 0x0F);
    if (is_signed && nibble >= 8) nibble = static_cast<uint8_t>(nibble | 0xF0);  // sign-extend
    codes[i] = std::byte{nibble};
  }
  return codes;
}

size_t onnx_byte_size(DType dtype, size_t count) {
  const DTypeTraits& traits = dtype_traits(dtype);
  return traits.bits == 4 ? (count + 1) / 2 : count * traits.size;
}

}  // namespace mixprec
