#include "mixprec/runtime.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "mixprec/error.h"
#include "mixprec/log.h"
#include "support/model_builder.h"
#include "support/temp_dir.h"

namespace mixprec {
namespace {

using testing::ModelBuilder;

// y = relu(x + b) with a middle tensor "sum" to fetch.
onnx::ModelProto add_relu_model() {
  return ModelBuilder()
      .add_input("x", onnx::TensorProto::FLOAT, {std::string("N"), int64_t{3}})
      .add_output("y", onnx::TensorProto::FLOAT, {std::string("N"), int64_t{3}})
      .add_initializer("b", {3}, {1.0f, -2.0f, 0.5f})
      .add_node("Add", {"x", "b"}, {"sum"}, {}, "add")
      .add_node("Relu", {"sum"}, {"y"}, {}, "relu")
      .build();
}

NamedTensors one_row(std::vector<float> values) {
  return {{"x", Tensor::from_floats({1, 3}, values)}};
}

TEST(RuntimeLog, OnnxRuntimesOwnWarningsArriveAsCountedInfo) {
  // An initializer no node uses: ONNX Runtime logs a warning that it removes it. That line must
  // reach our logger as info (a CLI shows it with -v) and be counted, never go raw to stderr.
  ModelBuilder builder;
  builder.add_input("x", onnx::TensorProto::FLOAT, {1, 3})
      .add_output("y", onnx::TensorProto::FLOAT, {1, 3})
      .add_initializer("unused", {2}, {1.0f, 2.0f})
      .add_node("Relu", {"x"}, {"y"}, {}, "relu");
  std::vector<std::pair<LogLevel, std::string>> seen;
  const LogSink previous = set_log_sink([&](LogLevel level, const std::string& m) { seen.emplace_back(level, m); });
  const size_t before = runtime_log_messages();
  Session::from_model(builder.build(), "unused_initializer");
  set_log_sink(previous);
  EXPECT_GT(runtime_log_messages(), before);
  bool routed = false;
  for (const auto& [level, message] : seen) {
    if (message.find("onnxruntime [") == 0 && message.find("unused") != std::string::npos) {
      routed = true;
      EXPECT_EQ(level, LogLevel::kInfo) << message;
    }
  }
  EXPECT_TRUE(routed);
}

TEST(RuntimeSession, RunsFromMemoryAndDescribesSymbolicDims) {
  const Session session = Session::from_model(add_relu_model(), "add_relu");
  ASSERT_EQ(session.inputs().size(), 1u);
  EXPECT_EQ(session.inputs()[0].shape, (Shape{-1, 3}));
  EXPECT_EQ(session.inputs()[0].dim_params[0], "N");
  const NamedTensors out = session.run(one_row({1.0f, 1.0f, -1.0f}));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].first, "y");
  EXPECT_EQ(out[0].second.to_floats(), (std::vector<float>{2.0f, 0.0f, 0.0f}));  // relu(2, -1, -0.5)
}

TEST(RuntimeSession, FetchesIntermediateTensors) {
  const onnx::ModelProto exposed = expose_intermediates(add_relu_model(), {"sum"}, "add_relu");
  const Session session = Session::from_model(exposed, "add_relu");
  const NamedTensors out = session.run(one_row({1.0f, 1.0f, -1.0f}), {"sum", "y"});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].second.to_floats(), (std::vector<float>{2.0f, -1.0f, -0.5f}));
  EXPECT_THROW(expose_intermediates(add_relu_model(), {"no_such_tensor"}, "add_relu"), Error);
}

TEST(RuntimeSession, WrongInputsAreBadInputNamingTheModel) {
  const Session session = Session::from_model(add_relu_model(), "add_relu.onnx");
  const auto expect_bad = [&](const NamedTensors& inputs, const std::string& fragment) {
    try {
      session.run(inputs);
      ADD_FAILURE() << "accepted " << fragment;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
      EXPECT_EQ(e.file(), "add_relu.onnx");
      EXPECT_NE(e.message().find(fragment), std::string::npos) << e.what();
    }
  };
  expect_bad({{"x", Tensor(DType::kFloat16, {1, 3})}}, "float16");
  expect_bad({{"x", Tensor(DType::kFloat32, {1, 4})}}, "1x4");
  expect_bad({{"z", Tensor(DType::kFloat32, {1, 3})}}, "'z'");
  expect_bad({}, "no data given for model input 'x'");
}

TEST(RuntimeSession, UnavailableProviderListsTheAvailableOnes) {
  try {
    Session::from_model(add_relu_model(), "add_relu.onnx", {.provider = "VitisAI"});
    FAIL() << "VitisAI is not in the CPU build";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_NE(e.message().find("VitisAI"), std::string::npos);
    EXPECT_NE(e.message().find("CPUExecutionProvider"), std::string::npos) << e.what();
  }
}

TEST(RuntimeSession, ModelOnnxRuntimeRejectsIsBadInput) {
  onnx::ModelProto model = add_relu_model();
  model.mutable_graph()->mutable_node(1)->set_op_type("NoSuchOp");
  try {
    Session::from_model(model, "broken.onnx");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_EQ(std::count(e.message().begin(), e.message().end(), '\n'), 0) << "one line";
  }
}

// One custom-op library found at two paths (a plugin's copy in two folders) registers its
// domain once: twice, every later session failed "Domain already set in registry". It is loaded
// once and kept loaded, so sessions built after its files are gone still have its ops (before,
// each session loaded it again from the path, and a deleted plugin folder failed every one).
class RuntimeCustomOps : public testing::TempDirTest {};

TEST_F(RuntimeCustomOps, OneLibraryAtTwoPathsRegistersOnceAndOutlivesItsFiles) {
  for (const char* copy : {"a.so", "b.so"}) std::filesystem::copy_file(MIXPREC_TEST_OPS_LIB, path(copy));
  register_custom_op_library(path("a.so"));
  register_custom_op_library(path("b.so"));
  std::filesystem::remove(path("a.so"));
  std::filesystem::remove(path("b.so"));
  const onnx::ModelProto doubled = ModelBuilder()
                                       .opset(1, "test.mixprec")
                                       .add_input("x", onnx::TensorProto::FLOAT, {1, 3})
                                       .add_output("y", onnx::TensorProto::FLOAT, {1, 3})
                                       .add_node("Double", {"x"}, {"y"}, {}, "double", "test.mixprec")
                                       .build();
  const NamedTensors out = Session::from_model(doubled, "doubled").run(one_row({1.0f, -2.0f, 0.25f}));
  EXPECT_EQ(out.at(0).second.to_floats(), (std::vector<float>{2.0f, -4.0f, 0.5f}));

  try {
    register_custom_op_library(path("a.so"));
    FAIL() << "a missing library registered";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_NE(std::string(e.what()).find("a.so: cannot read"), std::string::npos) << e.what();
  }
  // A file that is no shared library at all: one line naming it, nothing registered.
  std::ofstream(path("notes.so")) << "not a library\n";
  try {
    register_custom_op_library(path("notes.so"));
    FAIL() << "a text file registered";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_NE(std::string(e.what()).find("notes.so: ONNX Runtime does not load it as a custom-op library"),
              std::string::npos)
        << e.what();
  }
  Session::from_model(doubled, "doubled");  // later sessions are not touched by the refused file
}

}  // namespace
}  // namespace mixprec
