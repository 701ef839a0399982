#include "mixprec/model_io.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "mixprec/error.h"
#include "mixprec/tensor_proto.h"
#include "support/temp_dir.h"

namespace mixprec {
namespace {
namespace fs = std::filesystem;

class ModelIoTest : public testing::TempDirTest {
 protected:
};

// Y = X + W with a 4 KiB initializer, and a Constant node carrying a tensor attribute.
onnx::ModelProto add_model() {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  auto* graph = model.mutable_graph();
  graph->set_name("add");
  auto* w = graph->add_initializer();
  w->set_name("W");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(1024);
  std::string raw(1024 * sizeof(float), '\0');
  for (size_t i = 0; i < 1024; ++i) {
    const float v = static_cast<float>(i) * 0.5f;
    std::memcpy(raw.data() + i * sizeof(float), &v, sizeof(float));
  }
  w->set_raw_data(raw);
  auto* constant = graph->add_node();
  constant->set_op_type("Constant");
  constant->add_output("C");
  auto* attr = constant->add_attribute();
  attr->set_name("value");
  attr->set_type(onnx::AttributeProto::TENSOR);
  attr->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  attr->mutable_t()->add_dims(512);
  attr->mutable_t()->set_raw_data(std::string(512 * sizeof(float), '\x01'));
  auto* node = graph->add_node();
  node->set_op_type("Add");
  node->add_input("X");
  node->add_input("W");
  node->add_output("Y");
  for (const char* name : {"X", "Y"}) {
    auto* vi = std::string(name) == "X" ? graph->add_input() : graph->add_output();
    vi->set_name(name);
    vi->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
    vi->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(1024);
  }
  return model;
}

TEST_F(ModelIoTest, InlineRoundTripIsExact) {
  const onnx::ModelProto model = add_model();
  save_model(model, path("m.onnx"));
  const onnx::ModelProto loaded = load_model(path("m.onnx"));
  EXPECT_TRUE(loaded.SerializeAsString() == model.SerializeAsString());  // no byte dump on failure
  EXPECT_FALSE(fs::exists(path("m.onnx.data")));
}

TEST_F(ModelIoTest, ExternalDataRoundTripRestoresEveryTensor) {
  const onnx::ModelProto model = add_model();
  save_model(model, path("m.onnx"), {.external_data = ExternalData::kAlways, .external_threshold_bytes = 1024});
  ASSERT_TRUE(fs::exists(path("m.onnx.data")));
  // The model file holds references only: W (4096 B) and the Constant (2048 B) went out,
  // aligned to 64 bytes: offsets 0 and 4096.
  const onnx::ModelProto raw = load_model(path("m.onnx"), {.load_external_data = false});
  EXPECT_EQ(raw.graph().initializer(0).data_location(), onnx::TensorProto::EXTERNAL);
  EXPECT_EQ(fs::file_size(path("m.onnx.data")), 4096u + 2048u);
  const onnx::ModelProto loaded = load_model(path("m.onnx"));
  EXPECT_TRUE(loaded.SerializeAsString() == model.SerializeAsString());  // no byte dump on failure
}

TEST_F(ModelIoTest, SmallTensorsStayInlineBelowThreshold) {
  save_model(add_model(), path("m.onnx"), {.external_data = ExternalData::kAlways, .external_threshold_bytes = 3000});
  const onnx::ModelProto raw = load_model(path("m.onnx"), {.load_external_data = false});
  EXPECT_EQ(raw.graph().initializer(0).data_location(), onnx::TensorProto::EXTERNAL);
  EXPECT_EQ(raw.graph().node(0).attribute(0).t().data_location(), onnx::TensorProto::DEFAULT);
}

TEST_F(ModelIoTest, ShortExternalDataIsBadInputNamingTheModel) {
  save_model(add_model(), path("m.onnx"), {.external_data = ExternalData::kAlways});
  fs::resize_file(path("m.onnx.data"), 100);
  try {
    load_model(path("m.onnx"));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_EQ(e.file(), path("m.onnx"));
    EXPECT_NE(e.message().find("'W'"), std::string::npos) << e.what();
  }
}

TEST_F(ModelIoTest, ExternalLocationOutsideTheFolderIsRejected) {
  onnx::ModelProto model = add_model();
  auto* w = model.mutable_graph()->mutable_initializer(0);
  w->clear_raw_data();
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* entry = w->add_external_data();
  entry->set_key("location");
  entry->set_value("../secret.bin");
  save_model(model, path("m.onnx"));
  EXPECT_THROW(load_model(path("m.onnx")), Error);
}

TEST_F(ModelIoTest, GarbageAndEmptyFilesAreNotModels) {
  std::ofstream(path("garbage.onnx")) << "this is not a protobuf \xff\xff\xff";
  std::ofstream(path("empty.onnx"));
  for (const char* name : {"garbage.onnx", "empty.onnx"}) {
    try {
      load_model(path(name));
      FAIL() << name;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kBadInput) << e.what();
      EXPECT_EQ(e.file(), path(name));
    }
  }
  try {
    load_model(path("missing.onnx"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
  }
}

TEST_F(ModelIoTest, FailedSaveLeavesNothingBehind) {
  // A directory in the way of the destination makes the final rename fail.
  fs::create_directories(path("taken.onnx"));
  fs::create_directories(path("taken.onnx/inner"));
  EXPECT_THROW(save_model(add_model(), path("taken.onnx")), Error);
  for (const auto& entry : fs::directory_iterator(dir_)) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp-"), std::string::npos) << entry.path();
  }
}

}  // namespace
}  // namespace mixprec

namespace mixprec {
namespace {

// ONNX stores 4-bit tensors two per byte (raw_data) or one packed byte per int32 (int32_data);
// a Tensor holds one element per byte either way.
TEST(TensorProto4Bit, PacksRawDataAndReadsBothEncodings) {
  const Tensor codes = Tensor::from_floats(DType::kInt4, {3}, std::vector<float>{-8, 7, -1});
  const onnx::TensorProto proto = tensor_to_proto(codes, "w");
  EXPECT_EQ(proto.data_type(), 22);
  ASSERT_EQ(proto.raw_data().size(), 2u);
  EXPECT_EQ(static_cast<uint8_t>(proto.raw_data()[0]), 0x78);
  EXPECT_EQ(static_cast<uint8_t>(proto.raw_data()[1]), 0x0F);
  EXPECT_EQ(tensor_from_proto(proto, "m.onnx"), codes);

  onnx::TensorProto typed;
  typed.set_name("w");
  typed.set_data_type(21);  // UINT4
  typed.add_dims(3);
  typed.add_int32_data(0x5A);
  typed.add_int32_data(0x03);
  EXPECT_EQ(tensor_from_proto(typed, "m.onnx").to_floats(), (std::vector<float>{10, 5, 3}));

  onnx::TensorProto short_raw = proto;
  short_raw.set_raw_data(std::string(3, '\0'));
  try {
    tensor_from_proto(short_raw, "m.onnx");
    FAIL() << "3 bytes for 3 int4 accepted";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::kBadInput);
    EXPECT_NE(error.message().find("holds 3 bytes, its shape 3 needs 2"), std::string::npos) << error.what();
  }
}

TEST(TensorProtoFloat8, KeepsBitPatterns) {
  const Tensor values = Tensor::from_floats(DType::kFloat8E4M3FN, {2}, std::vector<float>{0.3f, -448.0f});
  const onnx::TensorProto proto = tensor_to_proto(values, "s");
  EXPECT_EQ(proto.data_type(), 17);
  EXPECT_EQ(tensor_from_proto(proto, "m.onnx").to_floats(), (std::vector<float>{0.3125f, -448.0f}));
}

}  // namespace
}  // namespace mixprec
