// The model-level loss the scale search and selective_update judge by (algorithms/output_error.h),
// against numbers worked by hand.
#include <gtest/gtest.h>

#include "algorithms/output_error.h"
#include "mixprec/runtime.h"
#include "support/model_builder.h"

namespace mixprec {
namespace {

using onnx::TensorProto;
using testing::ModelBuilder;

constexpr const char* kLabel = "test";

class FixedSamples : public SampleSource {
 public:
  explicit FixedSamples(std::vector<std::vector<float>> samples) : samples_(std::move(samples)) {}
  size_t size() const override { return samples_.size(); }
  NamedTensors sample(size_t i) const override { return {{"x", Tensor::from_floats({2}, samples_.at(i))}}; }
  std::string describe() const override { return "fixed samples"; }

 private:
  std::vector<std::vector<float>> samples_;
};

// y = x * 2 + `offset`, and an int64 output (not compared) that differs between the models.
onnx::ModelProto doubled(float offset) {
  return ModelBuilder()
      .add_input("x", TensorProto::FLOAT, {2})
      .add_initializer("two", {}, {2.0f})
      .add_initializer("offset", {}, {offset})
      .add_node("Mul", {"x", "two"}, {"d"}, {}, "mul")
      .add_node("Add", {"d", "offset"}, {"y"}, {}, "add")
      .add_node("Cast", {"y"}, {"n"}, {testing::attr_int("to", TensorProto::INT64)}, "cast")
      .add_output("y", TensorProto::FLOAT, {2})
      .add_output("n", TensorProto::INT64, {2})
      .build();
}

// Samples (1, 2) and (0, 1): the float outputs are (2, 4) and (0, 2), powers 20 (even sample)
// and 4 (odd). The other model adds 1 to each output element: error power 2 on each sample. So
// the total is (2 + 2) / (20 + 4) = 1/6, the halves 2/20 = 0.1 and 2/4 = 0.5; the int64 output,
// off by one too, counts for nothing.
TEST(AlgorithmsOutputError, ErrorPowerOverOutputPowerPerHalfByHand) {
  const FixedSamples samples({{1.0f, 2.0f}, {0.0f, 1.0f}, {5.0f, 5.0f}});
  const algorithms::OutputReference reference(Session::from_model(doubled(0.0f), kLabel), samples, {0, 1});
  EXPECT_EQ(reference.samples(), 2u);
  EXPECT_TRUE(reference.comparable());
  const algorithms::OutputLoss loss = reference.loss(Session::from_model(doubled(1.0f), kLabel));
  EXPECT_NEAR(loss.total, 1.0 / 6.0, 1e-12);
  EXPECT_NEAR(loss.half[0], 0.1, 1e-12);
  EXPECT_NEAR(loss.half[1], 0.5, 1e-12);
  const algorithms::OutputLoss same = reference.loss(Session::from_model(doubled(0.0f), kLabel));
  EXPECT_EQ(same.total, 0.0);
  EXPECT_TRUE(same.better_than(loss));
  EXPECT_FALSE(loss.better_than(same));
  // Lower in total but higher on one half is not better.
  EXPECT_FALSE((algorithms::OutputLoss{.total = 0.1, .half = {0.2, 0.0}}).better_than({.total = 0.2, .half = {0.1, 0.1}}));
}

}  // namespace
}  // namespace mixprec
