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

// What ONNX Runtime's basic optimizations feed each Conv's weight input: the op that produces it,
// or "initializer".
std::map<std::string, std::string> weight_producers(const onnx::ModelProto& optimized) {
  std::map<std::string, std::string> producer_of;
  for (const auto& node : optimized.graph().node()) {
    for (const auto& output : node.output()) producer_of[output] = node.op_type();
  }
  std::map<std::string, std::string> weights;
  for (const auto& node : optimized.graph().node()) {
    if (node.op_type() != "Conv") continue;
    const auto it = producer_of.find(node.input(1));
    weights[node.name()] = it == producer_of.end() ? "initializer" : it->second;
  }
  return weights;
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

}  // namespace
}  // namespace mixprec
