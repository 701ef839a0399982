#include <gtest/gtest.h>

#include "mixprec/config.h"
#include "mixprec/rewrite.h"
#include "mixprec/runtime.h"
#include "mixprec/tensor_proto.h"
#include "support/model_builder.h"

namespace mixprec {
namespace {

using onnx::TensorProto;
using testing::ModelBuilder;

// x [1, 1, 2, 2] -> Conv "conv" (2 output channels, 1x1, W = [2, -1], optional B = [1, 3]) -> c,
// then the ops `tail` appends.
ModelBuilder conv_model(bool bias) {
  ModelBuilder b;
  b.add_input("x", TensorProto::FLOAT, {1, 1, 2, 2}).add_initializer("w", {2, 1, 1, 1}, {2.0f, -1.0f});
  if (bias) {
    b.add_initializer("b", {2}, {1.0f, 3.0f}).add_node("Conv", {"x", "w", "b"}, {"c"}, {}, "conv");
  } else {
    b.add_node("Conv", {"x", "w"}, {"c"}, {}, "conv");
  }
  return b;
}

std::vector<float> run(const onnx::ModelProto& model) {
  const std::vector<float> values = {1.0f, -2.0f, 0.5f, 4.0f};
  const Tensor x = Tensor::from_floats(Shape{1, 1, 2, 2}, values);
  return Session::from_model(model, "test").run({{"x", x}}).front().second.to_floats();
}

std::vector<float> initializer(const onnx::ModelProto& model, const std::string& name) {
  for (const auto& init : model.graph().initializer()) {
    if (init.name() == name) return tensor_from_proto(init, "test").to_floats();
  }
  return {};
}

TEST(RewriteFoldAffine, MulThenAddFoldIntoWeightsAndBias) {
  ModelBuilder b = conv_model(true);
  b.add_initializer("s", {1, 2, 1, 1}, {3.0f, -2.0f})
      .add_initializer("t", {2, 1, 1}, {0.5f, 1.0f})
      .add_node("Mul", {"s", "c"}, {"m"}, {}, "scale")  // constant first: Mul commutes
      .add_node("Add", {"m", "t"}, {"y"}, {}, "shift")
      .add_output("y", TensorProto::FLOAT, {1, 2, 2, 2});
  const onnx::ModelProto model = b.build();
  PrepareSummary summary;
  const onnx::ModelProto prepared = prepare_model(model, {.fold_affine = true}, "test", &summary);
  EXPECT_EQ(summary.folded_affines, 2u);
  ASSERT_EQ(prepared.graph().node_size(), 1);
  EXPECT_EQ(prepared.graph().node(0).output(0), "y");  // the graph output keeps its name
  // W' = W * s = [6, 2]; B' = B * s + t = [1*3 + 0.5, 3*(-2) + 1] = [3.5, -5].
  EXPECT_EQ(initializer(prepared, "w"), (std::vector<float>{6.0f, 2.0f}));
  EXPECT_EQ(initializer(prepared, "b"), (std::vector<float>{3.5f, -5.0f}));
  // Channel 0 of y = 6x + 3.5 at x = 1, -2, 0.5, 4; the runtime agrees with the original graph.
  const std::vector<float> folded = run(prepared);
  EXPECT_EQ(std::vector<float>(folded.begin(), folded.begin() + 4), (std::vector<float>{9.5f, -8.5f, 6.5f, 27.5f}));
  EXPECT_EQ(folded, run(model));
}

TEST(RewriteFoldAffine, DivAndSubByConstantsFoldWithoutABias) {
  ModelBuilder b = conv_model(false);
  b.add_initializer("four", {}, {4.0f})
      .add_initializer("t", {1, 2, 1, 1}, {1.0f, -1.0f})
      .add_node("Div", {"c", "four"}, {"d"}, {}, "div")
      .add_node("Sub", {"d", "t"}, {"y"}, {}, "sub")
      .add_output("y", TensorProto::FLOAT, {1, 2, 2, 2});
  const onnx::ModelProto model = b.build();
  PrepareSummary summary;
  const onnx::ModelProto prepared = prepare_model(model, {.fold_affine = true}, "test", &summary);
  EXPECT_EQ(summary.folded_affines, 2u);
  ASSERT_EQ(prepared.graph().node_size(), 1);
  EXPECT_EQ(initializer(prepared, "w"), (std::vector<float>{0.5f, -0.25f}));  // W / 4
  ASSERT_EQ(prepared.graph().node(0).input_size(), 3);                    // a bias was created
  EXPECT_EQ(initializer(prepared, prepared.graph().node(0).input(2)), (std::vector<float>{-1.0f, 1.0f}));
  EXPECT_EQ(run(prepared), run(model));
}

TEST(RewriteFoldAffine, LeavesWhatItCannotFoldExactly) {
  // A constant along the width axis mixes nothing but is not per channel; a Div with the
  // constant first is not a scale; a Conv output read twice cannot change.
  ModelBuilder spatial = conv_model(true);
  spatial.add_initializer("s", {1, 1, 1, 2}, {2.0f, 3.0f})
      .add_node("Mul", {"c", "s"}, {"y"}, {}, "mul")
      .add_output("y", TensorProto::FLOAT, {1, 2, 2, 2});
  ModelBuilder reciprocal = conv_model(true);
  reciprocal.add_initializer("one", {}, {1.0f})
      .add_node("Div", {"one", "c"}, {"y"}, {}, "div")
      .add_output("y", TensorProto::FLOAT, {1, 2, 2, 2});
  ModelBuilder shared = conv_model(true);
  shared.add_initializer("s", {}, {2.0f})
      .add_node("Mul", {"c", "s"}, {"m"}, {}, "mul")
      .add_node("Add", {"m", "c"}, {"y"}, {}, "add")
      .add_output("y", TensorProto::FLOAT, {1, 2, 2, 2});
  for (const onnx::ModelProto& model : {spatial.build(), reciprocal.build(), shared.build()}) {
    PrepareSummary summary;
    const onnx::ModelProto prepared = prepare_model(model, {.fold_affine = true}, "test", &summary);
    EXPECT_EQ(summary.folded_affines, 0u) << model.graph().node(1).name();
    EXPECT_EQ(prepared.graph().node_size(), model.graph().node_size());
  }
  // Off unless asked.
  ModelBuilder b = conv_model(true);
  b.add_initializer("s", {}, {2.0f}).add_node("Mul", {"c", "s"}, {"y"}, {}, "mul").add_output("y", TensorProto::FLOAT, {1, 2, 2, 2});
  PrepareSummary summary;
  EXPECT_EQ(prepare_model(b.build(), {}, "test", &summary).graph().node_size(), 2);
  EXPECT_EQ(summary.folded_affines, 0u);
}

TEST(RewriteFoldAffine, PerChannelWeightPresetsAskForIt) {
  for (const char* preset : {"U8S8", "A8W8", "A16W8"}) {
    EXPECT_TRUE(prepare_options(*preset_config(preset)).fold_affine) << preset;
  }
  for (const char* preset : {"XINT8", "BF16", "FP16"}) {
    EXPECT_FALSE(prepare_options(*preset_config(preset)).fold_affine) << preset;
  }
  QuantConfig config = *preset_config("XINT8");
  config.extra.fold_conv_affine = true;
  const nlohmann::ordered_json json = config_to_json(config);
  EXPECT_EQ(json["extra_options"]["FoldConvAffine"], true);
  EXPECT_EQ(parse_config(json, "test"), config);
}

}  // namespace
}  // namespace mixprec
