// The workflow commands on the real PP-OCR models with the real pictures: dry-run's table and
// recommendation, and guide --explore end to end through the CLI.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "mixprec/workflow.h"
#include "support/cli_runner.h"
#include "support/temp_dir.h"

namespace mixprec {
namespace {
namespace fs = std::filesystem;

const std::string kModels = MIXPREC_MODELS_DIR;
const std::string kCalib = std::string(MIXPREC_DATA_DIR) + "/calib";
const std::string kEval = std::string(MIXPREC_DATA_DIR) + "/eval";

class WorkflowRealModel : public testing::TempDirTest {};

DataSpec pictures(const std::string& folder, const std::string& preprocess, int64_t h, int64_t w) {
  DataSpec spec;
  spec.data.files = {folder};
  spec.preprocess = preprocess;
  spec.image_height = h;
  spec.image_width = w;
  return spec;
}

// The direction classifier: full XINT8 flips the top-1 class of some pictures while full BF16
// agrees on all of them, so SPEC's rule says: explore.
TEST_F(WorkflowRealModel, DryRunOnTheClassifierRecommendsExploration) {
  DryRunParams p;
  p.setup.model_path = kModels + "/ppocr_cls.onnx";
  p.setup.work_dir = path("work");
  p.setup.calibration = pictures(kCalib, "ppocr_cls_rec", 48, 192);
  p.setup.evaluation = pictures(kEval, "ppocr_cls_rec", 48, 192);
  const DryRunReport r = dry_run(p);
  ASSERT_EQ(r.rows.size(), 4u);
  EXPECT_EQ(r.task.type, TaskType::kClassification);
  for (const auto& row : r.rows) {
    ASSERT_FALSE(row.metrics.empty()) << row.label;
    ASSERT_TRUE(row.metrics[0].top1_agreement.has_value()) << row.label;
    if (row.preset == "XINT8") {
      EXPECT_LT(*row.metrics[0].top1_agreement, 1.0);
    }
    if (row.preset == "BF16" || row.preset == "FP16") {
      EXPECT_EQ(*row.metrics[0].top1_agreement, 1.0) << row.label;
    }
  }
  EXPECT_EQ(r.recommendation.action, "explore") << r.recommendation.reason;
}

// guide --explore on the detector at 160x160: full XINT8 misses PSNR > 30 dB, the bisection
// finds a mixed assignment that meets it, and every phase reports.
TEST_F(WorkflowRealModel, GuideExploresTheDetectorToItsTarget) {
  const CliResult r = run_cli({"guide", "--model", kModels + "/ppocr_det.onnx", "--explore", "--target-accuracy",
                               "psnr>30", "--search", "bisection", "--bf16-budget", "1", "--calibration-data", kCalib,
                               "--data", kEval, "--preprocess", "ppocr_det", "--image-size", "160x160", "--work-dir",
                               path("work")});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  for (const char* phase : {"== analyze", "== config", "== calibrate", "== baseline", "== quantize", "== validate: fail",
                            "== explore: pass", "== compile", "== report"}) {
    EXPECT_NE(r.out.find(phase), std::string::npos) << phase << "\n" << r.out;
  }
  EXPECT_NE(r.out.find("proposed XINT8 for ve2"), std::string::npos);
  EXPECT_NE(r.out.find("PASS: "), std::string::npos);
  // The npu_cnn plan equalizes the detector (CLE): its statistics are the equalized model's.
  for (const char* file : {"final.onnx", "final_config.json", "ledger.jsonl", "sensitivity.json", "summary.json",
                           "stats.cle.json", "quantized.onnx", "final.optimized.onnx"}) {
    EXPECT_TRUE(fs::exists(path("work/") + file)) << file;
  }
}

}  // namespace
}  // namespace mixprec
