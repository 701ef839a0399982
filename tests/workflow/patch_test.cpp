// mixprec patch (patch_job, vaip_patch): the VitisAI provider's edits, counted, and the patched
// model computing what the input model computes, bit for bit.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "mixprec/error.h"
#include "mixprec/jobs.h"
#include "mixprec/model_io.h"
#include "mixprec/runtime.h"
#include "mixprec/tensor.h"
#include "rewrite/vaip_patch.h"
#include "support/model_builder.h"
#include "support/temp_dir.h"

namespace mixprec {
namespace {
namespace fs = std::filesystem;
using testing::ModelBuilder;

class PatchTest : public testing::TempDirTest {
 protected:
  PatchReport patch(const onnx::ModelProto& model, const std::string& name) {
    save_model(model, path(name + ".onnx"));
    PatchParams p;
    p.setup.model_path = path(name + ".onnx");
    p.output_path = path(name + "_patched.onnx");
    return patch_job(p);
  }
  static const onnx::NodeProto& node(const onnx::ModelProto& model, const std::string& name) {
    for (const auto& n : model.graph().node()) {
      if (n.name() == name) return n;
    }
    throw std::runtime_error("no node " + name);
  }
  static const onnx::AttributeProto* attribute(const onnx::NodeProto& n, const std::string& name) {
    for (const auto& a : n.attribute()) {
      if (a.name() == name) return &a;
    }
    return nullptr;
  }
};

// x [1,8,2,2] -> com.microsoft Q/DQ (uint8, per tensor) -> BFP16 (no sub_block_shift_bits) ->
// com.microsoft Q/DQ int16 -> y, at opset 17: the uint8 pair moves to the default domain, the
// int16 pair stays (its codes need opset 21) and says so; the BFP node gets its shift bits and
// its shape/type attributes.
TEST_F(PatchTest, RetagsWritesShiftBitsAndShapesAndKeepsTheOutputsBitForBit) {
  onnx::TensorProto zp16;
  zp16.set_name("zp16");
  zp16.set_data_type(onnx::TensorProto::INT16);
  zp16.add_int32_data(0);
  const onnx::ModelProto model = ModelBuilder()
                                     .opset(17)
                                     .opset(1, "com.microsoft")
                                     .opset(1, "com.amd.quark")
                                     .add_input("x", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{8}, int64_t{2}, int64_t{2}})
                                     .add_output("y", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{8}, int64_t{2}, int64_t{2}})
                                     .add_initializer("s", {}, {0.02f})
                                     .add_initializer_u8("zp", {}, {128})
                                     .add_initializer("s16", {}, {0.0001f})
                                     .add_initializer(zp16)
                                     .add_node("QuantizeLinear", {"x", "s", "zp"}, {"xq"}, {}, "q8", "com.microsoft")
                                     .add_node("DequantizeLinear", {"xq", "s", "zp"}, {"xd"}, {}, "dq8", "com.microsoft")
                                     .add_node("BFPQuantizeDequantize", {"xd"}, {"xb"}, {}, "bfp", "com.amd.quark")
                                     .add_node("QuantizeLinear", {"xb", "s16", "zp16"}, {"bq"}, {}, "q16", "com.microsoft")
                                     .add_node("DequantizeLinear", {"bq", "s16", "zp16"}, {"y"}, {}, "dq16", "com.microsoft")
                                     .build();
  const PatchReport r = patch(model, "mixed");
  EXPECT_EQ(r.summary.retagged, 2);
  ASSERT_EQ(r.summary.kept.size(), 2u);
  EXPECT_EQ(r.summary.kept[0], "q16: its INT16 codes need opset 21, the model has 17");
  EXPECT_EQ(r.summary.shift_bits_written, 1);
  EXPECT_EQ(r.summary.shape_attributes, 1);
  EXPECT_EQ(r.outputs_compared, 1u);

  const onnx::ModelProto patched = load_model(r.output_path);
  EXPECT_EQ(node(patched, "q8").domain(), "");
  EXPECT_EQ(node(patched, "dq8").domain(), "");
  EXPECT_EQ(node(patched, "q16").domain(), "com.microsoft");
  const onnx::NodeProto& bfp = node(patched, "bfp");
  ASSERT_NE(attribute(bfp, "sub_block_shift_bits"), nullptr);
  EXPECT_EQ(attribute(bfp, "sub_block_shift_bits")->i(), 1);
  ASSERT_NE(attribute(bfp, "shape"), nullptr);
  EXPECT_EQ(std::vector<int64_t>(attribute(bfp, "shape")->ints().begin(), attribute(bfp, "shape")->ints().end()),
            (std::vector<int64_t>{1, 8, 2, 2}));
  EXPECT_EQ(attribute(bfp, "data_type")->s(), "float32");
  EXPECT_EQ(load_model(path("mixed.onnx")).SerializeAsString(), model.SerializeAsString());  // input untouched

  // Patching the patched model changes nothing more.
  const PatchReport again = patch(patched, "again");
  EXPECT_EQ(again.summary.edits(), 0);
  EXPECT_EQ(again.summary.kept.size(), 2u);
}

// A plain default-domain QDQ model has nothing to patch: no edit, the same graph.
TEST_F(PatchTest, APlainQdqModelIsANoOp) {
  const onnx::ModelProto model = ModelBuilder()
                                     .add_input("x", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{4}})
                                     .add_output("y", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{4}})
                                     .add_initializer("s", {}, {0.05f})
                                     .add_initializer_i8("zp", {}, {0})
                                     .add_node("QuantizeLinear", {"x", "s", "zp"}, {"xq"}, {}, "q")
                                     .add_node("DequantizeLinear", {"xq", "s", "zp"}, {"y"}, {}, "dq")
                                     .build();
  const PatchReport r = patch(model, "plain");
  EXPECT_EQ(r.summary.edits(), 0);
  EXPECT_TRUE(r.summary.kept.empty());
  EXPECT_EQ(load_model(r.output_path).graph().SerializeAsString(), model.graph().SerializeAsString());
}

// A com.microsoft DequantizeLinear of int8 weight codes with no zero point: the codes' type is
// read from the constant, and it moves to the default domain.
TEST_F(PatchTest, ADequantizeWithoutZeroPointTakesItsCodesType) {
  const onnx::ModelProto model = ModelBuilder()
                                     .opset(13)
                                     .opset(1, "com.microsoft")
                                     .add_input("x", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{4}})
                                     .add_output("y", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{4}})
                                     .add_initializer_i8("wq", {4}, {-3, 0, 5, 127})
                                     .add_initializer("ws", {}, {0.5f})
                                     .add_node("DequantizeLinear", {"wq", "ws"}, {"w"}, {}, "dqw", "com.microsoft")
                                     .add_node("Mul", {"x", "w"}, {"y"}, {}, "mul")
                                     .build();
  const PatchReport r = patch(model, "weights");
  EXPECT_EQ(r.summary.retagged, 1);
  EXPECT_TRUE(r.summary.kept.empty());
  EXPECT_EQ(node(load_model(r.output_path), "dqw").domain(), "");
}

// A zero point as a text format leaves it: `type` with these raw 16-bit patterns, or float values.
onnx::TensorProto zero_point(const std::string& name, int32_t type, const std::vector<uint16_t>& bits) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(type);
  if (bits.size() != 1) t.add_dims(static_cast<int64_t>(bits.size()));
  t.set_raw_data(std::string(reinterpret_cast<const char*>(bits.data()), bits.size() * sizeof(uint16_t)));
  return t;
}
onnx::TensorProto float_zero_point(const std::string& name, float value) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_float_data(value);
  return t;
}

// x -> Quark bf16 Q (zero point BFLOAT16) -> bf16 DQ whose zero point a text format wrote as the
// float 0.0, + a DQ of constant bf16 weight codes whose zero point is the uint16 pattern 0: the
// input model does not run (the DQ's zero point is not its codes' type); patched, both zero
// points are BFLOAT16 raw data and the model computes, bit for bit, what the same graph built
// with BFLOAT16 zero points computes.
TEST_F(PatchTest, FloatAndUint16ZeroPointsOfBfloat16CodesBecomeBfloat16) {
  onnx::TensorProto wq = zero_point("wq", onnx::TensorProto::BFLOAT16, {0x3FC0, 0xBF80});  // 1.5, -1.0
  wq.clear_dims();
  wq.add_dims(2);
  const auto build = [&](const onnx::TensorProto& zp_dq, const onnx::TensorProto& zp_w) {
    return ModelBuilder()
        .opset(17)
        .opset(1, "com.amd.quark")
        .add_input("x", onnx::TensorProto::FLOAT, {int64_t{2}})
        .add_output("y", onnx::TensorProto::FLOAT, {int64_t{2}})
        .add_initializer("s", {}, {2.0f})
        .add_initializer(zero_point("zq", onnx::TensorProto::BFLOAT16, {0}))
        .add_initializer(zp_dq)
        .add_initializer(wq)
        .add_initializer(zp_w)
        .add_node("ExtendedQuantizeLinear", {"x", "s", "zq"}, {"xq"}, {}, "q", "com.amd.quark")
        .add_node("ExtendedDequantizeLinear", {"xq", "s", "zdq"}, {"xd"}, {}, "dq", "com.amd.quark")
        .add_node("ExtendedDequantizeLinear", {"wq", "s", "zw"}, {"w"}, {}, "dqw", "com.amd.quark")
        .add_node("Mul", {"xd", "w"}, {"y"}, {}, "mul")
        .build();
  };
  const onnx::ModelProto broken = build(float_zero_point("zdq", 0.0f), zero_point("zw", onnx::TensorProto::UINT16, {0}));
  const onnx::ModelProto wanted = build(zero_point("zdq", onnx::TensorProto::BFLOAT16, {0}),
                                        zero_point("zw", onnx::TensorProto::BFLOAT16, {0}));
  const NamedTensors x = {{"x", Tensor::from_floats({2}, std::vector<float>{3.0f, 1.0001f})}};
  EXPECT_THROW((void)Session::from_model(broken, "broken", {}).run(x), Error);

  const PatchReport r = patch(broken, "bf16");
  EXPECT_EQ(r.summary.zero_points_fixed, 2);
  EXPECT_EQ(r.summary.zero_point_fixes,
            (std::vector<std::string>{"zdq: FLOAT32 -> BFLOAT16 raw data (dq)", "zw: UINT16 -> BFLOAT16 raw data (dqw)"}));
  EXPECT_TRUE(r.summary.kept.empty());
  EXPECT_NE(r.reference.find("does not run in ONNX Runtime until its zero points are fixed"), std::string::npos);
  const onnx::ModelProto patched = load_model(r.output_path);
  for (const auto& init : patched.graph().initializer()) {
    if (init.name() == "zdq" || init.name() == "zw") {
      EXPECT_EQ(init.data_type(), onnx::TensorProto::BFLOAT16) << init.name();
      EXPECT_EQ(init.raw_data(), std::string(2, '\0')) << init.name();
    }
  }
  // x/2 in bf16 codes: 1.5 and 0.50005 -> 0.5, dequantized 3 and 1; the weights 1.5 and -1 times 2.
  const NamedTensors got = Session::from_model(patched, "patched", {}).run(x);
  const NamedTensors want = Session::from_model(wanted, "wanted", {}).run(x);
  EXPECT_EQ(got[0].second, want[0].second);
  EXPECT_EQ(got[0].second.to_floats(), (std::vector<float>{9.0f, -2.0f}));
  EXPECT_EQ(load_model(path("bf16.onnx")).SerializeAsString(), broken.SerializeAsString());  // input untouched

  const PatchReport again = patch(patched, "bf16_again");
  EXPECT_EQ(again.summary.zero_points_fixed, 0);
  EXPECT_TRUE(again.reference.empty());
}

// fp16 codes: the Q's zero point is the uint16 pattern of 1.0 (0x3C00), the DQ's a FLOAT16 in
// int32_data (how ONNX's text parser writes it): both become FLOAT16 raw data holding 1.0, and
// since the input model runs, its outputs are the reference, bit for bit.
TEST_F(PatchTest, Float16ZeroPointsInInt32DataOrUint16BecomeRawFloat16) {
  onnx::TensorProto zdq;
  zdq.set_name("zdq");
  zdq.set_data_type(onnx::TensorProto::FLOAT16);
  zdq.add_int32_data(0x3C00);
  const onnx::ModelProto model = ModelBuilder()
                                     .opset(17)
                                     .opset(1, "com.amd.quark")
                                     .add_input("x", onnx::TensorProto::FLOAT, {int64_t{3}})
                                     .add_output("y", onnx::TensorProto::FLOAT, {int64_t{3}})
                                     .add_initializer("s", {}, {0.5f})
                                     .add_initializer(zero_point("zq", onnx::TensorProto::FLOAT16, {0x3C00}))
                                     .add_initializer(zdq)
                                     .add_node("ExtendedQuantizeLinear", {"x", "s", "zq"}, {"xq"}, {}, "q", "com.amd.quark")
                                     .add_node("ExtendedDequantizeLinear", {"xq", "s", "zdq"}, {"y"}, {}, "dq", "com.amd.quark")
                                     .build();
  onnx::ModelProto uint16_q = model;
  *uint16_q.mutable_graph()->mutable_initializer(1) = zero_point("zq", onnx::TensorProto::UINT16, {0x3C00});
  // (A uint16 zero point makes the Q's codes uint16; a model that runs is kept as the reference.)
  const PatchReport runs = patch(model, "fp16");
  EXPECT_EQ(runs.summary.zero_points_fixed, 1);
  EXPECT_EQ(runs.summary.zero_point_fixes, (std::vector<std::string>{"zdq: FLOAT16 in int32_data -> FLOAT16 raw data (dq)"}));
  EXPECT_TRUE(runs.reference.empty());
  EXPECT_EQ(runs.outputs_compared, 1u);

  const PatchReport r = patch(uint16_q, "fp16_u16");
  EXPECT_EQ(r.summary.zero_points_fixed, 2);
  const onnx::ModelProto patched = load_model(r.output_path);
  EXPECT_EQ(patched.graph().initializer(1).data_type(), onnx::TensorProto::FLOAT16);
  EXPECT_EQ(patched.graph().initializer(1).raw_data(), std::string("\x00\x3c", 2));
  // (x / 0.5 + 1) in fp16, minus 1, times 0.5: 0.3 -> 1.6 (fp16 1.599609375), 1.6 - 1 = 0.599609375.
  const NamedTensors x = {{"x", Tensor::from_floats({3}, std::vector<float>{0.3f, -2.0f, 100.0f})}};
  const std::vector<float> y = Session::from_model(patched, "patched", {}).run(x)[0].second.to_floats();
  EXPECT_EQ(y, (std::vector<float>{0.2998046875f, -2.0f, 100.0f}));
}

// A zero point that is not a value of the codes' type is not rounded: the node is kept and
// named, and the model, which does not run, is refused with nothing written.
TEST_F(PatchTest, AZeroPointTheCodesTypeCannotHoldIsNamedAndNotRounded) {
  const onnx::ModelProto model = ModelBuilder()
                                     .opset(17)
                                     .opset(1, "com.amd.quark")
                                     .add_input("x", onnx::TensorProto::FLOAT, {int64_t{2}})
                                     .add_output("y", onnx::TensorProto::FLOAT, {int64_t{2}})
                                     .add_initializer("s", {}, {2.0f})
                                     .add_initializer(zero_point("zq", onnx::TensorProto::BFLOAT16, {0}))
                                     .add_initializer(float_zero_point("zdq", 0.3f))
                                     .add_node("ExtendedQuantizeLinear", {"x", "s", "zq"}, {"xq"}, {}, "q", "com.amd.quark")
                                     .add_node("ExtendedDequantizeLinear", {"xq", "s", "zdq"}, {"y"}, {}, "dq", "com.amd.quark")
                                     .build();
  VaipPatchSummary summary;
  (void)rewrite::vaip_fix_zero_points(model, "m.onnx", &summary);
  EXPECT_EQ(summary.zero_points_fixed, 0);
  ASSERT_EQ(summary.kept.size(), 1u);
  EXPECT_EQ(summary.kept[0], "dq: its zero point 0.3 is not a BFLOAT16 value");
  // Other tools leave Q/DQ unnamed: the node is named by its op and output.
  onnx::ModelProto unnamed = model;
  unnamed.mutable_graph()->mutable_node(1)->clear_name();
  VaipPatchSummary unnamed_summary;
  (void)rewrite::vaip_fix_zero_points(unnamed, "m.onnx", &unnamed_summary);
  ASSERT_EQ(unnamed_summary.kept.size(), 1u);
  EXPECT_EQ(unnamed_summary.kept[0], "ExtendedDequantizeLinear writing 'y': its zero point 0.3 is not a BFLOAT16 value");
  EXPECT_THROW(patch(model, "bad"), Error);
  EXPECT_FALSE(fs::exists(path("bad_patched.onnx")));
}

TEST_F(PatchTest, TheInputIsNeverTheOutput) {
  const onnx::ModelProto model = ModelBuilder()
                                     .add_input("x", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{4}})
                                     .add_output("y", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{4}})
                                     .add_node("Relu", {"x"}, {"y"}, {}, "relu")
                                     .build();
  save_model(model, path("m.onnx"));
  PatchParams p;
  p.setup.model_path = path("m.onnx");
  p.output_path = path("m.onnx");
  EXPECT_THROW(patch_job(p), Error);
  EXPECT_EQ(load_model(path("m.onnx")).SerializeAsString(), model.SerializeAsString());
}

}  // namespace
}  // namespace mixprec
