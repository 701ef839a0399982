// Exploration on models built so that the sensitive layers are known (support/explore_models.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "mixprec/calibration.h"
#include "mixprec/error.h"
#include "mixprec/explore.h"
#include "mixprec/html_report.h"
#include "mixprec/jobs.h"
#include "mixprec/jobs_report.h"
#include "mixprec/log.h"
#include "mixprec/model_io.h"
#include "mixprec/stop.h"
#include "support/explore_models.h"
#include "support/model_builder.h"
#include "support/temp_dir.h"

namespace mixprec {
namespace {
namespace fs = std::filesystem;
using testing::dead_layer_first_model;
using testing::one_sensitive_layer_model;
using testing::rotation_chain_model;
using testing::two_sensitive_layers_model;

std::string file(const std::string& path) { return read_file(path, "file"); }

// The ledger's lines without their timings (the only field allowed to differ between runs).
std::vector<std::string> ledger_without_timings(const std::string& file) {
  std::vector<std::string> lines;
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    const auto at = line.find("\"seconds\":");
    const auto end = line.find(',', at);
    lines.push_back(at == std::string::npos ? line : line.substr(0, at) + line.substr(end));
  }
  return lines;
}

// "evaluations" of a summary.json.
size_t summary_evaluations(const std::string& path) {
  const std::string text = read_file(path, "summary");
  const auto at = text.find("\"evaluations\":");
  return at == std::string::npos ? 0 : std::stoul(text.substr(at + 14));
}

class ExploreTest : public testing::TempDirTest {
 protected:
  ExploreParams params(Ranking ranking) {
    save_model(one_sensitive_layer_model(), path("model.onnx"));
    ExploreParams p;
    p.setup.model_path = path("model.onnx");
    p.setup.work_dir = path("work");
    p.setup.calibration = testing::test_calibration_data();
    p.setup.evaluation = testing::test_evaluation_data();
    p.setup.criterion.target = parse_target("psnr>30");
    p.search.ranking = ranking;
    // XINT8's own method, pinned: the evaluation counts below are the search's (an unpinned
    // start also tries PowerOfTwo_NonOverflow: StartTriesTheDevicesCalibrationMethods).
    p.search.calib_method = CalibMethod::kPowerOfTwoMinMse;
    return p;
  }
  // `p` (already run whole into work dir `whole`) stopped after its first step in work dir
  // "stopped", then resumed: the ledger and final model are the whole run's. Leaves `p` resuming.
  void expect_resume_ends_like(ExploreParams& p, const std::string& whole) {
    struct Interrupted {};
    p.setup.work_dir = path("stopped");
    EXPECT_THROW(explore(p, [](const ExploreStep&) { throw Interrupted{}; }), Interrupted);
    p.search.resume = true;
    const ExploreResult resumed = explore(p);
    EXPECT_EQ(resumed.resumed_steps, 1u);
    EXPECT_EQ(ledger_without_timings(path("stopped/ledger.jsonl")), ledger_without_timings(path(whole + "/ledger.jsonl")));
    EXPECT_TRUE(file(path("stopped/final.onnx")) == file(path(whole + "/final.onnx")));
  }
  // A run of two accepted steps (measured ranking), into work dir "whole".
  ExploreParams two_step_params() {
    ExploreParams p = params(Ranking::kMeasured);
    save_model(two_sensitive_layers_model(), p.setup.model_path);
    p.search.bf16_budget = 0.4;
    p.setup.work_dir = path("whole");
    return p;
  }
};

TEST_F(ExploreTest, BothRankingsFindTheSensitiveLayerFirst) {
  for (Ranking ranking : {Ranking::kDynamicRange, Ranking::kMeasured, Ranking::kLayerError}) {
    fs::remove_all(path("work"));
    const ExploreResult r = explore(params(ranking));
    ASSERT_FALSE(r.ranking.empty()) << to_string(ranking) << ": " << r.stop_reason;
    EXPECT_EQ(r.ranking.front(), "mix") << to_string(ranking);
    EXPECT_EQ(r.lifted_layers, std::vector<std::string>{"mix"}) << to_string(ranking);
    EXPECT_EQ(r.stop_reason, "criterion met");
    EXPECT_TRUE(r.final_verdict.pass);
    ASSERT_EQ(r.steps.size(), 1u);
    EXPECT_EQ(r.steps[0].decision, Decision::kAccepted);
    // Full INT8 and full BF16 baselines, then one step; measured ranking adds one per layer.
    const size_t ranking_cost = ranking == Ranking::kDynamicRange ? 0u
                                : ranking == Ranking::kMeasured   ? r.compute_layers
                                                                  : 2u;  // one FP32 and one INT8 pass
    EXPECT_EQ(r.evaluations, 3u + ranking_cost) << to_string(ranking);
    EXPECT_LT(r.int8_metrics.at(0).psnr_db, 30.0);
  }
}

TEST_F(ExploreTest, AccuracyIsMeasuredOnCpuWhateverTheProvider) {
  const ExploreResult on_cpu = explore(params(Ranking::kDynamicRange));
  EXPECT_FALSE(on_cpu.runtime_check.has_value());
  ExploreParams p = params(Ranking::kDynamicRange);
  p.setup.work_dir = path("work_cuda");
  p.deployment.provider = "CUDA";  // absent from the CPU-only build: only the final model's load check fails
  const ExploreResult r = explore(p);
  EXPECT_EQ(r.lifted_layers, on_cpu.lifted_layers);
  EXPECT_EQ(r.final_metrics.at(0).psnr_db, on_cpu.final_metrics.at(0).psnr_db);
  ASSERT_TRUE(r.runtime_check.has_value());
  EXPECT_FALSE(r.runtime_check->ok);
  EXPECT_NE(r.runtime_check->detail.find("not in this ONNX Runtime build"), std::string::npos) << r.runtime_check->detail;
}

TEST_F(ExploreTest, WithoutCalibrationDataItCalibratesOnSeededRandomDataWithAWarning) {
  ExploreParams p = params(Ranking::kDynamicRange);
  p.setup.calibration = DataSpec{};
  const ExploreResult r = explore(p);
  EXPECT_EQ(r.lifted_layers, std::vector<std::string>{"mix"});
  bool warned = false;
  for (const auto& w : r.warnings) warned = warned || w.find("no calibration data given") != std::string::npos;
  EXPECT_TRUE(warned);
}

TEST_F(ExploreTest, StartTriesTheDevicesCalibrationMethods) {
  // Unpinned, a preset start is calibrated with each method the device allows (ve2: the two
  // power-of-two ones) on the same statistics and keeps the best; the winner's evaluation is the
  // full INT8 baseline, so one evaluation more than a pinned start.
  ExploreParams p = params(Ranking::kDynamicRange);
  p.search.calib_method.reset();
  const ExploreResult r = explore(p);
  EXPECT_TRUE(r.calib_method == CalibMethod::kPowerOfTwoMinMse || r.calib_method == CalibMethod::kPowerOfTwoNonOverflow);
  EXPECT_EQ(r.evaluations, 4u);  // 2 methods, full BF16, 1 step
  EXPECT_EQ(load_config(r.final_config_path).extra.calib_method, r.calib_method);
  p.deployment.device = "cpu";  // the four built-in methods without power-of-two scales, and any
  p.setup.work_dir = path("work_cpu");  // another test in this process added (the table only grows)
  const auto others = std::ranges::count_if(all_calib_methods(), [](const auto& m) { return !m.power_of_two; });
  EXPECT_GE(others, 4);
  EXPECT_EQ(explore(p).evaluations, static_cast<size_t>(others) + 2u);
}

TEST_F(ExploreTest, CostSearchFindsTheCheapestPassingAssignmentAndWritesTheCurve) {
  ExploreParams p = params(Ranking::kDynamicRange);
  save_model(two_sensitive_layers_model(), p.setup.model_path);
  p.search.search = SearchMode::kCost;
  p.search.bf16_budget = 1.0;
  const ExploreResult r = explore(p);
  EXPECT_TRUE(r.final_verdict.pass) << r.stop_reason;
  const std::set<std::string> lifted(r.lifted_layers.begin(), r.lifted_layers.end());
  EXPECT_TRUE(lifted.count("mix_1") && lifted.count("mix_2"));
  // No dearer than bisection's fewest layers: on this 4-wide toy the Adds have no MACs, so
  // keeping them lifted next to the lifted MatMuls saves the boundaries INT8 Adds would add.
  ExploreParams fewest = p;
  fewest.search.search = SearchMode::kBisection;
  fewest.setup.work_dir = path("work_bisection");
  const ExploreResult bisection = explore(fewest);
  EXPECT_LE(r.final_time_vs_bf16, bisection.final_time_vs_bf16);
  // G candidates measured, then a few moves: within G + 2 log2 G + 5 with the two baselines.
  const size_t g = r.compute_layers;
  EXPECT_LE(r.evaluations, g + 2 * static_cast<size_t>(std::ceil(std::log2(static_cast<double>(g)))) + 5);
  EXPECT_EQ(r.steps.front().decision, Decision::kMeasured);
  const auto curve = nlohmann::json::parse(file(path("work/pareto.json")));
  ASSERT_FALSE(curve["points"].empty());
  double previous_time = -1, previous_objective = -1e300;
  for (const auto& point : curve["points"]) {  // cheapest first, each better than the cheaper ones
    EXPECT_GT(point["time_vs_bf16"].get<double>(), previous_time);
    EXPECT_GT(point["objective"].get<double>(), previous_objective);
    previous_time = point["time_vs_bf16"].get<double>();
    previous_objective = point["objective"].get<double>();
    EXPECT_TRUE(fs::exists(path("work/" + point["config"].get<std::string>())));
  }
  // The answer is on the curve: nothing evaluated that meets the criterion is cheaper.
  for (const auto& point : curve["points"]) {
    if (point["meets"].get<bool>()) {
      EXPECT_GE(point["time_vs_bf16"].get<double>(), r.final_time_vs_bf16 - 1e-12);
    }
  }
}

TEST_F(ExploreTest, WorkDirHoldsLedgerAndAReproducibleConfig) {
  const ExploreResult r = explore(params(Ranking::kDynamicRange));
  std::ifstream ledger(r.ledger_path);
  std::string line;
  size_t lines = 0;
  while (std::getline(ledger, line)) ++lines;
  EXPECT_EQ(lines, r.steps.size());
  EXPECT_TRUE(fs::exists(path("work/sensitivity.json")));
  EXPECT_TRUE(fs::exists(path("work/summary.json")));

  // final_config.json + the saved statistics give back the very same model through quantize.
  QuantizeParams q;
  q.setup.model_path = path("model.onnx");
  q.output_path = path("requantized.onnx");
  q.config.path = r.final_config_path;
  q.stats_path = path("work/stats.json");
  const QuantizeReport report = quantize_job(q);
  EXPECT_TRUE(report.stats_reused);
  EXPECT_TRUE(file(q.output_path) == file(r.final_model_path));
}

TEST_F(ExploreTest, FinalConfigInQuarksShapeReadsBackAsMixprecs) {
  ExploreParams p = params(Ranking::kDynamicRange);
  const ExploreResult ours = explore(p);
  p.setup.work_dir = path("work_quark");
  p.config_shape = ConfigShape::kQuark;
  const ExploreResult quark = explore(p);
  EXPECT_EQ(detect_config_shape(nlohmann::ordered_json::parse(file(quark.final_config_path)), "final_config.json"),
            ConfigShape::kQuark);
  EXPECT_EQ(load_config(quark.final_config_path), load_config(ours.final_config_path));
  EXPECT_EQ(file(quark.final_model_path), file(ours.final_model_path));
}

TEST_F(ExploreTest, SameInputsGiveTheSameLedger) {
  const ExploreResult first = explore(params(Ranking::kMeasured));
  fs::remove_all(path("work"));
  const ExploreResult second = explore(params(Ranking::kMeasured));
  ASSERT_EQ(first.steps.size(), second.steps.size());
  for (size_t i = 0; i < first.steps.size(); ++i) {
    EXPECT_EQ(first.steps[i].layer, second.steps[i].layer);
    EXPECT_EQ(first.steps[i].decision, second.steps[i].decision);
    EXPECT_EQ(first.steps[i].objective, second.steps[i].objective);
  }
  EXPECT_EQ(first.ranking, second.ranking);
}

// A budget of 0 bytes spills every evaluation sample to a file in the work dir: the metrics,
// ranking and ledger are those of the in-memory run, and no spill file is left.
TEST_F(ExploreTest, SpilledEvaluationSamplesGiveTheSameLedgerAsInMemory) {
  for (Ranking ranking : {Ranking::kLayerError, Ranking::kMeasured}) {
    fs::remove_all(path("work"));
    ExploreParams p = params(ranking);
    const ExploreResult memory = explore(p);
    const std::vector<std::string> memory_ledger = ledger_without_timings(memory.ledger_path);
    fs::remove_all(path("work"));
    p.setup.eval_cache_bytes = 0;  // every sample is spilled
    const ExploreResult spilled = explore(p);
    EXPECT_EQ(ledger_without_timings(spilled.ledger_path), memory_ledger) << to_string(ranking);
    EXPECT_EQ(spilled.ranking, memory.ranking) << to_string(ranking);
    ASSERT_EQ(spilled.final_metrics.size(), memory.final_metrics.size());
    for (size_t i = 0; i < memory.final_metrics.size(); ++i) {
      EXPECT_EQ(spilled.final_metrics[i].psnr_db, memory.final_metrics[i].psnr_db);
      EXPECT_EQ(spilled.final_metrics[i].pass_rate, memory.final_metrics[i].pass_rate);
      EXPECT_EQ(spilled.int8_metrics[i].psnr_db, memory.int8_metrics[i].psnr_db);
    }
    EXPECT_TRUE(file(spilled.final_model_path) == file(memory.final_model_path));
    for (const auto& entry : fs::directory_iterator(path("work"))) {
      EXPECT_EQ(entry.path().filename().string().find("eval-cache"), std::string::npos) << entry.path();
    }
  }
}

TEST_F(ExploreTest, TwoLayersNeedTwoAcceptedSteps) {
  ExploreParams p = params(Ranking::kDynamicRange);
  save_model(two_sensitive_layers_model(), p.setup.model_path);
  p.search.bf16_budget = 0.4;  // 2 of the 5 candidates (the default 30% allows only 1)
  const ExploreResult r = explore(p);
  EXPECT_EQ(r.stop_reason, "criterion met");
  EXPECT_EQ(r.lifted_layers, (std::vector<std::string>{"mix_1", "mix_2"}));
  ASSERT_EQ(r.steps.size(), 2u);
  EXPECT_GT(r.steps[1].psnr_db, r.steps[0].psnr_db);
}

TEST_F(ExploreTest, MaxIterationsStopsTheSearch) {
  ExploreParams p = params(Ranking::kDynamicRange);
  save_model(two_sensitive_layers_model(), p.setup.model_path);
  p.search.max_iterations = 1;
  const ExploreResult r = explore(p);
  EXPECT_EQ(r.stop_reason, "max iterations (1)");
  EXPECT_EQ(r.steps.size(), 1u);
  EXPECT_FALSE(r.final_verdict.pass);
  EXPECT_EQ(r.lifted_layers.size(), 1u);  // the best so far is kept
}

TEST_F(ExploreTest, Bf16BudgetStopsTheSearch) {
  ExploreParams p = params(Ranking::kDynamicRange);
  save_model(two_sensitive_layers_model(), p.setup.model_path);
  p.search.bf16_budget = 0.01;  // floor(0.01 x 5 candidates) = 0, and at least one layer is allowed
  const ExploreResult r = explore(p);
  EXPECT_NE(r.stop_reason.find("BF16 budget"), std::string::npos) << r.stop_reason;
  EXPECT_EQ(r.lifted_layers.size(), 1u);
}

TEST_F(ExploreTest, FullInt8PassingStopsBeforeAnySearch) {
  ExploreParams p = params(Ranking::kDynamicRange);
  p.setup.criterion.target = parse_target("psnr>-100");
  const ExploreResult r = explore(p);
  EXPECT_EQ(r.stop_reason, "full INT8 already meets the criterion");
  EXPECT_TRUE(r.steps.empty());
  EXPECT_EQ(r.evaluations, 1u);
  EXPECT_TRUE(fs::exists(r.final_model_path));  // the best so far is on disk
}

TEST_F(ExploreTest, UnreachableTargetStopsAfterFullBf16) {
  ExploreParams p = params(Ranking::kDynamicRange);
  p.setup.criterion.target = parse_target("psnr>190");  // beyond what bf16 (and fp16) rounding allows
  p.deployment.device = "stx";                      // no FP16 to suggest
  ExploreResult r = explore(p);
  EXPECT_NE(r.stop_reason.find("out of reach by precision alone"), std::string::npos) << r.stop_reason;
  EXPECT_EQ(r.evaluations, 2u);
  EXPECT_FALSE(r.final_verdict.pass);

  // ve2 runs FP16: one more evaluation says whether lifting to FP16 would do.
  p.deployment.device = "ve2";
  fs::remove_all(p.setup.work_dir);
  r = explore(p);
  EXPECT_EQ(r.evaluations, 3u);
  EXPECT_NE(r.stop_reason.find("full FP16 misses too"), std::string::npos) << r.stop_reason;
  // A target between full BF16 and full FP16 (FP16 keeps 3 more mantissa bits, ~18 dB).
  const double bf16_psnr = r.lifted_metrics.at(0).psnr_db;
  p.setup.criterion.target = parse_target("psnr>" + std::to_string(bf16_psnr + 6));
  fs::remove_all(p.setup.work_dir);
  r = explore(p);
  EXPECT_NE(r.stop_reason.find("full FP16 passes"), std::string::npos) << r.stop_reason;
  EXPECT_NE(r.stop_reason.find("--lift FP16"), std::string::npos) << r.stop_reason;
}

TEST_F(ExploreTest, PromotionThatChangesNothingIsSkipped) {
  ExploreParams p = params(Ranking::kDynamicRange);
  save_model(dead_layer_first_model(), p.setup.model_path);
  p.search.bf16_budget = 0.5;
  const ExploreResult r = explore(p);
  ASSERT_GE(r.ranking.size(), 2u);
  EXPECT_EQ(r.ranking[0], "echo");  // reads the same huge-range tensor as "mix", and comes first
  ASSERT_EQ(r.steps.size(), 2u) << r.stop_reason;
  EXPECT_EQ(r.steps[0].layer, "echo");
  EXPECT_EQ(r.steps[0].decision, Decision::kSkipped);
  EXPECT_EQ(r.steps[0].lifted_layers, 0u);
  EXPECT_EQ(r.steps[1].layer, "mix");
  EXPECT_EQ(r.steps[1].decision, Decision::kAccepted);
  EXPECT_EQ(r.lifted_layers, std::vector<std::string>{"mix"});
  EXPECT_EQ(r.stop_reason, "criterion met");
}

TEST_F(ExploreTest, SmallGainsEndOnThePlateauAndWorseningStepsAreRolledBack) {
  ExploreParams p = params(Ranking::kDynamicRange);
  save_model(rotation_chain_model(60), p.setup.model_path);
  p.setup.criterion.target = parse_target("psnr>35");  // full BF16 reaches ~36.4 dB, full INT8 ~23.7 dB
  const ExploreResult r = explore(p);
  ASSERT_EQ(r.stop_reason.rfind("PSNR plateau", 0), 0u) << r.stop_reason;
  std::vector<std::string> accepted;
  std::vector<double> gains;
  double best = r.int8_metrics.at(0).psnr_db;
  size_t rolled_back = 0;
  for (const auto& step : r.steps) {
    if (step.decision == Decision::kAccepted) {
      EXPECT_GT(step.psnr_db, best) << step.layer;
      gains.push_back(step.psnr_db - best);
      best = step.psnr_db;
      accepted.push_back(step.layer);
    } else {
      EXPECT_EQ(step.decision, Decision::kRolledBack) << step.layer;
      EXPECT_LT(step.psnr_db, best) << step.layer;
      ++rolled_back;
    }
    EXPECT_EQ(step.lifted_layers, accepted.size()) << step.layer;  // a rolled-back layer is not kept
  }
  ASSERT_GE(gains.size(), 3u);  // the plateau needs 3 accepted promotions
  EXPECT_LT(gains[gains.size() - 1] + gains[gains.size() - 2] + gains[gains.size() - 3], 0.5);
  EXPECT_EQ(r.steps.back().decision, Decision::kAccepted);  // the plateau is judged after an accepted step
  EXPECT_LT(best, 35.0);
  EXPECT_GT(rolled_back, 0u);
  std::sort(accepted.begin(), accepted.end());
  EXPECT_EQ(r.lifted_layers, accepted);
  EXPECT_DOUBLE_EQ(r.final_metrics.at(0).psnr_db, best);  // the best so far is what is kept
}

TEST_F(ExploreTest, LiftsToFp16WhereTheDeviceRunsIt) {
  ExploreParams p = params(Ranking::kDynamicRange);
  p.search.lift = "FP16";
  p.deployment.device = "stx";
  try {
    explore(p);
    FAIL() << "lifted to FP16 on stx";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("FP16 is not available on stx"), std::string::npos) << e.what();
  }
  p.deployment.device = "ve2";
  const ExploreResult r = explore(p);
  EXPECT_EQ(r.lifted_layers, std::vector<std::string>{"mix"});
  EXPECT_TRUE(r.final_verdict.pass);
  EXPECT_LT(r.int8_time_vs_bf16, 1.0);  // int8 layers run at twice bf16's rate on ve2
  // FP16 runs at BF16's rate on ve2: the same assignment costs the same. (On this 4-wide toy
  // the two INT8/FP16 boundaries around "mix" cost more than its MACs: 2.75x full BF16.)
  ExploreParams bf16 = p;
  bf16.search.lift = "BF16";
  bf16.setup.work_dir = path("work_bf16");
  EXPECT_DOUBLE_EQ(r.final_time_vs_bf16, explore(bf16).final_time_vs_bf16);
  EXPECT_EQ(r.final_transitions, 2u);
  p.search.lift = "XINT8";
  EXPECT_THROW(explore(p), Error);
}

// A block format as the lift: refused on the NPUs (experimental there), run on cpu. On this toy
// it cannot help: the sensitive MatMul's input holds 1000 beside values near 1 in one block,
// and the shared exponent leaves MX9 a step of 8 there (BF16 keeps each value's own exponent).
TEST_F(ExploreTest, LiftsToABlockFormatOnCpuAndRefusesItOnTheNpus) {
  ExploreParams p = params(Ranking::kDynamicRange);
  p.search.lift = "MX9";
  p.deployment.device = "stx";
  try {
    explore(p);
    FAIL() << "lifted to MX9 on stx";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("MX9 is not available on stx"), std::string::npos) << e.what();
  }
  p.deployment.device = "cpu";
  const ExploreResult r = explore(p);
  EXPECT_NE(r.stop_reason.find("full MX9 misses the criterion too"), std::string::npos) << r.stop_reason;
  ASSERT_FALSE(r.lifted_metrics.empty());
  EXPECT_LT(r.lifted_metrics[0].psnr_db, 30.0);
  ExploreParams bf16 = p;
  bf16.search.lift = "BF16";
  bf16.setup.work_dir = path("work_bf16");
  EXPECT_TRUE(explore(bf16).final_verdict.pass);
}

// Quark's S16S16_MIXED_S8S8 as a search: an INT8 (A8W8) base, layers lifted to INT16 (S16S16)
// where INT8 is not enough. The toy's sensitive MatMul reads a tensor whose range (~1000) int8
// cannot resolve but int16 can; stx has no INT16 kernels. The report names the A8W8 start.
TEST_F(ExploreTest, LiftsToInt16FromAnInt8Base) {
  ExploreParams p = params(Ranking::kDynamicRange);
  p.search.base_preset = "A8W8";
  p.search.calib_method = CalibMethod::kMinMax;
  p.search.lift = "S16S16";
  p.deployment.device = "stx";
  try {
    explore(p);
    FAIL() << "lifted to INT16 on stx";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not available on stx"), std::string::npos) << e.what();
  }
  p.deployment.device = "cpu";
  const ExploreResult r = explore(p);
  ASSERT_TRUE(r.final_verdict.pass) << r.stop_reason;
  const std::string config = read_file(r.final_config_path, "config");
  EXPECT_NE(config.find("Int16Spec"), std::string::npos) << config;
  EXPECT_NE(config.find("\"mix\""), std::string::npos) << config;
  EXPECT_EQ(r.base_name, "A8W8");
  const std::string text = explore_text(r, "S16S16", "cpu");
  EXPECT_NE(text.find("start       full A8W8 calibrated with MinMax"), std::string::npos) << text;
  EXPECT_NE(text.find("full A8W8"), std::string::npos) << text;
}

// Quark's S16S16_MIXED_S8S8 by name: the A8W8 start and the S16S16 lift (the default lift gives
// way; another one is an error before any work). quantize refuses it, naming the explore to run.
TEST_F(ExploreTest, TheSearchPresetS16S16MixedS8S8IsAnA8W8StartWithAnS16S16Lift) {
  ExploreParams p = params(Ranking::kDynamicRange);
  p.search.base_preset = "s16s16_mixed_s8s8";
  p.search.calib_method = CalibMethod::kMinMax;
  p.deployment.device = "cpu";
  const ExploreResult r = explore(p);
  ASSERT_TRUE(r.final_verdict.pass) << r.stop_reason;
  EXPECT_EQ(r.base_name, "A8W8");
  ASSERT_EQ(r.rungs.size(), 1u);
  EXPECT_EQ(r.rungs[0].lift, "S16S16");
  EXPECT_EQ(r.lifted_layers, std::vector<std::string>{"mix"});

  p.search.lift = "MX9";
  p.setup.work_dir = path("work_mx9");
  try {
    explore(p);
    FAIL() << "took a second lift";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_NE(std::string(e.what()).find("S16S16_MIXED_S8S8 lifts to S16S16: drop --lift MX9"), std::string::npos) << e.what();
  }
  try {
    resolve_config({.preset = "S16S16_MIXED_S8S8"});
    FAIL() << "quantize took a search preset";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is a search, not one config"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--preset A8W8 --lift S16S16"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(search_preset("A8W8"));
}

// The ladder's rungs are checked before any work, each error naming the offending rung; a
// single name keeps its message.
TEST_F(ExploreTest, LiftLaddersAreCheckedUpFrontNamingTheOffendingRung) {
  EXPECT_EQ(lift_ladder("MX9,BF16"), (std::vector<std::string>{"MX9", "BF16"}));
  EXPECT_EQ(lift_ladder(" MX9 , BF16 "), (std::vector<std::string>{"MX9", "BF16"}));
  EXPECT_EQ(lift_ladder("FP16"), std::vector<std::string>{"FP16"});
  // The message of the bad-input Error `run` throws; "accepted" when it throws none.
  const auto error_of = [](const auto& run) {
    try {
      run();
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kBadInput) << e.message();
      return e.message();
    }
    return std::string("accepted");
  };
  const auto message = [&](const std::string& lift) { return error_of([&] { lift_ladder(lift); }); };
  const std::string formats =
      " (a float or block format: BF16, FP16, BFP16, MX4, MX6, MX9, MXINT8, MXFP8E4M3, ...; or 16-bit integers: "
      "A16W8, S16S16)";
  EXPECT_EQ(lift_ladder("A16W8,BF16"), (std::vector<std::string>{"A16W8", "BF16"}));
  EXPECT_EQ(lift_ladder("S16S16"), std::vector<std::string>{"S16S16"});
  EXPECT_EQ(message("XINT8"), "cannot lift layers to 'XINT8'" + formats);
  EXPECT_EQ(message("MX9,XINT8"), "cannot lift layers to 'XINT8', rung 2 of the ladder 'MX9,XINT8'" + formats);
  EXPECT_EQ(message("MX9,BF17"), "cannot lift layers to 'BF17', rung 2 of the ladder 'MX9,BF17'" + formats);
  EXPECT_EQ(message("MX9,BF16,mx9"),
            "the lift ladder 'MX9,BF16,mx9' names mx9 twice (rungs 1 and 3): each rung is another format");
  EXPECT_EQ(message("MX9,,BF16"), "the lift ladder 'MX9,,BF16' has an empty rung 2");
  EXPECT_EQ(message("MX9,"), "the lift ladder 'MX9,' has an empty rung 2");

  // A rung the device cannot run: refused by explore before it calibrates.
  ExploreParams p = params(Ranking::kDynamicRange);
  p.search.lift = "BF16,MX9";
  p.deployment.device = "stx";
  const std::string refused = error_of([&] { explore(p); });
  EXPECT_EQ(refused.rfind("lifting to MX9 (rung 2 of BF16,MX9): MX9 is not available on stx", 0), 0u) << refused;
  EXPECT_FALSE(fs::exists(path("work/ledger.jsonl")));
  p.search.lift = "MX9,XINT8";
  EXPECT_EQ(error_of([&] { explore(p); }), message("MX9,XINT8"));
}

// The block toy as a ladder: full MX9 misses (the outlier shares a block with the sensitive
// MatMul's small values), so rung 2 starts with every layer at MX9 and raises the one that
// needs it to BF16. The final config holds both formats, priced at each one's speed.
TEST_F(ExploreTest, ALadderRaisesToItsSecondRungOnlyTheLayersTheFirstCannotServe) {
  ExploreParams p = params(Ranking::kDynamicRange);
  p.deployment.device = "cpu";
  p.search.lift = "MX9,BF16";
  const ExploreResult r = explore(p);
  ASSERT_TRUE(r.final_verdict.pass) << r.stop_reason;
  ASSERT_EQ(r.rungs.size(), 2u);
  EXPECT_FALSE(r.rungs[0].full_lift_passes);
  EXPECT_TRUE(r.rungs[1].ran);
  EXPECT_EQ(r.rungs[1].candidates, r.compute_layers);  // every layer was at MX9
  EXPECT_EQ(r.stop_reason.rfind("rung 1 (MX9): full MX9 misses the criterion too", 0), 0u) << r.stop_reason;
  EXPECT_NE(r.stop_reason.find("; rung 2 (BF16): criterion met"), std::string::npos) << r.stop_reason;
  ASSERT_EQ(r.lifted_layers.size(), r.compute_layers);
  std::map<std::string, std::string> format;
  for (size_t i = 0; i < r.lifted_layers.size(); ++i) format[r.lifted_layers[i]] = r.lifted_formats[i];
  EXPECT_EQ(format.at("mix"), "BF16");
  EXPECT_EQ(r.rungs[1].lifted, 1u);
  EXPECT_EQ(r.rungs[0].lifted, r.compute_layers - 1);
  for (const auto& [layer, f] : format) EXPECT_TRUE(layer == "mix" || f == "MX9") << layer << " " << f;

  // The config says it: one override per rung.
  const QuantConfig config = load_config(r.final_config_path);
  ASSERT_EQ(config.specific.size(), 2u);
  EXPECT_EQ(config.specific[0].layer_config.input_tensors->format, FormatId::kMx9);
  EXPECT_EQ(config.specific[1].layer_config.input_tensors->format, FormatId::kBFloat16);
  EXPECT_EQ(config.specific[1].target_node_names, std::vector<std::string>{"mix"});

  // Cheaper than full BF16 on cpu (block formats at 0.8 of fp32's rate, BF16 at 0.5); the
  // step that found it reported the same figure.
  EXPECT_LT(r.final_time_vs_bf16, 1.0);
  ASSERT_FALSE(r.steps.empty());
  EXPECT_EQ(r.steps.back().rung, 2u);
  EXPECT_EQ(r.steps.back().lift, "BF16");
  EXPECT_DOUBLE_EQ(r.steps.back().time_vs_bf16, r.final_time_vs_bf16);

  // Every file says which rung each lifted layer is at.
  const std::string ledger = file(r.ledger_path);
  EXPECT_NE(ledger.find("\"rung\":2,\"lift\":\"BF16\""), std::string::npos) << ledger;
  const auto summary = nlohmann::json::parse(file(path("work/summary.json")));
  EXPECT_EQ(summary.at("lift"), "MX9,BF16");
  EXPECT_EQ(summary.at("lifted_layer_formats").at("mix"), "BF16");
  EXPECT_EQ(summary.at("rungs").at(1).at("lifted"), 1);
  EXPECT_TRUE(fs::exists(path("work/sensitivity_rung2.json")));
}

// A rung 1 that meets the criterion is the single lift exactly; a ladder's resume replays its
// rungs and refuses another ladder.
TEST_F(ExploreTest, ALadderWhoseFirstRungMeetsIsTheSingleLiftAndResumesLikeOne) {
  ExploreParams single = params(Ranking::kDynamicRange);
  single.setup.work_dir = path("single");
  const ExploreResult one = explore(single);
  ASSERT_TRUE(one.final_verdict.pass);
  ExploreParams ladder = single;
  ladder.setup.work_dir = path("ladder");
  ladder.search.lift = "BF16,FP16";
  const ExploreResult two = explore(ladder);
  EXPECT_EQ(two.lifted_layers, one.lifted_layers);
  EXPECT_EQ(two.lifted_formats, std::vector<std::string>(one.lifted_layers.size(), "BF16"));
  EXPECT_EQ(two.final_metrics.at(0).psnr_db, one.final_metrics.at(0).psnr_db);
  EXPECT_EQ(two.final_time_vs_bf16, one.final_time_vs_bf16);
  EXPECT_EQ(two.evaluations, one.evaluations);
  EXPECT_FALSE(two.rungs[1].ran);
  EXPECT_EQ(two.stop_reason, "rung 1 (BF16): " + one.stop_reason);
  EXPECT_EQ(file(path("ladder/final_config.json")), file(path("single/final_config.json")));

  // Interrupted in rung 2 and resumed: the same ledger and files as the whole run.
  ExploreParams p = params(Ranking::kDynamicRange);
  p.deployment.device = "cpu";
  p.search.lift = "MX9,BF16";
  p.setup.work_dir = path("whole");
  const ExploreResult whole = explore(p);
  ASSERT_TRUE(whole.final_verdict.pass) << whole.stop_reason;
  struct Interrupted {};
  p.setup.work_dir = path("stopped");
  EXPECT_THROW(explore(p, [](const ExploreStep& s) {
                 if (s.index == 1) throw Interrupted{};
               }),
               Interrupted);
  p.search.resume = true;
  const ExploreResult resumed = explore(p);
  EXPECT_EQ(resumed.resumed_steps, 1u);
  EXPECT_EQ(resumed.lifted_layers, whole.lifted_layers);
  EXPECT_EQ(resumed.lifted_formats, whole.lifted_formats);
  EXPECT_EQ(resumed.stop_reason, whole.stop_reason);
  EXPECT_EQ(resumed.evaluations, whole.evaluations);
  EXPECT_EQ(ledger_without_timings(path("stopped/ledger.jsonl")), ledger_without_timings(path("whole/ledger.jsonl")));
  EXPECT_TRUE(file(path("stopped/final.onnx")) == file(path("whole/final.onnx")));
  EXPECT_EQ(file(path("stopped/final_config.json")), file(path("whole/final_config.json")));
  p.search.lift = "MX9,FP16";
  try {
    explore(p);
    FAIL() << "resumed with another ladder";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("another lift (\"MX9,BF16\" vs \"MX9,FP16\")"), std::string::npos) << e.message();
  }
}

TEST_F(ExploreTest, BisectionFindsTheFewestTopRankedLayers) {
  ExploreParams p = params(Ranking::kDynamicRange);
  save_model(two_sensitive_layers_model(), p.setup.model_path);
  p.search.search = SearchMode::kBisection;
  p.search.bf16_budget = 0.4;  // 2 of the 5 candidates
  p.search.trim = 0;           // the bisection alone (trimming: TrimmingKeepsTheFewestLayers...)
  const ExploreResult r = explore(p);
  ASSERT_EQ(r.steps.size(), 2u) << r.stop_reason;
  EXPECT_EQ(r.steps[0].layer, "top 2");  // the budget first
  EXPECT_EQ(r.steps[0].decision, Decision::kMeets);
  EXPECT_EQ(r.steps[1].layer, "top 1");
  EXPECT_EQ(r.steps[1].decision, Decision::kMisses);
  EXPECT_EQ(r.stop_reason, "bisection: the top 2 ranked layers are the fewest that meet the criterion");
  EXPECT_EQ(r.lifted_layers, (std::vector<std::string>{"mix_1", "mix_2"}));
  EXPECT_TRUE(r.final_verdict.pass);
  EXPECT_EQ(r.evaluations, 4u);
  // The best assignment is on disk and rebuilds to the same bytes.
  QuantizeParams q;
  q.setup.model_path = p.setup.model_path;
  q.output_path = path("again.onnx");
  q.config.path = r.final_config_path;
  q.stats_path = path("work/stats.json");
  quantize_job(q);
  EXPECT_TRUE(file(q.output_path) == file(r.final_model_path));
}

TEST_F(ExploreTest, BisectionReusesTheFullLiftBaselineWhenTheBudgetAllowsEveryLayer) {
  ExploreParams p = params(Ranking::kDynamicRange);
  save_model(two_sensitive_layers_model(), p.setup.model_path);
  p.search.search = SearchMode::kBisection;
  p.search.bf16_budget = 1.0;  // 5 of 5: "top 5" is full BF16, measured as a baseline already
  p.search.trim = 0;
  const ExploreResult r = explore(p);
  ASSERT_EQ(r.steps.size(), 2u) << r.stop_reason;
  EXPECT_EQ(r.steps[0].layer, "top 2");
  EXPECT_EQ(r.steps[1].layer, "top 1");
  EXPECT_EQ(r.evaluations, 4u);  // 2 baselines + 2 steps
  // SPEC: the answer is the cheapest assignment seen that meets the criterion, full BF16
  // included; the bisection's fewest layers (the two mix layers) lose when their INT8/float
  // boundaries cost more than lifting the rest.
  ASSERT_TRUE(r.final_verdict.pass);
  for (const auto& step : r.steps) {
    if (step.meets_criterion) {
      EXPECT_LE(r.final_time_vs_bf16, step.time_vs_bf16) << step.layer;
    }
  }
  EXPECT_LE(r.final_time_vs_bf16, 1.0);
  if (r.lifted_layers.size() != 2) {
    EXPECT_NE(r.stop_reason.find("kept the cheapest"), std::string::npos) << r.stop_reason;
  }
}

// x -> spread_1 (Add 1000 to channel 0) -> mix_1 -> carry -> spread_2 -> mix_2 -> tail_1 -> tail_2
// -> tail_3 -> y, [1, 16] tensors, MatMuls 16 x 16 (256 MACs). The mix layers lose the other
// channels to a range of 1000 in INT8 (their weights read channel 0 with zeros, so what they
// write has an ordinary range); carry and the tails (identities) read ordinary values. On ve2 an
// INT8 MatMul saves 128 BF16-MACs and a boundary costs 16 elements x 8 = 128: an INT8 carry
// between lifted neighbours costs 2 boundaries (256) for 128 saved.
onnx::ModelProto sandwich_model() {
  constexpr int64_t kWidth = 16;
  std::vector<float> spread(kWidth, 0.0f), identity(kWidth * kWidth, 0.0f);
  spread[0] = 1000;
  for (int64_t i = 0; i < kWidth; ++i) identity[static_cast<size_t>(i * kWidth + i)] = 1;
  std::vector<float> mix = testing::deterministic_values(kWidth * kWidth, 7, 0.5f);
  std::fill(mix.begin(), mix.begin() + kWidth, 0.0f);  // row 0: channel 0 does not reach the output
  testing::ModelBuilder b;
  b.add_input("x", onnx::TensorProto::FLOAT, {1, kWidth})
      .add_output("y", onnx::TensorProto::FLOAT, {1, kWidth})
      .add_initializer("c_spread", {kWidth}, spread)
      .add_initializer("w_mix", {kWidth, kWidth}, mix)
      .add_initializer("w_identity", {kWidth, kWidth}, identity)
      .add_node("Add", {"x", "c_spread"}, {"wide_1"}, {}, "spread_1")
      .add_node("MatMul", {"wide_1", "w_mix"}, {"mixed_1"}, {}, "mix_1")
      .add_node("MatMul", {"mixed_1", "w_identity"}, {"carried"}, {}, "carry")
      .add_node("Add", {"carried", "c_spread"}, {"wide_2"}, {}, "spread_2")
      .add_node("MatMul", {"wide_2", "w_mix"}, {"t_0"}, {}, "mix_2");
  for (int i = 1; i <= 3; ++i) {
    const std::string in = "t_" + std::to_string(i - 1);
    const std::string out = i == 3 ? "y" : "t_" + std::to_string(i);
    b.add_node("MatMul", {in, "w_identity"}, {out}, {}, "tail_" + std::to_string(i));
  }
  return b.build();
}

// The bisection's fewest are the two mix layers: 2 x 256 lifted + 4 x 128 INT8 + 4 boundaries x
// 128 (wide_1, mixed_1, wide_2, t_0) = 1536, full BF16's 6 x 256 exactly. Filling the INT8
// islands between and before them (spread_1, then carry + spread_2: each removes boundaries for
// at most carry's 128) leaves 3 x 256 + 3 x 128 + t_0's 128 = 1280, 0.833x; lifting the tails
// too would add 384 to save 128. One evaluation, kept as the answer, and a resumed run replays it.
TEST_F(ExploreTest, TheBisectionsFewestLayersWithTheirInt8IslandsLiftedAreTheCheaperAnswer) {
  ExploreParams p = params(Ranking::kDynamicRange);
  save_model(sandwich_model(), p.setup.model_path);
  p.search.search = SearchMode::kBisection;
  p.search.bf16_budget = 1.0;
  p.search.trim = 0;  // the bisection and the fill alone; with trimming: the test after this
  p.setup.work_dir = path("whole");
  const ExploreResult r = explore(p);
  ASSERT_GE(r.steps.size(), 2u) << r.stop_reason;
  const ExploreStep& fewest = r.steps[r.steps.size() - 2];
  const ExploreStep& filled = r.steps.back();
  EXPECT_EQ(fewest.layer, "top 1");
  EXPECT_EQ(fewest.decision, Decision::kMisses);
  EXPECT_EQ(filled.layer, "2 + 3 filling INT8 islands");
  EXPECT_EQ(filled.decision, Decision::kMeets);
  EXPECT_NEAR(filled.time_vs_bf16, 1280.0 / 1536.0, 1e-9);
  EXPECT_EQ(r.lifted_layers, (std::vector<std::string>{"carry", "mix_1", "mix_2", "spread_1", "spread_2"}));
  EXPECT_NEAR(r.final_time_vs_bf16, 1280.0 / 1536.0, 1e-9);
  EXPECT_TRUE(r.final_verdict.pass);
  EXPECT_NE(r.stop_reason.find("the top 2 ranked layers are the fewest"), std::string::npos) << r.stop_reason;
  for (const auto& step : r.steps) {
    if (step.layer == "top 2") {
      EXPECT_NEAR(step.time_vs_bf16, 1.0, 1e-9);
    }
  }
  expect_resume_ends_like(p, "whole");
}

// Trimming the same run, as a bisection does by default (kDefaultTrim): the bisection's fewest
// are the two mix layers, and each is needed. Dropping the lower-ranked one leaves the top 1 the
// bisection measured (a miss, no evaluation); dropping the other misses (one evaluation); then
// the fill as before. run.json and summary.json record the setting, and a resumed run replays
// the drop.
TEST_F(ExploreTest, TrimmingKeepsTheFewestLayersTheCriterionNeeds) {
  ExploreParams p = params(Ranking::kDynamicRange);
  save_model(sandwich_model(), p.setup.model_path);
  p.search.search = SearchMode::kBisection;
  p.search.bf16_budget = 1.0;
  p.setup.work_dir = path("whole");
  const ExploreResult r = explore(p);
  ASSERT_GE(r.steps.size(), 3u) << r.stop_reason;
  EXPECT_EQ(r.steps[r.steps.size() - 3].layer, "top 1");  // the bisection's last step: a miss
  EXPECT_EQ(r.steps[r.steps.size() - 3].decision, Decision::kMisses);
  const ExploreStep& drop = r.steps[r.steps.size() - 2];
  EXPECT_EQ(drop.layer, "trim: drop the 1 lowest-ranked of 1 (1 left)");
  EXPECT_EQ(drop.decision, Decision::kMisses);
  EXPECT_EQ(r.steps.back().layer, "2 + 3 filling INT8 islands");
  EXPECT_EQ(r.trimmed, 0u);
  EXPECT_EQ(r.lifted_layers, (std::vector<std::string>{"carry", "mix_1", "mix_2", "spread_1", "spread_2"}));
  EXPECT_NE(r.stop_reason.find("fewest that meet the criterion; trimming dropped 0 of them in 1 evaluation (2 left)"),
            std::string::npos)
      << r.stop_reason;
  const auto run = nlohmann::json::parse(file(path("whole/run.json")));
  EXPECT_EQ(run.at("trim"), kDefaultTrim);
  const auto summary = nlohmann::json::parse(file(path("whole/summary.json")));
  EXPECT_EQ(summary.at("trim"), kDefaultTrim);
  EXPECT_EQ(summary.at("trimmed"), 0);
  expect_resume_ends_like(p, "whole");

  // Resuming with another setting is refused, naming it.
  p.search.trim = 0;
  try {
    explore(p);
    ADD_FAILURE() << "resumed with another trim";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("another trim (" + std::to_string(kDefaultTrim) + " vs 0)"), std::string::npos)
        << e.message();
  }

  // A work dir written before trimming existed has no "trim" in run.json: it ran untrimmed, so
  // resuming it with the default is refused with the way to resume it. (nlohmann::json writes
  // the other keys back sorted: the check compares objects whatever their key order.)
  const std::string run_json = p.setup.work_dir + "/run.json";  // the resumed work dir
  auto old_run = nlohmann::json::parse(file(run_json));
  old_run.erase("trim");
  std::ofstream(run_json) << old_run.dump(2);
  p.search.trim.reset();
  try {
    explore(p);
    ADD_FAILURE() << "resumed an untrimmed run with the default trim";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("written before a bisection trimmed by default (trim 0 vs " + std::to_string(kDefaultTrim) +
                               "): resume it with --trim 0"),
              std::string::npos)
        << e.message();
  }
}

TEST_F(ExploreTest, BisectionStopsWhenTheBudgetItselfMisses) {
  ExploreParams p = params(Ranking::kDynamicRange);
  save_model(two_sensitive_layers_model(), p.setup.model_path);
  p.search.search = SearchMode::kBisection;
  p.search.bf16_budget = 0.2;  // 1 of 5: one mix_k lifted is not enough
  const ExploreResult r = explore(p);
  ASSERT_EQ(r.steps.size(), 1u);
  EXPECT_NE(r.stop_reason.find("still miss"), std::string::npos) << r.stop_reason;
  EXPECT_FALSE(r.final_verdict.pass);
  EXPECT_EQ(r.lifted_layers.size(), 1u);  // better than full INT8, so kept as the best so far
}

TEST_F(ExploreTest, BisectionResumesLikeAnUninterruptedRun) {
  ExploreParams p = params(Ranking::kLayerError);
  save_model(two_sensitive_layers_model(), p.setup.model_path);
  p.search.search = SearchMode::kBisection;
  p.search.bf16_budget = 0.4;
  p.setup.work_dir = path("whole");
  explore(p);
  expect_resume_ends_like(p, "whole");
}

// Adaptive ranking on the real workbench: after each bisection round that misses, the layers
// behind the top k are scored again (one exposed pass: 2 evaluations, FP32 and the mixed model)
// in the state the top k leave. The run says how often, resumes like an uninterrupted one, and
// refuses what cannot re-score a state.
TEST_F(ExploreTest, AdaptiveBisectionReranksAfterEachMissAndResumesLikeAnUninterruptedRun) {
  ExploreParams p = params(Ranking::kLayerError);
  save_model(rotation_chain_model(16), p.setup.model_path);
  p.setup.criterion.target = parse_target("psnr>40");  // full XINT8 33.5 dB, full BF16 46.8 dB
  p.search.search = SearchMode::kBisection;
  p.search.bf16_budget = 1.0;
  p.search.adaptive = true;
  p.setup.work_dir = path("whole");
  const ExploreResult r = explore(p);
  ASSERT_TRUE(r.final_verdict.pass) << r.stop_reason;
  size_t misses = 0;
  for (const auto& step : r.steps) misses += step.decision == Decision::kMisses ? 1 : 0;
  ASSERT_GE(misses, 1u);
  // A miss that ends the bisection (hi - lo = 1) needs no new order.
  EXPECT_GE(r.reranks, 1u);
  EXPECT_LE(r.reranks, misses);
  // full INT8, full BF16, the ranking's exposed pass (2), each step, each re-ranking (2).
  EXPECT_EQ(r.rerank_evaluations, 2 * r.reranks);
  EXPECT_EQ(r.evaluations, 2 + 2 + r.steps.size() + r.rerank_evaluations);
  const nlohmann::json summary = nlohmann::json::parse(file(path("whole/summary.json")));
  EXPECT_EQ(summary.at("adaptive"), true);
  EXPECT_EQ(summary.at("reranks"), r.reranks);
  EXPECT_NE(html_report(path("whole"))
                .find("layer-error, adaptive (re-scored in the mixed state: " + std::to_string(r.reranks) + " re-ranking"),
            std::string::npos);
  EXPECT_NE(explore_text(r, "BF16", "ve2")
                .find(std::to_string(2 * r.reranks) + " of them in " + std::to_string(r.reranks) + " adaptive re-rankings"),
            std::string::npos);

  expect_resume_ends_like(p, "whole");
  // Resuming without --adaptive is another run.
  p.search.adaptive = false;
  try {
    explore(p);
    ADD_FAILURE() << "resumed an adaptive run without --adaptive";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("another adaptive"), std::string::npos) << e.message();
  }

  // Rankings that cannot score a mixed state, and the cost search (it measures instead), refuse it.
  for (const auto& [ranking, search] : {std::pair{Ranking::kDynamicRange, SearchMode::kBisection},
                                        std::pair{Ranking::kMeasured, SearchMode::kGreedy},
                                        std::pair{Ranking::kLayerError, SearchMode::kCost}}) {
    ExploreParams bad = params(ranking);
    bad.search.search = search;
    bad.search.adaptive = true;
    bad.setup.work_dir = path("bad");
    try {
      explore(bad);
      ADD_FAILURE() << to_string(ranking) << " with " << to_string(search) << " took --adaptive";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
      EXPECT_NE(e.message().find("--adaptive re-scores with the layer-error or injected-noise ranking"), std::string::npos)
          << e.message();
    }
  }
}

TEST(ExploreDefaults, AdaptiveRankingIsOnForABisectionOverAStateRankingUnlessSaidOtherwise) {
  SearchOptions o;
  EXPECT_FALSE(adaptive_ranking(o));  // SPEC's greedy, as SPEC has it
  o.search = SearchMode::kBisection;
  EXPECT_TRUE(adaptive_ranking(o));  // layer-error
  o.ranking = Ranking::kInjectedNoise;
  EXPECT_TRUE(adaptive_ranking(o));
  o.ranking = Ranking::kDynamicRange;  // nothing to re-score
  EXPECT_FALSE(adaptive_ranking(o));
  o.ranking = Ranking::kLayerError;
  o.adaptive = false;
  EXPECT_FALSE(adaptive_ranking(o));
  o.search = SearchMode::kGreedy;
  o.adaptive = true;
  EXPECT_TRUE(adaptive_ranking(o));
}

TEST(ExploreDefaults, TrimmingIsOnForABisectionWithoutParetoUnlessSaidOtherwise) {
  SearchOptions o;
  EXPECT_EQ(trim_tries(o), 0u);  // SPEC's greedy, as SPEC has it
  o.search = SearchMode::kBisection;
  EXPECT_EQ(trim_tries(o), kDefaultTrim);
  o.pareto = true;  // what max_iterations leaves goes to the curve
  EXPECT_EQ(trim_tries(o), 0u);
  o.trim = 7;
  EXPECT_EQ(trim_tries(o), 7u);
  o.search = SearchMode::kGreedy;
  EXPECT_EQ(trim_tries(o), 7u);
  o.trim = 0;
  o.search = SearchMode::kBisection;
  o.pareto = false;
  EXPECT_EQ(trim_tries(o), 0u);
}

TEST(ExploreNames, RankingsAndSearchModes) {
  EXPECT_EQ(ranking_names().from_name("layer-error"), Ranking::kLayerError);
  EXPECT_EQ(ranking_names().from_name("random"), std::nullopt);
  EXPECT_EQ(search_mode_names().from_name("bisection"), SearchMode::kBisection);
  EXPECT_STREQ(to_string(SearchMode::kGreedy), "greedy");
}

TEST(ExploreGuardrails, PromotionDecisions) {
  EXPECT_EQ(promotion_decision(20.0, 20.5), Decision::kAccepted);
  EXPECT_EQ(promotion_decision(20.0, 20.0), Decision::kSkipped);
  EXPECT_EQ(promotion_decision(20.0, 19.9), Decision::kRolledBack);
  // Objectives where lower is better are negated by the search, so the rule stays "higher wins".
  EXPECT_EQ(promotion_decision(-0.2, -0.1), Decision::kAccepted);
  // Ties on a coarse objective (top-1 over 16 rows) are broken by the worst-output PSNR.
  EXPECT_EQ(promotion_decision(0.8125, 0.8125, 12.8, 13.3), Decision::kAccepted);
  EXPECT_EQ(promotion_decision(0.8125, 0.8125, 12.8, 12.6), Decision::kRolledBack);
  EXPECT_EQ(promotion_decision(0.8125, 0.8125, 12.8, 12.8), Decision::kSkipped);
  EXPECT_EQ(promotion_decision(0.8125, 0.875, 12.8, 11.0), Decision::kAccepted);  // the objective comes first
}

TEST(ExploreGuardrails, PsnrPlateauNeedsThreeSmallGainsInARow) {
  EXPECT_FALSE(psnr_plateau({}));
  EXPECT_FALSE(psnr_plateau({0.1, 0.1}));          // fewer than 3 promotions
  EXPECT_TRUE(psnr_plateau({0.1, 0.1, 0.1}));      // +0.3 dB over 3
  EXPECT_FALSE(psnr_plateau({0.2, 0.2, 0.2}));     // +0.6 dB over 3
  EXPECT_TRUE(psnr_plateau({12.0, 0.2, 0.1, 0.1}));  // only the last 3 count
  EXPECT_FALSE(psnr_plateau({0.1, 0.1, 0.1, 0.5}));
  EXPECT_TRUE(psnr_plateau({0.5, -0.2, 0.1}));     // a worsening in the window drags the sum down
}

TEST_F(ExploreTest, ResumeAfterAnInterruptionEndsLikeAnUninterruptedRun) {
  ExploreParams p = two_step_params();
  const ExploreResult whole = explore(p);
  ASSERT_EQ(whole.steps.size(), 2u) << whole.stop_reason;

  struct Interrupted {};
  p.setup.work_dir = path("stopped");
  EXPECT_THROW(explore(p, [](const ExploreStep& s) {
                 if (s.index == 1) throw Interrupted{};
               }),
               Interrupted);
  EXPECT_EQ(ledger_without_timings(path("stopped/ledger.jsonl")).size(), 1u);

  p.search.resume = true;
  std::vector<size_t> reported;
  const ExploreResult resumed = explore(p, [&](const ExploreStep& s) { reported.push_back(s.index); });
  EXPECT_EQ(resumed.resumed_steps, 1u);
  EXPECT_EQ(reported, std::vector<size_t>{2});  // the replayed step is not run or reported again
  EXPECT_EQ(resumed.stop_reason, whole.stop_reason);
  EXPECT_EQ(resumed.lifted_layers, whole.lifted_layers);
  EXPECT_EQ(ledger_without_timings(path("stopped/ledger.jsonl")), ledger_without_timings(path("whole/ledger.jsonl")));
  EXPECT_TRUE(file(path("stopped/final.onnx")) == file(path("whole/final.onnx")));
  EXPECT_EQ(file(path("stopped/final_config.json")), file(path("whole/final_config.json")));
  // The measured ranking was read back, not measured again: 2 baselines, the best so far
  // rebuilt once from the ledger, 1 new step. The summary counts what the uninterrupted run
  // spent (the README's promise: a resumed run ends as if it had never stopped).
  EXPECT_EQ(resumed.evaluations_this_run, 4u);
  EXPECT_EQ(resumed.evaluations, whole.evaluations);
  EXPECT_EQ(summary_evaluations(path("stopped/summary.json")), summary_evaluations(path("whole/summary.json")));

  // Resuming a finished run replays it all and evaluates only what the summary needs.
  const ExploreResult again = explore(p);
  EXPECT_EQ(again.resumed_steps, 2u);
  EXPECT_EQ(again.lifted_layers, whole.lifted_layers);
  EXPECT_TRUE(file(path("stopped/final.onnx")) == file(path("whole/final.onnx")));
}

TEST_F(ExploreTest, ResumeRefusesOtherSettingsAndEmptyWorkDirs) {
  ExploreParams p = params(Ranking::kDynamicRange);
  p.search.resume = true;
  try {
    explore(p);
    FAIL() << "resumed from nothing";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_NE(std::string(e.what()).find("nothing to resume"), std::string::npos) << e.what();
  }
  p.search.resume = false;
  explore(p);
  p.search.resume = true;
  p.setup.criterion.target = parse_target("psnr>35");
  try {
    explore(p);
    FAIL() << "resumed with another target";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("another target"), std::string::npos) << e.what();
  }
}

TEST_F(ExploreTest, ResumeDropsALineCutByACrash) {
  ExploreParams p = params(Ranking::kDynamicRange);
  save_model(two_sensitive_layers_model(), p.setup.model_path);
  p.search.bf16_budget = 0.4;
  const ExploreResult whole = explore(p);
  ASSERT_EQ(whole.steps.size(), 2u);
  const auto lines = ledger_without_timings(whole.ledger_path);
  // Keep step 1 and half of step 2's line, as a crash while writing would.
  std::string text = file(whole.ledger_path);
  text = text.substr(0, text.find('\n') + 1 + 20);
  std::ofstream(whole.ledger_path, std::ios::trunc) << text;
  p.search.resume = true;
  const ExploreResult resumed = explore(p);
  EXPECT_EQ(resumed.resumed_steps, 1u);
  EXPECT_EQ(ledger_without_timings(whole.ledger_path), lines);
  EXPECT_EQ(resumed.lifted_layers, whole.lifted_layers);
}

TEST_F(ExploreTest, AStopRequestEndsTheRunAfterTheStepInProgressWithTheBestOnDisk) {
  ExploreParams p = two_step_params();
  const ExploreResult whole = explore(p);
  ASSERT_EQ(whole.steps.size(), 2u) << whole.stop_reason;

  // SIGINT arrives while step 1 runs: the CLI's handler calls request_stop().
  p.setup.work_dir = path("stopped");
  try {
    explore(p, [](const ExploreStep& s) {
      if (s.index == 1) request_stop(SIGINT);
    });
    ADD_FAILURE() << "the run did not stop";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::kCancelled);
    EXPECT_NE(std::string(error.what()).find("stopped by SIGINT after the step in progress"), std::string::npos)
        << error.what();
  }
  clear_stop_request();
  EXPECT_EQ(ledger_without_timings(path("stopped/ledger.jsonl")).size(), 1u);  // step 1 is written
  EXPECT_TRUE(fs::exists(path("stopped/final.onnx")));
  EXPECT_TRUE(fs::exists(path("stopped/final_config.json")));
  const std::string summary = file(path("stopped/summary.json"));
  EXPECT_NE(summary.find("\"stop_reason\": \"interrupted: stopped by SIGINT"), std::string::npos) << summary;

  p.search.resume = true;
  const ExploreResult resumed = explore(p);
  EXPECT_EQ(resumed.lifted_layers, whole.lifted_layers);
  EXPECT_EQ(ledger_without_timings(path("stopped/ledger.jsonl")), ledger_without_timings(path("whole/ledger.jsonl")));
  EXPECT_TRUE(file(path("stopped/final.onnx")) == file(path("whole/final.onnx")));
}

}  // namespace
}  // namespace mixprec
