// mixprec patch (patch_job, vaip_patch): the VitisAI provider's edits, counted, and the patched
// model computing what the input model computes, bit for bit.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "mixprec/error.h"
#include "mixprec/jobs.h"
#include "mixprec/model_io.h"
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
