#include "ir/graph_view.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "mixprec/error.h"
#include "support/model_builder.h"

namespace mixprec::ir {
namespace {

using onnx::TensorProto;
using testing::attr_graph;
using testing::attr_int;
using testing::ModelBuilder;

constexpr char kPath[] = "tiny.onnx";

size_t index_of(const GraphView& view, const std::string& node_name) {
  for (size_t i = 0; i < view.node_count(); ++i) {
    if (view.node(i).name() == node_name) return i;
  }
  ADD_FAILURE() << "no node " << node_name;
  return SIZE_MAX;
}

std::vector<std::string> names_in_order(const GraphView& view) {
  std::vector<std::string> names;
  for (size_t i : view.topological_order()) names.push_back(view.node(i).name());
  return names;
}

// Views `model` and returns the kBadInput error message; fails the test when nothing is thrown.
std::string bad_input_message(const onnx::ModelProto& model) {
  try {
    GraphView view(model.graph(), kPath);
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::kBadInput);
    EXPECT_EQ(error.file(), kPath);
    return error.message();
  }
  ADD_FAILURE() << "expected a bad-input error";
  return "";
}

TEST(GraphViewTest, IndexesProducersConsumersAndInitializers) {
  const onnx::ModelProto model = testing::conv_chain(2);
  const GraphView view(model.graph(), kPath);

  ASSERT_EQ(view.node_count(), 4u);
  EXPECT_EQ(view.producer("conv_0_out"), index_of(view, "conv_0"));
  EXPECT_EQ(view.producer("x_1"), index_of(view, "relu_0"));
  EXPECT_EQ(view.producer("input"), std::nullopt);
  EXPECT_EQ(view.producer("conv_0.weight"), std::nullopt);
  EXPECT_EQ(view.consumers("x_1"), std::vector<size_t>{index_of(view, "conv_1")});
  EXPECT_EQ(view.consumers("input"), std::vector<size_t>{index_of(view, "conv_0")});
  EXPECT_TRUE(view.consumers("output").empty());

  const TensorProto* weight = view.initializer("conv_1.weight");
  ASSERT_NE(weight, nullptr);
  EXPECT_EQ(std::vector<int64_t>(weight->dims().begin(), weight->dims().end()), (std::vector<int64_t>{4, 4, 3, 3}));
  EXPECT_TRUE(view.is_initializer("conv_0.bias"));
  EXPECT_FALSE(view.is_initializer("input"));
  EXPECT_EQ(view.input_names(), std::vector<std::string>{"input"});
  EXPECT_TRUE(view.is_graph_output("output"));
  EXPECT_FALSE(view.is_graph_output("x_1"));
  EXPECT_EQ(names_in_order(view), (std::vector<std::string>{"conv_0", "relu_0", "conv_1", "relu_1"}));
}

TEST(GraphViewTest, InitializersListedAsInputsAreNotCallerInputs) {
  const onnx::ModelProto model = ModelBuilder()
                                     .add_input("x", TensorProto::FLOAT, {2})
                                     .add_input("bias", TensorProto::FLOAT, {2})
                                     .add_initializer("bias", {2}, {1.0f, 2.0f})
                                     .add_node("Add", {"x", "bias"}, {"y"})
                                     .add_output("y", TensorProto::FLOAT, {2})
                                     .build();
  const GraphView view(model.graph(), kPath);
  EXPECT_EQ(view.input_names(), std::vector<std::string>{"x"});
  EXPECT_TRUE(view.is_initializer("bias"));
}

TEST(GraphViewTest, TopologicalOrderIsKahnStableByIndex) {
  // Stored out of order: c reads b's output, b reads a's; d and e are independent of each other.
  const onnx::ModelProto model = ModelBuilder()
                                     .add_input("x", TensorProto::FLOAT, {2})
                                     .add_node("Relu", {"b_out"}, {"c_out"}, {}, "c")
                                     .add_node("Relu", {"x"}, {"e_out"}, {}, "e")
                                     .add_node("Relu", {"a_out"}, {"b_out"}, {}, "b")
                                     .add_node("Relu", {"x"}, {"a_out"}, {}, "a")
                                     .add_node("Add", {"c_out", "e_out"}, {"y"}, {}, "d")
                                     .add_output("y", TensorProto::FLOAT, {2})
                                     .build();
  const GraphView view(model.graph(), kPath);
  // Ready at start: e (1) and a (3); e goes first by index, then a, b, c, d.
  EXPECT_EQ(names_in_order(view), (std::vector<std::string>{"e", "a", "b", "c", "d"}));
}

TEST(GraphViewTest, CycleIsBadInput) {
  const onnx::ModelProto model = ModelBuilder()
                                     .add_input("x", TensorProto::FLOAT, {2})
                                     .add_node("Add", {"x", "b_out"}, {"a_out"}, {}, "a")
                                     .add_node("Relu", {"a_out"}, {"b_out"}, {}, "b")
                                     .add_output("b_out", TensorProto::FLOAT, {2})
                                     .build();
  const std::string message = bad_input_message(model);
  EXPECT_NE(message.find("cycle"), std::string::npos) << message;
  EXPECT_NE(message.find("node 'a' (Add)"), std::string::npos) << message;
}

TEST(GraphViewTest, InputNobodyProducesIsBadInput) {
  const onnx::ModelProto model = ModelBuilder()
                                     .add_input("x", TensorProto::FLOAT, {2})
                                     .add_node("Add", {"x", "ghost"}, {"y"}, {}, "adder")
                                     .add_output("y", TensorProto::FLOAT, {2})
                                     .build();
  const std::string message = bad_input_message(model);
  EXPECT_NE(message.find("node 'adder' (Add) reads 'ghost'"), std::string::npos) << message;
}

TEST(GraphViewTest, DuplicateProducerIsBadInput) {
  const onnx::ModelProto model = ModelBuilder()
                                     .add_input("x", TensorProto::FLOAT, {2})
                                     .add_node("Relu", {"x"}, {"y"}, {}, "first")
                                     .add_node("Sigmoid", {"x"}, {"y"}, {}, "second")
                                     .add_output("y", TensorProto::FLOAT, {2})
                                     .build();
  const std::string message = bad_input_message(model);
  EXPECT_NE(message.find("node 'second' (Sigmoid) outputs 'y'"), std::string::npos) << message;
  EXPECT_NE(message.find("node 'first' (Relu)"), std::string::npos) << message;
}

TEST(GraphViewTest, NodeOverwritingAGraphInputIsBadInput) {
  const onnx::ModelProto model = ModelBuilder()
                                     .add_input("x", TensorProto::FLOAT, {2})
                                     .add_node("Relu", {"x"}, {"x"}, {}, "inplace")
                                     .add_output("x", TensorProto::FLOAT, {2})
                                     .build();
  EXPECT_NE(bad_input_message(model).find("node 'inplace' (Relu) outputs 'x'"), std::string::npos);
}

TEST(GraphViewTest, OutputNobodyProducesIsBadInput) {
  const onnx::ModelProto model = ModelBuilder()
                                     .add_input("x", TensorProto::FLOAT, {2})
                                     .add_node("Relu", {"x"}, {"y"})
                                     .add_output("z", TensorProto::FLOAT, {2})
                                     .build();
  EXPECT_NE(bad_input_message(model).find("graph output 'z' is never produced"), std::string::npos);
}

// main: "scale" is produced by a node stored AFTER the If; the then-branch reads it implicitly.
onnx::ModelProto if_model() {
  const onnx::GraphProto then_branch = ModelBuilder()
                                           .add_node("Mul", {"x", "scale"}, {"then_out"}, {}, "then_mul")
                                           .add_output("then_out", TensorProto::FLOAT, {2})
                                           .build_graph();
  const onnx::GraphProto else_branch = ModelBuilder()
                                           .add_node("Identity", {"x"}, {"else_out"}, {}, "else_id")
                                           .add_output("else_out", TensorProto::FLOAT, {2})
                                           .build_graph();
  return ModelBuilder()
      .add_input("cond", TensorProto::BOOL, {})
      .add_input("x", TensorProto::FLOAT, {2})
      .add_node("If", {"cond"}, {"y"}, {attr_graph("then_branch", then_branch), attr_graph("else_branch", else_branch)},
                "branch")
      .add_node("Relu", {"x"}, {"scale"}, {}, "make_scale")
      .add_output("y", TensorProto::FLOAT, {2})
      .build();
}

TEST(GraphViewTest, SubgraphOuterNamesMakeTheOwnerAConsumer) {
  const onnx::ModelProto model = if_model();
  const GraphView view(model.graph(), kPath);
  const size_t branch = index_of(view, "branch");

  EXPECT_EQ(view.consumers("scale"), std::vector<size_t>{branch});
  const std::vector<size_t>& x_readers = view.consumers("x");
  EXPECT_NE(std::find(x_readers.begin(), x_readers.end(), branch), x_readers.end());
  EXPECT_EQ(names_in_order(view), (std::vector<std::string>{"make_scale", "branch"}));

  const std::vector<const GraphView*> subgraphs = view.subgraphs(branch);
  ASSERT_EQ(subgraphs.size(), 2u);
  EXPECT_EQ(subgraphs[0]->outer(), &view);
  EXPECT_EQ(subgraphs[0]->scope_name(), "branch.then_branch");
  const std::optional<NodeRef> scale = subgraphs[0]->resolve_producer("scale");
  ASSERT_TRUE(scale.has_value());
  EXPECT_EQ(scale->graph, &view);
  EXPECT_EQ(scale->node().name(), "make_scale");
  EXPECT_EQ(subgraphs[0]->resolve_producer("x"), std::nullopt);  // a main-graph input
  EXPECT_EQ(subgraphs[0]->producer("scale"), std::nullopt);      // not local
}

TEST(GraphViewTest, NestedNodesPutSubgraphNodesBeforeTheirOwner) {
  const onnx::ModelProto model = if_model();
  const GraphView view(model.graph(), kPath);
  std::vector<std::string> labels;
  for (const NodeRef& ref : view.nested_nodes()) labels.push_back(node_label(ref));
  EXPECT_EQ(labels, (std::vector<std::string>{"make_scale", "branch.then_branch/then_mul",
                                              "branch.else_branch/else_id", "branch"}));
}

TEST(GraphViewTest, SubgraphReadingAnUndefinedNameIsBadInput) {
  const onnx::GraphProto body = ModelBuilder()
                                    .add_node("Relu", {"nowhere"}, {"out"}, {}, "inner")
                                    .add_output("out", TensorProto::FLOAT, {2})
                                    .build_graph();
  const onnx::ModelProto model = ModelBuilder()
                                     .add_input("cond", TensorProto::BOOL, {})
                                     .add_node("If", {"cond"}, {"y"},
                                               {attr_graph("then_branch", body), attr_graph("else_branch", body)},
                                               "branch")
                                     .add_output("y", TensorProto::FLOAT, {2})
                                     .build();
  const std::string message = bad_input_message(model);
  EXPECT_NE(message.find("node 'inner' (Relu) reads 'nowhere'"), std::string::npos) << message;
  EXPECT_NE(message.find("in subgraph branch.then_branch"), std::string::npos) << message;
}

TEST(GraphViewTest, UnnamedNodesGetIndexLabels) {
  onnx::ModelProto model = testing::conv_chain(1);
  model.mutable_graph()->mutable_node(1)->clear_name();
  const GraphView view(model.graph(), kPath);
  EXPECT_EQ(node_label(NodeRef{&view, 1}), "Relu#1");
  EXPECT_EQ(node_label(NodeRef{&view, 0}), "conv_0");
}

TEST(GraphViewTest, IntAttributeReadsOnlyIntAttributes) {
  onnx::NodeProto node;
  *node.add_attribute() = attr_int("to", TensorProto::BFLOAT16);
  *node.add_attribute() = testing::attr_float("alpha", 0.5f);
  EXPECT_EQ(int_attribute(node, "to"), TensorProto::BFLOAT16);
  EXPECT_EQ(int_attribute(node, "alpha"), std::nullopt);
  EXPECT_EQ(int_attribute(node, "missing"), std::nullopt);
}

// --- The test model builder itself ----------------------------------------------------------

TEST(ModelBuilderTest, DefaultsAndAutomaticOpsetImports) {
  const onnx::ModelProto model = ModelBuilder()
                                     .add_input("x", TensorProto::FLOAT, {"N", 3, "?"})
                                     .add_node("Relu", {"x"}, {"r"})
                                     .add_node("FusedGemm", {"r", "r"}, {"y"}, {}, "", "com.microsoft")
                                     .add_output("y", TensorProto::FLOAT)
                                     .build();
  EXPECT_EQ(model.ir_version(), 8);
  ASSERT_EQ(model.opset_import_size(), 2);
  EXPECT_EQ(model.opset_import(0).domain(), "");
  EXPECT_EQ(model.opset_import(0).version(), 17);
  EXPECT_EQ(model.opset_import(1).domain(), "com.microsoft");
  EXPECT_EQ(model.opset_import(1).version(), 1);
  EXPECT_EQ(model.graph().node(0).name(), "Relu_0");
  EXPECT_EQ(model.graph().node(1).name(), "FusedGemm_1");

  const onnx::TensorShapeProto& shape = model.graph().input(0).type().tensor_type().shape();
  ASSERT_EQ(shape.dim_size(), 3);
  EXPECT_EQ(shape.dim(0).dim_param(), "N");
  EXPECT_EQ(shape.dim(1).dim_value(), 3);
  EXPECT_FALSE(shape.dim(2).has_dim_value());
  EXPECT_FALSE(shape.dim(2).has_dim_param());
  EXPECT_FALSE(model.graph().output(0).type().tensor_type().has_shape());
}

TEST(ModelBuilderTest, OpsetOverridesTheDefault) {
  const onnx::ModelProto model = ModelBuilder().opset(13).opset(2, "com.amd.quark").ir_version(7).build();
  EXPECT_EQ(model.ir_version(), 7);
  ASSERT_EQ(model.opset_import_size(), 2);
  EXPECT_EQ(model.opset_import(0).version(), 13);
  EXPECT_EQ(model.opset_import(1).domain(), "com.amd.quark");
  EXPECT_EQ(model.opset_import(1).version(), 2);
}

TEST(ModelBuilderTest, TypedInitializers) {
  const onnx::ModelProto model = ModelBuilder()
                                     .add_initializer("f", {2}, {0.5f, -1.0f})
                                     .add_initializer_i64("i64", {1}, {7})
                                     .add_initializer_i32("i32", {1}, {-3})
                                     .add_initializer_i8("i8", {2}, {-128, 127})
                                     .add_initializer_u8("u8", {}, {255})
                                     .build();
  const auto& init = model.graph().initializer();
  ASSERT_EQ(init.size(), 5);
  EXPECT_EQ(init[0].data_type(), TensorProto::FLOAT);
  EXPECT_EQ(init[0].float_data(1), -1.0f);
  EXPECT_EQ(init[1].int64_data(0), 7);
  EXPECT_EQ(init[2].int32_data(0), -3);
  EXPECT_EQ(init[3].data_type(), TensorProto::INT8);
  EXPECT_EQ(init[3].int32_data(0), -128);
  EXPECT_EQ(init[4].data_type(), TensorProto::UINT8);
  EXPECT_EQ(init[4].dims_size(), 0);
  EXPECT_EQ(init[4].int32_data(0), 255);
}

TEST(ModelBuilderTest, DeterministicValuesAreReproducibleAndBounded) {
  const std::vector<float> a = testing::deterministic_values(64, 3, 0.25f);
  EXPECT_EQ(a, testing::deterministic_values(64, 3, 0.25f));
  EXPECT_NE(a, testing::deterministic_values(64, 4, 0.25f));
  EXPECT_TRUE(std::all_of(a.begin(), a.end(), [](float v) { return v >= -0.25f && v <= 0.25f; }));
  EXPECT_GT(std::count_if(a.begin(), a.end(), [](float v) { return v < 0; }), 8);
  EXPECT_GT(std::count_if(a.begin(), a.end(), [](float v) { return v > 0; }), 8);
}

TEST(ModelBuilderTest, CannedModelsAreWellFormed) {
  for (const onnx::ModelProto& model :
       {testing::conv_chain({testing::LayerPrecision::kQdqInt8, testing::LayerPrecision::kFloat,
                             testing::LayerPrecision::kCastBf16, testing::LayerPrecision::kCastFp16}),
        testing::gemm_classifier(10), testing::matmul_chain(3), testing::multi_output_model(),
        testing::nms_detection_model()}) {
    SCOPED_TRACE(model.graph().name());
    const GraphView view(model.graph(), kPath);  // validates names, producers, acyclicity
    EXPECT_EQ(view.topological_order().size(), view.node_count());
    for (const onnx::ValueInfoProto& value : model.graph().input()) {
      EXPECT_TRUE(value.type().tensor_type().has_shape()) << value.name();
    }
    for (const onnx::ValueInfoProto& value : model.graph().output()) {
      EXPECT_TRUE(value.type().tensor_type().has_shape()) << value.name();
    }
  }
}

TEST(ModelBuilderTest, QdqWeightsRoundTripTheFloatWeights) {
  const onnx::ModelProto float_model = testing::conv_chain(1);
  const onnx::ModelProto qdq_model = testing::qdq_conv_chain(1);
  const GraphView float_view(float_model.graph(), kPath);
  const GraphView qdq_view(qdq_model.graph(), kPath);
  const TensorProto& weight = *float_view.initializer("conv_0.weight");
  const TensorProto& weight_q = *qdq_view.initializer("conv_0.weight_q");
  const float scale = qdq_view.initializer("conv_0.weight_scale")->float_data(0);
  ASSERT_EQ(weight.float_data_size(), weight_q.int32_data_size());
  for (int i = 0; i < weight.float_data_size(); ++i) {
    EXPECT_NEAR(static_cast<float>(weight_q.int32_data(i)) * scale, weight.float_data(i), scale / 2 + 1e-7f);
  }
}

}  // namespace
}  // namespace mixprec::ir
