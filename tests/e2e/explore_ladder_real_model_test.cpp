// explore --lift MX9,BF16 on the detector at 160x160 on cpu (4 calibration and 4 evaluation
// pictures, bisection): the targets are set from the baselines each test measures first (full
// INT8, full MX9, full BF16), so they sit between two of them whatever the exact dB.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "mixprec/config.h"
#include "mixprec/explore.h"
#include "mixprec/macs.h"
#include "mixprec/model_io.h"
#include "support/temp_dir.h"

namespace mixprec {
namespace {

const std::string kModels = MIXPREC_MODELS_DIR;
const std::string kCalib = std::string(MIXPREC_DATA_DIR) + "/calib/";
const std::string kEval = std::string(MIXPREC_DATA_DIR) + "/eval/";
constexpr int64_t kSide = 160;

DataSpec pictures(const std::string& folder, const std::vector<std::string>& names) {
  DataSpec spec;
  for (const auto& name : names) spec.data.files.push_back(folder + name);
  spec.preprocess = "ppocr_det";
  spec.image_height = kSide;
  spec.image_width = kSide;
  return spec;
}

struct Baselines {
  double int8_db = 0, mx9_db = 0, bf16_db = 0;
};

class ExploreLadderRealModel : public testing::TempDirTest {
 protected:
  ExploreParams params(const std::string& lift, double target_db, const std::string& dir) {
    ExploreParams p;
    p.setup.model_path = kModels + "/ppocr_det.onnx";
    p.setup.work_dir = path(dir);
    p.setup.calibration = pictures(kCalib, {"aero1.jpg", "apple.jpg", "board.jpg", "building.jpg"});
    p.setup.evaluation = pictures(kEval, {"scenetext03.jpg", "scenetext05.jpg", "imageTextR.png", "licenseplate_motion.jpg"});
    p.setup.criterion.target = parse_target("psnr>" + std::to_string(target_db));
    p.deployment.device = "cpu";
    p.search.lift = lift;
    p.search.search = SearchMode::kBisection;
    p.search.bf16_budget = 1;
    p.search.calib_method = CalibMethod::kMinMse;  // one start, not the four cpu allows
    return p;
  }

  // Out of reach for both rungs: the ladder stops after the two full lifts, which are the baselines.
  Baselines measure() {
    const ExploreResult r = explore(params("MX9,BF16", 1000, "baselines"));
    EXPECT_FALSE(r.final_verdict.pass);
    EXPECT_NE(r.stop_reason.find("rung 1 (MX9): full MX9 misses the criterion too"), std::string::npos) << r.stop_reason;
    EXPECT_NE(r.stop_reason.find("rung 2 (BF16): full BF16 misses the criterion too"), std::string::npos) << r.stop_reason;
    EXPECT_NE(r.stop_reason.find("out of reach by precision alone"), std::string::npos) << r.stop_reason;
    EXPECT_EQ(r.steps.size(), 0u);
    const auto worst = [](const std::vector<OutputMetrics>& m) {
      EXPECT_EQ(m.size(), 1u);  // the probability map
      return m.empty() ? 0.0 : m[0].psnr_db;
    };
    return {worst(r.int8_metrics), worst(r.lifted_metrics), worst(r.rungs.at(1).full_metrics)};
  }
};

// A target between full MX9 and full BF16: rung 1 cannot meet it (its full lift misses), so
// rung 2 starts with every layer at MX9 and raises some to BF16.
TEST_F(ExploreLadderRealModel, TheSecondRungMeetsWhatFullMx9CannotWithLayersAtBothFormats) {
  const Baselines b = measure();
  ASSERT_GT(b.bf16_db - b.mx9_db, 3.0) << "MX9 " << b.mx9_db << " dB, BF16 " << b.bf16_db << " dB";
  const double target = (b.mx9_db + b.bf16_db) / 2;
  const ExploreResult r = explore(params("MX9,BF16", target, "ladder"));
  ASSERT_TRUE(r.final_verdict.pass) << r.stop_reason;
  EXPECT_GT(r.final_metrics.at(0).psnr_db, target);
  ASSERT_EQ(r.rungs.size(), 2u);
  EXPECT_FALSE(r.rungs[0].full_lift_passes);
  EXPECT_TRUE(r.rungs[1].ran);
  EXPECT_EQ(r.rungs[1].candidates, r.compute_layers);
  EXPECT_GT(r.rungs[0].lifted, 0u);
  EXPECT_GT(r.rungs[1].lifted, 0u);
  EXPECT_EQ(r.rungs[0].lifted + r.rungs[1].lifted, r.compute_layers);
  EXPECT_FALSE(r.steps.empty());
  for (const ExploreStep& s : r.steps) EXPECT_EQ(s.lift, "BF16") << s.index;

  // The final config holds both: one override per rung, with the layers the result names.
  const QuantConfig config = load_config(r.final_config_path);
  std::map<FormatId, std::vector<std::string>> layers;
  for (const LayerOverride& o : config.specific) layers[o.layer_config.input_tensors->format] = o.target_node_names;
  ASSERT_EQ(layers.size(), 2u);
  EXPECT_EQ(layers[FormatId::kMx9].size(), r.rungs[0].lifted);
  EXPECT_EQ(layers[FormatId::kBFloat16].size(), r.rungs[1].lifted);
  for (size_t i = 0; i < r.lifted_layers.size(); ++i) {
    const auto& at = layers[r.lifted_formats[i] == "BF16" ? FormatId::kBFloat16 : FormatId::kMx9];
    EXPECT_TRUE(std::find(at.begin(), at.end(), r.lifted_layers[i]) != at.end()) << r.lifted_layers[i];
  }

  // Each layer priced at its own rung's speed. Every candidate is lifted in the answer and in
  // both full lifts, so the three share their INT8/float boundaries and differ only in the
  // candidates' MAC time: answer = full MX9 + (full BF16 - full MX9) x (MACs at BF16 / all
  // candidates' MACs), the MACs counted independently on the model as given.
  const MacEstimate macs = estimate_node_macs(load_model(kModels + "/ppocr_det.onnx"), {{"x", {1, 3, kSide, kSide}}});
  double at_bf16 = 0, all = 0;
  for (size_t i = 0; i < r.lifted_layers.size(); ++i) {
    const auto it = macs.nodes.find(r.lifted_layers[i]);
    ASSERT_NE(it, macs.nodes.end()) << r.lifted_layers[i];
    all += it->second.macs;
    if (r.lifted_formats[i] == "BF16") at_bf16 += it->second.macs;
  }
  ASSERT_GT(all, 0.0);
  const double mx9 = r.rungs[0].full_time_vs_bf16, bf16 = r.rungs[1].full_time_vs_bf16;
  EXPECT_LT(mx9, r.final_time_vs_bf16);
  EXPECT_LT(r.final_time_vs_bf16, bf16);
  EXPECT_NEAR(r.final_time_vs_bf16, mx9 + (bf16 - mx9) * at_bf16 / all, 1e-9);
}

// A target between full INT8 and full MX9: rung 1 meets it, and the ladder is the single MX9
// lift exactly.
TEST_F(ExploreLadderRealModel, WhenMx9MeetsTheTargetTheLadderIsTheSingleMx9Lift) {
  const Baselines b = measure();
  ASSERT_GT(b.mx9_db - b.int8_db, 0.1) << "INT8 " << b.int8_db << " dB, MX9 " << b.mx9_db << " dB";
  const double target = (b.int8_db + b.mx9_db) / 2;
  const ExploreResult single = explore(params("MX9", target, "single"));
  const ExploreResult ladder = explore(params("MX9,BF16", target, "ladder"));
  ASSERT_TRUE(single.final_verdict.pass) << single.stop_reason;
  EXPECT_TRUE(ladder.final_verdict.pass);
  EXPECT_FALSE(ladder.rungs.at(1).ran);
  EXPECT_EQ(ladder.stop_reason, "rung 1 (MX9): " + single.stop_reason);
  EXPECT_EQ(ladder.lifted_layers, single.lifted_layers);
  EXPECT_EQ(ladder.lifted_formats, std::vector<std::string>(single.lifted_layers.size(), "MX9"));
  EXPECT_EQ(ladder.final_metrics.at(0).psnr_db, single.final_metrics.at(0).psnr_db);
  EXPECT_EQ(ladder.final_time_vs_bf16, single.final_time_vs_bf16);
  EXPECT_EQ(ladder.evaluations, single.evaluations);
  ASSERT_EQ(ladder.steps.size(), single.steps.size());
  for (size_t i = 0; i < single.steps.size(); ++i) {
    EXPECT_EQ(ladder.steps[i].layer, single.steps[i].layer);
    EXPECT_EQ(ladder.steps[i].decision, single.steps[i].decision);
    EXPECT_EQ(ladder.steps[i].objective, single.steps[i].objective);
  }
  EXPECT_EQ(read_file(ladder.final_config_path, "config"), read_file(single.final_config_path, "config"));
}

}  // namespace
}  // namespace mixprec
