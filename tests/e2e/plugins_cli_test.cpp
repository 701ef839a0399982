// Plugins from the command line: `mixprec plugins` lists the block-formats plugin the build
// installs in its default folder; `guide --plugin block-formats ARGS...` passes ARGS through,
// asks for consent, and validates and compiles the classifier quantized to MX9 on stx, where
// mixprec's own configs refuse block formats. `--use-plugin calib-aciq` adds the ACIQ calibration
// method: quantize takes it by name, guide's method sweep tries it beside the built-in ones, and a
// config that names it needs the plugin to be read.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <iostream>

#include <nlohmann/json.hpp>

#include "mixprec/model_io.h"
#include "support/cli_runner.h"
#include "support/temp_dir.h"

namespace mixprec {
namespace {
namespace fs = std::filesystem;

const std::string kModels = MIXPREC_MODELS_DIR;
const std::string kCalib = std::string(MIXPREC_DATA_DIR) + "/calib";
const std::string kEval = std::string(MIXPREC_DATA_DIR) + "/eval";

class PluginsCli : public testing::TempDirTest {
 protected:
  std::vector<std::string> guide_cls(const std::vector<std::string>& tail) {
    std::vector<std::string> args = {"guide", "--model", kModels + "/ppocr_cls.onnx", "--device", "stx",
                                     "--target-accuracy", "psnr>20", "--calibration-data", kCalib, "--data", kEval,
                                     "--preprocess", "ppocr_cls_rec", "--image-size", "48x192", "--work-dir",
                                     path("work")};
    args.insert(args.end(), tail.begin(), tail.end());
    return args;
  }
};

TEST_F(PluginsCli, PluginsListsTheShippedOne) {
  const CliResult r = run_cli({"plugins"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("block-formats 1.0.0: block floating point"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("formats   bfp16, mx4, mx6, mx9, mxint8"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("command   quantize --format"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("consent   asked before it runs (--yes)"), std::string::npos) << r.out;
}

TEST_F(PluginsCli, GuideRunsThePluginWithConsentAndCompilesItsModel) {
  // Not a terminal and no --yes: the banner, and nothing runs.
  const CliResult refused = run_cli(guide_cls({"--plugin", "block-formats", "quantize", "--format", "mx9"}));
  EXPECT_EQ(refused.exit_code, 2) << refused.out << refused.err;
  EXPECT_NE(refused.err.find("plugin 'block-formats' runs only with consent (--yes): Block formats on the NPU are experimental"),
            std::string::npos) << refused.err;
  EXPECT_FALSE(fs::exists(path("work/block-formats.mx9.onnx")));

  const CliResult missing = run_cli(guide_cls({"--yes", "--plugin", "nope", "x"}));
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("no plugin 'nope' (installed: block-formats"), std::string::npos) << missing.err;

  // --format and --rest are the plugin's, not guide's: they reach it untouched.
  const CliResult r = run_cli(guide_cls({"--yes", "--plugin", "block-formats", "quantize", "--format", "mx9"}));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  for (const char* line : {"== plugin: done", "arguments: quantize --format mx9", "1 quantization(s) through mixprec",
                           "== validate: pass", "compiler options (block formats): enable_f32_to_bf16_conversion=true",
                           "PASS: "}) {
    EXPECT_NE(r.out.find(line), std::string::npos) << line << "\n" << r.out;
  }
  const auto guide = nlohmann::json::parse(read_file(path("work/guide.json"), "guide report"));
  for (const auto& phase : guide["phases"]) {
    if (phase["name"] == "validate") {
      const double psnr = phase["result"]["outputs"][0]["psnr_db"];
      std::cout << "[ measured ] cls MX9 through the plugin on stx: " << psnr << " dB\n";
      EXPECT_GT(psnr, 25);  // 29.1 dB measured
    }
  }
  EXPECT_TRUE(fs::exists(path("work/block-formats.mx9.config.json")));
  EXPECT_TRUE(fs::exists(path("work/vitisai_config.json")));
}

TEST_F(PluginsCli, UsePluginAddsACalibrationMethodThatQuantizeAndGuideTake) {
  const CliResult listed = run_cli({"plugins"});
  EXPECT_NE(listed.out.find("calib-aciq 1.0.0: ACIQ"), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("  methods   ACIQ\n  use with  --use-plugin calib-aciq"), std::string::npos) << listed.out;

  const std::vector<std::string> quantize = {"quantize", kModels + "/ppocr_cls.onnx", "--preset", "U8S8", "--calib-method",
                                             "ACIQ", "--calibration-data", kCalib, "--preprocess", "ppocr_cls_rec",
                                             "--image-size", "48x192", "-o", path("aciq.onnx")};
  const CliResult unknown = run_cli(quantize);
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("unknown --calib-method 'ACIQ'"), std::string::npos) << unknown.err;
  EXPECT_NE(unknown.err.find("a plugin's method needs --use-plugin"), std::string::npos) << unknown.err;
  EXPECT_FALSE(fs::exists(path("aciq.onnx")));

  std::vector<std::string> with = quantize;
  with.insert(with.end(), {"--use-plugin", "calib-aciq"});
  const CliResult q = run_cli(with);
  ASSERT_EQ(q.exit_code, 0) << q.out << q.err;
  EXPECT_NE(q.out.find("plugin calib-aciq 1.0.0: adds calibration methods ACIQ"), std::string::npos) << q.out;
  const auto config = nlohmann::json::parse(read_file(path("aciq.config.json"), "config"));
  EXPECT_EQ(config["extra_options"]["CalibMethod"], "ACIQ");
  // The config names the plugin's method: read without the plugin, it is refused with its name.
  const CliResult reread = run_cli({"quantize", kModels + "/ppocr_cls.onnx", "--config", path("aciq.config.json"),
                                    "--calibration-data", kCalib, "-o", path("again.onnx")});
  EXPECT_EQ(reread.exit_code, 2);
  EXPECT_NE(reread.err.find("aciq.config.json"), std::string::npos) << reread.err;
  EXPECT_NE(reread.err.find("unknown calibration method \"ACIQ\""), std::string::npos) << reread.err;

  const CliResult g = run_cli({"guide", "--model", kModels + "/ppocr_cls.onnx", "--device", "cpu", "--target-accuracy",
                               "psnr>20", "--no-recover", "--use-plugin", "calib-aciq", "--calibration-data", kCalib,
                               "--data", kEval, "--preprocess", "ppocr_cls_rec", "--image-size", "48x192", "--work-dir",
                               path("guide")});
  ASSERT_EQ(g.exit_code, 0) << g.out << g.err;
  const auto guide = nlohmann::json::parse(read_file(path("guide/guide.json"), "guide report"));
  bool tried = false;
  for (const auto& phase : guide["phases"]) {
    if (phase["name"] != "quantize") continue;
    double best = -1e9;
    for (const auto& m : phase["result"]["methods"]) best = std::max(best, m["psnr_db"].get<double>());
    for (const auto& m : phase["result"]["methods"]) {
      if (m["method"] != "ACIQ") continue;
      tried = true;
      std::cout << "[ measured ] cls U8S8 on cpu, ACIQ: " << m["psnr_db"] << " dB (best method " << best << " dB)\n";
      EXPECT_GT(m["psnr_db"].get<double>(), 5);  // 14.8 dB measured, MinMSE 26.7
    }
    EXPECT_NE(phase["result"]["kept"], "ACIQ");  // it is not this model's best
  }
  EXPECT_TRUE(tried) << g.out;
}

}  // namespace
}  // namespace mixprec
