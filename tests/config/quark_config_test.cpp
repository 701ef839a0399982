// Quark's serialised QConfig shape: the configs Quark's documentation and Olive's Quark pass
// write load as they mean, every error names its key, and both shapes round-trip to the same
// config and the same node assignment.
#include <gtest/gtest.h>

#include <algorithm>

#include "mixprec/config.h"
#include "mixprec/error.h"
#include "mixprec/log.h"
#include "support/messages.h"
#include "support/model_builder.h"
#include "support/spec_example.h"

namespace mixprec {
namespace {

using Json = nlohmann::ordered_json;
using onnx::TensorProto;
using testing::ModelBuilder;

constexpr char kLabel[] = "quark.json";

QuantConfig parse(const std::string& text) { return parse_config(Json::parse(text), kLabel); }

using testing::contains;
using testing::count_containing;

std::string parse_error(const std::string& text) {
  return testing::bad_input_message([&] { parse(text); }, kLabel, text);
}

// The error of writing `config` in Quark's shape (no file: the caller names it).
std::string write_error(const QuantConfig& config) {
  return testing::bad_input_message([&] { config_to_json(config, ConfigShape::kQuark); }, "", "writing Quark's shape");
}

// A tensor config as Quark's to_dict writes it.
std::string tensor(const std::string& data_type, const std::string& scale = "Float32", const std::string& method = "MinMax",
                   const std::string& granularity = "Tensor", bool symmetric = true) {
  return R"({"symmetric": )" + std::string(symmetric ? "true" : "false") + R"(, "scale_type": "ScaleType.)" + scale +
         R"(", "calibration_method": "CalibMethod.)" + method + R"(", "quant_granularity": "QuantGranularity.)" +
         granularity + R"(", "data_type": ")" + data_type + R"("})";
}

// A config of Quark's shape (its exclude list says so) with one global input tensor config.
std::string with_global(const std::string& input_tensor, const std::string& rest = "") {
  return R"({"exclude": [], "global_config": {"input_tensors": )" + input_tensor + "}" + rest + "}";
}

// Quark's serialization example (docs/source/onnx/config/quantization_configuration_
// serialization_and_deserialization.rst): XINT8 globally, Int16 on two Convs, Gemm kept float,
// CLE twice, two extra options.
constexpr char kQuarkDocExample[] = R"({
  "global_config": {
    "input_tensors": {"symmetric": true, "scale_type": "ScaleType.PowerOf2", "calibration_method": "CalibMethod.MinMSE",
                      "quant_granularity": "QuantGranularity.Tensor", "data_type": "Int8"},
    "weight": {"symmetric": true, "scale_type": "ScaleType.PowerOf2", "calibration_method": "CalibMethod.MinMSE",
               "quant_granularity": "QuantGranularity.Tensor", "data_type": "Int8"}},
  "specific_layer_config": [[
    {"input_tensors": {"symmetric": true, "scale_type": "ScaleType.Float32", "calibration_method": "CalibMethod.Percentile",
                       "quant_granularity": "QuantGranularity.Tensor", "data_type": "Int16"},
     "weight": {"symmetric": true, "scale_type": "ScaleType.Float32", "calibration_method": "CalibMethod.Percentile",
                "quant_granularity": "QuantGranularity.Tensor", "data_type": "Int16"}},
    ["/conv1/Conv", "/conv2/Conv"]]],
  "layer_type_config": [[null, ["Gemm"]]],
  "exclude": [],
  "algo_config": [{"name": "cle", "cle_steps": 2}],
  "use_external_data_format": false,
  "extra_options": {"SimplifyModel": false, "Int32Bias": false}})";

// Olive's QuarkQuantization pass (test/passes/quark_quantizer): its keys, Quark's former
// "activation", enum members without their class and no scale_type.
constexpr char kOliveU8S8[] = R"({
  "quant_mode": "static", "quant_format": "QDQ",
  "global_config": {
    "activation": {"symmetric": false, "calibration_method": "MinMax", "quant_granularity": "Tensor", "data_type": "UInt8"},
    "weight": {"symmetric": true, "calibration_method": "MinMax", "quant_granularity": "Tensor", "data_type": "Int8"}},
  "extra_options": {"MixedPrecisionTensor": {"UInt16": ["/fc1/Gemm_output_0"]}}})";

// The mixed precision tutorial (docs/source/onnx/tutorial_mix_precision.rst): Int8 globally,
// Int16 on every Softmax and on two layers, a subgraph excluded, AdaRound.
constexpr char kQuarkMixedInt16[] = R"({
  "global_config": {
    "input_tensors": {"symmetric": true, "scale_type": "ScaleType.Float32", "calibration_method": "CalibMethod.Percentile",
                      "quant_granularity": "QuantGranularity.Tensor", "data_type": "Int8"},
    "weight": {"symmetric": true, "scale_type": "ScaleType.Float32", "calibration_method": "CalibMethod.MinMax",
               "quant_granularity": "QuantGranularity.Channel", "data_type": "Int8"}},
  "specific_layer_config": [[
    {"input_tensors": {"symmetric": true, "scale_type": "ScaleType.Float32", "calibration_method": "CalibMethod.Percentile",
                       "quant_granularity": "QuantGranularity.Tensor", "data_type": "Int16"},
     "weight": {"symmetric": true, "scale_type": "ScaleType.Float32", "calibration_method": "CalibMethod.Percentile",
                "quant_granularity": "QuantGranularity.Tensor", "data_type": "Int16"},
     "bias": {"symmetric": true, "scale_type": "ScaleType.Float32", "calibration_method": "CalibMethod.Percentile",
              "quant_granularity": "QuantGranularity.Tensor", "data_type": "Int32"}},
    ["/conv2/Conv", "^/head/.*"]]],
  "layer_type_config": [[
    {"input_tensors": {"symmetric": true, "scale_type": "ScaleType.Float32", "calibration_method": "CalibMethod.Percentile",
                       "quant_granularity": "QuantGranularity.Tensor", "data_type": "Int16"},
     "output_tensors": {"symmetric": true, "scale_type": "ScaleType.Float32", "calibration_method": "CalibMethod.Percentile",
                        "quant_granularity": "QuantGranularity.Tensor", "data_type": "Int16"}},
    ["Softmax"]]],
  "exclude": ["/relu/Relu", "^/tail/.*", [["/pool/GlobalAveragePool"], ["/flat/Flatten"]]],
  "algo_config": [{"name": "adaround", "num_iterations": 100, "learning_rate": 0.05, "drop_ratio": 0.5, "optim_device": "cuda:0"}],
  "use_external_data_format": true,
  "extra_options": {"ActivationSymmetric": true, "OpTypesToQuantize": ["Conv", "Gemm", "GlobalAveragePool", "Softmax"]}})";

TensorQuantSpec spec(FormatId format) { return TensorQuantSpec{.format = format}; }

// x [1,3,8,8] -> /conv1/Conv -> /relu/Relu -> /conv2/Conv -> /pool/GlobalAveragePool ->
// /flat/Flatten -> /fc/Gemm -> /head/Softmax -> y.
onnx::ModelProto classifier() {
  return ModelBuilder()
      .add_input("x", TensorProto::FLOAT, {1, 3, 8, 8})
      .add_output("y", TensorProto::FLOAT, {1, 4})
      .add_initializer("w1", {4, 3, 3, 3}, testing::deterministic_values(108, 11))
      .add_initializer("w2", {4, 4, 3, 3}, testing::deterministic_values(144, 12))
      .add_initializer("b", {4}, testing::deterministic_values(4, 13))
      .add_initializer("wf", {4, 4}, testing::deterministic_values(16, 14))
      .add_node("Conv", {"x", "w1", "b"}, {"c1"}, {testing::attr_ints("pads", {1, 1, 1, 1})}, "/conv1/Conv")
      .add_node("Relu", {"c1"}, {"r1"}, {}, "/relu/Relu")
      .add_node("Conv", {"r1", "w2", "b"}, {"c2"}, {testing::attr_ints("pads", {1, 1, 1, 1})}, "/conv2/Conv")
      .add_node("GlobalAveragePool", {"c2"}, {"p"}, {}, "/pool/GlobalAveragePool")
      .add_node("Flatten", {"p"}, {"f"}, {}, "/flat/Flatten")
      .add_node("Gemm", {"f", "wf", "b"}, {"g"}, {testing::attr_int("transB", 1)}, "/fc/Gemm")
      .add_node("Softmax", {"g"}, {"y"}, {}, "/head/Softmax")
      .build();
}

// --- The documented shapes load as they mean ----------------------------------------------------

TEST(QuarkConfigTest, QuarksSerializationExampleLoads) {
  const Json json = Json::parse(kQuarkDocExample);
  EXPECT_EQ(detect_config_shape(json, kLabel), ConfigShape::kQuark);
  const WarningCollector warnings;
  const QuantConfig config = parse_config(json, kLabel);

  // XInt8 with Quark's MinMSE: PowerOfTwo_MinMSE, stated since extra_options.CalibMethod is MinMax.
  const TensorQuantSpec xint8{.format = FormatId::kXInt8, .calib_method = CalibMethod::kPowerOfTwoMinMse};
  EXPECT_EQ(config.global, (LayerConfig{.input_tensors = xint8, .weight = xint8}));
  ASSERT_EQ(config.specific.size(), 1u);
  EXPECT_EQ(config.specific[0].target_node_names, (std::vector<std::string>{"/conv1/Conv", "/conv2/Conv"}));
  const TensorQuantSpec int16{.format = FormatId::kInt16, .calib_method = CalibMethod::kPercentile};
  EXPECT_EQ(config.specific[0].layer_config, (LayerConfig{.input_tensors = int16, .weight = int16}));
  ASSERT_EQ(config.layer_types.size(), 1u);
  EXPECT_EQ(config.layer_types[0], (LayerTypeOverride{.op_types = {"Gemm"}, .layer_config = std::nullopt}));
  EXPECT_EQ(config.algorithms, (std::vector<AlgorithmEntry>{{.name = "cle", .cle_steps = 2}}));
  EXPECT_FALSE(config.use_external_data_format);
  EXPECT_FALSE(config.extra.int32_bias);
  EXPECT_EQ(config.extra.unknown["SimplifyModel"], false);  // Quark's option: kept, and said
  ASSERT_EQ(warnings.warnings().size(), 1u);
  EXPECT_PRED2(contains, warnings.warnings()[0], "quark.json: extra_options.SimplifyModel is not a known key");
  EXPECT_EQ(algorithm_recipe(config).cle->steps, 2);
}

TEST(QuarkConfigTest, OlivesPassConfigLoadsWithNotes) {
  std::vector<std::pair<LogLevel, std::string>> messages;
  const LogSink previous = set_log_sink([&](LogLevel level, const std::string& m) { messages.emplace_back(level, m); });
  const QuantConfig config = parse(kOliveU8S8);
  set_log_sink(previous);

  // Asymmetric UInt8 activations against ActivationSymmetric true: stated.
  EXPECT_EQ(config.global.input_tensors, (TensorQuantSpec{.format = FormatId::kUInt8, .symmetric = false}));
  EXPECT_EQ(config.global.weight, spec(FormatId::kInt8));  // symmetric and MinMax, as inherited
  EXPECT_TRUE(config.extra.unknown.contains("MixedPrecisionTensor"));
  const auto said = [&](LogLevel level, const std::string& part) {
    return std::ranges::count_if(messages, [&](const auto& m) { return m.first == level && contains(m.second, part); });
  };
  EXPECT_EQ(said(LogLevel::kWarning, "global_config.activation is Quark's former name of input_tensors"), 1);
  EXPECT_EQ(said(LogLevel::kInfo, "quant_mode is static: mixprec quantizes statically"), 1);
  EXPECT_EQ(said(LogLevel::kInfo, "quant_format is QDQ"), 1);
  EXPECT_EQ(said(LogLevel::kInfo, "quark.json: read in Quark's QConfig shape"), 1);
  EXPECT_EQ(said(LogLevel::kWarning, "extra_options.MixedPrecisionTensor is not a known key"), 1);

  const WarningCollector warnings;
  parse(R"({"quant_mode": "dynamic", "quant_format": "QOperator", "global_config": {}})");
  EXPECT_EQ(count_containing(warnings.warnings(), "quant_mode is dynamic, which is ignored"), 1u);
  EXPECT_EQ(count_containing(warnings.warnings(), "quant_format is QOperator, which is ignored"), 1u);
}

TEST(QuarkConfigTest, MixedInt16TutorialConfigLoads) {
  const WarningCollector warnings;
  const QuantConfig config = parse(kQuarkMixedInt16);

  EXPECT_EQ(config.global.input_tensors, (TensorQuantSpec{.format = FormatId::kInt8, .calib_method = CalibMethod::kPercentile}));
  EXPECT_EQ(config.global.weight, (TensorQuantSpec{.format = FormatId::kInt8, .per_channel = true}));
  const TensorQuantSpec int16{.format = FormatId::kInt16, .calib_method = CalibMethod::kPercentile};
  // The Int32 bias is Int32Bias: the bias left unset.
  EXPECT_EQ(config.specific[0].layer_config, (LayerConfig{.input_tensors = int16, .weight = int16}));
  EXPECT_EQ(config.specific[0].target_node_names, (std::vector<std::string>{"/conv2/Conv", "^/head/.*"}));
  EXPECT_EQ(config.layer_types[0], (LayerTypeOverride{.op_types = {"Softmax"},
                                                      .layer_config = LayerConfig{.input_tensors = int16, .output_tensors = int16}}));
  // Names escaped to match only themselves, patterns as they are, the subgraph as a pair.
  EXPECT_EQ(config.exclude.node_names, (std::vector<std::string>{"/relu/Relu", "^/tail/.*"}));
  EXPECT_EQ(config.exclude.subgraphs, (std::vector<std::pair<std::string, std::string>>{{"/pool/GlobalAveragePool", "/flat/Flatten"}}));
  EXPECT_EQ(config.algorithms,
            (std::vector<AlgorithmEntry>{{.name = "adaround", .num_iterations = 100, .learning_rate = 0.05, .drop_ratio = 0.5}}));
  EXPECT_TRUE(config.use_external_data_format);
  ASSERT_EQ(warnings.warnings().size(), 1u);
  EXPECT_PRED2(contains, warnings.warnings()[0],
               "algo_config[0].optim_device is a parameter of Quark's adaround that mixprec does not use");
}

// AdaQuantConfig's update_bias and drop_ratio are read and written back; AdaRoundConfig's
// update_bias is one Quark itself ignores.
TEST(QuarkConfigTest, AdaQuantTakesUpdateBiasAndAdaRoundWarnsAboutIt) {
  const WarningCollector warnings;
  const QuantConfig config = parse(R"({"global_config": {}, "exclude": [],
      "algo_config": [{"name": "adaquant", "update_bias": true, "drop_ratio": 0.75}]})");
  EXPECT_EQ(config.algorithms, (std::vector<AlgorithmEntry>{{.name = "adaquant", .drop_ratio = 0.75, .update_bias = true}}));
  EXPECT_TRUE(warnings.warnings().empty());
  const Json back = config_to_json(config, ConfigShape::kQuark);
  EXPECT_EQ(back["algo_config"][0]["update_bias"], true);
  EXPECT_EQ(back["algo_config"][0]["drop_ratio"], 0.75);
  parse(R"({"global_config": {}, "exclude": [], "algo_config": [{"name": "adaround", "update_bias": true}]})");
  ASSERT_EQ(warnings.warnings().size(), 1u);
  EXPECT_PRED2(contains, warnings.warnings()[0], "algo_config[0].update_bias is a parameter of Quark's adaround that mixprec does not use");
}

// selective_update (AdaRoundConfig's and AdaQuantConfig's) is read and written back.
TEST(QuarkConfigTest, SelectiveUpdateIsReadAndWrittenBack) {
  const WarningCollector warnings;
  const QuantConfig config = parse(R"({"global_config": {}, "exclude": [],
      "algo_config": [{"name": "adaround", "selective_update": true}]})");
  EXPECT_EQ(config.algorithms, (std::vector<AlgorithmEntry>{{.name = "adaround", .selective_update = true}}));
  EXPECT_TRUE(warnings.warnings().empty());
  EXPECT_EQ(config_to_json(config, ConfigShape::kQuark)["algo_config"][0]["selective_update"], true);
}

// AdaRoundConfig's beta_range and warm_start are read and written back; AdaQuantConfig's are
// warned about (AdaQuant has no rounding regulariser).
TEST(QuarkConfigTest, AdaRoundTakesBetaRangeAndWarmStart) {
  const WarningCollector warnings;
  const QuantConfig config = parse(R"({"global_config": {}, "exclude": [],
      "algo_config": [{"name": "adaround", "beta_range": [16, 2], "warm_start": 0.25}]})");
  EXPECT_EQ(config.algorithms,
            (std::vector<AlgorithmEntry>{{.name = "adaround", .beta_range = std::vector<double>{16, 2}, .warm_start = 0.25}}));
  EXPECT_TRUE(warnings.warnings().empty());
  const Json back = config_to_json(config, ConfigShape::kQuark);
  EXPECT_EQ(back["algo_config"][0]["beta_range"], Json::array({16.0, 2.0}));
  EXPECT_EQ(back["algo_config"][0]["warm_start"], 0.25);
  parse(R"({"global_config": {}, "exclude": [], "algo_config": [{"name": "adaquant", "warm_start": 0.2}]})");
  ASSERT_EQ(warnings.warnings().size(), 1u);
  EXPECT_PRED2(contains, warnings.warnings()[0], "algo_config[0].warm_start is a parameter of Quark's adaquant that mixprec does not use");
}

// lr_adjust (AdaRoundConfig and AdaQuantConfig: [threshold, rate]) and target_op_type are read
// and written back; Quark's default lr_adjust () reads as no adjustment.
TEST(QuarkConfigTest, ReconstructionTakesLrAdjustAndTargetOpType) {
  const WarningCollector warnings;
  const QuantConfig config = parse(R"({"global_config": {}, "exclude": [],
      "algo_config": [{"name": "adaquant", "lr_adjust": [0.0001, 0.00002]}]})");
  EXPECT_EQ(config.algorithms, (std::vector<AlgorithmEntry>{{.name = "adaquant", .lr_adjust = std::vector<double>{0.0001, 0.00002}}}));
  EXPECT_TRUE(warnings.warnings().empty());
  EXPECT_EQ(algorithm_recipe(config).reconstruction->lr_adjust,
            (ReconstructionSettings::LearningRateAdjust{.threshold = 0.0001, .learning_rate = 0.00002}));
  EXPECT_EQ(config_to_json(config, ConfigShape::kQuark)["algo_config"][0]["lr_adjust"], Json::array({0.0001, 0.00002}));
  // target_op_type, Quark's default list included, is read and written back without a word.
  const QuantConfig targeted = parse(R"({"global_config": {}, "exclude": [], "algo_config": [{"name": "adaround",
      "target_op_type": ["Conv", "ConvTranspose", "InstanceNormalization", "LayerNormalization", "Gemm", "MatMul"]}]})");
  EXPECT_EQ(algorithm_recipe(targeted).reconstruction->op_types.size(), 6u);
  EXPECT_EQ(config_to_json(targeted, ConfigShape::kQuark)["algo_config"][0]["target_op_type"][2], "InstanceNormalization");
  const QuantConfig none = parse(R"({"global_config": {}, "exclude": [], "algo_config": [{"name": "adaround", "lr_adjust": []}]})");
  EXPECT_FALSE(algorithm_recipe(none).reconstruction->lr_adjust);
  EXPECT_TRUE(warnings.warnings().empty());
}

// An AdaRoundConfig as Quark writes it lists every parameter: those at values that ask for what
// mixprec does anyway pass without a word, the others make one warning for the entry.
TEST(QuarkConfigTest, UnusedReconstructionParametersMakeOneWarningAndOnlyWhereTheyMatter) {
  const WarningCollector warnings;
  const QuantConfig config = parse(R"({"global_config": {}, "exclude": [], "algo_config": [{"name": "adaround",
      "num_iterations": 10, "optim_device": "cpu", "infer_device": "cpu", "fixed_seed": 7, "early_stop": false,
      "output_qdq": false, "parallel": false, "mem_opt_level": 1, "log_period": 100, "ref_model_path": null,
      "batch_size": 4, "num_batches": 2, "output_index": null}]})");
  EXPECT_EQ(config.algorithms, (std::vector<AlgorithmEntry>{{.name = "adaround", .num_iterations = 10}}));
  ASSERT_EQ(warnings.warnings().size(), 1u);
  EXPECT_PRED2(contains, warnings.warnings()[0],
               "algo_config[0] has batch_size, num_batches, output_index, parameters of Quark's adaround that mixprec does "
               "not use");
  parse(R"({"global_config": {}, "exclude": [], "algo_config": [{"name": "adaround", "output_qdq": true}]})");
  ASSERT_EQ(warnings.warnings().size(), 2u);
  EXPECT_PRED2(contains, warnings.warnings()[1], "algo_config[0].output_qdq is a parameter of Quark's adaround that mixprec does not use");
}

TEST(QuarkConfigTest, EveryEnumSpellingAndSupportedDataType) {
  struct Case {
    std::string tensor;
    TensorQuantSpec expected;
  };
  const Case cases[] = {
      // MinMax with power-of-two scales is PowerOfTwo_NonOverflow (as Quark maps it); against
      // extra_options.CalibMethod MinMax it is the inherited method, whose XInt8 ranges are the same.
      {tensor("Int8", "PowerOf2", "MinMax"), {.format = FormatId::kXInt8}},
      {tensor("Int8", "PowerOf2", "MinMSE"), {.format = FormatId::kXInt8, .calib_method = CalibMethod::kPowerOfTwoMinMse}},
      {tensor("Int8", "PowerOf2", "Percentile"), {.format = FormatId::kXInt8, .calib_method = CalibMethod::kPercentile}},
      {tensor("Int8", "Float32", "MinMax"), {.format = FormatId::kInt8}},  // the inherited method
      {tensor("Int8", "Float32", "MinMSE"), {.format = FormatId::kInt8, .calib_method = CalibMethod::kMinMse}},
      {tensor("Int8", "Float32", "Entropy", "Channel"),
       {.format = FormatId::kInt8, .per_channel = true, .calib_method = CalibMethod::kEntropy}},
      {tensor("UInt8", "Float32", "MinMax", "Tensor", false), {.format = FormatId::kUInt8, .symmetric = false}},
      {tensor("Int16"), {.format = FormatId::kInt16}},
      {tensor("UInt16", "Float32", "MinMax", "Channel", false), {.format = FormatId::kUInt16, .symmetric = false, .per_channel = true}},
      {tensor("BFloat16"), {.format = FormatId::kBFloat16}},
      {tensor("Float16"), {.format = FormatId::kFloat16}},
      {tensor("BFP16"), {.format = FormatId::kBfp16}},
      {tensor("MX4"), {.format = FormatId::kMx4}},
      {tensor("MX6"), {.format = FormatId::kMx6}},
      {tensor("MX9"), {.format = FormatId::kMx9}},
      {tensor("MXInt8"), {.format = FormatId::kMxInt8}},
      {tensor("MXFP8E4M3"), {.format = FormatId::kMxFp8E4M3}},
      {tensor("MXFP8E5M2"), {.format = FormatId::kMxFp8E5M2}},
      {tensor("MXFP6E3M2"), {.format = FormatId::kMxFp6E3M2}},
      {tensor("MXFP6E2M3"), {.format = FormatId::kMxFp6E2M3}},
      {tensor("MXFP4E2M1"), {.format = FormatId::kMxFp4E2M1}},
      // Without the class prefix (Olive's), and without scale type or granularity.
      {R"({"symmetric": true, "scale_type": "PowerOf2", "calibration_method": "MinMSE", "quant_granularity": "Tensor",
           "data_type": "Int8"})",
       {.format = FormatId::kXInt8, .calib_method = CalibMethod::kPowerOfTwoMinMse}},
      {R"({"data_type": "Int16", "calibration_method": "CalibMethod.Entropy"})",
       {.format = FormatId::kInt16, .calib_method = CalibMethod::kEntropy}},
  };
  for (const Case& c : cases) {
    const QuantConfig config = parse(with_global(c.tensor));
    EXPECT_EQ(config.global.input_tensors, c.expected) << c.tensor;
  }
}

TEST(QuarkConfigTest, InheritedValuesFollowTheExtraOptions) {
  // extra_options.CalibMethod as Quark spells it for the format, ActivationSymmetric: inherited.
  const QuantConfig config = parse(R"({"global_config": {
      "input_tensors": )" + tensor("UInt8", "Float32", "Percentile", "Tensor", false) +
                                   R"(, "output_tensors": )" + tensor("Int8", "PowerOf2", "MinMSE") +
                                   R"(, "weight": )" + tensor("Int8", "PowerOf2", "MinMax") + R"(},
      "extra_options": {"CalibMethod": "Percentile", "ActivationSymmetric": false}})");
  EXPECT_EQ(config.global.input_tensors, spec(FormatId::kUInt8));
  EXPECT_EQ(config.global.output_tensors, (TensorQuantSpec{.format = FormatId::kXInt8, .calib_method = CalibMethod::kPowerOfTwoMinMse}));
  EXPECT_EQ(config.global.weight, (TensorQuantSpec{.format = FormatId::kXInt8, .calib_method = CalibMethod::kPowerOfTwoNonOverflow}));
  // A cast is not calibrated: what it says otherwise is a warning, not a setting.
  const WarningCollector warnings;
  EXPECT_EQ(parse(with_global(tensor("BFloat16", "Float32", "Entropy", "Tensor", false))).global.input_tensors,
            spec(FormatId::kBFloat16));
  EXPECT_EQ(count_containing(warnings.warnings(), "has no effect on BFloat16 (a cast, not calibrated)"), 2u);
  EXPECT_EQ(parse(with_global(tensor("MX9", "Float32", "MinMSE"))).global.input_tensors, spec(FormatId::kMx9));
  EXPECT_EQ(count_containing(warnings.warnings(), "has no effect on MX9 (a block format, not calibrated)"), 1u);
}

TEST(QuarkConfigTest, ExcludeNamesPatternsAndSubgraphs) {
  const WarningCollector warnings;
  const QuantConfig config = parse(R"({"global_config": {}, "exclude": [
      "/a.b/Conv[0]", "^/head/.*", "^/x/.*/Conv", "^/exact", ["/s", "/e"], [["/s1", "/s2"], ["/e1", "/e2"]]]})");
  EXPECT_EQ(config.exclude.node_names,
            (std::vector<std::string>{R"(/a\.b/Conv\[0\])", "^/head/.*", "^/x/.*/Conv", R"(\^/exact)"}));
  EXPECT_EQ(config.exclude.subgraphs, (std::vector<std::pair<std::string, std::string>>{
                                          {"/s", "/e"}, {"/s1", "/e1"}, {"/s1", "/e2"}, {"/s2", "/e1"}, {"/s2", "/e2"}}));
  ASSERT_EQ(warnings.warnings().size(), 2u);
  EXPECT_PRED2(contains, warnings.warnings()[0], "exclude[2] is matched against whole node names");
  EXPECT_PRED2(contains, warnings.warnings()[1], "exclude[3] starts with '^' but has no \".*\": matched as an exact node name");
}

// --- Errors name the key path and what is accepted -----------------------------------------------

// Int4 weights in groups: Quark's QuantGranularity.Group has no size, so it reads as groups of
// 32 along the reduction axis (said), and a config with groups of 32 writes back as Group.
TEST(QuarkConfigTest, Int4GroupWeightsReadAsGroupsOf32) {
  const WarningCollector warnings;
  const std::string text = R"({"exclude": [], "global_config": {"input_tensors": )" + tensor("Int8") +
                           R"(, "weight": )" + tensor("UInt4", "Float32", "MinMax", "Group", false) + "}}";
  const QuantConfig grouped = parse(text);
  ASSERT_TRUE(grouped.global.weight);
  EXPECT_EQ(grouped.global.weight->format, FormatId::kUInt4);
  EXPECT_EQ(grouped.global.weight->group_size, 32);
  EXPECT_EQ(count_containing(warnings.warnings(), "weight.quant_granularity Group: Quark's QConfig names no group size"), 1u);
  const Json back = config_to_json(grouped, ConfigShape::kQuark);
  EXPECT_EQ(back["global_config"]["weight"]["quant_granularity"], "QuantGranularity.Group");
  EXPECT_EQ(back["global_config"]["weight"]["data_type"], "UInt4");
  EXPECT_EQ(parse_config(back, kLabel), grouped);
  EXPECT_PRED2(contains, parse_error(R"({"exclude": [], "global_config": {"weight": )" +
                                     tensor("BFloat16", "Float32", "MinMax", "Group") + "}}"),
               "global_config.weight.quant_granularity Group conflicts with BFloat16Spec, which takes one scale per tensor");
}

TEST(QuarkConfigTest, UnsupportedAndConflictingTensorsAreErrors) {
  const std::pair<std::string, std::string> cases[] = {
      {with_global(tensor("UInt32")),
       "quark.json: global_config.input_tensors.data_type UInt32 is not supported yet; supported: Int8, UInt8, Int16, "
       "UInt16, BFloat16, Float16, BFP16, MX4, MX6, MX9, MXInt8, MXFP8E4M3, MXFP8E5M2, MXFP6E3M2, MXFP6E2M3, "
       "MXFP4E2M1, Int4, UInt4, Int32 (as a bias)"},
      {with_global(tensor("Int32")), "data_type Int32 is not supported yet"},  // activations
      {with_global(tensor("Int9")), "global_config.input_tensors.data_type names an unknown data type \"Int9\" (Quark's: Int8, "},
      {with_global(tensor("UInt16", "PowerOf2")),
       "global_config.input_tensors.scale_type PowerOf2 conflicts with data_type UInt16: mixprec's power-of-two scales "
       "are Int8's (XInt8Spec)"},
      {with_global(tensor("BFloat16", "PowerOf2")), "scale_type PowerOf2 conflicts with data_type BFloat16"},
      {with_global(tensor("Int8", "PowerOf2", "MinMSE", "Tensor", false)),
       "global_config.input_tensors.symmetric false conflicts with scale_type PowerOf2 (XInt8Spec is symmetric)"},
      {with_global(tensor("Int8", "PowerOf2", "MinMSE", "Channel")),
       "global_config.input_tensors.quant_granularity Channel conflicts with XInt8Spec, which takes one scale per tensor"},
      {with_global(tensor("BFloat16", "Float32", "MinMax", "Channel")), "Channel conflicts with BFloat16Spec"},
      {with_global(tensor("BFP16", "Float32", "MinMax", "Channel")), "Channel conflicts with BFP16Spec"},
      {with_global(tensor("MX9", "PowerOf2")), "scale_type PowerOf2 conflicts with data_type MX9"},
      {with_global(tensor("Int8", "Float32", "MinMax", "Group")),
       "global_config.input_tensors.quant_granularity Group applies to weights only (groups along the reduction axis)"},
      {with_global(tensor("Int8", "Int16")), "scale_type Int16 is not supported yet; supported: Float32, PowerOf2"},
      {with_global(tensor("Int8", "Float32", "LayerwisePercentile")),
       "calibration_method LayerwisePercentile is not supported yet; supported: MinMax, MinMSE, Percentile, Entropy"},
      {with_global(tensor("Int8", "Float32", "Distribution")), "calibration_method Distribution is not supported yet"},
      {with_global(R"({"data_type": "Int8", "scale_type": "CalibMethod.MinMax"})"),
       "global_config.input_tensors.scale_type names \"CalibMethod.MinMax\", which is not a ScaleType (known: Float32, "
       "PowerOf2, Int16)"},
      {with_global(R"({"data_type": "Int8", "scale_type": "PowerOfTwo"})"),
       "scale_type names an unknown ScaleType \"PowerOfTwo\" (known: Float32, PowerOf2, Int16, with or without \"ScaleType.\")"},
      {with_global(R"({"data_type": "Int8", "calibration_method": "KL"})"), "names an unknown CalibMethod \"KL\""},
      {with_global(R"({"data_type": "Int8", "quant_granularity": "QuantGranularity.Block"})"),
       "names an unknown QuantGranularity \"Block\""},
      {with_global(R"({"data_type": "Int8", "round_method": "half_even"})"),
       "global_config.input_tensors.round_method is not a key of Quark's tensor config (known: symmetric, scale_type, "
       "calibration_method, quant_granularity, data_type)"},
      {with_global(R"({"symmetric": true})"), "global_config.input_tensors must name a data_type"},
      {with_global(R"({"data_type": 8})"), "global_config.input_tensors.data_type must be a string"},
      {with_global(R"({"data_type": "Int8", "symmetric": "yes"})"), "global_config.input_tensors.symmetric must be true or false"},
      {R"({"global_config": {"weights": )" + tensor("Int8") + "}}",
       "global_config.weights is not a key of Quark's layer config (known: input_tensors, weight, bias, output_tensors"},
      {R"({"global_config": {"activation": )" + tensor("Int8") + R"(, "input_tensors": )" + tensor("Int8") + "}}",
       "global_config gives both activation and input_tensors"},
      {R"({"global_config": {"bias": )" + tensor("Int32", "PowerOf2") + "}}",
       "global_config.bias is an Int32 bias, which mixprec quantizes as Int32Bias does"},
      {R"({"global_config": {"bias": )" + tensor("Int32") + R"(}, "extra_options": {"Int32Bias": false}})",
       "global_config.bias.data_type Int32 needs extra_options.Int32Bias true"},
  };
  for (const auto& [text, expected] : cases) EXPECT_PRED2(contains, parse_error(text), expected) << text;
}

TEST(QuarkConfigTest, MalformedListsKeysAndAlgorithmsAreErrors) {
  std::string many_names;
  for (int i = 0; i < 40; ++i) many_names += (i ? ", \"/n" : "\"/n") + std::to_string(i) + "\"";
  const std::pair<std::string, std::string> cases[] = {
      {R"({"global_config": {}, "exclude": [], "specific_layer_config": {"Int16": ["/conv1/Conv"]}})",
       "specific_layer_config must be a list of [layer, [node names]] pairs (Quark's to_dict form)"},
      {R"({"global_config": {}, "specific_layer_config": [[{}, ["/a"], 3]]})",
       "specific_layer_config[0] must be a [layer, [node names]] pair"},
      {R"({"global_config": {}, "specific_layer_config": [[{}, [[["/a"], ["/b"]]]]]})",
       "specific_layer_config[0][1][0] is a subgraph ([start nodes], [end nodes]), which mixprec's specific_layer_config "
       "does not take"},
      {R"({"global_config": {}, "layer_type_config": [[null, "Gemm"]]})", "layer_type_config[0][1] must be a list"},
      {R"({"global_config": {}, "layer_type_config": [["Int16", ["Gemm"]]]})", "layer_type_config[0][0] must be an object"},
      {R"({"global_config": {}, "exclude": [3]})",
       "exclude[0] must be a node name, a ^...* pattern or a [[start nodes], [end nodes]] subgraph"},
      {R"({"global_config": {}, "exclude": [[["/a"], [4]]]})", "exclude[0][1][0] must be a string"},
      {R"({"global_config": {}, "exclude": [[[)" + many_names + "], [" + many_names + "]]]}",
       "exclude[0] names 40 start and 40 end nodes: at most 1024 (start, end) pairs"},
      {R"({"global_config": {}, "exclude": [], "algo_config": [{"name": "gptq"}]})",
       "algo_config[0].name names gptq, which mixprec does not implement yet (implemented: cle, adaround, adaquant, "
       "bias_correction, smooth_quant)"},
      {R"({"global_config": {}, "exclude": [], "algo_config": [{"name": "smooth_quant", "alpha": 2}]})",
       "algo_config[0].alpha must be in [0, 1]"},
      {R"({"global_config": {}, "exclude": [], "algo_config": [{"name": "magic"}]})",
       "algo_config[0].name names an unknown algorithm \"magic\" (Quark's: cle, adaround, adaquant, bias_correction, "
       "smooth_quant, gptq, auto_mixprecision, quarot)"},
      {R"({"global_config": {}, "exclude": [], "algo_config": [{"name": "cle", "alpha": 1}]})",
       "algo_config[0].alpha is not a parameter of Quark's cle (known: cle_steps, cle_scale_append_bias, cle_balance_method"},
      {R"({"global_config": {}, "exclude": [], "algo_config": [{"name": "bias_correction", "mode": "model"}]})",
       "algo_config[0].mode is not a parameter of Quark's bias_correction (it takes none)"},
      {R"({"global_config": {}, "exclude": [], "algo_config": [{"name": "adaround", "num_iterations": 0}]})",
       "algo_config[0].num_iterations must be at least 1"},  // the ranges of mixprec's shape
      {R"({"global_config": {}, "exclude": [], "algo_config": [{"name": "adaround"}, {"name": "adaquant"}]})",
       "lists adaround beside another of adaround/adaquant"},
      {R"({"global_config": {}, "exclude": [], "use_external_data_format": "yes"})", "use_external_data_format must be true or false"},
      {R"({"global_config": {}, "exclude": [], "OpTypesToQuantize": ["Conv"]})",
       "quark.json: OpTypesToQuantize is an extra option: move it under extra_options"},
      {R"({"global_config": {}, "exclude": [], "comment": "mine"})",
       "quark.json: comment is not a key of Quark's QConfig (known: global_config, specific_layer_config, "
       "layer_type_config, exclude, algo_config, use_external_data_format, extra_options, quant_mode, quant_format)"},
      {R"({"global_config": {"weight": {"spec": "Int8Spec", "params": {}}}, "exclude": []})",
       "quark.json: the config mixes mixprec's shape (global_config.weight.spec) with Quark's (exclude is a list)"},
      {R"({"global_config": {}, "exclude": ["^/a/(.*"]})", "exclude.node_names[0]: invalid regex"},
  };
  for (const auto& [text, expected] : cases) EXPECT_PRED2(contains, parse_error(text), expected) << text;
}

// --- Writing Quark's shape, and round trips ------------------------------------------------------

TEST(QuarkConfigTest, WritesQuarksKeysAndSpellings) {
  const Json json = config_to_json(*preset_config("XINT8"), ConfigShape::kQuark);
  std::vector<std::string> keys;
  for (const auto& item : json.items()) keys.push_back(item.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"global_config", "specific_layer_config", "layer_type_config", "exclude",
                                            "algo_config", "use_external_data_format", "extra_options"}));
  EXPECT_EQ(json["global_config"]["input_tensors"], Json::parse(tensor("Int8", "PowerOf2", "MinMSE")));
  EXPECT_EQ(json["global_config"]["bias"], Json::parse(tensor("Int8", "PowerOf2", "MinMSE")));
  EXPECT_EQ(json["extra_options"]["OpTypesToQuantize"], Json(default_op_types_to_quantize()));  // Quark's [] is every op
  EXPECT_EQ(detect_config_shape(json, kLabel), ConfigShape::kQuark);

  const Json u8s8 = config_to_json(*preset_config("U8S8"), ConfigShape::kQuark);
  EXPECT_EQ(u8s8["global_config"]["input_tensors"], Json::parse(tensor("UInt8", "Float32", "MinMax", "Tensor", false)));
  EXPECT_EQ(u8s8["global_config"]["weight"], Json::parse(tensor("Int8", "Float32", "MinMax", "Channel")));
  EXPECT_FALSE(u8s8["global_config"].contains("bias"));  // Int32Bias
  const Json bf16 = config_to_json(*preset_config("BF16"), ConfigShape::kQuark);
  EXPECT_EQ(bf16["global_config"]["weight"], Json::parse(tensor("BFloat16")));
}

TEST(QuarkConfigTest, OursToQuarkToOursIsExact) {
  std::vector<QuantConfig> configs;
  for (const std::string& name : preset_names()) {
    if (name.starts_with("FP8")) {  // Quark's QConfig has no FP8 Q/DQ data type
      EXPECT_PRED2(contains, write_error(*preset_config(name)), "Quark has no data type for " + name + "Spec") << name;
      continue;
    }
    configs.push_back(*preset_config(name));
  }
  configs.push_back(parse_config(Json::parse(testing::kSpecExample), kLabel));
  QuantConfig mixed = *preset_config("A8W8");
  mixed.specific.push_back({.target_node_names = {"/conv2/Conv"},
                            .layer_config = {.input_tensors = TensorQuantSpec{.format = FormatId::kInt16, .calib_method = CalibMethod::kPercentile},
                                             .weight = spec(FormatId::kInt8)}});
  mixed.specific.push_back({.target_node_names = {"^/head/.*"}, .layer_config = {}});  // float
  mixed.layer_types = {{.op_types = {"Gemm"}, .layer_config = std::nullopt},
                       {.op_types = {"Softmax", "GlobalAveragePool"}, .layer_config = LayerConfig{.input_tensors = spec(FormatId::kBFloat16)}}};
  mixed.exclude = {.node_names = {"/relu/Relu", ".*/Flatten", "^/tail/.*"}, .subgraphs = {{"/conv1/Conv", "/relu/Relu"}}};
  mixed.algorithms = {{.name = "cle", .cle_steps = 2}, {.name = "adaquant", .num_iterations = 20}, {.name = "bias_correction"}};
  mixed.use_external_data_format = true;
  mixed.extra.unknown["SimplifyModel"] = false;
  configs.push_back(mixed);

  for (const QuantConfig& config : configs) {
    const QuantConfig back = parse_config(config_to_json(config, ConfigShape::kQuark), kLabel);
    QuantConfig expected = config;
    // ".*/Flatten" is written anchored, Quark's way of saying the whole name.
    for (std::string& name : expected.exclude.node_names) {
      if (name == ".*/Flatten") name = "^(?:.*/Flatten)$";
    }
    EXPECT_EQ(back, expected) << config_to_json(config).dump(2);
    EXPECT_EQ(assign_layers(back, classifier(), kLabel), assign_layers(expected, classifier(), kLabel));
    // The same formats and exclusions as the original (a reason may quote the anchored pattern).
    const std::vector<NodeAssignment> original = assign_layers(config, classifier(), kLabel);
    const std::vector<NodeAssignment> read_back = assign_layers(back, classifier(), kLabel);
    ASSERT_EQ(read_back.size(), original.size());
    for (size_t i = 0; i < original.size(); ++i) {
      EXPECT_EQ(read_back[i].config, original[i].config) << original[i].node_name;
      EXPECT_EQ(read_back[i].excluded, original[i].excluded) << original[i].node_name;
    }
  }
}

TEST(QuarkConfigTest, QuarkToOursToQuarkIsExact) {
  for (const char* text : {kQuarkDocExample, kOliveU8S8, kQuarkMixedInt16}) {
    const QuantConfig config = parse(text);
    const QuantConfig via_ours = parse_config(config_to_json(config), kLabel);
    EXPECT_EQ(via_ours, config) << text;
    const Json quark = config_to_json(via_ours, ConfigShape::kQuark);
    EXPECT_EQ(parse_config(quark, kLabel), config) << quark.dump(2);
    EXPECT_EQ(config_to_json(parse_config(quark, kLabel), ConfigShape::kQuark), quark);  // a fixed point
    EXPECT_EQ(assign_layers(parse_config(quark, kLabel), classifier(), kLabel), assign_layers(config, classifier(), kLabel));
  }
}

TEST(QuarkConfigTest, WhatQuarksShapeCannotSayIsAnError) {
  const auto with_input = [](TensorQuantSpec input) {
    QuantConfig config;
    config.global.input_tensors = input;
    return config;
  };
  EXPECT_PRED2(contains, write_error(with_input({.format = FormatId::kInt8, .ch_axis = 0})),
               "global_config.input_tensors.params.ch_axis has no equivalent in Quark's config shape");
  EXPECT_PRED2(contains, write_error(with_input({.format = FormatId::kXInt8, .calib_method = CalibMethod::kMinMse})),
               "global_config.input_tensors.params.calib_method has no equivalent in Quark's config shape (MinMSE on "
               "XInt8Spec: Quark's CalibMethod.MinMSE with ScaleType.PowerOf2 is PowerOfTwo_MinMSE)");
  EXPECT_PRED2(contains, write_error(with_input({.format = FormatId::kInt8, .calib_method = CalibMethod::kPowerOfTwoMinMse})),
               "(PowerOfTwo_MinMSE on Int8Spec: Quark's CalibMethod.MinMSE with ScaleType.Float32 is MinMSE)");
  TensorQuantSpec rounded{.format = FormatId::kInt8};
  rounded.unknown_params["round_method"] = "half_even";
  EXPECT_PRED2(contains, write_error(with_input(rounded)), "global_config.input_tensors.params.round_method has no equivalent");

  QuantConfig grouped;
  grouped.global.weight = TensorQuantSpec{.format = FormatId::kInt4, .group_size = 64};
  EXPECT_PRED2(contains, write_error(grouped),
               "global_config.weight.params.group_size has no equivalent in Quark's config shape (Quark's "
               "QuantGranularity.Group names no size; only groups of 32 read back as themselves)");

  QuantConfig config;
  config.algorithms = {{.name = "bias_correction", .mode = BiasCorrectionMode::kModel}};
  EXPECT_PRED2(contains, write_error(config), "algo_config[0].mode has no equivalent in Quark's config shape");
  config.algorithms = {{.name = "adaround", .target = ReconstructionTarget::kQuantizedInput}};
  EXPECT_PRED2(contains, write_error(config), "algo_config[0].target has no equivalent");
  config.algorithms.clear();
  config.exclude.node_names = {"/conv[12]"};
  EXPECT_PRED2(contains, write_error(config),
               "exclude.node_names[0] has no equivalent in Quark's config shape (Quark's exclude takes node names and "
               "patterns that start with ^ and contain .*)");
  config.exclude.node_names.clear();
  config.unknown_keys["comment"] = "mine";
  EXPECT_PRED2(contains, write_error(config), "comment has no equivalent in Quark's config shape");
  // With the method inherited, the same methods are fine: extra_options.CalibMethod says them.
  QuantConfig inherited = with_input({.format = FormatId::kXInt8});
  inherited.extra.calib_method = CalibMethod::kMinMse;
  EXPECT_EQ(parse_config(config_to_json(inherited, ConfigShape::kQuark), kLabel), inherited);
}

// --- layer_type_config in the assignment, and in mixprec's shape ----------------------------------

TEST(QuarkConfigTest, SpecificOverLayerTypeOverGlobalAndNullExcludes) {
  const WarningCollector warnings;
  const QuantConfig config = parse(R"({
    "global_config": {"input_tensors": )" + tensor("Int8") + R"(, "weight": )" + tensor("Int8") + R"(},
    "specific_layer_config": [[{"input_tensors": )" + tensor("Int16") + R"(}, ["/conv2/Conv", "/fc/Gemm"]]],
    "layer_type_config": [[{"input_tensors": )" + tensor("BFloat16") + R"(}, ["Conv", "Relu"]],
                          [null, ["Gemm", "LSTM"]]]})");
  const std::vector<NodeAssignment> assignments = assign_layers(config, classifier(), kLabel);
  const auto find = [&](const std::string& name) {
    return *std::ranges::find(assignments, name, &NodeAssignment::node_name);
  };
  EXPECT_EQ(find("/conv1/Conv").config, LayerConfig{.input_tensors = spec(FormatId::kBFloat16)});
  EXPECT_EQ(find("/conv1/Conv").reason, "layer_type_config[0] op type Conv");
  EXPECT_EQ(find("/conv2/Conv").config, LayerConfig{.input_tensors = spec(FormatId::kInt16)});
  EXPECT_EQ(find("/conv2/Conv").reason, "specific_layer_config[0] pattern /conv2/Conv");
  EXPECT_EQ(find("/pool/GlobalAveragePool").reason, "global");
  EXPECT_TRUE(find("/fc/Gemm").excluded);  // null excludes, over specific_layer_config
  EXPECT_EQ(find("/fc/Gemm").reason, "layer_type_config[1] op type Gemm: null layer (kept in float)");
  EXPECT_TRUE(find("/relu/Relu").excluded);  // not in the op types to quantize
  EXPECT_EQ(count_containing(warnings.warnings(), "quark.json: layer_type_config[1]: op type LSTM matches no node"), 1u);
  EXPECT_EQ(count_containing(warnings.warnings(), "layer_type_config[0] gives Relu a layer, but Relu is not in the "
                                                   "default op types to quantize: its nodes stay in float"),
            1u);
  EXPECT_EQ(formats_used(config), (std::vector<FormatId>{FormatId::kInt8, FormatId::kInt16, FormatId::kBFloat16}));
}

TEST(QuarkConfigTest, MixprecsShapeCarriesLayerTypesAndExternalData) {
  const QuantConfig config = parse_config(Json::parse(R"({
    "global_config": {"input_tensors": {"spec": "Int8Spec", "params": {}}},
    "layer_type_config": [{"op_types": ["Gemm"], "layer_config": null},
                          {"op_types": ["Conv"], "layer_config": {"weight": {"spec": "Int16Spec", "params": {}}}}],
    "use_external_data_format": true})"),
                                          kLabel);
  EXPECT_EQ(detect_config_shape(config_to_json(config), kLabel), ConfigShape::kMixprec);
  EXPECT_EQ(config.layer_types[0], (LayerTypeOverride{.op_types = {"Gemm"}, .layer_config = std::nullopt}));
  EXPECT_EQ(config.layer_types[1].layer_config, LayerConfig{.weight = spec(FormatId::kInt16)});
  EXPECT_TRUE(config.use_external_data_format);
  EXPECT_EQ(parse_config(config_to_json(config), kLabel), config);
  EXPECT_EQ(config_to_json(config)["layer_type_config"][0]["layer_config"], Json(nullptr));
  EXPECT_PRED2(contains, parse_error(R"({"layer_type_config": [{"op_types": ["Gemm"]}]})"),
               "layer_type_config[0] must state its layer_config (a layer, or null to keep these op types in float)");
}

}  // namespace
}  // namespace mixprec
