// OrtCpuFusion (the U8S8 preset): the quantized graph is one ONNX Runtime's CPU provider fuses
// into integer kernels end to end. The model has one case of each placement rule:
//
//   x -> Conv c1 -> Relu -> Conv c2 -> Add(+3) -> Clip(0, 6) -> Mul(c2 out, clip) -> Div(/6)
//     -> MaxPool 2x2 -> Conv c3 -> y
//
// Expected: the Q after c1 goes after the Relu (ORT drops the Relu), the Q after the Add goes
// after the Clip (dropped too), the Div becomes a Mul by 1/6 that is absorbed into the scale of
// the Mul's codes (no node left for it), MaxPool keeps its input's scale and zero point (ORT runs
// it on the codes) and c3, a graph output, still gets its Q.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

#include "mixprec/config.h"
#include "mixprec/macs.h"
#include "mixprec/model_io.h"
#include "mixprec/jobs.h"
#include "mixprec/rewrite.h"
#include "mixprec/runtime.h"
#include "mixprec/tensor_proto.h"
#include "support/model_builder.h"
#include "support/temp_dir.h"

namespace mixprec {
namespace {

using testing::hardswish_block;

const onnx::NodeProto* producer_of(const onnx::ModelProto& model, const std::string& tensor) {
  for (const auto& node : model.graph().node()) {
    if (std::ranges::find(node.output(), tensor) != node.output().end()) return &node;
  }
  return nullptr;
}

std::vector<const onnx::NodeProto*> consumers_of(const onnx::ModelProto& model, const std::string& tensor) {
  std::vector<const onnx::NodeProto*> consumers;
  for (const auto& node : model.graph().node()) {
    if (std::ranges::find(node.input(), tensor) != node.input().end()) consumers.push_back(&node);
  }
  return consumers;
}

const onnx::NodeProto& node_named(const onnx::ModelProto& model, const std::string& name) {
  for (const auto& node : model.graph().node()) {
    if (node.name() == name) return node;
  }
  throw std::runtime_error("no node " + name);
}

float scalar_initializer(const onnx::ModelProto& model, const std::string& name) {
  for (const auto& init : model.graph().initializer()) {
    if (init.name() == name) return tensor_from_proto(init, "test").to_floats().at(0);
  }
  ADD_FAILURE() << "no initializer " << name;
  return 0;
}

class OrtCpuFusionTest : public testing::TempDirTest {
 protected:
  // Quantizes the block with `config` (8 seeded random calibration samples) to `name`.
  std::string quantize(const QuantConfig& config, const std::string& name) {
    save_model(hardswish_block(), path("model.onnx"));
    save_config(config, path(name + ".json"));
    QuantizeParams q;
    q.setup.model_path = path("model.onnx");
    q.output_path = path(name + ".onnx");
    q.config.path = path(name + ".json");
    q.setup.calibration.data.random_samples = 8;
    q.setup.calibration.data.seed = 3;
    last_report = quantize_job(q);
    return q.output_path;
  }
  QuantizeReport last_report;

  // ONNX Runtime's graph after its fusions (extended level: the integer kernels, no CPU layout).
  onnx::ModelProto optimized(const std::string& model_path) {
    const std::string out = model_path + ".optimized.onnx";
    Session::from_file(model_path, {.optimization = GraphOptimization::kExtended, .optimized_model_path = out});
    return load_model(out);
  }
};

TEST_F(OrtCpuFusionTest, QdqIsPlacedWhereOnnxRuntimeFusesIt) {
  const onnx::ModelProto q = load_model(quantize(*preset_config("U8S8"), "u8s8"));
  const auto only_reader = [&](const onnx::NodeProto& node) {
    const auto readers = consumers_of(q, node.output(0));
    EXPECT_EQ(readers.size(), 1u) << node.name();
    return readers.empty() ? std::string() : readers[0]->op_type();
  };

  // The Q of c1's group follows the Relu, which reads c1 directly; the Clip closes the Add's.
  const onnx::NodeProto& relu = node_named(q, "relu");
  EXPECT_EQ(producer_of(q, relu.input(0))->name(), "c1");
  EXPECT_EQ(only_reader(relu), "QuantizeLinear");
  const onnx::NodeProto& clip = node_named(q, "hs/clip");
  EXPECT_EQ(producer_of(q, clip.input(0))->name(), "hs/add");
  EXPECT_EQ(only_reader(clip), "QuantizeLinear");
  // The other quantized nodes end in their own Q.
  for (const char* name : {"c2", "hs/add", "hs/mul", "c3"}) {
    EXPECT_EQ(only_reader(node_named(q, name)), name == std::string("hs/add") ? "Clip" : "QuantizeLinear") << name;
  }
  // The Div (a Mul by 1/6) is gone: "hs" is the Mul's codes read back at 1/6 of their scale,
  // with the same zero point.
  EXPECT_THROW(node_named(q, "hs/div"), std::runtime_error);
  const onnx::NodeProto* absorbed = producer_of(q, "hs");
  ASSERT_EQ(absorbed->op_type(), "DequantizeLinear");
  const onnx::NodeProto* codes = producer_of(q, absorbed->input(0));
  ASSERT_EQ(codes->op_type(), "QuantizeLinear");
  EXPECT_EQ(producer_of(q, codes->input(0))->name(), "hs/mul");
  EXPECT_FLOAT_EQ(scalar_initializer(q, absorbed->input(1)), scalar_initializer(q, codes->input(1)) / 6.0f);
  EXPECT_EQ(scalar_initializer(q, absorbed->input(2)), scalar_initializer(q, codes->input(2)));
  EXPECT_EQ(consumers_of(q, codes->output(0)).size(), 1u);  // the pair's own DQ went unread and was dropped
  // MaxPool: the DQ before it and the Q after it share scale and zero point.
  const onnx::NodeProto& pool = node_named(q, "pool");
  const onnx::NodeProto* dq_in = producer_of(q, pool.input(0));
  const onnx::NodeProto* q_out = consumers_of(q, pool.output(0)).at(0);
  ASSERT_EQ(dq_in->op_type(), "DequantizeLinear");
  ASSERT_EQ(q_out->op_type(), "QuantizeLinear");
  EXPECT_EQ(scalar_initializer(q, dq_in->input(1)), scalar_initializer(q, q_out->input(1)));
  EXPECT_EQ(scalar_initializer(q, dq_in->input(2)), scalar_initializer(q, q_out->input(2)));
  // The graph output keeps its name, behind a DQ.
  EXPECT_EQ(producer_of(q, "y")->op_type(), "DequantizeLinear");
}

TEST_F(OrtCpuFusionTest, EveryMacRunsInIntegerKernelsAndOnlyTheEdgesConvert) {
  const std::string model = quantize(*preset_config("U8S8"), "u8s8");
  const onnx::ModelProto opt = optimized(model);
  const PartitionReport p = partition_report(estimate_node_macs(hardswish_block()), opt);
  EXPECT_DOUBLE_EQ(p.integer_share(), 1.0);
  EXPECT_EQ(p.integer_kernels.at("QLinearConv"), 3u);
  EXPECT_TRUE(p.float_nodes.empty());
  // Only the model's edges convert: the input's Q and the output's DQ.
  EXPECT_EQ(p.quantize_linear, 1);
  EXPECT_EQ(p.dequantize_linear, 1);
  std::map<std::string, int> ops;
  for (const auto& node : opt.graph().node()) ++ops[node.op_type()];
  for (const char* gone : {"Relu", "Clip", "Div", "Mul", "Add", "Conv"}) EXPECT_EQ(ops.count(gone), 0u) << gone;
  EXPECT_EQ(ops["QLinearAdd"], 1);
  EXPECT_EQ(ops["QLinearMul"], 1);  // x * clip; the former Div is absorbed into a scale
  EXPECT_EQ(ops["MaxPool"], 1);     // on uint8 codes
}

TEST_F(OrtCpuFusionTest, InputsOnlyLeavesFloatKernelsBehind) {
  QuantConfig inputs_only = *preset_config("U8S8");
  inputs_only.extra.ort_cpu_fusion = false;
  const onnx::ModelProto opt = optimized(quantize(inputs_only, "inputs_only"));
  const PartitionReport p = partition_report(estimate_node_macs(hardswish_block()), opt);
  // c3 ends the graph with no Q after it and stays float; the Div runs in float between a DQ
  // and a Q, and so does the MaxPool after it (its Q has c3's input parameters, not the DQ's).
  EXPECT_EQ(p.float_nodes, std::vector<std::string>{"c3 (Conv)"});
  EXPECT_LT(p.integer_share(), 1.0);
  std::map<std::string, int> ops;
  for (const auto& node : opt.graph().node()) ++ops[node.op_type()];
  EXPECT_EQ(ops["Div"], 1);
  EXPECT_GT(p.dequantize_linear, 1);
}

TEST_F(OrtCpuFusionTest, FusedKernelsComputeWhatTheQdqGraphSays) {
  // On x86 without VNNI, ONNX Runtime's u8 x s8 kernels add products in saturating int16 pairs
  // (measured here: up to 5x the bound below on full-range weights); 7-bit weights cannot
  // saturate, so such a CPU checks the reduce_range model, which the quantizer recommends there.
  QuantConfig u8s8 = *preset_config("U8S8");
  u8s8.global.weight->reduce_range = cpu_u8s8_kernels_saturate();
  const std::string model = quantize(u8s8, "u8s8");
  const onnx::ModelProto q = load_model(model);
  const float output_scale = scalar_initializer(q, producer_of(q, "y")->input(1));
  const Session reference = Session::from_model(hardswish_block(), "fp32", {.optimization = GraphOptimization::kDisabled});
  // The QDQ graph as written (float emulation of every Q/DQ) and as ONNX Runtime fuses it.
  const Session emulated = Session::from_file(model, {.optimization = GraphOptimization::kDisabled});
  const Session fused = Session::from_file(model, {.optimization = GraphOptimization::kAll});
  // The integer kernels requantize with fixed-point multipliers and round once per group where
  // the emulation rounds in float: a code may differ by one at each of the 6 requantizations, and
  // 1x1 c3 (|w| <= 0.5, 8 inputs) maps one step of its input to at most 4 of its output. Measured
  // differences are 1-2 steps; allow 8 output steps.
  constexpr float kFusedSteps = 8;
  // Against FP32: u8 activations with ranges from 8 random samples; the output range is a few
  // units, so 0.25 is a few percent of it (measured max ~0.1).
  constexpr float kFp32Tolerance = 0.25f;
  for (uint64_t seed : {101u, 202u, 303u}) {
    const auto source = make_random_source(reference.inputs(), 1, seed);
    const NamedTensors inputs = source->sample(0);
    const auto ref = reference.run(inputs).front().second.to_floats();
    const auto emu = emulated.run(inputs).front().second.to_floats();
    const auto fus = fused.run(inputs).front().second.to_floats();
    ASSERT_EQ(fus.size(), ref.size());
    float to_emulated = 0, to_fp32 = 0;
    for (size_t i = 0; i < fus.size(); ++i) {
      to_emulated = std::max(to_emulated, std::fabs(fus[i] - emu[i]));
      to_fp32 = std::max(to_fp32, std::fabs(fus[i] - ref[i]));
    }
    EXPECT_LE(to_emulated, kFusedSteps * output_scale) << "seed " << seed;
    EXPECT_LE(to_fp32, kFp32Tolerance) << "seed " << seed;
  }
}

TEST_F(OrtCpuFusionTest, ACpuThatSaturatesItsKernelsIsNamedWithTheFix) {
  const auto saturation_warnings = [&] {
    return std::ranges::count_if(last_report.warnings, [](const std::string& w) {
      return w.find("no AVX-VNNI or AVX512-VNNI") != std::string::npos && w.find("\"reduce_range\": true") != std::string::npos;
    });
  };
  QuantConfig u8s8 = *preset_config("U8S8");
  quantize(u8s8, "full");
  EXPECT_EQ(saturation_warnings(), cpu_u8s8_kernels_saturate() ? 1 : 0);
  u8s8.global.weight->reduce_range = true;
  quantize(u8s8, "reduced");
  EXPECT_EQ(saturation_warnings(), 0);
  // The 7-bit codes are what the model stores.
  const onnx::ModelProto q = load_model(path("reduced.onnx"));
  for (const auto& init : q.graph().initializer()) {
    if (init.data_type() != onnx::TensorProto::INT8 || init.dims_size() < 2) continue;
    for (float v : tensor_from_proto(init, "test").to_floats()) EXPECT_LE(std::fabs(v), 64.0f) << init.name();
  }
}

}  // namespace
}  // namespace mixprec
