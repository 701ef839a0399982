// The op table: a few rows' facts, checked against the ONNX operator specs and ONNX Runtime's
// CPU QDQ selectors, and the lookup rules (default domain, suffix rows, plain ops).
#include "ir/op_traits.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "mixprec/config.h"
#include "mixprec/macs.h"
#include "support/model_builder.h"

namespace mixprec {
namespace {

using ir::OrtFusionGroup;
using onnx::TensorProto;
using testing::attr_int;
using testing::ModelBuilder;

onnx::NodeProto node(const std::string& op_type, int64_t trans_b = -1) {
  onnx::NodeProto n;
  n.set_op_type(op_type);
  if (trans_b >= 0) *n.add_attribute() = attr_int("transB", trans_b);
  return n;
}

int64_t axis(const std::string& op_type, int weight_rank, int64_t trans_b = -1) {
  const onnx::NodeProto n = node(op_type, trans_b);
  return ir::weight_channel_axis(ir::op_traits(n), n, weight_rank);
}

TEST(OpTraitsTest, WeightChannelAxisIsTheOutputChannels) {
  EXPECT_EQ(axis("Conv", 4), 0);           // W [C_out, C_in / group, kH, kW]
  EXPECT_EQ(axis("ConvTranspose", 4), 1);  // W [C_in, C_out / group, kH, kW]
  EXPECT_EQ(axis("Gemm", 2), 1);           // B [K, N]
  EXPECT_EQ(axis("Gemm", 2, 0), 1);
  EXPECT_EQ(axis("Gemm", 2, 1), 0);        // transB: B [N, K]
  EXPECT_EQ(axis("MatMul", 2), 1);         // B [..., K, N]
  EXPECT_EQ(axis("MatMul", 3), 2);
}

TEST(OpTraitsTest, ConfigWeightAndBiasInputsOnlyForWeightedOps) {
  const ir::OpTraits& conv = ir::op_traits("", "Conv");
  EXPECT_EQ(conv.config_role, ir::ConfigRole::kWeighted);
  EXPECT_EQ(conv.config_weight_input(), 1);
  EXPECT_EQ(conv.config_bias_input(), 2);
  EXPECT_EQ(ir::op_traits("", "MatMul").config_bias_input(), -1);
  // QLinearConv's weight is input 3 (what its MACs read), but a config never quantizes it.
  const ir::OpTraits& qconv = ir::op_traits("", "QLinearConv");
  EXPECT_EQ(qconv.weight_input, 3);
  EXPECT_EQ(qconv.config_weight_input(), -1);
  EXPECT_EQ(ir::op_traits("", "Div").scaling_input, 1);
  EXPECT_EQ(ir::op_traits("", "Shape").config_role, ir::ConfigRole::kShapeIndex);
}

TEST(OpTraitsTest, MatMulMacsFollowTheRowsFormula) {
  // [2, 3, 4] x [4, 5] -> [2, 3, 5]: every one of the 30 outputs sums K = 4 products.
  constexpr double kHandComputed = 2 * 3 * 5 * 4;
  const onnx::ModelProto model = ModelBuilder()
                                     .add_input("a", TensorProto::FLOAT, {2, 3, 4})
                                     .add_initializer("b", {4, 5}, std::vector<float>(20, 0.0f))
                                     .add_node("MatMul", {"a", "b"}, {"y"}, {}, "mm")
                                     .add_output("y", TensorProto::FLOAT)
                                     .build();
  EXPECT_EQ(ir::op_traits("", "MatMul").macs, ir::MacFormula::kMatMul);
  EXPECT_EQ(estimate_node_macs(model).nodes.at("mm").macs, kHandComputed);
}

TEST(OpTraitsTest, OrtFusionGroupsFollowOnnxRuntimesCpuSelectors) {
  EXPECT_EQ(ir::op_traits("", "Conv").ort_fusion, OrtFusionGroup::kConv);
  EXPECT_EQ(ir::op_traits("", "Mul").ort_fusion, OrtFusionGroup::kBinary);
  EXPECT_EQ(ir::op_traits("", "Concat").ort_fusion, OrtFusionGroup::kVariadic);
  EXPECT_EQ(ir::op_traits("", "Sigmoid").ort_fusion, OrtFusionGroup::kUnary);
  EXPECT_EQ(ir::op_traits("", "MaxPool").ort_fusion, OrtFusionGroup::kDropQdq);
  EXPECT_EQ(ir::op_traits("ai.onnx", "Reshape").ort_fusion, OrtFusionGroup::kDropQdq);
  EXPECT_EQ(ir::op_traits("", "Relu").ort_fusion, OrtFusionGroup::kQuantizeClamp);
  EXPECT_EQ(ir::op_traits("", "ConvTranspose").ort_fusion, OrtFusionGroup::kNone);
  EXPECT_EQ(ir::op_traits("com.microsoft", "Conv").ort_fusion, OrtFusionGroup::kNone);
}

TEST(OpTraitsTest, VendorQuantizeOpsMatchBySuffixOutsideTheDefaultDomain) {
  const ir::OpTraits* vitis = ir::find_op_traits("com.vai.quantize", "VitisDequantizeLinear");
  ASSERT_NE(vitis, nullptr);
  EXPECT_EQ(vitis->quant_role, ir::QuantRole::kDequantize);
  EXPECT_EQ(ir::find_op_traits("com.amd.quark", "ExtendedQuantizeLinear")->quant_role, ir::QuantRole::kQuantize);
  EXPECT_EQ(ir::find_op_traits("", "VitisDequantizeLinear"), nullptr);
  // An op without a row is a plain float op.
  EXPECT_EQ(ir::find_op_traits("", "Softplus"), nullptr);
  const ir::OpTraits& plain = ir::op_traits("", "Softplus");
  EXPECT_EQ(plain.flags, 0);
  EXPECT_EQ(plain.config_role, ir::ConfigRole::kOther);
  EXPECT_EQ(plain.output_type, ir::OutputType::kUnknown);
}

TEST(OpTraitsTest, OneRowPerDomainAndOpType) {
  std::set<std::string> keys;
  for (const ir::OpTraits& row : ir::op_traits_table()) {
    EXPECT_TRUE(keys.insert(std::string(row.domain) + ":" + std::string(row.op_type)).second)
        << row.domain << ":" << row.op_type;
  }
}

TEST(OpTraitsTest, DefaultOpTypesToQuantizeAreTheWeightedThenTheArithmeticRows) {
  EXPECT_EQ(default_op_types_to_quantize(),
            (std::vector<std::string>{"Conv", "ConvTranspose", "Gemm", "MatMul", "LSTM", "GRU", "RNN", "Add", "Mul",
                                      "AveragePool", "GlobalAveragePool"}));
}

}  // namespace
}  // namespace mixprec
