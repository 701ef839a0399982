#include "mixprec/analysis.h"

#include <gtest/gtest.h>

#include <utility>

#include "mixprec/error.h"
#include "mixprec/report.h"
#include "support/model_builder.h"

namespace mixprec {
namespace {

using onnx::TensorProto;
using testing::attr_graph;
using testing::attr_int;
using testing::LayerPrecision;
using testing::ModelBuilder;

constexpr char kPath[] = "tiny.onnx";

ModelAnalysis analyze(const onnx::ModelProto& model) { return analyze_model(model, kPath); }

using Counts = std::vector<std::pair<std::string, int64_t>>;

Counts histogram(const ModelAnalysis& analysis) {
  Counts counts;
  for (const OpCount& op : analysis.op_histogram) counts.emplace_back(op.op_type, op.count);
  return counts;
}

// (precision, node count, first, last) per island.
using IslandRow = std::tuple<std::string, int64_t, std::string, std::string>;

std::vector<IslandRow> islands(const ModelAnalysis& analysis) {
  std::vector<IslandRow> rows;
  for (const Island& island : analysis.islands.islands) {
    rows.emplace_back(to_string(island.precision), island.node_count, island.first_node, island.last_node);
  }
  return rows;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// x [1, 3, 8, 8] -> Conv "conv" (weight [4, 3, 3, 3]) -> y [1, 4, 6, 6]; `activation` and
// `weight` are what the Conv reads, the caller adds the nodes producing them.
ModelBuilder& add_conv(ModelBuilder& builder, const std::string& activation, const std::string& weight) {
  return builder.add_node("Conv", {activation, weight}, {"y"}, {}, "conv")
      .add_output("y", TensorProto::FLOAT, {1, 4, 6, 6});
}

ModelBuilder conv_model_with_int8_weight() {
  ModelBuilder builder;
  builder.add_input("x", TensorProto::FLOAT, {1, 3, 8, 8})
      .add_initializer_i8("w_q", {4, 3, 3, 3}, std::vector<int8_t>(108, 3))
      .add_initializer("scale", {}, {0.02f})
      .add_initializer_u8("zp_u8", {}, {128})
      .add_initializer_i8("zp_i8", {}, {0});
  return builder;
}

// --- Model facts, histogram, inputs/outputs -------------------------------------------------

TEST(AnalysisTest, FloatConvChainFacts) {
  const ModelAnalysis analysis = analyze(testing::conv_chain(2));

  EXPECT_EQ(analysis.model_path, kPath);
  EXPECT_EQ(analysis.ir_version, 8);
  EXPECT_EQ(analysis.opsets, (std::map<std::string, int64_t>{{"ai.onnx", 17}}));
  EXPECT_EQ(analysis.producer_name, "mixprec-tests");
  EXPECT_EQ(analysis.graph_name, "conv_chain");
  EXPECT_EQ(analysis.node_count, 4);
  EXPECT_EQ(histogram(analysis), (Counts{{"Conv", 2}, {"Relu", 2}}));

  ASSERT_EQ(analysis.inputs.size(), 1u);
  EXPECT_EQ(analysis.inputs[0].name, "input");
  EXPECT_EQ(analysis.inputs[0].dtype, "float32");
  EXPECT_EQ(dims_to_string(analysis.inputs[0].shape), "[1, 3, 8, 8]");
  ASSERT_EQ(analysis.outputs.size(), 1u);
  EXPECT_EQ(dims_to_string(analysis.outputs[0].shape), "[1, 4, 8, 8]");

  EXPECT_EQ(analysis.quantization.state, QuantState::kFloat);
  EXPECT_TRUE(analysis.quantization.dtypes.empty());
  ASSERT_EQ(analysis.compute_ops.size(), 1u);
  EXPECT_EQ(analysis.compute_ops[0].op_type, "Conv");
  EXPECT_EQ(analysis.compute_ops[0].total, 2);
  EXPECT_EQ(analysis.compute_ops[0].float32, 2);
  EXPECT_EQ(analysis.coverage.compute_nodes, 2);
  EXPECT_EQ(analysis.coverage.quantized_percent, 0.0);
  EXPECT_EQ(islands(analysis), (std::vector<IslandRow>{{"float", 2, "conv_0", "conv_1"}}));
}

TEST(AnalysisTest, HistogramSortsByCountThenNameWithDomainPrefix) {
  ModelBuilder builder = conv_model_with_int8_weight();
  builder.add_node("QuantizeLinear", {"x", "scale", "zp_u8"}, {"x_q"}, {}, "q", "com.microsoft")
      .add_node("DequantizeLinear", {"x_q", "scale", "zp_u8"}, {"x_dq"}, {}, "dq", "com.microsoft")
      .add_node("DequantizeLinear", {"w_q", "scale", "zp_i8"}, {"w_dq"}, {}, "w_dq", "com.microsoft");
  const ModelAnalysis analysis = analyze(add_conv(builder, "x_dq", "w_dq").build());
  // 'C' sorts before 'c': "Conv" precedes "com.microsoft:QuantizeLinear" among the ties.
  EXPECT_EQ(histogram(analysis), (Counts{{"com.microsoft:DequantizeLinear", 2},
                                         {"Conv", 1},
                                         {"com.microsoft:QuantizeLinear", 1}}));
  EXPECT_EQ(analysis.opsets, (std::map<std::string, int64_t>{{"ai.onnx", 17}, {"com.microsoft", 1}}));
}

TEST(AnalysisTest, SymbolicAndUnknownDimsAndUndeclaredRank) {
  const ModelAnalysis analysis = analyze(ModelBuilder()
                                             .add_input("x", TensorProto::FLOAT, {"batch", "?", 4})
                                             .add_input("s", TensorProto::INT64, {})
                                             .add_node("Relu", {"x"}, {"y"})
                                             .add_output("y", TensorProto::FLOAT)
                                             .build());
  ASSERT_EQ(analysis.inputs.size(), 2u);
  EXPECT_EQ(dims_to_string(analysis.inputs[0].shape), "[batch, ?, 4]");
  EXPECT_EQ(analysis.inputs[1].dtype, "int64");
  EXPECT_EQ(dims_to_string(analysis.inputs[1].shape), "[]");
  EXPECT_EQ(dims_to_string(analysis.outputs[0].shape), "[*]");
}

TEST(AnalysisTest, IsComputeOpUsesTheTable) {
  EXPECT_TRUE(is_compute_op("", "Conv"));
  EXPECT_TRUE(is_compute_op("ai.onnx", "MatMul"));
  EXPECT_TRUE(is_compute_op("", "QLinearConv"));
  EXPECT_TRUE(is_compute_op("com.microsoft", "QGemm"));
  EXPECT_FALSE(is_compute_op("", "Relu"));
  EXPECT_FALSE(is_compute_op("", "QuantizeLinear"));
  EXPECT_FALSE(is_compute_op("com.microsoft", "Conv"));
}

// --- Quantization state ---------------------------------------------------------------------

TEST(AnalysisTest, QdqModelStateCountsAndDtypes) {
  const ModelAnalysis analysis = analyze(testing::qdq_conv_chain(2));
  const QuantizationSummary& quant = analysis.quantization;
  EXPECT_EQ(quant.state, QuantState::kQdq);
  EXPECT_EQ(quant.quantize_linear, 2);    // one per layer, on the activation
  EXPECT_EQ(quant.dequantize_linear, 4);  // activation and weight per layer
  EXPECT_EQ(quant.cast_pairs_bf16 + quant.cast_pairs_fp16 + quant.qoperator_nodes + quant.custom_domain_nodes, 0);
  EXPECT_EQ(quant.dtypes, (std::vector<std::string>{"int8", "uint8"}));
  EXPECT_EQ(quant.edge_quantized_inputs, 1);    // x is quantized where it enters
  EXPECT_EQ(quant.edge_dequantized_outputs, 0);  // the last Relu writes the float output
  EXPECT_EQ(histogram(analysis),
            (Counts{{"DequantizeLinear", 4}, {"Conv", 2}, {"QuantizeLinear", 2}, {"Relu", 2}}));
  EXPECT_EQ(analysis.coverage.quantized, 2);
  EXPECT_EQ(analysis.coverage.quantized_percent, 100.0);
}

TEST(AnalysisTest, QuantizeLinearWithoutZeroPointIsUint8) {
  const ModelAnalysis analysis = analyze(ModelBuilder()
                                             .add_input("x", TensorProto::FLOAT, {4})
                                             .add_initializer("scale", {}, {0.1f})
                                             .add_node("QuantizeLinear", {"x", "scale"}, {"x_q"})
                                             .add_node("DequantizeLinear", {"x_q", "scale"}, {"y"})
                                             .add_output("y", TensorProto::FLOAT, {4})
                                             .build());
  EXPECT_EQ(analysis.quantization.state, QuantState::kQdq);
  EXPECT_EQ(analysis.quantization.dtypes, std::vector<std::string>{"uint8"});
  EXPECT_EQ(analysis.quantization.edge_quantized_inputs, 1);
  EXPECT_EQ(analysis.quantization.edge_dequantized_outputs, 1);
}

TEST(AnalysisTest, CastPairsAreDetectedPerLowType) {
  const ModelAnalysis bf16 = analyze(testing::bf16_conv_chain(2));
  EXPECT_EQ(bf16.quantization.state, QuantState::kCastPairs);
  EXPECT_EQ(bf16.quantization.cast_pairs_bf16, 4);  // activation and weight per layer
  EXPECT_EQ(bf16.quantization.cast_pairs_fp16, 0);
  EXPECT_EQ(bf16.quantization.dtypes, std::vector<std::string>{"bfloat16"});
  EXPECT_EQ(bf16.coverage.bf16, 2);
  EXPECT_EQ(bf16.coverage.quantized_percent, 0.0);
  EXPECT_EQ(bf16.coverage.emulated_percent, 100.0);

  const ModelAnalysis fp16 = analyze(testing::conv_chain({LayerPrecision::kCastFp16, LayerPrecision::kFloat}));
  EXPECT_EQ(fp16.quantization.state, QuantState::kCastPairs);
  EXPECT_EQ(fp16.quantization.cast_pairs_fp16, 2);
  EXPECT_EQ(fp16.quantization.dtypes, std::vector<std::string>{"float16"});
  EXPECT_EQ(fp16.coverage.fp16, 1);
  EXPECT_EQ(fp16.coverage.float32, 1);
  EXPECT_EQ(fp16.coverage.emulated_percent, 50.0);
}

// Block formats (Quark's BFP/MX nodes): a Conv whose activation comes through one is
// quantized, its weight initializer taken as rounded offline; dtypes name the block formats.
TEST(AnalysisTest, BlockFormatNodesAreQuantizationWithTheirFormatNamed) {
  const ModelAnalysis analysis =
      analyze(ModelBuilder()
                  .add_input("x", TensorProto::FLOAT, {1, 8, 4, 4})
                  .add_output("y", TensorProto::FLOAT, {1, 8, 4, 4})
                  .add_output("z", TensorProto::FLOAT, {1, 8, 4, 4})
                  .add_initializer("w", {8, 8, 1, 1}, testing::deterministic_values(64, 1))
                  .add_node("BFPQuantizeDequantize", {"x"}, {"x_fq"}, {attr_int("bit_width", 16)}, "fq", "com.amd.quark")
                  .add_node("Conv", {"x_fq", "w"}, {"y"}, {}, "conv")
                  .add_node("MXQuantizeDequantize", {"y"}, {"y_fq"}, {testing::attr_string("element_dtype", "fp8_e4m3")},
                            "mx", "com.amd.quark")
                  .add_node("BFPFixNeuron", {"y_fq"}, {"z"},
                            {testing::attr_string("bfp_method", "to_bfp_prime"), attr_int("bit_width", 16)}, "old",
                            "com.vai.quantize")
                  .build());
  EXPECT_EQ(analysis.quantization.state, QuantState::kCustomDomain);
  EXPECT_EQ(analysis.quantization.custom_domain_nodes, 3);
  EXPECT_EQ(analysis.quantization.dtypes, (std::vector<std::string>{"bfp16", "mx9", "mxfp8_e4m3"}));
  EXPECT_EQ(analysis.coverage.quantized, 1);
}

TEST(AnalysisTest, SingleCastIsNotAPair) {
  const ModelAnalysis analysis = analyze(ModelBuilder()
                                             .add_input("x", TensorProto::FLOAT, {4})
                                             .add_node("Cast", {"x"}, {"x16"}, {attr_int("to", TensorProto::FLOAT16)})
                                             .add_node("Relu", {"x16"}, {"r"})
                                             .add_node("Cast", {"r"}, {"y"}, {attr_int("to", TensorProto::FLOAT)})
                                             .add_output("y", TensorProto::FLOAT, {4})
                                             .build());
  EXPECT_EQ(analysis.quantization.state, QuantState::kFloat);
  EXPECT_EQ(analysis.quantization.cast_pairs_fp16, 0);
}

TEST(AnalysisTest, QOperatorModelKeepsBoundaryQdqOutOfTheQdqState) {
  ModelBuilder builder = conv_model_with_int8_weight();
  builder.add_node("QuantizeLinear", {"x", "scale", "zp_u8"}, {"x_q"}, {}, "q")
      .add_node("QLinearConv", {"x_q", "scale", "zp_u8", "w_q", "scale", "zp_i8", "scale", "zp_u8"}, {"y_q"}, {},
                "qconv")
      .add_node("DequantizeLinear", {"y_q", "scale", "zp_u8"}, {"y"}, {}, "dq")
      .add_output("y", TensorProto::FLOAT, {1, 4, 6, 6});
  const ModelAnalysis analysis = analyze(builder.build());
  const QuantizationSummary& quant = analysis.quantization;
  EXPECT_EQ(quant.state, QuantState::kQOperator);
  EXPECT_EQ(quant.quantize_linear, 1);
  EXPECT_EQ(quant.dequantize_linear, 1);
  EXPECT_EQ(quant.qoperator_nodes, 1);
  EXPECT_EQ(quant.dtypes, (std::vector<std::string>{"int8", "uint8"}));
  EXPECT_EQ(analysis.coverage.compute_nodes, 1);
  EXPECT_EQ(analysis.coverage.quantized_percent, 100.0);
  ASSERT_EQ(analysis.compute_ops.size(), 1u);
  EXPECT_EQ(analysis.compute_ops[0].op_type, "QLinearConv");
}

TEST(AnalysisTest, CustomDomainQuantOpsAreRecognisedBySuffix) {
  ModelBuilder ms = conv_model_with_int8_weight();
  ms.add_node("QuantizeLinear", {"x", "scale", "zp_u8"}, {"x_q"}, {}, "q", "com.microsoft")
      .add_node("DequantizeLinear", {"x_q", "scale", "zp_u8"}, {"x_dq"}, {}, "dq", "com.microsoft")
      .add_node("VitisDequantizeLinear", {"w_q", "scale", "zp_i8"}, {"w_dq"}, {}, "w_dq", "com.vai.quantize");
  const ModelAnalysis analysis = analyze(add_conv(ms, "x_dq", "w_dq").build());
  EXPECT_EQ(analysis.quantization.state, QuantState::kCustomDomain);
  EXPECT_EQ(analysis.quantization.custom_domain_nodes, 3);
  EXPECT_EQ(analysis.quantization.quantize_linear, 0);
  EXPECT_EQ(analysis.quantization.dtypes, (std::vector<std::string>{"int8", "uint8"}));
  EXPECT_EQ(analysis.coverage.quantized_percent, 100.0);

  ModelBuilder bfp;
  bfp.add_input("x", TensorProto::FLOAT, {1, 3, 8, 8})
      .add_initializer("w", {4, 3, 3, 3}, testing::deterministic_values(108, 1))
      .add_node("BFPQuantizeDequantize", {"x"}, {"x_bfp"}, {}, "x_bfp", "com.amd.quark")
      .add_node("BFPQuantizeDequantize", {"w"}, {"w_bfp"}, {}, "w_bfp", "com.amd.quark");
  const ModelAnalysis quark = analyze(add_conv(bfp, "x_bfp", "w_bfp").build());
  EXPECT_EQ(quark.quantization.state, QuantState::kCustomDomain);
  EXPECT_EQ(quark.quantization.custom_domain_nodes, 2);
  EXPECT_EQ(quark.coverage.quantized, 1);
}

TEST(AnalysisTest, QdqAndCastPairsTogetherAreMixed) {
  const ModelAnalysis analysis = analyze(testing::conv_chain({LayerPrecision::kQdqInt8, LayerPrecision::kCastBf16}));
  EXPECT_EQ(analysis.quantization.state, QuantState::kMixed);
  EXPECT_EQ(analysis.quantization.cast_pairs_bf16, 2);
  EXPECT_EQ(analysis.quantization.dtypes, (std::vector<std::string>{"bfloat16", "int8", "uint8"}));
}

// --- Coverage -------------------------------------------------------------------------------

TEST(AnalysisTest, CoverageCountsEachPrecision) {
  // 4 compute nodes: 2 QDQ, 1 bf16, 1 float -> 50% quantized, 25% emulated.
  const ModelAnalysis analysis = analyze(testing::conv_chain(
      {LayerPrecision::kQdqInt8, LayerPrecision::kFloat, LayerPrecision::kQdqInt8, LayerPrecision::kCastBf16}));
  const Coverage& coverage = analysis.coverage;
  EXPECT_EQ(coverage.compute_nodes, 4);
  EXPECT_EQ(coverage.quantized, 2);
  EXPECT_EQ(coverage.bf16, 1);
  EXPECT_EQ(coverage.fp16, 0);
  EXPECT_EQ(coverage.float32, 1);
  EXPECT_EQ(coverage.quantized_percent, 50.0);
  EXPECT_EQ(coverage.emulated_percent, 25.0);
  ASSERT_EQ(analysis.compute_ops.size(), 1u);
  EXPECT_EQ(analysis.compute_ops[0].quantized, 2);
  EXPECT_EQ(analysis.compute_ops[0].bf16, 1);
  EXPECT_EQ(analysis.compute_ops[0].float32, 1);
}

TEST(AnalysisTest, WeightOnlyDequantizeLeavesTheNodeFloat) {
  ModelBuilder builder = conv_model_with_int8_weight();
  builder.add_node("DequantizeLinear", {"w_q", "scale", "zp_i8"}, {"w_dq"}, {}, "w_dq");
  const ModelAnalysis analysis = analyze(add_conv(builder, "x", "w_dq").build());
  EXPECT_EQ(analysis.quantization.state, QuantState::kQdq);
  EXPECT_EQ(analysis.coverage.float32, 1);
  EXPECT_EQ(analysis.coverage.quantized_percent, 0.0);
}

TEST(AnalysisTest, DequantizeThroughLayoutOpsStillQuantizes) {
  // x -> Q -> DQ -> MatMul <- Reshape <- DQ <- w_q (flat int8 weight reshaped to [4, 4]).
  const ModelAnalysis analysis = analyze(ModelBuilder()
                                             .add_input("x", TensorProto::FLOAT, {1, 4})
                                             .add_initializer_i8("w_q", {16}, std::vector<int8_t>(16, 5))
                                             .add_initializer_i64("shape", {2}, {4, 4})
                                             .add_initializer("scale", {}, {0.05f})
                                             .add_initializer_u8("zp_u8", {}, {128})
                                             .add_node("QuantizeLinear", {"x", "scale", "zp_u8"}, {"x_q"})
                                             .add_node("DequantizeLinear", {"x_q", "scale", "zp_u8"}, {"x_dq"})
                                             .add_node("DequantizeLinear", {"w_q", "scale"}, {"w_flat"})
                                             .add_node("Reshape", {"w_flat", "shape"}, {"w"})
                                             .add_node("MatMul", {"x_dq", "w"}, {"y"}, {}, "mm")
                                             .add_output("y", TensorProto::FLOAT, {1, 4})
                                             .build());
  EXPECT_EQ(analysis.coverage.quantized, 1);
}

TEST(AnalysisTest, LowPrecisionInitializerCastToFloatIsEmulated) {
  TensorProto weight;
  weight.set_name("w_bf16");
  weight.set_data_type(TensorProto::BFLOAT16);
  weight.add_dims(4);
  weight.add_dims(4);
  for (int i = 0; i < 16; ++i) weight.add_int32_data(0x3F80);  // bfloat16 1.0
  const ModelAnalysis analysis =
      analyze(ModelBuilder()
                  .add_input("x", TensorProto::FLOAT, {1, 4})
                  .add_initializer(weight)
                  .add_node("Cast", {"x"}, {"x_low"}, {attr_int("to", TensorProto::BFLOAT16)})
                  .add_node("Cast", {"x_low"}, {"x_back"}, {attr_int("to", TensorProto::FLOAT)})
                  .add_node("Cast", {"w_bf16"}, {"w"}, {attr_int("to", TensorProto::FLOAT)})
                  .add_node("MatMul", {"x_back", "w"}, {"y"}, {}, "mm")
                  .add_output("y", TensorProto::FLOAT, {1, 4})
                  .build());
  EXPECT_EQ(analysis.quantization.cast_pairs_bf16, 1);  // the weight's Cast is not a pair
  EXPECT_EQ(analysis.coverage.bf16, 1);
}

// --- Islands --------------------------------------------------------------------------------

TEST(IslandTest, FloatRegionInTheMiddleSplitsTheQuantizedOnes) {
  const ModelAnalysis analysis = analyze(
      testing::conv_chain({LayerPrecision::kQdqInt8, LayerPrecision::kFloat, LayerPrecision::kQdqInt8}));
  EXPECT_EQ(islands(analysis), (std::vector<IslandRow>{{"quantized", 1, "conv_0", "conv_0"},
                                                       {"float", 1, "conv_1", "conv_1"},
                                                       {"quantized", 1, "conv_2", "conv_2"}}));
  EXPECT_EQ(analysis.islands.float_islands, 1);
  EXPECT_EQ(analysis.islands.quantized_islands, 2);
  EXPECT_EQ(analysis.islands.bf16_islands, 0);
  EXPECT_EQ(analysis.islands.fp16_islands, 0);
}

TEST(IslandTest, ConsecutiveSamePrecisionNodesShareAnIsland) {
  const ModelAnalysis analysis = analyze(testing::conv_chain(
      {LayerPrecision::kQdqInt8, LayerPrecision::kQdqInt8, LayerPrecision::kFloat, LayerPrecision::kCastBf16}));
  EXPECT_EQ(islands(analysis), (std::vector<IslandRow>{{"quantized", 2, "conv_0", "conv_1"},
                                                       {"float", 1, "conv_2", "conv_2"},
                                                       {"bf16", 1, "conv_3", "conv_3"}}));
}

TEST(IslandTest, ALinkNeverPassesThroughAnotherComputeNode) {
  // float -> quantized -> float: the float nodes only meet through the quantized one.
  const ModelAnalysis analysis = analyze(
      testing::conv_chain({LayerPrecision::kFloat, LayerPrecision::kQdqInt8, LayerPrecision::kFloat}));
  EXPECT_EQ(analysis.islands.float_islands, 2);
  EXPECT_EQ(analysis.islands.quantized_islands, 1);
}

TEST(IslandTest, BranchesJoinThroughTheirCommonProducer) {
  const ModelAnalysis analysis = analyze(testing::multi_output_model());
  EXPECT_EQ(islands(analysis), (std::vector<IslandRow>{{"float", 3, "trunk", "head_b"}}));
}

TEST(IslandTest, DisconnectedComputeNodesAreSeparateIslands) {
  const ModelAnalysis analysis = analyze(ModelBuilder()
                                             .add_input("a", TensorProto::FLOAT, {2, 2})
                                             .add_input("b", TensorProto::FLOAT, {2, 2})
                                             .add_node("MatMul", {"a", "a"}, {"ya"}, {}, "mm_a")
                                             .add_node("MatMul", {"b", "b"}, {"yb"}, {}, "mm_b")
                                             .add_output("ya", TensorProto::FLOAT, {2, 2})
                                             .add_output("yb", TensorProto::FLOAT, {2, 2})
                                             .build());
  EXPECT_EQ(islands(analysis), (std::vector<IslandRow>{{"float", 1, "mm_a", "mm_a"}, {"float", 1, "mm_b", "mm_b"}}));
}

TEST(IslandTest, NoComputeNodesNoIslands) {
  const ModelAnalysis analysis = analyze(testing::nms_detection_model());
  EXPECT_TRUE(analysis.islands.islands.empty());
  EXPECT_EQ(analysis.coverage.compute_nodes, 0);
  EXPECT_EQ(analysis.coverage.quantized_percent, 0.0);
}

// --- Subgraphs ------------------------------------------------------------------------------

// stem Conv -> If: then-branch Conv (reading the stem output and a main-graph weight),
// else-branch Relu.
onnx::ModelProto if_model() {
  const onnx::GraphProto then_branch = ModelBuilder()
                                           .add_node("Conv", {"feat", "w2"}, {"then_out"}, {}, "then_conv")
                                           .add_output("then_out", TensorProto::FLOAT, {1, 4, 4, 4})
                                           .build_graph();
  const onnx::GraphProto else_branch = ModelBuilder()
                                           .add_node("Relu", {"feat"}, {"else_out"}, {}, "else_relu")
                                           .add_output("else_out", TensorProto::FLOAT, {1, 4, 6, 6})
                                           .build_graph();
  return ModelBuilder()
      .add_input("x", TensorProto::FLOAT, {1, 3, 8, 8})
      .add_input("cond", TensorProto::BOOL, {})
      .add_initializer("w1", {4, 3, 3, 3}, testing::deterministic_values(108, 1))
      .add_initializer("w2", {4, 4, 3, 3}, testing::deterministic_values(144, 2))
      .add_node("Conv", {"x", "w1"}, {"feat"}, {}, "stem")
      .add_node("If", {"cond"}, {"y"}, {attr_graph("then_branch", then_branch), attr_graph("else_branch", else_branch)},
                "branch")
      .add_output("y", TensorProto::FLOAT)
      .build();
}

TEST(AnalysisTest, SubgraphNodesAreCounted) {
  const ModelAnalysis analysis = analyze(if_model());
  EXPECT_EQ(analysis.node_count, 4);
  EXPECT_EQ(histogram(analysis), (Counts{{"Conv", 2}, {"If", 1}, {"Relu", 1}}));
  EXPECT_EQ(analysis.coverage.compute_nodes, 2);
  EXPECT_EQ(islands(analysis), (std::vector<IslandRow>{{"float", 2, "stem", "branch.then_branch/then_conv"}}));
}

TEST(AnalysisTest, MalformedGraphIsBadInputNamingTheModel) {
  const onnx::ModelProto model = ModelBuilder()
                                     .add_input("x", TensorProto::FLOAT, {2})
                                     .add_node("Add", {"x", "b_out"}, {"a_out"}, {}, "a")
                                     .add_node("Relu", {"a_out"}, {"b_out"}, {}, "b")
                                     .add_output("b_out", TensorProto::FLOAT, {2})
                                     .build();
  try {
    analyze(model);
    FAIL() << "expected a bad-input error";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::kBadInput);
    EXPECT_EQ(error.file(), kPath);
    EXPECT_TRUE(contains(error.what(), "tiny.onnx: the graph has a cycle")) << error.what();
  }
}

// --- Task type ------------------------------------------------------------------------------

TEST(TaskTypeTest, ThousandClassSoftmaxIsClassification) {
  const TaskInference task = analyze(testing::gemm_classifier(1000)).task;
  EXPECT_EQ(task.type, TaskType::kClassification);
  EXPECT_EQ(task.reason, "one output 'probs' of rank 2 [1, 1000] produced by Softmax: class scores [N, C], C >= 2");
}

TEST(TaskTypeTest, TwoClassSoftmaxWithSymbolicBatchIsClassification) {
  const TaskInference task = analyze(ModelBuilder()
                                         .add_input("x", TensorProto::FLOAT, {"N", 16})
                                         .add_initializer("w", {16, 2}, testing::deterministic_values(32, 1))
                                         .add_node("MatMul", {"x", "w"}, {"logits"})
                                         .add_node("Softmax", {"logits"}, {"probs"})
                                         .add_output("probs", TensorProto::FLOAT, {"N", 2})
                                         .build())
                                 .task;
  EXPECT_EQ(task.type, TaskType::kClassification);
  EXPECT_TRUE(contains(task.reason, "one output 'probs' of rank 2 [N, 2] produced by Softmax")) << task.reason;
}

TEST(TaskTypeTest, HeadIsFoundThroughQdq) {
  const TaskInference task = analyze(ModelBuilder()
                                         .add_input("logits", TensorProto::FLOAT, {"N", 10})
                                         .add_initializer("scale", {}, {1.0f / 256})
                                         .add_initializer_u8("zp", {}, {0})
                                         .add_node("Softmax", {"logits"}, {"p"})
                                         .add_node("QuantizeLinear", {"p", "scale", "zp"}, {"p_q"})
                                         .add_node("DequantizeLinear", {"p_q", "scale", "zp"}, {"probs"})
                                         .add_output("probs", TensorProto::FLOAT, {"N", 10})
                                         .build())
                                 .task;
  EXPECT_EQ(task.type, TaskType::kClassification);
  EXPECT_TRUE(contains(task.reason, "produced by Softmax")) << task.reason;
}

TEST(TaskTypeTest, SingleValueOutputIsRegression) {
  const TaskInference task = analyze(testing::gemm_classifier(1)).task;
  EXPECT_EQ(task.type, TaskType::kRegression);
  EXPECT_TRUE(contains(task.reason, "'probs' of rank 2 [1, 1] produced by Softmax")) << task.reason;
}

TEST(TaskTypeTest, SigmoidMapIsRegression) {
  const TaskInference task = analyze(ModelBuilder()
                                         .add_input("x", TensorProto::FLOAT, {"N", 3, "H", "W"})
                                         .add_initializer("w", {1, 3, 1, 1}, {0.1f, 0.2f, 0.3f})
                                         .add_node("Conv", {"x", "w"}, {"logit_map"})
                                         .add_node("Sigmoid", {"logit_map"}, {"prob_map"})
                                         .add_output("prob_map", TensorProto::FLOAT, {"N", 1, "H", "W"})
                                         .build())
                                 .task;
  EXPECT_EQ(task.type, TaskType::kRegression);
  EXPECT_TRUE(contains(task.reason, "consumed directly")) << task.reason;
  EXPECT_TRUE(contains(task.reason, "'prob_map' of rank 4 [N, 1, H, W] produced by Sigmoid")) << task.reason;
}

TEST(TaskTypeTest, PerTimeStepSoftmaxIsSequence) {
  const TaskInference task = analyze(ModelBuilder()
                                         .add_input("x", TensorProto::FLOAT, {"N", "T", 8})
                                         .add_initializer("w", {8, 30}, testing::deterministic_values(240, 1))
                                         .add_node("MatMul", {"x", "w"}, {"logits"})
                                         .add_node("Softmax", {"logits"}, {"probs"}, {attr_int("axis", 2)})
                                         .add_output("probs", TensorProto::FLOAT, {"N", "T", 30})
                                         .build())
                                 .task;
  EXPECT_EQ(task.type, TaskType::kSequence);
  EXPECT_EQ(task.reason,
            "one output 'probs' of rank 3 [N, T, 30] produced by Softmax: "
            "class scores per time step [N, T, C], C >= 2");
}

TEST(TaskTypeTest, ArgMaxOverClassesIsSequenceOrClassificationByRank) {
  auto argmax_model = [](const std::vector<testing::DimSpec>& in_dims, const std::vector<testing::DimSpec>& out_dims) {
    return ModelBuilder()
        .add_input("scores", TensorProto::FLOAT, in_dims)
        .add_node("ArgMax", {"scores"}, {"labels"}, {attr_int("axis", -1), attr_int("keepdims", 0)})
        .add_output("labels", TensorProto::INT64, out_dims)
        .build();
  };
  EXPECT_EQ(analyze(argmax_model({"N", "T", 40}, {"N", "T"})).task.type, TaskType::kSequence);
  EXPECT_EQ(analyze(argmax_model({"N", 40}, {"N"})).task.type, TaskType::kClassification);
}

TEST(TaskTypeTest, BoxesWithNmsAreDetection) {
  const TaskInference task = analyze(testing::nms_detection_model()).task;
  EXPECT_EQ(task.type, TaskType::kDetection);
  EXPECT_TRUE(contains(task.reason, "2 outputs ('det_boxes', 'selected') and NonMaxSuppression 'nms'")) << task.reason;
}

TEST(TaskTypeTest, SeveralOutputsWithoutNmsAreRegression) {
  const TaskInference task = analyze(testing::multi_output_model()).task;
  EXPECT_EQ(task.type, TaskType::kRegression);
  EXPECT_TRUE(contains(task.reason, "'out_a' of rank 4 [1, 2, 8, 8] produced by Conv; 'out_b'")) << task.reason;
}

// boxes -> NonMaxSuppression -> Cast -> `relus` Relus -> first output; a second output copies the
// boxes. NMS sits relus + 2 nodes upstream of the first output.
onnx::ModelProto nms_at_distance(int relus) {
  // Appending (rather than "v" + std::to_string(i)) dodges a GCC 12 -Wrestrict false positive.
  auto value = [](int i) { return std::string("v").append(std::to_string(i)); };
  ModelBuilder builder;
  builder.add_input("boxes", TensorProto::FLOAT, {1, 8, 4})
      .add_input("scores", TensorProto::FLOAT, {1, 1, 8})
      .add_node("NonMaxSuppression", {"boxes", "scores"}, {"selected"}, {}, "nms")
      .add_node("Cast", {"selected"}, {"v0"}, {attr_int("to", TensorProto::FLOAT)})
      .add_node("Identity", {"boxes"}, {"boxes_copy"});
  for (int i = 0; i < relus; ++i) builder.add_node("Relu", {value(i)}, {value(i + 1)});
  return builder.add_output(value(relus), TensorProto::FLOAT, {"K", 3})
      .add_output("boxes_copy", TensorProto::FLOAT, {1, 8, 4})
      .build();
}

TEST(TaskTypeTest, NmsMustBeNearAnOutput) {
  const TaskInference near = analyze(nms_at_distance(kDetectionOpMaxDistance - 2)).task;
  EXPECT_EQ(near.type, TaskType::kDetection);
  EXPECT_TRUE(contains(near.reason, "'nms' 8 node(s) upstream of output 'v6'")) << near.reason;
  EXPECT_EQ(analyze(nms_at_distance(kDetectionOpMaxDistance - 1)).task.type, TaskType::kRegression);
}

TEST(TaskTypeTest, UndeclaredShapeOrIntegerOutputIsUnknown) {
  const TaskInference no_shape = analyze(ModelBuilder()
                                             .add_input("x", TensorProto::FLOAT, {1, 4})
                                             .add_node("Relu", {"x"}, {"y"})
                                             .add_output("y", TensorProto::FLOAT)
                                             .build())
                                     .task;
  EXPECT_EQ(no_shape.type, TaskType::kUnknown);
  EXPECT_EQ(no_shape.reason, "output 'y' has no declared shape");

  const TaskInference integer = analyze(ModelBuilder()
                                            .add_input("x", TensorProto::FLOAT, {1, 4})
                                            .add_node("Shape", {"x"}, {"dims"})
                                            .add_output("dims", TensorProto::INT64, {2})
                                            .build())
                                    .task;
  EXPECT_EQ(integer.type, TaskType::kUnknown);
  EXPECT_TRUE(contains(integer.reason, "'dims' of rank 1 [2] produced by Shape is int64")) << integer.reason;
}

// --- Reports --------------------------------------------------------------------------------

TEST(AnalysisReportTest, JsonHasStableKeysAndValues) {
  const nlohmann::ordered_json json = analysis_to_json(analyze(testing::qdq_conv_chain(2)));
  std::vector<std::string> keys;
  for (const auto& item : json.items()) keys.push_back(item.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"model", "quantization", "inputs", "outputs", "dynamic_dims", "body_dynamic_dims", "op_histogram", "compute_ops",
                                            "coverage", "graph_coverage", "islands", "task", "architecture"}));
  EXPECT_TRUE(json["graph_coverage"].empty());  // no If/Loop/Scan body
  std::vector<std::string> quant_keys;
  for (const auto& item : json["quantization"].items()) quant_keys.push_back(item.key());
  EXPECT_EQ(quant_keys, (std::vector<std::string>{"state", "quantize_linear", "dequantize_linear", "cast_pairs_bf16",
                                                  "cast_pairs_fp16", "qoperator_nodes", "custom_domain_nodes",
                                                  "dtypes", "edge_quantized_inputs", "edge_dequantized_outputs"}));

  EXPECT_EQ(json["model"]["path"], kPath);
  EXPECT_EQ(json["model"]["opsets"]["ai.onnx"], 17);
  EXPECT_EQ(json["quantization"]["state"], "qdq");
  EXPECT_EQ(json["quantization"]["dequantize_linear"], 4);
  EXPECT_EQ(json["inputs"][0]["shape"], nlohmann::ordered_json::parse("[1, 3, 8, 8]"));
  EXPECT_EQ(json["op_histogram"][0]["op_type"], "DequantizeLinear");
  EXPECT_EQ(json["compute_ops"][0]["quantized"], 2);
  EXPECT_EQ(json["coverage"]["quantized_percent"], 100.0);
  EXPECT_EQ(json["islands"]["quantized"], 1);
  EXPECT_EQ(json["islands"]["list"][0]["first_node"], "conv_0");
  EXPECT_EQ(json["task"]["type"], "regression");
}

TEST(AnalysisReportTest, JsonShapesKeepSymbolsAndUnknownRank) {
  const nlohmann::ordered_json json = analysis_to_json(analyze(ModelBuilder()
                                                                   .add_input("x", TensorProto::FLOAT, {"N", "?", 4})
                                                                   .add_node("Relu", {"x"}, {"y"})
                                                                   .add_output("y", TensorProto::FLOAT)
                                                                   .build()));
  EXPECT_EQ(json["inputs"][0]["shape"], nlohmann::ordered_json::parse(R"(["N", "?", 4])"));
  EXPECT_TRUE(json["outputs"][0]["shape"].is_null());
}

TEST(AnalysisReportTest, TableHasAlignedSectionsInOrder) {
  const std::string table =
      analysis_to_table(analyze(testing::conv_chain({LayerPrecision::kQdqInt8, LayerPrecision::kFloat})));
  size_t position = 0;
  for (const char* title : {"Model\n", "Quantization\n", "Inputs\n", "Outputs\n", "Op histogram (4 op types)\n",
                            "Coverage (quantized 50.0%, emulated bf16/fp16 0.0% of compute nodes)\n",
                            "Islands (2: 1 quantized, 1 float, 0 bf16, 0 fp16)\n", "Task type\n"}) {
    const size_t found = table.find(title, position);
    ASSERT_NE(found, std::string::npos) << title << "\n" << table;
    position = found;
  }
  EXPECT_TRUE(contains(table, "Inputs\n"
                              "  name   dtype    shape\n"
                              "  input  float32  [1, 3, 8, 8]\n"))
      << table;
  EXPECT_TRUE(contains(table, "  op_type      total  quantized  bf16  fp16  float\n"
                              "  Conv         2      1          0     0     1\n"
                              "  all compute  2      1          0     0     1\n"))
      << table;
  EXPECT_TRUE(contains(table, "  #  precision  nodes  first   last\n"
                              "  1  quantized  1      conv_0  conv_0\n"
                              "  2  float      1      conv_1  conv_1\n"))
      << table;
  EXPECT_EQ(table.back(), '\n');
  EXPECT_NE(table.substr(table.size() - 2), "\n\n");
}

TEST(AnalysisReportTest, TableTruncatesLongLists) {
  const std::string table = analysis_to_table(analyze(testing::qdq_conv_chain(2)), {.max_ops = 2, .max_islands = 0});
  EXPECT_TRUE(contains(table, "  2 more op types   4\n")) << table;
  EXPECT_TRUE(contains(table, "  ...  1 more islands\n")) << table;
}

}  // namespace
}  // namespace mixprec

namespace mixprec {
namespace {

TEST(ArchitectureTest, ConvChainIsACnn) {
  const ArchitectureInference arch = analyze_model(testing::conv_chain(3), "tiny.onnx").architecture;
  EXPECT_EQ(arch.type, Architecture::kCnn);
  EXPECT_EQ(arch.conv_nodes, 3);
  EXPECT_EQ(arch.attention_blocks, 0);
}

TEST(ArchitectureTest, SoftmaxFeedingAMatMulIsAnAttentionBlock) {
  // 5 MatMuls (q, k, v, qk, pv) against 0 Convs: a transformer; the Softmax reaches "pv" directly.
  const ArchitectureInference arch = analyze_model(testing::attention_model(0), "tiny.onnx").architecture;
  EXPECT_EQ(arch.type, Architecture::kTransformer) << arch.reason;
  EXPECT_EQ(arch.matmul_nodes, 5);
  EXPECT_EQ(arch.attention_blocks, 1);
  EXPECT_EQ(arch.normalizations, 1);  // ReduceMean feeding Sub
  EXPECT_EQ(arch.attention_matmuls, (std::vector<std::string>{"qk", "pv"}));
}

TEST(ArchitectureTest, MoreConvsThanMatMulsWithAttentionIsAHybrid) {
  EXPECT_EQ(analyze_model(testing::attention_model(5), "tiny.onnx").architecture.type, Architecture::kTransformer);
  const ArchitectureInference arch = analyze_model(testing::attention_model(6), "tiny.onnx").architecture;
  EXPECT_EQ(arch.type, Architecture::kHybrid) << arch.reason;
  EXPECT_EQ(arch.conv_nodes, 6);
}

TEST(ArchitectureTest, MatMulsWithoutAttentionAreUnknown) {
  const ArchitectureInference arch = analyze_model(testing::matmul_chain(3), "tiny.onnx").architecture;
  EXPECT_EQ(arch.type, Architecture::kUnknown);
  EXPECT_NE(arch.reason.find("3 MatMul/Gemm"), std::string::npos) << arch.reason;
}

// q, k and v each from their own weight MatMul; no output projection, no MLP.
TEST(FeedForwardTest, SeparateProjectionsTakeTheirAttentionRoles) {
  const ArchitectureInference arch = analyze_model(testing::attention_model(0), "tiny.onnx").architecture;
  ASSERT_EQ(arch.attention_projections.size(), 3u);
  EXPECT_EQ(arch.attention_projections[0].node, "proj_q");
  EXPECT_EQ(arch.attention_projections[0].role, "q");
  EXPECT_EQ(arch.attention_projections[1].node, "proj_k");
  EXPECT_EQ(arch.attention_projections[1].role, "k");
  EXPECT_EQ(arch.attention_projections[2].node, "proj_v");
  EXPECT_EQ(arch.attention_projections[2].role, "v");
  EXPECT_TRUE(arch.mlp_blocks.empty());
}

// A pre-norm transformer block as exporters write it: a fused QKV MatMul + bias, split after a
// Reshape/Transpose, q scaled, Q.K^T, Softmax, P.V, Transpose/Reshape, the output projection +
// bias, a residual Add; then an MLP whose Gelu is decomposed (x * 0.5 * (1 + erf(x / sqrt 2)))
// and a second residual. The residual Adds end the regions: the output projection is not an
// MLP's up MatMul, and the MLP's down MatMul starts none.
TEST(FeedForwardTest, FusedQkvOutputProjectionAndADecomposedGeluMlp) {
  constexpr int64_t kTokens = 4, kWidth = 8, kHidden = 16;
  const auto w = [](int64_t rows, int64_t cols, uint32_t seed) {
    return testing::deterministic_values(static_cast<size_t>(rows * cols), seed, 0.5f);
  };
  ModelBuilder b;
  b.add_input("x", TensorProto::FLOAT, {1, kTokens, kWidth})
      .add_output("y", TensorProto::FLOAT, {1, kTokens, kWidth})
      .add_initializer("w_qkv", {kWidth, 3 * kWidth}, w(kWidth, 3 * kWidth, 1))
      .add_initializer("b_qkv", {3 * kWidth}, std::vector<float>(3 * kWidth, 0.1f))
      .add_initializer_i64("qkv_shape", {4}, {1, kTokens, 3, kWidth})
      .add_initializer("scale", {}, {0.35f})
      .add_initializer_i64("ctx_shape", {3}, {1, kTokens, kWidth})
      .add_initializer("w_o", {kWidth, kWidth}, w(kWidth, kWidth, 2))
      .add_initializer("b_o", {kWidth}, std::vector<float>(kWidth, 0.0f))
      .add_initializer("w_1", {kWidth, kHidden}, w(kWidth, kHidden, 3))
      .add_initializer("b_1", {kHidden}, std::vector<float>(kHidden, 0.0f))
      .add_initializer("sqrt2", {}, {1.41421356f})
      .add_initializer("one", {}, {1.0f})
      .add_initializer("half", {}, {0.5f})
      .add_initializer("w_2", {kHidden, kWidth}, w(kHidden, kWidth, 4))
      .add_initializer("b_2", {kWidth}, std::vector<float>(kWidth, 0.0f))
      .add_node("MatMul", {"x", "w_qkv"}, {"qkv_mm"}, {}, "qkv")
      .add_node("Add", {"qkv_mm", "b_qkv"}, {"qkv_b"}, {}, "qkv_bias")
      .add_node("Reshape", {"qkv_b", "qkv_shape"}, {"qkv_r"}, {}, "qkv_reshape")
      .add_node("Transpose", {"qkv_r"}, {"qkv_t"}, {testing::attr_ints("perm", {2, 0, 1, 3})}, "qkv_transpose")
      .add_node("Split", {"qkv_t"}, {"q3", "k3", "v3"}, {attr_int("axis", 0)}, "qkv_split")
      .add_node("Squeeze", {"q3"}, {"q"}, {}, "q_squeeze")
      .add_node("Squeeze", {"k3"}, {"k"}, {}, "k_squeeze")
      .add_node("Squeeze", {"v3"}, {"v"}, {}, "v_squeeze")
      .add_node("Mul", {"q", "scale"}, {"q_scaled"}, {}, "q_scale")
      .add_node("Transpose", {"k"}, {"k_t"}, {testing::attr_ints("perm", {0, 2, 1})}, "k_transpose")
      .add_node("MatMul", {"q_scaled", "k_t"}, {"scores"}, {}, "qk")
      .add_node("Softmax", {"scores"}, {"probs"}, {attr_int("axis", -1)}, "softmax")
      .add_node("MatMul", {"probs", "v"}, {"context"}, {}, "pv")
      .add_node("Reshape", {"context", "ctx_shape"}, {"ctx"}, {}, "ctx_reshape")
      .add_node("MatMul", {"ctx", "w_o"}, {"o_mm"}, {}, "out_proj")
      .add_node("Add", {"o_mm", "b_o"}, {"o"}, {}, "out_bias")
      .add_node("Add", {"x", "o"}, {"h"}, {}, "residual_1")
      .add_node("MatMul", {"h", "w_1"}, {"f1_mm"}, {}, "fc1")
      .add_node("Add", {"f1_mm", "b_1"}, {"f1"}, {}, "fc1_bias")
      .add_node("Div", {"f1", "sqrt2"}, {"g_div"}, {}, "gelu_div")
      .add_node("Erf", {"g_div"}, {"g_erf"}, {}, "gelu_erf")
      .add_node("Add", {"g_erf", "one"}, {"g_add"}, {}, "gelu_add")
      .add_node("Mul", {"f1", "g_add"}, {"g_mul"}, {}, "gelu_mul")
      .add_node("Mul", {"g_mul", "half"}, {"g"}, {}, "gelu_half")
      .add_node("MatMul", {"g", "w_2"}, {"f2_mm"}, {}, "fc2")
      .add_node("Add", {"f2_mm", "b_2"}, {"f2"}, {}, "fc2_bias")
      .add_node("Add", {"h", "f2"}, {"y"}, {}, "residual_2");
  const ArchitectureInference arch = analyze_model(b.build(), "block.onnx").architecture;
  ASSERT_EQ(arch.mlp_blocks.size(), 1u);
  EXPECT_EQ(arch.mlp_blocks[0].up, "fc1");
  EXPECT_EQ(arch.mlp_blocks[0].activation, "Gelu (decomposed: Erf)");
  EXPECT_EQ(arch.mlp_blocks[0].down, "fc2");
  ASSERT_EQ(arch.attention_projections.size(), 2u);
  EXPECT_EQ(arch.attention_projections[0].node, "qkv");
  EXPECT_EQ(arch.attention_projections[0].role, "q+k+v");
  EXPECT_EQ(arch.attention_projections[1].node, "out_proj");
  EXPECT_EQ(arch.attention_projections[1].role, "out");

  const auto json = analysis_to_json(analyze_model(b.build(), "block.onnx"));
  EXPECT_EQ(json["architecture"]["mlp_blocks"][0]["activation"], "Gelu (decomposed: Erf)");
  EXPECT_EQ(json["architecture"]["attention_projections"][0]["role"], "q+k+v");
}

// Gemm -> Relu -> Gemm is an MLP (a classifier head); MatMul -> MatMul with nothing
// nonlinear between them (a bias Add) is not.
TEST(FeedForwardTest, AnActivationMakesTheBlockALinearChainDoesNot) {
  const ModelBuilder base = ModelBuilder()
                                .add_input("x", TensorProto::FLOAT, {1, 8})
                                .add_output("y", TensorProto::FLOAT, {1, 8})
                                .add_initializer("w1", {8, 8}, testing::deterministic_values(64, 1, 0.5f))
                                .add_initializer("w2", {8, 8}, testing::deterministic_values(64, 2, 0.5f));
  const onnx::ModelProto mlp = ModelBuilder(base)
                                   .add_node("Gemm", {"x", "w1"}, {"a"}, {}, "fc1")
                                   .add_node("Relu", {"a"}, {"r"}, {}, "relu")
                                   .add_node("Gemm", {"r", "w2"}, {"y"}, {}, "fc2")
                                   .build();
  const ArchitectureInference arch = analyze_model(mlp, "mlp.onnx").architecture;
  ASSERT_EQ(arch.mlp_blocks.size(), 1u);
  EXPECT_EQ(arch.mlp_blocks[0].activation, "Relu");
  EXPECT_TRUE(arch.attention_projections.empty());
  const onnx::ModelProto linear = ModelBuilder(base)
                                      .add_initializer("b1", {8}, std::vector<float>(8, 0.25f))
                                      .add_node("MatMul", {"x", "w1"}, {"a"}, {}, "fc1")
                                      .add_node("Add", {"a", "b1"}, {"ab"}, {}, "bias")
                                      .add_node("MatMul", {"ab", "w2"}, {"y"}, {}, "fc2")
                                      .build();
  EXPECT_TRUE(analyze_model(linear, "linear.onnx").architecture.mlp_blocks.empty());
  // MatMul -> Relu three times: two blocks sharing the middle MatMul.
  const ArchitectureInference chain = analyze_model(testing::matmul_chain(3), "chain.onnx").architecture;
  ASSERT_EQ(chain.mlp_blocks.size(), 2u);
  EXPECT_EQ(chain.mlp_blocks[0].up, "matmul_0");
  EXPECT_EQ(chain.mlp_blocks[1].down, "matmul_2");
}

TEST(ArchitectureTest, ALoopMakesItRecurrent) {
  testing::ModelBuilder body;
  body.add_input("i", onnx::TensorProto::INT64, {}).add_input("cond", onnx::TensorProto::BOOL, {})
      .add_input("carry", onnx::TensorProto::FLOAT, {1, 4})
      .add_node("Identity", {"cond"}, {"cond_out"}).add_node("Relu", {"carry"}, {"carry_out"})
      .add_output("cond_out", onnx::TensorProto::BOOL, {}).add_output("carry_out", onnx::TensorProto::FLOAT, {1, 4});
  testing::ModelBuilder loop;
  loop.add_input("x", onnx::TensorProto::FLOAT, {1, 4})
      .add_initializer_i64("trip", {}, {3})
      .add_node("Loop", {"trip", "", "x"}, {"y"}, {testing::attr_graph("body", body.build_graph())}, "loop")
      .add_output("y", onnx::TensorProto::FLOAT, {1, 4});
  const ArchitectureInference arch = analyze_model(loop.build(), "tiny.onnx").architecture;
  EXPECT_EQ(arch.type, Architecture::kRecurrent) << arch.reason;
  EXPECT_EQ(arch.recurrent_nodes, 1);
}

}  // namespace
}  // namespace mixprec
