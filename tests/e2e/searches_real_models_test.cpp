// Issue 15's searches on real models that are not CNNs on pictures: openWakeWord's audio front
// end (melspectrogram: STFT as Conv, power, mel MatMul, log) and its hey_jarvis classifier (Gemm
// layers with decomposed LayerNorm over 16 embeddings), fed from real speech the way
// openWakeWord feeds them (support/wakeword_features.h). Each search (SPEC's greedy over the
// dynamic-range ranking, bisection over layer-error, the same re-ranked adaptively, the cost
// search) must end on an assignment that meets the criterion, and the comparison the issue asks
// for holds: the cost search's answer is no dearer than greedy's, adaptive bisection lifts no
// more than plain bisection, and the evaluations stay within their bounds.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <string>

#include "mixprec/explore.h"
#include "mixprec/jobs_report.h"
#include "support/temp_dir.h"
#include "support/wakeword_features.h"

namespace mixprec {
namespace {

const std::string kModels = MIXPREC_MODELS_DIR;
const std::string kSpeech = std::string(MIXPREC_DATA_DIR) + "/speech";

struct SearchRun {
  const char* name;
  SearchMode search;
  Ranking ranking;
  bool adaptive;
};
constexpr SearchRun kRuns[] = {{"greedy dynamic-range", SearchMode::kGreedy, Ranking::kDynamicRange, false},
                         {"bisection layer-error", SearchMode::kBisection, Ranking::kLayerError, false},
                         {"bisection layer-error adaptive", SearchMode::kBisection, Ranking::kLayerError, true},
                         {"cost", SearchMode::kCost, Ranking::kLayerError, false}};

class SearchesRealModel : public testing::TempDirTest {
 protected:
  // Every search of kRuns on `model`, each in its own work dir; printed as the table.
  std::map<std::string, ExploreResult> explore_all(const std::string& model, const testing::SplitSamples& data,
                                                   const std::string& target) {
    std::map<std::string, ExploreResult> out;
    for (const SearchRun& run : kRuns) {
      ExploreParams p;
      p.setup.model_path = kModels + "/" + model;
      p.setup.work_dir = path(model + "_" + std::to_string(out.size()));
      p.setup.calibration.data.files = data.calibration;
      p.setup.evaluation.data.files = data.evaluation;
      p.setup.criterion.target = parse_target(target);
      p.deployment.device = "ve2";
      p.search.search = run.search;
      p.search.ranking = run.ranking;
      p.search.adaptive = run.adaptive;
      p.search.bf16_budget = 1;
      const ExploreResult r = explore(p);
      std::printf("| %s (%s) | %s | %zu/%zu | %.3f | %.3f | %zu | %zu | %.1f s |\n", model.c_str(), target.c_str(),
                  run.name, r.lifted_layers.size(), r.compute_layers, r.final_time_vs_bf16, r.int8_time_vs_bf16,
                  r.final_transitions, r.evaluations, r.seconds);
      out.emplace(run.name, r);
    }
    return out;
  }
};

// The bound the issue sets on the cost search: G + 2 ceil(log2 G) + 5 evaluations.
size_t cost_bound(size_t g) { return g + 2 * static_cast<size_t>(std::ceil(std::log2(static_cast<double>(g)))) + 5; }

// hey_jarvis (10 candidates: 6 Gemm, 3 of them inside an If branch, and 4 Adds), 33
// calibration and 23 evaluation windows. Full XINT8 29.8 dB, full BF16 49.4 dB; PSNR > 40 dB
// needs 6 layers lifted. Measured: greedy dynamic-range and plain bisection keep full BF16
// (1.000x; bisection's top 9 cost 1.003x), adaptive bisection lifts 6 (0.996x), the cost
// search 6 others (0.821x, 19 evaluations).
TEST_F(SearchesRealModel, OnTheWakeWordClassifierTheCostSearchCutsGreedysExtraTimeByAThird) {
  const testing::SplitSamples data =
      testing::write_wakeword_embeddings(kSpeech, kModels + "/oww_melspectrogram.onnx", kModels + "/oww_embedding.onnx",
                                         path("embeddings"));
  ASSERT_GE(data.calibration.size(), 16u);
  ASSERT_GE(data.evaluation.size(), 16u);
  const auto r = explore_all("oww_hey_jarvis.onnx", data, "psnr>40");
  for (const auto& [name, result] : r) EXPECT_TRUE(result.final_verdict.pass) << name << ": " << result.stop_reason;
  const ExploreResult& greedy = r.at("greedy dynamic-range");
  const ExploreResult& bisection = r.at("bisection layer-error");
  const ExploreResult& adaptive = r.at("bisection layer-error adaptive");
  const ExploreResult& cost = r.at("cost");
  // The target: at least 30% less expected time above full INT8 than SPEC's greedy.
  const double int8 = greedy.int8_time_vs_bf16;
  EXPECT_LE(cost.final_time_vs_bf16 - int8, 0.7 * (greedy.final_time_vs_bf16 - int8));
  EXPECT_LE(adaptive.final_time_vs_bf16, bisection.final_time_vs_bf16);
  EXPECT_LT(adaptive.lifted_layers.size(), bisection.lifted_layers.size());
  EXPECT_GE(adaptive.reranks, 1u);
  EXPECT_LE(cost.evaluations, cost_bound(cost.compute_layers));
}

// The front end (4 candidates: the two STFT Convs, the mel MatMul, a Mul): full XINT8 8.9 dB
// (the log of an int8 power spectrum), full BF16 49.2 dB. PSNR > 30 dB needs two or three
// layers: every search finds a mixed answer near 0.76x full BF16 (the mel MatMul and one Conv).
TEST_F(SearchesRealModel, OnTheAudioFrontEndEverySearchFindsAMixedAnswer) {
  const testing::SplitSamples data = testing::write_melspectrogram_clips(kSpeech, path("clips"));
  const auto r = explore_all("oww_melspectrogram.onnx", data, "psnr>30");
  for (const auto& [name, result] : r) {
    EXPECT_TRUE(result.final_verdict.pass) << name << ": " << result.stop_reason;
    EXPECT_LT(result.lifted_layers.size(), result.compute_layers) << name;
    EXPECT_LT(result.final_time_vs_bf16, 0.8) << name;
  }
  EXPECT_LE(r.at("cost").final_time_vs_bf16, r.at("greedy dynamic-range").final_time_vs_bf16);
  EXPECT_LE(r.at("cost").evaluations, cost_bound(r.at("cost").compute_layers));
}

}  // namespace
}  // namespace mixprec
