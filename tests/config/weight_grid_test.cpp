#include "config/weight_grid.h"

#include <gtest/gtest.h>

#include <cmath>

#include "support/model_builder.h"

namespace mixprec::config {
namespace {

onnx::NodeProto matmul() {
  return testing::ModelBuilder()
      .add_input("x", onnx::TensorProto::FLOAT, {1, 2})
      .add_initializer("w", {2, 2}, {0.0f, 0.0f, 0.0f, 0.0f})
      .add_node("MatMul", {"x", "w"}, {"y"}, {}, "mm")
      .add_output("y", onnx::TensorProto::FLOAT, {1, 2})
      .build()
      .graph()
      .node(0);
}

int32_t code(const WeightGrid& grid, float value) {
  return static_cast<int32_t>(std::nearbyint(value / grid.params.scale.at(0))) + grid.params.zero_point.at(0);
}

TEST(WeightGridTest, ReduceRangeHalvesTheSymmetricInt8Codes) {
  const Tensor w = Tensor::from_floats(Shape{2, 1}, std::vector<float>{1.0f, -0.5f});
  TensorQuantSpec spec{.format = FormatId::kInt8};
  const WeightGrid full = weight_grid(matmul(), spec, w, "test");
  EXPECT_FLOAT_EQ(full.params.scale.at(0), 1.0f / 127);
  EXPECT_EQ(code(full, 1.0f), 127);
  spec.reduce_range = true;
  // max |w| / 63: 1.0 -> 63, -0.5 -> -31.5 -> -32 (half to even).
  const WeightGrid reduced = weight_grid(matmul(), spec, w, "test");
  EXPECT_NEAR(reduced.params.scale.at(0), 1.0 / 63, 1e-9);
  EXPECT_EQ(reduced.params.zero_point.at(0), 0);
  EXPECT_EQ(code(reduced, 1.0f), 63);
  EXPECT_EQ(code(reduced, -0.5f), -32);
}

TEST(WeightGridTest, ReduceRangeMovesTheAsymmetricZeroPointWithTheScale) {
  // [-1, 1.55] on uint8: scale 0.01, zero point 100; halved: scale 2.55 / 127, zero point
  // round(100 x 127 / 255) = round(49.8) = 50, so -1 -> 0 and 1.55 -> 127.
  const Tensor w = Tensor::from_floats(Shape{2, 1}, std::vector<float>{-1.0f, 1.55f});
  TensorQuantSpec spec{.format = FormatId::kUInt8, .symmetric = false, .reduce_range = true};
  const WeightGrid grid = weight_grid(matmul(), spec, w, "test");
  EXPECT_NEAR(grid.params.scale.at(0), 2.55 / 127, 1e-7);
  EXPECT_EQ(grid.params.zero_point.at(0), 50);
  EXPECT_EQ(code(grid, -1.0f), 0);
  EXPECT_EQ(code(grid, 1.55f), 127);
}

TEST(WeightGridTest, ReduceRangeAppliesPerChannel) {
  const Tensor w = Tensor::from_floats(Shape{2, 2}, std::vector<float>{2.0f, 0.5f, -4.0f, 1.0f});
  const TensorQuantSpec spec{.format = FormatId::kInt8, .per_channel = true, .reduce_range = true};
  const WeightGrid grid = weight_grid(matmul(), spec, w, "test");
  ASSERT_EQ(grid.params.scale.size(), 2u);  // MatMul's output channels: the columns
  EXPECT_NEAR(grid.params.scale[0], 4.0 / 63, 1e-7);
  EXPECT_NEAR(grid.params.scale[1], 1.0 / 63, 1e-8);
  EXPECT_TRUE(reduces_range(FormatId::kInt8));
  EXPECT_FALSE(reduces_range(FormatId::kXInt8));
  EXPECT_FALSE(reduces_range(FormatId::kInt16));
}

}  // namespace
}  // namespace mixprec::config
