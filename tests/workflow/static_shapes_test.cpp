// Static shapes (issue 17, VITIS.md): analyze names dynamic dims, quantize keeps a static model
// static with every tensor's shape declared, --make-static pins a dynamic one, and a shape no
// static declaration can hold is refused with nothing written.
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>

#include "mixprec/analysis.h"
#include "mixprec/config.h"
#include "mixprec/error.h"
#include "mixprec/jobs.h"
#include "mixprec/model_io.h"
#include "support/model_builder.h"
#include "support/temp_dir.h"

namespace mixprec {
namespace {

using onnx::TensorProto;
using testing::ModelBuilder;

// x [batch, 4] -> MatMul "mm" (W [4, 3]) -> h -> Relu "relu" -> y [batch, 3], with h declared
// as [batch, 3] (and the batch `batch` a number when `batch` is).
onnx::ModelProto two_ops(const testing::DimSpec& batch) {
  return ModelBuilder()
      .add_input("x", TensorProto::FLOAT, {batch, 4})
      .add_initializer("w", {4, 3}, testing::deterministic_values(12, 3))
      .add_node("MatMul", {"x", "w"}, {"h"}, {}, "mm")
      .add_node("Relu", {"h"}, {"y"}, {}, "relu")
      .add_value_info("h", TensorProto::FLOAT, {batch, 3})
      .add_output("y", TensorProto::FLOAT, {batch, 3})
      .build();
}

const onnx::ValueInfoProto* value_info(const onnx::ModelProto& model, const std::string& name) {
  for (const auto& info : model.graph().value_info()) {
    if (info.name() == name) return &info;
  }
  return nullptr;
}

std::vector<int64_t> dims_of(const onnx::ValueInfoProto& info) {
  std::vector<int64_t> dims;
  for (const auto& d : info.type().tensor_type().shape().dim()) dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
  return dims;
}

TEST(DynamicDimsTest, NamesEveryDimThatIsNotANumber) {
  onnx::ModelProto model = two_ops(std::string("batch"));
  model.mutable_graph()->mutable_value_info(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(1)->clear_dim_value();
  model.mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()->clear_shape();
  EXPECT_EQ(dynamic_dims(model), (std::vector<std::string>{"'x' dim 0 ('batch')", "'y' (no shape)", "'h' dim 0 ('batch')",
                                                           "'h' dim 1 (unknown)"}));
  EXPECT_TRUE(dynamic_dims(two_ops(int64_t{2})).empty());
  EXPECT_EQ(analyze_model(model, "m.onnx").dynamic_dims.size(), 4u);
}

class StaticShapesTest : public testing::TempDirTest {
 protected:
  QuantizeParams params(const onnx::ModelProto& model, const std::string& out) {
    save_model(model, path("model.onnx"));
    QuantizeParams q;
    q.setup.model_path = path("model.onnx");
    q.output_path = path(out);
    q.config.preset = "A8W8";
    q.setup.calibration.data.random_samples = 4;
    q.setup.calibration.data.seed = 5;
    return q;
  }
};

TEST_F(StaticShapesTest, AStaticModelIsWrittenWithEveryTensorsStaticShape) {
  const QuantizeReport r = quantize_job(params(two_ops(int64_t{2}), "q.onnx"));
  EXPECT_TRUE(r.static_shapes.checked);
  EXPECT_FALSE(r.static_shapes.inputs_pinned);
  const onnx::ModelProto q = load_model(path("q.onnx"));
  EXPECT_TRUE(dynamic_dims(q).empty());
  // Every node output but the graph output has its shape, the Q/DQ pairs' included.
  EXPECT_EQ(r.static_shapes.value_infos, static_cast<size_t>(q.graph().node_size()) - 1);
  const onnx::ValueInfoProto* h = value_info(q, "h");
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(dims_of(*h), (std::vector<int64_t>{2, 3}));
  size_t int8 = 0;
  for (const auto& info : q.graph().value_info()) int8 += info.type().tensor_type().elem_type() == TensorProto::INT8;
  EXPECT_GE(int8, 1u);  // the activation's codes: declared with their own type
}

TEST_F(StaticShapesTest, ADynamicModelIsLeftAsItIsUnlessMadeStatic) {
  const QuantizeReport as_is = quantize_job([&] {
    QuantizeParams q = params(two_ops(std::string("batch")), "dynamic.onnx");
    q.setup.calibration.data.input_shapes = {{"x", {3, 4}}};
    return q;
  }());
  EXPECT_FALSE(as_is.static_shapes.checked);
  EXPECT_EQ(as_is.static_shapes.dynamic_in_input.size(), 3u);
  EXPECT_FALSE(dynamic_dims(load_model(path("dynamic.onnx"))).empty());

  QuantizeParams q = params(two_ops(std::string("batch")), "static.onnx");
  q.setup.calibration.data.input_shapes = {{"x", {3, 4}}};
  q.make_static = true;
  const QuantizeReport made = quantize_job(q);
  EXPECT_TRUE(made.static_shapes.checked);
  EXPECT_EQ(made.static_shapes.inputs, std::vector<std::string>{"x 3x4"});
  const onnx::ModelProto s = load_model(path("static.onnx"));
  EXPECT_TRUE(dynamic_dims(s).empty()) << dynamic_dims(s).front();
  EXPECT_EQ(dims_of(s.graph().input(0)), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(dims_of(s.graph().output(0)), (std::vector<int64_t>{3, 3}));
}

TEST_F(StaticShapesTest, ADataDependentShapeIsRefusedWithNothingWritten) {
  // NonZero's output length depends on the values (how many exceed 0.5): no static shape holds it.
  const onnx::ModelProto counted = ModelBuilder()
                                       .add_input("x", TensorProto::FLOAT, {1, 8})
                                       .add_initializer("half", {}, {0.5f})
                                       .add_node("Greater", {"x", "half"}, {"above"}, {}, "greater")
                                       .add_node("NonZero", {"above"}, {"nz"}, {}, "nonzero")
                                       .add_output("nz", TensorProto::INT64, {2, std::string("n")})
                                       .build();
  QuantizeParams q = params(counted, "nz.onnx");
  q.setup.calibration.data.random_samples = 2;
  q.setup.calibration.data.seed = 1;
  q.make_static = true;
  try {
    quantize_job(q);
    ADD_FAILURE() << "a data-dependent shape was made static";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
    EXPECT_NE(e.message().find("tensor 'nz' of NonZero 'nonzero' has a data-dependent shape"), std::string::npos)
        << e.message();
  }
  EXPECT_FALSE(std::filesystem::exists(path("nz.onnx")));
}

// An If whose branches read x: a run sees only the main graph (and one branch), so the bodies'
// shapes come from ONNX shape inference on the main graph's observed ones, checked by ONNX
// Runtime before they are kept; the body outputs, declared without a shape, are inferred too.
TEST_F(StaticShapesTest, MakeStaticInfersTheShapesInsideIfBodies) {
  const auto branch = [](const std::string& tag, const std::string& act) {
    return ModelBuilder()
        .add_node("MatMul", {"x", "w_" + tag}, {"h_" + tag}, {}, "mm_" + tag)
        .add_node(act, {"h_" + tag}, {"out_" + tag}, {}, "act_" + tag)
        .add_output("out_" + tag, TensorProto::FLOAT)
        .build()
        .graph();
  };
  onnx::GraphProto then_branch = branch("t", "Relu"), else_branch = branch("e", "Sigmoid");
  then_branch.set_name("then");
  else_branch.set_name("else");
  const onnx::ModelProto model = ModelBuilder()
                                     .add_input("x", TensorProto::FLOAT, {std::string("batch"), 4})
                                     .add_initializer("w_t", {4, 3}, testing::deterministic_values(12, 3))
                                     .add_initializer("w_e", {4, 3}, testing::deterministic_values(12, 4))
                                     .add_initializer("zero", {}, {0.0f})
                                     .add_node("ReduceSum", {"x"}, {"total"}, {testing::attr_int("keepdims", 0)}, "sum")
                                     .add_node("Greater", {"total", "zero"}, {"positive"}, {}, "test")
                                     .add_node("If", {"positive"}, {"y"},
                                               {testing::attr_graph("then_branch", then_branch),
                                                testing::attr_graph("else_branch", else_branch)},
                                               "branch")
                                     .add_output("y", TensorProto::FLOAT, {std::string("batch"), 3})
                                     .build();
  EXPECT_EQ(analyze_model(model, "if.onnx").body_dynamic_dims,
            (std::vector<std::string>{"branch.then_branch/'out_t' (no shape)", "branch.else_branch/'out_e' (no shape)"}));
  QuantizeParams q = params(model, "if_static.onnx");
  q.setup.calibration.data.input_shapes = {{"x", {3, 4}}};
  q.make_static = true;
  const QuantizeReport r = quantize_job(q);
  EXPECT_TRUE(r.static_shapes.checked);
  EXPECT_GT(r.static_shapes.body_value_infos, 0u);
  const onnx::ModelProto written = load_model(path("if_static.onnx"));
  EXPECT_TRUE(dynamic_dims(written).empty());
  std::cout << "[ measured ] If model --make-static: " << r.static_shapes.body_value_infos << " body shapes, "
            << r.static_shapes.body_dynamic.size() << " body dims open\n";
  for (const auto& attr : written.graph().node(written.graph().node_size() - 1).attribute()) {
    if (attr.name() != "then_branch") continue;
    const onnx::ValueInfoProto* h = nullptr;
    for (const auto& info : attr.g().value_info()) {
      if (info.name() == "h_t") h = &info;
    }
    ASSERT_NE(h, nullptr);
    EXPECT_EQ(dims_of(*h), (std::vector<int64_t>{3, 3}));
  }
  EXPECT_EQ(body_dynamic_dims(written), r.static_shapes.body_dynamic);
}

}  // namespace
}  // namespace mixprec
