// MAC estimation on tiny models, against values worked out by hand. All MAC counts here are
// small integers, exact in double, so they are compared with EXPECT_EQ.
#include "mixprec/macs.h"

#include <gtest/gtest.h>

#include "mixprec/error.h"
#include "support/model_builder.h"

namespace mixprec {
namespace {

using onnx::TensorProto;
using testing::attr_int;
using testing::attr_ints;
using testing::DimSpec;
using testing::ModelBuilder;

constexpr char kPath[] = "tiny.onnx";

std::vector<float> zeros(size_t count) { return std::vector<float>(count, 0.0f); }

// x [input_dims] -> Conv "conv" (W [out_channels, in_channels / group, k, k], pads `pad`) -> y.
onnx::ModelProto conv_model(const std::vector<DimSpec>& input_dims, int64_t out_channels, int64_t in_per_group,
                            int64_t kernel, int64_t pad, int64_t group = 1, int64_t stride = 1) {
  const std::vector<int64_t> w_dims = {out_channels, in_per_group, kernel, kernel};
  return ModelBuilder()
      .add_input("x", TensorProto::FLOAT, input_dims)
      .add_initializer("w", w_dims, zeros(static_cast<size_t>(out_channels * in_per_group * kernel * kernel)))
      .add_node("Conv", {"x", "w"}, {"y"},
                {attr_ints("kernel_shape", {kernel, kernel}), attr_ints("pads", {pad, pad, pad, pad}),
                 attr_ints("strides", {stride, stride}), attr_int("group", group)},
                "conv")
      .add_output("y", TensorProto::FLOAT)
      .build();
}

TEST(Macs, ConvIsOutputElementsTimesInputChannelsTimesKernel) {
  // 3 -> 8 channels, 3x3, pads 1 on 1x3x16x16: output 1x8x16x16, 8*16*16 * 3*9 = 55296.
  const MacEstimate estimate = estimate_node_macs(conv_model({1, 3, 16, 16}, 8, 3, 3, 1), {}, kPath);
  ASSERT_EQ(estimate.nodes.size(), 1u);
  const NodeMacs& conv = estimate.nodes.at("conv");
  EXPECT_EQ(conv.op_type, "Conv");
  EXPECT_EQ(conv.macs, 55296.0);
  EXPECT_TRUE(conv.exact);
  EXPECT_EQ(estimate.total, 55296.0);
  EXPECT_TRUE(estimate.exact);
  EXPECT_TRUE(estimate.notes.empty());
}

TEST(Macs, GroupedAndDepthwiseConv) {
  // 8 -> 8 channels in 4 groups (W [8, 2, 3, 3]), no padding on 1x8x10x10: output 1x8x8x8,
  // 512 * 2*9 = 9216.
  EXPECT_EQ(estimate_node_macs(conv_model({1, 8, 10, 10}, 8, 2, 3, 0, 4)).total, 9216.0);
  // Depthwise 4 channels (W [4, 1, 3, 3]), pads 1, stride 2 on 1x4x5x5: output 1x4x3x3,
  // 36 * 9 = 324.
  EXPECT_EQ(estimate_node_macs(conv_model({1, 4, 5, 5}, 4, 1, 3, 1, 4, 2)).total, 324.0);
}

TEST(Macs, ConvTransposeIsInputElementsTimesOutputChannelsTimesKernel) {
  // W [C_in 4, C_out/group, 3, 3], stride 2, on 1x4x5x5 (100 input elements).
  const auto model = [](int64_t out_per_group, int64_t group) {
    return ModelBuilder()
        .add_input("x", TensorProto::FLOAT, {1, 4, 5, 5})
        .add_initializer("w", {4, out_per_group, 3, 3}, zeros(static_cast<size_t>(4 * out_per_group * 9)))
        .add_node("ConvTranspose", {"x", "w"}, {"y"}, {attr_ints("strides", {2, 2}), attr_int("group", group)}, "up")
        .add_output("y", TensorProto::FLOAT)
        .build();
  };
  // 6 output channels: 100 * 6*9 = 5400.
  EXPECT_EQ(estimate_node_macs(model(6, 1)).nodes.at("up").macs, 5400.0);
  // 6 output channels in 2 groups (3 per group): 100 * 3*9 = 2700.
  const MacEstimate grouped = estimate_node_macs(model(3, 2));
  EXPECT_EQ(grouped.nodes.at("up").macs, 2700.0);
  EXPECT_TRUE(grouped.exact);
}

TEST(Macs, MatMulIsOutputElementsTimesK) {
  // [1, 4, 8] x [8, 5] -> [1, 4, 5]: 20 * 8 = 160.
  const onnx::ModelProto model = ModelBuilder()
                                     .add_input("a", TensorProto::FLOAT, {1, 4, 8})
                                     .add_initializer("b", {8, 5}, zeros(40))
                                     .add_node("MatMul", {"a", "b"}, {"y"}, {}, "mm")
                                     .add_output("y", TensorProto::FLOAT)
                                     .build();
  const MacEstimate estimate = estimate_node_macs(model);
  EXPECT_EQ(estimate.nodes.at("mm").macs, 160.0);
  EXPECT_TRUE(estimate.exact);
}

TEST(Macs, MatMulIntegerCountsLikeMatMul) {
  // uint8 [1, 4, 8] x int8 [8, 5]: 160, as the float MatMul.
  const onnx::ModelProto model = ModelBuilder()
                                     .add_input("a", TensorProto::UINT8, {1, 4, 8})
                                     .add_initializer_i8("b", {8, 5}, std::vector<int8_t>(40, 1))
                                     .add_node("MatMulInteger", {"a", "b"}, {"y"}, {}, "mmi")
                                     .add_output("y", TensorProto::INT32)
                                     .build();
  EXPECT_EQ(estimate_node_macs(model).nodes.at("mmi").macs, 160.0);
}

TEST(Macs, GemmIsMTimesNTimesK) {
  // A [2, 16], B [10, 16] with transB: M 2, N 10, K 16 -> 320.
  const onnx::ModelProto trans_b = ModelBuilder()
                                       .add_input("a", TensorProto::FLOAT, {2, 16})
                                       .add_initializer("b", {10, 16}, zeros(160))
                                       .add_initializer("c", {10}, zeros(10))
                                       .add_node("Gemm", {"a", "b", "c"}, {"y"}, {attr_int("transB", 1)}, "fc")
                                       .add_output("y", TensorProto::FLOAT)
                                       .build();
  EXPECT_EQ(estimate_node_macs(trans_b).nodes.at("fc").macs, 320.0);
  // A [16, 3] with transA, B [16, 10]: M 3, N 10, K 16 -> 480.
  const onnx::ModelProto trans_a = ModelBuilder()
                                       .add_input("a", TensorProto::FLOAT, {16, 3})
                                       .add_initializer("b", {16, 10}, zeros(160))
                                       .add_node("Gemm", {"a", "b"}, {"y"}, {attr_int("transA", 1)}, "fc")
                                       .add_output("y", TensorProto::FLOAT)
                                       .build();
  EXPECT_EQ(estimate_node_macs(trans_a).nodes.at("fc").macs, 480.0);
}

TEST(Macs, CannedConvChainCountsConvsAndZeroForRelu) {
  // Input 1x3x8x8, 3x3 pad 1, 4 channels: conv_0 256 * 3*9 = 6912, conv_1 256 * 4*9 = 9216.
  const MacEstimate estimate = estimate_node_macs(testing::conv_chain(2));
  EXPECT_EQ(estimate.nodes.at("conv_0").macs, 6912.0);
  EXPECT_EQ(estimate.nodes.at("conv_1").macs, 9216.0);
  EXPECT_EQ(estimate.nodes.at("relu_0").macs, 0.0);
  EXPECT_TRUE(estimate.nodes.at("relu_0").exact);
  EXPECT_EQ(estimate.total, 6912.0 + 9216.0);
  EXPECT_TRUE(estimate.exact);
}

TEST(Macs, WeightFromAConstantNodeUsesTheInferredShape) {
  onnx::TensorProto weight;
  weight.set_data_type(TensorProto::FLOAT);
  for (int64_t dim : {8, 5}) weight.add_dims(dim);
  for (int i = 0; i < 40; ++i) weight.add_float_data(0.0f);
  onnx::AttributeProto value;
  value.set_name("value");
  value.set_type(onnx::AttributeProto::TENSOR);
  *value.mutable_t() = weight;
  const onnx::ModelProto model = ModelBuilder()
                                     .add_input("a", TensorProto::FLOAT, {1, 4, 8})
                                     .add_node("Constant", {}, {"b"}, {value}, "b_const")
                                     .add_node("MatMul", {"a", "b"}, {"y"}, {}, "mm")
                                     .add_output("y", TensorProto::FLOAT)
                                     .build();
  const MacEstimate estimate = estimate_node_macs(model);
  EXPECT_EQ(estimate.nodes.at("mm").macs, 160.0);
  EXPECT_TRUE(estimate.exact);
  EXPECT_EQ(estimate.nodes.at("b_const").macs, 0.0);
}

TEST(Macs, SymbolicBatchTakesTheGivenShapeOrOne) {
  const onnx::ModelProto model = conv_model({std::string("N"), 3, 16, 16}, 8, 3, 3, 1);
  // Batch 4: 4 * 55296.
  const MacEstimate given = estimate_node_macs(model, {{"x", {4, 3, 16, 16}}}, kPath);
  EXPECT_EQ(given.total, 221184.0);
  EXPECT_TRUE(given.exact);
  EXPECT_TRUE(given.notes.empty());
  // Not given: batch 1, and the assumption is stated.
  const MacEstimate assumed = estimate_node_macs(model, {}, kPath);
  EXPECT_EQ(assumed.total, 55296.0);
  EXPECT_TRUE(assumed.exact);
  EXPECT_EQ(assumed.notes, (std::vector<std::string>{"input 'x': batch dim 'N' taken as 1"}));
  // The caller's model is untouched.
  EXPECT_EQ(model.graph().input(0).type().tensor_type().shape().dim(0).dim_param(), "N");
}

TEST(Macs, UnknownSpatialDimsFallBackToTheWeightElementCount) {
  const onnx::ModelProto model = conv_model({std::string("N"), 3, std::string("H"), std::string("W")}, 8, 3, 3, 1);
  const MacEstimate estimate = estimate_node_macs(model, {}, kPath);
  // W [8, 3, 3, 3]: 216 elements.
  EXPECT_EQ(estimate.nodes.at("conv").macs, 216.0);
  EXPECT_FALSE(estimate.nodes.at("conv").exact);
  EXPECT_FALSE(estimate.exact);
  ASSERT_EQ(estimate.notes.size(), 2u);
  EXPECT_EQ(estimate.notes[1], "1 node(s) with unknown shapes estimated from their weight's element count: conv");
  // With H and W given, exact again.
  const MacEstimate exact = estimate_node_macs(model, {{"x", {1, 3, 16, 16}}}, kPath);
  EXPECT_EQ(exact.total, 55296.0);
  EXPECT_TRUE(exact.exact);
}

TEST(Macs, SubgraphNodesAreCountedUnderTheirScopedLabels) {
  // Both branches read the outer "a" [1, 4, 8]: then MatMul with [8, 5] (160), else with
  // [8, 2] (1*4*2 * 8 = 64).
  const onnx::GraphProto then_branch = ModelBuilder()
                                           .add_node("MatMul", {"a", "b5"}, {"t"}, {}, "then_mm")
                                           .add_output("t", TensorProto::FLOAT)
                                           .build_graph();
  const onnx::GraphProto else_branch = ModelBuilder()
                                           .add_node("MatMul", {"a", "b2"}, {"e"}, {}, "else_mm")
                                           .add_output("e", TensorProto::FLOAT)
                                           .build_graph();
  const onnx::ModelProto model =
      ModelBuilder()
          .add_input("cond", TensorProto::BOOL, {})
          .add_input("a", TensorProto::FLOAT, {1, 4, 8})
          .add_initializer("b5", {8, 5}, zeros(40))
          .add_initializer("b2", {8, 2}, zeros(16))
          .add_node("If", {"cond"}, {"y"},
                    {testing::attr_graph("then_branch", then_branch), testing::attr_graph("else_branch", else_branch)},
                    "branch")
          .add_output("y", TensorProto::FLOAT)
          .build();
  const MacEstimate estimate = estimate_node_macs(model);
  EXPECT_EQ(estimate.nodes.at("branch.then_branch/then_mm").macs, 160.0);
  EXPECT_EQ(estimate.nodes.at("branch.else_branch/else_mm").macs, 64.0);
  EXPECT_EQ(estimate.nodes.at("branch").macs, 0.0);
  EXPECT_TRUE(estimate.exact);
}

TEST(Macs, UnnamedNodesUseTheAnalysisLabels) {
  onnx::ModelProto model = conv_model({1, 3, 16, 16}, 8, 3, 3, 1);
  model.mutable_graph()->mutable_node(0)->clear_name();
  const MacEstimate estimate = estimate_node_macs(model);
  ASSERT_EQ(estimate.nodes.count("Conv#0"), 1u);
  EXPECT_EQ(estimate.nodes.at("Conv#0").macs, 55296.0);
}

TEST(Macs, ComputeOpsWithoutAFormulaAreFlaggedNotExact) {
  const onnx::ModelProto model = ModelBuilder()
                                     .add_input("a", TensorProto::FLOAT, {2, 3})
                                     .add_input("b", TensorProto::FLOAT, {3, 4})
                                     .add_node("Einsum", {"a", "b"}, {"y"}, {testing::attr_string("equation", "ij,jk->ik")},
                                               "einsum")
                                     .add_output("y", TensorProto::FLOAT)
                                     .build();
  const MacEstimate estimate = estimate_node_macs(model);
  EXPECT_EQ(estimate.nodes.at("einsum").op_type, "Einsum");
  EXPECT_EQ(estimate.nodes.at("einsum").macs, 0.0);
  EXPECT_FALSE(estimate.nodes.at("einsum").exact);
  EXPECT_FALSE(estimate.exact);
  EXPECT_EQ(estimate.notes, (std::vector<std::string>{"1 compute node(s) not counted (no MAC formula): einsum"}));
}

void expect_bad_input(const std::map<std::string, std::vector<int64_t>>& shapes, const std::string& message) {
  const onnx::ModelProto model = conv_model({std::string("N"), 3, 16, 16}, 8, 3, 3, 1);
  try {
    estimate_node_macs(model, shapes, kPath);
    FAIL() << "expected an error: " << message;
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::kBadInput);
    EXPECT_EQ(error.file(), kPath);
    EXPECT_EQ(error.message(), message);
  }
}

TEST(Macs, BadInputShapesAreErrors) {
  expect_bad_input({{"w", {8, 3, 3, 3}}}, "input shape given for 'w', which is not a graph input (inputs: x)");
  expect_bad_input({{"x", {1, 3, 16}}}, "input 'x' has rank 4, the given shape has 3 dims");
  expect_bad_input({{"x", {1, 4, 16, 16}}}, "input 'x': dim 1 is declared 3, the given shape has 4");
  expect_bad_input({{"x", {0, 3, 16, 16}}}, "input 'x': dim 0 of the given shape is 0, must be > 0");
}

}  // namespace
}  // namespace mixprec

namespace mixprec {
namespace {

// x [5, 2, 3] (seq 5, batch 2, input 3) -> LSTM, hidden 4, one direction: W [1, 16, 3],
// R [1, 16, 4]; each of the 10 (step, batch) pairs multiplies 16x3 + 16x4 = 112: 1120.
onnx::ModelProto lstm_model() {
  return testing::ModelBuilder()
      .add_input("x", onnx::TensorProto::FLOAT, {5, 2, 3})
      .add_output("y_h", onnx::TensorProto::FLOAT, {1, 2, 4})
      .add_initializer("W", {1, 16, 3}, std::vector<float>(48, 0.1f))
      .add_initializer("R", {1, 16, 4}, std::vector<float>(64, 0.1f))
      .add_node("LSTM", {"x", "W", "R"}, {"", "y_h"}, {testing::attr_int("hidden_size", 4)}, "lstm")
      .build();
}

TEST(Macs, RecurrentOpsCountEveryStepOfBothWeightMatrices) {
  const MacEstimate estimate = estimate_node_macs(lstm_model());
  EXPECT_EQ(estimate.nodes.at("lstm").macs, 1120.0);
  EXPECT_TRUE(estimate.exact);
}

TEST(Macs, ObservedShapesReachIntoBodies) {
  // A Conv inside an If branch reads a value whose shape only a run tells (a Reshape to a
  // computed shape): given as observed, its MACs are exact.
  const onnx::GraphProto branch =
      testing::ModelBuilder()
          .add_output("y", onnx::TensorProto::FLOAT)
          .add_initializer("w", {2, 1, 3}, std::vector<float>(6, 0.1f))
          .add_node("Reshape", {"x", "shape"}, {"x3"}, {}, "to_3d")
          .add_node("Conv", {"x3", "w"}, {"y"}, {testing::attr_ints("pads", {1, 1})}, "conv")
          .build_graph();
  const onnx::ModelProto model = testing::ModelBuilder()
                                     .add_input("x", onnx::TensorProto::FLOAT, {1, 8})
                                     .add_input("shape", onnx::TensorProto::INT64, {3})
                                     .add_input("c", onnx::TensorProto::BOOL, {})
                                     .add_output("out", onnx::TensorProto::FLOAT)
                                     .add_node("If", {"c"}, {"out"},
                                               {testing::attr_graph("then_branch", branch),
                                                testing::attr_graph("else_branch", branch)},
                                               "if")
                                     .build();
  EXPECT_FALSE(estimate_node_macs(model).nodes.at("if.then_branch/conv").exact);
  // x3 [1, 1, 8] -> y [1, 2, 8]: 16 outputs x 1 x 3 = 48.
  const MacEstimate observed = estimate_node_macs(model, {}, "", {{"x3", {1, 1, 8}}});
  EXPECT_EQ(observed.nodes.at("if.then_branch/conv").macs, 48.0);
  EXPECT_TRUE(observed.nodes.at("if.then_branch/conv").exact);
}

}  // namespace
}  // namespace mixprec
