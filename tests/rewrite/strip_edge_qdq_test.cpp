// strip_edge_qdq: which edge Q/DQ the runtime can take over, and the model without them computes
// the same codes the Q/DQ model did (hand-worked values).
#include "rewrite/strip_edge_qdq.h"

#include <gtest/gtest.h>

#include "mixprec/runtime.h"
#include "support/model_builder.h"

namespace mixprec {
namespace {

using onnx::TensorProto;
using testing::ModelBuilder;

TEST(StripEdgeQdq, StandaloneEdgesLeaveAndTheCodesAreTheSame) {
  const onnx::ModelProto model = testing::edge_qdq_matmul().build();
  const std::vector<rewrite::EdgeSite> sites = rewrite::match_edge_qdq(model, "m.onnx");
  ASSERT_EQ(sites.size(), 2u);
  EXPECT_TRUE(sites[0].input);
  EXPECT_EQ(sites[0].tensor, "x");
  EXPECT_EQ(sites[0].node, "q_in");
  EXPECT_EQ(sites[0].codes, TensorProto::UINT8);
  EXPECT_EQ(sites[0].scale, std::vector<float>{0.5f});
  EXPECT_EQ(sites[0].zero_point, std::vector<int32_t>{128});
  EXPECT_EQ(sites[0].excluded, "");
  EXPECT_FALSE(sites[1].input);
  EXPECT_EQ(sites[1].tensor, "y");
  EXPECT_EQ(sites[1].node, "dq_out");
  EXPECT_EQ(sites[1].codes, TensorProto::UINT8);
  EXPECT_EQ(sites[1].excluded, "");

  // x = (1, -2, 0.5, 4): x W = (-7, 7.5); Q at scale 1 rounds 7.5 to even 8: y = (-7, 8).
  const std::vector<float> x = {1, -2, 0.5f, 4};
  const auto y = Session::from_model(model, "m.onnx").run({{"x", Tensor::from_floats(Shape{1, 4}, x)}});
  EXPECT_EQ(y.front().second.to_floats(), (std::vector<float>{-7, 8}));

  // Stripped: the host feeds x / 0.5 + 128 = (130, 124, 129, 136) and reads the codes -7 + 128, 8 + 128.
  const onnx::ModelProto stripped = rewrite::strip_edge_qdq(model, sites);
  EXPECT_EQ(stripped.graph().node_size(), model.graph().node_size() - 2);
  EXPECT_EQ(stripped.graph().input(0).name(), "x");
  EXPECT_EQ(stripped.graph().input(0).type().tensor_type().elem_type(), TensorProto::UINT8);
  EXPECT_EQ(stripped.graph().output(0).name(), "y");
  EXPECT_EQ(stripped.graph().output(0).type().tensor_type().elem_type(), TensorProto::UINT8);
  const Tensor codes = Tensor::from_floats(DType::kUInt8, Shape{1, 4}, std::vector<float>{130, 124, 129, 136});
  const auto out = Session::from_model(stripped, "stripped").run({{"x", codes}});
  EXPECT_EQ(out.front().second.dtype(), DType::kUInt8);
  EXPECT_EQ(out.front().second.to_floats(), (std::vector<float>{121, 136}));
}

TEST(StripEdgeQdq, FakeQuantPairsAndSharedInputsStay) {
  // x -> Q -> DQ -> Sigmoid -> y: the codes go back into float arithmetic.
  const onnx::ModelProto fake_in = ModelBuilder()
                                       .add_input("x", TensorProto::FLOAT, {1, 4})
                                       .add_output("y", TensorProto::FLOAT, {1, 4})
                                       .add_initializer("s", {}, {0.5f})
                                       .add_initializer_u8("z", {}, {128})
                                       .add_node("QuantizeLinear", {"x", "s", "z"}, {"xq"}, {}, "q")
                                       .add_node("DequantizeLinear", {"xq", "s", "z"}, {"xd"}, {}, "dq")
                                       .add_node("Sigmoid", {"xd"}, {"y"}, {}, "sig")
                                       .build();
  auto sites = rewrite::match_edge_qdq(fake_in, "f.onnx");
  ASSERT_EQ(sites.size(), 1u);
  EXPECT_EQ(sites[0].excluded, "a fake-quant pair: 'dq' (DequantizeLinear) feeds float arithmetic at 'sig' (Sigmoid)");
  EXPECT_EQ(rewrite::strip_edge_qdq(fake_in, sites).graph().node_size(), 3);

  // x -> Sigmoid -> Q -> DQ -> y: the output's Q quantizes float arithmetic.
  const onnx::ModelProto fake_out = ModelBuilder()
                                        .add_input("x", TensorProto::FLOAT, {1, 4})
                                        .add_output("y", TensorProto::FLOAT, {1, 4})
                                        .add_initializer("s", {}, {0.5f})
                                        .add_initializer_u8("z", {}, {128})
                                        .add_node("Sigmoid", {"x"}, {"sx"}, {}, "sig")
                                        .add_node("QuantizeLinear", {"sx", "s", "z"}, {"yq"}, {}, "q")
                                        .add_node("DequantizeLinear", {"yq", "s", "z"}, {"y"}, {}, "dq")
                                        .build();
  sites = rewrite::match_edge_qdq(fake_out, "f.onnx");
  ASSERT_EQ(sites.size(), 1u);
  EXPECT_FALSE(sites[0].input);
  EXPECT_EQ(sites[0].excluded, "a fake-quant pair: its Q quantizes float arithmetic at 'sig' (Sigmoid)");

  // A bf16 Q emulates a float format: no integer edge to hand over.
  onnx::TensorProto bf16_zero;
  bf16_zero.set_name("zb");
  bf16_zero.set_data_type(TensorProto::BFLOAT16);
  bf16_zero.set_raw_data(std::string(2, '\0'));
  const onnx::ModelProto bf16 = ModelBuilder()
                                    .add_input("x", TensorProto::FLOAT, {1, 4})
                                    .add_output("y", TensorProto::FLOAT, {1, 4})
                                    .add_initializer("s", {}, {1.0f})
                                    .add_initializer(bf16_zero)
                                    .add_node("QuantizeLinear", {"x", "s", "zb"}, {"xq"}, {}, "q")
                                    .add_node("DequantizeLinear", {"xq", "s", "zb"}, {"y"}, {}, "dq")
                                    .build();
  sites = rewrite::match_edge_qdq(bf16, "b.onnx");
  ASSERT_EQ(sites.size(), 2u);
  EXPECT_EQ(sites[0].excluded, "its codes are bfloat16, not integers: nothing for the runtime to quantize");
  EXPECT_EQ(sites[1].excluded, "its codes are bfloat16, not integers: nothing for the runtime to quantize");

  // The integer model, but x is also read in float: the host cannot pass only its codes.
  const onnx::ModelProto shared = testing::edge_qdq_matmul()
                                      .add_output("x_copy", TensorProto::FLOAT, {1, 4})
                                      .add_node("Identity", {"x"}, {"x_copy"}, {}, "copy")
                                      .build();
  sites = rewrite::match_edge_qdq(shared, "s.onnx");
  ASSERT_EQ(sites.size(), 2u);
  EXPECT_EQ(sites[0].excluded, "the input is also read by 'copy' (Identity)");
  EXPECT_EQ(sites[1].excluded, "");
  const onnx::ModelProto stripped = rewrite::strip_edge_qdq(shared, sites);
  EXPECT_EQ(stripped.graph().input(0).type().tensor_type().elem_type(), TensorProto::FLOAT);
  EXPECT_EQ(stripped.graph().node_size(), shared.graph().node_size() - 1);  // only the output DQ left
}

}  // namespace
}  // namespace mixprec
