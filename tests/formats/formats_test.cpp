// The format table and the quantization math, against values worked out by hand.
#include "mixprec/formats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string_view>
#include <vector>

#include "mixprec/error.h"

namespace mixprec {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

TEST(FormatTable, RowsFollowTheEnumAndNamesRoundTrip) {
  size_t index = 0, built_in = 0;
  for (const FormatTraits& traits : all_formats()) {
    EXPECT_EQ(static_cast<size_t>(traits.id), index++);
    // Formats other tests of this process added (add_format) follow the built-in ones.
    if (added_format(traits.id) == nullptr) {
      EXPECT_EQ(built_in++, static_cast<size_t>(traits.id)) << traits.name;
    }
    EXPECT_EQ(std::string_view(format_traits(traits.id).spec_name), traits.spec_name);
    EXPECT_EQ(format_from_name(traits.name), traits.id);
    EXPECT_EQ(format_from_name(traits.spec_name), traits.id);
    // Float formats carry no code range; integer ones a non-empty one.
    EXPECT_EQ(traits.is_qdq, traits.qmin < traits.qmax) << traits.name;
    // Block formats, and only they, have block parameters, valid ones.
    const BlockFormat* block = block_format(traits.id);
    EXPECT_EQ(block != nullptr, traits.is_block) << traits.name;
    if (block) {
      EXPECT_EQ(block->mx ? check_spec(block->mx_spec) : check_spec(block->bfp), "") << traits.name;
    }
  }
  EXPECT_EQ(built_in, 22u);
  EXPECT_EQ(format_from_name("MX9Spec"), FormatId::kMx9);
  EXPECT_EQ(block_format(FormatId::kMx9)->bfp.bit_width, 16);
  EXPECT_EQ(format_from_name("Int8Spec"), FormatId::kInt8);
  EXPECT_EQ(format_from_name("bf16"), FormatId::kBFloat16);
  EXPECT_EQ(format_from_name("int8spec"), std::nullopt);  // case-sensitive
  EXPECT_EQ(format_from_name("Int4Spec"), FormatId::kInt4);
  EXPECT_EQ(format_from_name("Int2Spec"), std::nullopt);
}

TEST(FormatTable, RowsMatchTheSpec) {
  const FormatTraits& xint8 = format_traits(FormatId::kXInt8);
  EXPECT_EQ(xint8.storage, DType::kInt8);
  EXPECT_EQ(xint8.qmin, -128);
  EXPECT_EQ(xint8.qmax, 127);
  EXPECT_TRUE(xint8.power_of_two_scale);
  EXPECT_TRUE(xint8.symmetric_default);
  EXPECT_FALSE(xint8.per_channel_allowed);

  const FormatTraits& uint8 = format_traits(FormatId::kUInt8);
  EXPECT_EQ(uint8.storage, DType::kUInt8);
  EXPECT_EQ(uint8.qmin, 0);
  EXPECT_EQ(uint8.qmax, 255);
  EXPECT_FALSE(uint8.power_of_two_scale);

  EXPECT_EQ(format_traits(FormatId::kInt16).min_opset, 21);
  EXPECT_EQ(format_traits(FormatId::kUInt16).min_opset, 21);
  EXPECT_EQ(format_traits(FormatId::kUInt16).qmax, 65535);

  for (FormatId id : {FormatId::kBFloat16, FormatId::kFloat16}) {
    EXPECT_FALSE(format_traits(id).is_qdq);
    EXPECT_EQ(format_traits(id).min_opset, 0);
  }
  EXPECT_EQ(format_traits(FormatId::kBFloat16).storage, DType::kBFloat16);
  EXPECT_EQ(format_traits(FormatId::kFloat16).storage, DType::kFloat16);
}

TEST(FormatTable, SymmetricQmax) {
  EXPECT_EQ(symmetric_qmax(FormatId::kInt8), 127);
  EXPECT_EQ(symmetric_qmax(FormatId::kUInt8), 127);     // (255 - 0) / 2, around zero point 128
  EXPECT_EQ(symmetric_qmax(FormatId::kInt16), 32767);
  EXPECT_EQ(symmetric_qmax(FormatId::kUInt16), 32767);  // (65535 - 0) / 2
  EXPECT_EQ(symmetric_qmax(FormatId::kBFloat16), 0);
}

TEST(QuantRounding, HalfToEvenAtScaleOne) {
  // x / 1 is exact, so these are pure rounding cases.
  EXPECT_EQ(quantize_value(2.5f, 1.0f, 0, FormatId::kInt8), 2);
  EXPECT_EQ(quantize_value(3.5f, 1.0f, 0, FormatId::kInt8), 4);
  EXPECT_EQ(quantize_value(-2.5f, 1.0f, 0, FormatId::kInt8), -2);
  EXPECT_EQ(quantize_value(-3.5f, 1.0f, 0, FormatId::kInt8), -4);
  EXPECT_EQ(quantize_value(0.5f, 1.0f, 0, FormatId::kInt8), 0);
  EXPECT_EQ(quantize_value(2.6f, 1.0f, 0, FormatId::kInt8), 3);
}

TEST(QuantRounding, ZeroPointIsAddedAfterRounding) {
  // round(2.5) + 11 = 2 + 11 = 13; rounding 2.5 + 11 = 13.5 would give 14.
  EXPECT_EQ(quantize_value(2.5f, 1.0f, 11, FormatId::kUInt8), 13);
}

TEST(QuantSaturation, Int8) {
  EXPECT_EQ(quantize_value(300.0f, 1.0f, 0, FormatId::kInt8), 127);
  EXPECT_EQ(quantize_value(-300.0f, 1.0f, 0, FormatId::kInt8), -128);
  EXPECT_EQ(quantize_value(kInf, 1.0f, 0, FormatId::kInt8), 127);
  EXPECT_EQ(quantize_value(-kInf, 1.0f, 0, FormatId::kInt8), -128);
}

TEST(QuantSaturation, UInt8Asymmetric) {
  // [-1, 3]: scale = 4 / 255 = 0.0156863; zero point = round(0 - (-1) / scale) = round(63.75) = 64.
  const QuantParams params = choose_params(FormatId::kUInt8, -1.0f, 3.0f, {.symmetric = false});
  ASSERT_EQ(params.scale.size(), 1u);
  EXPECT_FLOAT_EQ(params.scale[0], 4.0f / 255.0f);
  EXPECT_EQ(params.zero_point[0], 64);
  EXPECT_EQ(params.axis, -1);
  EXPECT_EQ(quantize_value(0.0f, params.scale[0], 64, FormatId::kUInt8), 64);  // 0 is exact
  EXPECT_EQ(quantize_value(10.0f, params.scale[0], 64, FormatId::kUInt8), 255);
  EXPECT_EQ(quantize_value(-10.0f, params.scale[0], 64, FormatId::kUInt8), 0);
  // 3 / 0.0156863 + 64 = 191.25 + 64 -> 255; -1 / 0.0156863 + 64 = -63.75 + 64 -> 0 (round(-63.75) = -64).
  EXPECT_EQ(quantize_value(3.0f, params.scale[0], 64, FormatId::kUInt8), 255);
  EXPECT_EQ(quantize_value(-1.0f, params.scale[0], 64, FormatId::kUInt8), 0);
}

TEST(QuantParamsChoice, SymmetricInt8) {
  // absmax = max(0.5, 1.27) = 1.27; scale = 1.27 / 127 = 0.01, zero point 0.
  const QuantParams params = choose_params(FormatId::kInt8, -0.5f, 1.27f);
  EXPECT_FLOAT_EQ(params.scale[0], 0.01f);
  EXPECT_EQ(params.zero_point[0], 0);
  EXPECT_EQ(quantize_value(1.27f, params.scale[0], 0, FormatId::kInt8), 127);
  EXPECT_EQ(quantize_value(-1.27f, params.scale[0], 0, FormatId::kInt8), -127);
  // -128 is reachable only beyond the range: -1.5 / 0.01 = -150 saturates.
  EXPECT_EQ(quantize_value(-1.5f, params.scale[0], 0, FormatId::kInt8), -128);
}

TEST(QuantParamsChoice, SymmetricUnsignedCentresOnMidCode) {
  // uint8 symmetric: scale = 1.27 / 127 = 0.01, zero point (0 + 255 + 1) / 2 = 128.
  const QuantParams params = choose_params(FormatId::kUInt8, -1.27f, 0.5f, {.symmetric = true});
  EXPECT_FLOAT_EQ(params.scale[0], 0.01f);
  EXPECT_EQ(params.zero_point[0], 128);
  EXPECT_EQ(quantize_value(-1.27f, params.scale[0], 128, FormatId::kUInt8), 1);
  EXPECT_EQ(quantize_value(1.27f, params.scale[0], 128, FormatId::kUInt8), 255);
  // uint16 symmetric: zero point (0 + 65535 + 1) / 2 = 32768.
  EXPECT_EQ(choose_params(FormatId::kUInt16, -1.0f, 1.0f).zero_point[0], 32768);
}

TEST(QuantParamsChoice, AsymmetricInt8AndRangeWidenedToZero) {
  // [0, 2.55] on int8: scale = 2.55 / 255 = 0.01, zero point = round(-128 - 0 / 0.01) = -128.
  const QuantParams int8 = choose_params(FormatId::kInt8, 0.0f, 2.55f, {.symmetric = false});
  EXPECT_FLOAT_EQ(int8.scale[0], 0.01f);
  EXPECT_EQ(int8.zero_point[0], -128);
  // [2, 4] is first widened to [0, 4]: scale = 4 / 255, zero point 0.
  const QuantParams uint8 = choose_params(FormatId::kUInt8, 2.0f, 4.0f, {.symmetric = false});
  EXPECT_FLOAT_EQ(uint8.scale[0], 4.0f / 255.0f);
  EXPECT_EQ(uint8.zero_point[0], 0);
}

TEST(QuantParamsChoice, PowerOfTwoRoundsUp) {
  // absmax 1: 1 / 127 = 0.007874 = 2^-6.99, rounded up to 2^-6 = 0.015625 (2^-7 = 0.0078125
  // would overflow: 127 * 2^-7 = 0.992 < 1). 127 * 2^-6 = 1.98 covers 1.
  EXPECT_EQ(choose_params(FormatId::kXInt8, -1.0f, 1.0f).scale[0], 0.015625f);
  EXPECT_EQ(choose_params(FormatId::kInt8, -1.0f, 1.0f, {.power_of_two = true}).scale[0], 0.015625f);
  // absmax 127 * 2^-7 = 0.9921875 needs exactly 2^-7: already a power of two, kept.
  EXPECT_EQ(choose_params(FormatId::kXInt8, 0.0f, 0.9921875f).scale[0], 0.0078125f);
  // absmax 50: 50 / 127 = 0.394 -> 2^-1.
  EXPECT_EQ(choose_params(FormatId::kXInt8, -50.0f, 3.0f).scale[0], 0.5f);
  EXPECT_EQ(choose_params(FormatId::kXInt8, -50.0f, 3.0f).zero_point[0], 0);
  // 1.0 on the 2^-6 grid: 1 / 0.015625 = 64.
  EXPECT_EQ(quantize_value(1.0f, 0.015625f, 0, FormatId::kXInt8), 64);
}

TEST(QuantParamsChoice, Int16Scale) {
  // scale = 1 / 32767 = 3.0518e-05.
  const QuantParams params = choose_params(FormatId::kInt16, -1.0f, 1.0f);
  EXPECT_FLOAT_EQ(params.scale[0], 1.0f / 32767.0f);
  EXPECT_EQ(quantize_value(1.0f, params.scale[0], 0, FormatId::kInt16), 32767);
  EXPECT_EQ(quantize_value(-1.0f, params.scale[0], 0, FormatId::kInt16), -32767);
  EXPECT_EQ(quantize_value(-2.0f, params.scale[0], 0, FormatId::kInt16), -32768);
  // uint16 asymmetric [0, 6.5535]: scale = 6.5535 / 65535 = 1e-4, zero point 0.
  const QuantParams unsigned16 = choose_params(FormatId::kUInt16, 0.0f, 6.5535f, {.symmetric = false});
  EXPECT_FLOAT_EQ(unsigned16.scale[0], 1e-4f);
  EXPECT_EQ(unsigned16.zero_point[0], 0);
}

TEST(QuantParamsChoice, DegenerateRangesGiveMinScale) {
  for (bool symmetric : {true, false}) {
    const QuantParams int8 = choose_params(FormatId::kInt8, 0.0f, 0.0f, {.symmetric = symmetric});
    EXPECT_EQ(int8.scale[0], kMinScale);
    EXPECT_EQ(dequantize_value(quantize_value(0.0f, int8.scale[0], int8.zero_point[0], FormatId::kInt8),
                               int8.scale[0], int8.zero_point[0]),
              0.0f);
  }
  // Power-of-two formats too (kMinScale = 2^-24 is one).
  EXPECT_EQ(choose_params(FormatId::kXInt8, 0.0f, 1e-30f).scale[0], kMinScale);
  // Asymmetric all-zero uint8: zero point = round(0 - 0 / kMinScale) = 0.
  EXPECT_EQ(choose_params(FormatId::kUInt8, 0.0f, 0.0f, {.symmetric = false}).zero_point[0], 0);
}

TEST(QuantParamsChoice, NaNAndInfBoundsAreFiniteExtremes) {
  constexpr float kFloatMax = std::numeric_limits<float>::max();
  // Each non-finite bound stands for the largest float on its side: scale = FLT_MAX / 127.
  for (const auto& [lo, hi] : std::vector<std::pair<float, float>>{{kNaN, 1.0f}, {-1.0f, kInf}, {-kInf, kNaN}}) {
    const QuantParams params = choose_params(FormatId::kInt8, lo, hi);
    EXPECT_FLOAT_EQ(params.scale[0], kFloatMax / 127.0f) << lo << " " << hi;
  }
  // Asymmetric: (FLT_MAX - (-FLT_MAX)) / 255 in double stays finite in float.
  const QuantParams wide = choose_params(FormatId::kUInt8, -kInf, kInf, {.symmetric = false});
  EXPECT_TRUE(std::isfinite(wide.scale[0]));
  EXPECT_GT(wide.scale[0], 0.0f);
  // zero point = round(0 + FLT_MAX / (2 * FLT_MAX / 255)) = round(127.5 +- float rounding of the scale).
  EXPECT_GE(wide.zero_point[0], 127);
  EXPECT_LE(wide.zero_point[0], 128);
}

TEST(QuantParamsChoice, FloatFormatsHaveNoParameters) {
  const QuantParams params = choose_params(FormatId::kBFloat16, -1.0f, 1.0f);
  EXPECT_TRUE(params.scale.empty());
  EXPECT_TRUE(params.zero_point.empty());
}

TEST(QuantValues, NaNGivesZeroPoint) {
  EXPECT_EQ(quantize_value(kNaN, 0.1f, 0, FormatId::kInt8), 0);
  EXPECT_EQ(quantize_value(kNaN, 0.1f, 37, FormatId::kUInt8), 37);
  const QuantParams params{{0.1f}, {37}, -1};
  EXPECT_EQ(fake_quantize_value(kNaN, params, 0, FormatId::kUInt8), 0.0f);
}

TEST(QuantValues, DequantizeAndFakeQuantize) {
  // (200 - 128) * 0.5 = 36.
  EXPECT_EQ(dequantize_value(200, 0.5f, 128), 36.0f);
  // 0.3 / 0.25 = 1.2 -> 1 -> 0.25; 0.4 / 0.25 = 1.6 -> 2 -> 0.5.
  const QuantParams params{{0.25f}, {0}, -1};
  EXPECT_EQ(fake_quantize_value(0.3f, params, 0, FormatId::kInt8), 0.25f);
  EXPECT_EQ(fake_quantize_value(0.4f, params, 0, FormatId::kInt8), 0.5f);
  EXPECT_EQ(fake_quantize_value(100.0f, params, 0, FormatId::kInt8), 127 * 0.25f);  // saturated
}

TEST(QuantValues, FloatFormatsRoundToNearestEven) {
  const QuantParams none;
  // bf16 keeps 7 fraction bits: near 1 the spacing is 2^-7 = 0.0078125.
  EXPECT_EQ(fake_quantize_value(1.0f + 0x1p-9f, none, 0, FormatId::kBFloat16), 1.0f);  // below half a step
  EXPECT_EQ(fake_quantize_value(1.0f + 0x1p-8f, none, 0, FormatId::kBFloat16), 1.0f);  // tie -> even (1.0)
  // 1 + 3 * 2^-8 lies halfway between 1 + 2^-7 (odd) and 1 + 2^-6 (even): goes to 1.015625.
  EXPECT_EQ(fake_quantize_value(1.0f + 3 * 0x1p-8f, none, 0, FormatId::kBFloat16), 1.015625f);
  // fp16 keeps 10 fraction bits: 1 + 2^-11 is a tie between 1 and 1 + 2^-10 -> 1.
  EXPECT_EQ(fake_quantize_value(1.0f + 0x1p-11f, none, 0, FormatId::kFloat16), 1.0f);
  EXPECT_EQ(fake_quantize_value(0.1f, none, 0, FormatId::kFloat16), 0.0999755859375f);
  // 65520 is halfway between fp16's largest finite value 65504 and 65536, which overflows.
  EXPECT_EQ(fake_quantize_value(65520.0f, none, 0, FormatId::kFloat16), kInf);
  EXPECT_EQ(fake_quantize_value(0.1f, none, 0, FormatId::kFloat32), 0.1f);
}

// A [2, 1, 1, 2] weight: element (o, 0, 0, k) sits at index 2 * o + k.
Tensor small_weight() { return Tensor::from_floats({2, 1, 1, 2}, std::vector<float>{-2.0f, 1.5f, 4.0f, 1.0f}); }

TEST(QuantPerChannel, AxisSelectsTheSlices) {
  const Tensor weight = small_weight();
  // Axis 0: channel 0 = {-2, 1.5} -> 2 / 127; channel 1 = {4, 1} -> 4 / 127.
  const QuantParams axis0 = choose_weight_params(weight, FormatId::kInt8, 0, {});
  EXPECT_EQ(axis0.axis, 0);
  ASSERT_EQ(axis0.scale.size(), 2u);
  EXPECT_FLOAT_EQ(axis0.scale[0], 2.0f / 127);
  EXPECT_FLOAT_EQ(axis0.scale[1], 4.0f / 127);
  EXPECT_EQ(axis0.zero_point, (std::vector<int32_t>{0, 0}));
  // Axis 1 has size 1: one channel holding everything -> 4 / 127.
  const QuantParams axis1 = choose_weight_params(weight, FormatId::kInt8, 1, {});
  EXPECT_EQ(axis1.axis, 1);
  ASSERT_EQ(axis1.scale.size(), 1u);
  EXPECT_FLOAT_EQ(axis1.scale[0], 4.0f / 127);
  // Axis 3: channel 0 = elements 0, 2 = {-2, 4} -> 4 / 127; channel 1 = {1.5, 1} -> 1.5 / 127.
  const QuantParams axis3 = choose_weight_params(weight, FormatId::kInt8, 3, {});
  ASSERT_EQ(axis3.scale.size(), 2u);
  EXPECT_FLOAT_EQ(axis3.scale[0], 4.0f / 127);
  EXPECT_FLOAT_EQ(axis3.scale[1], 1.5f / 127);
  // Axis -1: per tensor.
  const QuantParams whole = choose_weight_params(weight, FormatId::kInt8, -1, {});
  EXPECT_EQ(whole.axis, -1);
  ASSERT_EQ(whole.scale.size(), 1u);
  EXPECT_FLOAT_EQ(whole.scale[0], 4.0f / 127);
}

TEST(QuantPerChannel, QuantizeTensorUsesEachChannelsScale) {
  const Tensor weight = small_weight();
  const QuantParams params = choose_weight_params(weight, FormatId::kInt8, 0, {});
  const Tensor codes = quantize_tensor(weight, params, FormatId::kInt8);
  EXPECT_EQ(codes.dtype(), DType::kInt8);
  EXPECT_EQ(codes.shape(), weight.shape());
  // Channel 0 (scale 2/127): -2 -> -127, 1.5 * 63.5 = 95.25 -> 95.
  // Channel 1 (scale 4/127): 4 -> 127, 1 * 31.75 -> 32.
  EXPECT_EQ(codes.to_floats(), (std::vector<float>{-127, 95, 127, 32}));
  EXPECT_FLOAT_EQ(fake_quantize_value(1.5f, params, 0, FormatId::kInt8), 95 * (2.0f / 127));
  EXPECT_FLOAT_EQ(fake_quantize_value(1.0f, params, 1, FormatId::kInt8), 32 * (4.0f / 127));
}

TEST(QuantPerChannel, AllZeroChannelGetsMinScale) {
  const Tensor weight = Tensor::from_floats({2, 3}, std::vector<float>{0.5f, -1.0f, 0.25f, 0.0f, 0.0f, 0.0f});
  for (FormatId format : {FormatId::kInt8, FormatId::kUInt8}) {
    const QuantParams params =
        choose_weight_params(weight, format, 0, {.symmetric = format_traits(format).symmetric_default});
    ASSERT_EQ(params.scale.size(), 2u);
    EXPECT_EQ(params.scale[1], kMinScale) << format_traits(format).name;
    const std::vector<float> codes = quantize_tensor(weight, params, format).to_floats();
    for (size_t i = 3; i < 6; ++i) {
      EXPECT_EQ(dequantize_value(static_cast<int32_t>(codes[i]), params.scale[1], params.zero_point[1]), 0.0f);
    }
  }
}

TEST(QuantPerChannel, NaNElementsAreIgnored) {
  const Tensor weight = Tensor::from_floats({3}, std::vector<float>{kNaN, 1.0f, -0.5f});
  EXPECT_FLOAT_EQ(choose_weight_params(weight, FormatId::kInt8, -1, {}).scale[0], 1.0f / 127);
  const Tensor all_nan = Tensor::from_floats({2}, std::vector<float>{kNaN, kNaN});
  EXPECT_EQ(choose_weight_params(all_nan, FormatId::kInt8, -1, {}).scale[0], kMinScale);
}

TEST(QuantPerChannel, BadAxisOrFormatIsBadInput) {
  const Tensor weight = small_weight();
  for (int64_t axis : {4, -2}) {
    try {
      choose_weight_params(weight, FormatId::kInt8, axis, {});
      FAIL() << "axis " << axis;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
      EXPECT_NE(e.message().find("2x1x1x2"), std::string::npos) << e.message();
    }
  }
  EXPECT_THROW(choose_weight_params(weight, FormatId::kXInt8, 0, {}), Error);  // XInt8 is per tensor
  EXPECT_TRUE(choose_weight_params(weight, FormatId::kBFloat16, 0, {}).scale.empty());
}

TEST(QuantTensor, FloatFormatsCast) {
  const Tensor values = Tensor::from_floats({2}, std::vector<float>{1.0f + 0x1p-9f, -3.0f});
  const Tensor bf16 = quantize_tensor(values, {}, FormatId::kBFloat16);
  EXPECT_EQ(bf16.dtype(), DType::kBFloat16);
  EXPECT_EQ(bf16.to_floats(), (std::vector<float>{1.0f, -3.0f}));
  EXPECT_EQ(quantize_tensor(values, {}, FormatId::kFloat16).dtype(), DType::kFloat16);
}

TEST(QuantTensor, MismatchedParametersAreInternalErrors) {
  const Tensor weight = small_weight();
  const QuantParams three{{1, 1, 1}, {0, 0, 0}, 0};  // axis 0 has 2 channels
  const QuantParams bad_axis{{1}, {0}, 4};
  for (const QuantParams& params : {three, bad_axis}) {
    try {
      quantize_tensor(weight, params, FormatId::kInt8);
      FAIL();
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInternal);
    }
  }
}

std::vector<int32_t> int32_values(const Tensor& tensor) {
  const std::span<const int32_t> values = tensor.as<int32_t>();
  return {values.begin(), values.end()};
}

// FP8 E4M3: the symmetric scale maps amax onto 448; codes are x / scale on the FP8 grid.
// 0.6 / 2 = 0.3 = 1.2 x 2^-2 -> 1.25 x 2^-2 = 0.3125 (3 mantissa bits), back 0.625.
TEST(QuantFp8, ScaleMapsAmaxOnto448AndCodesRoundToTheFp8Grid) {
  const QuantParams p = choose_params(FormatId::kFp8E4M3, -3.0f, 896.0f, {.symmetric = false});
  EXPECT_EQ(p.scale, std::vector<float>{2.0f});
  EXPECT_EQ(p.zero_point, std::vector<int32_t>{0});  // FP8 is symmetric whatever is asked
  const Quantizer q(FormatId::kFp8E4M3, 2.0f, 0);
  EXPECT_EQ(q.code(0.6f), 0.3125f);
  EXPECT_EQ(q.fake_quantize(0.6f), 0.625f);
  EXPECT_EQ(q.fake_quantize(1e9f), 896.0f);  // saturates at 448 x scale
  EXPECT_EQ(q.fake_quantize(-std::numeric_limits<float>::infinity()), -896.0f);
  EXPECT_TRUE(std::isnan(q.fake_quantize(std::nanf(""))));
  EXPECT_EQ(Quantizer(FormatId::kFp8E5M2, 1.0f, 0).code(0.3f), 0.3125f);  // 2 mantissa bits: 1.25 too
  EXPECT_EQ(Quantizer(FormatId::kFp8E5M2, 1.0f, 0).code(0.4f), 0.375f);   // 1.6 -> 1.5
  const Tensor codes = quantize_tensor(Tensor::from_floats({2}, std::vector<float>{0.6f, -896.0f}), p, FormatId::kFp8E4M3);
  EXPECT_EQ(codes.dtype(), DType::kFloat8E4M3FN);
  EXPECT_EQ(codes.as<uint8_t>()[0], 0x2A);
  EXPECT_EQ(codes.as<uint8_t>()[1], 0xFE);
  EXPECT_EQ(dequantize_tensor(codes, p).to_floats(), (std::vector<float>{0.625f, -896.0f}));
  EXPECT_FALSE(has_integer_codes(FormatId::kFp8E4M3));
  EXPECT_TRUE(has_integer_codes(FormatId::kInt4));
}

// INT4 in blocks of 2 along axis 1 of a [2, 5] weight: 3 blocks per row (the last one short),
// symmetric scale = block amax / 7. Row 0: {1.2, -2} -> 2/7: 4.2 -> 4, -7; {3, 4} -> 4/7: 5.25 ->
// 5, 7; {-8} -> 8/7: -7. Row 1: {0, 0} -> kMinScale, codes 0; {0.5, 0.3} -> 0.5/7: 7, 4.2 -> 4;
// {7} -> 1: 7.
TEST(QuantBlocks, Int4GroupsAlongTheLastAxis) {
  const Tensor w = Tensor::from_floats({2, 5}, std::vector<float>{1.2f, -2, 3, 4, -8, 0, 0, 0.5f, 0.3f, 7});
  const QuantParams p = choose_weight_params(w, FormatId::kInt4, 1, {.symmetric = true, .block_size = 2});
  EXPECT_EQ(p.block_size, 2);
  EXPECT_EQ(param_shape(p, w.shape()), (Shape{2, 3}));
  ASSERT_EQ(p.scale.size(), 6u);
  EXPECT_FLOAT_EQ(p.scale[0], 2.0f / 7);
  EXPECT_FLOAT_EQ(p.scale[1], 4.0f / 7);
  EXPECT_FLOAT_EQ(p.scale[2], 8.0f / 7);
  EXPECT_EQ(p.scale[3], kMinScale);
  EXPECT_FLOAT_EQ(p.scale[4], 0.5f / 7);
  EXPECT_FLOAT_EQ(p.scale[5], 1.0f);
  const Tensor codes = quantize_tensor(w, p, FormatId::kInt4);
  EXPECT_EQ(codes.dtype(), DType::kInt4);
  EXPECT_EQ(codes.to_floats(), (std::vector<float>{4, -7, 5, 7, -7, 0, 0, 7, 4, 7}));
  const std::vector<float> back = dequantize_tensor(codes, p).to_floats();
  EXPECT_FLOAT_EQ(back[0], 4 * 2.0f / 7);
  EXPECT_FLOAT_EQ(back[8], 4 * 0.5f / 7);
}

// Blocks along axis 0 of a MatMul weight [K=4, N=2] in blocks of 2: parameters [2, 2], element
// (k, n) uses block (k / 2, n). Column 1 is column 0 times 10, so the codes repeat.
TEST(QuantBlocks, BlocksAlongTheFirstAxisKeepTheColumnsApart) {
  const Tensor w = Tensor::from_floats({4, 2}, std::vector<float>{1.2f, 12, 2, 20, 3, 30, 4, 40});
  const QuantParams p = choose_weight_params(w, FormatId::kInt4, 0, {.symmetric = true, .block_size = 2});
  EXPECT_EQ(param_shape(p, w.shape()), (Shape{2, 2}));
  ASSERT_EQ(p.scale.size(), 4u);
  EXPECT_FLOAT_EQ(p.scale[0], 2.0f / 7);
  EXPECT_FLOAT_EQ(p.scale[1], 20.0f / 7);
  EXPECT_FLOAT_EQ(p.scale[2], 4.0f / 7);
  EXPECT_FLOAT_EQ(p.scale[3], 40.0f / 7);
  EXPECT_EQ(quantize_tensor(w, p, FormatId::kInt4).to_floats(), (std::vector<float>{4, 4, 7, 7, 5, 5, 7, 7}));
  // Parameters that do not fit: a bad input (a model's DequantizeLinear can say anything).
  QuantParams wrong = p;
  wrong.scale.pop_back();
  try {
    dequantize_tensor(quantize_tensor(w, p, FormatId::kInt4), wrong);
    FAIL() << "3 scales for 4 blocks accepted";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::kBadInput);
    EXPECT_NE(error.message().find("3 scales and 4 zero points for codes of shape 4x2 along axis 0 (block size 2) that need 4"),
              std::string::npos) << error.what();
  }
  EXPECT_THROW(choose_weight_params(w, FormatId::kInt4, -1, {.block_size = 2}), Error);
}

TEST(QuantBias, ScaleIsInputTimesWeight) {
  // Input scale 0.5, weight scales {0.25, 0.125}: bias scales {0.125, 0.0625}.
  const float scales[] = {0.5f * 0.25f, 0.5f * 0.125f};
  // 1 / 0.125 = 8; -0.5 / 0.0625 = -8.
  const Tensor bias = Tensor::from_floats({2}, std::vector<float>{1.0f, -0.5f});
  const Tensor codes = quantize_bias(bias, scales);
  EXPECT_EQ(codes.dtype(), DType::kInt32);
  EXPECT_EQ(codes.shape(), Shape{2});
  EXPECT_EQ(int32_values(codes), (std::vector<int32_t>{8, -8}));
}

TEST(QuantBias, RoundsHalfToEvenAndSaturates) {
  const float scale[] = {0.125f};
  // 0.1875 / 0.125 = 1.5 -> 2; 0.3125 / 0.125 = 2.5 -> 2; -0.3125 -> -2; 1e10 / 0.125 = 8e10 -> INT32_MAX.
  const Tensor bias = Tensor::from_floats({5}, std::vector<float>{0.1875f, 0.3125f, -0.3125f, 1e10f, -1e10f});
  const Tensor codes = quantize_bias(bias, scale);
  EXPECT_EQ(int32_values(codes),
            (std::vector<int32_t>{2, 2, -2, std::numeric_limits<int32_t>::max(), std::numeric_limits<int32_t>::min()}));
  const float zero_scale[] = {0.0f};
  EXPECT_THROW(quantize_bias(bias, zero_scale), Error);
}

TEST(QuantBias, SaturatingElementIsFound) {
  // A zero weight channel gets kMinScale: with an int16 input scale of 2^-15, 0.5 / (2^-15 x
  // 2^-24) = 2^38 overflows int32, which quantize_bias would clamp to 0.0156 (2^31 x 2^-39).
  const float scales[] = {0.01f, 1.0f / 32768 * kMinScale};
  const Tensor bias = Tensor::from_floats({2}, std::vector<float>{0.5f, 0.5f});
  EXPECT_EQ(saturating_bias_element(bias, scales), std::optional<size_t>(1));
  const float fits[] = {0.01f, 0.01f};
  EXPECT_EQ(saturating_bias_element(bias, fits), std::nullopt);
  // The largest code that fits is INT32_MAX itself.
  const float exact[] = {1.0f};
  EXPECT_EQ(saturating_bias_element(Tensor::from_floats({1}, std::vector<float>{2147483520.0f}), exact), std::nullopt);
}

// ppocr_cls's first Conv under int16 activations and weights: input scale 2^-15 (range 1),
// channel 1's weights reach 0.5 (scale 2^-16), its bias is 3.0: 3.0 / 2^-31 = 6.4e9 codes,
// past INT32_MAX. The scale must reach 3.0 / (2^-15 x INT32_MAX) = 4.5776e-5 (x3.0), channel 0
// (bias 0.1) keeps its scale, a NaN element is ignored.
TEST(QuantBias, WeightScalesAreRaisedJustEnoughForTheBiasToFit) {
  const float input_scale = 1.0f / 32768;
  const Tensor bias = Tensor::from_floats({3}, std::vector<float>{0.1f, 3.0f, std::nanf("")});
  std::vector<float> scales = {1.0f / 65536, 1.0f / 65536, 1.0f / 65536};
  const BiasFit fit = raise_weight_scales_for_bias(bias, input_scale, scales, false);
  EXPECT_EQ(fit.raised, 1u);
  EXPECT_FLOAT_EQ(scales[0], 1.0f / 65536);
  EXPECT_FLOAT_EQ(scales[2], 1.0f / 65536);
  const double needed = 3.0 * 32768 / 2147483647.0;
  EXPECT_GE(scales[1], needed);
  EXPECT_LT(scales[1], needed * (1 + 2e-6));  // just enough, not a power of two
  EXPECT_NEAR(fit.factor, needed * 65536, 1e-4);
  std::vector<float> bias_scales;
  for (float s : scales) bias_scales.push_back(input_scale * s);
  EXPECT_EQ(saturating_bias_element(bias, bias_scales), std::nullopt);
  const int32_t code = int32_values(quantize_bias(bias, bias_scales))[1];
  EXPECT_GT(code, 2147000000);  // the bias uses nearly the whole int32 range: its error is 2^-31 relative
  EXPECT_NEAR(code * static_cast<double>(bias_scales[1]), 3.0, 3.0 * 1e-6);

  // A power-of-two format goes to the next 2^k: 4.5776e-5 -> 2^-14 (x4); per tensor, the one
  // scale covers the largest |bias|.
  std::vector<float> pow2 = {1.0f / 65536, 1.0f / 65536, 1.0f / 65536};
  EXPECT_EQ(raise_weight_scales_for_bias(bias, input_scale, pow2, true).factor, 4.0);
  EXPECT_EQ(pow2[1], 1.0f / 16384);
  std::vector<float> per_tensor = {1.0f / 65536};
  const BiasFit whole = raise_weight_scales_for_bias(bias, input_scale, per_tensor, false);
  EXPECT_EQ(whole.raised, 1u);
  EXPECT_GE(per_tensor[0], needed);
  // Scales that fit are left alone; a scale count that matches neither 1 nor the bias is ours.
  std::vector<float> fine = {0.01f, 0.01f, 0.01f};
  EXPECT_EQ(raise_weight_scales_for_bias(bias, input_scale, fine, false).raised, 0u);
  std::vector<float> two = {0.01f, 0.01f};
  EXPECT_THROW(raise_weight_scales_for_bias(bias, input_scale, two, false), Error);
}

}  // namespace
}  // namespace mixprec
