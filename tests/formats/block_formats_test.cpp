// BFP and MX numerics against blocks worked by hand (the arithmetic is in each comment).
#include "mixprec/block_formats.h"
#include "mixprec/tensor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace mixprec {
namespace {

std::vector<float> bfp(std::vector<float> block, BfpSpec spec) {
  spec.block_size = static_cast<int64_t>(block.size());
  std::vector<float> out(block.size());
  bfp_block(block, out, spec);
  return out;
}

std::vector<float> mx(std::vector<float> block, MxSpec spec) {
  spec.block_size = static_cast<int64_t>(block.size());
  std::vector<float> out(block.size());
  mx_block(block, out, spec);
  return out;
}

// BFP16: the largest exponent is 3.99's (2^1), so the step is 2^(1 - 6) = 1/32 and the largest
// magnitude 2^2 - 1/32 = 3.96875. 0.3 -> 9.6 steps -> 10 -> 0.3125; 3.99 -> 127.68 -> 128 ->
// clamped; +-0.078125 are 2.5 steps, the ties.
TEST(Bfp, SharesTheLargestExponentAndRoundsHalfAwayByDefault) {
  const std::vector<float> in = {1.0f, 0.3f, -0.5f, 3.99f, 0.078125f, -0.078125f, 1e-9f, 0.0f};
  EXPECT_EQ(bfp(in, {}), (std::vector<float>{1.0f, 0.3125f, -0.5f, 3.96875f, 0.09375f, -0.09375f, 0.0f, 0.0f}));
}

TEST(Bfp, RoundingModesDifferOnlyOnTies) {
  const std::vector<float> in = {3.0f, 0.078125f, -0.078125f, 0.3f};
  EXPECT_EQ(bfp(in, {.rounding = BlockRounding::kHalfToEven}),
            (std::vector<float>{3.0f, 0.0625f, -0.0625f, 0.3125f}));
  // Ties toward +infinity: 2.5 -> 3, -2.5 -> -2.
  EXPECT_EQ(bfp(in, {.rounding = BlockRounding::kHalfUp}), (std::vector<float>{3.0f, 0.09375f, -0.0625f, 0.3125f}));
}

TEST(Bfp, InfAndNanPassThroughAndDoNotSetTheExponent) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> out = bfp({inf, 1.0f, std::nanf(""), 0.01f}, {});
  EXPECT_EQ(out[0], inf);
  EXPECT_EQ(out[1], 1.0f);
  EXPECT_TRUE(std::isnan(out[2]));
  // Step 2^(0 - 6) = 1/64 from 1.0's exponent: 0.01 -> 0.64 steps -> 1 step.
  EXPECT_EQ(out[3], 1.0f / 64);
}

// 1.999 has exponent 0: step 1/64, 127.94 steps rounds to 128, outside the 8-bit codes. The
// plain kernel clamps to 2 - 1/64; the compiler's kernel raises the exponent (step 1/32).
TEST(Bfp, CompilerKernelRaisesTheExponentInsteadOfClamping) {
  const std::vector<float> in = {1.999f, 0.5f, 0.3f, 0.0f};
  EXPECT_EQ(bfp(in, {}), (std::vector<float>{1.984375f, 0.5f, 0.296875f, 0.0f}));
  EXPECT_EQ(bfp(in, {.compiler_kernel = true}), (std::vector<float>{2.0f, 0.5f, 0.3125f, 0.0f}));
}

// to_bfp_prime, 13 bits (4 mantissa bits), sub-blocks of 2 with a 1-bit shift. The shared
// exponent is 1.0's (127). Sub-block 1 has exponent 125, two below: shift 1 (the most one bit
// holds), so its step is 2^(0 - 1 + 1 - 4) = 1/16 where sub-block 0's is 1/8.
// 0.15625 = 2.5/16 is a tie: 3/16 away from zero, 2/16 to even.
TEST(BfpPrime, SubBlocksShiftBelowTheSharedExponent) {
  const BfpSpec spec{.method = BfpMethod::kBfpPrime, .bit_width = 13, .sub_block_size = 2, .sub_block_shift_bits = 1};
  EXPECT_EQ(bfp({1.0f, 0.75f, 0.25f, 0.1875f}, spec), (std::vector<float>{1.0f, 0.75f, 0.25f, 0.1875f}));
  EXPECT_EQ(bfp({1.0f, 0.7f, 0.25f, 0.15625f}, spec), (std::vector<float>{1.0f, 0.75f, 0.25f, 0.1875f}));
  BfpSpec even = spec;
  even.rounding = BlockRounding::kHalfToEven;
  EXPECT_EQ(bfp({1.0f, 0.7f, 0.25f, 0.15625f}, even), (std::vector<float>{1.0f, 0.75f, 0.25f, 0.125f}));
}

TEST(BfpPrime, InfMakesTheWholeBlockNanAndSubnormalsFlush) {
  const BfpSpec spec{.method = BfpMethod::kBfpPrime, .bit_width = 13, .sub_block_size = 2};
  const std::vector<float> out = bfp({std::numeric_limits<float>::infinity(), 1.0f, 0.5f, 0.25f}, spec);
  for (float v : out) EXPECT_TRUE(std::isnan(v));
  const float subnormal = std::numeric_limits<float>::denorm_min() * 8;
  EXPECT_EQ(bfp({subnormal, subnormal, subnormal, subnormal}, spec), (std::vector<float>{0, 0, 0, 0}));
}

// MXINT8: 1.99 and 1.0 have exponent 0 and emax is 0, so the scale is 1; codes are x * 64.
// 0.3 -> 19.2 -> 19; 1.999 -> 127.94 -> 128 -> 127; 0.5/64 is a tie (0.5 codes).
TEST(Mx, Int8ElementsUseTheImplicitStepAndSaturate) {
  const std::vector<float> in = {1.0f, 0.3f, -0.5f, 1.999f, 0.5f / 64, -1.99f};
  EXPECT_EQ(mx(in, {}), (std::vector<float>{1.0f, 19.0f / 64, -0.5f, 127.0f / 64, 1.0f / 64, -127.0f / 64}));
  EXPECT_EQ(mx(in, {.rounding = BlockRounding::kHalfToEven})[4], 0.0f);
  // 6 = 1.5 * 2^2: scale 4; 0.1 / 4 * 64 = 1.6 codes -> 2 -> 2 / 64 * 4.
  EXPECT_EQ(mx({6.0f, 1.0f, 0.1f, 0.0f}, {}), (std::vector<float>{6.0f, 1.0f, 0.125f, 0.0f}));
}

// FP8 E4M3: 448 = 1.75 * 2^8 and emax 8 give scale 1. 0.1 = 1.6 * 2^-4 -> 1.625 * 2^-4;
// -3.3 = -1.65 * 2 -> -1.625 * 2; 0.001 is below the smallest normal 2^-6, on the subnormal
// grid of 2^-9: 0.512 steps -> 1 step.
TEST(Mx, Fp8E4M3RoundsToTheElementGridWithSubnormals) {
  const MxSpec spec{.element = MxElement::kFp8E4M3};
  EXPECT_EQ(mx({448.0f, 1.0f, 0.1f, -3.3f, 0.001f, 0.0f}, spec),
            (std::vector<float>{448.0f, 1.0f, 0.1015625f, -3.25f, 0.001953125f, 0.0f}));
  // 500 = 1.95 * 2^8 rounds up to 512, past the largest normal: saturates at 448.
  EXPECT_EQ(mx({500.0f, 1.0f}, spec), (std::vector<float>{448.0f, 1.0f}));
}

// FP4 E2M1 values are 0, 0.5, 1, 1.5, 2, 3, 4, 6; ties go to the even mantissa: 0.25 -> 0 and
// 0.75 -> 1.
TEST(Mx, Fp4E2M1HasEightMagnitudes) {
  const MxSpec spec{.element = MxElement::kFp4E2M1};
  EXPECT_EQ(mx({6.0f, 0.7f, -2.6f, 0.25f, 0.75f, 5.0f}, spec),
            (std::vector<float>{6.0f, 0.5f, -3.0f, 0.0f, 1.0f, 4.0f}));
}

TEST(Minifloat, E5M2AndE4M3Extremes) {
  EXPECT_EQ(round_to_minifloat(57344.0f, 5, 2, 57344.0f), 57344.0f);
  EXPECT_EQ(round_to_minifloat(70000.0f, 5, 2, 57344.0f), 57344.0f);
  EXPECT_EQ(round_to_minifloat(-1.1f, 4, 3, 448.0f), -1.125f);
  EXPECT_TRUE(std::isinf(round_to_minifloat(std::numeric_limits<float>::infinity(), 4, 3, 448.0f)));
}

// Lines along the axis, each cut into blocks from its start, the last one zero-padded: a
// [2, 3] tensor blocked along axis 0 in blocks of 2 has three lines of one block each.
TEST(BlockTensor, BlocksRunAlongTheAxisAndPadTheTail) {
  const std::vector<int64_t> shape = {2, 3};
  const std::vector<float> in = {1.0f, 0.3f, 1.999f, 0.3f, 0.01f, 0.5f};
  std::vector<float> out(in.size());
  mx_fake_quantize(in, shape, 0, {.block_size = 2}, out);
  // Column 0: {1.0, 0.3} scale 1; column 1: {0.3, 0.01} exponent -2 -> scale 1/4, so codes are
  // x * 256: 76.8 -> 77 and 2.56 -> 3; column 2: {1.999, 0.5}.
  EXPECT_EQ(out, (std::vector<float>{1.0f, 77.0f / 256, 127.0f / 64, 0.296875f, 3.0f / 256, 0.5f}));
  // Along axis 1 in blocks of 3, one per row: row 1's scale is 0.5's, 2^-1, so 0.01 -> 1.28
  // codes of 1/128 -> 1 code.
  mx_fake_quantize(in, shape, 1, {.block_size = 3}, out);
  EXPECT_EQ(out, (std::vector<float>{1.0f, 0.296875f, 127.0f / 64, 0.296875f, 1.0f / 128, 0.5f}));
  // Blocks of 4 along axis 1: each row is one block padded with a zero; the same values.
  std::vector<float> padded(in.size());
  mx_fake_quantize(in, shape, 1, {.block_size = 4}, padded);
  EXPECT_EQ(padded, out);
}

TEST(BlockTensor, OneElementPassesAndSpecsAreChecked) {
  std::vector<float> out(1);
  const std::vector<int64_t> scalar;
  bfp_fake_quantize(std::vector<float>{0.3f}, scalar, 1, {}, out);
  EXPECT_EQ(out[0], 0.3f);
  EXPECT_NE(check_spec(BfpSpec{.bit_width = 17}), "");
  EXPECT_NE(check_spec(BfpSpec{.method = BfpMethod::kBfpPrime, .block_size = 8, .sub_block_size = 3}), "");
  EXPECT_EQ(check_spec(BfpSpec{}), "");
  MxElement element;
  EXPECT_TRUE(mx_element_from_name("fp6_e3m2", &element));
  EXPECT_EQ(element, MxElement::kFp6E3M2);
  EXPECT_FALSE(mx_element_from_name("fp8", &element));
}

}  // namespace
}  // namespace mixprec
