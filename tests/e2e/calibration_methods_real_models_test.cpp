// Every calibration method on every real model: guide's quantize phase measures each method the
// device allows on the same statistics. None may fall more than guide's margin (3 dB
// worst-output PSNR) below the plain range (MinMax; PowerOfTwo_NonOverflow on a power-of-two
// NPU) without guide warning about it, and the method guide keeps is the best it measured.
// (Entropy once cut the classifier's SE-gate HardSigmoid ranges and fell far below MinMax.)
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mixprec/model_io.h"
#include "support/cli_runner.h"
#include "support/temp_dir.h"

namespace mixprec {
namespace {

const std::string kModels = MIXPREC_MODELS_DIR;
const std::string kCalib = std::string(MIXPREC_DATA_DIR) + "/calib";
const std::string kEval = std::string(MIXPREC_DATA_DIR) + "/eval";
constexpr double kMarginDb = 3.0;  // guide's

struct ModelCase {
  std::string name, file, preprocess, size, device;
};

class CalibrationMethodsRealModel : public testing::TempDirTest, public ::testing::WithParamInterface<ModelCase> {};

TEST_P(CalibrationMethodsRealModel, NoMethodFallsFarBelowThePlainRangeWithoutAWarning) {
  const ModelCase& c = GetParam();
  // A target no method reaches: guide ranks the methods by worst-output PSNR alone.
  const CliResult r = run_cli({"guide", "--model", kModels + "/" + c.file, "--device", c.device, "--target-accuracy",
                               "psnr>99", "--calibration-data", kCalib, "--data", kEval, "--preprocess", c.preprocess,
                               "--image-size", c.size, "--work-dir", path("work"), "--no-recover"});
  ASSERT_EQ(r.exit_code, 3) << r.out << r.err;  // the target is missed, every phase ran
  const auto guide = nlohmann::json::parse(read_file(path("work/guide.json"), "guide report"));
  nlohmann::json quantize;
  for (const auto& phase : guide["phases"]) {
    if (phase["name"] == "quantize") quantize = phase["result"];
  }
  const auto& methods = quantize["methods"];
  const bool power_of_two = c.device != "cpu";
  ASSERT_EQ(methods.size(), power_of_two ? 2u : 4u) << quantize.dump();
  const std::string plain = power_of_two ? "PowerOfTwo_NonOverflow" : "MinMax";
  double plain_db = NAN, best_db = -INFINITY;
  std::string best;
  for (const auto& m : methods) {
    if (m["method"] == plain) plain_db = m["psnr_db"];
    if (m["psnr_db"].get<double>() > best_db) {
      best_db = m["psnr_db"];
      best = m["method"];
    }
  }
  ASSERT_FALSE(std::isnan(plain_db)) << quantize.dump();
  std::cout << "[ measured ] " << c.name << " on " << c.device << ":";
  for (const auto& m : methods) {
    const std::string method = m["method"];
    const double db = m["psnr_db"];
    std::cout << " " << method << " " << db << " dB";
    const bool warned = r.err.find("calibration method " + method + " is ") != std::string::npos;
    EXPECT_EQ(warned, plain_db - db > kMarginDb) << method << " " << db << " dB against " << plain << " " << plain_db
                                                 << " dB\n" << r.err;
  }
  std::cout << "; kept " << quantize["kept"].get<std::string>() << "\n";
  EXPECT_EQ(quantize["kept"], best);
  EXPECT_GE(best_db, plain_db);
}

INSTANTIATE_TEST_SUITE_P(
    Models, CalibrationMethodsRealModel,
    ::testing::Values(ModelCase{"det", "ppocr_det.onnx", "ppocr_det", "320x320", "cpu"},
                      ModelCase{"cls", "ppocr_cls.onnx", "ppocr_cls_rec", "48x192", "cpu"},
                      ModelCase{"rec", "ppocr_rec.onnx", "ppocr_cls_rec", "48x320", "cpu"},
                      ModelCase{"det_npu", "ppocr_det.onnx", "ppocr_det", "320x320", "ve2"},
                      ModelCase{"cls_npu", "ppocr_cls.onnx", "ppocr_cls_rec", "48x192", "ve2"}),
    [](const ::testing::TestParamInfo<ModelCase>& param) { return param.param.name; });

}  // namespace
}  // namespace mixprec
