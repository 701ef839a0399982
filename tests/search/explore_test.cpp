// Exploration on a model built so that exactly one layer is sensitive: "mix" reads a tensor
// whose channel 0 is ~1000 while the channels that matter are within [-1, 1], so its per-tensor
// power-of-two int8 scale (2^ceil(log2(1001/127)) = 8) rounds them all to zero. Lifting "mix"
// alone to BF16 restores the output.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

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
  const auto bytes = [](const std::string& file) {
    std::ifstream in(file, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  };
  EXPECT_TRUE(bytes(q.output_path) == bytes(r.final_model_path));
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

}  // namespace
}  // namespace mixprec
