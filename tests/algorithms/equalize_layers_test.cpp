#include <gtest/gtest.h>

#include <cmath>

#include "mixprec/algorithms.h"
#include "mixprec/evaluation.h"
#include "mixprec/rewrite.h"
#include "mixprec/runtime.h"
#include "mixprec/tensor_proto.h"
#include "support/model_builder.h"

namespace mixprec {
namespace {

using onnx::TensorProto;
using testing::attr_float;
using testing::attr_int;
using testing::attr_ints;
using testing::deterministic_values;
using testing::ModelBuilder;

// Equalization multiplies and divides weights by per-channel scales that are not powers of two
// in general: outputs agree up to a few float roundings per layer, relative to their magnitude.
constexpr float kRelativeRounding = 1e-5f;

std::vector<float> initializer(const onnx::ModelProto& model, const std::string& name) {
  for (const auto& init : model.graph().initializer()) {
    if (init.name() == name) return tensor_from_proto(init, "test").to_floats();
  }
  ADD_FAILURE() << "no initializer " << name;
  return {};
}

std::vector<float> run(const onnx::ModelProto& model, const Shape& shape, uint32_t seed = 7) {
  const std::vector<float> values = deterministic_values(static_cast<size_t>(shape_numel(shape)), seed, 2.0f);
  const Tensor x = Tensor::from_floats(shape, values);
  return Session::from_model(model, "test").run({{"x", x}}).front().second.to_floats();
}

void expect_same_outputs(const std::vector<float>& want, const std::vector<float>& got) {
  ASSERT_EQ(want.size(), got.size());
  float peak = 0;
  for (float v : want) peak = std::max(peak, std::fabs(v));
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], kRelativeRounding * peak) << "element " << i;
}

// x [1, 2, 2, 2] -> Conv "head" (1x1: W1 rows [1, -0.5] and [0.25, 0.125], b1 [0.5, -0.0625])
// -> Relu -> Conv "tail" (1x1: W2 rows [4, 1] and [-2, 4], b2 [0.3, 0]) -> y.
onnx::ModelProto two_layer_model() {
  return ModelBuilder()
      .add_input("x", TensorProto::FLOAT, {1, 2, 2, 2})
      .add_initializer("w1", {2, 2, 1, 1}, {1.0f, -0.5f, 0.25f, 0.125f})
      .add_initializer("b1", {2}, {0.5f, -0.0625f})
      .add_initializer("w2", {2, 2, 1, 1}, {4.0f, 1.0f, -2.0f, 4.0f})
      .add_initializer("b2", {2}, {0.3f, 0.0f})
      .add_node("Conv", {"x", "w1", "b1"}, {"h"}, {}, "head")
      .add_node("Relu", {"h"}, {"r"}, {}, "relu")
      .add_node("Conv", {"r", "w2", "b2"}, {"y"}, {}, "tail")
      .add_output("y", TensorProto::FLOAT, {1, 2, 2, 2})
      .build();
}

TEST(AlgorithmsEqualize, HandWorkedScalesOfOnePair) {
  const onnx::ModelProto model = two_layer_model();
  onnx::ModelProto equalized = model;
  const EqualizeSummary summary = equalize_layers(equalized, {}, "test");
  EXPECT_EQ(summary.pairs, 1u);
  EXPECT_EQ(summary.steps, 1);
  // r1 = [1, 0.25] (the biases 0.5 and 0.0625 are below), r2 = tail columns = [4, 4]:
  // s = r2 / sqrt(r1 r2) = [2, 4]. Head rows and bias x s, tail columns / s.
  EXPECT_EQ(initializer(equalized, "w1"), (std::vector<float>{2.0f, -1.0f, 1.0f, 0.5f}));
  EXPECT_EQ(initializer(equalized, "b1"), (std::vector<float>{1.0f, -0.25f}));
  EXPECT_EQ(initializer(equalized, "w2"), (std::vector<float>{2.0f, 0.25f, -1.0f, 1.0f}));
  EXPECT_EQ(initializer(equalized, "b2"), (std::vector<float>{0.3f, 0.0f}));
  // Every scale is a power of two here: the outputs are bit-identical.
  EXPECT_EQ(run(equalized, {1, 2, 2, 2}), run(model, {1, 2, 2, 2}));
  // The statistics' fingerprint tells the equalized model apart (same structure, other values).
  EXPECT_NE(model_fingerprint(equalized), model_fingerprint(model));
}

TEST(AlgorithmsEqualize, AppendBiasCountsTheBiasInTheHeadRange) {
  onnx::ModelProto model = two_layer_model();
  // b1[1] = -1 is now larger than row 1 (0.25): with CLEScaleAppendBias, r1[1] = 1 and
  // s[1] = sqrt(4 / 1) = 2; without it, r1[1] = 0.25 and s[1] = 4.
  for (auto& init : *model.mutable_graph()->mutable_initializer()) {
    if (init.name() == "b1") init = tensor_to_proto(Tensor::from_floats(Shape{2}, std::vector<float>{0.5f, -1.0f}), "b1");
  }
  onnx::ModelProto with_bias = model;
  equalize_layers(with_bias, {.scale_append_bias = true}, "test");
  EXPECT_EQ(initializer(with_bias, "b1"), (std::vector<float>{1.0f, -2.0f}));
  onnx::ModelProto without = model;
  equalize_layers(without, {.scale_append_bias = false}, "test");
  EXPECT_EQ(initializer(without, "b1"), (std::vector<float>{1.0f, -4.0f}));
  EXPECT_EQ(run(with_bias, {1, 2, 2, 2}), run(model, {1, 2, 2, 2}));
  EXPECT_EQ(run(without, {1, 2, 2, 2}), run(model, {1, 2, 2, 2}));
}

TEST(AlgorithmsEqualize, ZeroRangeChannelIsLeftAlone) {
  onnx::ModelProto model = two_layer_model();
  // Head row 1 and its bias all zero: a dead channel, s = 1 instead of a division by zero.
  for (auto& init : *model.mutable_graph()->mutable_initializer()) {
    if (init.name() == "w1") {
      init = tensor_to_proto(Tensor::from_floats(Shape{2, 2, 1, 1}, std::vector<float>{1.0f, -0.5f, 0.0f, 0.0f}), "w1");
    }
    if (init.name() == "b1") init = tensor_to_proto(Tensor::from_floats(Shape{2}, std::vector<float>{0.5f, 0.0f}), "b1");
  }
  onnx::ModelProto equalized = model;
  equalize_layers(equalized, {}, "test");
  EXPECT_EQ(initializer(equalized, "w1"), (std::vector<float>{2.0f, -1.0f, 0.0f, 0.0f}));
  EXPECT_EQ(initializer(equalized, "w2"), (std::vector<float>{2.0f, 1.0f, -1.0f, 4.0f}));
  EXPECT_EQ(run(equalized, {1, 2, 2, 2}), run(model, {1, 2, 2, 2}));
}

// x [1, 3, 6, 6] -> Conv "a" (4 out, 3x3) -> Relu -> Pad (1 on H and W, constant 0) -> depthwise
// Conv "dw" (4 groups, 3x3) -> LeakyRelu -> Conv "b" (1x1, 5 out) -> y [1, 5, 6, 6].
onnx::ModelProto conv_dw_conv_model() {
  return ModelBuilder()
      .opset(13)
      .add_input("x", TensorProto::FLOAT, {1, 3, 6, 6})
      .add_initializer("wa", {4, 3, 3, 3}, deterministic_values(108, 1, 1.5f))
      .add_initializer("ba", {4}, deterministic_values(4, 2, 0.3f))
      .add_initializer("wd", {4, 1, 3, 3}, deterministic_values(36, 3, 0.2f))
      .add_initializer("bd", {4}, deterministic_values(4, 4, 0.1f))
      .add_initializer("wb", {5, 4, 1, 1}, deterministic_values(20, 5, 3.0f))
      .add_initializer_i64("pads", {8}, {0, 0, 1, 1, 0, 0, 1, 1})
      .add_node("Conv", {"x", "wa", "ba"}, {"a"}, {attr_ints("pads", {1, 1, 1, 1})}, "a")
      .add_node("Relu", {"a"}, {"ar"}, {}, "relu")
      .add_node("Pad", {"ar", "pads"}, {"ap"}, {}, "pad")
      .add_node("Conv", {"ap", "wd", "bd"}, {"d"}, {attr_int("group", 4)}, "dw")
      .add_node("LeakyRelu", {"d"}, {"dl"}, {attr_float("alpha", 0.1f)}, "leaky")
      .add_node("Conv", {"dl", "wb"}, {"y"}, {}, "b")
      .add_output("y", TensorProto::FLOAT, {1, 5, 6, 6})
      .build();
}

// The largest |w| of output row k and of input column k of a [O, I, kh, kw] weight.
float row_range(const std::vector<float>& w, size_t per_row, size_t k) {
  float r = 0;
  for (size_t i = 0; i < per_row; ++i) r = std::max(r, std::fabs(w[k * per_row + i]));
  return r;
}

TEST(AlgorithmsEqualize, ConvDepthwiseConvUntilConverged) {
  const onnx::ModelProto model = conv_dw_conv_model();
  onnx::ModelProto equalized = model;
  const EqualizeSummary summary = equalize_layers(equalized, {.steps = -1, .scale_append_bias = false}, "test");
  EXPECT_EQ(summary.pairs, 2u);  // a -> dw and dw -> b
  EXPECT_GT(summary.steps, 1);
  EXPECT_LT(summary.last_change, 1e-6);
  EXPECT_TRUE(summary.notes.empty());
  expect_same_outputs(run(model, {1, 3, 6, 6}), run(equalized, {1, 3, 6, 6}));
  // Converged: each channel of "a" has the range of the depthwise filter it feeds, and each
  // depthwise filter the range of the column of "b" it feeds.
  const auto wa = initializer(equalized, "wa");
  const auto wd = initializer(equalized, "wd");
  const auto wb = initializer(equalized, "wb");
  for (size_t k = 0; k < 4; ++k) {
    float column = 0;
    for (size_t o = 0; o < 5; ++o) column = std::max(column, std::fabs(wb[o * 4 + k]));
    EXPECT_NEAR(row_range(wa, 27, k), row_range(wd, 9, k), 1e-4f * row_range(wd, 9, k));
    EXPECT_NEAR(row_range(wd, 9, k), column, 1e-4f * column);
  }
}

TEST(AlgorithmsEqualize, GemmTailAfterReduceMean) {
  const onnx::ModelProto model = ModelBuilder()
                                     .add_input("x", TensorProto::FLOAT, {2, 3, 4, 4})
                                     .add_initializer("w", {6, 3, 1, 1}, deterministic_values(18, 11, 2.0f))
                                     .add_initializer("b", {6}, deterministic_values(6, 12, 0.5f))
                                     .add_initializer("fc", {2, 6}, deterministic_values(12, 13, 0.25f))
                                     .add_initializer("fc_b", {2}, {0.1f, -0.2f})
                                     .add_node("Conv", {"x", "w", "b"}, {"c"}, {}, "conv")
                                     .add_node("Relu", {"c"}, {"r"}, {}, "relu")
                                     .add_node("ReduceMean", {"r"}, {"m"}, {attr_ints("axes", {2, 3}), attr_int("keepdims", 0)}, "mean")
                                     .add_node("Gemm", {"m", "fc", "fc_b"}, {"y"}, {attr_int("transB", 1)}, "fc")
                                     .add_output("y", TensorProto::FLOAT, {2, 2})
                                     .build();
  onnx::ModelProto equalized = model;
  EXPECT_EQ(equalize_layers(equalized, {}, "test").pairs, 1u);
  EXPECT_NE(initializer(equalized, "fc"), initializer(model, "fc"));
  expect_same_outputs(run(model, {2, 3, 4, 4}), run(equalized, {2, 3, 4, 4}));
}

// x [1, 2, 2, 2] -> Conv "head" (two_layer_model's W1, no bias) -> h; the caller adds what
// follows and the tail Conv, which reads "w2" (two_layer_model's W2).
ModelBuilder head_without_bias(int64_t opset = 17) {
  ModelBuilder b;
  b.opset(opset)
      .add_input("x", TensorProto::FLOAT, {1, 2, 2, 2})
      .add_initializer("w1", {2, 2, 1, 1}, {1.0f, -0.5f, 0.25f, 0.125f})
      .add_initializer("w2", {2, 2, 1, 1}, {4.0f, 1.0f, -2.0f, 4.0f})
      .add_node("Conv", {"x", "w1"}, {"h"}, {}, "head");
  return b;
}

// x -> Conv -> Clip(0, 6) -> Conv: ReLU6 is crossed only when ReplaceClip6Relu allows it.
onnx::ModelProto clip6_model() {
  return head_without_bias()
      .add_initializer("low", {}, {0.0f})
      .add_initializer("high", {}, {6.0f})
      .add_node("Clip", {"h", "low", "high"}, {"r"}, {}, "relu6")
      .add_node("Conv", {"r", "w2"}, {"y"}, {}, "tail")
      .add_output("y", TensorProto::FLOAT, {1, 2, 2, 2})
      .build();
}

TEST(AlgorithmsEqualize, Clip6OnlyWithReplaceClip6Relu) {
  onnx::ModelProto kept = clip6_model();
  const EqualizeSummary without = equalize_layers(kept, {}, "test");
  EXPECT_EQ(without.pairs, 0u);
  ASSERT_EQ(without.notes.size(), 1u);  // visible, not an error
  EXPECT_NE(without.notes[0].find("no Conv/Gemm"), std::string::npos);
  EXPECT_EQ(kept.graph().node(1).op_type(), "Clip");
  EXPECT_EQ(kept.metadata_props_size(), 0);  // unchanged: no mark either

  onnx::ModelProto replaced = clip6_model();
  const EqualizeSummary with = equalize_layers(replaced, {.replace_clip6_relu = true}, "test");
  EXPECT_EQ(with.clip6_replaced, 1u);
  EXPECT_EQ(with.pairs, 1u);
  EXPECT_EQ(replaced.graph().node(1).op_type(), "Relu");
}

TEST(AlgorithmsEqualize, ChainsThatWouldChangeTheOutputAreNotPaired) {
  // A Pad with a non-zero constant, and a Relu whose output has a second reader.
  const onnx::ModelProto padded = head_without_bias(13)
                                      .add_initializer_i64("pads", {8}, {0, 0, 1, 1, 0, 0, 1, 1})
                                      .add_initializer("one", {}, {1.0f})
                                      .add_node("Pad", {"h", "pads", "one"}, {"p"}, {}, "pad")
                                      .add_node("Conv", {"p", "w2"}, {"y"}, {}, "tail")
                                      .add_output("y", TensorProto::FLOAT, {1, 2, 4, 4})
                                      .build();
  onnx::ModelProto copy = padded;
  EXPECT_EQ(equalize_layers(copy, {}, "test").pairs, 0u);

  const onnx::ModelProto branched = head_without_bias()
                                        .add_node("Relu", {"h"}, {"r"}, {}, "relu")
                                        .add_node("Conv", {"r", "w2"}, {"y"}, {}, "tail")
                                        .add_node("Neg", {"r"}, {"z"}, {}, "other")
                                        .add_output("y", TensorProto::FLOAT, {1, 2, 2, 2})
                                        .add_output("z", TensorProto::FLOAT, {1, 2, 2, 2})
                                        .build();
  copy = branched;
  EXPECT_EQ(equalize_layers(copy, {}, "test").pairs, 0u);
}

// x [1, 4, 2, 2] -> Conv "head" (1x1, rows [4, 4, 4, 4] and [2, 0, 0, 0], bias [1, 0.25]) ->
// Mul by the constant "m" -> Add 0.5 -> y: PP-LCNet's learnable affine after a Conv.
onnx::ModelProto mul_tail_model(const std::vector<int64_t>& m_dims, const std::vector<float>& m) {
  return ModelBuilder()
      .add_input("x", TensorProto::FLOAT, {1, 4, 2, 2})
      .add_initializer("w", {2, 4, 1, 1}, {4.0f, 4.0f, 4.0f, 4.0f, 2.0f, 0.0f, 0.0f, 0.0f})
      .add_initializer("b", {2}, {1.0f, 0.25f})
      .add_initializer("m", m_dims, m)
      .add_initializer("half", {}, {0.5f})
      .add_node("Conv", {"x", "w", "b"}, {"h"}, {}, "head")
      .add_node("Mul", {"h", "m"}, {"s"}, {}, "scale")
      .add_node("Add", {"s", "half"}, {"y"}, {}, "shift")
      .add_output("y", TensorProto::FLOAT, {1, 2, 2, 2})
      .build();
}

TEST(AlgorithmsEqualize, HandWorkedMulTail) {
  const onnx::ModelProto model = mul_tail_model({}, {0.75f});
  onnx::ModelProto equalized = model;
  const EqualizeSummary summary = equalize_layers(equalized, {.mul_tails = true}, "test");
  EXPECT_EQ(summary.pairs, 0u);
  EXPECT_EQ(summary.mul_tails, 1u);
  EXPECT_TRUE(summary.notes.empty());
  // r = sqrt(largest |w| x sum |w|) = sqrt(4 x 16) = 8 and sqrt(2 x 2) = 2, so t = [1, 1/4]
  // (the largest |w| alone would give 1/2, the sum alone 1/8). m t = [0.75, 0.1875]: on the
  // grid 2^-7 that 0.75 sets (0.75 / 127 -> 2^-7), 96 and 24 steps, so nothing is rounded.
  EXPECT_EQ(initializer(equalized, "w"), (std::vector<float>{4.0f, 4.0f, 4.0f, 4.0f, 8.0f, 0.0f, 0.0f, 0.0f}));
  EXPECT_EQ(initializer(equalized, "b"), (std::vector<float>{1.0f, 1.0f}));
  EXPECT_EQ(initializer(equalized, "m"), (std::vector<float>{0.75f, 0.1875f}));
  for (const auto& init : equalized.graph().initializer()) {
    if (init.name() == "m") {
      EXPECT_EQ(std::vector<int64_t>(init.dims().begin(), init.dims().end()), (std::vector<int64_t>{2, 1, 1}));
    }
  }
  // Every scale is a power of two: the outputs are bit-identical.
  EXPECT_EQ(run(equalized, {1, 4, 2, 2}), run(model, {1, 4, 2, 2}));
  EXPECT_NE(model_fingerprint(equalized), model_fingerprint(model));
  // Off unless asked for (Quark's CLE has no Mul tails).
  onnx::ModelProto plain = model;
  EXPECT_EQ(equalize_layers(plain, {}, "test").mul_tails, 0u);
  EXPECT_EQ(initializer(plain, "m"), (std::vector<float>{0.75f}));
}

TEST(AlgorithmsEqualize, MulTailConstantsLandOnThePowerOfTwoGrid) {
  // A per-channel constant [1, 2, 1, 1] of 0.7 and -0.3: m t = [0.7, -0.075] rounds on the
  // grid 2^-7 (0.7 / 127 -> 2^-7) to 90 and -10 steps; t is taken from the rounded values, so
  // the model stays exact to float rounding.
  const onnx::ModelProto model = mul_tail_model({1, 2, 1, 1}, {0.7f, -0.3f});
  onnx::ModelProto equalized = model;
  ASSERT_EQ(equalize_layers(equalized, {.mul_tails = true}, "test").mul_tails, 1u);
  EXPECT_EQ(initializer(equalized, "m"), (std::vector<float>{90.0f / 128, -10.0f / 128}));
  // t = [90 / 128 / 0.7, 10 / 128 / 0.3] = [1.00446, 0.26042]: row 1's 2 becomes 7.68.
  const std::vector<float> w = initializer(equalized, "w");
  EXPECT_NEAR(w[0], 4.0 / (90.0 / 128 / 0.7), 1e-5);
  EXPECT_NEAR(w[4], 2.0 / (10.0 / 128 / 0.3), 1e-5);
  expect_same_outputs(run(model, {1, 4, 2, 2}), run(equalized, {1, 4, 2, 2}));
}

TEST(AlgorithmsEqualize, MulsThatAreNotPerChannelTailsAreLeftAlone) {
  // A constant along the width axis, not the channels: scaling channels would not commute.
  onnx::ModelProto along_width = mul_tail_model({1, 1, 1, 2}, {0.5f, 2.0f});
  const EqualizeSummary summary = equalize_layers(along_width, {.mul_tails = true}, "test");
  EXPECT_EQ(summary.mul_tails, 0u);
  // Two visible notes: no pairs, and no Mul tails.
  ASSERT_EQ(summary.notes.size(), 2u);
  EXPECT_NE(summary.notes[0].find("no Mul tails"), std::string::npos) << summary.notes[0];
  EXPECT_NE(summary.notes[1].find("pairs: nothing equalized"), std::string::npos) << summary.notes[1];
  EXPECT_EQ(initializer(along_width, "w"), initializer(mul_tail_model({1, 1, 1, 2}, {0.5f, 2.0f}), "w"));
  // A one-value constant of rank 5 makes the Mul's output rank 5: one per channel would not.
  onnx::ModelProto higher_rank = mul_tail_model({1, 1, 1, 1, 1}, {0.5f});
  EXPECT_EQ(equalize_layers(higher_rank, {.mul_tails = true}, "test").mul_tails, 0u);
  // A Mul by another activation (an SE gate) is not a tail either.
  onnx::ModelProto gated = ModelBuilder()
                               .add_input("x", TensorProto::FLOAT, {1, 4, 2, 2})
                               .add_initializer("w", {2, 4, 1, 1}, {4.0f, 4.0f, 4.0f, 4.0f, 2.0f, 0.0f, 0.0f, 0.0f})
                               .add_node("Conv", {"x", "w"}, {"h"}, {}, "head")
                               .add_node("Sigmoid", {"h"}, {"g"}, {}, "gate")
                               .add_node("Conv", {"x", "w"}, {"h2"}, {}, "other")
                               .add_node("Mul", {"h2", "g"}, {"y"}, {}, "scale")
                               .add_output("y", TensorProto::FLOAT, {1, 2, 2, 2})
                               .build();
  EXPECT_EQ(equalize_layers(gated, {.mul_tails = true}, "test").mul_tails, 0u);
}

TEST(AlgorithmsEqualize, PrepareRunsItAfterFoldingAndCalibrationSeesIt) {
  QuantConfig config = *preset_config("XINT8");
  config.algorithms.push_back({.name = "cle", .cle_steps = 2});
  const PrepareOptions options = prepare_options(config);
  ASSERT_TRUE(options.cle);
  EXPECT_EQ(options.cle->steps, 2);
  PrepareSummary summary;
  const onnx::ModelProto prepared = prepare_model(two_layer_model(), options, "test", &summary);
  ASSERT_TRUE(summary.cle);
  EXPECT_EQ(summary.cle->pairs, 1u);
  EXPECT_EQ(summary.cle->steps, 2);
  EXPECT_EQ(run(prepared, {1, 2, 2, 2}), run(two_layer_model(), {1, 2, 2, 2}));
}

}  // namespace
}  // namespace mixprec
