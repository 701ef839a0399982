// Nodes inside If/Loop/Scan bodies and recurrent ops: assigned, calibrated (taps inside the
// bodies), quantized and stripped like main-graph nodes, on tiny models built here and run by
// ONNX Runtime.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <functional>
#include <map>

#include "mixprec/analysis.h"
#include "mixprec/calibration.h"
#include "mixprec/config.h"
#include "mixprec/evaluation.h"
#include "mixprec/formats.h"
#include "mixprec/log.h"
#include "mixprec/random_data.h"
#include "mixprec/rewrite.h"
#include "mixprec/runtime.h"
#include "mixprec/sample_source.h"
#include "mixprec/tensor_proto.h"
#include "support/float_compare.h"
#include "support/memory_source.h"
#include "support/model_builder.h"

namespace mixprec {
namespace {

using testing::max_abs;
using testing::max_abs_diff;

using onnx::TensorProto;
using testing::attr_graph;
using testing::attr_int;
using testing::attr_ints;
using testing::deterministic_values;
using testing::ModelBuilder;

constexpr const char* kLabel = "test";

using Samples = testing::MemorySamples;

Tensor flag(bool value) {
  Tensor t(DType::kBool, {});
  t.as<bool>()[0] = value;
  return t;
}

Tensor floats(const Shape& shape, uint32_t seed, float scale = 1.0f) {
  size_t count = 1;
  for (int64_t d : shape) count *= static_cast<size_t>(d);
  return Tensor::from_floats(shape, deterministic_values(count, seed, scale));
}

// Every op type of every graph, bodies included.
std::map<std::string, int> nested_op_counts(const onnx::GraphProto& graph) {
  std::map<std::string, int> counts;
  const std::function<void(const onnx::GraphProto&)> visit = [&](const onnx::GraphProto& g) {
    for (const auto& node : g.node()) {
      ++counts[node.op_type()];
      for (const auto& attribute : node.attribute()) {
        if (attribute.has_g()) visit(attribute.g());
        for (const auto& body : attribute.graphs()) visit(body);
      }
    }
  };
  visit(graph);
  return counts;
}

std::vector<float> first_output(const onnx::ModelProto& model, const NamedTensors& inputs) {
  return Session::from_model(model, kLabel).run(inputs).front().second.to_floats();
}

struct Quantized {
  onnx::ModelProto model;
  std::vector<NodeAssignment> assignment;
  RewriteSummary summary;
  std::vector<std::string> warnings;
};

Quantized quantize_with(const onnx::ModelProto& model, const std::string& preset, const SampleSource& calibration) {
  WarningCollector warnings;
  const QuantConfig config = *preset_config(preset);
  const onnx::ModelProto prepared = prepare_model(model, {}, kLabel);
  const CalibrationStats stats = calibrate_model(prepared, kLabel, calibration);
  Quantized q;
  q.assignment = assign_layers(config, prepared, kLabel);
  q.model = quantize_model(prepared, q.assignment, stats, quantize_options(config), kLabel, {}, &q.summary);
  q.warnings = warnings.warnings();
  return q;
}

const NodeAssignment& assigned(const Quantized& q, const std::string& path) {
  const auto it = std::ranges::find_if(q.assignment, [&](const NodeAssignment& a) { return a.node_name == path; });
  EXPECT_NE(it, q.assignment.end()) << path;
  return *it;
}

// x [1, 8], cond -> If "if": then Sigmoid -> Gemm "fc_then" (W 4x8, transB, its own
// initializers), else Sigmoid -> Gemm "fc_else" (another W) -> Relu in the main graph -> y [1, 4].
// Each Gemm reads a tensor only its branch computes.
onnx::ModelProto if_model() {
  const auto branch = [](const std::string& name, uint32_t seed) {
    return ModelBuilder()
        .add_output(name + "_out", TensorProto::FLOAT, {1, 4})
        .add_initializer(name + "_w", {4, 8}, deterministic_values(32, seed))
        .add_initializer(name + "_b", {4}, deterministic_values(4, seed + 1, 0.1f))
        .add_node("Sigmoid", {"x"}, {name + "_in"}, {}, name + "_gate")
        .add_node("Gemm", {name + "_in", name + "_w", name + "_b"}, {name + "_out"}, {attr_int("transB", 1)}, name)
        .build_graph();
  };
  return ModelBuilder()
      .add_input("x", TensorProto::FLOAT, {1, 8})
      .add_input("cond", TensorProto::BOOL, {})
      .add_output("y", TensorProto::FLOAT, {1, 4})
      .add_node("If", {"cond"}, {"z"}, {attr_graph("then_branch", branch("fc_then", 3)),
                                         attr_graph("else_branch", branch("fc_else", 7))}, "if")
      .add_node("Relu", {"z"}, {"y"}, {}, "relu")
      .build();
}

std::vector<NamedTensors> if_samples(std::initializer_list<bool> conds) {
  std::vector<NamedTensors> samples;
  uint32_t seed = 100;
  for (bool c : conds) samples.push_back({{"x", floats({1, 8}, seed++)}, {"cond", flag(c)}});
  return samples;
}

TEST(SubgraphQuantization, EveryBodyNodeOfAnIfIsAssignedByItsPath) {
  const onnx::ModelProto model = prepare_model(if_model(), {}, kLabel);
  const std::vector<NodeAssignment> assignment = assign_layers(*preset_config("BF16"), model, kLabel);
  std::vector<std::string> names;
  for (const auto& a : assignment) names.push_back(a.node_name);
  EXPECT_EQ(names, (std::vector<std::string>{"if", "relu", "if.then_branch/fc_then_gate", "if.then_branch/fc_then",
                                              "if.else_branch/fc_else_gate", "if.else_branch/fc_else"}));
  EXPECT_FALSE(assignment[3].excluded);
  EXPECT_EQ(assignment[3].config.weight->format, FormatId::kBFloat16);

  // A pattern selects a body node by its path or its own name; excluding the owner excludes its bodies.
  QuantConfig config = *preset_config("XINT8");
  config.exclude.node_names = {"fc_else"};
  const auto by_name = assign_layers(config, model, kLabel);
  EXPECT_TRUE(by_name[5].excluded);
  EXPECT_EQ(by_name[5].reason, "exclude.node_names pattern fc_else");
  EXPECT_FALSE(by_name[3].excluded);
  config.exclude.node_names = {"if.then_branch/fc_then"};
  EXPECT_TRUE(assign_layers(config, model, kLabel)[3].excluded);
  config.exclude.node_names = {"if"};
  const auto by_owner = assign_layers(config, model, kLabel);
  EXPECT_TRUE(by_owner[3].excluded);
  EXPECT_EQ(by_owner[3].reason, "inside if: exclude.node_names pattern if");
}

TEST(SubgraphQuantization, Bf16LiftsBothBranchesAndEachRunsWithinBf16Error) {
  const Samples calibration(if_samples({true, false}));
  const Quantized q = quantize_with(if_model(), "BF16", calibration);
  EXPECT_EQ(q.summary.bf16_nodes, 2);
  EXPECT_EQ(q.summary.cast_pairs, 2);  // x, once per branch
  const auto counts = nested_op_counts(q.model.graph());
  EXPECT_EQ(counts.at("Cast"), 2 * (2 + 2));  // per branch: a pair, and the bf16 weight and bias widened
  for (bool c : {true, false}) {
    const NamedTensors inputs{{"x", floats({1, 8}, 7, 2.0f)}, {"cond", flag(c)}};
    const auto ref = first_output(if_model(), inputs);
    const auto got = first_output(q.model, inputs);
    // bf16 keeps 8 significant bits: 2^-8 relative per rounding, x and W rounded, 8 products.
    EXPECT_LE(max_abs_diff(ref, got), 0.02f * max_abs(ref)) << c;
    EXPECT_GT(max_abs_diff(ref, got), 0.0f) << c;
  }
}

TEST(SubgraphQuantization, Int8BodyIsCalibratedInsideTheBranchAndStaysWithinOneStep) {
  const Samples calibration(if_samples({true, false, true, false, true, false}));
  const Quantized q = quantize_with(if_model(), "A8W8", calibration);
  EXPECT_EQ(q.summary.quantized_nodes, 2);
  EXPECT_TRUE(q.summary.unobserved.empty());
  const auto counts = nested_op_counts(q.model.graph());
  EXPECT_EQ(counts.at("QuantizeLinear"), 2);
  // Per branch: x's pair, the int8 weight and the int32 bias.
  EXPECT_EQ(counts.at("DequantizeLinear"), 6);
  for (bool c : {true, false}) {
    const NamedTensors inputs = calibration.sample(c ? 0 : 1);
    const auto ref = first_output(if_model(), inputs);
    const auto got = first_output(q.model, inputs);
    // sigmoid(x) in [0.27, 0.73] on 255 steps and W in [-0.5, 0.5] on 255: each of the 8
    // products is off by at most 0.5 x (1/255 x 0.5 + 0.5/127 x 0.73) < 0.0025, 0.02 in all.
    EXPECT_LE(max_abs_diff(ref, got), 0.02f) << c;
    EXPECT_GT(max_abs_diff(ref, got), 0.0f) << c;
  }
  // dequantize strips the bodies too.
  StripSummary strip;
  const onnx::ModelProto stripped = strip_quantization(q.model, kLabel, &strip);
  EXPECT_EQ(strip.qdq_pairs, 2);
  EXPECT_EQ(nested_op_counts(stripped.graph()).count("QuantizeLinear"), 0u);
  EXPECT_EQ(nested_op_counts(stripped.graph()).count("DequantizeLinear"), 0u);
}

// UseUnsignedReLU inside bodies: x [1, 8], cond -> If: then Relu(x) -> Gemm, else Clip(x,
// low, high) -> Gemm with low = 0 and high = 2 main-graph initializers the body reads from the
// outer scope. Both Gemm inputs are relu-like, so XINT8 gives each body's pair zero point -128.
TEST(SubgraphQuantization, UseUnsignedReluReachesIntoBodiesAndReadsOuterClipBounds) {
  const auto branch = [](const std::string& name, bool relu, uint32_t seed) {
    ModelBuilder b;
    b.add_output(name + "_out", TensorProto::FLOAT, {1, 4})
        .add_initializer(name + "_w", {4, 8}, deterministic_values(32, seed))
        .add_initializer(name + "_b", {4}, deterministic_values(4, seed + 1, 0.1f));
    if (relu) {
      b.add_node("Relu", {"x"}, {name + "_in"}, {}, name + "_act");
    } else {
      b.add_node("Clip", {"x", "low", "high"}, {name + "_in"}, {}, name + "_act");
    }
    b.add_node("Gemm", {name + "_in", name + "_w", name + "_b"}, {name + "_out"}, {attr_int("transB", 1)}, name);
    return b.build_graph();
  };
  const onnx::ModelProto model = ModelBuilder()
                                     .add_input("x", TensorProto::FLOAT, {1, 8})
                                     .add_input("cond", TensorProto::BOOL, {})
                                     .add_initializer("low", {}, {0.0f})
                                     .add_initializer("high", {}, {2.0f})
                                     .add_output("y", TensorProto::FLOAT, {1, 4})
                                     .add_node("If", {"cond"}, {"y"},
                                               {attr_graph("then_branch", branch("fc_then", true, 3)),
                                                attr_graph("else_branch", branch("fc_else", false, 7))},
                                               "if")
                                     .build();
  const Samples calibration(if_samples({true, false, true, false}));
  QuantConfig config = *preset_config("XINT8");
  config.extra.use_unsigned_relu = true;
  const onnx::ModelProto prepared = prepare_model(model, {}, kLabel);
  const CalibrationStats stats = calibrate_model(prepared, kLabel, calibration);
  RewriteSummary summary;
  const onnx::ModelProto q =
      quantize_model(prepared, assign_layers(config, prepared, kLabel), stats, quantize_options(config), kLabel, {}, &summary);
  EXPECT_EQ(summary.unsigned_relu_pairs, 2);
  std::map<std::string, float> zero_points;  // quantized tensor -> its zero point
  std::function<void(const onnx::GraphProto&)> visit = [&](const onnx::GraphProto& g) {
    std::map<std::string, const onnx::TensorProto*> inits;
    for (const auto& init : g.initializer()) inits[init.name()] = &init;
    for (const auto& node : g.node()) {
      if (node.op_type() == "QuantizeLinear" && inits.count(node.input(2))) {
        zero_points[node.input(0)] = tensor_from_proto(*inits.at(node.input(2)), kLabel).to_floats().at(0);
      }
      for (const auto& attribute : node.attribute()) {
        if (attribute.has_g()) visit(attribute.g());
      }
    }
  };
  visit(q.graph());
  EXPECT_EQ(zero_points, (std::map<std::string, float>{{"fc_then_in", -128.0f}, {"fc_else_in", -128.0f}}));
  for (bool c : {true, false}) {
    const NamedTensors inputs = calibration.sample(c ? 0 : 1);
    const auto ref = first_output(model, inputs);
    EXPECT_LE(max_abs_diff(ref, first_output(q, inputs)), 0.1f * max_abs(ref)) << c;
  }
}

TEST(SubgraphQuantization, ABranchNoSampleTookIsWarnedAboutAndStaysFloat) {
  const Samples calibration(if_samples({true, true, true}));
  const Quantized q = quantize_with(if_model(), "A8W8", calibration);
  EXPECT_EQ(q.summary.unobserved, (std::vector<std::string>{"if.else_branch/fc_else"}));
  EXPECT_EQ(q.summary.quantized_nodes, 1);
  ASSERT_EQ(q.warnings.size(), 1u);
  EXPECT_NE(q.warnings[0].find("if.else_branch never ran on the 3 calibration samples"), std::string::npos) << q.warnings[0];
  // The else branch computes exactly what the float model does.
  const NamedTensors inputs{{"x", floats({1, 8}, 5)}, {"cond", flag(false)}};
  EXPECT_EQ(first_output(q.model, inputs), first_output(if_model(), inputs));
}

// x [3, 1, 4] -> Loop "loop" (trip count 3, carried h [1, 4]): body MatMul "mm" (h x W 4x4)
// -> Add the iteration's x slice (outer x, Gather by the iteration number) -> Tanh -> h.
onnx::ModelProto loop_model() {
  const onnx::GraphProto body =
      ModelBuilder()
          .add_input("i", TensorProto::INT64, {})
          .add_input("cond_in", TensorProto::BOOL, {})
          .add_input("h", TensorProto::FLOAT, {1, 4})
          .add_output("cond_out", TensorProto::BOOL, {})
          .add_output("h_next", TensorProto::FLOAT, {1, 4})
          .add_initializer("w", {4, 4}, deterministic_values(16, 21))
          .add_node("Identity", {"cond_in"}, {"cond_out"}, {}, "keep_going")
          .add_node("MatMul", {"h", "w"}, {"hw"}, {}, "mm")
          .add_node("Gather", {"x", "i"}, {"x_i"}, {attr_int("axis", 0)}, "slice")
          .add_node("Add", {"hw", "x_i"}, {"pre"}, {}, "add")
          .add_node("Tanh", {"pre"}, {"h_next"}, {}, "tanh")
          .build_graph();
  return ModelBuilder()
      .add_input("x", TensorProto::FLOAT, {3, 1, 4})
      .add_input("h0", TensorProto::FLOAT, {1, 4})
      .add_output("h_final", TensorProto::FLOAT, {1, 4})
      .add_initializer_i64("trips", {}, {3})
      .add_initializer("unused", {1}, {0.0f})
      .add_node("Constant", {}, {"go"}, {testing::attr_int("value_int", 1)}, "go_const")
      .add_node("Cast", {"go"}, {"go_bool"}, {attr_int("to", TensorProto::BOOL)}, "go_cast")
      .add_node("Loop", {"trips", "go_bool", "h0"}, {"h_final"}, {attr_graph("body", body)}, "loop")
      .build();
}

TEST(SubgraphQuantization, LoopBodyIsCalibratedPerIterationAndQuantized) {
  std::vector<NamedTensors> samples;
  for (uint32_t s = 0; s < 4; ++s) samples.push_back({{"x", floats({3, 1, 4}, 40 + s)}, {"h0", floats({1, 4}, 50 + s)}});
  const Samples calibration(samples);
  const Quantized q = quantize_with(loop_model(), "A8W8", calibration);
  EXPECT_EQ(assigned(q, "loop.body/mm").config.weight->format, FormatId::kInt8);
  EXPECT_TRUE(q.summary.unobserved.empty());
  // mm and add (Add is quantized by default) read iteration values only the body computes.
  EXPECT_EQ(q.summary.quantized_nodes, 2);
  EXPECT_GE(nested_op_counts(q.model.graph()).at("QuantizeLinear"), 3);
  const auto ref = first_output(loop_model(), samples[0]);
  const auto got = first_output(q.model, samples[0]);
  // Three iterations of int8 MatMul/Add through tanh (slope <= 1): a few steps of 1/127.
  EXPECT_LE(max_abs_diff(ref, got), 0.08f);
  EXPECT_GT(max_abs_diff(ref, got), 0.0f);
}

// x [1, 3, 4] -> Scan "scan" over axis 1 (carried s [1, 4]): body Gemm "fc" (x_t, W 4x4)
// + s -> s_next, also the scan output.
onnx::ModelProto scan_model() {
  const onnx::GraphProto body = ModelBuilder()
                                    .add_input("s", TensorProto::FLOAT, {1, 4})
                                    .add_input("x_t", TensorProto::FLOAT, {1, 4})
                                    .add_output("s_next", TensorProto::FLOAT, {1, 4})
                                    .add_output("y_t", TensorProto::FLOAT, {1, 4})
                                    .add_initializer("w", {4, 4}, deterministic_values(16, 31))
                                    .add_node("Gemm", {"x_t", "w"}, {"xw"}, {}, "fc")
                                    .add_node("Add", {"xw", "s"}, {"s_next"}, {}, "acc")
                                    .add_node("Identity", {"s_next"}, {"y_t"}, {}, "emit")
                                    .build_graph();
  return ModelBuilder()
      .add_input("x", TensorProto::FLOAT, {1, 3, 4})
      .add_input("s0", TensorProto::FLOAT, {1, 4})
      .add_output("s_last", TensorProto::FLOAT, {1, 4})
      .add_output("ys", TensorProto::FLOAT, {1, 3, 4})
      .add_node("Unsqueeze", {"s0", "axes0"}, {"s0_u"}, {}, "unsq")
      .add_initializer_i64("axes0", {1}, {0})
      .add_node("Squeeze", {"s0_u", "axes0"}, {"s0_s"}, {}, "sq")
      .add_node("Scan", {"s0_s", "x"}, {"s_last", "ys_raw"},
                {attr_graph("body", body), attr_int("num_scan_inputs", 1), attr_ints("scan_input_axes", {1}),
                 attr_ints("scan_output_axes", {1})},
                "scan")
      .add_node("Identity", {"ys_raw"}, {"ys"}, {}, "out")
      .build();
}

TEST(SubgraphQuantization, ScanBodyIsCalibratedPerStepAndQuantized) {
  std::vector<NamedTensors> samples;
  for (uint32_t s = 0; s < 4; ++s) samples.push_back({{"x", floats({1, 3, 4}, 60 + s)}, {"s0", floats({1, 4}, 70 + s)}});
  const Samples calibration(samples);
  const Quantized q = quantize_with(scan_model(), "A8W8", calibration);
  EXPECT_TRUE(q.summary.unobserved.empty());
  EXPECT_TRUE(format_traits(assigned(q, "scan.body/fc").config.input_tensors->format).is_qdq);
  EXPECT_EQ(q.summary.quantized_nodes, 2);  // fc and acc
  const auto ref = first_output(scan_model(), samples[1]);
  const auto got = first_output(q.model, samples[1]);
  EXPECT_LE(max_abs_diff(ref, got), 0.1f * max_abs(ref));
  EXPECT_GT(max_abs_diff(ref, got), 0.0f);
}

// x [2, 1, 3] (seq, batch, input) -> LSTM "lstm" (hidden 4, W/R/B initializers) -> Y_h [1, 1, 4].
onnx::ModelProto lstm_model() {
  return ModelBuilder()
      .add_input("x", TensorProto::FLOAT, {2, 1, 3})
      .add_output("y_h", TensorProto::FLOAT, {1, 1, 4})
      .add_initializer("W", {1, 16, 3}, deterministic_values(48, 81))
      .add_initializer("R", {1, 16, 4}, deterministic_values(64, 82))
      .add_initializer("B", {1, 32}, deterministic_values(32, 83, 0.1f))
      .add_node("LSTM", {"x", "W", "R", "B"}, {"", "y_h"}, {attr_int("hidden_size", 4)}, "lstm")
      .build();
}

TEST(SubgraphQuantization, LstmGetsBf16CastPairsAndInt8WeightsThroughDequantizeLinear) {
  std::vector<NamedTensors> samples;
  for (uint32_t s = 0; s < 4; ++s) samples.push_back({{"x", floats({2, 1, 3}, 90 + s)}});
  const Samples calibration(samples);

  const Quantized bf16 = quantize_with(lstm_model(), "BF16", calibration);
  EXPECT_EQ(bf16.summary.bf16_nodes, 1);
  EXPECT_EQ(bf16.summary.quantized_weights, 3);  // W, R and B stored as bf16
  const Quantized int8 = quantize_with(lstm_model(), "U8S8", calibration);
  EXPECT_EQ(int8.summary.quantized_nodes, 1);
  int int8_weights = 0;
  for (const auto& init : int8.model.graph().initializer()) {
    int8_weights += init.data_type() == TensorProto::INT8 && init.dims_size() == 3;  // not their zero points
  }
  EXPECT_EQ(int8_weights, 2);  // W and R; the bias stays float (U8S8: int32 bias is for one accumulator)

  for (const Quantized* q : {&bf16, &int8}) {
    const auto ref = first_output(lstm_model(), samples[2]);
    const auto got = first_output(q->model, samples[2]);
    // Two steps through sigmoid/tanh gates (slopes <= 1): bf16 ~2^-8, int8 a few steps of 1/127.
    EXPECT_LE(max_abs_diff(ref, got), q == &bf16 ? 0.01f : 0.05f);
    EXPECT_GT(max_abs_diff(ref, got), 0.0f);
  }
}

}  // namespace
}  // namespace mixprec

namespace mixprec {
namespace {

TEST(SubgraphQuantization, AnalyzeCountsCoveragePerBody) {
  const Samples calibration(if_samples({true, true}));
  const Quantized q = quantize_with(if_model(), "A8W8", calibration);
  const ModelAnalysis analysis = analyze_model(q.model, kLabel);
  ASSERT_EQ(analysis.graph_coverage.size(), 2u);  // the main graph has no compute node
  EXPECT_EQ(analysis.graph_coverage[0].graph, "if.then_branch");
  EXPECT_EQ(analysis.graph_coverage[0].coverage.quantized, 1);
  EXPECT_EQ(analysis.graph_coverage[1].graph, "if.else_branch");
  EXPECT_EQ(analysis.graph_coverage[1].coverage.float32, 1);  // never ran on the calibration data
  EXPECT_EQ(analysis.coverage.compute_nodes, 2);
  EXPECT_TRUE(analyze_model(lstm_model(), kLabel).graph_coverage.empty());  // no body: the totals say it all
}

TEST(SubgraphQuantization, WeightsLeftFloatAreNamedWithTheReason) {
  QuantConfig config = *preset_config("U8S8");
  config.exclude.node_names = {"lstm"};
  const onnx::ModelProto model = prepare_model(lstm_model(), {}, kLabel);
  EXPECT_EQ(describe_float_weights(assign_layers(config, model, kLabel), model, kLabel),
            (std::vector<std::string>{"1 x LSTM (lstm) because exclude.node_names pattern lstm"}));
  EXPECT_TRUE(describe_float_weights(assign_layers(*preset_config("U8S8"), model, kLabel), model, kLabel).empty());
}

}  // namespace
}  // namespace mixprec

namespace mixprec {
namespace {

TEST(SubgraphQuantization, CalibrationKeepsTheShapesSeenInsideBodiesInTheStatsFile) {
  const Samples calibration(if_samples({true, true}));
  const onnx::ModelProto prepared = prepare_model(if_model(), {}, kLabel);
  const CalibrationStats stats = calibrate_model(prepared, kLabel, calibration);
  EXPECT_EQ(stats.body_shapes.at("fc_then_in"), (std::vector<int64_t>{1, 8}));
  EXPECT_FALSE(stats.body_shapes.contains("fc_else_in"));  // never ran
  EXPECT_FALSE(stats.body_shapes.contains("x"));           // a main-graph tensor: inference knows it
  const std::string path = ::testing::TempDir() + "/mixprec_body_shapes_" + std::to_string(::getpid()) + ".json";
  save_stats(stats, path);
  EXPECT_EQ(load_stats(path), stats);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace mixprec
