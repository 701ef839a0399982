#include "mixprec/tensor.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "mixprec/error.h"

namespace mixprec {
namespace {

float from_bits(uint32_t bits) { return std::bit_cast<float>(bits); }
uint32_t to_bits(float value) { return std::bit_cast<uint32_t>(value); }

template <typename F>
ErrorKind kind_of_error(F&& f) {
  try {
    f();
  } catch (const Error& error) {
    return error.kind();
  }
  ADD_FAILURE() << "no mixprec::Error thrown";
  return ErrorKind::kInternal;
}

TEST(TensorDType, TableMatchesOnnxNumbersAndNames) {
  struct Expected {
    DType dtype;
    int32_t onnx_type;  // onnx::TensorProto_DataType
    const char* name;
    size_t size;
  };
  const Expected expected[] = {
      {DType::kFloat32, 1, "float32", 4}, {DType::kUInt8, 2, "uint8", 1},   {DType::kInt8, 3, "int8", 1},
      {DType::kUInt16, 4, "uint16", 2},   {DType::kInt16, 5, "int16", 2},   {DType::kInt32, 6, "int32", 4},
      {DType::kInt64, 7, "int64", 8},     {DType::kBool, 9, "bool", 1},     {DType::kFloat16, 10, "float16", 2},
      {DType::kBFloat16, 16, "bfloat16", 2}, {DType::kFloat8E4M3FN, 17, "float8e4m3fn", 1},
      {DType::kFloat8E5M2, 19, "float8e5m2", 1}, {DType::kUInt4, 21, "uint4", 1}, {DType::kInt4, 22, "int4", 1},
  };
  ASSERT_EQ(all_dtype_traits().size(), std::size(expected));
  for (const Expected& row : expected) {
    EXPECT_EQ(dtype_traits(row.dtype).dtype, row.dtype);
    EXPECT_EQ(dtype_to_onnx(row.dtype), row.onnx_type) << row.name;
    EXPECT_EQ(dtype_from_onnx(row.onnx_type), row.dtype) << row.name;
    EXPECT_STREQ(dtype_name(row.dtype), row.name);
    EXPECT_EQ(dtype_size(row.dtype), row.size) << row.name;
    DType parsed = DType::kFloat32;
    ASSERT_TRUE(dtype_from_name(row.name, &parsed));
    EXPECT_EQ(parsed, row.dtype);
  }
}

TEST(TensorDType, RejectsTypesOutsideTheTable) {
  try {
    dtype_from_onnx(11);
    FAIL() << "DOUBLE accepted";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::kUnsupported);
    EXPECT_NE(error.message().find("DOUBLE"), std::string::npos) << error.what();
  }
  EXPECT_EQ(kind_of_error([] { dtype_from_onnx(1000); }), ErrorKind::kUnsupported);
  DType unused = DType::kFloat32;
  EXPECT_FALSE(dtype_from_name("float64", &unused));
}

TEST(TensorShape, CountsAndPrints) {
  EXPECT_EQ(shape_numel({}), 1);
  EXPECT_EQ(shape_numel({2, 3, 4}), 24);
  EXPECT_EQ(shape_numel({2, 0, 4}), 0);
  // Zero wins even when the other dims alone would overflow.
  EXPECT_EQ(shape_numel({int64_t{1} << 62, int64_t{1} << 62, 0}), 0);
  EXPECT_EQ(shape_to_string({}), "scalar");
  EXPECT_EQ(shape_to_string({1, 3, -1, -1}), "1x3x?x?");
  EXPECT_EQ(shape_to_string({7}), "7");
}

TEST(TensorShape, RejectsUnresolvedAndOverflowingShapes) {
  EXPECT_EQ(kind_of_error([] { shape_numel({1, -1}); }), ErrorKind::kInternal);
  EXPECT_EQ(kind_of_error([] { shape_numel({int64_t{1} << 62, 4}); }), ErrorKind::kBadInput);
  EXPECT_EQ(kind_of_error([] { Tensor(DType::kInt64, {int64_t{1} << 61, 2}); }), ErrorKind::kBadInput);
}

TEST(TensorBuffer, ConstructsZeroedAndCopies) {
  const Tensor zeros(DType::kInt16, {2, 3});
  EXPECT_EQ(zeros.numel(), 6);
  EXPECT_EQ(zeros.byte_size(), 12u);
  for (int16_t value : zeros.as<int16_t>()) EXPECT_EQ(value, 0);

  const int32_t values[] = {1, -2, 3};
  const Tensor copied(DType::kInt32, {3}, std::as_bytes(std::span(values)));
  EXPECT_EQ(copied.as<int32_t>()[1], -2);
  EXPECT_EQ(copied, copied);
  EXPECT_NE(copied, Tensor(DType::kInt32, {3}));
  EXPECT_NE(Tensor(DType::kInt32, {3}), Tensor(DType::kInt32, {1, 3}));

  EXPECT_EQ(kind_of_error([&] { Tensor(DType::kInt32, {2}, std::as_bytes(std::span(values))); }),
            ErrorKind::kInternal);
  EXPECT_EQ(Tensor(DType::kFloat32, {}).numel(), 1);
  EXPECT_EQ(Tensor(DType::kFloat32, {0, 5}).byte_size(), 0u);
}

TEST(TensorConvert, ToFloatsDecodesEveryDType) {
  const auto decode = [](DType dtype, std::vector<uint8_t> bytes) {
    const Tensor tensor(dtype, {static_cast<int64_t>(bytes.size() / dtype_size(dtype))},
                        std::as_bytes(std::span(bytes)));
    return tensor.to_floats();
  };
  using Floats = std::vector<float>;
  EXPECT_EQ(decode(DType::kInt8, {0x80, 0x7F, 0xFF}), (Floats{-128, 127, -1}));
  EXPECT_EQ(decode(DType::kUInt8, {0x80, 0xFF}), (Floats{128, 255}));
  EXPECT_EQ(decode(DType::kInt16, {0x00, 0x80, 0x2C, 0x01}), (Floats{-32768, 300}));
  EXPECT_EQ(decode(DType::kUInt16, {0xFF, 0xFF}), (Floats{65535}));
  EXPECT_EQ(decode(DType::kInt32, {0xFE, 0xFF, 0xFF, 0xFF}), (Floats{-2}));
  // -2^63 + 5 has no float of its own and rounds to -2^63.
  EXPECT_EQ(decode(DType::kInt64, {0x05, 0, 0, 0, 0, 0, 0, 0x80}), (Floats{-0x1p63f}));
  EXPECT_EQ(decode(DType::kBool, {0, 1, 2}), (Floats{0, 1, 1}));
  EXPECT_EQ(decode(DType::kFloat16, {0x00, 0x3C, 0x00, 0xC0}), (Floats{1, -2}));
  EXPECT_EQ(decode(DType::kBFloat16, {0x80, 0x3F, 0x40, 0xC0}), (Floats{1, -3}));
  EXPECT_EQ(decode(DType::kFloat32, {0x00, 0x00, 0x80, 0x3E}), (Floats{0.25f}));
}

TEST(TensorConvert, FromFloatsRoundsHalfToEvenAndSaturates) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const auto encode = [](DType dtype, std::vector<float> values) {
    return Tensor::from_floats(dtype, {static_cast<int64_t>(values.size())}, values).to_floats();
  };
  using Floats = std::vector<float>;
  EXPECT_EQ(encode(DType::kInt8, {-200, 200, 2.5f, 3.5f, -2.5f, 1.4f, nan}), (Floats{-128, 127, 2, 4, -2, 1, 0}));
  EXPECT_EQ(encode(DType::kUInt8, {-1, 255.6f, 254.5f}), (Floats{0, 255, 254}));
  EXPECT_EQ(encode(DType::kInt16, {-40000, 40000}), (Floats{-32768, 32767}));
  EXPECT_EQ(encode(DType::kUInt16, {70000, 0.5f}), (Floats{65535, 0}));

  // float(INT32_MAX) is 2^31, which does not fit; the clamp must still give INT32_MAX.
  const Tensor int32 = Tensor::from_floats(DType::kInt32, {3}, std::vector<float>{3e9f, -3e9f, 2147483520.0f});
  EXPECT_EQ(int32.as<int32_t>()[0], std::numeric_limits<int32_t>::max());
  EXPECT_EQ(int32.as<int32_t>()[1], std::numeric_limits<int32_t>::min());
  EXPECT_EQ(int32.as<int32_t>()[2], 2147483520);
  const Tensor int64 = Tensor::from_floats(DType::kInt64, {2}, std::vector<float>{1e19f, -1e19f});
  EXPECT_EQ(int64.as<int64_t>()[0], std::numeric_limits<int64_t>::max());
  EXPECT_EQ(int64.as<int64_t>()[1], std::numeric_limits<int64_t>::min());

  EXPECT_EQ(encode(DType::kBool, {0, -0.0f, 0.5f, -3, nan}), (Floats{0, 0, 1, 1, 1}));
  EXPECT_EQ(Tensor::from_floats({2}, std::vector<float>{1.5f, -2}).dtype(), DType::kFloat32);
  EXPECT_EQ(kind_of_error([] { Tensor::from_floats({3}, std::vector<float>{1}); }), ErrorKind::kInternal);
}

// Hand-worked FP8 patterns: 0.3 = 1.2 x 2^-2 keeps 3 (E4M3) or 2 (E5M2) mantissa bits, 1.2 -> 1.25
// either way: E4M3 0 0101 010 = 0x2A, E5M2 0 01101 01 = 0x35.
TEST(TensorFloat8, EncodesHandWorkedPatterns) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(float_to_float8e4m3fn(1.0f), 0x38);
  EXPECT_EQ(float_to_float8e4m3fn(0.3f), 0x2A);
  EXPECT_EQ(float_to_float8e4m3fn(-0.3f), 0xAA);
  EXPECT_EQ(float_to_float8e4m3fn(448.0f), 0x7E);
  EXPECT_EQ(float_to_float8e4m3fn(470.0f), 0x7E);  // past the largest value: saturates
  EXPECT_EQ(float_to_float8e4m3fn(-inf), 0xFE);
  EXPECT_EQ(float_to_float8e4m3fn(nan) & 0x7F, 0x7F);
  EXPECT_EQ(float_to_float8e4m3fn(0x1p-9f), 0x01);    // the smallest subnormal
  EXPECT_EQ(float_to_float8e4m3fn(0x1p-10f), 0x00);   // half of it: ties to even (0)
  EXPECT_EQ(float_to_float8e4m3fn(0x3p-10f), 0x02);   // 1.5 units: ties to even (2)
  EXPECT_EQ(float_to_float8e4m3fn(-0.0f), 0x80);
  EXPECT_EQ(float_to_float8e5m2(1.0f), 0x3C);
  EXPECT_EQ(float_to_float8e5m2(0.3f), 0x35);
  EXPECT_EQ(float_to_float8e5m2(57344.0f), 0x7B);
  EXPECT_EQ(float_to_float8e5m2(1e6f), 0x7B);
  EXPECT_EQ(float_to_float8e5m2(inf), 0x7B);
  EXPECT_EQ(float_to_float8e5m2(0x1p-16f), 0x01);
  EXPECT_TRUE(std::isnan(float8e5m2_to_float(float_to_float8e5m2(nan))));
  // Every pattern decodes and encodes back to itself (NaNs to a NaN).
  for (int bits = 0; bits < 256; ++bits) {
    const auto b = static_cast<uint8_t>(bits);
    const float e4m3 = float8e4m3fn_to_float(b);
    if (std::isnan(e4m3)) {
      EXPECT_EQ(b & 0x7F, 0x7F);
    } else {
      EXPECT_EQ(float_to_float8e4m3fn(e4m3), b) << bits;
    }
    const float e5m2 = float8e5m2_to_float(b);
    if (std::isnan(e5m2)) {
      EXPECT_TRUE((b & 0x7C) == 0x7C && (b & 0x03) != 0) << bits;
    } else if (!std::isinf(e5m2)) {
      EXPECT_EQ(float_to_float8e5m2(e5m2), b) << bits;
    }
  }
  EXPECT_EQ(float8e4m3fn_to_float(0x7E), 448.0f);
  EXPECT_EQ(float8e5m2_to_float(0x7C), inf);
}

// 4-bit codes: one per byte in a Tensor, two per byte in ONNX buffers, low nibble first.
TEST(TensorInt4, SaturatesAndPacksLowNibbleFirst) {
  const Tensor int4 = Tensor::from_floats(DType::kInt4, {4}, std::vector<float>{7.6f, -9.0f, 2.5f, -1.0f});
  EXPECT_EQ(int4.to_floats(), (std::vector<float>{7, -8, 2, -1}));
  const std::vector<std::byte> packed = pack_4bit({int4.data(), int4.byte_size()});
  ASSERT_EQ(packed.size(), 2u);
  EXPECT_EQ(std::to_integer<int>(packed[0]), 0x87);  // 7 low, -8 (0x8) high
  EXPECT_EQ(std::to_integer<int>(packed[1]), 0xF2);  // 2 low, -1 (0xF) high
  EXPECT_EQ(unpack_4bit(packed, 4, true), std::vector<std::byte>(int4.data(), int4.data() + 4));
  const Tensor uint4 = Tensor::from_floats(DType::kUInt4, {3}, std::vector<float>{15.0f, -1.0f, 3.0f});
  EXPECT_EQ(uint4.to_floats(), (std::vector<float>{15, 0, 3}));
  const std::vector<std::byte> odd = pack_4bit({uint4.data(), uint4.byte_size()});
  ASSERT_EQ(odd.size(), 2u);
  EXPECT_EQ(std::to_integer<int>(odd[0]), 0x0F);
  EXPECT_EQ(std::to_integer<int>(odd[1]), 0x03);  // the odd count leaves the high nibble 0
  EXPECT_EQ(Tensor(DType::kUInt4, {3}, unpack_4bit(odd, 3, false)).to_floats(), (std::vector<float>{15, 0, 3}));
  EXPECT_EQ(onnx_byte_size(DType::kInt4, 5), 3u);
  EXPECT_EQ(onnx_byte_size(DType::kFloat8E5M2, 5), 5u);
  EXPECT_EQ(kind_of_error([&] { unpack_4bit(odd, 5, false); }), ErrorKind::kInternal);
}

TEST(TensorHalf, RoundsToNearestEven) {
  EXPECT_EQ(float_to_half(1.0f), 0x3C00);
  EXPECT_EQ(float_to_half(-2.0f), 0xC000);
  EXPECT_EQ(float_to_half(65504.0f), 0x7BFF);  // largest half
  // 1/3 = 0x3EAAAAAB: 10-bit mantissa 0x155, dropped bits 0x0AAB < half an ulp, so it rounds down.
  EXPECT_EQ(float_to_half(1.0f / 3.0f), 0x3555);
  EXPECT_EQ(float_to_half(-1.0f / 3.0f), 0xB555);
  EXPECT_EQ(half_to_float(0x3555), 0.333251953125f);
  // Ties: 1 + 2^-11 lies halfway between 0x3C00 and 0x3C01 and goes to the even 0x3C00;
  // 1 + 3 * 2^-11 lies halfway between 0x3C01 and 0x3C02 and goes to 0x3C02.
  EXPECT_EQ(float_to_half(1.0f + 0x1p-11f), 0x3C00);
  EXPECT_EQ(float_to_half(1.0f + 3 * 0x1p-11f), 0x3C02);
  EXPECT_EQ(float_to_half(1.0f + 0x1p-11f + 0x1p-20f), 0x3C01);
}

TEST(TensorHalf, OverflowsToInfinity) {
  EXPECT_EQ(float_to_half(65519.0f), 0x7BFF);  // below the 65520 midpoint
  EXPECT_EQ(float_to_half(65520.0f), 0x7C00);  // midpoint to 65536: ties to even, i.e. inf
  EXPECT_EQ(float_to_half(-65520.0f), 0xFC00);
  EXPECT_EQ(float_to_half(1e10f), 0x7C00);
  EXPECT_EQ(float_to_half(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_EQ(half_to_float(0xFC00), -std::numeric_limits<float>::infinity());
}

TEST(TensorHalf, HandlesSubnormals) {
  EXPECT_EQ(float_to_half(0x1p-24f), 0x0001);         // smallest subnormal
  EXPECT_EQ(float_to_half(0x1p-25f), 0x0000);         // halfway to 0x0001: ties to even zero
  EXPECT_EQ(float_to_half(0x1.8p-25f), 0x0001);       // above halfway
  EXPECT_EQ(float_to_half(0x1.8p-24f), 0x0002);       // 1.5 units: ties to even 2
  EXPECT_EQ(float_to_half(0x1.4p-23f), 0x0002);       // 2.5 units: ties to even 2
  EXPECT_EQ(float_to_half(0x1p-14f - 0x1p-24f), 0x03FF);  // largest subnormal
  EXPECT_EQ(float_to_half(0x1p-14f - 0x1p-26f), 0x0400);  // rounds up into the smallest normal
  EXPECT_EQ(float_to_half(-0x1p-30f), 0x8000);        // underflow keeps the sign
  EXPECT_EQ(float_to_half(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(half_to_float(0x0001), 0x1p-24f);
  EXPECT_EQ(half_to_float(0x03FF), 1023 * 0x1p-24f);
  EXPECT_EQ(half_to_float(0x8200), -0x1p-15f);
}

TEST(TensorHalf, KeepsNaNQuiet) {
  const uint16_t half_nan = float_to_half(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(half_nan & 0x7E00, 0x7E00);
  // A float NaN whose payload sits only in the low bits must not truncate to inf.
  const uint16_t low_payload = float_to_half(from_bits(0xFF800001));
  EXPECT_EQ(low_payload, 0xFE00);
  EXPECT_TRUE(std::isnan(half_to_float(0x7C01)));
  EXPECT_NE(to_bits(half_to_float(0x7C01)) & 0x400000u, 0u) << "signalling NaN made quiet";
}

TEST(TensorHalf, EveryHalfRoundTripsThroughFloat) {
  for (uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    const auto half = static_cast<uint16_t>(bits);
    const float value = half_to_float(half);
    if ((half & 0x7C00) == 0x7C00 && (half & 0x03FF) != 0) {
      EXPECT_TRUE(std::isnan(value));
      EXPECT_EQ(float_to_half(value) & 0x7E00, 0x7E00);
    } else {
      ASSERT_EQ(float_to_half(value), half) << std::hex << bits;
    }
  }
}

TEST(TensorBFloat16, RoundsToNearestEven) {
  EXPECT_EQ(float_to_bfloat16(from_bits(0x3F808000)), 0x3F80);  // tie, 0x3F80 is even
  EXPECT_EQ(float_to_bfloat16(from_bits(0x3F818000)), 0x3F82);  // tie, 0x3F81 is odd
  EXPECT_EQ(float_to_bfloat16(from_bits(0x3F808001)), 0x3F81);  // just above the tie
  EXPECT_EQ(float_to_bfloat16(from_bits(0x3F807FFF)), 0x3F80);  // just below
  EXPECT_EQ(float_to_bfloat16(1.0f / 3.0f), 0x3EAB);            // 0x3EAAAAAB rounds up
  EXPECT_EQ(bfloat16_to_float(0x3EAB), 0.333984375f);
  EXPECT_EQ(float_to_bfloat16(-2.0f), 0xC000);
}

TEST(TensorBFloat16, OverflowsSubnormalsAndNaN) {
  EXPECT_EQ(float_to_bfloat16(from_bits(0x7F7F7FFF)), 0x7F7F);              // rounds down to the max
  EXPECT_EQ(float_to_bfloat16(std::numeric_limits<float>::max()), 0x7F80);  // past the max: inf
  EXPECT_EQ(float_to_bfloat16(-std::numeric_limits<float>::infinity()), 0xFF80);
  EXPECT_EQ(float_to_bfloat16(from_bits(0x00010000)), 0x0001);  // subnormal, exact
  EXPECT_EQ(float_to_bfloat16(from_bits(0x00018000)), 0x0002);  // subnormal tie to even
  EXPECT_EQ(float_to_bfloat16(from_bits(0x007FFFFF)), 0x0080);  // largest subnormal rounds to min normal
  EXPECT_EQ(to_bits(bfloat16_to_float(0x0001)), 0x00010000u);
  // Truncating 0x7F800001 would give 0x7F80 (inf); it must stay NaN.
  EXPECT_EQ(float_to_bfloat16(from_bits(0x7F800001)), 0x7FC0);
  EXPECT_TRUE(std::isnan(bfloat16_to_float(0x7F81)));
  EXPECT_EQ(to_bits(bfloat16_to_float(0x7F81)), 0x7FC10000u);
}

TEST(TensorBFloat16, EveryBFloat16RoundTripsThroughFloat) {
  for (uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    const auto bf16 = static_cast<uint16_t>(bits);
    const float value = bfloat16_to_float(bf16);
    if ((bf16 & 0x7F80) == 0x7F80 && (bf16 & 0x007F) != 0) {
      EXPECT_TRUE(std::isnan(value));
    } else {
      ASSERT_EQ(float_to_bfloat16(value), bf16) << std::hex << bits;
    }
  }
}

}  // namespace
}  // namespace mixprec
