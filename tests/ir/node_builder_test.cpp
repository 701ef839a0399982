// NameAllocator and make_node: the names and nodes every pass adds.
#include "ir/node_builder.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/model_builder.h"

namespace mixprec {
namespace {

using onnx::TensorProto;
using testing::attr_graph;
using testing::attr_int;
using testing::ModelBuilder;

// Names in every place a model keeps them: a node, its tensors, an initializer, a value_info
// entry, a sparse initializer and a node and tensor of an If branch.
onnx::ModelProto named_everywhere() {
  const onnx::GraphProto branch = ModelBuilder()
                                      .add_node("Identity", {"x"}, {"inner_out"}, {}, "inner")
                                      .add_output("inner_out", TensorProto::FLOAT)
                                      .build_graph();
  onnx::ModelProto model = ModelBuilder()
                               .add_input("x", TensorProto::FLOAT, {int64_t{1}})
                               .add_input("flag", TensorProto::BOOL, {int64_t{1}})
                               .add_initializer("w", {1}, {1.0f})
                               .add_node("Mul", {"x", "w"}, {"y"}, {}, "mul")
                               .add_value_info("y", TensorProto::FLOAT, {int64_t{1}})
                               .add_node("If", {"flag"}, {"z"}, {attr_graph("then_branch", branch),
                                                                 attr_graph("else_branch", branch)}, "if")
                               .add_output("z", TensorProto::FLOAT)
                               .build();
  model.mutable_graph()->add_sparse_initializer()->mutable_values()->set_name("sparse");
  return model;
}

TEST(NameAllocatorTest, NeverHandsOutANameTheModelUses) {
  ir::NameAllocator names(named_everywhere());
  for (const char* used : {"mul", "x", "y", "w", "flag", "z", "if", "inner", "inner_out", "sparse"}) {
    EXPECT_TRUE(names.taken(used)) << used;
    EXPECT_EQ(names.fresh(used), std::string(used) + "_1");
  }
  EXPECT_EQ(names.fresh("y_scale"), "y_scale");  // free: the base itself
}

TEST(NameAllocatorTest, SuffixesCountUpPastTakenOnesAndTakeWhatTheyHandOut) {
  ir::NameAllocator names;
  names.reserve("x");
  names.reserve("x_1");
  EXPECT_EQ(names.fresh("x"), "x_2");
  EXPECT_EQ(names.fresh("x"), "x_3");
  EXPECT_EQ(names.fresh("q"), "q");
  EXPECT_EQ(names.fresh("q"), "q_1");
  EXPECT_TRUE(names.taken("x_3"));
  EXPECT_FALSE(names.taken("x_4"));
}

TEST(NameAllocatorTest, SameModelAndRequestsGiveTheSameNames) {
  const onnx::ModelProto model = named_everywhere();
  const auto names_for = [&] {
    ir::NameAllocator names(model);
    std::vector<std::string> out;
    for (const char* base : {"y", "y", "w_dq", "mul", "new"}) out.push_back(names.fresh(base));
    return out;
  };
  const std::vector<std::string> first = names_for();
  EXPECT_EQ(first, (std::vector<std::string>{"y_1", "y_2", "w_dq", "mul_1", "new"}));
  EXPECT_EQ(names_for(), first);
}

TEST(MakeNodeTest, BuildsWhatTheSpecNames) {
  const onnx::NodeProto dq = ir::make_node({.op_type = "DequantizeLinear",
                                            .name = "x_DequantizeLinear",
                                            .inputs = {"x_q", "x_scale", ""},
                                            .outputs = {"x_dq"},
                                            .attributes = {ir::make_int_attribute("axis", 1)}});
  EXPECT_EQ(dq.op_type(), "DequantizeLinear");
  EXPECT_FALSE(dq.has_domain());  // the default domain is left unset, as exporters write it
  EXPECT_EQ(dq.name(), "x_DequantizeLinear");
  EXPECT_EQ(std::vector<std::string>(dq.input().begin(), dq.input().end()),
            (std::vector<std::string>{"x_q", "x_scale", ""}));
  EXPECT_EQ(std::vector<std::string>(dq.output().begin(), dq.output().end()), std::vector<std::string>{"x_dq"});
  ASSERT_EQ(dq.attribute_size(), 1);
  EXPECT_EQ(dq.attribute(0).SerializeAsString(), attr_int("axis", 1).SerializeAsString());

  const onnx::NodeProto q = ir::make_node({.op_type = "QuantizeLinear", .domain = "com.microsoft", .name = "q"});
  EXPECT_EQ(q.domain(), "com.microsoft");
  EXPECT_EQ(q.input_size() + q.output_size() + q.attribute_size(), 0);
}

TEST(MakeNodeTest, SetAttributeReplacesANamesakeAndPutsItLast) {
  onnx::NodeProto node = ir::make_node({.op_type = "Resize",
                                        .name = "resize",
                                        .attributes = {ir::make_string_attribute("mode", "nearest"),
                                                       ir::make_string_attribute("nearest_mode", "floor")}});
  ir::set_attribute(node, ir::make_string_attribute("mode", "linear"));
  ASSERT_EQ(node.attribute_size(), 2);
  EXPECT_EQ(node.attribute(0).name(), "nearest_mode");
  EXPECT_EQ(node.attribute(1).name(), "mode");
  EXPECT_EQ(node.attribute(1).s(), "linear");
  EXPECT_EQ(node.attribute(1).type(), onnx::AttributeProto::STRING);
}

}  // namespace
}  // namespace mixprec
