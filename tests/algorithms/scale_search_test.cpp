#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "mixprec/algorithms.h"
#include "mixprec/rewrite.h"
#include "mixprec/tensor_proto.h"
#include "support/model_builder.h"

namespace mixprec {
namespace {

using onnx::TensorProto;
using testing::ModelBuilder;

// Samples of x1 and x2, each [1, 8], the same values in both.
class TwoInputs : public SampleSource {
 public:
  explicit TwoInputs(std::vector<float> values) : samples_{std::move(values)} {}
  explicit TwoInputs(std::vector<std::vector<float>> samples) : samples_(std::move(samples)) {}
  size_t size() const override { return samples_.size(); }
  NamedTensors sample(size_t i) const override {
    return {{"x1", Tensor::from_floats({1, 8}, samples_.at(i))}, {"x2", Tensor::from_floats({1, 8}, samples_.at(i))}};
  }
  std::string describe() const override { return std::to_string(samples_.size()) + " fixed samples"; }

 private:
  std::vector<std::vector<float>> samples_;
};

const std::vector<float> kValues = {0.1f, -0.3f, 0.45f, 0.7f, -0.9f, 3.0f, 0.05f, -0.02f};

// x1 -> Identity -> y1, x2 -> Identity -> y2.
onnx::ModelProto float_model() {
  return ModelBuilder()
      .add_input("x1", TensorProto::FLOAT, {1, 8})
      .add_input("x2", TensorProto::FLOAT, {1, 8})
      .add_node("Identity", {"x1"}, {"y1"}, {}, "id1")
      .add_node("Identity", {"x2"}, {"y2"}, {}, "id2")
      .add_output("y1", TensorProto::FLOAT, {1, 8})
      .add_output("y2", TensorProto::FLOAT, {1, 8})
      .build();
}

// The same with x1 through int8 Q/DQ at scale s1 and x2 at s2 (zero point 0).
onnx::ModelProto quantized_model(float s1, float s2) {
  return ModelBuilder()
      .add_input("x1", TensorProto::FLOAT, {1, 8})
      .add_input("x2", TensorProto::FLOAT, {1, 8})
      .add_initializer("s1", {}, {s1})
      .add_initializer("s2", {}, {s2})
      .add_initializer_i8("z", {}, {0})
      .add_node("QuantizeLinear", {"x1", "s1", "z"}, {"q1"}, {}, "id1/q")
      .add_node("DequantizeLinear", {"q1", "s1", "z"}, {"d1"}, {}, "id1/dq")
      .add_node("QuantizeLinear", {"x2", "s2", "z"}, {"q2"}, {}, "id2/q")
      .add_node("DequantizeLinear", {"q2", "s2", "z"}, {"d2"}, {}, "id2/dq")
      .add_node("Identity", {"d1"}, {"y1"}, {}, "id1")
      .add_node("Identity", {"d2"}, {"y2"}, {}, "id2")
      .add_output("y1", TensorProto::FLOAT, {1, 8})
      .add_output("y2", TensorProto::FLOAT, {1, 8})
      .build();
}

// sum (QDQ(x, s) - x)^2 / sum x^2 on kValues, worked by hand (round half to even, clamp to
// [-128, 127]): the outlier 3.0 clips below s = 2^-5 (127 s = 3.97), the small values lose
// resolution above it.
//   s = 2^-8: 0.6101730    s = 2^-7: 0.3801240    s = 2^-6: 0.0972741
//   s = 2^-5: 7.823255e-5  s = 2^-4: 2.145134e-4  s = 2^-3: 1.098497e-3
TEST(ScaleSearch, EachScaleMovesToTheStepWithTheLeastOutputErrorWithinMaxShift) {
  const TwoInputs source(kValues);
  // x1 starts two steps too coarse (2^-3), x2 two steps too fine (2^-7): with max_shift 2 both
  // reach 2^-5; x1 moves down and stops at the limit, x2 tries down (worse), then goes up.
  const ScaleSearchSummary s = search_activation_scales(quantized_model(0.125f, 0.0078125f), float_model(), source,
                                                        {.max_shift = 2, .finer = true}, {}, "test");
  EXPECT_EQ(s.tensors, 2u);
  EXPECT_EQ(s.shifts, (std::map<std::string, int>{{"x1", -2}, {"x2", 2}}));
  EXPECT_NEAR(s.loss_before, 1.098497e-3 + 0.3801240, 1e-6);
  EXPECT_NEAR(s.loss_after, 2 * 7.823255e-5, 1e-8);
  // 1 start + x1: 2^-4, 2^-5 + x2: 2^-8 (worse), 2^-6, 2^-5.
  EXPECT_EQ(s.trials, 6u);
  EXPECT_EQ(s.samples, 1u);
  EXPECT_TRUE(s.notes.empty());

  // max_shift 1 stops one step short on both sides.
  const ScaleSearchSummary one = search_activation_scales(quantized_model(0.125f, 0.0078125f), float_model(), source,
                                                          {.max_shift = 1, .finer = true}, {}, "test");
  EXPECT_EQ(one.shifts, (std::map<std::string, int>{{"x1", -1}, {"x2", 1}}));
  EXPECT_NEAR(one.loss_after, 2.145134e-4 + 0.0972741, 1e-6);

  // finer = false never clips more than calibration chose: x1 stays, x2 still goes up.
  const ScaleSearchSummary coarser = search_activation_scales(quantized_model(0.125f, 0.0078125f), float_model(),
                                                              source, {.finer = false}, {}, "test");
  EXPECT_EQ(coarser.shifts, (std::map<std::string, int>{{"x2", 2}}));
  EXPECT_NEAR(coarser.loss_after, 1.098497e-3 + 7.823255e-5, 1e-8);
  EXPECT_EQ(coarser.trials, 4u);  // 1 start + x1: 2^-2 (worse) + x2: 2^-6, 2^-5 (2^-4 is past max_shift)
}

// Searched on a sample without kValues' outlier 3.0, both scales go two steps finer (2^-7:
// 127 s = 0.99 still holds 0.9); the held-out sample has the outlier, which 2^-7 clips
// (0.3801240 each against 7.823255e-5 at 2^-5): the shifts are not kept.
TEST(ScaleSearch, ShiftsTheHeldOutSamplesDoNotGainFromAreNotKept) {
  std::vector<float> no_outlier = kValues;
  no_outlier[5] = 0.3f;
  const TwoInputs source(std::vector<std::vector<float>>{no_outlier, kValues});
  const ScaleSearchSummary alone =
      search_activation_scales(quantized_model(0.03125f, 0.03125f), float_model(), source, {}, {.samples = {0}}, "test");
  EXPECT_EQ(alone.shifts, (std::map<std::string, int>{{"x1", -2}, {"x2", -2}}));
  EXPECT_FALSE(alone.rejected);

  const ScaleSearchSummary judged = search_activation_scales(quantized_model(0.03125f, 0.03125f), float_model(), source,
                                                             {}, {.samples = {0}, .validation = {1}}, "test");
  EXPECT_TRUE(judged.shifts.empty());
  EXPECT_TRUE(judged.rejected);
  EXPECT_EQ(judged.validation_samples, 1u);
  ASSERT_TRUE(judged.validation_before && judged.validation_after);
  EXPECT_NEAR(*judged.validation_before, 2 * 7.823255e-5, 1e-8);
  EXPECT_NEAR(*judged.validation_after, 2 * 0.3801240, 1e-6);
  EXPECT_EQ(judged.loss_after, judged.loss_before);
  ASSERT_EQ(judged.notes.size(), 1u);
  EXPECT_NE(judged.notes[0].find("none kept"), std::string::npos);

  // Held-out samples that gain keep them: searched and judged on the same picture.
  const ScaleSearchSummary kept = search_activation_scales(quantized_model(0.03125f, 0.03125f), float_model(), source,
                                                           {}, {.samples = {0}, .validation = {0}}, "test");
  EXPECT_EQ(kept.shifts, alone.shifts);
  EXPECT_FALSE(kept.rejected);
}

TEST(ScaleSearch, TheRebuiltModelIsMeasuredOnTheSameSamples) {
  const TwoInputs source(kValues);
  ScaleSearchOptions options;
  std::map<std::string, int> asked;
  // The "rewrite" applies the shifts as the real one does: the scale times 2^n.
  options.rebuild = [&](const std::map<std::string, int>& shifts) {
    asked = shifts;
    const auto scale = [&](const char* t, float s) { return shifts.count(t) ? std::ldexp(s, shifts.at(t)) : s; };
    return quantized_model(scale("x1", 0.125f), scale("x2", 0.0078125f));
  };
  const ScaleSearchSummary s =
      search_activation_scales(quantized_model(0.125f, 0.0078125f), float_model(), source, {}, options, "test");
  EXPECT_EQ(asked, s.shifts);
  ASSERT_TRUE(s.loss_rebuilt.has_value());
  EXPECT_DOUBLE_EQ(*s.loss_rebuilt, s.loss_after);
  EXPECT_TRUE(s.notes.empty());
}

// A rewrite that does not follow the shifts is what the model would get, so it judges them.
TEST(ScaleSearch, ShiftsTheRewriteDoesNotGainFromAreNotKept) {
  const TwoInputs source(kValues);
  // Ignores them all: the rewrite's loss is the starting one, so none is kept.
  ScaleSearchOptions ignoring;
  ignoring.rebuild = [](const std::map<std::string, int>&) { return quantized_model(0.125f, 0.0078125f); };
  const ScaleSearchSummary none =
      search_activation_scales(quantized_model(0.125f, 0.0078125f), float_model(), source, {}, ignoring, "test");
  EXPECT_TRUE(none.shifts.empty());
  EXPECT_TRUE(none.rejected);
  ASSERT_TRUE(none.loss_rebuilt.has_value());
  EXPECT_DOUBLE_EQ(*none.loss_rebuilt, none.loss_before);
  EXPECT_EQ(none.loss_after, none.loss_before);
  ASSERT_EQ(none.notes.size(), 1u);
  EXPECT_NE(none.notes[0].find("none kept"), std::string::npos) << none.notes[0];

  // Follows x2's only: the rewrite gains (0.3811 -> 1.177e-3) but not what the search measured
  // (1.565e-4): kept, with a note that names both.
  ScaleSearchOptions partial;
  partial.rebuild = [](const std::map<std::string, int>& shifts) {
    return quantized_model(0.125f, shifts.count("x2") ? std::ldexp(0.0078125f, shifts.at("x2")) : 0.0078125f);
  };
  const ScaleSearchSummary some =
      search_activation_scales(quantized_model(0.125f, 0.0078125f), float_model(), source, {}, partial, "test");
  EXPECT_FALSE(some.rejected);
  EXPECT_EQ(some.shifts.size(), 2u);
  ASSERT_TRUE(some.loss_rebuilt.has_value());
  EXPECT_NEAR(*some.loss_rebuilt, 1.098497e-3 + 7.823255e-5, 1e-8);
  ASSERT_EQ(some.notes.size(), 1u);
  EXPECT_NE(some.notes[0].find("where the search measured"), std::string::npos) << some.notes[0];
}

// x -> Gemm(W = identity, bias 0.06 on every output) -> y, with its input through int8 Q/DQ at
// scale s, the identity as int8 codes 1 at weight scale 1 and the bias as int32 codes
// round(0.06 / s) at scale s x 1 (Int32Bias).
class OneInput : public SampleSource {
 public:
  size_t size() const override { return 1; }
  NamedTensors sample(size_t) const override { return {{"x", Tensor::from_floats({1, 8}, kValues)}}; }
  std::string describe() const override { return "kValues"; }
};

std::vector<float> identity8(float one) {
  std::vector<float> w(64, 0.0f);
  for (size_t i = 0; i < 8; ++i) w[i * 9] = one;
  return w;
}

onnx::ModelProto float_gemm() {
  return ModelBuilder()
      .add_input("x", TensorProto::FLOAT, {1, 8})
      .add_initializer("W", {8, 8}, identity8(1.0f))
      .add_initializer("b", {8}, std::vector<float>(8, 0.06f))
      .add_node("Gemm", {"x", "W", "b"}, {"y"}, {}, "gemm")
      .add_output("y", TensorProto::FLOAT, {1, 8})
      .build();
}

onnx::ModelProto quantized_gemm(float s, int32_t bias_code_offset = 0, int32_t bias_zero_point = 0) {
  std::vector<int8_t> codes(64, 0);
  for (size_t i = 0; i < 8; ++i) codes[i * 9] = 1;
  const auto bias_code = static_cast<int32_t>(std::nearbyint(0.06 / s)) + bias_code_offset;
  ModelBuilder builder;
  std::vector<std::string> bias_inputs = {"b_q", "b_s"};
  if (bias_zero_point != 0) {
    builder.add_initializer_i32("b_z", {}, {bias_zero_point});
    bias_inputs.push_back("b_z");
  }
  return builder.add_input("x", TensorProto::FLOAT, {1, 8})
      .add_initializer("s", {}, {s})
      .add_initializer_i8("z", {}, {0})
      .add_initializer_i8("W_q", {8, 8}, codes)
      .add_initializer("W_s", {}, {1.0f})
      .add_initializer_i32("b_q", {8}, std::vector<int32_t>(8, bias_code))
      .add_initializer("b_s", {}, {s})
      .add_node("QuantizeLinear", {"x", "s", "z"}, {"xq"}, {}, "gemm/q")
      .add_node("DequantizeLinear", {"xq", "s", "z"}, {"xd"}, {}, "gemm/dq")
      .add_node("DequantizeLinear", {"W_q", "W_s", "z"}, {"Wd"}, {}, "gemm/w_dq")
      .add_node("DequantizeLinear", bias_inputs, {"bd"}, {}, "gemm/b_dq")
      .add_node("Gemm", {"xd", "Wd", "bd"}, {"y"}, {}, "gemm")
      .add_output("y", TensorProto::FLOAT, {1, 8})
      .build();
}

// sum (y_q - y)^2 / sum y^2 on kValues + 0.06, worked by hand (y_q = QDQ(x, s) + round(0.06 / s) s):
//   s = 2^-3: bias 0     1.8220979e-3
//   s = 2^-4: bias 2^-4  2.3173795e-4   (bias kept at 0: 2.3332845e-3)
//   s = 2^-5: bias 2^-4  5.7792480e-5   (bias kept at 0: 3.2243120e-3)
// The search moves the bias with its input as the rewrite does: it finds 2^-5, which the
// rewrite then gives exactly. Kept at its old codes, the bias would hide the gain (nothing moves).
TEST(ScaleSearch, AnInt32BiasIsRequantizedWithItsInputsScale) {
  const OneInput source;
  ScaleSearchOptions options;
  options.rebuild = [](const std::map<std::string, int>& shifts) {
    return quantized_gemm(shifts.count("x") ? std::ldexp(0.125f, shifts.at("x")) : 0.125f);
  };
  const ScaleSearchSummary s = search_activation_scales(quantized_gemm(0.125f), float_gemm(), source, {}, options, "test");
  EXPECT_EQ(s.tensors, 1u);
  EXPECT_EQ(s.biases, 1u);
  EXPECT_EQ(s.shifts, (std::map<std::string, int>{{"x", -2}}));
  EXPECT_NEAR(s.loss_before, 1.8220979e-3, 1e-8);
  EXPECT_NEAR(s.loss_after, 5.7792480e-5, 1e-9);
  ASSERT_TRUE(s.loss_rebuilt.has_value());
  EXPECT_DOUBLE_EQ(*s.loss_rebuilt, s.loss_after);
  EXPECT_TRUE(s.notes.empty()) << s.notes.front();

  // Codes that are not the float bias requantized (one step off: 0.125 for 0.06) are not the
  // rewrite's, so not followed: the bias stays 0.125 as stored, worked by hand
  //   s = 2^-3: 6.1387890e-3   s = 2^-4: 3.8100475e-3   s = 2^-5: 2.5711290e-3
  const ScaleSearchSummary odd =
      search_activation_scales(quantized_gemm(0.125f, 1), float_gemm(), source, {}, {}, "test");
  EXPECT_EQ(odd.biases, 0u);
  EXPECT_EQ(odd.shifts, (std::map<std::string, int>{{"x", -2}}));
  EXPECT_NEAR(odd.loss_before, 6.1387890e-3, 1e-8);
  EXPECT_NEAR(odd.loss_after, 2.5711290e-3, 1e-8);

  // Codes the requantized float bias (0) but a zero point of -1: the bias is (0 + 1) x 0.125,
  // the odd case's value, which the fed value (codes x scale) would not be. Not followed either:
  // the same losses as above.
  const ScaleSearchSummary shifted =
      search_activation_scales(quantized_gemm(0.125f, 0, -1), float_gemm(), source, {}, {}, "test");
  EXPECT_EQ(shifted.biases, 0u);
  EXPECT_EQ(shifted.shifts, (std::map<std::string, int>{{"x", -2}}));
  EXPECT_NEAR(shifted.loss_before, 6.1387890e-3, 1e-8);
  EXPECT_NEAR(shifted.loss_after, 2.5711290e-3, 1e-8);
}

TEST(ScaleSearch, AModelWithoutActivationPairsIsANoteNotAnError) {
  const TwoInputs source(kValues);
  const ScaleSearchSummary s = search_activation_scales(float_model(), float_model(), source, {}, {}, "test");
  EXPECT_EQ(s.tensors, 0u);
  EXPECT_TRUE(s.shifts.empty());
  ASSERT_EQ(s.notes.size(), 1u);
  EXPECT_NE(s.notes[0].find("nothing searched"), std::string::npos) << s.notes[0];
}

// The rewrite's side: a range factor of 2^n moves a power-of-two activation scale by exactly n
// steps, and only that tensor's.
TEST(ScaleSearch, RangeFactorsMoveTheRewritesPowerOfTwoScales) {
  const onnx::ModelProto model = float_model();
  CalibrationStats stats;
  for (const char* name : {"x1", "x2"}) {
    StatsCollector c;
    c.update(kValues);
    stats.tensors[name] = c.stats();
  }
  TensorQuantSpec spec{.format = FormatId::kXInt8};
  LayerConfig layer;
  layer.input_tensors = spec;
  std::vector<NodeAssignment> assignment = {{.node_name = "id1", .op_type = "Identity", .config = layer}, {.node_name = "id2", .op_type = "Identity", .config = layer}};
  QuantizeOptions options{.calib_method = CalibMethod::kPowerOfTwoNonOverflow};
  const auto scale_of = [](const onnx::ModelProto& m, const std::string& tensor) {
    for (const auto& node : m.graph().node()) {
      if (node.op_type() != "QuantizeLinear" || node.input(0) != tensor) continue;
      for (const auto& init : m.graph().initializer()) {
        if (init.name() == node.input(1)) return tensor_from_proto(init, "test").to_floats().at(0);
      }
    }
    return -1.0f;
  };
  const onnx::ModelProto plain = quantize_model(model, assignment, stats, options, "test");
  // MinMax 3.0 over 127 codes rounded up to a power of two: 2^-5.
  EXPECT_EQ(scale_of(plain, "x1"), 0.03125f);
  options.activation_range_factors = {{"x1", 4.0f}};
  const onnx::ModelProto moved = quantize_model(model, assignment, stats, options, "test");
  EXPECT_EQ(scale_of(moved, "x1"), 0.125f);
  EXPECT_EQ(scale_of(moved, "x2"), 0.03125f);
}

}  // namespace
}  // namespace mixprec
