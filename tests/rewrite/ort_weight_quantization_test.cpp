// ort_weight_quantization: the float weights the rewrite says ONNX Runtime quantizes are the ones
// ONNX Runtime's own optimized graph shows quantized, and quantize_model warns about them.
#include "rewrite/ort_weight_quantization.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "mixprec/calibration.h"
#include "mixprec/config.h"
#include "mixprec/evaluation.h"
#include "mixprec/log.h"
#include "mixprec/model_io.h"
#include "mixprec/random_data.h"
#include "mixprec/rewrite.h"
#include "mixprec/runtime.h"
#include "mixprec/sample_source.h"
#include "support/memory_source.h"
#include "support/model_builder.h"
#include "support/temp_dir.h"

namespace mixprec {
namespace {

class OrtWeightQuantization : public testing::TempDirTest {};

struct Rewritten {
  onnx::ModelProto model;
  RewriteSummary summary;
  std::vector<std::string> warnings;
};

Rewritten rewrite_with(const onnx::ModelProto& model, const QuantConfig& config) {
  WarningCollector warnings;
  const onnx::ModelProto prepared = prepare_model(model, prepare_options(config), "test");
  const auto source = make_random_source(Session::from_model(prepared, "test").inputs(), 4, 3);
  const CalibrationStats stats = calibrate_model(prepared, "test", *source);
  Rewritten r;
  r.model = quantize_model(prepared, assign_layers(config, prepared, "test"), stats, quantize_options(config), "test",
                           {}, &r.summary);
  r.warnings = warnings.warnings();
  return r;
}

// What ONNX Runtime's basic optimizations feed each Conv's or Gemm's weight input: the op that produces it,
// or "initializer".
std::map<std::string, std::string> weight_producers_of(const onnx::GraphProto& graph) {
  std::map<std::string, std::string> producer_of;
  for (const auto& node : graph.node()) {
    for (const auto& output : node.output()) producer_of[output] = node.op_type();
  }
  std::map<std::string, std::string> weights;
  for (const auto& node : graph.node()) {
    if (node.op_type() != "Conv" && node.op_type() != "Gemm") continue;
    const auto it = producer_of.find(node.input(1));
    weights[node.name()] = it == producer_of.end() ? "initializer" : it->second;
  }
  return weights;
}

std::map<std::string, std::string> weight_producers(const onnx::ModelProto& optimized) {
  return weight_producers_of(optimized.graph());
}

// conv_chain(3) in XINT8 with the weight and bias specs taken out: every Conv reads an int8
// input and a float weight. conv_0 and conv_1 lead, through their Relu, to the next Conv's input
// Q; conv_2's Relu writes the graph output, so ONNX Runtime leaves that one float.
TEST_F(OrtWeightQuantization, TheWeightsItNamesAreTheOnesOnnxRuntimeQuantizes) {
  const onnx::ModelProto model = testing::conv_chain(3);
  QuantConfig config = *preset_config("XINT8");
  config.global.weight.reset();
  config.global.bias.reset();
  const Rewritten r = rewrite_with(model, config);
  EXPECT_EQ(r.summary.ort_quantized_weights, (std::vector<std::string>{"conv_0", "conv_1"}));
  const auto warned = std::ranges::count_if(r.warnings, [](const std::string& w) {
    return w.find("2 Conv/ConvTranspose/Gemm nodes keep float weights next to a quantized input (conv_0, conv_1)") !=
           std::string::npos;
  });
  EXPECT_EQ(warned, 1);

  SessionOptions options;
  options.optimized_model_path = path("basic.onnx");
  Session::from_model(r.model, "test", options);
  const std::map<std::string, std::string> want = {
      {"conv_0", "DequantizeLinear"}, {"conv_1", "DequantizeLinear"}, {"conv_2", "initializer"}};
  EXPECT_EQ(weight_producers(load_model(path("basic.onnx"))), want);

  // At opset 10 the same model needs 11: ONNX Runtime gives those Convs' float biases int32 codes
  // through a Round (before, the session failed "No Op registered for Round ... version of 10").
  onnx::ModelProto opset10 = model;
  opset10.mutable_opset_import(0)->set_version(10);
  const Rewritten raised = rewrite_with(opset10, config);
  EXPECT_EQ(raised.summary.opset_from, 10);
  EXPECT_EQ(raised.summary.opset_to, 11);
  Session::from_model(raised.model, "test");

  // With XINT8's own weight spec every weight is ours already: nothing named, nothing said.
  const Rewritten xint8 = rewrite_with(model, *preset_config("XINT8"));
  EXPECT_TRUE(xint8.summary.ort_quantized_weights.empty());
  for (const std::string& w : xint8.warnings) EXPECT_EQ(w.find("keep float weights"), std::string::npos) << w;
}

// x [1, 8], cond -> If "if": then Gemm "fc_a" -> Gemm "fc_b", else Gemm "fc_c"; -> y [1, 4].
// Weights and biases are the bodies' own initializers. With float weights and int8 activations,
// fc_a leads to fc_b's input Q inside the body; fc_b and fc_c write the branch's output.
onnx::ModelProto if_gemms_model() {
  using testing::attr_int;
  using testing::deterministic_values;
  const auto gemm = [](testing::ModelBuilder& b, const std::string& name, const std::string& in, const std::string& out,
                       int64_t k, uint32_t seed) {
    b.add_initializer(name + "_w", {4, k}, deterministic_values(static_cast<size_t>(4 * k), seed))
        .add_initializer(name + "_b", {4}, deterministic_values(4, seed + 1, 0.1f))
        .add_node("Gemm", {in, name + "_w", name + "_b"}, {out}, {attr_int("transB", 1)}, name);
  };
  testing::ModelBuilder then_branch, else_branch;
  gemm(then_branch, "fc_a", "x", "a_out", 8, 3);
  gemm(then_branch, "fc_b", "a_out", "then_out", 4, 5);
  then_branch.add_output("then_out", onnx::TensorProto::FLOAT, {1, 4});
  gemm(else_branch, "fc_c", "x", "else_out", 8, 7);
  else_branch.add_output("else_out", onnx::TensorProto::FLOAT, {1, 4});
  return testing::ModelBuilder()
      .add_input("x", onnx::TensorProto::FLOAT, {1, 8})
      .add_input("cond", onnx::TensorProto::BOOL, {})
      .add_output("y", onnx::TensorProto::FLOAT, {1, 4})
      .add_node("If", {"cond"}, {"y"},
                {testing::attr_graph("then_branch", then_branch.build_graph()),
                 testing::attr_graph("else_branch", else_branch.build_graph())},
                "if")
      .build();
}

// ONNX Runtime's transformer goes into the bodies, and so does the list.
TEST_F(OrtWeightQuantization, InsideAnIfBodyTheListIsWhatOnnxRuntimeDoesThereToo) {
  QuantConfig config = *preset_config("XINT8");
  config.global.weight.reset();
  config.global.bias.reset();
  const onnx::ModelProto model = if_gemms_model();
  const onnx::ModelProto prepared = prepare_model(model, prepare_options(config), "test");
  std::vector<NamedTensors> samples;  // one down each branch, so calibration sees both bodies
  for (const bool branch : {true, false}) {
    Tensor cond(DType::kBool, Shape{});
    cond.as<bool>()[0] = branch;
    samples.push_back({{"x", random_tensor(DType::kFloat32, {1, 8}, branch ? 1 : 2)}, {"cond", cond}});
  }
  const CalibrationStats stats = calibrate_model(prepared, "test", testing::MemorySamples(std::move(samples)));
  RewriteSummary summary;
  const onnx::ModelProto q = quantize_model(prepared, assign_layers(config, prepared, "test"), stats,
                                            quantize_options(config), "test", {}, &summary);
  EXPECT_EQ(summary.ort_quantized_weights, (std::vector<std::string>{"if.then_branch/fc_a"}));

  SessionOptions options;
  options.optimized_model_path = path("basic.onnx");
  Session::from_model(q, "test", options);
  const onnx::ModelProto optimized = load_model(path("basic.onnx"));
  std::map<std::string, std::string> weights;
  for (const auto& node : optimized.graph().node()) {
    for (const auto& attribute : node.attribute()) {
      if (attribute.has_g()) weights.merge(weight_producers_of(attribute.g()));
    }
  }
  const std::map<std::string, std::string> want = {
      {"fc_a", "DequantizeLinear"}, {"fc_b", "initializer"}, {"fc_c", "initializer"}};
  EXPECT_EQ(weights, want);
}

}  // namespace
}  // namespace mixprec
