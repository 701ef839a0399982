#include "mixprec/random_data.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace mixprec {
namespace {

TEST(RandomTensor, SameSeedGivesSameBytesOtherSeedsDiffer) {
  for (const DTypeTraits& traits : all_dtype_traits()) {
    const Tensor first = random_tensor(traits.dtype, {4, 16}, 123);
    EXPECT_EQ(first.dtype(), traits.dtype);
    EXPECT_EQ(first.shape(), (Shape{4, 16}));
    EXPECT_EQ(random_tensor(traits.dtype, {4, 16}, 123), first) << traits.name;
    EXPECT_NE(random_tensor(traits.dtype, {4, 16}, 124), first) << traits.name;
  }
}

// The engine's outputs are fixed by the C++ standard, so these hold on every platform. The
// first outputs of std::mt19937_64(7) are 0xc11f6531eb66d9a7, 0xf30567547a34c162,
// 0x1e0edcc1206967ce, 0xe4546c04d9ff7cf6. Floats: (top 24 bits - 2^23) * 2^-23, e.g.
// (0xc11f65 - 0x800000) / 2^23 = 4267877 / 8388608. Integers: the top 4 bits. Bools: the top bit.
TEST(RandomTensor, MatchesGoldenValues) {
  EXPECT_EQ(random_tensor(DType::kFloat32, {4}, 7).to_floats(),
            (std::vector<float>{4267877 / 8388608.0f, 7538023 / 8388608.0f, -6418724 / 8388608.0f,
                                6575212 / 8388608.0f}));
  EXPECT_EQ(random_tensor(DType::kInt8, {4}, 7).to_floats(), (std::vector<float>{12, 15, 1, 14}));
  EXPECT_EQ(random_tensor(DType::kInt64, {2, 2}, 7).to_floats(), (std::vector<float>{12, 15, 1, 14}));
  EXPECT_EQ(random_tensor(DType::kBool, {4}, 7).to_floats(), (std::vector<float>{1, 1, 0, 1}));
  // float16 rounds the same draws: 4267877 / 2^23 = 0.50877... -> 0x3812 (0.5087890625).
  EXPECT_EQ(random_tensor(DType::kFloat16, {1}, 7).as<uint16_t>()[0], 0x3812);
}

TEST(RandomTensor, StaysInRange) {
  const std::vector<float> floats = random_tensor(DType::kFloat32, {10000}, 1).to_floats();
  EXPECT_GE(*std::min_element(floats.begin(), floats.end()), -1.0f);
  EXPECT_LT(*std::max_element(floats.begin(), floats.end()), 1.0f);
  // Uniform on [-1, 1): 10000 draws have a standard deviation of the mean of 0.0058.
  double sum = 0;
  for (float value : floats) sum += value;
  EXPECT_NEAR(sum / 10000, 0.0, 0.03);

  for (const DType dtype : {DType::kInt8, DType::kUInt8, DType::kInt16, DType::kUInt16, DType::kInt32,
                            DType::kInt64}) {
    const std::vector<float> values = random_tensor(dtype, {1000}, 2).to_floats();
    EXPECT_EQ(*std::min_element(values.begin(), values.end()), 0.0f) << dtype_name(dtype);
    EXPECT_EQ(*std::max_element(values.begin(), values.end()), 15.0f) << dtype_name(dtype);
  }
  const std::vector<float> bools = random_tensor(DType::kBool, {1000}, 3).to_floats();
  EXPECT_EQ(std::count(bools.begin(), bools.end(), 0.0f) + std::count(bools.begin(), bools.end(), 1.0f), 1000);
}

TEST(RandomTensor, HandlesScalarAndEmptyShapes) {
  EXPECT_EQ(random_tensor(DType::kFloat32, {}, 1).numel(), 1);
  EXPECT_EQ(random_tensor(DType::kBFloat16, {3, 0}, 1).byte_size(), 0u);
}

}  // namespace
}  // namespace mixprec
