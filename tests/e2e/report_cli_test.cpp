// report.html as the commands leave it: guide, dry-run and explore write it into their work dir
// at the end, after an error and on Ctrl-C (with command.json saying how the run ended), and
// `mixprec report` rebuilds the same bytes from the work dir alone.
#include <gtest/gtest.h>

#include <signal.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mixprec/model_io.h"
#include "mixprec/npy.h"
#include "mixprec/random_data.h"
#include "support/cli_runner.h"
#include "support/explore_models.h"
#include "support/html_check.h"
#include "support/temp_dir.h"

namespace mixprec {
namespace {
namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;
using testing::html_problems;

Json json_file(const std::string& path) { return Json::parse(read_file(path, "json")); }

size_t line_count(const std::string& path) {
  std::ifstream in(path);
  size_t n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

class ReportCliTest : public testing::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    save_model(testing::two_sensitive_layers_model(), path("model.onnx"));
    calibration_ = testing::write_test_calibration_files(dir_.string());
  }

  std::vector<std::string> calibration() const {
    std::vector<std::string> args = {"--calibration-data"};
    args.insert(args.end(), calibration_.begin(), calibration_.end());
    return args;
  }

  std::vector<std::string> explore_args(const std::string& work_dir, const std::string& samples = "32") const {
    std::vector<std::string> args = {
        "explore", path("model.onnx"),  "--work-dir", path(work_dir),  "--random", samples, "--seed",
        "2",       "--target-accuracy", "psnr>30",    "--bf16-budget", "0.4"};
    const auto c = calibration();
    args.insert(args.end(), c.begin(), c.end());
    return args;
  }

  // The report is well formed and holds these sections.
  void expect_report(const std::string& work_dir, const std::vector<std::string>& sections) {
    const std::string html = read_file(path(work_dir + "/report.html"), "report");
    EXPECT_EQ(html_problems(html), std::vector<std::string>{});
    for (const auto& id : sections) EXPECT_NE(html.find("<section id=\"" + id + "\">"), std::string::npos) << id;
  }

  std::vector<std::string> calibration_;
};

TEST_F(ReportCliTest, ExploreLeavesAReportThatTheReportCommandRebuildsByteForByte) {
  const CliResult r = run_cli(explore_args("work"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("note: report " + path("work/report.html")), std::string::npos) << r.err;
  EXPECT_EQ(json_file(path("work/command.json"))["status"], "done");
  expect_report("work", {"summary", "sensitivity", "trajectory", "map", "config"});

  const CliResult again = run_cli({"report", path("work"), "-o", path("again.html")});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(read_file(path("again.html"), "report"), read_file(path("work/report.html"), "report"));

  const CliResult missing = run_cli({"report", path("nowhere")});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find(path("nowhere")), std::string::npos) << missing.err;
}

TEST_F(ReportCliTest, GuideWritesItsPhasesAsTheyEndAndAReportWithThem) {
  std::vector<std::string> args = {"guide",      "--model",   path("model.onnx"),  "--explore", "--random",      "32",
                                   "--seed",     "2",         "--target-accuracy", "psnr>30",   "--bf16-budget", "0.4",
                                   "--work-dir", path("work")};
  const auto c = calibration();
  args.insert(args.end(), c.begin(), c.end());
  const CliResult r = run_cli(args);
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 3) << r.err;
  const Json guide = json_file(path("work/guide.json"));
  std::vector<std::string> phases;
  for (const auto& phase : guide["phases"]) phases.push_back(phase["name"]);
  EXPECT_EQ(phases, (std::vector<std::string>{"analyze", "config", "calibrate", "baseline", "quantize", "recover",
                                              "validate", "explore", "compile"}));
  EXPECT_TRUE(guide["outcome"].is_string());
  EXPECT_FALSE(guide["phases"][0]["lines"].empty());
  EXPECT_EQ(guide["phases"][0]["result"]["task"]["type"], "regression");
  expect_report("work",
                {"summary", "model", "recipe", "guide", "sensitivity", "trajectory", "map", "metrics", "compile"});
}

TEST_F(ReportCliTest, DryRunWritesItsTableAsJsonAndAReport) {
  const CliResult r = run_cli({"dry-run", path("model.onnx"), "--work-dir", path("dry"), "--random", "16"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json_file(path("dry/dry_run.json"))["rows"].size(), 4u);
  expect_report("dry", {"summary", "model", "recipe", "warnings"});
  EXPECT_NE(read_file(path("dry/report.html"), "report").find("Recommendation: "), std::string::npos);
}

TEST_F(ReportCliTest, AnErrorLeavesAReportSayingWhatStoppedTheRun) {
  write_npy(path("wrong.npy"), random_tensor(DType::kFloat32, {1, 7}, 1));  // the model takes [1, 4]
  std::vector<std::string> args = explore_args("work");
  args.resize(args.size() - 8);  // the calibration files: the wrong one instead
  args.push_back(path("wrong.npy"));
  const CliResult r = run_cli(args);
  ASSERT_EQ(r.exit_code, 2) << r.err;
  const Json command = json_file(path("work/command.json"));
  EXPECT_EQ(command["status"], "error");
  EXPECT_NE(command["error"].get<std::string>().find("wrong.npy"), std::string::npos) << command.dump();
  const std::string html = read_file(path("work/report.html"), "report");
  EXPECT_EQ(html_problems(html), std::vector<std::string>{});
  EXPECT_NE(html.find("The run stopped with an error"), std::string::npos);
  EXPECT_NE(r.err.find("report of the run so far"), std::string::npos) << r.err;
}

TEST_F(ReportCliTest, CtrlCLeavesTheReportOfTheRunSoFar) {
  // 20000 evaluation samples make each step take long enough to be interrupted after the first.
  bool sent = false;
  const CliResult r = testing::run_cli_signalled(
      MIXPREC_EXE, explore_args("work", "20000"), [&] { return line_count(path("work/ledger.jsonl")) >= 1; }, SIGINT,
      sent);
  ASSERT_TRUE(sent) << "the run ended before the first step was on disk: " << r.out;
  ASSERT_EQ(r.exit_code, 130) << r.err;
  EXPECT_NE(r.err.find("interrupted (Ctrl-C)"), std::string::npos) << r.err;
  const Json command = json_file(path("work/command.json"));
  EXPECT_EQ(command["status"], "interrupted");
  const std::string html = read_file(path("work/report.html"), "report");
  EXPECT_EQ(html_problems(html), std::vector<std::string>{});
  EXPECT_NE(html.find("The run was interrupted (Ctrl-C)"), std::string::npos);
  EXPECT_NE(html.find("id=\"chart-trajectory\""), std::string::npos);
}

}  // namespace
}  // namespace mixprec
