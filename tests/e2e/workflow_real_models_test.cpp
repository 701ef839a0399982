// The workflow commands on the real PP-OCR models with the real pictures: dry-run's table and
// recommendation, guide's recovery ladder, and guide --explore end to end through the CLI.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mixprec/model_io.h"
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

// A PSNR as the guide's lines print it (two decimals).
std::string text_of_db(double db) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f dB", db);
  return text;
}

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
  // The estimates for G = 117 candidates, beyond the same baselines: greedy 2 ranking passes +
  // 50 steps = 52; bisection 2 + ceil(log2(0.3 G = 35)) + 1 = 7 steps + 2 re-ranking passes after each
  // of 6 misses at most + the 50 - 7 - 1 = 42 trim steps the default --max-iters leaves (one
  // kept for the island fill) = 63: 11 more.
  ASSERT_EQ(r.candidates, 117u);
  std::map<std::string, size_t> evaluations;
  for (const auto& e : r.explore_estimates) evaluations[e.search] = e.evaluations;
  EXPECT_EQ(evaluations.at("bisection"), evaluations.at("greedy") + 11);
}

// guide --explore on the detector at 160x160: full XINT8 misses PSNR > 30 dB, the bisection
// finds a mixed assignment that meets it, and every phase reports.
TEST_F(WorkflowRealModel, GuideExploresTheDetectorToItsTarget) {
  const CliResult r = run_cli({"guide", "--model", kModels + "/ppocr_det.onnx", "--explore", "--target-accuracy",
                               "psnr>30", "--search", "bisection", "--bf16-budget", "1", "--calibration-data", kCalib,
                               "--data", kEval, "--preprocess", "ppocr_det", "--image-size", "160x160", "--work-dir",
                               path("work"), "--no-recover"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  // Whatever explore lifted is float: the compiler is told to convert it to BF16.
  const auto vaiml = nlohmann::json::parse(read_file(path("work/vitisai_config.json"), "config"))["passes"][0]["vaiml_config"];
  EXPECT_EQ(vaiml["enable_f32_to_bf16_conversion"], true);
  for (const char* phase : {"== analyze", "== config", "== calibrate", "== baseline", "== quantize",
                            "== recover: not run", "== validate: fail",
                            "== explore: pass", "== compile", "== report"}) {
    EXPECT_NE(r.out.find(phase), std::string::npos) << phase << "\n" << r.out;
  }
  EXPECT_NE(r.out.find("proposed XINT8 for ve2"), std::string::npos);
  EXPECT_NE(r.out.find("PASS: "), std::string::npos);
  // The npu_cnn plan equalizes the detector (CLE): its statistics are the equalized model's.
  for (const char* file : {"final.onnx", "final_config.json", "ledger.jsonl", "sensitivity.json", "summary.json",
                           "stats.cle.json", "quantized.onnx", "final.optimized.onnx", "deployment.json"}) {
    EXPECT_TRUE(fs::exists(path("work/") + file)) << file;
  }
}

// guide --edge-quant-auto on the detector's XINT8 model (a Q on its input, no DQ on its output):
// compile builds it with the Q as a kernel and with the runtime quantizing the input, prints
// VITIS.md's table and sets input-quantization-in-rt=1, the rest of the model being integer.
TEST_F(WorkflowRealModel, GuideEdgeQuantAutoOnTheDetectorSetsTheInputFlag) {
  const CliResult r = run_cli({"guide", "--model", kModels + "/ppocr_det.onnx", "--target-accuracy", "psnr>30",
                               "--calibration-data", kCalib, "--data", kEval, "--preprocess", "ppocr_det",
                               "--image-size", "320x320", "--work-dir", path("work"), "--no-recover",
                               "--edge-quant-auto"});
  ASSERT_EQ(r.exit_code, 3) << r.out << r.err;  // full XINT8 misses 30 dB; compile runs all the same
  EXPECT_NE(r.out.find("edge quantization auto: enable input-quantization-in-rt=1: the kernel count falls by 1 ("),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Q on input 'x' (x_QuantizeLinear): int8 scale 0.03125000 zero point 0"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("not the NPU compiler's kernel counts"), std::string::npos) << r.out;
  const auto guide = nlohmann::json::parse(read_file(path("work/guide.json"), "guide report"));
  for (const auto& phase : guide["phases"]) {
    if (phase["name"] != "compile") continue;
    const auto& builds = phase["result"]["edge_probe"]["builds"];
    ASSERT_EQ(builds.size(), 2u);
    EXPECT_EQ(builds[0]["kernels"].get<int>() - builds[1]["kernels"].get<int>(), 1);
    EXPECT_EQ(builds[0]["edge_kernels"], 1);
    EXPECT_EQ(builds[1]["edge_kernels"], 0);
    EXPECT_EQ(builds[1]["fallbacks"].size(), 0u);
    std::cout << "[ measured ] det 320x320 XINT8 kernels " << builds[0]["kernels"] << " -> " << builds[1]["kernels"]
              << "\n";
  }
  const auto vaiml = nlohmann::json::parse(read_file(path("work/vitisai_config.json"), "config"))["passes"][0]["vaiml_config"];
  EXPECT_EQ(vaiml["enable_f32_to_bf16_conversion"], false);
  EXPECT_EQ(vaiml["fe_args"], "input-quantization-in-rt=1");
  const auto deployment = nlohmann::json::parse(read_file(path("work/deployment.json"), "deployment"));
  EXPECT_EQ(deployment["edge_quant"]["auto"]["advice"], "enable");
  EXPECT_TRUE(fs::exists(path("work/edge_probe.onnx")));
}

// guide on the classifier, whose proposed XINT8 (+ CLE) misses PSNR > 22 dB (14.2 dB): the plan's recovery
// ladder measures CLE + bias correction (per layer, then of the whole model) and CLE + AdaRound
// on the same statistics, then AdaRound without CLE on statistics of its own, keeps the rung that does best and writes
// it as the quantized model. A second run in the same work dir takes every learned layer from the work dir's store.
TEST_F(WorkflowRealModel, GuideTriesTheRecoveryLadderAndKeepsTheBestRung) {
  const std::vector<std::string> args = {"guide", "--model", kModels + "/ppocr_cls.onnx", "--target-accuracy", "psnr>22",
                                         "--calibration-data", kCalib, "--data", kEval, "--preprocess", "ppocr_cls_rec",
                                         "--image-size", "48x192", "--work-dir", path("work")};
  const CliResult r = run_cli(args);
  ASSERT_EQ(r.exit_code, 3) << r.out << r.err;  // no rung reaches 22 dB (at most 20.0)
  const auto recover_of = [&] {
    const auto guide = nlohmann::json::parse(read_file(path("work/guide.json"), "guide report"));
    for (const auto& phase : guide["phases"]) {
      if (phase["name"] == "recover") return phase["result"];
    }
    return nlohmann::json();
  };
  const auto recover = recover_of();
  const auto& trials = recover["trials"];
  ASSERT_EQ(trials.size(), 5u) << r.out;
  EXPECT_EQ(trials[0]["algorithms"], nlohmann::json::parse(R"(["cle"])"));
  EXPECT_EQ(trials[1]["algorithms"], nlohmann::json::parse(R"json(["cle", "bias_correction (layer)"])json"));
  EXPECT_EQ(trials[1]["corrected_biases"], 53);
  std::cout << "[ measured ] cls XINT8 + CLE";
  for (size_t i = 0; i < trials.size(); ++i) std::cout << (i ? ", " : " ") << trials[i]["psnr_db"].get<double>() << " dB";
  std::cout << "\n";
  EXPECT_EQ(trials[2]["algorithms"], nlohmann::json::parse(R"json(["cle", "bias_correction (model)"])json"));
  EXPECT_EQ(trials[3]["algorithms"], nlohmann::json::parse(R"(["cle", "adaround"])"));
  EXPECT_EQ(trials[3]["learned_layers"], 54);
  // Without CLE: the model's own weights (one layer CLE leaves alone comes from the store) and
  // statistics (stats.json beside stats.cle.json); on this model it agrees on more pictures
  // than CLE + AdaRound (14 against 12 of 16).
  EXPECT_EQ(trials[4]["algorithms"], nlohmann::json::parse(R"(["adaround"])"));
  EXPECT_EQ(trials[4]["learned_layers"].get<int>() + trials[4]["reused_layers"].get<int>(), 54);
  EXPECT_GT(trials[4]["top1"].get<double>(), trials[3]["top1"].get<double>());
  EXPECT_TRUE(fs::exists(path("work/stats.json")) && fs::exists(path("work/stats.cle.json")));
  // The kept rung is the best by the target's metric, better than the quantize phase's config.
  const size_t kept = recover["kept"];
  ASSERT_GT(kept, 0u);
  for (const auto& t : trials) EXPECT_LE(t["psnr_db"].get<double>(), trials[kept]["psnr_db"].get<double>());
  EXPECT_GT(trials[kept]["psnr_db"].get<double>(), trials[0]["psnr_db"].get<double>() + 1);
  // validate judges the kept rung, and quantized.onnx is its model, written with its config.
  EXPECT_NE(r.out.find("kept cle + "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("worst output: PSNR " + text_of_db(trials[kept]["psnr_db"].get<double>())), std::string::npos)
      << r.out;
  EXPECT_FALSE(fs::is_empty(path("work/learned_weights")));
  const CliResult again = run_cli(args);
  ASSERT_EQ(again.exit_code, r.exit_code) << again.out << again.err;
  const auto rerun = recover_of();
  EXPECT_EQ(rerun["trials"][3]["learned_layers"], 0);
  EXPECT_EQ(rerun["trials"][3]["reused_layers"], 54);
  EXPECT_EQ(rerun["trials"][3]["psnr_db"], trials[3]["psnr_db"]);  // the same weights
  EXPECT_EQ(rerun["trials"][4]["learned_layers"], 0);
  EXPECT_EQ(rerun["trials"][4]["psnr_db"], trials[4]["psnr_db"]);
}

}  // namespace
}  // namespace mixprec
