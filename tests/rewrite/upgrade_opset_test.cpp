#include "rewrite/upgrade_opset.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <optional>
#include <ostream>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "mixprec/error.h"
#include "mixprec/runtime.h"
#include "support/model_builder.h"

namespace mixprec {
namespace {

using testing::attr_float;
using testing::attr_graph;
using testing::attr_int;
using testing::attr_ints;
using testing::attr_string;
using testing::ModelBuilder;

constexpr int32_t kFloat = onnx::TensorProto::FLOAT;
constexpr int32_t kInt64 = onnx::TensorProto::INT64;

// Deterministic float inputs for every graph input of `model` (all declared float, static).
NamedTensors float_inputs(const onnx::ModelProto& model) {
  NamedTensors inputs;
  uint32_t seed = 1;
  for (const onnx::ValueInfoProto& input : model.graph().input()) {
    if (std::ranges::any_of(model.graph().initializer(),
                            [&](const onnx::TensorProto& tensor) { return tensor.name() == input.name(); })) {
      continue;  // an IR < 4 initializer listed among the inputs
    }
    Shape shape;
    for (const auto& dim : input.type().tensor_type().shape().dim()) shape.push_back(dim.dim_value());
    const auto count = static_cast<size_t>(shape_numel(shape));
    inputs.emplace_back(input.name(), Tensor::from_floats(shape, testing::deterministic_values(count, seed++)));
  }
  return inputs;
}

// The upgrade must not change a single output bit: both models run the same ONNX Runtime
// kernels on the same values, so no tolerance applies.
void expect_same_outputs(const onnx::ModelProto& before, const onnx::ModelProto& after,
                         const NamedTensors& inputs) {
  const NamedTensors expected = Session::from_model(before, "before").run(inputs);
  const NamedTensors actual = Session::from_model(after, "after").run(inputs);
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(actual[i].first, expected[i].first);
    EXPECT_TRUE(actual[i].second == expected[i].second) << "output '" << expected[i].first << "' changed";
  }
}

void expect_same_outputs(const onnx::ModelProto& before, const onnx::ModelProto& after) {
  expect_same_outputs(before, after, float_inputs(before));
}

int count_ops(const onnx::GraphProto& graph, const std::string& op_type) {
  return static_cast<int>(std::ranges::count(graph.node(), op_type, &onnx::NodeProto::op_type));
}

const onnx::NodeProto& node_named(const onnx::GraphProto& graph, const std::string& name) {
  const auto it = std::ranges::find(graph.node(), name, &onnx::NodeProto::name);
  if (it == graph.node().end()) throw std::runtime_error("no node named " + name);
  return *it;
}

bool has_attribute(const onnx::NodeProto& node, const std::string& name) {
  return std::ranges::any_of(node.attribute(), [&](const onnx::AttributeProto& a) { return a.name() == name; });
}

int64_t default_opset(const onnx::ModelProto& model) {
  for (const onnx::OperatorSetIdProto& opset : model.opset_import()) {
    if (opset.domain().empty() || opset.domain() == "ai.onnx") return opset.version();
  }
  return 0;
}

// The message of the mixprec::Error `upgrade` throws, after checking its kind.
template <typename Upgrade>
std::string error_message(ErrorKind kind, Upgrade upgrade) {
  try {
    upgrade();
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), kind) << error.what();
    return error.what();
  }
  ADD_FAILURE() << "no mixprec::Error thrown";
  return "";
}

// x [2,4,6] -> Clip -> Slice -> Unsqueeze -> Squeeze -> ReduceSum -> Softmax -> y [4,4], all
// with the attributes opset 9 has and opset 13 turned into inputs.
onnx::ModelProto opset9_chain() {
  return ModelBuilder()
      .opset(9)
      .ir_version(4)
      .add_input("x", kFloat, {2, 4, 6})
      .add_node("Clip", {"x"}, {"clipped"}, {attr_float("min", -0.3f), attr_float("max", 0.4f)}, "clip")
      .add_node("Slice", {"clipped"}, {"sliced"},
                {attr_ints("starts", {1}), attr_ints("ends", {5}), attr_ints("axes", {2})}, "slice")
      .add_node("Unsqueeze", {"sliced"}, {"unsqueezed"}, {attr_ints("axes", {1})}, "unsqueeze")
      .add_node("Squeeze", {"unsqueezed"}, {"squeezed"}, {attr_ints("axes", {1})}, "squeeze")
      .add_node("ReduceSum", {"squeezed"}, {"summed"}, {attr_ints("axes", {0}), attr_int("keepdims", 0)}, "sum")
      .add_node("Softmax", {"summed"}, {"y"}, {attr_int("axis", 1)}, "softmax")
      .add_value_info("summed", kFloat, {4, 4})
      .add_output("y", kFloat, {4, 4})
      .build();
}

TEST(UpgradeOpset, Opset9To13MovesAttributesToInputsAndKeepsOutputs) {
  const onnx::ModelProto before = opset9_chain();
  onnx::ModelProto after = before;
  const OpsetUpgradeResult result = upgrade_opset(after, 13, "chain.onnx");

  EXPECT_EQ(result.from, 9);
  EXPECT_EQ(result.to, 13);
  EXPECT_EQ(default_opset(after), 13);
  EXPECT_EQ(after.ir_version(), 7);
  ASSERT_EQ(result.adapted.size(), 6u);
  EXPECT_EQ(result.adapted[0], "Clip 'clip': min/max attributes -> inputs");

  const onnx::GraphProto& graph = after.graph();
  EXPECT_EQ(graph.node_size(), 6);
  EXPECT_EQ(graph.initializer_size(), 8);  // min, max, starts, ends, slice axes, 3 x axes
  const std::vector<std::pair<std::string, int>> input_counts = {
      {"clip", 3}, {"slice", 4}, {"unsqueeze", 2}, {"squeeze", 2}, {"sum", 2}, {"softmax", 1}};
  for (const auto& [name, inputs] : input_counts) {
    const onnx::NodeProto& node = node_named(graph, name);
    EXPECT_EQ(node.input_size(), inputs) << name;
    EXPECT_FALSE(has_attribute(node, "axes") || has_attribute(node, "starts") || has_attribute(node, "min")) << name;
  }
  EXPECT_TRUE(has_attribute(node_named(graph, "sum"), "keepdims"));
  const onnx::NodeProto& softmax = node_named(graph, "softmax");
  ASSERT_EQ(softmax.attribute_size(), 1);
  EXPECT_EQ(softmax.attribute(0).i(), -1);  // axis 1 of a rank-2 input is the last axis

  expect_same_outputs(before, after);
}

TEST(UpgradeOpset, Opset13To21MovesReduceAxesAndKeepsOutputs) {
  const onnx::ModelProto before = ModelBuilder()
                                      .opset(13)
                                      .ir_version(7)
                                      .add_input("x", kFloat, {2, 3, 4})
                                      .add_node("ReduceMean", {"x"}, {"mean"}, {attr_ints("axes", {2})}, "mean")
                                      .add_node("ReduceSum", {"x"}, {"sum"}, {}, "sum")  // changed in 13: nothing to do
                                      .add_output("mean", kFloat, {2, 3, 1})
                                      .add_output("sum", kFloat, {1, 1, 1})
                                      .build();
  onnx::ModelProto after = before;
  const OpsetUpgradeResult result = upgrade_opset(after, 21, "reduce.onnx");

  EXPECT_EQ(default_opset(after), 21);
  EXPECT_EQ(after.ir_version(), 10);
  EXPECT_EQ(result.adapted, std::vector<std::string>{"ReduceMean 'mean': axes attribute -> input"});
  const onnx::NodeProto& mean = node_named(after.graph(), "mean");
  EXPECT_EQ(mean.input_size(), 2);
  EXPECT_FALSE(has_attribute(mean, "axes"));
  expect_same_outputs(before, after);
}

// x [2,3,4] -> Relu -> r -> <op>[axis=1] -> y: the old op normalises each x[i] as one
// 12-element row, which the upgrade spells out as Flatten -> <op> -> Reshape.
class UpgradeOpsetSoftmaxFamilyTest : public ::testing::TestWithParam<const char*> {};

TEST_P(UpgradeOpsetSoftmaxFamilyTest, InnerAxisBecomesFlattenOpReshape) {
  const std::string op_type = GetParam();
  const onnx::ModelProto before = ModelBuilder()
                                      .opset(11)
                                      .ir_version(6)
                                      .add_input("x", kFloat, {2, 3, 4})
                                      .add_node("Relu", {"x"}, {"r"}, {}, "relu")
                                      .add_node(op_type, {"r"}, {"y"}, {attr_int("axis", 1)}, "normalize")
                                      .add_output("y", kFloat, {2, 3, 4})
                                      .build();
  onnx::ModelProto after = before;
  // "r" declares no shape: its rank comes from the caller.
  const auto rank_of = [](const std::string& name) -> std::optional<int64_t> {
    return name == "r" ? std::optional<int64_t>(3) : std::nullopt;
  };
  const OpsetUpgradeResult result = upgrade_opset(after, 13, "normalize.onnx", rank_of);

  ASSERT_EQ(result.adapted.size(), 1u);
  const onnx::GraphProto& graph = after.graph();
  for (const char* op : {"Shape", "Flatten", "Reshape"}) EXPECT_EQ(count_ops(graph, op), 1) << op;
  EXPECT_EQ(count_ops(graph, op_type), 1);
  EXPECT_EQ(graph.node(graph.node_size() - 1).op_type(), "Reshape");
  EXPECT_EQ(graph.node(graph.node_size() - 1).output(0), "y");
  expect_same_outputs(before, after);
}

INSTANTIATE_TEST_SUITE_P(UpgradeOpset, UpgradeOpsetSoftmaxFamilyTest,
                         ::testing::Values("Softmax", "LogSoftmax", "Hardmax"));

TEST(UpgradeOpset, SoftmaxOfUnknownRankIsUnsupportedAndLeavesTheModelUntouched) {
  const onnx::ModelProto before = ModelBuilder()
                                      .opset(11)
                                      .ir_version(6)
                                      .add_input("x", kFloat)
                                      .add_node("Clip", {"x"}, {"c"}, {attr_float("max", 1.0f)}, "clip")
                                      .add_node("Softmax", {"c"}, {"y"}, {attr_int("axis", 2)}, "head/softmax")
                                      .add_output("y", kFloat)
                                      .build();
  onnx::ModelProto after = before;
  const std::string message =
      error_message(ErrorKind::kUnsupported, [&] { upgrade_opset(after, 13, "head.onnx"); });
  EXPECT_NE(message.find("head.onnx"), std::string::npos) << message;
  EXPECT_NE(message.find("node 'head/softmax': op Softmax changed meaning in opset 13; "
                         "re-export the model at opset >= 13"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("rank of input 'c'"), std::string::npos) << message;
  EXPECT_EQ(after.SerializeAsString(), before.SerializeAsString());
}

TEST(UpgradeOpset, ChangeWithoutAdapterIsUnsupported) {
  onnx::ModelProto model = ModelBuilder()
                               .opset(18)
                               .add_input("x", kFloat, {1, 4, 2, 2})
                               .add_initializer("scale", {2}, {1.0f, 2.0f})
                               .add_initializer("bias", {2}, {0.0f, 0.5f})
                               .add_node("GroupNormalization", {"x", "scale", "bias"}, {"y"},
                                         {attr_int("num_groups", 2)}, "group_norm")
                               .add_output("y", kFloat, {1, 4, 2, 2})
                               .build();
  const std::string message = error_message(ErrorKind::kUnsupported, [&] { upgrade_opset(model, 21, "gn.onnx"); });
  EXPECT_NE(message.find("node 'group_norm': op GroupNormalization changed meaning in opset 21; "
                         "re-export the model at opset >= 21"),
            std::string::npos)
      << message;
  EXPECT_EQ(default_opset(model), 18);
  // Below the change nothing stands in the way.
  EXPECT_EQ(upgrade_opset(model, 20, "gn.onnx").to, 20);
}

TEST(UpgradeOpset, OpsetsOutsideTheTableAreUnsupported) {
  onnx::ModelProto old_model = opset9_chain();
  old_model.mutable_opset_import(0)->set_version(6);
  error_message(ErrorKind::kUnsupported, [&] { upgrade_opset(old_model, 13, "old.onnx"); });
  onnx::ModelProto model = opset9_chain();
  error_message(ErrorKind::kUnsupported, [&] { upgrade_opset(model, kNewestUpgradeTarget + 1, "new.onnx"); });
}

// Nodes whose old meaning no rewrite keeps: each names the node and the reason.
struct RejectedCase {
  const char* name;
  onnx::ModelProto model;
  int64_t target;
  const char* reason;  // quoted in the message
};
void PrintTo(const RejectedCase& row, std::ostream* out) { *out << row.name; }

class UpgradeOpsetRejectTest : public ::testing::TestWithParam<RejectedCase> {};

TEST_P(UpgradeOpsetRejectTest, NamesTheNodeAndTheReason) {
  onnx::ModelProto model = GetParam().model;
  const std::string message =
      error_message(ErrorKind::kUnsupported, [&] { upgrade_opset(model, GetParam().target, "model.onnx"); });
  EXPECT_NE(message.find("node 'n'"), std::string::npos) << message;
  EXPECT_NE(message.find(GetParam().reason), std::string::npos) << message;
}

// x [1,2,4,4] -> node "n"; its other inputs are initializers holding {1, 1, 2, 0.5}.
onnx::ModelProto single_node(int64_t opset, const std::string& op_type, const std::vector<std::string>& inputs,
                             const std::vector<std::string>& outputs,
                             const std::vector<onnx::AttributeProto>& attributes) {
  ModelBuilder builder;
  builder.opset(opset).add_input("x", kFloat, {1, 2, 4, 4});
  for (size_t i = 1; i < inputs.size(); ++i) builder.add_initializer(inputs[i], {4}, {1, 1, 2, 0.5f});
  builder.add_node(op_type, inputs, outputs, attributes, "n");
  for (const std::string& output : outputs) builder.add_output(output, kFloat);
  return builder.build();
}

INSTANTIATE_TEST_SUITE_P(
    UpgradeOpset, UpgradeOpsetRejectTest,
    ::testing::Values(
        RejectedCase{"BatchNormalizationPerActivation",
                     single_node(8, "BatchNormalization", {"x", "s", "b", "m", "v"}, {"y"}, {attr_int("spatial", 0)}),
                     9, "spatial=0"},
        RejectedCase{"BatchNormalizationSavedStatistics",
                     single_node(9, "BatchNormalization", {"x", "s", "b", "m", "v"}, {"y", "m2", "v2", "sm", "sv"}, {}),
                     14, "saved_mean"},
        RejectedCase{"ResizeNearestUpAndDown", single_node(10, "Resize", {"x", "scales"}, {"y"}, {}), 11,
                     "both up- and downsamples"},
        RejectedCase{"ResizeTfHalfPixelCeil",
                     single_node(11, "Resize", {"x", "roi", "scales"}, {"y"},
                                 {attr_string("coordinate_transformation_mode", "tf_half_pixel_for_nn"),
                                  attr_string("nearest_mode", "ceil")}),
                     13, "tf_half_pixel_for_nn with mode nearest, nearest_mode ceil"}),
    [](const ::testing::TestParamInfo<RejectedCase>& row) { return std::string(row.param.name); });

// Upsample-9 -> Resize with the opset-10 coordinate mapping made explicit.
class UpgradeOpsetUpsampleTest : public ::testing::TestWithParam<const char*> {};

TEST_P(UpgradeOpsetUpsampleTest, BecomesResizeWithSameOutputs) {
  const std::string mode = GetParam();
  const onnx::ModelProto before = ModelBuilder()
                                      .opset(9)
                                      .ir_version(4)
                                      .add_input("x", kFloat, {1, 2, 2, 3})
                                      .add_initializer("scales", {4}, {1.0f, 1.0f, 2.0f, 3.0f})
                                      .add_node("Upsample", {"x", "scales"}, {"y"}, {attr_string("mode", mode)}, "up")
                                      .add_output("y", kFloat, {1, 2, 4, 9})
                                      .build();
  onnx::ModelProto after = before;
  const OpsetUpgradeResult result = upgrade_opset(after, 13, "up.onnx");

  ASSERT_EQ(result.adapted.size(), 2u);
  EXPECT_EQ(result.adapted[0], "Upsample 'up': -> Resize");
  const onnx::NodeProto& resize = node_named(after.graph(), "up");
  EXPECT_EQ(resize.op_type(), "Resize");
  ASSERT_EQ(resize.input_size(), 3);
  EXPECT_EQ(resize.input(2), "scales");
  EXPECT_TRUE(has_attribute(resize, "coordinate_transformation_mode"));
  EXPECT_EQ(has_attribute(resize, "nearest_mode"), mode == "nearest");
  expect_same_outputs(before, after);
}

INSTANTIATE_TEST_SUITE_P(UpgradeOpset, UpgradeOpsetUpsampleTest, ::testing::Values("nearest", "linear"));

TEST(UpgradeOpset, SubgraphNodesAreAdaptedInTheirOwnGraph) {
  const onnx::GraphProto then_branch =
      ModelBuilder()
          .add_node("Clip", {"x"}, {"then_y"}, {attr_float("min", -0.2f), attr_float("max", 0.2f)}, "then_clip")
          .add_output("then_y", kFloat, {2, 3})
          .build_graph();
  const onnx::GraphProto else_branch =
      ModelBuilder()
          .add_node("Unsqueeze", {"x"}, {"else_u"}, {attr_ints("axes", {0})}, "else_unsqueeze")
          .add_node("Squeeze", {"else_u"}, {"else_y"}, {attr_ints("axes", {0})}, "else_squeeze")
          .add_output("else_y", kFloat, {2, 3})
          .build_graph();
  const onnx::ModelProto before =
      ModelBuilder()
          .opset(9)
          .ir_version(4)
          .add_input("cond", onnx::TensorProto::BOOL, std::vector<testing::DimSpec>{})
          .add_input("x", kFloat, {2, 3})
          .add_node("If", {"cond"}, {"y"},
                    {attr_graph("then_branch", then_branch), attr_graph("else_branch", else_branch)}, "branch")
          .add_output("y", kFloat, {2, 3})
          .build();
  onnx::ModelProto after = before;
  const OpsetUpgradeResult result = upgrade_opset(after, 13, "if.onnx");

  EXPECT_EQ(result.adapted.size(), 3u);
  EXPECT_EQ(after.graph().initializer_size(), 0);
  const onnx::NodeProto& branch = after.graph().node(0);
  for (const onnx::AttributeProto& attribute : branch.attribute()) {
    EXPECT_EQ(attribute.g().initializer_size(), 2) << attribute.name();
  }
  const std::vector<float> values = testing::deterministic_values(6, 7);
  for (const bool cond : {true, false}) {
    const std::byte flag{static_cast<unsigned char>(cond)};
    const NamedTensors inputs = {{"cond", Tensor(DType::kBool, {}, std::span(&flag, 1))},
                                 {"x", Tensor::from_floats({2, 3}, values)}};
    expect_same_outputs(before, after, inputs);
  }
}

TEST(UpgradeOpset, NewNamesNeverCollideWithExistingOnes) {
  // "clip/min" is exactly the name the Clip's new min input would take.
  const onnx::ModelProto before = ModelBuilder()
                                      .opset(9)
                                      .ir_version(4)
                                      .add_input("x", kFloat, {2})
                                      .add_input("clip/min", kFloat, {2})
                                      .add_node("Clip", {"x"}, {"c"}, {attr_float("min", 0.0f)}, "clip")
                                      .add_node("Add", {"c", "clip/min"}, {"y"}, {}, "add")
                                      .add_output("y", kFloat, {2})
                                      .build();
  onnx::ModelProto after = before;
  upgrade_opset(after, 11, "names.onnx");
  ASSERT_EQ(after.graph().initializer_size(), 1);
  EXPECT_EQ(after.graph().initializer(0).name(), "clip/min_1");
  EXPECT_EQ(node_named(after.graph(), "clip").input(1), "clip/min_1");
  expect_same_outputs(before, after);
}

TEST(UpgradeOpset, AtOrAboveTheTargetChangesNothing) {
  const onnx::ModelProto before = ModelBuilder()
                                      .opset(13)
                                      .ir_version(7)
                                      .add_input("x", kFloat, {2, 3})
                                      .add_node("ReduceMean", {"x"}, {"y"}, {attr_ints("axes", {1})}, "mean")
                                      .add_output("y", kFloat, {2, 1})
                                      .build();
  for (const int64_t target : {13, 11}) {
    onnx::ModelProto model = before;
    const OpsetUpgradeResult result = upgrade_opset(model, target, "same.onnx");
    EXPECT_EQ(result.from, 13);
    EXPECT_EQ(result.to, 13);
    EXPECT_TRUE(result.adapted.empty());
    EXPECT_EQ(model.SerializeAsString(), before.SerializeAsString());
  }
}

// --- One model per adapter: upgraded, it loads in ONNX Runtime and computes the same. -------

onnx::ModelProto batchnorm_spatial() {
  ModelBuilder builder;
  builder.opset(7).ir_version(3).add_input("x", kFloat, {1, 2, 3, 3});
  for (const char* name : {"scale", "bias", "mean", "var"}) {
    builder.add_initializer(name, {2}, {0.5f, 1.5f}).add_input(name, kFloat, {2});  // IR 3: initializers are inputs
  }
  return builder
      .add_node("BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"y"}, {attr_int("spatial", 1)}, "bn")
      .add_output("y", kFloat, {1, 2, 3, 3})
      .build();
}

onnx::ModelProto upsample_scales_attribute() {
  return ModelBuilder()
      .opset(7)
      .ir_version(3)
      .add_input("x", kFloat, {1, 1, 2, 2})
      .add_node("Upsample", {"x"}, {"y"}, {testing::attr_floats("scales", {1.0f, 1.0f, 2.0f, 3.0f})}, "up")
      .add_output("y", kFloat, {1, 1, 4, 6})
      .build();
}

onnx::ModelProto topk_k_attribute() {
  return ModelBuilder()
      .opset(9)
      .ir_version(4)
      .add_input("x", kFloat, {3, 5})
      .add_node("TopK", {"x"}, {"values", "indices"}, {attr_int("k", 2), attr_int("axis", 1)}, "topk")
      .add_output("values", kFloat, {3, 2})
      .add_output("indices", kInt64, {3, 2})
      .build();
}

onnx::ModelProto slice_without_axes() {
  return ModelBuilder()
      .opset(9)
      .ir_version(4)
      .add_input("x", kFloat, {4, 5})
      .add_node("Slice", {"x"}, {"y"}, {attr_ints("starts", {1, 0}), attr_ints("ends", {3, -1})}, "slice")
      .add_output("y", kFloat, {2, 4})
      .build();
}

onnx::ModelProto clip_max_only() {
  return ModelBuilder()
      .opset(9)
      .ir_version(4)
      .add_input("x", kFloat, {2, 3})
      .add_node("Clip", {"x"}, {"y"}, {attr_float("max", 0.1f)}, "clip")
      .add_output("y", kFloat, {2, 3})
      .build();
}

onnx::ModelProto pad_constant_value() {
  return ModelBuilder()
      .opset(10)
      .ir_version(5)
      .add_input("x", kFloat, {1, 2, 3, 3})
      .add_node("Pad", {"x"}, {"y"}, {attr_ints("pads", {0, 0, 1, 1, 0, 0, 1, 2}), attr_float("value", 0.5f)}, "pad")
      .add_output("y", kFloat, {1, 2, 5, 6})
      .build();
}

onnx::ModelProto pad_reflect() {
  return ModelBuilder()
      .opset(10)
      .ir_version(5)
      .add_input("x", kFloat, {1, 2, 3, 3})
      .add_node("Pad", {"x"}, {"y"}, {attr_ints("pads", {0, 0, 1, 1, 0, 0, 1, 1}), attr_string("mode", "reflect")},
                "pad")
      .add_output("y", kFloat, {1, 2, 5, 5})
      .build();
}

onnx::ModelProto resize10(const std::string& mode, std::vector<float> scales, const std::vector<testing::DimSpec>& in,
                          const std::vector<testing::DimSpec>& out) {
  return ModelBuilder()
      .opset(10)
      .ir_version(5)
      .add_input("x", kFloat, in)
      .add_initializer("scales", {4}, scales)
      .add_node("Resize", {"x", "scales"}, {"y"}, {attr_string("mode", mode)}, "resize")
      .add_output("y", kFloat, out)
      .build();
}
onnx::ModelProto resize10_nearest_down() {
  return resize10("nearest", {1, 1, 0.5f, 0.4f}, {1, 1, 4, 10}, {1, 1, 2, 4});
}
onnx::ModelProto resize10_nearest_up() {
  return resize10("nearest", {1, 1, 1.5f, 2.5f}, {1, 1, 2, 3}, {1, 1, 3, 7});
}
onnx::ModelProto resize10_linear() { return resize10("linear", {1, 1, 2, 1.5f}, {1, 1, 2, 4}, {1, 1, 4, 6}); }

onnx::ModelProto resize11_tf_half_pixel(const std::string& nearest_mode) {
  return ModelBuilder()
      .opset(11)
      .ir_version(6)
      .add_input("x", kFloat, {1, 1, 3, 4})
      .add_initializer("roi", {0}, {})
      .add_initializer("scales", {4}, {1, 1, 1.7f, 2.5f})
      .add_node("Resize", {"x", "roi", "scales"}, {"y"},
                {attr_string("coordinate_transformation_mode", "tf_half_pixel_for_nn"),
                 attr_string("nearest_mode", nearest_mode)},
                "resize")
      .add_output("y", kFloat, {1, 1, 5, 10})
      .build();
}
onnx::ModelProto resize11_tf_half_pixel_round() { return resize11_tf_half_pixel("round_prefer_floor"); }
onnx::ModelProto resize11_tf_half_pixel_floor() { return resize11_tf_half_pixel("floor"); }

onnx::ModelProto scatter() {
  return ModelBuilder()
      .opset(10)
      .ir_version(5)
      .add_input("x", kFloat, {3, 3})
      .add_initializer_i64("indices", {2, 3}, {1, 0, 2, 0, 2, 1})
      .add_initializer("updates", {2, 3}, {1, 2, 3, 4, 5, 6})
      .add_node("Scatter", {"x", "indices", "updates"}, {"y"}, {attr_int("axis", 0)}, "scatter")
      .add_output("y", kFloat, {3, 3})
      .build();
}

onnx::ModelProto dropout_ratio() {
  return ModelBuilder()
      .opset(11)
      .ir_version(6)
      .add_input("x", kFloat, {2, 3})
      .add_node("Dropout", {"x"}, {"y"}, {attr_float("ratio", 0.25f)}, "dropout")
      .add_output("y", kFloat, {2, 3})
      .build();
}

onnx::ModelProto split_attribute() {
  return ModelBuilder()
      .opset(11)
      .ir_version(6)
      .add_input("x", kFloat, {2, 6})
      .add_node("Split", {"x"}, {"a", "b"}, {attr_int("axis", 1), attr_ints("split", {2, 4})}, "split")
      .add_output("a", kFloat, {2, 2})
      .add_output("b", kFloat, {2, 4})
      .build();
}

onnx::ModelProto split_equal_parts() {
  return ModelBuilder()
      .opset(13)
      .ir_version(7)
      .add_input("x", kFloat, {2, 6})
      .add_node("Split", {"x"}, {"a", "b", "c"}, {attr_int("axis", 1)}, "split")
      .add_output("a", kFloat, {2, 2})
      .add_output("b", kFloat, {2, 2})
      .add_output("c", kFloat, {2, 2})
      .build();
}

onnx::ModelProto roialign() {
  return ModelBuilder()
      .opset(10)
      .ir_version(5)
      .add_input("x", kFloat, {1, 1, 6, 6})
      .add_initializer("rois", {2, 4}, {0, 0, 3, 3, 1, 1.5f, 4.5f, 5})
      .add_initializer_i64("batch_indices", {2}, {0, 0})
      .add_node("RoiAlign", {"x", "rois", "batch_indices"}, {"y"},
                {attr_int("output_height", 2), attr_int("output_width", 2), attr_int("sampling_ratio", 2)}, "roi_align")
      .add_output("y", kFloat, {2, 1, 2, 2})
      .build();
}

onnx::ModelProto gridsample_bilinear() {
  return ModelBuilder()
      .opset(16)
      .ir_version(8)
      .add_input("x", kFloat, {1, 1, 3, 3})
      .add_initializer("grid", {1, 2, 2, 2}, {-0.9f, -0.5f, 0.3f, -0.1f, 0.7f, 0.6f, -0.2f, 0.95f})
      .add_node("GridSample", {"x", "grid"}, {"y"}, {attr_string("mode", "bilinear")}, "grid_sample")
      .add_output("y", kFloat, {1, 1, 2, 2})
      .build();
}

onnx::ModelProto reduce_max_axes() {
  return ModelBuilder()
      .opset(13)
      .ir_version(7)
      .add_input("x", kFloat, {2, 3, 4})
      .add_node("ReduceMax", {"x"}, {"y"}, {attr_ints("axes", {1}), attr_int("keepdims", 0)}, "max")
      .add_output("y", kFloat, {2, 4})
      .build();
}

struct AdapterCase {
  const char* name;
  onnx::ModelProto (*build)();
  int64_t target;
  const char* expected_op;  // an op of the upgraded graph
};
void PrintTo(const AdapterCase& row, std::ostream* out) { *out << row.name; }

const AdapterCase kAdapterCases[] = {
    {"BatchNormalizationSpatial", batchnorm_spatial, 9, "BatchNormalization"},
    {"UpsampleScalesAttribute", upsample_scales_attribute, 13, "Resize"},
    {"TopK", topk_k_attribute, 10, "TopK"},
    {"SliceWithoutAxes", slice_without_axes, 10, "Slice"},
    {"ClipMaxOnly", clip_max_only, 11, "Clip"},
    {"PadConstantValue", pad_constant_value, 11, "Pad"},
    {"PadReflect", pad_reflect, 11, "Pad"},
    {"ResizeNearestDownsampling", resize10_nearest_down, 11, "Resize"},
    {"ResizeNearestUpsampling", resize10_nearest_up, 11, "Resize"},
    {"ResizeLinear", resize10_linear, 11, "Resize"},
    {"ResizeTfHalfPixelRoundPreferFloor", resize11_tf_half_pixel_round, 13, "Resize"},
    {"ResizeTfHalfPixelFloor", resize11_tf_half_pixel_floor, 13, "Resize"},
    {"Scatter", scatter, 11, "ScatterElements"},
    {"Dropout", dropout_ratio, 12, "Dropout"},
    {"SplitAttribute", split_attribute, 13, "Split"},
    {"SplitEqualParts", split_equal_parts, 18, "Split"},
    {"RoiAlign", roialign, 16, "RoiAlign"},
    {"GridSample", gridsample_bilinear, 20, "GridSample"},
    {"ReduceMax", reduce_max_axes, 18, "ReduceMax"},
};

class UpgradeOpsetAdapterTest : public ::testing::TestWithParam<AdapterCase> {};

TEST_P(UpgradeOpsetAdapterTest, KeepsOutputs) {
  const AdapterCase& c = GetParam();
  const onnx::ModelProto before = c.build();
  onnx::ModelProto after = before;
  const OpsetUpgradeResult result = upgrade_opset(after, c.target, c.name);

  EXPECT_FALSE(result.adapted.empty());
  EXPECT_EQ(default_opset(after), c.target);
  EXPECT_EQ(count_ops(after.graph(), c.expected_op), 1);
  expect_same_outputs(before, after);
}

INSTANTIATE_TEST_SUITE_P(UpgradeOpset, UpgradeOpsetAdapterTest, ::testing::ValuesIn(kAdapterCases),
                         [](const ::testing::TestParamInfo<AdapterCase>& row) { return std::string(row.param.name); });

}  // namespace
}  // namespace mixprec
