// Exploration on a model built so that exactly one layer is sensitive: "mix" reads a tensor
// whose channel 0 is ~1000 while the channels that matter are within [-1, 1], so its per-tensor
// power-of-two int8 scale (2^ceil(log2(1001/127)) = 8) rounds them all to zero. Lifting "mix"
// alone to BF16 restores the output.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "mixprec/error.h"
#include "mixprec/explore.h"
#include "mixprec/model_io.h"
#include "support/model_builder.h"
#include "support/temp_dir.h"

namespace mixprec {
namespace {
namespace fs = std::filesystem;
using testing::ModelBuilder;

// x [1,4] → Add "spread" (+1000 on channel 0; the constant is exact at scale 8) → MatMul
// "mix" (ignores channel 0) → MatMul "head" → y [1,4]
onnx::ModelProto one_sensitive_layer_model() {
  const std::vector<float> spread = {1000, 0, 0, 0};
  const std::vector<float> mix = {0, 0, 0, 0, 1, 2, 0, 1, 2, 1, 1, 0, 0, 1, 2, 1};
  const std::vector<float> head = {1, 0.5f, 0, 0, 0, 1, 0.5f, 0, 0, 0, 1, 0.5f, 0.5f, 0, 0, 1};
  return ModelBuilder()
      .add_input("x", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{4}})
      .add_output("y", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{4}})
      .add_initializer("c_spread", {4}, spread)
      .add_initializer("w_mix", {4, 4}, mix)
      .add_initializer("w_head", {4, 4}, head)
      .add_node("Add", {"x", "c_spread"}, {"wide"}, {}, "spread")
      .add_node("MatMul", {"wide", "w_mix"}, {"mixed"}, {}, "mix")
      .add_node("MatMul", {"mixed", "w_head"}, {"y"}, {}, "head")
      .build();
}

// Two branches like the model above, summed: each "mix_k" alone is worth lifting, and the
// target needs both, so a search takes two accepted steps.
onnx::ModelProto two_sensitive_layers_model() {
  const std::vector<float> spread = {1000, 0, 0, 0};
  const std::vector<float> mix = {0, 0, 0, 0, 1, 2, 0, 1, 2, 1, 1, 0, 0, 1, 2, 1};
  ModelBuilder b;
  b.add_input("x", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{4}})
      .add_output("y", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{4}})
      .add_initializer("c_spread", {4}, spread)
      .add_initializer("w_mix", {4, 4}, mix);
  for (const char* k : {"1", "2"}) {
    const std::string s = k;
    b.add_node("Add", {"x", "c_spread"}, {"wide_" + s}, {}, "spread_" + s)
        .add_node("MatMul", {"wide_" + s, "w_mix"}, {"mixed_" + s}, {}, "mix_" + s);
  }
  b.add_node("Add", {"mixed_1", "mixed_2"}, {"y"}, {}, "sum");
  return b.build();
}

// "echo" reads the huge-range tensor too, so the dynamic-range ranking puts it first; its output
// only reaches y through zero weights, so lifting it cannot change y: the search must skip it.
onnx::ModelProto dead_layer_first_model() {
  const std::vector<float> spread = {1000, 0, 0, 0};
  const std::vector<float> mix = {0, 0, 0, 0, 1, 2, 0, 1, 2, 1, 1, 0, 0, 1, 2, 1};
  const std::vector<float> zero(16, 0.0f);
  return ModelBuilder()
      .add_input("x", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{4}})
      .add_output("y", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{4}})
      .add_initializer("c_spread", {4}, spread)
      .add_initializer("w_mix", {4, 4}, mix)
      .add_initializer("w_zero", {4, 4}, zero)
      .add_node("Add", {"x", "c_spread"}, {"wide"}, {}, "spread")
      .add_node("MatMul", {"wide", "w_mix"}, {"echoed"}, {}, "echo")
      .add_node("MatMul", {"echoed", "w_zero"}, {"silenced"}, {}, "silence")
      .add_node("MatMul", {"wide", "w_mix"}, {"mixed"}, {}, "mix")
      .add_node("Add", {"mixed", "silenced"}, {"y"}, {}, "join")
      .build();
}

// A chain of `stages` MatMuls by the same 4x4 orthonormal DCT-II matrix: every stage adds
// quantization noise of about the same power, so lifting any one stage gains little (about
// 10*log10(60/59) = 0.07 dB for 60 stages) and noise from different stages sometimes cancels,
// so a lift can also make the output worse.
onnx::ModelProto rotation_chain_model(int stages) {
  const std::vector<float> dct = {0.5f,       0.5f,       0.5f,      0.5f,       0.653281f, 0.270598f,
                                  -0.270598f, -0.653281f, 0.5f,      -0.5f,      -0.5f,     0.5f,
                                  0.270598f,  -0.653281f, 0.653281f, -0.270598f};
  ModelBuilder b;
  b.add_input("x", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{4}})
      .add_output("y", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{4}})
      .add_initializer("dct", {4, 4}, dct);
  std::string previous = "x";
  for (int i = 1; i <= stages; ++i) {
    const std::string index = std::to_string(i);
    const std::string out = i == stages ? std::string("y") : std::string("t").append(index);
    b.add_node("MatMul", {previous, "dct"}, {out}, {}, std::string("rotate_").append(index));
    previous = out;
  }
  return b.build();
}

std::string file_bytes(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

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

class ExploreTest : public testing::TempDirTest {
 protected:
  ExploreParams params(Ranking ranking) {
    save_model(one_sensitive_layer_model(), path("model.onnx"));
    ExploreParams p;
    p.model_path = path("model.onnx");
    p.work_dir = path("work");
    p.calibration.data.random_samples = 16;
    p.calibration.data.seed = 1;
    p.evaluation.data.random_samples = 32;
    p.evaluation.data.seed = 2;
    p.target = parse_target("psnr>30");
    p.ranking = ranking;
    return p;
  }
};

TEST_F(ExploreTest, BothRankingsFindTheSensitiveLayerFirst) {
  for (Ranking ranking : {Ranking::kDynamicRange, Ranking::kMeasured}) {
    fs::remove_all(path("work"));
    const ExploreResult r = explore(params(ranking));
    ASSERT_FALSE(r.ranking.empty()) << to_string(ranking) << ": " << r.stop_reason;
    EXPECT_EQ(r.ranking.front(), "mix") << to_string(ranking);
    EXPECT_EQ(r.bf16_layers, std::vector<std::string>{"mix"}) << to_string(ranking);
    EXPECT_EQ(r.stop_reason, "criterion met");
    EXPECT_TRUE(r.final_verdict.pass);
    ASSERT_EQ(r.steps.size(), 1u);
    EXPECT_EQ(r.steps[0].decision, "accepted");
    // Full INT8 and full BF16 baselines, then one step; measured ranking adds one per layer.
    EXPECT_EQ(r.evaluations, ranking == Ranking::kDynamicRange ? 3u : 3u + r.compute_layers);
    EXPECT_LT(r.int8_metrics.at(0).psnr_db, 30.0);
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
  q.model_path = path("model.onnx");
  q.output_path = path("requantized.onnx");
  q.config_path = r.final_config_path;
  q.stats_path = path("work/stats.json");
  const QuantizeReport report = quantize_job(q);
  EXPECT_TRUE(report.stats_reused);
  EXPECT_TRUE(file_bytes(q.output_path) == file_bytes(r.final_model_path));
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

TEST_F(ExploreTest, TwoLayersNeedTwoAcceptedSteps) {
  ExploreParams p = params(Ranking::kDynamicRange);
  save_model(two_sensitive_layers_model(), p.model_path);
  p.bf16_budget = 0.4;  // 2 of the 5 candidates (the default 30% allows only 1)
  const ExploreResult r = explore(p);
  EXPECT_EQ(r.stop_reason, "criterion met");
  EXPECT_EQ(r.bf16_layers, (std::vector<std::string>{"mix_1", "mix_2"}));
  ASSERT_EQ(r.steps.size(), 2u);
  EXPECT_GT(r.steps[1].psnr_db, r.steps[0].psnr_db);
}

TEST_F(ExploreTest, MaxIterationsStopsTheSearch) {
  ExploreParams p = params(Ranking::kDynamicRange);
  save_model(two_sensitive_layers_model(), p.model_path);
  p.max_iterations = 1;
  const ExploreResult r = explore(p);
  EXPECT_EQ(r.stop_reason, "max iterations (1)");
  EXPECT_EQ(r.steps.size(), 1u);
  EXPECT_FALSE(r.final_verdict.pass);
  EXPECT_EQ(r.bf16_layers.size(), 1u);  // the best so far is kept
}

TEST_F(ExploreTest, Bf16BudgetStopsTheSearch) {
  ExploreParams p = params(Ranking::kDynamicRange);
  save_model(two_sensitive_layers_model(), p.model_path);
  p.bf16_budget = 0.01;  // floor(0.01 x 5 candidates) = 0, and at least one layer is allowed
  const ExploreResult r = explore(p);
  EXPECT_NE(r.stop_reason.find("BF16 budget"), std::string::npos) << r.stop_reason;
  EXPECT_EQ(r.bf16_layers.size(), 1u);
}

TEST_F(ExploreTest, FullInt8PassingStopsBeforeAnySearch) {
  ExploreParams p = params(Ranking::kDynamicRange);
  p.target = parse_target("psnr>-100");
  const ExploreResult r = explore(p);
  EXPECT_EQ(r.stop_reason, "full INT8 already meets the criterion");
  EXPECT_TRUE(r.steps.empty());
  EXPECT_EQ(r.evaluations, 1u);
  EXPECT_TRUE(fs::exists(r.final_model_path));  // the best so far is on disk
}

TEST_F(ExploreTest, UnreachableTargetStopsAfterFullBf16) {
  ExploreParams p = params(Ranking::kDynamicRange);
  p.target = parse_target("psnr>190");  // beyond what bf16 rounding allows
  const ExploreResult r = explore(p);
  EXPECT_NE(r.stop_reason.find("out of reach by precision alone"), std::string::npos) << r.stop_reason;
  EXPECT_EQ(r.evaluations, 2u);
  EXPECT_FALSE(r.final_verdict.pass);
}

TEST_F(ExploreTest, PromotionThatChangesNothingIsSkipped) {
  ExploreParams p = params(Ranking::kDynamicRange);
  save_model(dead_layer_first_model(), p.model_path);
  p.bf16_budget = 0.5;
  const ExploreResult r = explore(p);
  ASSERT_GE(r.ranking.size(), 2u);
  EXPECT_EQ(r.ranking[0], "echo");  // reads the same huge-range tensor as "mix", and comes first
  ASSERT_EQ(r.steps.size(), 2u) << r.stop_reason;
  EXPECT_EQ(r.steps[0].layer, "echo");
  EXPECT_EQ(r.steps[0].decision, "skipped");
  EXPECT_EQ(r.steps[0].bf16_layers, 0u);
  EXPECT_EQ(r.steps[1].layer, "mix");
  EXPECT_EQ(r.steps[1].decision, "accepted");
  EXPECT_EQ(r.bf16_layers, std::vector<std::string>{"mix"});
  EXPECT_EQ(r.stop_reason, "criterion met");
}

TEST_F(ExploreTest, SmallGainsEndOnThePlateauAndWorseningStepsAreRolledBack) {
  ExploreParams p = params(Ranking::kDynamicRange);
  save_model(rotation_chain_model(60), p.model_path);
  p.target = parse_target("psnr>35");  // full BF16 reaches ~36.4 dB, full INT8 ~23.7 dB
  const ExploreResult r = explore(p);
  ASSERT_EQ(r.stop_reason.rfind("PSNR plateau", 0), 0u) << r.stop_reason;
  std::vector<std::string> accepted;
  std::vector<double> gains;
  double best = r.int8_metrics.at(0).psnr_db;
  size_t rolled_back = 0;
  for (const auto& step : r.steps) {
    if (step.decision == "accepted") {
      EXPECT_GT(step.psnr_db, best) << step.layer;
      gains.push_back(step.psnr_db - best);
      best = step.psnr_db;
      accepted.push_back(step.layer);
    } else {
      EXPECT_EQ(step.decision, "rolled back") << step.layer;
      EXPECT_LT(step.psnr_db, best) << step.layer;
      ++rolled_back;
    }
    EXPECT_EQ(step.bf16_layers, accepted.size()) << step.layer;  // a rolled-back layer is not kept
  }
  ASSERT_GE(gains.size(), 3u);  // the plateau needs 3 accepted promotions
  EXPECT_LT(gains[gains.size() - 1] + gains[gains.size() - 2] + gains[gains.size() - 3], 0.5);
  EXPECT_EQ(r.steps.back().decision, "accepted");  // the plateau is judged after an accepted step
  EXPECT_LT(best, 35.0);
  EXPECT_GT(rolled_back, 0u);
  std::sort(accepted.begin(), accepted.end());
  EXPECT_EQ(r.bf16_layers, accepted);
  EXPECT_DOUBLE_EQ(r.final_metrics.at(0).psnr_db, best);  // the best so far is what is kept
}

TEST(ExploreGuardrails, PromotionDecisions) {
  EXPECT_STREQ(promotion_decision(20.0, 20.5), "accepted");
  EXPECT_STREQ(promotion_decision(20.0, 20.0), "skipped");
  EXPECT_STREQ(promotion_decision(20.0, 19.9), "rolled back");
  // Objectives where lower is better are negated by the search, so the rule stays "higher wins".
  EXPECT_STREQ(promotion_decision(-0.2, -0.1), "accepted");
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
  ExploreParams p = params(Ranking::kMeasured);
  save_model(two_sensitive_layers_model(), p.model_path);
  p.bf16_budget = 0.4;
  p.work_dir = path("whole");
  const ExploreResult whole = explore(p);
  ASSERT_EQ(whole.steps.size(), 2u) << whole.stop_reason;

  struct Interrupted {};
  p.work_dir = path("stopped");
  EXPECT_THROW(explore(p, [](const ExploreStep& s) {
                 if (s.index == 1) throw Interrupted{};
               }),
               Interrupted);
  EXPECT_EQ(ledger_without_timings(path("stopped/ledger.jsonl")).size(), 1u);

  p.resume = true;
  std::vector<size_t> reported;
  const ExploreResult resumed = explore(p, [&](const ExploreStep& s) { reported.push_back(s.index); });
  EXPECT_EQ(resumed.resumed_steps, 1u);
  EXPECT_EQ(reported, std::vector<size_t>{2});  // the replayed step is not run or reported again
  EXPECT_EQ(resumed.stop_reason, whole.stop_reason);
  EXPECT_EQ(resumed.bf16_layers, whole.bf16_layers);
  EXPECT_EQ(ledger_without_timings(path("stopped/ledger.jsonl")), ledger_without_timings(path("whole/ledger.jsonl")));
  EXPECT_TRUE(file_bytes(path("stopped/final.onnx")) == file_bytes(path("whole/final.onnx")));
  EXPECT_EQ(file_bytes(path("stopped/final_config.json")), file_bytes(path("whole/final_config.json")));
  // The measured ranking was read back, not measured again: 2 baselines, the best so far
  // rebuilt once from the ledger, 1 new step.
  EXPECT_EQ(resumed.evaluations, 4u);

  // Resuming a finished run replays it all and evaluates only what the summary needs.
  const ExploreResult again = explore(p);
  EXPECT_EQ(again.resumed_steps, 2u);
  EXPECT_EQ(again.bf16_layers, whole.bf16_layers);
  EXPECT_TRUE(file_bytes(path("stopped/final.onnx")) == file_bytes(path("whole/final.onnx")));
}

TEST_F(ExploreTest, ResumeRefusesOtherSettingsAndEmptyWorkDirs) {
  ExploreParams p = params(Ranking::kDynamicRange);
  p.resume = true;
  try {
    explore(p);
    FAIL() << "resumed from nothing";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_NE(std::string(e.what()).find("nothing to resume"), std::string::npos) << e.what();
  }
  p.resume = false;
  explore(p);
  p.resume = true;
  p.target = parse_target("psnr>35");
  try {
    explore(p);
    FAIL() << "resumed with another target";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("another target"), std::string::npos) << e.what();
  }
}

TEST_F(ExploreTest, ResumeDropsALineCutByACrash) {
  ExploreParams p = params(Ranking::kDynamicRange);
  save_model(two_sensitive_layers_model(), p.model_path);
  p.bf16_budget = 0.4;
  const ExploreResult whole = explore(p);
  ASSERT_EQ(whole.steps.size(), 2u);
  const auto lines = ledger_without_timings(whole.ledger_path);
  // Keep step 1 and half of step 2's line, as a crash while writing would.
  std::string text = file_bytes(whole.ledger_path);
  text = text.substr(0, text.find('\n') + 1 + 20);
  std::ofstream(whole.ledger_path, std::ios::trunc) << text;
  p.resume = true;
  const ExploreResult resumed = explore(p);
  EXPECT_EQ(resumed.resumed_steps, 1u);
  EXPECT_EQ(ledger_without_timings(whole.ledger_path), lines);
  EXPECT_EQ(resumed.bf16_layers, whole.bf16_layers);
}

}  // namespace
}  // namespace mixprec
