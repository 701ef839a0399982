// dry-run and requantize on models whose sensitive layer is known (support/explore_models.h).
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>
#include <tuple>

#include "mixprec/error.h"
#include "mixprec/model_io.h"
#include "mixprec/jobs.h"
#include "mixprec/log.h"
#include "mixprec/workflow.h"
#include "support/explore_models.h"
#include "support/temp_dir.h"

namespace mixprec {
namespace {
namespace fs = std::filesystem;

class DryRunTest : public testing::TempDirTest {
 protected:
  DryRunParams params(const std::string& target) {
    save_model(testing::one_sensitive_layer_model(), path("model.onnx"));
    DryRunParams p;
    p.setup.model_path = path("model.onnx");
    p.setup.work_dir = path("work");
    p.setup.calibration = testing::test_calibration_data();
    p.setup.evaluation = testing::test_evaluation_data();
    p.setup.criterion.target = parse_target(target);
    return p;
  }
  const DryRunRow& row(const DryRunReport& r, const std::string& preset) {
    for (const auto& row : r.rows) {
      if (row.preset == preset) return row;
    }
    throw std::runtime_error("no row " + preset);
  }
};

TEST_F(DryRunTest, Int8MissingAndBf16PassingRecommendsExploration) {
  const DryRunParams p = params("psnr>30");
  const std::string before = read_file(p.setup.model_path, "model");
  const DryRunReport r = dry_run(p);
  ASSERT_EQ(r.rows.size(), 4u);
  EXPECT_FALSE(row(r, "XINT8").verdict.pass);  // "mix" rounds to zero (see explore_models.h)
  EXPECT_LT(row(r, "XINT8").metrics.at(0).psnr_db, 30.0);
  EXPECT_TRUE(row(r, "BF16").verdict.pass);
  EXPECT_TRUE(row(r, "FP16").verdict.pass);
  // FP16 keeps 11 significant bits to BF16's 8: about 3 bits (18 dB) closer to FP32.
  EXPECT_GT(row(r, "FP16").metrics.at(0).psnr_db, row(r, "BF16").metrics.at(0).psnr_db + 12.0);
  EXPECT_EQ(r.recommendation.action, "explore");
  EXPECT_NE(r.recommendation.reason.find("full BF16 passes"), std::string::npos) << r.recommendation.reason;
  EXPECT_EQ(r.samples, 32u);
  // G = 3 candidates, budget max(1, 0.3 G) = 1 (its log2 rounds up to 1); ve2 tries 2
  // power-of-two methods: 3 = 2 baselines + 1 method more; greedy 3 + 2 ranking passes + 3
  // steps; bisection 3 + 2 + 2 steps + 2 passes re-ranking after the step that misses; cost
  // 3 + 3 + 2 ceil(log2 3) + 3.
  ASSERT_EQ(r.candidates, 3u);
  std::map<std::string, size_t> evaluations;
  for (const auto& e : r.explore_estimates) evaluations[e.search] = e.evaluations;
  EXPECT_EQ(evaluations, (std::map<std::string, size_t>{{"greedy", 8}, {"bisection", 9}, {"cost", 13}}));
  for (const auto& row : r.rows) EXPECT_TRUE(fs::exists(row.model_path)) << row.label;
  EXPECT_EQ(read_file(p.setup.model_path, "model"), before);  // the input model is never modified
}

TEST_F(DryRunTest, Int8PassingRecommendsInt8) {
  const DryRunReport r = dry_run(params("psnr>-100"));
  EXPECT_EQ(r.recommendation.action, "int8");
}

TEST_F(DryRunTest, EverythingMissingSaysPrecisionAloneWillNotDo) {
  const DryRunReport r = dry_run(params("psnr>190"));
  EXPECT_EQ(r.recommendation.action, "rethink");
  EXPECT_NE(r.recommendation.reason.find("loosen"), std::string::npos) << r.recommendation.reason;
}

TEST_F(DryRunTest, DeviceDecidesWhichRowsCanBeUsed) {
  DryRunParams p = params("psnr>30");
  p.deployment.device = "stx";
  DryRunReport r = dry_run(p);
  EXPECT_FALSE(row(r, "FP16").on_device);
  EXPECT_NE(row(r, "FP16").device_note.find("FP16 is not available on stx"), std::string::npos);
  EXPECT_TRUE(row(r, "BF16").on_device);
  EXPECT_TRUE(row(r, "XINT8").on_device);
  p.deployment.device = "cpu";
  r = dry_run(p);
  for (const auto& row : r.rows) EXPECT_TRUE(row.on_device) << row.label;
  p.deployment.device = "npu9";
  EXPECT_THROW(dry_run(p), Error);
}

TEST_F(DryRunTest, AccuracyIsMeasuredOnCpuWhateverTheProvider) {
  // --ep CUDA (absent from the CPU-only build the set-up fetches) used to be the provider of
  // every accuracy run, so dry-run failed or measured another runtime than guide. Now every row
  // is measured on CPU and the provider is only asked to load each row's model.
  DryRunParams p = params("psnr>30");
  const DryRunReport on_cpu = dry_run(p);
  p.setup.work_dir = path("work_cuda");
  p.deployment.provider = "CUDA";
  const DryRunReport r = dry_run(p);
  ASSERT_EQ(r.rows.size(), on_cpu.rows.size());
  for (size_t i = 0; i < r.rows.size(); ++i) {
    EXPECT_EQ(r.rows[i].metrics.at(0).psnr_db, on_cpu.rows[i].metrics.at(0).psnr_db) << r.rows[i].label;
  }
  ASSERT_EQ(r.runtimes.size(), r.rows.size());
  for (const auto& trial : r.runtimes) {
    EXPECT_FALSE(trial.ok);
    EXPECT_NE(trial.detail.find("not in this ONNX Runtime build"), std::string::npos) << trial.detail;
  }
  EXPECT_TRUE(on_cpu.runtimes.empty());
}

TEST_F(DryRunTest, WithoutCalibrationDataItCalibratesOnSeededRandomDataWithAWarning) {
  DryRunParams p = params("psnr>30");
  p.setup.calibration = DataSpec{};
  WarningCollector warnings;
  const DryRunReport r = dry_run(p);
  EXPECT_EQ(r.rows.size(), 4u);
  bool warned = false;
  for (const auto& w : warnings.warnings()) warned = warned || w.find("no calibration data given") != std::string::npos;
  EXPECT_TRUE(warned);
}

class RequantizeTest : public testing::TempDirTest {
 protected:
  RequantizeParams params() {
    save_model(testing::one_sensitive_layer_model(), path("model.onnx"));
    QuantizeParams q;
    q.setup.model_path = path("model.onnx");
    q.output_path = path("model_xint8.onnx");
    q.config.preset = "XINT8";
    q.setup.calibration = testing::test_calibration_data();
    quantize_job(q);
    RequantizeParams p;
    p.setup.model_path = q.output_path;
    p.output_path = path("model_bf16.onnx");
    p.setup.work_dir = path("work");
    p.setup.calibration = q.setup.calibration;
    p.setup.evaluation = testing::test_evaluation_data();
    p.setup.criterion.target = parse_target("psnr>30");
    return p;
  }
};

TEST_F(RequantizeTest, StripsRequantizesAndReportsTheDelta) {
  RequantizeParams p = params();
  p.config.preset = "BF16";
  const std::string before = read_file(p.setup.model_path, "model");
  const RequantizeReport r = requantize(p);
  EXPECT_GT(r.strip.qdq_pairs, 0);
  EXPECT_TRUE(fs::exists(r.stripped_path));
  EXPECT_FALSE(r.previous_verdict.pass);
  EXPECT_TRUE(r.new_verdict.pass) << r.new_verdict.reason;
  EXPECT_GT(r.psnr_delta_db, 10.0);
  EXPECT_DOUBLE_EQ(r.psnr_delta_db, r.new_metrics.at(0).psnr_db - r.previous_metrics.at(0).psnr_db);
  EXPECT_TRUE(fs::exists(r.output_path));
  EXPECT_TRUE(fs::exists(r.config_path));
  EXPECT_EQ(analyze_model(load_model(r.output_path), r.output_path).quantization.state, QuantState::kCastPairs);
  EXPECT_EQ(read_file(p.setup.model_path, "model"), before);
}

TEST_F(RequantizeTest, AFloatModelIsRefusedBeforeAnyWork) {
  RequantizeParams p = params();
  p.config.preset = "BF16";
  p.setup.model_path = path("model.onnx");
  try {
    requantize(p);
    FAIL() << "requantized a float model";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_NE(std::string(e.what()).find("not quantized"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(p.output_path));
  EXPECT_FALSE(fs::exists(path("work/stripped.onnx")));
}

TEST_F(RequantizeTest, AccuracyIsMeasuredOnCpuWhateverTheProvider) {
  RequantizeParams p = params();
  p.config.preset = "BF16";
  const RequantizeReport on_cpu = requantize(p);
  p.setup.work_dir = path("work_cuda");
  p.output_path = path("model_bf16_cuda.onnx");
  p.deployment.provider = "CUDA";
  const RequantizeReport r = requantize(p);
  EXPECT_EQ(r.new_metrics.at(0).psnr_db, on_cpu.new_metrics.at(0).psnr_db);
  EXPECT_EQ(r.previous_metrics.at(0).psnr_db, on_cpu.previous_metrics.at(0).psnr_db);
  ASSERT_EQ(r.runtimes.size(), 1u);
  EXPECT_FALSE(r.runtimes[0].ok);
  EXPECT_EQ(r.runtimes[0].model, p.output_path);
}

// --config-format quark: the config beside the requantized model is in Quark's shape and reads
// back as the preset; one Quark's shape cannot hold (FP8) fails before the strip, writing nothing.
TEST_F(RequantizeTest, WritesTheConfigInQuarksShapeWhenAskedAndRefusesWhatItCannotHold) {
  RequantizeParams p = params();
  p.config.preset = "A16W8";
  p.config_shape = ConfigShape::kQuark;
  const RequantizeReport r = requantize(p);
  const auto written = nlohmann::ordered_json::parse(read_file(r.config_path, "config"));
  EXPECT_EQ(detect_config_shape(written, r.config_path), ConfigShape::kQuark);
  EXPECT_EQ(written["global_config"]["input_tensors"]["data_type"], "Int16");
  const onnx::ModelProto model = load_model(path("model.onnx"));
  EXPECT_EQ(assign_layers(load_config(r.config_path), model, "test"), assign_layers(*preset_config("A16W8"), model, "test"));

  p.config.preset = "FP8E4M3";
  p.setup.work_dir = path("work_fp8");
  p.output_path = path("model_fp8.onnx");
  try {
    requantize(p);
    FAIL() << "Quark's shape held FP8";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_NE(std::string(e.what()).find(path("model_fp8.config.json")), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(p.output_path));
  EXPECT_FALSE(fs::exists(path("work_fp8")));
}

TEST_F(RequantizeTest, NeedsANewConfig) {
  RequantizeParams p = params();
  EXPECT_THROW(requantize(p), Error);
  EXPECT_FALSE(fs::exists(p.output_path));
}

// The Vitis AI quantize script's --fp-nodes: XINT8 with "mix" kept at BF16 (as one
// specific_layer_config entry the written config carries), the rest integer; FP16 the same.
class FpNodesTest : public testing::TempDirTest {};

TEST_F(FpNodesTest, NamedNodesStayAtTheFloatPrecisionAndTheConfigSaysSo) {
  save_model(testing::one_sensitive_layer_model(), path("model.onnx"));
  QuantizeParams q;
  q.setup.model_path = path("model.onnx");
  q.setup.calibration = testing::test_calibration_data();
  q.config.preset = "XINT8";
  q.output_path = path("fp.onnx");
  q.fp_nodes = {"mix"};
  const QuantizeReport r = quantize_job(q);
  EXPECT_EQ(r.nodes_bf16, 1u);
  EXPECT_EQ(r.nodes_integer, 2u);
  const QuantConfig written = load_config(r.config_path);
  ASSERT_EQ(written.specific.size(), 1u);
  EXPECT_EQ(written.specific[0].target_node_names, std::vector<std::string>{"mix"});
  EXPECT_EQ(written.specific[0].layer_config.weight->format, FormatId::kBFloat16);

  q.fp_precision = FormatId::kFloat16;
  q.output_path = path("fp16.onnx");
  EXPECT_EQ(quantize_job(q).nodes_fp16, 1u);

  for (const auto& [nodes, precision, message] :
       {std::tuple{std::vector<std::string>{"^m.*"}, FormatId::kBFloat16, "would read as a regex"},
        std::tuple{std::vector<std::string>{""}, FormatId::kBFloat16, "empty node name"},
        std::tuple{std::vector<std::string>{"mix"}, FormatId::kInt8, "bf16 or fp16"}}) {
    q.fp_nodes = nodes;
    q.fp_precision = precision;
    q.output_path = path("bad.onnx");
    try {
      quantize_job(q);
      FAIL() << message;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
    EXPECT_FALSE(fs::exists(path("bad.onnx")));
  }
}

class LadderTest : public testing::TempDirTest {
 protected:
  LadderParams params(const std::string& target) {
    save_model(testing::one_sensitive_layer_model(), path("model.onnx"));
    LadderParams p;
    p.setup.model_path = path("model.onnx");
    p.setup.work_dir = path("work");
    p.setup.calibration = testing::test_calibration_data();
    p.setup.evaluation = testing::test_evaluation_data();
    p.deployment.device = "cpu";
    p.setup.criterion.target = parse_target(target);
    return p;
  }
};

// "mix" loses its inputs at 8 bits (scale 1001/127 > 2) but keeps them at 16 (scale 1001/32767).
TEST_F(LadderTest, W8a8MissesAndW8a16IsChosen) {
  const LadderReport r = ladder(params("psnr>30"));
  ASSERT_EQ(r.rungs.size(), 2u);
  EXPECT_EQ(r.rungs[0].preset, "U8S8");  // cpu: its int8 preset, no power-of-two requirement
  EXPECT_FALSE(r.rungs[0].verdict.pass);
  EXPECT_TRUE(r.rungs[1].verdict.pass) << r.rungs[1].verdict.reason;
  EXPECT_EQ(r.chosen, "A16W8");
  EXPECT_EQ(r.chosen_model_path, r.rungs[1].model_path);
  EXPECT_TRUE(fs::exists(r.chosen_model_path));
}

TEST_F(LadderTest, StopsAtTheFirstRungThatPasses) {
  LadderParams p = params("psnr>-100");
  p.deployment.device = "ve2";
  const LadderReport r = ladder(p);
  ASSERT_EQ(r.rungs.size(), 1u);
  EXPECT_EQ(r.rungs[0].preset, "XINT8");  // power-of-two scales on the NPU
  EXPECT_EQ(r.chosen, "XINT8");
}

TEST_F(LadderTest, BothMissingKeepsFloatAndSaysWhatNext) {
  const LadderReport r = ladder(params("psnr>190"));
  EXPECT_EQ(r.rungs.size(), 2u);
  EXPECT_EQ(r.chosen, "float");
  EXPECT_TRUE(r.chosen_model_path.empty());
  EXPECT_NE(r.follow_up.find("--explore"), std::string::npos) << r.follow_up;
}

TEST_F(LadderTest, EveryRuntimeTriedIsReportedFailuresIncluded) {
  LadderParams p = params("psnr>30");
  p.deployment.provider = "CUDA";  // not in the CPU-only build the set-up fetches
  const LadderReport r = ladder(p);
  ASSERT_EQ(r.runtimes.size(), 1 + r.rungs.size());
  EXPECT_TRUE(r.runtimes[0].ok);
  for (size_t i = 1; i < r.runtimes.size(); ++i) {
    EXPECT_FALSE(r.runtimes[i].ok);
    EXPECT_NE(r.runtimes[i].detail.find("not in this ONNX Runtime build"), std::string::npos) << r.runtimes[i].detail;
  }
}

}  // namespace
}  // namespace mixprec
