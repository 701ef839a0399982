// mixprec plan on the real PP-OCR models for every target, through the CLI: each plan file
// follows the shipped schema and carries the decisions the model calls for; quantize --plan
// executes one with the real pictures.
#include <gtest/gtest.h>

#include <string>

#include "mixprec/plan.h"
#include "support/cli_runner.h"
#include "support/temp_dir.h"

namespace mixprec {
namespace {

const std::string kModels = MIXPREC_MODELS_DIR;
const std::string kCalib = std::string(MIXPREC_DATA_DIR) + "/calib";

class PlanRealModel : public testing::TempDirTest {};

struct ModelCase {
  const char* file;
  Architecture architecture;
  TaskType task;
  size_t attention_matmuls;
};

TEST_F(PlanRealModel, EveryModelAndTargetGivesASchemaValidPlan) {
  const ModelCase cases[] = {{"ppocr_cls.onnx", Architecture::kCnn, TaskType::kClassification, 0},
                             {"ppocr_det.onnx", Architecture::kCnn, TaskType::kRegression, 0},
                             {"ppocr_rec.onnx", Architecture::kHybrid, TaskType::kSequence, 4}};
  for (const ModelCase& c : cases) {
    for (const char* target : {"cpu", "cuda", "npu_cnn", "npu_transformer"}) {
      SCOPED_TRACE(std::string(c.file) + " " + target);
      const std::string out = path(std::string(target) + ".json");
      const CliResult r = run_cli({"plan", kModels + "/" + c.file, "--target", target, "-o", out});
      ASSERT_EQ(r.exit_code, 0) << r.err;
      EXPECT_NE(r.out.find("decision"), std::string::npos) << r.out;
      const QuantPlan plan = load_plan(out);  // validates against the schema
      EXPECT_EQ(plan.architecture, c.architecture);
      EXPECT_EQ(plan.task, c.task);
      EXPECT_FALSE(plan.requires_confirmation);
      // All three have BatchNormalization; npu_cnn equalizes CNNs (the recognizer is a hybrid).
      const bool cle = std::string(target) == "npu_cnn" && c.architecture == Architecture::kCnn;
      EXPECT_EQ(plan.algorithms, (cle ? std::vector<std::string>{"fold_batchnorm", "cle"}
                                      : std::vector<std::string>{"fold_batchnorm"}));
      EXPECT_EQ(plan.config.algorithms.size(), cle ? 1u : 0u);
      const bool npu = std::string(target).starts_with("npu");
      EXPECT_EQ(plan.preset, npu ? "XINT8" : std::string(target) == "cpu" ? "U8S8" : "A8W8");
      // Only the transformer target keeps the hybrid's attention MatMuls in BF16; cpu/cuda keep them float.
      EXPECT_EQ(plan.higher_precision_nodes.size(), std::string(target) == "npu_transformer" ? c.attention_matmuls : 0u);
      EXPECT_EQ(plan.exclude_node_names.size(), npu ? 0u : c.attention_matmuls);
    }
  }
}

TEST_F(PlanRealModel, GatesRefuseConflictsAndQuantizePlanRunsTheClassifier) {
  const std::string cls = kModels + "/ppocr_cls.onnx";
  const CliResult refused = run_cli({"plan", cls, "--target", "npu_cnn", "--preset", "A8W8", "-o", path("a.json")});
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("nearest viable: XINT8"), std::string::npos) << refused.err;
  EXPECT_FALSE(std::filesystem::exists(path("a.json")));

  ASSERT_EQ(run_cli({"plan", cls, "--target", "npu_cnn", "--calib-samples", "16", "-o", path("plan.json")}).exit_code, 0);
  const CliResult q = run_cli({"quantize", "--plan", path("plan.json"), "-o", path("cls.onnx"), "--calibration-data",
                               kCalib, "--preprocess", "ppocr_cls_rec", "--image-size", "48x192"});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  EXPECT_NE(q.out.find("16 used"), std::string::npos) << q.out;  // the plan's calibration size
  EXPECT_EQ(load_config(path("cls.config.json")), load_plan(path("plan.json")).config);

  const CliResult other = run_cli({"quantize", "--plan", path("plan.json"), kModels + "/ppocr_det.onnx", "-o",
                                   path("det.onnx"), "--calibration-data", kCalib});
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_NE(other.err.find("made for another model"), std::string::npos) << other.err;
}

// plan --ffn-only on the recognizer: XINT8 on its 8 feed-forward and projection MatMuls, the 4
// attention MatMuls BF16, the rest float; quantize --plan runs it and the per-step top-1 holds
// on every picture (44.6 dB SQNR measured).
TEST_F(PlanRealModel, FfnOnlyPlanOnTheRecognizer) {
  const std::string rec = kModels + "/ppocr_rec.onnx";
  const CliResult plan = run_cli({"plan", rec, "--target", "npu_transformer", "--ffn-only", "-o", path("plan.json")});
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  EXPECT_NE(plan.out.find("feed-forward only: 8 weight MatMul/Gemm"), std::string::npos) << plan.out;
  const CliResult q = run_cli({"quantize", "--plan", path("plan.json"), "-o", path("rec.onnx"), "--calibration-data",
                               kCalib, "--preprocess", "ppocr_cls_rec", "--image-size", "48x320"});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  const CliResult c = run_cli({"compare", rec, path("rec.onnx"), "--data", std::string(MIXPREC_DATA_DIR) + "/eval",
                               "--preprocess", "ppocr_cls_rec", "--image-size", "48x320"});
  ASSERT_EQ(c.exit_code, 0) << c.out << c.err;
  EXPECT_NE(c.out.find("top-1 agreement 100.000%"), std::string::npos) << c.out;
}

}  // namespace
}  // namespace mixprec
