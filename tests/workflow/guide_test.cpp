// guide: the phases in order on a model whose sensitive layer is known, the modes, and the
// environment script.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "mixprec/error.h"
#include "mixprec/guide.h"
#include "mixprec/guide_report.h"
#include "mixprec/log.h"
#include "mixprec/model_io.h"
#include "support/explore_models.h"
#include "support/model_builder.h"
#include "support/temp_dir.h"

namespace mixprec {
namespace {
namespace fs = std::filesystem;
using testing::ModelBuilder;

class GuideTest : public testing::TempDirTest {
 protected:
  GuideParams params() {
    save_model(testing::one_sensitive_layer_model(), path("model.onnx"));
    GuideParams p;
    p.setup.model_path = path("model.onnx");
    p.setup.work_dir = path("work");
    p.setup.calibration = testing::test_calibration_data();
    p.setup.evaluation = testing::test_evaluation_data();
    p.setup.criterion.target = parse_target("psnr>30");
    p.latency_runs = 3;
    return p;
  }
  static std::vector<std::string> names(const GuideReport& r) {
    std::vector<std::string> out;
    for (const auto& phase : r.phases) out.push_back(phase.name);
    return out;
  }
  static const GuidePhase& phase(const GuideReport& r, const std::string& name) {
    for (const auto& phase : r.phases) {
      if (phase.name == name) return phase;
    }
    throw std::runtime_error("no phase " + name);
  }
  // The phase as the CLI prints it.
  static std::vector<std::string> lines(const GuideReport& r, const std::string& name) {
    return guide_phase_lines(phase(r, name));
  }
};

TEST_F(GuideTest, FullModeRunsThePhasesInOrderAndExploresWhenTheConfigMisses) {
  GuideParams p = params();
  p.explore = true;
  p.stage = GuideStage::kExec;
  std::vector<std::string> reported;
  const GuideReport r = guide(p, [&](const GuidePhase& phase) { reported.push_back(phase.name); });
  const std::vector<std::string> expected = {"analyze", "config",  "calibrate", "baseline", "quantize",
                                             "recover", "validate", "explore",   "compile",  "exec"};
  EXPECT_EQ(names(r), expected);
  EXPECT_EQ(reported, expected);  // each phase is reported as it ends
  EXPECT_NE(lines(r, "config").at(0).find("proposed XINT8 for ve2"), std::string::npos);
  EXPECT_EQ(phase(r, "validate").status, PhaseStatus::kFail);  // full XINT8 rounds "mix" away
  // A proposed config tries the device's calibration methods on the same statistics.
  EXPECT_NE(lines(r, "quantize").at(0).find("PowerOfTwo_MinMSE"), std::string::npos);
  EXPECT_NE(lines(r, "quantize").at(0).find("PowerOfTwo_NonOverflow"), std::string::npos);
  // The plan's recovery ladder ran before explore: AdaRound on the two MatMuls, measured on the
  // same statistics. It cannot recover what the activation's outlier costs, so it fails too.
  ASSERT_NE(r.result<RecoverResult>(), nullptr);
  const RecoverResult& recover = *r.result<RecoverResult>();
  EXPECT_EQ(phase(r, "recover").status, PhaseStatus::kFail);
  ASSERT_EQ(recover.trials.size(), 2u);
  EXPECT_TRUE(recover.trials[0].algorithms.empty());
  EXPECT_EQ(recover.trials[1].algorithms, std::vector<std::string>{"adaround"});
  EXPECT_EQ(recover.trials[1].learned_layers + recover.trials[1].reused_layers, 2u);
  EXPECT_GT(recover.trials[1].reconstruction_seconds, 0);
  EXPECT_EQ(lines(r, "recover").at(1).rfind("adaround: PSNR ", 0), 0u) << lines(r, "recover").at(1);
  EXPECT_EQ(phase(r, "explore").status, PhaseStatus::kPass);
  ASSERT_NE(r.explore(), nullptr);
  EXPECT_EQ(r.explore()->lifted_layers, std::vector<std::string>{"mix"});
  EXPECT_TRUE(r.pass);
  EXPECT_EQ(r.final_model_path, path("work/final.onnx"));
  EXPECT_TRUE(fs::exists(path("work/quantized.onnx")));  // the starting config's model is kept too
  EXPECT_TRUE(fs::exists(path("work/final.optimized.onnx")));
  bool partition_line = false;
  for (const auto& line : lines(r, "compile")) partition_line |= line.find("of MACs in integer kernels") != std::string::npos;
  EXPECT_TRUE(partition_line);
  EXPECT_EQ(guide_outcome(r).rfind("PASS", 0), 0u) << guide_outcome(r);

  // ve2 is an NPU: the VitisAI provider's config file holds the compiler options the final
  // model needs (XINT8 with the lifted "mix" in BF16: islands of both), and deployment.json
  // records the provider options, the formats and what the model does at its edges.
  ASSERT_EQ(r.provider_config_path, path("work/vitisai_config.json"));
  const auto vaiml = nlohmann::json::parse(read_file(r.provider_config_path, "provider config"))["passes"][0]["vaiml_config"];
  EXPECT_EQ(vaiml["enable_f32_to_bf16_conversion"], true);
  EXPECT_EQ(vaiml["fe_args"], "match-power-of-two-quant-kernel=1");  // --edge-quant auto sets no edge flag
  EXPECT_EQ(vaiml["device"], "ve2");
  const auto config = nlohmann::json::parse(read_file(path("work/deployment.json"), "deployment"));
  EXPECT_EQ(config["provider"], "VitisAIExecutionProvider");
  EXPECT_EQ(config["device"]["name"], "ve2");
  EXPECT_EQ(config["formats"], nlohmann::json::parse(R"(["xint8", "bf16"])"));
  EXPECT_EQ(config["edge_quant"]["requested"], "input");  // auto: the input has a Q, the output no DQ
  EXPECT_EQ(config["edge_quant"]["quantized_inputs"], 1);
  EXPECT_EQ(config["edge_quant"]["dequantized_outputs"], 0);
  EXPECT_EQ(config["provider_options"]["cache_key"], "final");
  EXPECT_EQ(config["provider_options"]["config_file"], fs::absolute(r.provider_config_path).string());
  EXPECT_EQ(config["compiler_options"]["model"], "integer and float islands");
  // exec times the references a mixed model is judged against.
  const auto exec = lines(r, "exec");
  EXPECT_TRUE(std::ranges::any_of(exec, [](const std::string& l) { return l.rfind("full BF16  min", 0) == 0; }));
  EXPECT_TRUE(std::ranges::any_of(exec, [](const std::string& l) { return l.rfind("full INT8  min", 0) == 0; }));
}

// --config-format quark: every config the work dir holds (the quantize phase's, explore's final)
// is in Quark's shape and reads back as what ran.
TEST_F(GuideTest, ConfigsAreWrittenInQuarksShapeWhenAsked) {
  GuideParams p = params();
  p.explore = true;
  p.config_shape = ConfigShape::kQuark;
  const GuideReport r = guide(p);
  ASSERT_TRUE(r.pass);
  for (const std::string& file : {path("work/quantized.config.json"), r.final_config_path}) {
    const auto written = nlohmann::ordered_json::parse(read_file(file, "config"));
    EXPECT_EQ(detect_config_shape(written, file), ConfigShape::kQuark) << file;
  }
  EXPECT_EQ(r.final_config_path, path("work/final_config.json"));
  // Read back, the final config lifts the layer explore lifted.
  const onnx::ModelProto model = load_model(path("model.onnx"));
  const std::vector<NodeAssignment> assignment = assign_layers(load_config(r.final_config_path), model, "test");
  const auto mix = std::ranges::find(assignment, "mix", &NodeAssignment::node_name);
  ASSERT_NE(mix, assignment.end());
  EXPECT_EQ(mix->config.input_tensors->format, FormatId::kBFloat16);
}

TEST_F(GuideTest, TheProposalComesFromThePlanAndNamesTheArchitectureItFound) {
  // A MatMul front end feeding an LSTM: a recurrent model. The proposal used to call every
  // model on an NPU "a CNN"; it is the plan's (npu_cnn for non-attention models) and says what
  // the model is, with the plan's risk about the LSTM.
  GuideParams p = params();
  save_model(ModelBuilder()
                 .add_input("x", onnx::TensorProto::FLOAT, {2, 1, 4})
                 .add_output("y", onnx::TensorProto::FLOAT, {2, 1, 1, 3})
                 .add_initializer("w_in", {4, 4}, testing::deterministic_values(16, 1))
                 .add_initializer("W", {1, 12, 4}, testing::deterministic_values(48, 2))
                 .add_initializer("R", {1, 12, 3}, testing::deterministic_values(36, 3))
                 .add_node("MatMul", {"x", "w_in"}, {"h"}, {}, "front")
                 .add_node("LSTM", {"h", "W", "R"}, {"y"}, {testing::attr_int("hidden_size", 3)}, "lstm")
                 .build(),
             p.setup.model_path);
  const GuideReport r = guide(p);
  const std::vector<std::string> config = lines(r, "config");
  EXPECT_NE(config.at(0).find("proposed XINT8 for ve2 (plan target npu_cnn, recurrent)"), std::string::npos)
      << config.at(0);
  for (const auto& line : config) EXPECT_EQ(line.find("CNN"), std::string::npos) << line;
  EXPECT_TRUE(std::ranges::any_of(config, [](const std::string& l) { return l.find("risk (medium): recurrent") == 0; }));
  ASSERT_NE(r.result<ConfigResult>(), nullptr);
  ASSERT_TRUE(r.result<ConfigResult>()->plan.has_value());
  EXPECT_EQ(r.result<ConfigResult>()->plan->architecture, Architecture::kRecurrent);
}

TEST_F(GuideTest, AnExplicitEdgeQuantizationTheModelDoesNotFollowIsFlagged) {
  GuideParams p = params();
  p.edge_quant = EdgeQuant::kBoth;  // the final model has no DQ at its output
  WarningCollector warnings;
  const GuideReport r = guide(p);
  const auto compile = lines(r, "compile");
  EXPECT_TRUE(std::ranges::any_of(compile, [](const std::string& l) {
    return l.find("edge quantization: requested both") != std::string::npos && l.find("MISMATCH") != std::string::npos;
  }));
  EXPECT_TRUE(std::ranges::any_of(warnings.warnings(), [](const std::string& w) {
    return w.find("--edge-quant both") != std::string::npos;
  }));
  const auto config = nlohmann::json::parse(read_file(path("work/deployment.json"), "deployment"));
  EXPECT_EQ(config["edge_quant"]["matches"], false);
  // An explicit request sets its flag for the compiler all the same: the host is told what to do.
  const auto vaiml = nlohmann::json::parse(read_file(r.provider_config_path, "provider config"))["passes"][0]["vaiml_config"];
  EXPECT_NE(vaiml["fe_args"].get<std::string>().find("edge-quantization-in-rt=1"), std::string::npos) << vaiml["fe_args"];
  p.edge_quant = EdgeQuant::kInput;
  p.setup.work_dir = path("work2");
  const GuideReport ok = guide(p);
  EXPECT_FALSE(std::ranges::any_of(lines(ok, "compile"), [](const std::string& l) {
    return l.find("MISMATCH") != std::string::npos;
  }));
}

// --edge-quant-auto builds the final model twice and prints VITIS.md's table. The test model's
// input Q feeds the XINT8 MatMul: the runtime can take it over.
TEST_F(GuideTest, EdgeQuantAutoComparesBothBuildsAndSetsTheFlagWhenItPays) {
  GuideParams p = params();
  p.edge_quant_auto = true;
  p.stage = GuideStage::kExec;
  const GuideReport r = guide(p);
  const CompileResult* compile = r.result<CompileResult>();
  ASSERT_NE(compile, nullptr);
  ASSERT_TRUE(compile->edge_probe.has_value());
  const EdgeProbe& probe = *compile->edge_probe;
  ASSERT_EQ(probe.builds.size(), 2u);
  EXPECT_EQ(probe.builds[0].kernels - probe.builds[1].kernels, probe.builds[0].edge_kernels);
  EXPECT_EQ(probe.advice, EdgeAdvice::kEnable);
  EXPECT_EQ(probe.flag, "input-quantization-in-rt=1");
  const auto vaiml = nlohmann::json::parse(read_file(r.provider_config_path, "provider config"))["passes"][0]["vaiml_config"];
  EXPECT_NE(vaiml["fe_args"].get<std::string>().find("input-quantization-in-rt=1"), std::string::npos) << vaiml["fe_args"];
  const auto compile_lines = lines(r, "compile");
  EXPECT_TRUE(std::ranges::any_of(compile_lines, [](const std::string& l) {
    return l.rfind("edge quantization auto: enable input-quantization-in-rt=1", 0) == 0;
  }));
  EXPECT_TRUE(std::ranges::any_of(compile_lines, [](const std::string& l) { return l.find("not the NPU compiler's") != std::string::npos; }));

  // exec times the probe's model with the input quantized on the host in each run.
  ASSERT_NE(r.result<ExecResult>(), nullptr);
  ASSERT_TRUE(r.result<ExecResult>()->edges_on_host.has_value());
  EXPECT_EQ(r.result<ExecResult>()->edges_on_host->runs, 3u);
  EXPECT_TRUE(std::ranges::any_of(lines(r, "exec"), [](const std::string& l) { return l.rfind("edges on host", 0) == 0; }));

  p.edge_quant = EdgeQuant::kBoth;  // one or the other
  p.setup.work_dir = path("work2");
  try {
    guide(p);
    FAIL() << "--edge-quant both with --edge-quant-auto ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("conflicts with --edge-quant both"), std::string::npos) << e.what();
  }
}

// --plugin: the block-formats plugin (built from this repo) quantizes through the host's
// quantize; validate judges its model and compile derives the compiler options, with the flags
// a manifest adds. The formats it adds are allowed on ve2 for the run only.
TEST_F(GuideTest, APluginQuantizesAndGuideValidatesAndCompilesItsModel) {
  GuideParams p = params();
  p.plugin = "block-formats";
  p.plugin_args = {"quantize", "--format", "mx9"};
  p.plugin_dirs = {MIXPREC_TEST_PLUGINS_DIR};
  // The banner needs consent: without it nothing runs.
  try {
    guide(p);
    FAIL() << "ran without consent";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("runs only with consent (--yes)"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(path("work/block-formats.mx9.onnx")));

  // A copy of the plugin whose manifest names a compiler flag, found first on the path.
  const fs::path flagged = path("plugins/flagged");
  fs::create_directories(flagged);
  auto manifest = nlohmann::json::parse(read_file(std::string(MIXPREC_TEST_PLUGINS_DIR) + "/block-formats/plugin.json", "m"));
  manifest["name"] = "flagged";
  manifest["compiler_flags"] = "experimental-bfp=1";
  std::ofstream(flagged / "plugin.json") << manifest.dump();
  fs::create_symlink(std::string(MIXPREC_TEST_PLUGINS_DIR) + "/block-formats/libmixprec_block_formats.so",
                     flagged / "libmixprec_block_formats.so");
  p.plugin = "flagged";
  p.plugin_dirs.insert(p.plugin_dirs.begin(), path("plugins"));
  p.plugin_consent = true;
  const GuideReport r = guide(p);
  EXPECT_EQ(names(r), (std::vector<std::string>{"analyze", "plugin", "validate", "compile"}));
  ASSERT_NE(r.result<PluginResult>(), nullptr);
  EXPECT_EQ(r.result<PluginResult>()->host_quantizations, 1u);
  EXPECT_EQ(r.final_model_path, path("work/block-formats.mx9.onnx"));
  const QuantConfig written = load_config(r.final_config_path);
  EXPECT_EQ(formats_used(written), (std::vector<FormatId>{FormatId::kBFloat16, FormatId::kMx9}));
  // validate judges the plugin's model like any other: the test model's outlier activation
  // ("mix") shares its blocks' exponent and flattens the rest of each block (7.3 dB < 30 dB).
  EXPECT_EQ(phase(r, "validate").status, PhaseStatus::kFail);
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(lines(r, "validate").at(0).rfind("worst output: PSNR 7.", 0), 0u) << lines(r, "validate").at(0);
  const auto vaiml = nlohmann::json::parse(read_file(r.provider_config_path, "provider config"))["passes"][0]["vaiml_config"];
  EXPECT_EQ(vaiml["enable_f32_to_bf16_conversion"], true);
  EXPECT_EQ(vaiml["fe_args"], "experimental-bfp=1");

  p.explore = true;  // the plugin replaces the config..explore phases
  EXPECT_THROW(guide(p), Error);
}

// A plugin that brings its own ONNX Runtime ops registers their library through the host: the
// reference, validate and compile sessions of the run all take them. The test plugin hands back
// the model itself, so validate finds it identical.
TEST_F(GuideTest, APluginsCustomOpsRunInEverySessionOfTheRun) {
  GuideParams p = params();
  save_model(ModelBuilder()
                 .opset(17)
                 .opset(1, "test.mixprec")
                 .add_input("x", onnx::TensorProto::FLOAT, {2, 4})
                 .add_output("y", onnx::TensorProto::FLOAT, {2, 4})
                 .add_node("Double", {"x"}, {"y"}, {}, "double", "test.mixprec")
                 .build(),
             p.setup.model_path);
  std::ofstream(path("float.json")) << R"({"global_config": {}})";
  const fs::path plugin = path("plugins/ops-plugin");
  fs::create_directories(plugin);
  std::ofstream(plugin / "plugin.json")
      << R"({"name": "ops-plugin", "version": "1.0.0", "library": "libops.so", "requires_mixprec": "0.1.0"})";
  fs::create_symlink(MIXPREC_TEST_OPS_PLUGIN, plugin / "libops.so");
  p.plugin = "ops-plugin";
  p.plugin_args = {MIXPREC_TEST_OPS_LIB, p.setup.model_path, path("float.json")};
  p.plugin_dirs = {path("plugins")};
  const GuideReport r = guide(p);
  EXPECT_EQ(names(r), (std::vector<std::string>{"analyze", "plugin", "validate", "compile"}));
  ASSERT_NE(r.result<PluginResult>(), nullptr);
  EXPECT_EQ(r.result<PluginResult>()->run.custom_op_libraries,
            std::vector<std::string>{fs::absolute(MIXPREC_TEST_OPS_LIB).lexically_normal().string()});
  EXPECT_EQ(phase(r, "validate").status, PhaseStatus::kPass);
  EXPECT_TRUE(std::ranges::any_of(lines(r, "plugin"), [](const std::string& l) {
    return l.rfind("custom ops registered: ", 0) == 0;
  }));
  // A library ONNX Runtime cannot load comes back as the plugin's one-line failure.
  p.plugin_args[0] = path("float.json");
  p.setup.work_dir = path("work2");
  try {
    guide(p);
    FAIL() << "a bad custom-op library was registered";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("register_custom_ops: "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("does not load it as a custom-op library"), std::string::npos) << e.what();
  }
}

TEST_F(GuideTest, ACpuDeviceWritesNoVitisAiConfig) {
  GuideParams p = params();
  p.deployment.device = "cpu";
  EXPECT_TRUE(guide(p).provider_config_path.empty());
  EXPECT_FALSE(fs::exists(path("work/vitisai_config.json")));
}

TEST_F(GuideTest, WithoutExploreAMissIsReportedWithTheNextStep) {
  GuideParams p = params();
  p.recover = false;
  const GuideReport r = guide(p);
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(phase(r, "recover").status, PhaseStatus::kNotRun);
  EXPECT_EQ(lines(r, "recover"), std::vector<std::string>{"--no-recover"});
  EXPECT_EQ(phase(r, "explore").status, PhaseStatus::kNotRun);
  EXPECT_NE(guide_outcome(r).find("--explore"), std::string::npos) << guide_outcome(r);
  EXPECT_EQ(r.final_model_path, path("work/quantized.onnx"));
  EXPECT_EQ(names(r).back(), "compile");  // no exec unless asked
}

TEST_F(GuideTest, AGivenConfigIsUsedAndCheckedAgainstTheDevice) {
  GuideParams p = params();
  p.config_path = path("fp16.json");
  std::ofstream(p.config_path) << R"({"global_config": {"input_tensors": {"spec": "Float16Spec"}, "weight": {"spec": "Float16Spec"}}})";
  p.deployment.device = "stx";
  try {
    guide(p);
    FAIL() << "FP16 accepted on stx";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("FP16 is not available on stx"), std::string::npos) << e.what();
  }
  p.deployment.device = "ve2";
  const GuideReport r = guide(p);
  EXPECT_TRUE(r.pass);
  EXPECT_NE(lines(r, "config").at(0).find("given"), std::string::npos);
  EXPECT_EQ(phase(r, "recover").status, PhaseStatus::kSkipped);  // FP16 meets the criterion
}

TEST_F(GuideTest, AQuantizedModelInFullModePointsToRequantize) {
  GuideParams p = params();
  guide(p);  // writes work/quantized.onnx
  p.setup.model_path = path("work/quantized.onnx");
  p.setup.work_dir = path("work2");
  try {
    guide(p);
    FAIL() << "quantized a quantized model";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_NE(std::string(e.what()).find("--mode requantize"), std::string::npos) << e.what();
  }
  p.mode = GuideMode::kRequantize;
  EXPECT_THROW(guide(p), Error);  // requantize needs the new config
  p.config_path = path("bf16.json");
  std::ofstream(p.config_path) << R"({"global_config": {"input_tensors": {"spec": "BFloat16Spec"}, "weight": {"spec": "BFloat16Spec"}}})";
  const GuideReport r = guide(p);
  ASSERT_NE(r.result<RequantizeReport>(), nullptr);
  EXPECT_TRUE(r.pass);
  EXPECT_GT(r.result<RequantizeReport>()->psnr_delta_db, 10.0);
}

TEST_F(GuideTest, DryRunModeWritesItsTableAndRecommendation) {
  GuideParams p = params();
  p.mode = GuideMode::kDryRun;
  const GuideReport r = guide(p);
  EXPECT_EQ(names(r), std::vector<std::string>{"dry-run"});
  ASSERT_NE(r.result<DryRunReport>(), nullptr);
  EXPECT_EQ(r.result<DryRunReport>()->recommendation.action, "explore");
}

TEST_F(GuideTest, LadderStrategyKeepsTheFirstPassingRungAndCompilesIt) {
  GuideParams p = params();
  p.ladder = true;
  p.deployment.device = "cpu";  // w8a8 is U8S8 there, and the device runs w8a16
  const GuideReport r = guide(p);
  EXPECT_EQ(names(r), (std::vector<std::string>{"analyze", "ladder", "compile"}));
  ASSERT_NE(r.result<LadderReport>(), nullptr);
  EXPECT_EQ(r.result<LadderReport>()->chosen, "A16W8");  // "mix" needs more than 8 bits of activation
  EXPECT_TRUE(r.pass);
  EXPECT_EQ(r.final_model_path, path("work/ladder_A16W8.onnx"));
  EXPECT_TRUE(fs::exists(r.final_config_path));
}

TEST_F(GuideTest, EnvironmentScriptAssignmentsAreReadAndCommandsRefused) {
  std::ofstream(path("env.sh")) << "# set up\nexport XLNX_TARGET=ve2\nORT_LOG='verbose'\n\nMIXPREC_X=\"a b\"\n";
  const auto vars = read_env_script(path("env.sh"));
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"XLNX_TARGET", "ve2"}, {"ORT_LOG", "verbose"}, {"MIXPREC_X", "a b"}};
  EXPECT_EQ(vars, expected);
  std::ofstream(path("bad.sh")) << "export A=1\nsource /opt/xilinx/setup.sh\n";
  try {
    read_env_script(path("bad.sh"));
    FAIL() << "accepted a command";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
  }
  EXPECT_THROW(read_env_script(path("missing.sh")), Error);
}

TEST(GuideNames, ModesAndStages) {
  EXPECT_EQ(guide_mode_names().from_name("dry-run"), GuideMode::kDryRun);
  EXPECT_EQ(guide_mode_names().from_name("requantize"), GuideMode::kRequantize);
  EXPECT_EQ(guide_mode_names().from_name("fast"), std::nullopt);
  EXPECT_EQ(guide_stage_names().from_name("exec"), GuideStage::kExec);
  EXPECT_EQ(edge_quant_names().from_name("output"), EdgeQuant::kOutput);
  EXPECT_EQ(edge_quant_names().from_name("outputs"), std::nullopt);
  EXPECT_EQ(guide_mode_names().list(), "full, dry-run, requantize");
  EXPECT_STREQ(to_string(EdgeQuant::kAuto), "auto");
  EXPECT_STREQ(to_string(GuideStage::kCompile), "compile");
}

}  // namespace
}  // namespace mixprec
