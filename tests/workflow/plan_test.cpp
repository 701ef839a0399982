#include "mixprec/plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "mixprec/error.h"
#include "mixprec/json_schema.h"
#include "mixprec/log.h"
#include "mixprec/model_io.h"
#include "mixprec/rewrite.h"
#include "mixprec/runtime.h"
#include "support/explore_models.h"
#include "support/model_builder.h"
#include "support/temp_dir.h"

namespace mixprec {
namespace {

using Json = nlohmann::ordered_json;

class PlanTest : public testing::TempDirTest {
 protected:
  std::string save(const onnx::ModelProto& model, const std::string& name) {
    const std::string file = path(name);
    save_model(model, file);
    return file;
  }
  PlanParams params(const std::string& model, PlanTarget target, PlanGoal goal = PlanGoal::kAccuracy) {
    PlanParams p;
    p.setup.model_path = model;
    p.target = target;
    p.goal = goal;
    return p;
  }
  static std::string error_of(const PlanParams& p) {
    try {
      make_plan(p);
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  }
  static bool has_risk(const QuantPlan& plan, const std::string& severity, const std::string& words) {
    return std::ranges::any_of(plan.risks, [&](const PlanRisk& r) {
      return r.severity == severity && r.risk.find(words) != std::string::npos;
    });
  }
  static const PlanDecision& decision(const QuantPlan& plan, const std::string& name) {
    const auto it = std::ranges::find_if(plan.decisions, [&](const PlanDecision& d) { return d.decision == name; });
    if (it == plan.decisions.end()) throw std::runtime_error("no decision " + name);
    return *it;
  }
  WarningCollector warnings_;
};

constexpr PlanTarget kTargets[] = {PlanTarget::kCpu, PlanTarget::kCuda, PlanTarget::kNpuCnn, PlanTarget::kNpuTransformer};
constexpr PlanGoal kGoals[] = {PlanGoal::kAccuracy, PlanGoal::kSize, PlanGoal::kSpeed};

TEST_F(PlanTest, EveryTargetAndGoalGivesASchemaValidPlanThatRoundTrips) {
  for (const auto& [name, model] : {std::pair<std::string, onnx::ModelProto>{"cnn.onnx", testing::conv_chain(3)},
                                    {"attention.onnx", testing::attention_model(0)},
                                    {"mlp.onnx", testing::matmul_chain(2)}}) {
    const std::string file = save(model, name);
    for (PlanTarget target : kTargets) {
      for (PlanGoal goal : kGoals) {
        SCOPED_TRACE(name + " " + to_string(target) + " " + to_string(goal));
        const QuantPlan plan = make_plan(params(file, target, goal));
        const Json json = plan_to_json(plan);
        EXPECT_EQ(validate_json(plan_schema(), json), std::vector<std::string>{});
        EXPECT_EQ(plan_from_json(json, "plan.json"), plan);
        const std::string plan_file = path("plan.json");
        save_plan(plan, plan_file);
        EXPECT_EQ(load_plan(plan_file), plan);
        // The embedded config in Quark's shape (plan --config-format quark) reads back the same.
        const Json quark = plan_to_json(plan, ConfigShape::kQuark);
        EXPECT_EQ(detect_config_shape(quark["config"], "plan.json"), ConfigShape::kQuark);
        EXPECT_EQ(validate_json(plan_schema(), quark), std::vector<std::string>{});
        EXPECT_EQ(plan_from_json(quark, "plan.json"), plan);
      }
    }
  }
}

TEST_F(PlanTest, TheDecisionTableCoversWhatSpecAsks) {
  const QuantPlan plan = make_plan(params(save(testing::conv_chain(2), "cnn.onnx"), PlanTarget::kCpu));
  std::vector<std::string> names;
  for (const auto& d : plan.decisions) names.push_back(d.decision);
  EXPECT_EQ(names, (std::vector<std::string>{"backend", "architecture", "task", "preset", "calibration method",
                                             "calibration size", "calibration data", "algorithms", "recovery ladder",
                                             "include", "exclude", "external data", "evaluation"}));
  EXPECT_EQ(plan.preset, "U8S8");
  EXPECT_EQ(plan.calib_method, CalibMethod::kPercentile);
  EXPECT_EQ(plan.calibration_samples, 256);
  EXPECT_EQ(plan.include_op_types, (std::vector<std::string>{"Conv"}));
  EXPECT_FALSE(plan.external_data);
  EXPECT_EQ(plan.model_bytes, std::filesystem::file_size(path("cnn.onnx")));
  EXPECT_EQ(plan.evaluation_criteria, (std::vector<std::string>{"psnr>=30", "pass_rate>=99.9%"}));
  EXPECT_FALSE(plan.requires_confirmation);
  // The config quantize --plan runs says the same.
  EXPECT_EQ(plan.config.extra.calib_method, CalibMethod::kPercentile);
  EXPECT_EQ(plan.config.extra.num_calib_samples, 256);
  EXPECT_EQ(plan.config.extra.op_types_to_quantize, plan.include_op_types);
  EXPECT_EQ(plan.config.global.weight->format, FormatId::kInt8);
  EXPECT_TRUE(plan.config.global.weight->per_channel);
  EXPECT_TRUE(plan.config.extra.ort_cpu_fusion);
}

// --ffn-only: the preset's layer reaches only the attention projections' weight MatMuls of the
// attention model (proj_q/k/v; qk and pv multiply activations); everything else stays float.
TEST_F(PlanTest, FfnOnlyScopesTheConfigToTheFeedForwardNodes) {
  PlanParams p = params(save(testing::attention_model(1), "attn.onnx"), PlanTarget::kNpuTransformer);
  p.ffn_only = true;
  const QuantPlan plan = make_plan(p);
  const PlanDecision& scope = decision(plan, "scope");
  EXPECT_EQ(scope.value.rfind("feed-forward only: ", 0), 0u) << scope.value;
  EXPECT_FALSE(plan.config.global.input_tensors.has_value());
  EXPECT_FALSE(plan.config.global.weight.has_value());
  ASSERT_FALSE(plan.config.specific.empty());
  const std::vector<std::string> ffn = plan.config.specific.front().target_node_names;
  EXPECT_NE(std::ranges::find(ffn, "proj_q"), ffn.end());
  EXPECT_EQ(std::ranges::find(ffn, "qk"), ffn.end());
  EXPECT_EQ(std::ranges::find(ffn, "pv"), ffn.end());
  EXPECT_EQ(plan.config.specific.front().layer_config.weight->format, FormatId::kXInt8);
  EXPECT_EQ(plan_from_json(plan_to_json(plan), "plan"), plan);

  // A model without feed-forward parts is refused, naming it.
  PlanParams cnn = params(save(testing::conv_chain(2), "cnn.onnx"), PlanTarget::kCpu);
  cnn.ffn_only = true;
  EXPECT_NE(error_of(cnn).find("cnn.onnx: --ffn-only: the model has no MLP block"), std::string::npos) << error_of(cnn);
}

TEST_F(PlanTest, NpuCnnRejectsANonPowerOfTwoPresetAndNamesTheNearest) {
  const std::string file = save(testing::conv_chain(2), "cnn.onnx");
  PlanParams p = params(file, PlanTarget::kNpuCnn);
  EXPECT_EQ(make_plan(p).preset, "XINT8");
  EXPECT_EQ(make_plan(p).calib_method, CalibMethod::kPowerOfTwoMinMse);
  p.preset = "a8w8";
  const std::string error = error_of(p);
  EXPECT_NE(error.find("--preset A8W8 is rejected for --target npu_cnn"), std::string::npos) << error;
  EXPECT_NE(error.find("nearest viable: XINT8"), std::string::npos) << error;
  p.preset = "BF16";
  EXPECT_NE(error_of(p).find("nearest viable: XINT8"), std::string::npos);
  p.force = true;
  const QuantPlan forced = make_plan(p);
  EXPECT_EQ(forced.preset, "BF16");
  EXPECT_TRUE(has_risk(forced, "high", "forced: --preset BF16")) << plan_to_json(forced)["risks"].dump();
}

TEST_F(PlanTest, NpuCnnNeedsAPowerOfTwoCalibrationMethod) {
  PlanParams p = params(save(testing::conv_chain(2), "cnn.onnx"), PlanTarget::kNpuCnn);
  p.calib_method = CalibMethod::kMinMax;
  EXPECT_NE(error_of(p).find("nearest viable: PowerOfTwo_NonOverflow"), std::string::npos) << error_of(p);
  p.calib_method = CalibMethod::kEntropy;
  EXPECT_NE(error_of(p).find("nearest viable: PowerOfTwo_MinMSE"), std::string::npos) << error_of(p);
  p.force = true;
  EXPECT_TRUE(has_risk(make_plan(p), "high", "forced: --calib-method Entropy"));
  p.calib_method = CalibMethod::kPowerOfTwoNonOverflow;
  p.force = false;
  EXPECT_EQ(make_plan(p).config.extra.calib_method, CalibMethod::kPowerOfTwoNonOverflow);
}

TEST_F(PlanTest, TheDeviceGatesFormats) {
  PlanParams p = params(save(testing::attention_model(0), "t.onnx"), PlanTarget::kNpuTransformer);
  p.device = "stx";
  p.preset = "FP16";
  EXPECT_NE(error_of(p).find("FP16 is not available on stx"), std::string::npos) << error_of(p);
  p.device = "ve2";
  EXPECT_EQ(make_plan(p).preset, "FP16");  // ve2 runs FP16
  p.device = "cpu";
  EXPECT_NE(error_of(p).find("is not an NPU"), std::string::npos);
  PlanParams host = params(path("t.onnx"), PlanTarget::kCpu);
  host.device = "stx";
  EXPECT_NE(error_of(host).find("is an NPU"), std::string::npos);
}

TEST_F(PlanTest, AnAlreadyQuantizedModelGetsNoPlanButRequantizeAdvice) {
  const std::string error = error_of(params(save(testing::qdq_conv_chain(2), "q.onnx"), PlanTarget::kCpu));
  EXPECT_NE(error.find("already quantized"), std::string::npos) << error;
  EXPECT_NE(error.find("mixprec requantize"), std::string::npos) << error;
  EXPECT_NE(error_of(params(save(testing::bf16_conv_chain(1), "b.onnx"), PlanTarget::kCpu)).find("already quantized"),
            std::string::npos);
}

TEST_F(PlanTest, AnUnknownArchitectureGivesADraftUntilConfirmed) {
  PlanParams p = params(save(testing::matmul_chain(3), "mlp.onnx"), PlanTarget::kCpu);
  const QuantPlan draft = make_plan(p);
  EXPECT_TRUE(draft.requires_confirmation);
  ASSERT_TRUE(plan_blocker(draft).has_value());
  EXPECT_NE(plan_blocker(draft)->find("draft"), std::string::npos);
  p.confirmed = true;
  const QuantPlan confirmed = make_plan(p);
  EXPECT_FALSE(confirmed.requires_confirmation);
  EXPECT_NE(decision(confirmed, "architecture").reason.find("confirmed by --yes"), std::string::npos);
  EXPECT_FALSE(plan_blocker(confirmed).has_value());
}

TEST_F(PlanTest, AlgorithmRisks) {
  const std::string transformer = save(testing::attention_model(0), "t.onnx");
  PlanParams p = params(transformer, PlanTarget::kCpu);
  p.algorithms = {"cle"};
  const QuantPlan cle = make_plan(p);
  EXPECT_TRUE(has_risk(cle, "high", "cle on a transformer"));
  EXPECT_FALSE(has_risk(cle, "high", "cle is not implemented"));
  EXPECT_FALSE(plan_blocker(cle).has_value());  // implemented: quantize --plan runs it
  EXPECT_EQ(cle.config.algorithms, (std::vector<AlgorithmEntry>{{.name = "cle"}}));
  EXPECT_FALSE(has_risk(cle, "medium", "algorithms ("));
  p.algorithms = {"gptq"};
  const QuantPlan gptq = make_plan(p);
  EXPECT_TRUE(has_risk(gptq, "high", "gptq is not implemented"));
  EXPECT_NE(plan_blocker(gptq).value_or("").find("'gptq'"), std::string::npos);
  // SmoothQuant is executable: an algo_config entry, its cost (one float pass) stated.
  p.algorithms = {"smoothquant"};
  const QuantPlan smoothquant = make_plan(p);
  EXPECT_FALSE(has_risk(smoothquant, "high", "not implemented"));
  EXPECT_FALSE(plan_blocker(smoothquant).has_value());
  EXPECT_EQ(smoothquant.config.algorithms, (std::vector<AlgorithmEntry>{{.name = "smoothquant"}}));
  EXPECT_NE(decision(smoothquant, "algorithms").reason.find("smoothquant cost: one float pass"), std::string::npos)
      << decision(smoothquant, "algorithms").reason;

  PlanParams cnn = params(save(testing::conv_chain(2), "cnn.onnx"), PlanTarget::kCpu);
  // AdaRound is executable: no blocker, an algo_config entry after CLE's, and a cost stated.
  cnn.algorithms = {"adaround"};
  const QuantPlan adaround = make_plan(cnn);
  EXPECT_FALSE(has_risk(adaround, "high", "not implemented"));
  EXPECT_FALSE(plan_blocker(adaround).has_value());
  EXPECT_EQ(adaround.config.algorithms, (std::vector<AlgorithmEntry>{{.name = "adaround"}}));
  EXPECT_NE(decision(adaround, "algorithms").reason.find("adaround cost: up to 2 Conv/ConvTranspose/Gemm/MatMul layers x 1000 Adam steps"),
            std::string::npos)
      << decision(adaround, "algorithms").reason;
  cnn.algorithms = {"adaround", "adaquant"};
  EXPECT_THROW(make_plan(cnn), Error);
  cnn.algorithms = {"cle"};
  EXPECT_FALSE(has_risk(make_plan(cnn), "high", "cle on a"));
  cnn.algorithms = {"cle", "bias_correction", "adaround"};
  EXPECT_TRUE(has_risk(make_plan(cnn), "medium", "3 algorithms (cle, bias_correction, adaround)"));
  // npu_cnn (per-tensor int8 weights) equalizes a CNN by default, and quantize --plan runs it.
  const QuantPlan npu = make_plan(params(save(testing::conv_chain(2), "npu.onnx"), PlanTarget::kNpuCnn));
  EXPECT_EQ(npu.algorithms, (std::vector<std::string>{"cle"}));
  EXPECT_EQ(npu.config.algorithms, (std::vector<AlgorithmEntry>{{.name = "cle"}}));
  EXPECT_FALSE(plan_blocker(npu).has_value());
  // Its CLE also evens the layers read by a constant Mul; a CLE asked for elsewhere is Quark's.
  EXPECT_TRUE(npu.config.extra.cle_mul_tails);
  ASSERT_TRUE(prepare_options(npu.config).cle);
  EXPECT_TRUE(prepare_options(npu.config).cle->mul_tails);
  EXPECT_NE(decision(npu, "algorithms").reason.find("CLEMulTails"), std::string::npos) << decision(npu, "algorithms").reason;
  cnn.algorithms = {"cle"};
  EXPECT_FALSE(make_plan(cnn).config.extra.cle_mul_tails);
  cnn.algorithms = {"magic"};
  EXPECT_NE(error_of(cnn).find("unknown --algorithm 'magic'"), std::string::npos);
}

// guide's recovery ladder: bias correction where there are Conv/Gemm biases, then AdaRound where
// there are Conv/Gemm/MatMul weights, each on top of the plan's algorithms; nothing for a float
// preset or for what the plan already runs.
TEST_F(PlanTest, TheRecoveryLadderAddsBiasCorrectionThenAdaRoundToIntegerPresets) {
  const std::string cnn = save(testing::conv_chain(2), "cnn.onnx");
  const QuantPlan npu = make_plan(params(cnn, PlanTarget::kNpuCnn));
  using Ladder = std::vector<std::vector<AlgorithmEntry>>;
  const AlgorithmEntry per_layer{.name = "bias_correction", .mode = BiasCorrectionMode::kLayer};
  const AlgorithmEntry whole_model{.name = "bias_correction", .mode = BiasCorrectionMode::kModel};
  EXPECT_EQ(npu.recovery_ladder, (Ladder{{per_layer}, {whole_model}, {{.name = "adaround"}}}));
  // The plan's CLE is also measured away: AdaRound alone on statistics of its own.
  EXPECT_EQ(npu.recovery_ladder_without_cle, (Ladder{{{.name = "adaround"}}}));
  EXPECT_EQ(decision(npu, "recovery ladder").value,
            "cle + bias_correction (layer), then cle + bias_correction (model), then cle + adaround, then adaround");
  // In the file each rung is the algo_config list it adds.
  EXPECT_EQ(plan_to_json(npu)["recovery_ladder"],
            Json::parse(R"([[{"name": "bias_correction", "mode": "layer"}], [{"name": "bias_correction", "mode": "model"}],
                            [{"name": "adaround"}]])"));
  EXPECT_EQ(plan_to_json(npu)["recovery_ladder_without_cle"], Json::parse(R"([[{"name": "adaround"}]])"));
  save_plan(npu, path("npu.plan.json"));  // the schema knows both ladders
  EXPECT_EQ(load_plan(path("npu.plan.json")), npu);
  EXPECT_NE(decision(npu, "recovery ladder").reason.find("adaround: up to 2 layers x 1000 Adam steps"), std::string::npos)
      << decision(npu, "recovery ladder").reason;
  // The rungs are not the plan's own algorithms: the config quantize --plan runs is unchanged.
  EXPECT_EQ(npu.config.algorithms, (std::vector<AlgorithmEntry>{{.name = "cle"}}));

  const QuantPlan mlp = make_plan(params(save(testing::matmul_chain(2), "mlp.onnx"), PlanTarget::kCpu));
  EXPECT_EQ(mlp.recovery_ladder, (Ladder{{{.name = "adaround"}}}));  // no bias to correct
  EXPECT_TRUE(mlp.recovery_ladder_without_cle.empty());            // no CLE to leave out

  PlanParams asked = params(cnn, PlanTarget::kCpu);
  asked.algorithms = {"adaquant"};
  const QuantPlan adaquant = make_plan(asked);
  EXPECT_EQ(adaquant.recovery_ladder, (Ladder{{per_layer}, {whole_model}}));
  EXPECT_TRUE(adaquant.recovery_ladder_without_cle.empty());
  save_plan(adaquant, path("adaquant.plan.json"));  // the schema knows adaquant
  EXPECT_EQ(load_plan(path("adaquant.plan.json")), adaquant);

  PlanParams bf16 = params(cnn, PlanTarget::kCpu);
  bf16.preset = "BF16";
  const QuantPlan float_plan = make_plan(bf16);
  EXPECT_TRUE(float_plan.recovery_ladder.empty());
  EXPECT_THROW(decision(float_plan, "recovery ladder"), std::runtime_error);

  // A plan written before the ladder existed reads back with none.
  Json old = plan_to_json(npu);
  old.erase("recovery_ladder");
  old.erase("recovery_ladder_without_cle");
  EXPECT_TRUE(plan_from_json(old, "old.plan.json").recovery_ladder.empty());
  EXPECT_TRUE(plan_from_json(old, "old.plan.json").recovery_ladder_without_cle.empty());
  Json bad = plan_to_json(npu);
  bad["recovery_ladder"] = Json::parse(R"([[{"name": "cle"}]])");  // CLE runs before calibration: not a rung
  EXPECT_THROW(plan_from_json(bad, "bad.plan.json"), Error);
  bad = plan_to_json(npu);
  bad["recovery_ladder_without_cle"] = Json::parse(R"([[{"name": "cle"}]])");
  EXPECT_THROW(plan_from_json(bad, "bad.plan.json"), Error);
  bad = plan_to_json(npu);
  bad["recovery_ladder"] = Json::parse(R"([[{"name": "adaround", "num_iterations": 0}]])");  // the config's own check
  try {
    plan_from_json(bad, "bad.plan.json");
    ADD_FAILURE() << "0 iterations accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.plan.json (recovery_ladder/0)"), std::string::npos) << e.what();
  }
}

TEST_F(PlanTest, BatchNormIsFoldedByThePlanItself) {
  testing::ModelBuilder builder;
  builder.add_input("x", onnx::TensorProto::FLOAT, {1, 2, 4, 4})
      .add_initializer("w", {2, 2, 1, 1}, {1, 0, 0, 1})
      .add_initializer("scale", {2}, {1, 2})
      .add_initializer("bias", {2}, {0, 1})
      .add_initializer("mean", {2}, {0, 0})
      .add_initializer("var", {2}, {1, 1})
      .add_node("Conv", {"x", "w"}, {"c"}, {}, "conv")
      .add_node("BatchNormalization", {"c", "scale", "bias", "mean", "var"}, {"y"}, {}, "bn")
      .add_output("y", onnx::TensorProto::FLOAT, {1, 2, 4, 4});
  const QuantPlan plan = make_plan(params(save(builder.build(), "bn.onnx"), PlanTarget::kCpu));
  EXPECT_EQ(plan.algorithms, (std::vector<std::string>{"fold_batchnorm"}));
  EXPECT_TRUE(plan.config.extra.convert_bn_to_conv);
  EXPECT_FALSE(plan_blocker(plan).has_value());
  const QuantPlan none = make_plan(params(save(testing::conv_chain(1), "cnn.onnx"), PlanTarget::kCpu));
  EXPECT_TRUE(none.algorithms.empty());
  EXPECT_FALSE(none.config.extra.convert_bn_to_conv);
}

TEST_F(PlanTest, AttentionMatMulsStayHigherPrecisionForAccuracy) {
  const std::string file = save(testing::attention_model(0), "t.onnx");
  const QuantPlan cpu = make_plan(params(file, PlanTarget::kCpu));
  EXPECT_EQ(cpu.exclude_node_names, (std::vector<std::string>{"qk", "pv"}));
  EXPECT_EQ(cpu.config.exclude.node_names, (std::vector<std::string>{"qk", "pv"}));
  const QuantPlan npu = make_plan(params(file, PlanTarget::kNpuTransformer));
  EXPECT_TRUE(npu.exclude_node_names.empty());
  EXPECT_EQ(npu.higher_precision_nodes, (std::vector<std::string>{"qk", "pv"}));
  ASSERT_EQ(npu.config.specific.size(), 1u);
  EXPECT_EQ(npu.config.specific[0].layer_config.input_tensors->format, FormatId::kBFloat16);
  const QuantPlan npu_cnn = make_plan(params(file, PlanTarget::kNpuCnn));
  EXPECT_TRUE(npu_cnn.higher_precision_nodes.empty());
  EXPECT_TRUE(has_risk(npu_cnn, "medium", "npu_cnn for a transformer"));
  EXPECT_TRUE(make_plan(params(file, PlanTarget::kCpu, PlanGoal::kSpeed)).exclude_node_names.empty());
}

TEST_F(PlanTest, ABackendMissingFromTheLoadedRuntimeIsARisk) {
  const std::string file = save(testing::conv_chain(1), "cnn.onnx");
  const std::vector<std::string> available = available_providers();
  const bool has_cuda = std::ranges::find(available, "CUDAExecutionProvider") != available.end();
  EXPECT_EQ(has_risk(make_plan(params(file, PlanTarget::kCuda)), "medium", "CUDAExecutionProvider is not in"), !has_cuda);
  EXPECT_FALSE(has_risk(make_plan(params(file, PlanTarget::kCpu)), "medium", "is not in the loaded"));
}

// Every preset quantize takes can be planned (--preset MX9 used to break the plan's own schema,
// which listed six), and a plan file naming no known preset is refused with the known ones.
TEST_F(PlanTest, EveryPresetPlansAndAnUnknownOneInAFileIsRefused) {
  const std::string file = save(testing::conv_chain(1), "cnn.onnx");
  for (const std::string& name : preset_names()) {
    PlanParams p = params(file, PlanTarget::kCpu);
    p.preset = name;
    const QuantPlan plan = make_plan(p);
    EXPECT_EQ(plan.preset, name);
    save_plan(plan, path("plan.json"));
    EXPECT_EQ(load_plan(path("plan.json")), plan) << name;
  }
  Json json = plan_to_json(make_plan(params(file, PlanTarget::kCpu)));
  json["preset"] = "INT3";
  write_file_atomically(path("bad.json"), json.dump());
  try {
    load_plan(path("bad.json"));
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_NE(std::string(e.what()).find("bad.json: not a valid plan: /preset: unknown preset 'INT3' (known: XINT8, A8W8"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(PlanTest, APlanFileThatBreaksTheSchemaIsRefusedWithThePointer) {
  const QuantPlan plan = make_plan(params(save(testing::conv_chain(1), "cnn.onnx"), PlanTarget::kCpu));
  Json json = plan_to_json(plan);
  json["calibration"]["method"] = "Median";
  write_file_atomically(path("bad.json"), json.dump());
  try {
    load_plan(path("bad.json"));
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("/calibration/method: \"Median\" is not one of"), std::string::npos) << e.what();
  }
  write_file_atomically(path("notjson.json"), "{");
  EXPECT_THROW(load_plan(path("notjson.json")), Error);
}

TEST_F(PlanTest, QuantizeWithPlanRunsItsConfigOnTheRightModelOnly) {
  const std::string model = save(testing::conv_chain(2), "cnn.onnx");
  PlanParams p = params(model, PlanTarget::kNpuCnn);
  p.calibration_samples = 8;
  save_plan(make_plan(p), path("plan.json"));
  QuantizeParams q;
  q.output_path = path("out.onnx");
  q.setup.calibration = testing::test_calibration_data();
  const QuantizeReport report = quantize_with_plan(path("plan.json"), q);
  EXPECT_EQ(report.calibration_samples, 8u);  // the plan's size caps the 16 samples given
  EXPECT_EQ(report.nodes_integer, 2u);
  EXPECT_EQ(load_config(report.config_path), load_plan(path("plan.json")).config);
  std::filesystem::remove(path("out.onnx"));  // the refused runs below must not write it

  q.setup.model_path = save(testing::conv_chain(3), "other.onnx");
  try {
    quantize_with_plan(path("plan.json"), q);
    FAIL() << "accepted another model";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("made for another model"), std::string::npos) << e.what();
  }
  q.setup.model_path.clear();
  q.config.preset = "A8W8";
  EXPECT_THROW(quantize_with_plan(path("plan.json"), q), Error);

  save_plan(make_plan(params(save(testing::matmul_chain(2), "mlp.onnx"), PlanTarget::kCpu)), path("draft.json"));
  q.config.preset.clear();
  try {
    quantize_with_plan(path("draft.json"), q);
    FAIL() << "ran a draft";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("requires_confirmation"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(path("out.onnx")));
}

}  // namespace
}  // namespace mixprec
