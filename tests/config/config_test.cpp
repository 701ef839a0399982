#include "mixprec/config.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <tuple>

#include "mixprec/error.h"
#include "mixprec/log.h"
#include "mixprec/rewrite.h"
#include "support/messages.h"
#include "support/model_builder.h"
#include "support/spec_example.h"
#include "support/temp_dir.h"

namespace mixprec {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;
using onnx::TensorProto;
using testing::attr_graph;
using testing::ModelBuilder;

constexpr char kLabel[] = "cfg.json";


QuantConfig parse(const std::string& text) { return parse_config(Json::parse(text), kLabel); }

TensorQuantSpec spec(FormatId format) { return TensorQuantSpec{.format = format}; }

LayerConfig all_tensors(FormatId format) {
  return LayerConfig{.input_tensors = spec(format), .weight = spec(format), .bias = spec(format)};
}

// x [1,3,8,8] -> /conv1/Conv -> /backbone/Relu -> /backbone/Conv -> /model/head/conv/Conv
// -> /model/head/Mul -> /Reshape -> y, where /Reshape's shape comes from a shape branch
// /Shape_1 -> /Gather -> /Unsqueeze -> /Concat (no value_info: types must be inferred).
onnx::ModelProto head_model() {
  ModelBuilder builder;
  builder.add_input("x", TensorProto::FLOAT, {1, 3, 8, 8})
      .add_output("y", TensorProto::FLOAT)
      .add_initializer("w1", {4, 3, 3, 3}, testing::deterministic_values(108, 1))
      .add_initializer("w2", {4, 4, 3, 3}, testing::deterministic_values(144, 2))
      .add_initializer("b", {4}, testing::deterministic_values(4, 3))
      .add_initializer("scale", {1}, {0.5f})
      .add_initializer_i64("zero", {}, {0})
      .add_initializer_i64("axes", {1}, {0})
      .add_initializer_i64("rest", {1}, {-1})
      .add_node("Conv", {"x", "w1", "b"}, {"c1"}, {}, "/conv1/Conv")
      .add_node("Relu", {"c1"}, {"r1"}, {}, "/backbone/Relu")
      .add_node("Conv", {"r1", "w2", "b"}, {"c2"}, {}, "/backbone/Conv")
      .add_node("Conv", {"c2", "w2", "b"}, {"c3"}, {}, "/model/head/conv/Conv")
      .add_node("Mul", {"c3", "scale"}, {"m"}, {}, "/model/head/Mul")
      .add_node("Shape", {"m"}, {"s"}, {}, "/Shape_1")
      .add_node("Gather", {"s", "zero"}, {"g"}, {}, "/Gather")
      .add_node("Unsqueeze", {"g", "axes"}, {"u"}, {}, "/Unsqueeze")
      .add_node("Concat", {"u", "rest"}, {"shape"}, {testing::attr_int("axis", 0)}, "/Concat")
      .add_node("Reshape", {"m", "shape"}, {"y"}, {}, "/Reshape");
  return builder.build();
}

const NodeAssignment& find(const std::vector<NodeAssignment>& assignments, const std::string& name) {
  for (const NodeAssignment& assignment : assignments) {
    if (assignment.node_name == name) return assignment;
  }
  throw std::runtime_error("no assignment for " + name);
}

using testing::contains;
using testing::count_containing;

// The kBadInput message of parsing `text`; fails the test when nothing is thrown.
std::string parse_error(const std::string& text) {
  return testing::bad_input_message([&] { parse(text); }, kLabel, text);
}

class ConfigFileTest : public testing::TempDirTest {
 protected:
  std::string write(const std::string& name, const std::string& text) const {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }
};

// --- Loading and saving ------------------------------------------------------------------------

TEST(ConfigJsonTest, SpecExampleLoadsAsWritten) {
  const WarningCollector warnings;
  const QuantConfig config = parse(testing::kSpecExample);

  EXPECT_TRUE(warnings.warnings().empty());
  EXPECT_EQ(config.global, all_tensors(FormatId::kXInt8));
  ASSERT_EQ(config.specific.size(), 1u);
  EXPECT_EQ(config.specific[0].target_node_names, (std::vector<std::string>{"^/model/head/.*", "/conv1/Conv"}));
  EXPECT_EQ(config.specific[0].layer_config, all_tensors(FormatId::kBFloat16));
  EXPECT_EQ(config.exclude.node_names, std::vector<std::string>{"^(/Gather|/Shape_.*)$"});
  EXPECT_TRUE(config.exclude.subgraphs.empty());
  EXPECT_EQ(config.extra.op_types_to_quantize, (std::vector<std::string>{"Conv", "Mul"}));
  EXPECT_TRUE(config.extra.activation_symmetric);
  EXPECT_FALSE(config.extra.use_random_data);
  EXPECT_TRUE(config.extra.convert_bn_to_conv);
  EXPECT_TRUE(config.extra.bf16_qdq_to_cast);
}

TEST(ConfigJsonTest, ReadsParamsAndEveryExtraOption) {
  const QuantConfig config = parse(R"({
    "global_config": {"weight": {"spec": "Int8Spec", "params": {"symmetric": false, "per_channel": true,
                                 "ch_axis": 1, "calib_method": "Percentile"}},
                      "output_tensors": null},
    "extra_options": {"Int32Bias": false, "CalibMethod": "PowerOfTwo_MinMSE", "NumCalibSamples": 8,
                      "OrtCpuFusion": true}})");

  const TensorQuantSpec expected{.format = FormatId::kInt8, .symmetric = false, .per_channel = true, .ch_axis = 1,
                                 .calib_method = CalibMethod::kPercentile};
  EXPECT_EQ(config.global.weight, expected);
  EXPECT_FALSE(config.global.input_tensors);
  EXPECT_FALSE(config.global.output_tensors);
  EXPECT_FALSE(config.extra.int32_bias);
  EXPECT_EQ(config.extra.calib_method, CalibMethod::kPowerOfTwoMinMse);
  EXPECT_EQ(config.extra.num_calib_samples, 8);
  EXPECT_TRUE(config.extra.ort_cpu_fusion);
  EXPECT_FALSE(parse(testing::kSpecExample).extra.ort_cpu_fusion);  // off unless asked for
}

TEST(ConfigJsonTest, WritesTheSameShapeInAStableOrder) {
  const Json json = config_to_json(parse(testing::kSpecExample));

  std::vector<std::string> keys;
  for (const auto& item : json.items()) keys.push_back(item.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"global_config", "specific_layer_config", "exclude", "extra_options"}));
  EXPECT_EQ(json["global_config"]["weight"], Json::parse(R"({"spec": "XInt8Spec", "params": {}})"));
  EXPECT_EQ(json["specific_layer_config"][0]["target_node_names"][0], "^/model/head/.*");
  EXPECT_EQ(json["exclude"]["subgraphs"], Json::array());
  EXPECT_EQ(json["extra_options"]["CalibMethod"], "MinMax");  // every option is written
  EXPECT_EQ(json["extra_options"]["NumCalibSamples"], 100);
  EXPECT_EQ(json["extra_options"]["OrtCpuFusion"], false);
}

TEST(ConfigJsonTest, WrongShapesAndTypesNameTheFileAndTheKey) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"extra_options": {"NumCalibSamples": "many"}})", "cfg.json: extra_options.NumCalibSamples must be an integer"},
      {R"({"extra_options": {"NumCalibSamples": 0}})", "cfg.json: extra_options.NumCalibSamples must be at least 1"},
      {R"({"extra_options": {"ActivationSymmetric": 1}})", "extra_options.ActivationSymmetric must be true or false"},
      {R"({"extra_options": {"OpTypesToQuantize": "Conv"}})", "extra_options.OpTypesToQuantize must be a list"},
      {R"({"extra_options": {"OpTypesToQuantize": ["Conv", 3]}})", "extra_options.OpTypesToQuantize[1] must be a string"},
      {R"({"extra_options": {"CalibMethod": "KL"}})", "names an unknown calibration method \"KL\" (known: MinMax, "},
      {R"({"global_config": {"weight": {"params": {}}}})", "global_config.weight must name a spec"},
      {R"({"global_config": {"weight": {"spec": "Int8Spec", "params": {"ch_axis": 0.5}}}})",
       "global_config.weight.params.ch_axis must be an integer"},
      {R"({"global_config": {"weight": {"spec": "XInt8Spec", "params": {"reduce_range": true}}}})",
       "global_config.weight.params.reduce_range does not apply to XInt8Spec (it halves the code range of 8-bit integer "
       "weights: Int8Spec, UInt8Spec)"},
      {R"({"global_config": {"input_tensors": {"spec": "UInt8Spec", "params": {"reduce_range": true}}}})",
       "global_config.input_tensors.params.reduce_range applies to weights only"},
      {R"({"specific_layer_config": [{"target_node_names": ["a"], "layer_config": {"bias": {"spec": "Int8Spec", "params": {"reduce_range": true}}}}]})",
       "specific_layer_config[0].layer_config.bias.params.reduce_range applies to weights only"},
      {R"({"specific_layer_config": {"/conv1/Conv": {}}})", "use the list-of-objects form"},
      {R"({"exclude": {"subgraphs": [{"start": "/a", "end": "/b"}]}})",
       "exclude.subgraphs[0] must be a [start, end] pair of node names"},
      {R"({"exclude": {"node_names": ["(unclosed"]}})", "exclude.node_names[0]: invalid regex \"(unclosed\""},
      {R"({"specific_layer_config": [{"target_node_names": ["^/a/(.*"], "layer_config": {}}]})",
       "specific_layer_config[0].target_node_names[0]: invalid regex"},
      {"[]", "cfg.json: the config must be an object"},
  };
  for (const auto& [text, expected] : cases) EXPECT_PRED2(contains, parse_error(text), expected) << text;
}

TEST(ConfigJsonTest, UseUnsignedReluIsReadAndWrittenInBothShapes) {
  const QuantConfig off = parse(R"({})");
  EXPECT_FALSE(off.extra.use_unsigned_relu);  // Quark's default
  const QuantConfig on = parse(R"({"extra_options": {"UseUnsignedReLU": true}})");
  EXPECT_TRUE(on.extra.use_unsigned_relu);
  EXPECT_TRUE(on.extra.unknown.empty());  // a known key: no warning, not kept aside
  EXPECT_EQ(parse_config(config_to_json(on), kLabel), on);
  EXPECT_EQ(config_to_json(on, ConfigShape::kQuark)["extra_options"]["UseUnsignedReLU"], true);
  EXPECT_TRUE(parse_config(config_to_json(on, ConfigShape::kQuark), kLabel).extra.use_unsigned_relu);
  EXPECT_TRUE(quantize_options(on).unsigned_relu);
  EXPECT_THROW(parse(R"({"extra_options": {"UseUnsignedReLU": "yes"}})"), Error);
}

TEST(ConfigJsonTest, AlgoConfigAndQuarkExtraOptionsGiveOneRecipe) {
  const QuantConfig listed = parse(R"({"algo_config": [{"name": "cle", "cle_steps": 3}, {"name": "bias_correction"}]})");
  ASSERT_EQ(listed.algorithms.size(), 2u);
  EXPECT_EQ(listed.algorithms[0], (AlgorithmEntry{.name = "cle", .cle_steps = 3}));
  const AlgorithmRecipe recipe = algorithm_recipe(listed);
  ASSERT_TRUE(recipe.cle);
  EXPECT_EQ(recipe.cle->steps, 3);
  EXPECT_EQ(recipe.bias_correction, BiasCorrectionMode::kLayer);  // the default
  EXPECT_EQ(recipe.names(), (std::vector<std::string>{"cle", "bias_correction"}));
  EXPECT_EQ(parse_config(config_to_json(listed), kLabel), listed);  // round trip

  const QuantConfig extra = parse(R"({"extra_options": {"IncludeCLE": true, "CLESteps": -1, "ReplaceClip6Relu": true,
                                                         "CLEScaleAppendBias": false, "BiasCorrection": true,
                                                         "CLEMulTails": true}})");
  const AlgorithmRecipe same = algorithm_recipe(extra);
  EXPECT_EQ(same.cle, (CleSettings{.steps = -1, .scale_append_bias = false, .replace_clip6_relu = true, .mul_tails = true}));
  EXPECT_EQ(same.bias_correction, BiasCorrectionMode::kLayer);
  EXPECT_EQ(parse_config(config_to_json(extra), kLabel), extra);
  // Quark's shape carries CLEMulTails in extra_options too (Quark's own CLE has no such setting).
  EXPECT_EQ(config_to_json(extra, ConfigShape::kQuark)["extra_options"]["CLEMulTails"], true);
  EXPECT_TRUE(parse_config(config_to_json(extra, ConfigShape::kQuark), kLabel).extra.cle_mul_tails);
  const QuantConfig layer = parse(R"({"algo_config": [{"name": "bias_correction", "mode": "model"}]})");
  EXPECT_EQ(algorithm_recipe(layer).bias_correction, BiasCorrectionMode::kModel);
  EXPECT_EQ(parse_config(config_to_json(layer), kLabel), layer);

  // Nothing asked: nothing runs, and the saved config has no algo_config key.
  EXPECT_TRUE(algorithm_recipe(parse(testing::kSpecExample)).empty());
  EXPECT_FALSE(config_to_json(parse(testing::kSpecExample)).contains("algo_config"));
}

// An added pass (a plugin's): algo_config names it with parameters of its own, kept as given
// through both shapes; the recipe runs float passes after CLE and quantized ones last.
TEST(ConfigJsonTest, AnAddedPassIsNamedInAlgoConfigWithItsOwnParameters) {
  const auto noop = [](onnx::ModelProto&, const std::string&, const std::string&) {};
  const auto unknown = parse_error(R"({"algo_config": [{"name": "test-late-pass"}]})");
  EXPECT_PRED2(contains, unknown, "algo_config[0].name names an unknown algorithm \"test-late-pass\"");
  add_pass({.name = "test-early-pass", .origin = "test", .stage = PassStage::kFloat, .run = noop});
  add_pass({.name = "test-late-pass", .origin = "test", .stage = PassStage::kQuantized, .run = noop});
  EXPECT_THROW(add_pass({.name = "cle", .origin = "test", .run = noop}), Error);
  EXPECT_THROW(add_pass({.name = "test-late-pass", .origin = "test", .run = noop}), Error);
  EXPECT_THROW(add_pass({.name = "test-no-function", .origin = "test"}), Error);
  const QuantConfig c = parse(R"({"algo_config": [{"name": "test-late-pass", "depth": [1, 2]}, {"name": "bias_correction"},
                                                  {"name": "test-early-pass"}, {"name": "cle"}]})");
  ASSERT_EQ(c.algorithms.size(), 4u);
  EXPECT_EQ(c.algorithms[0].params, Json::parse(R"({"depth": [1, 2]})"));
  const AlgorithmRecipe recipe = algorithm_recipe(c);
  EXPECT_EQ(recipe.names(), (std::vector<std::string>{"cle", "test-early-pass", "bias_correction", "test-late-pass"}));
  ASSERT_EQ(recipe.passes_of(PassStage::kQuantized).size(), 1u);
  EXPECT_EQ(recipe.passes_of(PassStage::kQuantized)[0], (PassCall{.name = "test-late-pass", .stage = PassStage::kQuantized,
                                                                   .params = R"({"depth":[1,2]})"}));
  EXPECT_EQ(parse_config(config_to_json(c), kLabel), c);
  EXPECT_EQ(parse_config(config_to_json(c, ConfigShape::kQuark), kLabel).algorithms, c.algorithms);
}

TEST(ConfigJsonTest, PerChannelOnAPerTensorSpecIsAWarning) {
  const WarningCollector warnings;
  parse(R"({"global_config": {"weight": {"spec": "XInt8Spec", "params": {"per_channel": true}},
                              "input_tensors": {"spec": "Int8Spec", "params": {"per_channel": true}}}})");
  ASSERT_EQ(warnings.warnings().size(), 1u);
  EXPECT_PRED2(contains, warnings.warnings()[0],
               "cfg.json: global_config.weight.params.per_channel is ignored: XInt8Spec takes one scale per tensor");
}

TEST(ConfigJsonTest, AdaRoundAndAdaQuantFromAlgoConfigOrQuarksFastFinetune) {
  const QuantConfig listed =
      parse(R"({"algo_config": [{"name": "adaround", "num_iterations": 200, "learning_rate": 0.05, "reg_param": 0.1}]})");
  const AlgorithmRecipe recipe = algorithm_recipe(listed);
  ASSERT_TRUE(recipe.reconstruction);
  EXPECT_EQ(*recipe.reconstruction, (ReconstructionSettings{.method = ReconstructionMethod::kAdaRound,
                                                            .iterations = 200, .learning_rate = 0.05, .reg_param = 0.1}));
  EXPECT_EQ(recipe.names(), (std::vector<std::string>{"adaround"}));
  EXPECT_EQ(parse_config(config_to_json(listed), kLabel), listed);  // round trip
  // Unset: the method's defaults (AdaQuant 3000 steps at 1e-5).
  const AlgorithmRecipe plain = algorithm_recipe(parse(R"({"algo_config": [{"name": "adaquant"}, {"name": "cle"}]})"));
  EXPECT_EQ(plain.reconstruction, default_reconstruction(ReconstructionMethod::kAdaQuant));
  EXPECT_EQ(plain.reconstruction->iterations, 3000);
  EXPECT_EQ(plain.names(), (std::vector<std::string>{"cle", "adaquant"}));  // the order they run

  // Quark's spelling: IncludeFastFT + FastFinetune; its keys mixprec does not use are warnings,
  // except at values that ask for what mixprec does (EarlyStop false, OptimDevice "cpu", a
  // FixedSeed: nothing is drawn). All are kept when the config is saved.
  const WarningCollector warnings;
  const QuantConfig quark = parse(R"({"extra_options": {"IncludeFastFT": true, "FastFinetune": {
      "OptimAlgorithm": "adaquant", "NumIterations": 50, "LearningRate": 0.001, "BatchSize": 2, "EarlyStop": false,
      "OptimDevice": "CPU", "FixedSeed": 1705472343}}})");
  const AlgorithmRecipe same = algorithm_recipe(quark);
  ASSERT_TRUE(same.reconstruction);
  EXPECT_EQ(same.reconstruction->method, ReconstructionMethod::kAdaQuant);
  EXPECT_EQ(same.reconstruction->iterations, 50);
  EXPECT_EQ(same.reconstruction->learning_rate, 0.001);
  ASSERT_EQ(warnings.warnings().size(), 1u);
  EXPECT_PRED2(contains, warnings.warnings()[0],
               "extra_options.FastFinetune.BatchSize is a key of Quark's FastFinetune that mixprec does not use");
  EXPECT_EQ(quark.extra.fast_finetune.unknown.size(), 4u);
  EXPECT_EQ(parse_config(config_to_json(quark), kLabel), quark);
  parse(R"({"extra_options": {"FastFinetune": {"EarlyStop": true, "BatchSiz": 2}}})");
  ASSERT_EQ(warnings.warnings().size(), 3u);
  EXPECT_PRED2(contains, warnings.warnings()[1], "extra_options.FastFinetune.EarlyStop is a key of Quark's FastFinetune");
  EXPECT_PRED2(contains, warnings.warnings()[2], "extra_options.FastFinetune.BatchSiz is not a known key");
  // Quark's DropRatio (QDrop): FastFinetune's or the entry's own, which wins.
  EXPECT_EQ(algorithm_recipe(parse(R"({"extra_options": {"IncludeFastFT": true, "FastFinetune": {"DropRatio": 0.5}}})"))
                .reconstruction->drop_ratio,
            0.5);
  const QuantConfig dropped = parse(R"({"extra_options": {"IncludeFastFT": true, "FastFinetune": {"DropRatio": 0.5}},
                                        "algo_config": [{"name": "adaround", "drop_ratio": 0.75}]})");
  EXPECT_EQ(algorithm_recipe(dropped).reconstruction->drop_ratio, 0.75);
  EXPECT_EQ(parse_config(config_to_json(dropped), kLabel), dropped);
  EXPECT_EQ(default_reconstruction(ReconstructionMethod::kAdaQuant).drop_ratio, 1.0);  // Quark's default
  // Quark's update_bias: AdaQuant's; AdaRound ignores it, as Quark does, with a warning.
  const QuantConfig biased = parse(R"({"algo_config": [{"name": "adaquant", "update_bias": true}]})");
  EXPECT_TRUE(algorithm_recipe(biased).reconstruction->update_bias);
  EXPECT_EQ(parse_config(config_to_json(biased), kLabel), biased);
  EXPECT_TRUE(algorithm_recipe(parse(R"({"extra_options": {"IncludeFastFT": true, "FastFinetune": {
      "OptimAlgorithm": "adaquant", "UpdateBias": true}}})")).reconstruction->update_bias);
  {
    const WarningCollector ignored;
    const AlgorithmRecipe rounding = algorithm_recipe(parse(R"({"extra_options": {"IncludeFastFT": true, "FastFinetune": {
        "OptimAlgorithm": "adaround", "UpdateBias": true}}})"));
    EXPECT_FALSE(rounding.reconstruction->update_bias);
    ASSERT_EQ(ignored.warnings().size(), 1u);
    EXPECT_PRED2(contains, ignored.warnings()[0], "extra_options.FastFinetune.UpdateBias is ignored: AdaRound learns only");
  }
  // Quark's selective_update: both methods, from the entry or FastFinetune; off by default.
  EXPECT_FALSE(default_reconstruction(ReconstructionMethod::kAdaRound).selective_update);
  const QuantConfig selective = parse(R"({"algo_config": [{"name": "adaround", "selective_update": true}]})");
  EXPECT_TRUE(algorithm_recipe(selective).reconstruction->selective_update);
  EXPECT_EQ(parse_config(config_to_json(selective), kLabel), selective);
  const QuantConfig selective_ft = parse(R"({"extra_options": {"IncludeFastFT": true, "FastFinetune": {
      "OptimAlgorithm": "adaquant", "SelectiveUpdate": true}}})");
  EXPECT_TRUE(algorithm_recipe(selective_ft).reconstruction->selective_update);
  EXPECT_EQ(parse_config(config_to_json(selective_ft), kLabel), selective_ft);
  EXPECT_FALSE(algorithm_recipe(parse(R"({"extra_options": {"IncludeFastFT": true, "FastFinetune": {"SelectiveUpdate": true}},
      "algo_config": [{"name": "adaround", "selective_update": false}]})")).reconstruction->selective_update);
  // Quark's beta_range and warm_start: AdaRound's regulariser schedule (defaults 20 -> 2 after
  // 0.2 of the steps, Quark's too); AdaQuant has none and ignores them with a warning.
  const ReconstructionSettings rounding_defaults = default_reconstruction(ReconstructionMethod::kAdaRound);
  EXPECT_EQ(rounding_defaults.beta_start, 20.0);
  EXPECT_EQ(rounding_defaults.beta_end, 2.0);
  EXPECT_EQ(rounding_defaults.warm_start, 0.2);
  const QuantConfig scheduled = parse(R"({"algo_config": [{"name": "adaround", "beta_range": [10, 1], "warm_start": 0.3}]})");
  const ReconstructionSettings schedule = *algorithm_recipe(scheduled).reconstruction;
  EXPECT_EQ(schedule.beta_start, 10.0);
  EXPECT_EQ(schedule.beta_end, 1.0);
  EXPECT_EQ(schedule.warm_start, 0.3);
  EXPECT_EQ(parse_config(config_to_json(scheduled), kLabel), scheduled);
  const QuantConfig scheduled_ft = parse(R"({"extra_options": {"IncludeFastFT": true, "FastFinetune": {
      "BetaRange": [16, 4], "WarmStart": 0.1}}})");
  EXPECT_EQ(algorithm_recipe(scheduled_ft).reconstruction->beta_start, 16.0);
  EXPECT_EQ(algorithm_recipe(scheduled_ft).reconstruction->warm_start, 0.1);
  EXPECT_EQ(parse_config(config_to_json(scheduled_ft), kLabel), scheduled_ft);
  {
    const WarningCollector ignored;
    const ReconstructionSettings quant = *algorithm_recipe(parse(R"({"extra_options": {"IncludeFastFT": true, "FastFinetune": {
        "OptimAlgorithm": "adaquant", "WarmStart": 0.5}}})")).reconstruction;
    EXPECT_EQ(quant.warm_start, default_reconstruction(ReconstructionMethod::kAdaQuant).warm_start);
    ASSERT_EQ(ignored.warnings().size(), 1u);
    EXPECT_PRED2(contains, ignored.warnings()[0], "extra_options.FastFinetune.WarmStart is ignored: it schedules AdaRound's");
  }
  // Quark's lr_adjust [threshold, rate], for both methods; unset and [] (Quark's default ()) adjust nothing.
  EXPECT_FALSE(rounding_defaults.lr_adjust);
  const QuantConfig adjusted = parse(R"({"algo_config": [{"name": "adaquant", "lr_adjust": [0.001, 2e-5]}]})");
  EXPECT_EQ(algorithm_recipe(adjusted).reconstruction->lr_adjust,
            (ReconstructionSettings::LearningRateAdjust{.threshold = 0.001, .learning_rate = 2e-5}));
  EXPECT_EQ(parse_config(config_to_json(adjusted), kLabel), adjusted);
  const QuantConfig adjusted_ft = parse(R"({"extra_options": {"IncludeFastFT": true, "FastFinetune": {"LRAdjust": [0, 0.5]}}})");
  EXPECT_EQ(algorithm_recipe(adjusted_ft).reconstruction->lr_adjust,
            (ReconstructionSettings::LearningRateAdjust{.threshold = 0, .learning_rate = 0.5}));
  EXPECT_EQ(parse_config(config_to_json(adjusted_ft), kLabel), adjusted_ft);
  EXPECT_FALSE(algorithm_recipe(parse(R"({"algo_config": [{"name": "adaround", "lr_adjust": []}]})")).reconstruction->lr_adjust);
  // The entry's value over FastFinetune's, as for every other parameter.
  EXPECT_EQ(algorithm_recipe(parse(R"({"extra_options": {"IncludeFastFT": true, "FastFinetune": {"LRAdjust": [0, 0.5]}},
      "algo_config": [{"name": "adaround", "lr_adjust": [1, 0.01]}]})")).reconstruction->lr_adjust,
            (ReconstructionSettings::LearningRateAdjust{.threshold = 1, .learning_rate = 0.01}));
  // Quark's target_op_type: the op types learned (unset: every one mixprec learns). Quark's
  // InstanceNormalization and LayerNormalization are accepted and match no layer.
  EXPECT_TRUE(rounding_defaults.op_types.empty());
  const QuantConfig narrowed = parse(R"({"algo_config": [{"name": "adaround", "target_op_type": ["Conv", "Gemm"]}]})");
  EXPECT_EQ(algorithm_recipe(narrowed).reconstruction->op_types, (std::vector<std::string>{"Conv", "Gemm"}));
  EXPECT_EQ(parse_config(config_to_json(narrowed), kLabel), narrowed);
  const QuantConfig narrowed_ft = parse(R"({"extra_options": {"IncludeFastFT": true, "FastFinetune": {
      "TargetOpType": ["Conv", "ConvTranspose", "InstanceNormalization", "LayerNormalization", "Gemm", "MatMul"]}}})");
  EXPECT_EQ(algorithm_recipe(narrowed_ft).reconstruction->op_types.size(), 6u);
  EXPECT_EQ(parse_config(config_to_json(narrowed_ft), kLabel), narrowed_ft);
  // FastFinetune alone (no IncludeFastFT) runs nothing, as in Quark.
  EXPECT_TRUE(algorithm_recipe(parse(R"({"extra_options": {"FastFinetune": {"NumIterations": 5}}})")).empty());
}

TEST(ConfigJsonTest, ScaleSearchTakesItsParametersAndIsNotWrittenInQuarksShape) {
  const QuantConfig listed =
      parse(R"({"algo_config": [{"name": "adaround"}, {"name": "scale_search", "max_shift": 1, "num_samples": 16, "finer": true}]})");
  const AlgorithmRecipe recipe = algorithm_recipe(listed);
  ASSERT_TRUE(recipe.scale_search);
  EXPECT_EQ(*recipe.scale_search, (ScaleSearchSettings{.max_shift = 1, .sweeps = 1, .samples = 16, .finer = true}));
  EXPECT_EQ(recipe.names(), (std::vector<std::string>{"scale_search", "adaround"}));  // the order they run
  EXPECT_EQ(parse_config(config_to_json(listed), kLabel), listed);
  EXPECT_EQ(algorithm_recipe(parse(R"({"algo_config": [{"name": "scale_search"}]})")).scale_search, ScaleSearchSettings{});
  try {
    config_to_json(listed, ConfigShape::kQuark);
    ADD_FAILURE() << "Quark has no scale search";
  } catch (const Error& e) {
    EXPECT_PRED2(contains, e.message(), "algo_config[1].name");
    EXPECT_PRED2(contains, e.message(), "Quark has no activation scale search");
  }
}

TEST(ConfigJsonTest, AlgoConfigErrorsNameTheEntry) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"algo_config": [{"name": "magic"}]})",
       // Passes another test in this process added follow the built-in names.
       "algo_config[0].name names an unknown algorithm \"magic\" (known: cle, adaround, adaquant, bias_correction, "
       "smoothquant, scale_search"},
      {R"({"algo_config": [{"name": "gptq"}]})", "\"gptq\", which mixprec does not implement yet"},
      {R"({"algo_config": [{"name": "smoothquant", "alpha": -0.1}]})", "algo_config[0].alpha must be in [0, 1]"},
      {R"({"extra_options": {"SmoothAlpha": 1.5}})", "extra_options.SmoothAlpha must be in [0, 1]"},
      {R"({"extra_options": {"SmoothAlpha": 0.7}, "algo_config": [{"name": "smoothquant", "alpha": 0.6}]})",
       "algo_config[0].alpha is 0.60 but extra_options.SmoothAlpha is 0.70: state alpha once"},
      {R"({"algo_config": [{"name": "smoothquant", "cle_steps": 2}]})",
       "algo_config[0].cle_steps is not a parameter of smoothquant (known: alpha)"},
      {R"({"algo_config": [{"name": "adaround", "num_iterations": 0}]})",
       "algo_config[0].num_iterations must be at least 1"},
      {R"({"algo_config": [{"name": "adaquant", "learning_rate": -1}]})",
       "algo_config[0].learning_rate must be greater than 0"},
      {R"({"algo_config": [{"name": "adaround", "reg_param": -0.5}]})", "algo_config[0].reg_param must not be negative"},
      {R"({"algo_config": [{"name": "adaquant", "reg_param": 0.1}]})",
       "algo_config[0].reg_param is not a parameter of adaquant (known: num_iterations, learning_rate, target, drop_ratio, "
       "update_bias, selective_update, lr_adjust, target_op_type)"},
      {R"({"algo_config": [{"name": "adaround", "update_bias": true}]})",
       "algo_config[0].update_bias is not a parameter of adaround"},
      {R"({"algo_config": [{"name": "adaround", "drop_ratio": 1.5}]})", "algo_config[0].drop_ratio must be in [0, 1]"},
      {R"({"algo_config": [{"name": "adaround", "beta_range": [20]}]})",
       "algo_config[0].beta_range must be two numbers above 0, [start, end]"},
      {R"({"algo_config": [{"name": "adaround", "beta_range": [0, 2]}]})", "algo_config[0].beta_range must be two numbers above 0"},
      {R"({"algo_config": [{"name": "adaround", "warm_start": 1}]})", "algo_config[0].warm_start must be in [0, 1)"},
      {R"({"algo_config": [{"name": "adaround", "lr_adjust": [0.1]}]})",
       "algo_config[0].lr_adjust must be [threshold, learning rate], threshold at least 0 and the rate above 0"},
      {R"({"algo_config": [{"name": "adaquant", "lr_adjust": [-1, 0.1]}]})", "algo_config[0].lr_adjust must be [threshold"},
      {R"({"extra_options": {"FastFinetune": {"LRAdjust": [0.1, 0]}}})", "extra_options.FastFinetune.LRAdjust must be [threshold"},
      {R"({"algo_config": [{"name": "adaround", "target_op_type": []}]})",
       "algo_config[0].target_op_type must list at least one op type"},
      {R"({"extra_options": {"FastFinetune": {"TargetOpType": ["Conv", "Relu"]}}})",
       "extra_options.FastFinetune.TargetOpType lists \"Relu\", which is not an op type AdaRound and AdaQuant learn (Conv, "
       "ConvTranspose, Gemm, MatMul)"},
      {R"({"extra_options": {"FastFinetune": {"BetaRange": [2, -1]}}})",
       "extra_options.FastFinetune.BetaRange must be two numbers above 0"},
      {R"({"algo_config": [{"name": "adaquant", "beta_range": [20, 2]}]})",
       "algo_config[0].beta_range is not a parameter of adaquant"},
      {R"({"extra_options": {"FastFinetune": {"DropRatio": -0.1}}})", "extra_options.FastFinetune.DropRatio must be in [0, 1]"},
      {R"({"algo_config": [{"name": "adaround", "drop_ratio": 0.5, "target": "quantized_input"}]})",
       "algo_config[0].target is quantized_input, which runs no float model, but drop_ratio 0.50 mixes in the float model's input"},
      {R"({"algo_config": [{"name": "adaquant", "target": "quantized_input"}],
           "extra_options": {"IncludeFastFT": true, "FastFinetune": {"OptimAlgorithm": "adaquant", "DropRatio": 0.25}}})",
       "algo_config[0].target is quantized_input, which runs no float model, but drop_ratio 0.25"},
      {R"({"algo_config": [{"name": "adaround"}, {"name": "adaquant"}]})",
       "algo_config[0] lists adaround beside another of adaround/adaquant"},
      {R"({"algo_config": [{"name": "adaround", "learning_rate": "fast"}]})",
       "algo_config[0].learning_rate must be a finite number"},
      {R"({"algo_config": [{"name": "adaround"}],
           "extra_options": {"IncludeFastFT": true, "FastFinetune": {"OptimAlgorithm": "adaquant"}}})",
       "algo_config[0].name is adaround but extra_options.FastFinetune.OptimAlgorithm is adaquant"},
      {R"({"extra_options": {"FastFinetune": {"NumIterations": 0}}})",
       "extra_options.FastFinetune.NumIterations must be at least 1"},
      {R"({"extra_options": {"FastFinetune": {"OptimAlgorithm": "sgd"}}})",
       "extra_options.FastFinetune.OptimAlgorithm names an unknown method \"sgd\" (known: adaround, adaquant)"},
      {R"({"algo_config": [{"name": "cle", "num_iterations": 3}]})",
       "algo_config[0].num_iterations is not a parameter of cle (known: cle_steps)"},
      {R"({"algo_config": [{"name": "bias_correction", "cle_steps": 3}]})", "is not a parameter of bias_correction"},
      {R"({"algo_config": [{"name": "bias_correction", "mode": "exact"}]})",
       "algo_config[0].mode names an unknown bias correction mode \"exact\" (known: model, layer)"},
      {R"({"algo_config": [{"name": "cle", "cle_steps": 0}]})", "algo_config[0].cle_steps must be at least 1, or -1"},
      {R"({"algo_config": [{"cle_steps": 1}]})", "algo_config[0] must name an algorithm"},
      {R"({"algo_config": [{"name": "cle"}, {"name": "cle"}]})", "algo_config[1] lists cle a second time"},
      {R"({"algo_config": [{"name": "cle", "cle_steps": 2}], "extra_options": {"CLESteps": 3}})",
       "algo_config[0].cle_steps is 2 but extra_options.CLESteps is 3"},
      {R"({"extra_options": {"CLESteps": -2}})", "extra_options.CLESteps must be at least 1, or -1"},
      {R"({"algo_config": [{"name": "scale_search", "max_shift": 0}]})", "algo_config[0].max_shift must be at least 1"},
      {R"({"algo_config": [{"name": "scale_search", "alpha": 0.5}]})",
       "algo_config[0].alpha is not a parameter of scale_search (known: max_shift, sweeps, num_samples, finer)"},
  };
  for (const auto& [text, expected] : cases) EXPECT_PRED2(contains, parse_error(text), expected) << text;
}

TEST(ConfigJsonTest, UnknownSpecIsAnErrorListingTheKnownSpecs) {
  const std::string message = parse_error(R"({"global_config": {"weight": {"spec": "Int9Spec", "params": {}}}})");
  EXPECT_PRED2(contains, message, "cfg.json: global_config.weight.spec names an unknown spec \"Int9Spec\"");
  for (const FormatTraits& format : all_formats()) EXPECT_PRED2(contains, message, format.spec_name);
}

TEST(ConfigJsonTest, UnknownKeysAndOptionsWarnAndAreKeptOnSave) {
  const WarningCollector warnings;
  const QuantConfig config = parse(R"({
    "comment": "made by hand",
    "global_config": {"input_tensors": {"spec": "Int8Spec", "params": {"round_method": "half_even"}}},
    "extra_options": {"FooBar": 3, "NumCalibSamples": 8}})");

  EXPECT_EQ(warnings.warnings().size(), 3u);
  for (const char* key : {"cfg.json: comment ", "global_config.input_tensors.params.round_method ", "extra_options.FooBar "}) {
    EXPECT_EQ(count_containing(warnings.warnings(), key), 1u) << key;
  }
  EXPECT_EQ(config.extra.unknown["FooBar"], 3);
  EXPECT_EQ(config.global.input_tensors->unknown_params["round_method"], "half_even");

  const Json saved = config_to_json(config);
  EXPECT_EQ(saved["comment"], "made by hand");
  EXPECT_EQ(saved["extra_options"]["FooBar"], 3);
  EXPECT_EQ(saved["global_config"]["input_tensors"]["params"]["round_method"], "half_even");
  EXPECT_EQ(parse_config(saved, kLabel), config);
}

TEST_F(ConfigFileTest, UnknownSpecInAFileNamesTheFile) {
  const std::string file = write("bad.json", R"({"global_config": {"weight": {"spec": "Int2Spec", "params": {}}}})");
  try {
    load_config(file);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::kBadInput);
    EXPECT_EQ(error.file(), file);
    EXPECT_PRED2(contains, error.what(), file + ": global_config.weight.spec names an unknown spec \"Int2Spec\"");
  }
}

TEST_F(ConfigFileTest, UnreadableOrMalformedFiles) {
  try {
    load_config(path("missing.json"));
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::kIo);
  }
  try {
    load_config(write("broken.json", R"({"global_config": )"));
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::kBadInput);
    EXPECT_PRED2(contains, error.what(), "not valid JSON");
  }
}

TEST_F(ConfigFileTest, SaveThenLoadReproducesConfigAndAssignment) {
  const onnx::ModelProto model = head_model();
  std::vector<QuantConfig> configs = {parse(testing::kSpecExample)};
  for (const std::string& name : preset_names()) configs.push_back(*preset_config(name));

  for (const QuantConfig& config : configs) {
    const std::string file = path("saved.json");
    save_config(config, file);
    const QuantConfig loaded = load_config(file);
    EXPECT_EQ(loaded, config) << config_to_json(config).dump();
    EXPECT_EQ(assign_layers(loaded, model, file), assign_layers(config, model, kLabel));
  }
}

// --- Presets -----------------------------------------------------------------------------------

TEST(PresetTest, EachPresetHasItsDocumentedStructure) {
  struct Expected {
    const char* name;
    FormatId activations;
    bool activation_symmetric;
    FormatId weights;
    bool per_channel;
    std::optional<FormatId> bias;  // nullopt: Int32Bias
    CalibMethod calib_method;
    bool ort_cpu_fusion = false;  // also quantizes Div and Concat beyond the default op types
  };
  const Expected rows[] = {
      {"XINT8", FormatId::kXInt8, true, FormatId::kXInt8, false, FormatId::kXInt8, CalibMethod::kPowerOfTwoMinMse},
      {"A8W8", FormatId::kInt8, true, FormatId::kInt8, true, std::nullopt, CalibMethod::kMinMax},
      {"U8S8", FormatId::kUInt8, false, FormatId::kInt8, true, std::nullopt, CalibMethod::kMinMax, true},
      {"A16W8", FormatId::kInt16, true, FormatId::kInt8, true, std::nullopt, CalibMethod::kMinMax},
      {"BF16", FormatId::kBFloat16, true, FormatId::kBFloat16, false, FormatId::kBFloat16, CalibMethod::kMinMax},
      {"FP16", FormatId::kFloat16, true, FormatId::kFloat16, false, FormatId::kFloat16, CalibMethod::kMinMax},
      {"S16S16", FormatId::kInt16, true, FormatId::kInt16, true, std::nullopt, CalibMethod::kMinMax},
  };
  std::vector<std::string> names;
  for (const Expected& row : rows) {
    names.emplace_back(row.name);
    const std::optional<QuantConfig> config = preset_config(row.name);
    ASSERT_TRUE(config) << row.name;
    EXPECT_EQ(config->global.input_tensors, spec(row.activations)) << row.name;
    EXPECT_EQ(config->global.weight, (TensorQuantSpec{.format = row.weights, .per_channel = row.per_channel})) << row.name;
    EXPECT_EQ(config->global.bias, row.bias ? std::optional(spec(*row.bias)) : std::nullopt) << row.name;
    EXPECT_FALSE(config->global.output_tensors) << row.name;
    EXPECT_EQ(config->extra.activation_symmetric, row.activation_symmetric) << row.name;
    EXPECT_EQ(config->extra.int32_bias, !row.bias) << row.name;
    EXPECT_EQ(config->extra.calib_method, row.calib_method) << row.name;
    EXPECT_EQ(config->extra.ort_cpu_fusion, row.ort_cpu_fusion) << row.name;
    std::vector<std::string> op_types;
    if (row.ort_cpu_fusion) {
      op_types = default_op_types_to_quantize();
      op_types.insert(op_types.end(), {"Div", "Concat"});
    }
    EXPECT_EQ(config->extra.op_types_to_quantize, op_types) << row.name;
    EXPECT_TRUE(config->specific.empty() && config->exclude.node_names.empty()) << row.name;
  }
  const std::vector<std::string> all = preset_names();
  EXPECT_EQ(std::vector<std::string>(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(names.size())), names);
}

TEST(PresetTest, RecoveryPresetsAreTheirBaseWithCleAndTheMethod) {
  const std::tuple<const char*, const char*, const char*> rows[] = {
      {"XINT8_ADAROUND", "XINT8", "adaround"}, {"XINT8_ADAQUANT", "XINT8", "adaquant"},
      {"A8W8_ADAROUND", "A8W8", "adaround"},   {"A8W8_ADAQUANT", "A8W8", "adaquant"},
      {"A16W8_ADAROUND", "A16W8", "adaround"}, {"A16W8_ADAQUANT", "A16W8", "adaquant"},
      {"U8S8_ADAROUND", "U8S8", "adaround"},
  };
  for (const auto& [name, base, method] : rows) {
    const std::optional<QuantConfig> config = preset_config(name);
    ASSERT_TRUE(config) << name;
    QuantConfig expected = *preset_config(base);
    expected.algorithms = {{.name = "cle"}, {.name = method}};
    EXPECT_EQ(*config, expected) << name;
    const std::vector<std::string> names = preset_names();
    EXPECT_NE(std::ranges::find(names, name), names.end()) << name;
    EXPECT_EQ(algorithm_recipe(*config).names(), (std::vector<std::string>{"cle", method})) << name;
  }
}

TEST(PresetTest, NamesAreCaseInsensitiveAndUnknownNamesAreNotFound) {
  EXPECT_EQ(preset_config("xint8"), preset_config("XINT8"));
  EXPECT_EQ(preset_config("a16w8"), preset_config("A16W8"));
  EXPECT_FALSE(preset_config("INT4"));
  EXPECT_FALSE(preset_config(""));
}

// --- Assignment --------------------------------------------------------------------------------

TEST(AssignLayersTest, SpecExampleAssignsEveryNode) {
  const WarningCollector warnings;
  const std::vector<NodeAssignment> assignments = assign_layers(parse(testing::kSpecExample), head_model(), kLabel);

  EXPECT_TRUE(warnings.warnings().empty());
  ASSERT_EQ(assignments.size(), 10u);
  const LayerConfig bf16 = all_tensors(FormatId::kBFloat16);
  const struct {
    const char* node;
    LayerConfig config;
    bool excluded;
    const char* reason;
  } expected[] = {
      {"/conv1/Conv", bf16, false, "specific_layer_config[0] pattern /conv1/Conv"},
      {"/backbone/Relu", {}, true, "op type Relu not in OpTypesToQuantize"},
      {"/backbone/Conv", all_tensors(FormatId::kXInt8), false, "global"},
      {"/model/head/conv/Conv", bf16, false, "specific_layer_config[0] pattern ^/model/head/.*"},
      {"/model/head/Mul", {.input_tensors = spec(FormatId::kBFloat16)}, false,
       "specific_layer_config[0] pattern ^/model/head/.*"},  // Mul has no weight or bias input
      {"/Shape_1", {}, true, "exclude.node_names pattern ^(/Gather|/Shape_.*)$"},
      {"/Gather", {}, true, "exclude.node_names pattern ^(/Gather|/Shape_.*)$"},
      {"/Unsqueeze", {}, true, "outputs are integer or bool: a shape/index computation (never quantized)"},
      {"/Concat", {}, true, "outputs are integer or bool: a shape/index computation (never quantized)"},
      {"/Reshape", {}, true, "op type Reshape not in OpTypesToQuantize"},
  };
  for (size_t i = 0; i < std::size(expected); ++i) {
    const NodeAssignment& assignment = assignments[i];
    EXPECT_EQ(assignment.node_name, expected[i].node);
    EXPECT_EQ(assignment.config, expected[i].config) << expected[i].node;
    EXPECT_EQ(assignment.excluded, expected[i].excluded) << expected[i].node;
    EXPECT_EQ(assignment.reason, expected[i].reason) << expected[i].node;
  }
  EXPECT_EQ(assignments[4].op_type, "Mul");
}

TEST(AssignLayersTest, DefaultOpTypesAndShapeOpsThatAreNeverQuantized) {
  QuantConfig config = *preset_config("XINT8");
  const std::vector<NodeAssignment> by_default = assign_layers(config, head_model(), kLabel);
  EXPECT_EQ(find(by_default, "/backbone/Relu").reason, "op type Relu not in the default op types to quantize");
  EXPECT_FALSE(find(by_default, "/model/head/Mul").excluded);
  EXPECT_EQ(find(by_default, "/Shape_1").reason, "shape/index op Shape (never quantized)");
  for (const char* op : {"Conv", "ConvTranspose", "Gemm", "MatMul"}) {
    EXPECT_EQ(std::ranges::count(default_op_types_to_quantize(), op), 1) << op;
  }

  config.extra.op_types_to_quantize = {"Conv", "Shape", "Gather", "Concat", "Reshape"};
  const WarningCollector warnings;
  const std::vector<NodeAssignment> listed = assign_layers(config, head_model(), kLabel);
  EXPECT_TRUE(find(listed, "/Shape_1").excluded);
  EXPECT_TRUE(find(listed, "/Gather").excluded);  // Gather of a shape: int64 inferred, not declared
  EXPECT_TRUE(find(listed, "/Concat").excluded);
  EXPECT_FALSE(find(listed, "/Reshape").excluded);  // moves float data
  ASSERT_EQ(warnings.warnings().size(), 1u);
  EXPECT_PRED2(contains, warnings.warnings()[0], "OpTypesToQuantize lists Shape, but Shape nodes are shape/index ops");
}

// --ffn-only: the global layer moves to the named nodes, first, so the config's own entries
// (here --fp-nodes' BF16 entry) still win; every other node is float.
TEST(AssignLayersTest, QuantizeOnlyNodesKeepsTheRestFloatAndTheConfigsOwnEntriesWin) {
  QuantConfig config = *preset_config("XINT8");
  const LayerConfig xint8 = config.global;
  keep_nodes_at(config, {"/model/head/conv/Conv"}, FormatId::kBFloat16);
  quantize_only_nodes(config, {"/backbone/Conv", "/model/head/conv/Conv"}, kLabel);
  ASSERT_EQ(config.specific.size(), 2u);
  EXPECT_EQ(config.specific[0].layer_config, xint8);
  EXPECT_EQ(config.global, LayerConfig{});
  const std::vector<NodeAssignment> a = assign_layers(config, head_model(), kLabel);
  EXPECT_EQ(find(a, "/backbone/Conv").config, xint8);
  EXPECT_EQ(find(a, "/model/head/conv/Conv").config.weight->format, FormatId::kBFloat16);
  EXPECT_FALSE(find(a, "/conv1/Conv").config.weight.has_value());
  EXPECT_FALSE(find(a, "/conv1/Conv").config.input_tensors.has_value());
  EXPECT_FALSE(find(a, "/model/head/Mul").config.input_tensors.has_value());

  QuantConfig none = *preset_config("XINT8");
  EXPECT_PRED2(contains, testing::bad_input_message([&] { quantize_only_nodes(none, {}, kLabel); }, kLabel, "no nodes"),
               "--ffn-only: the model has no MLP block");
  QuantConfig typed = *preset_config("XINT8");
  typed.layer_types.push_back({.op_types = {"Conv"}, .layer_config = typed.global});
  EXPECT_PRED2(contains,
               testing::bad_input_message([&] { quantize_only_nodes(typed, {"/backbone/Conv"}, kLabel); }, kLabel, "types"),
               "layer_type_config gives Conv a layer");
}

TEST(AssignLayersTest, DeclaredIntegerOutputsAreNeverQuantized) {
  onnx::ModelProto model = ModelBuilder()
                               .add_input("ids", TensorProto::FLOAT, {4})
                               .add_output("out", TensorProto::INT64, {4})
                               .add_node("Custom", {"ids"}, {"out"}, {}, "/custom")
                               .build();
  QuantConfig config = *preset_config("A8W8");
  config.extra.op_types_to_quantize = {"Custom"};
  EXPECT_TRUE(assign_layers(config, model, kLabel)[0].excluded);
  model.mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()->set_elem_type(TensorProto::FLOAT);
  EXPECT_FALSE(assign_layers(config, model, kLabel)[0].excluded);
}

// A decomposed LayerNorm followed by a MatMul.
TEST(AssignLayersTest, DecomposedLayerNormStaysInFloatEvenWhenListed) {
  const onnx::ModelProto model =
      ModelBuilder()
          .add_input("x", TensorProto::FLOAT, {1, 4, 8})
          .add_output("out", TensorProto::FLOAT, {1, 4, 8})
          .add_initializer("two", {}, {2.0f})
          .add_initializer("eps", {}, {1e-5f})
          .add_initializer("gamma", {8}, testing::deterministic_values(8, 4))
          .add_initializer("beta", {8}, testing::deterministic_values(8, 5))
          .add_initializer("w", {8, 8}, testing::deterministic_values(64, 6))
          .add_node("ReduceMean", {"x"}, {"mean"}, {testing::attr_ints("axes", {-1})}, "/ln/ReduceMean")
          .add_node("Sub", {"x", "mean"}, {"d"}, {}, "/ln/Sub")
          .add_node("Pow", {"d", "two"}, {"sq"}, {}, "/ln/Pow")
          .add_node("ReduceMean", {"sq"}, {"var"}, {testing::attr_ints("axes", {-1})}, "/ln/ReduceMean_1")
          .add_node("Add", {"var", "eps"}, {"ve"}, {}, "/ln/Add")
          .add_node("Sqrt", {"ve"}, {"sd"}, {}, "/ln/Sqrt")
          .add_node("Div", {"d", "sd"}, {"n"}, {}, "/ln/Div")
          .add_node("Mul", {"n", "gamma"}, {"scaled"}, {}, "/ln/Mul")
          .add_node("Add", {"scaled", "beta"}, {"ln"}, {}, "/ln/Add_1")
          .add_node("MatMul", {"ln", "w"}, {"out"}, {}, "/fc/MatMul")
          .build();
  QuantConfig config = *preset_config("A8W8");
  config.extra.op_types_to_quantize = {"ReduceMean", "Sub", "Pow", "Add", "Sqrt", "Div", "Mul", "MatMul"};

  const WarningCollector warnings;
  const std::vector<NodeAssignment> assignments = assign_layers(config, model, kLabel);

  std::vector<std::string> quantized;
  for (const NodeAssignment& assignment : assignments) {
    if (!assignment.excluded) quantized.push_back(assignment.node_name);
  }
  EXPECT_EQ(quantized, (std::vector<std::string>{"/ln/Add_1", "/fc/MatMul"}));
  EXPECT_EQ(find(assignments, "/ln/Pow").reason, "normalization arithmetic Pow (never quantized)");
  EXPECT_EQ(find(assignments, "/ln/Add").reason,
            "normalization arithmetic: Add reads ReduceMean /ln/ReduceMean_1 (never quantized)");
  EXPECT_EQ(warnings.warnings().size(), 4u);  // ReduceMean, Pow, Sqrt, Div are listed
  EXPECT_EQ(count_containing(warnings.warnings(), "are normalization arithmetic and are never quantized"), 4u);

  // The U8S8 preset lists Div itself (for hard-swish's "/ 6"): on this model every Div
  // normalizes, but the user never listed it, so there is nothing to warn about.
  const WarningCollector preset_warnings;
  assign_layers(*preset_config("U8S8"), model, kLabel);
  EXPECT_EQ(count_containing(preset_warnings.warnings(), "OpTypesToQuantize lists"), 0u);
  EXPECT_TRUE(is_preset_op_types(preset_config("U8S8")->extra.op_types_to_quantize));
  EXPECT_FALSE(is_preset_op_types(config.extra.op_types_to_quantize));
}

TEST(AssignLayersTest, DivisionByAConstantIsScalingNotNormalization) {
  onnx::AttributeProto six;
  six.set_name("value");
  six.set_type(onnx::AttributeProto::TENSOR);
  six.mutable_t()->set_data_type(TensorProto::FLOAT);
  six.mutable_t()->add_float_data(6.0f);
  const onnx::ModelProto model = ModelBuilder()
                                     .add_input("x", TensorProto::FLOAT, {1, 8})
                                     .add_output("y", TensorProto::FLOAT, {1, 8})
                                     .add_initializer("six", {}, {6.0f})
                                     .add_node("Mul", {"x", "x"}, {"m"}, {}, "/hs/Mul")
                                     .add_node("Div", {"m", "six"}, {"d"}, {}, "/hs/Div")
                                     .add_node("Mul", {"x", "d"}, {"g"}, {}, "/se/Mul")
                                     .add_node("Constant", {}, {"six_c"}, {six}, "/six")
                                     .add_node("Div", {"g", "six_c"}, {"e"}, {}, "/hs/Div_1")
                                     .add_node("Div", {"e", "g"}, {"y"}, {}, "/norm/Div")
                                     .build();
  QuantConfig config = *preset_config("A8W8");
  config.extra.op_types_to_quantize = {"Mul", "Div"};
  WarningCollector warnings;
  const std::vector<NodeAssignment> assignments = assign_layers(config, model, kLabel);
  // Listing Div has an effect here (two Divs scale), so it is not warned about.
  EXPECT_TRUE(warnings.warnings().empty()) << warnings.warnings().front();

  for (const char* node : {"/hs/Mul", "/hs/Div", "/se/Mul", "/hs/Div_1"}) {
    EXPECT_FALSE(find(assignments, node).excluded) << node << ": " << find(assignments, node).reason;
  }
  EXPECT_EQ(find(assignments, "/norm/Div").reason, "normalization arithmetic Div (never quantized)");
}

TEST(AssignLayersTest, WeightAndBiasSpecsNeedInitializerInputs) {
  const onnx::ModelProto model = ModelBuilder()
                                     .add_input("x", TensorProto::FLOAT, {1, 8})
                                     .add_input("k", TensorProto::FLOAT, {8, 8})
                                     .add_output("y", TensorProto::FLOAT, {1, 8})
                                     .add_initializer("w", {8, 8}, testing::deterministic_values(64, 7))
                                     .add_initializer("c", {8}, testing::deterministic_values(8, 8))
                                     .add_node("Gemm", {"x", "w", "c"}, {"g"}, {}, "/fc/Gemm")
                                     .add_node("MatMul", {"g", "k"}, {"a"}, {}, "/attn/MatMul")
                                     .add_node("MatMul", {"a", "w"}, {"y"}, {}, "/proj/MatMul")
                                     .build();
  QuantConfig config;
  config.global = all_tensors(FormatId::kInt8);
  const std::vector<NodeAssignment> assignments = assign_layers(config, model, kLabel);

  EXPECT_EQ(assignments[0].config, all_tensors(FormatId::kInt8));
  EXPECT_EQ(assignments[0].reason, "global");
  EXPECT_EQ(assignments[1].config, LayerConfig{.input_tensors = spec(FormatId::kInt8)});
  EXPECT_EQ(assignments[1].reason, "global; weight left in float (input 1 is not an initializer)");
  EXPECT_EQ(assignments[2].config, (LayerConfig{.input_tensors = spec(FormatId::kInt8), .weight = spec(FormatId::kInt8)}));
}

TEST(AssignLayersTest, LastMatchingOverrideReplacesTheGlobalConfigAsAWhole) {
  const QuantConfig config = parse(R"({
    "global_config": {"input_tensors": {"spec": "Int8Spec", "params": {}}, "weight": {"spec": "Int8Spec", "params": {}}},
    "specific_layer_config": [
      {"target_node_names": ["^/.*Conv"], "layer_config": {"input_tensors": {"spec": "BFloat16Spec", "params": {}}}},
      {"target_node_names": ["/conv1/Conv"], "layer_config": {"weight": {"spec": "Float16Spec", "params": {}}}}]})");
  const std::vector<NodeAssignment> assignments = assign_layers(config, head_model(), kLabel);

  EXPECT_EQ(find(assignments, "/conv1/Conv").config, LayerConfig{.weight = spec(FormatId::kFloat16)});
  EXPECT_EQ(find(assignments, "/conv1/Conv").reason, "specific_layer_config[1] pattern /conv1/Conv");
  EXPECT_EQ(find(assignments, "/backbone/Conv").config, LayerConfig{.input_tensors = spec(FormatId::kBFloat16)});
  EXPECT_EQ(find(assignments, "/model/head/Mul").config, LayerConfig{.input_tensors = spec(FormatId::kInt8)});
}

TEST(AssignLayersTest, ExcludeBySubgraphCoversEveryNodeOnAPath) {
  QuantConfig config = *preset_config("XINT8");
  config.exclude.subgraphs = {{"/backbone/Relu", "/model/head/Mul"}};
  const std::vector<NodeAssignment> assignments = assign_layers(config, head_model(), kLabel);

  for (const char* node : {"/backbone/Relu", "/backbone/Conv", "/model/head/conv/Conv", "/model/head/Mul"}) {
    EXPECT_EQ(find(assignments, node).reason, "exclude.subgraphs[0] /backbone/Relu -> /model/head/Mul") << node;
    EXPECT_TRUE(find(assignments, node).excluded) << node;
  }
  EXPECT_FALSE(find(assignments, "/conv1/Conv").excluded);  // before the start
  EXPECT_EQ(find(assignments, "/Shape_1").reason, "shape/index op Shape (never quantized)");  // after the end
}

TEST(AssignLayersTest, ExcludeSubgraphErrorsAndWarnings) {
  QuantConfig config = *preset_config("XINT8");
  config.exclude.subgraphs = {{"/conv1/Conv", "/nowhere"}, {"/nothing", "/Reshape"}};
  try {
    assign_layers(config, head_model(), kLabel);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::kBadInput);
    EXPECT_PRED2(contains, error.what(),
                 "cfg.json: exclude.subgraphs names nodes the model does not have: \"/nowhere\" (exclude.subgraphs[0]), "
                 "\"/nothing\" (exclude.subgraphs[1])");
  }

  config.exclude.subgraphs = {{"/model/head/Mul", "/conv1/Conv"}};  // runs backwards
  const WarningCollector warnings;
  const std::vector<NodeAssignment> assignments = assign_layers(config, head_model(), kLabel);
  EXPECT_FALSE(find(assignments, "/conv1/Conv").excluded);
  ASSERT_EQ(warnings.warnings().size(), 1u);
  EXPECT_PRED2(contains, warnings.warnings()[0], "exclude.subgraphs[0]: no data path from \"/model/head/Mul\"");
}

// --- Node selection: patterns and names --------------------------------------------------------

TEST(NodeSelectionTest, RegexOnlyWithCaretAndDotStarElseExactName) {
  const QuantConfig config = parse(R"({
    "global_config": {"input_tensors": {"spec": "Int8Spec", "params": {}}},
    "specific_layer_config": [{"target_node_names": ["^/backbone/.*", "/model/head/.*", "^/conv1/Conv"],
                               "layer_config": {"input_tensors": {"spec": "BFloat16Spec", "params": {}}}}]})");
  const WarningCollector warnings;
  const std::vector<NodeAssignment> assignments = assign_layers(config, head_model(), kLabel);

  EXPECT_EQ(find(assignments, "/backbone/Conv").reason, "specific_layer_config[0] pattern ^/backbone/.*");
  EXPECT_EQ(find(assignments, "/model/head/conv/Conv").reason, "global");  // no '^': an exact name
  EXPECT_EQ(find(assignments, "/conv1/Conv").reason, "global");            // no ".*": an exact name
  EXPECT_EQ(warnings.warnings().size(), 3u);
  EXPECT_EQ(count_containing(warnings.warnings(), "cfg.json: specific_layer_config[0].target_node_names[2]: "
                                                  "\"^/conv1/Conv\" starts with '^' but has no \".*\""),
            1u);
  EXPECT_EQ(count_containing(warnings.warnings(), "matches no node"), 2u);
}

TEST(NodeSelectionTest, ExcludeRegexesMatchWholeNames) {
  QuantConfig config = *preset_config("XINT8");
  config.exclude.node_names = {"/conv1", ".*/Conv"};
  const WarningCollector warnings;
  const std::vector<NodeAssignment> assignments = assign_layers(config, head_model(), kLabel);

  for (const NodeAssignment& assignment : assignments) {
    EXPECT_EQ(assignment.reason == "exclude.node_names pattern .*/Conv", assignment.node_name.ends_with("/Conv"))
        << assignment.node_name;
  }
  ASSERT_EQ(warnings.warnings().size(), 1u);
  EXPECT_PRED2(contains, warnings.warnings()[0], "exclude.node_names[0]: pattern \"/conv1\" matches no node");
}

// main: Relu (unnamed), Relu "Relu_2", Relu (unnamed), If (unnamed) whose two branches each
// hold one unnamed Relu.
onnx::ModelProto partly_named_model() {
  const auto branch = [](const std::string& out) {
    return ModelBuilder().add_output(out, TensorProto::FLOAT, {4}).add_node("Relu", {"x"}, {out}).build_graph();
  };
  onnx::ModelProto model =
      ModelBuilder()
          .add_input("x", TensorProto::FLOAT, {4})
          .add_input("cond", TensorProto::BOOL, {})
          .add_output("y", TensorProto::FLOAT, {4})
          .add_output("z", TensorProto::FLOAT, {4})
          .add_node("Relu", {"x"}, {"a"})
          .add_node("Relu", {"a"}, {"b"}, {}, "Relu_2")
          .add_node("Relu", {"b"}, {"y"})
          .add_node("If", {"cond"}, {"z"}, {attr_graph("then_branch", branch("t")), attr_graph("else_branch", branch("e"))})
          .build();
  // The builder names every node; clear the names this model must not have.
  for (int index : {0, 2, 3}) model.mutable_graph()->mutable_node(index)->clear_name();
  for (onnx::AttributeProto& branch_attribute : *model.mutable_graph()->mutable_node(3)->mutable_attribute()) {
    branch_attribute.mutable_g()->mutable_node(0)->clear_name();
  }
  return model;
}

TEST(NodeSelectionTest, EnsureNodeNamesGivesUniqueStableNames) {
  onnx::ModelProto model = partly_named_model();
  const std::vector<NodeAssignment> before = assign_layers(*preset_config("BF16"), model, kLabel);

  EXPECT_EQ(ensure_node_names(model), 5u);
  std::vector<std::string> names;
  for (const onnx::NodeProto& node : model.graph().node()) names.push_back(node.name());
  EXPECT_EQ(names, (std::vector<std::string>{"Relu_0", "Relu_2", "Relu_2_1", "If_3"}));
  EXPECT_EQ(model.graph().node(3).attribute(0).g().node(0).name(), "Relu_0_1");
  EXPECT_EQ(model.graph().node(3).attribute(1).g().node(0).name(), "Relu_0_2");

  // assign_layers matched the unnamed nodes by these very names.
  for (size_t i = 0; i < names.size(); ++i) EXPECT_EQ(before[i].node_name, names[i]);
  EXPECT_EQ(assign_layers(*preset_config("BF16"), model, kLabel), before);

  EXPECT_EQ(ensure_node_names(model), 0u);  // idempotent
}

}  // namespace
}  // namespace mixprec
