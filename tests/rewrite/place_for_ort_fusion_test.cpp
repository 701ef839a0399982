// The two passes OrtCpuFusion runs as: insert_qdq alone puts pairs where nodes read, then
// place_for_ort_fusion moves and adds them for ONNX Runtime's CPU fusions. Together they give
// the graph the single combined pass gave before the split (its numbers below were measured on
// it, commit 1f9e1b9, with this file's statistics).
#include "rewrite/place_for_ort_fusion.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

#include "mixprec/config.h"
#include "mixprec/rewrite.h"
#include "mixprec/runtime.h"
#include "mixprec/sample_source.h"
#include "mixprec/tensor_proto.h"
#include "rewrite/insert_qdq.h"
#include "rewrite/qdq_pairs.h"
#include "support/model_builder.h"

namespace mixprec {
namespace {

constexpr char kLabel[] = "test";

// Statistics of every float tensor of `model` over `samples` seeded random inputs.
CalibrationStats random_statistics(const onnx::ModelProto& model, size_t samples, uint64_t seed) {
  std::vector<std::string> tensors;
  for (const auto& node : model.graph().node()) tensors.insert(tensors.end(), node.output().begin(), node.output().end());
  const Session session = Session::from_model(expose_intermediates(model, tensors, kLabel), kLabel);
  const auto source = make_random_source(session.inputs(), samples, seed);
  std::map<std::string, StatsCollector> collectors;
  for (size_t i = 0; i < samples; ++i) {
    const NamedTensors inputs = source->sample(i);
    for (const NamedTensors& tensors_seen : {inputs, session.run(inputs)}) {
      for (const auto& [name, tensor] : tensors_seen) {
        if (tensor.dtype() == DType::kFloat32) collectors[name].update(tensor.as<float>());
      }
    }
  }
  CalibrationStats stats;
  stats.samples = samples;
  for (const auto& [name, collector] : collectors) stats.tensors.emplace(name, collector.stats());
  return stats;
}

std::map<std::string, int> op_counts(const onnx::ModelProto& model) {
  std::map<std::string, int> counts;
  for (const auto& node : model.graph().node()) ++counts[node.op_type()];
  return counts;
}

const onnx::NodeProto* producer_of(const onnx::ModelProto& model, const std::string& tensor) {
  for (const auto& node : model.graph().node()) {
    for (const auto& output : node.output()) {
      if (output == tensor) return &node;
    }
  }
  return nullptr;
}

float scalar_initializer(const onnx::ModelProto& model, const std::string& name) {
  for (const auto& init : model.graph().initializer()) {
    if (init.name() == name) return tensor_from_proto(init, kLabel).to_floats().at(0);
  }
  ADD_FAILURE() << "no initializer " << name;
  return 0;
}

// The hard-swish block prepared, assigned and calibrated for U8S8 (`config`).
struct Inputs {
  explicit Inputs(const QuantConfig& config)
      : prepared(prepare_model(testing::hardswish_block(), prepare_options(config), kLabel)),
        assignment(assign_layers(config, prepared, kLabel)),
        stats(random_statistics(prepared, 8, 3)),
        options(quantize_options(config)) {}

  onnx::ModelProto prepared;
  std::vector<NodeAssignment> assignment;
  CalibrationStats stats;
  QuantizeOptions options;
};

// What the combined pass wrote with OrtCpuFusion off (insert_qdq alone now).
const std::map<std::string, int> kInputsOnlyOpCounts = {
    {"Add", 1}, {"Clip", 1}, {"Conv", 3}, {"DequantizeLinear", 13}, {"Div", 1}, {"MaxPool", 1}, {"Mul", 1},
    {"QuantizeLinear", 8}, {"Relu", 1},
};
constexpr int64_t kInputsOnlyQdqPairs = 8;

// What the combined pass (insert_qdq with OrtCpuFusion, before the split) wrote for the block
// from these statistics: op counts, summary, and the output of the QDQ graph as written.
// 7 activation pairs, 5 weight and bias DQs and the DQ that absorbed the Div (a Mul by 1/6).
const std::map<std::string, int> kCombinedOpCounts = {
    {"Add", 1}, {"Clip", 1}, {"Conv", 3}, {"DequantizeLinear", 13}, {"MaxPool", 1}, {"Mul", 1},
    {"QuantizeLinear", 8}, {"Relu", 1},
};
constexpr int64_t kCombinedQdqPairs = 7;
constexpr int64_t kCombinedQuantizedNodes = 6;
// sum(y) and sum(|y|) over the 256 outputs for random_source seed 101, ONNX Runtime without
// optimizations (float emulation of every Q/DQ). The outputs are codes times the output
// scale, so a single code that differs moves sum(|y|) by a whole step: half a step tells the
// same graph from any other.
constexpr double kCombinedOutputSum = -6.05612528;
constexpr double kCombinedOutputAbsSum = 29.9781802;

TEST(PlaceForOrtFusionTest, InsertQdqAlonePutsPairsWhereNodesRead) {
  const Inputs in(*preset_config("U8S8"));
  onnx::ModelProto model = in.prepared;
  RewriteSummary summary;
  rewrite::insert_qdq(model, in.assignment, in.stats, in.options, kLabel, summary);
  // What the combined pass wrote with OrtCpuFusion off: the Div stays, the graph output has no
  // Q after it and the Relu reads c1's float output.
  EXPECT_EQ(op_counts(model), kInputsOnlyOpCounts);
  EXPECT_EQ(summary.qdq_pairs, kInputsOnlyQdqPairs);
  EXPECT_EQ(producer_of(model, "y")->name(), "c3");
  EXPECT_EQ(producer_of(model, "c1")->name(), "c1");
  const onnx::NodeProto* relu = producer_of(model, "r1");
  ASSERT_NE(relu, nullptr);
  EXPECT_EQ(relu->input(0), "c1");
}

TEST(PlaceForOrtFusionTest, InsertThenPlaceGivesWhatTheCombinedPassGave) {
  const Inputs in(*preset_config("U8S8"));
  onnx::ModelProto model = in.prepared;
  RewriteSummary summary;
  const int64_t inserted_opset = rewrite::insert_qdq(model, in.assignment, in.stats, in.options, kLabel, summary);
  const int64_t placed_opset =
      rewrite::place_for_ort_fusion(model, in.prepared, in.assignment, in.stats, in.options, kLabel, summary);
  EXPECT_LE(placed_opset, inserted_opset);  // the same formats as the pairs insert_qdq wrote
  EXPECT_EQ(op_counts(model), kCombinedOpCounts);
  EXPECT_EQ(summary.qdq_pairs, kCombinedQdqPairs);
  EXPECT_EQ(summary.quantized_nodes, kCombinedQuantizedNodes);

  const Session session = Session::from_model(model, kLabel, {.optimization = GraphOptimization::kDisabled});
  const NamedTensors inputs = make_random_source(session.inputs(), 1, 101)->sample(0);
  const std::vector<float> y = session.run(inputs).front().second.to_floats();
  double sum = 0, abs_sum = 0;
  for (float v : y) {
    sum += v;
    abs_sum += std::fabs(v);
  }
  const double half_step = 0.5 * scalar_initializer(model, producer_of(model, "y")->input(1));
  EXPECT_NEAR(sum, kCombinedOutputSum, half_step);
  EXPECT_NEAR(abs_sum, kCombinedOutputAbsSum, half_step);

  // The same through the product's pass list.
  RewriteSummary product_summary;
  const onnx::ModelProto product =
      quantize_model(in.prepared, in.assignment, in.stats, in.options, kLabel, {}, &product_summary);
  EXPECT_EQ(op_counts(product), kCombinedOpCounts);
  EXPECT_EQ(product_summary.qdq_pairs, kCombinedQdqPairs);
}

// A reader whose spec differs from its producer's in more than the format (here the calibration
// method) reads the producer's pair, as the combined pass had it read; its int32 bias then has
// to be at that pair's scale for ONNX Runtime's integer kernel to add it unchanged.
TEST(PlaceForOrtFusionTest, AReaderWithAnotherSpecReadsTheSharedPairAndItsBiasFollows) {
  QuantConfig config = *preset_config("U8S8");
  LayerConfig percentile = config.global;
  percentile.input_tensors->calib_method = CalibMethod::kPercentile;
  config.specific.push_back({.target_node_names = {"c2"}, .layer_config = percentile});
  const Inputs in(config);
  const onnx::ModelProto model = quantize_model(in.prepared, in.assignment, in.stats, in.options, kLabel);

  // c2 reads r1 through the pair after the Relu (c1's MinMax spec), not through one of its own.
  const onnx::NodeProto* c2 = producer_of(model, "c2_prequant");
  ASSERT_NE(c2, nullptr);
  EXPECT_EQ(c2->input(0), "r1");
  const onnx::NodeProto* shared = producer_of(model, "r1");
  ASSERT_EQ(shared->op_type(), "DequantizeLinear");
  const float input_scale = scalar_initializer(model, shared->input(1));
  const rewrite::ActivationSpecs specs(in.prepared.graph(), in.stats, in.options, kLabel);
  ASSERT_NE(specs.resolve("r1", *percentile.input_tensors).params.scale.at(0), input_scale)
      << "the two specs must differ for the bias to move";

  const auto floats_of = [&](const std::string& name) {
    for (const auto& init : model.graph().initializer()) {
      if (init.name() == name) return tensor_from_proto(init, kLabel).to_floats();
    }
    ADD_FAILURE() << "no initializer " << name;
    return std::vector<float>{};
  };
  const std::vector<float> weight_scales = floats_of(producer_of(model, c2->input(1))->input(1));
  const onnx::NodeProto* bias_dq = producer_of(model, c2->input(2));
  const std::vector<float> bias_scales = floats_of(bias_dq->input(1));
  const std::vector<float> bias_codes = floats_of(bias_dq->input(0));
  std::vector<float> bias;
  for (const auto& init : in.prepared.graph().initializer()) {
    if (init.name() == "b2") bias = tensor_from_proto(init, kLabel).to_floats();
  }
  ASSERT_EQ(bias_scales.size(), weight_scales.size());
  ASSERT_EQ(bias_codes.size(), bias.size());
  // Quantized from the float bias at the new scale: rounding to nearest is half a step off at
  // most (the float products of the check add a few ulps).
  constexpr float kHalfStepAndUlps = 0.5f + 1e-5f;
  for (size_t k = 0; k < bias_scales.size(); ++k) {
    EXPECT_FLOAT_EQ(bias_scales[k], input_scale * weight_scales[k]) << k;
    EXPECT_LE(std::fabs(bias_codes[k] * bias_scales[k] - bias[k]), kHalfStepAndUlps * bias_scales[k]) << k;
  }
}

}  // namespace
}  // namespace mixprec
