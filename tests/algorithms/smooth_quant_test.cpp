#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "ir/op_traits.h"
#include "mixprec/algorithms.h"
#include "mixprec/config.h"
#include "mixprec/jobs.h"
#include "mixprec/model_io.h"
#include "mixprec/runtime.h"
#include "mixprec/tensor_proto.h"
#include "support/model_builder.h"
#include "support/temp_dir.h"

namespace mixprec {
namespace {

using onnx::TensorProto;
using testing::ModelBuilder;

std::vector<float> initializer(const onnx::ModelProto& model, const std::string& name) {
  for (const auto& init : model.graph().initializer()) {
    if (init.name() == name) return tensor_from_proto(init, "test").to_floats();
  }
  ADD_FAILURE() << "no initializer " << name;
  return {};
}

const onnx::NodeProto* node_named(const onnx::ModelProto& model, const std::string& name) {
  for (const auto& node : model.graph().node()) {
    if (node.name() == name) return &node;
  }
  return nullptr;
}

void expect_floats(const std::vector<float>& got, const std::vector<float>& want, float tolerance = 1e-5f) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tolerance) << "element " << i;
}

// Runs `model` on input x of `shape` holding `values`; every output, flattened.
std::vector<std::vector<float>> run(const onnx::ModelProto& model, const Shape& shape, const std::vector<float>& values) {
  const Session session = Session::from_model(model, "test");
  std::vector<std::vector<float>> out;
  for (const auto& [name, tensor] : session.run({{"x", Tensor::from_floats(shape, values)}})) out.push_back(tensor.to_floats());
  return out;
}

void expect_same_outputs(const onnx::ModelProto& before, const onnx::ModelProto& after, const Shape& shape) {
  const std::vector<float> x = testing::deterministic_values(static_cast<size_t>(shape_numel(shape)), 11, 3.0f);
  const auto a = run(before, shape, x);
  const auto b = run(after, shape, x);
  ASSERT_EQ(a.size(), b.size());
  for (size_t o = 0; o < a.size(); ++o) {
    ASSERT_EQ(a[o].size(), b[o].size());
    for (size_t i = 0; i < a[o].size(); ++i) EXPECT_NEAR(a[o][i], b[o][i], 1e-5f * (1 + std::fabs(a[o][i]))) << o << "/" << i;
  }
}

// x [1, 3, 2] -> Relu "relu" -> r -> MatMul "mm" (W [2, 2]) -> y: Relu is no per-channel affine
// op, so the scale goes into a Mul.
onnx::ModelProto relu_matmul() {
  return ModelBuilder()
      .add_input("x", TensorProto::FLOAT, {1, 3, 2})
      .add_initializer("w", {2, 2}, {0.5f, -0.25f, 2.0f, 1.0f})
      .add_node("Relu", {"x"}, {"r"}, {}, "relu")
      .add_node("MatMul", {"r", "w"}, {"y"}, {}, "mm")
      .add_output("y", TensorProto::FLOAT, {1, 3, 2})
      .build();
}

TEST(SmoothQuantTest, HandWorkedScalesGoIntoTheWeightRowsAndAFloatMul) {
  onnx::ModelProto model = relu_matmul();
  const onnx::ModelProto before = model;
  ASSERT_EQ(smooth_quant_activations(model, "test"), std::vector<std::string>{"r"});
  // a = (4, 1), w = (0.5, 2): s = sqrt(a / w) = (2.828427, 0.707107) at alpha 0.5, so both
  // channels of the smoothed activation and both weight rows reach sqrt(a w) = sqrt(2).
  const SmoothQuantSummary s = smooth_quant(model, {.alpha = 0.5}, {{"r", {4.0f, 1.0f}}}, "test");
  EXPECT_EQ(s.groups, 1u);
  EXPECT_EQ(s.layers, 1u);
  EXPECT_EQ(s.folded, 0u);
  EXPECT_EQ(s.muls, 1u);
  EXPECT_NEAR(s.max_scale_ratio, 4.0, 1e-6);
  expect_floats(initializer(model, "w"), {1.414214f, -0.707107f, 1.414214f, 0.707107f});
  expect_floats(initializer(model, "r/smooth_quant_scale"), {0.353553f, 1.414214f});
  const onnx::NodeProto* mul = node_named(model, "r/smooth_quant");
  ASSERT_NE(mul, nullptr);
  EXPECT_EQ(mul->doc_string(), ir::kSmoothQuantScaleDoc);
  EXPECT_EQ(node_named(model, "mm")->input(0), mul->output(0));
  // Topologically sorted: relu, the Mul, mm.
  ASSERT_EQ(model.graph().node_size(), 3);
  EXPECT_EQ(model.graph().node(1).name(), "r/smooth_quant");
  expect_same_outputs(before, model, {1, 3, 2});
  // The Mul is kept float by the config stage; mm still quantizes its (smoothed) input.
  const std::vector<NodeAssignment> assignment = assign_layers(*preset_config("A8W8"), model, "test");
  for (const NodeAssignment& a : assignment) {
    if (a.node_name == "r/smooth_quant") {
      EXPECT_TRUE(a.excluded);
      EXPECT_NE(a.reason.find("SmoothQuant"), std::string::npos) << a.reason;
    }
    if (a.node_name == "mm") {
      EXPECT_FALSE(a.excluded) << a.reason;
    }
  }
}

TEST(SmoothQuantTest, AlphaOneMovesTheWholeRangeIntoTheWeights) {
  onnx::ModelProto model = relu_matmul();
  // alpha 1: s = a, the activation's channels all become 1.
  smooth_quant(model, {.alpha = 1.0}, {{"r", {4.0f, 1.0f}}}, "test");
  expect_floats(initializer(model, "r/smooth_quant_scale"), {0.25f, 1.0f});
  expect_floats(initializer(model, "w"), {2.0f, -1.0f, 2.0f, 1.0f});
}

// x [1, 4, 3] -> LayerNormalization "ln" (scale, bias) -> n -> MatMul "q" (W1) and MatMul "k"
// (W2): one group, one s, folded into the LayerNorm.
onnx::ModelProto layernorm_two_matmuls(bool residual) {
  ModelBuilder b;
  b.opset(17)
      .add_input("x", TensorProto::FLOAT, {1, 4, 3})
      .add_initializer("scale", {3}, {1.0f, 1.0f, 1.0f})
      .add_initializer("bias", {3}, {0.1f, -0.2f, 0.3f})
      .add_initializer("w1", {3, 2}, {1.0f, 0.0f, 0.0f, 0.25f, 0.5f, 0.5f})
      .add_initializer("w2", {3, 2}, {0.25f, 0.0f, 4.0f, 0.0f, 0.0f, 2.0f})
      .add_node("LayerNormalization", {"x", "scale", "bias"}, {"n"}, {testing::attr_int("axis", -1)}, "ln")
      .add_node("MatMul", {"n", "w1"}, {"q"}, {}, "q")
      .add_node("MatMul", {"n", "w2"}, {"k"}, {}, "k")
      .add_output("q", TensorProto::FLOAT, {1, 4, 2})
      .add_output("k", TensorProto::FLOAT, {1, 4, 2});
  if (residual) {
    b.add_node("Add", {"n", "x"}, {"res"}, {}, "residual").add_output("res", TensorProto::FLOAT, {1, 4, 3});
  }
  return b.build();
}

TEST(SmoothQuantTest, FoldsIntoALayerNormWithOneScaleForEveryReader) {
  onnx::ModelProto model = layernorm_two_matmuls(false);
  const onnx::ModelProto before = model;
  // w = max over both weights' rows = (1, 4, 2); a = (4, 1, 0.5): s = sqrt(a / w) = (2, 0.5, 0.5).
  const SmoothQuantSummary s = smooth_quant(model, {.alpha = 0.5}, {{"n", {4.0f, 1.0f, 0.5f}}}, "test");
  EXPECT_EQ(s.groups, 1u);
  EXPECT_EQ(s.layers, 2u);
  EXPECT_EQ(s.folded, 1u);
  EXPECT_EQ(s.muls, 0u);
  EXPECT_EQ(model.graph().node_size(), 3);  // nothing inserted
  expect_floats(initializer(model, "scale"), {0.5f, 2.0f, 2.0f});
  expect_floats(initializer(model, "bias"), {0.05f, -0.4f, 0.6f});
  expect_floats(initializer(model, "w1"), {2.0f, 0.0f, 0.0f, 0.125f, 0.25f, 0.25f});
  expect_floats(initializer(model, "w2"), {0.5f, 0.0f, 2.0f, 0.0f, 0.0f, 1.0f});
  expect_same_outputs(before, model, {1, 4, 3});
}

TEST(SmoothQuantTest, AnotherReaderOfTheActivationGetsAMulNotAFold) {
  onnx::ModelProto model = layernorm_two_matmuls(true);
  const onnx::ModelProto before = model;
  const SmoothQuantSummary s = smooth_quant(model, {.alpha = 0.5}, {{"n", {4.0f, 1.0f, 0.5f}}}, "test");
  EXPECT_EQ(s.folded, 0u);
  EXPECT_EQ(s.muls, 1u);
  expect_floats(initializer(model, "scale"), {1.0f, 1.0f, 1.0f});  // the residual reads the LayerNorm as it was
  EXPECT_EQ(node_named(model, "residual")->input(0), "n");
  EXPECT_EQ(node_named(model, "q")->input(0), "n/smoothed");
  EXPECT_EQ(node_named(model, "k")->input(0), "n/smoothed");
  expect_same_outputs(before, model, {1, 4, 3});
}

TEST(SmoothQuantTest, FoldsIntoAnExportersMulAddAffine) {
  // x -> Mul "gamma" (g [3]) -> Add "beta" (b [1, 1, 3]) -> a -> Gemm-free MatMul "fc".
  onnx::ModelProto model = ModelBuilder()
                               .add_input("x", TensorProto::FLOAT, {1, 4, 3})
                               .add_initializer("g", {3}, {2.0f, 1.0f, 0.5f})
                               .add_initializer("b", {1, 1, 3}, {1.0f, 2.0f, 3.0f})
                               .add_initializer("w", {3, 1}, {1.0f, 1.0f, 1.0f})
                               .add_node("Mul", {"x", "g"}, {"m"}, {}, "gamma")
                               .add_node("Add", {"b", "m"}, {"a"}, {}, "beta")
                               .add_node("MatMul", {"a", "w"}, {"y"}, {}, "fc")
                               .add_output("y", TensorProto::FLOAT, {1, 4, 1})
                               .build();
  const onnx::ModelProto before = model;
  // a = (16, 4, 1), w = (1, 1, 1): s = (4, 2, 1).
  const SmoothQuantSummary s = smooth_quant(model, {.alpha = 0.5}, {{"a", {16.0f, 4.0f, 1.0f}}}, "test");
  EXPECT_EQ(s.folded, 1u);
  expect_floats(initializer(model, "g"), {0.5f, 0.5f, 0.5f});
  expect_floats(initializer(model, "b"), {0.25f, 1.0f, 3.0f});
  expect_floats(initializer(model, "w"), {4.0f, 2.0f, 1.0f});
  expect_same_outputs(before, model, {1, 4, 3});
}

TEST(SmoothQuantTest, GemmWithTransposedWeightScalesItsColumns) {
  // Gemm B [N = 2, K = 2] with transB: row j of the effective weight is column j of B.
  onnx::ModelProto model = ModelBuilder()
                               .add_input("x", TensorProto::FLOAT, {3, 2})
                               .add_initializer("b", {2, 2}, {0.5f, 2.0f, -0.25f, 1.0f})
                               .add_node("Relu", {"x"}, {"r"}, {}, "relu")
                               .add_node("Gemm", {"r", "b"}, {"y"}, {testing::attr_int("transB", 1)}, "gemm")
                               .add_output("y", TensorProto::FLOAT, {3, 2})
                               .build();
  const onnx::ModelProto before = model;
  smooth_quant(model, {.alpha = 0.5}, {{"r", {4.0f, 1.0f}}}, "test");  // as relu_matmul: s = (2.828427, 0.707107)
  expect_floats(initializer(model, "b"), {1.414214f, 1.414214f, -0.707107f, 0.707107f});
  expect_same_outputs(before, model, {3, 2});
}

TEST(SmoothQuantTest, AModelWithoutConstantWeightMatMulsIsANote) {
  onnx::ModelProto model = testing::conv_chain(2);
  const onnx::ModelProto before = model;
  EXPECT_TRUE(smooth_quant_activations(model, "test").empty());
  const SmoothQuantSummary s = smooth_quant(model, {}, {}, "test");
  EXPECT_EQ(s.groups, 0u);
  ASSERT_EQ(s.notes.size(), 1u);
  EXPECT_NE(s.notes[0].find("nothing smoothed"), std::string::npos) << s.notes[0];
  EXPECT_EQ(model.SerializeAsString(), before.SerializeAsString());
}

class TwoSamples : public SampleSource {
 public:
  size_t size() const override { return 2; }
  NamedTensors sample(size_t index) const override {
    const std::vector<float> values = index == 0 ? std::vector<float>{1, -5, 3, 2} : std::vector<float>{-4, 1, 0, 0};
    return {{"x", Tensor::from_floats(Shape{1, 2, 2}, values)}};
  }
  std::string describe() const override { return "2 samples"; }
};

TEST(SmoothQuantTest, MeasuresTheMaximumOfEachLastAxisChannel) {
  const onnx::ModelProto model = ModelBuilder()
                                     .add_input("x", TensorProto::FLOAT, {1, 2, 2})
                                     .add_node("Identity", {"x"}, {"r"}, {}, "id")
                                     .add_output("r", TensorProto::FLOAT, {1, 2, 2})
                                     .build();
  const TwoSamples samples;
  // Channel 0 sees 1, 3, -4, 0; channel 1 sees -5, 2, 1, 0.
  const ChannelMaxima all = measure_channel_maxima(model, {"r"}, samples, {}, {}, "test");
  expect_floats(all.at("r"), {4.0f, 5.0f});
  const ChannelMaxima first = measure_channel_maxima(model, {"r"}, samples, {0}, {}, "test");
  expect_floats(first.at("r"), {3.0f, 5.0f});
}

// x [1, 16, 8] -> Mul (g: channel 0 x 40) -> Add (b) -> a -> MatMul (W [8, 8]) -> y: one outlier
// channel, as LayerNorm outputs of transformers have.
onnx::ModelProto outlier_model() {
  std::vector<float> g(8, 1.0f);
  g[0] = 40.0f;
  return ModelBuilder()
      .add_input("x", TensorProto::FLOAT, {1, 16, 8})
      .add_initializer("g", {8}, g)
      .add_initializer("b", {8}, testing::deterministic_values(8, 5, 0.1f))
      .add_initializer("w", {8, 8}, testing::deterministic_values(64, 7, 0.5f))
      .add_node("Mul", {"x", "g"}, {"m"}, {}, "gamma")
      .add_node("Add", {"m", "b"}, {"a"}, {}, "beta")
      .add_node("MatMul", {"a", "w"}, {"y"}, {}, "fc")
      .add_output("y", TensorProto::FLOAT, {1, 16, 8})
      .build();
}

class SmoothQuantJobTest : public testing::TempDirTest {
 protected:
  // The output's mean squared error against the float model on 4 seeded inputs.
  double quantize_and_measure(const std::string& config_text, const std::string& name, QuantizeReport* report) {
    save_model(outlier_model(), path("model.onnx"));
    std::ofstream(path(name + ".json")) << config_text;
    QuantizeParams q;
    q.setup.model_path = path("model.onnx");
    q.output_path = path(name + ".onnx");
    q.config.path = path(name + ".json");
    q.setup.calibration.data.random_samples = 16;
    q.setup.calibration.data.seed = 3;
    *report = quantize_job(q);
    const onnx::ModelProto reference = outlier_model();
    const onnx::ModelProto quantized = load_model(q.output_path);
    double error = 0;
    size_t count = 0;
    for (uint32_t seed = 0; seed < 4; ++seed) {
      const std::vector<float> x = testing::deterministic_values(128, 100 + seed, 1.0f);
      const auto want = run(reference, {1, 16, 8}, x).at(0);
      const auto got = run(quantized, {1, 16, 8}, x).at(0);
      for (size_t i = 0; i < want.size(); ++i, ++count) error += (got[i] - want[i]) * (got[i] - want[i]);
    }
    return error / static_cast<double>(count);
  }
};

TEST_F(SmoothQuantJobTest, QuantizeRunsItBeforeCalibrationAndTheErrorFalls) {
  // Per-tensor int8 activations: without smoothing, channel 0 takes the scale and the other
  // seven channels get a handful of codes.
  const std::string base = R"("global_config": {"input_tensors": {"spec": "Int8Spec", "params": {"symmetric": true}},
                                                 "weight": {"spec": "Int8Spec", "params": {"symmetric": true, "per_channel": true}}})";
  QuantizeReport plain_report, smooth_report;
  const double plain = quantize_and_measure("{" + base + "}", "plain", &plain_report);
  const double smooth =
      quantize_and_measure("{" + base + R"(, "algo_config": [{"name": "smoothquant", "alpha": 0.5}]})", "smooth", &smooth_report);
  EXPECT_FALSE(plain_report.prepare.smooth_quant.has_value());
  ASSERT_TRUE(smooth_report.prepare.smooth_quant.has_value());
  EXPECT_EQ(smooth_report.prepare.smooth_quant->folded, 1u);
  EXPECT_EQ(smooth_report.prepare.smooth_quant->samples, 16u);
  std::cout << "[ measured ] outlier-channel MatMul, int8 output MSE: plain " << plain << ", SmoothQuant " << smooth << "\n";
  EXPECT_LT(smooth, plain / 2);  // measured 2.7x lower
  // The saved config asks for it again.
  std::ifstream saved(path("smooth.config.json"));
  const std::string text((std::istreambuf_iterator<char>(saved)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("\"smoothquant\""), std::string::npos) << text;
}

TEST(SmoothQuantConfigTest, BothSpellingsGiveTheSameRecipe) {
  const QuantConfig algo = parse_config(nlohmann::ordered_json::parse(R"({"algo_config": [{"name": "smoothquant", "alpha": 0.75}]})"), "t");
  const QuantConfig extra =
      parse_config(nlohmann::ordered_json::parse(R"({"extra_options": {"IncludeSQ": true, "SmoothAlpha": 0.75}})"), "t");
  const QuantConfig quark = parse_config(
      nlohmann::ordered_json::parse(R"({"global_config": {}, "exclude": [], "algo_config": [{"name": "smooth_quant", "alpha": 0.75}]})"),
      "t");
  // Quark's name in mixprec's shape is read as mixprec's.
  const QuantConfig alias = parse_config(nlohmann::ordered_json::parse(R"({"algo_config": [{"name": "smooth_quant", "alpha": 0.75}]})"), "t");
  EXPECT_EQ(alias, algo);
  for (const QuantConfig* config : {&algo, &extra, &quark}) {
    const AlgorithmRecipe recipe = algorithm_recipe(*config);
    ASSERT_TRUE(recipe.smooth_quant.has_value());
    EXPECT_EQ(recipe.smooth_quant->alpha, 0.75);
    EXPECT_EQ(recipe.names(), std::vector<std::string>{"smoothquant"});
  }
  EXPECT_EQ(quark.algorithms.at(0).name, "smoothquant");
  // Written in Quark's shape, it is Quark's name again.
  EXPECT_EQ(config_to_json(quark, ConfigShape::kQuark)["algo_config"][0]["name"], "smooth_quant");
  EXPECT_EQ(parse_config(config_to_json(algo), "t"), algo);
}

}  // namespace
}  // namespace mixprec
