// `mixprec explore` as a user runs it: killed after a step (MIXPREC_ABORT_AFTER_STEPS ends the
// process abruptly, as a kill would), then `--resume`d, it ends with the same ledger, model and
// config as a run that was never interrupted.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mixprec/explore.h"
#include "mixprec/model_io.h"
#include "mixprec/npy.h"
#include "mixprec/random_data.h"
#include "support/cli_runner.h"
#include "support/explore_models.h"
#include "support/temp_dir.h"

namespace mixprec {
namespace {

// The ledger's lines without their timings, the only field allowed to differ between runs.
std::vector<std::string> ledger_without_timings(const std::string& file) {
  std::vector<std::string> lines;
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    const auto at = line.find("\"seconds\":");
    lines.push_back(at == std::string::npos ? line : line.substr(0, at) + line.substr(line.find(',', at)));
  }
  return lines;
}

class ExploreCliTest : public testing::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    save_model(testing::two_sensitive_layers_model(), path("model.onnx"));
    for (int i = 0; i < 8; ++i) {
      write_npy(path("calib_" + std::to_string(i) + ".npy"), random_tensor(DType::kFloat32, {1, 4}, 100 + i));
    }
  }

  CliResult explore(const std::string& work_dir, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"explore",       path("model.onnx"), "--work-dir", path(work_dir),
                                     "--random",      "32",               "--seed",     "2",
                                     "--target-accuracy", "psnr>30",      "--bf16-budget", "0.4",
                                     "--calibration-data"};
    for (int i = 0; i < 8; ++i) args.push_back(path("calib_" + std::to_string(i) + ".npy"));
    args.insert(args.end(), extra.begin(), extra.end());
    return run_cli(args);
  }
};

TEST_F(ExploreCliTest, KilledAfterAStepAndResumedEndsLikeAnUninterruptedRun) {
  const CliResult whole = explore("whole");
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  ASSERT_EQ(ledger_without_timings(path("whole/ledger.jsonl")).size(), 2u) << whole.out;

  ::setenv("MIXPREC_ABORT_AFTER_STEPS", "1", 1);
  const CliResult killed = explore("stopped");
  ::unsetenv("MIXPREC_ABORT_AFTER_STEPS");
  EXPECT_EQ(killed.exit_code, 137) << killed.err;
  EXPECT_EQ(ledger_without_timings(path("stopped/ledger.jsonl")).size(), 1u);

  const CliResult resumed = explore("stopped", {"--resume"});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_NE(resumed.out.find("resumed     1 steps from the ledger"), std::string::npos) << resumed.out;
  EXPECT_EQ(ledger_without_timings(path("stopped/ledger.jsonl")), ledger_without_timings(path("whole/ledger.jsonl")));
  EXPECT_TRUE(read_file(path("stopped/final.onnx"), "model") == read_file(path("whole/final.onnx"), "model"));
  EXPECT_EQ(read_file(path("stopped/final_config.json"), "config"), read_file(path("whole/final_config.json"), "config"));
}

// --eval-cache-mb 0 streams every evaluation sample from a spill file in the work dir: the
// same ledger and model, and the spill file is gone when the run ends.
TEST_F(ExploreCliTest, SpilledEvaluationSamplesEndLikeTheInMemoryRun) {
  const CliResult memory = explore("memory");
  ASSERT_EQ(memory.exit_code, 0) << memory.err;
  const CliResult spilled = explore("spilled", {"--eval-cache-mb", "0"});
  ASSERT_EQ(spilled.exit_code, 0) << spilled.err;
  EXPECT_EQ(ledger_without_timings(path("spilled/ledger.jsonl")), ledger_without_timings(path("memory/ledger.jsonl")));
  EXPECT_TRUE(read_file(path("spilled/final.onnx"), "model") == read_file(path("memory/final.onnx"), "model"));
  for (const auto& entry : std::filesystem::directory_iterator(path("spilled"))) {
    EXPECT_EQ(entry.path().filename().string().find("eval-cache"), std::string::npos) << entry.path();
  }
}

TEST_F(ExploreCliTest, ResumeWithOtherSettingsIsRefusedWithTheReason) {
  ASSERT_EQ(explore("work").exit_code, 0);
  const CliResult r = explore("work", {"--resume", "--max-iters", "1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("run.json"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("max_iterations"), std::string::npos) << r.err;
}

// --trim not given: a bisection trims (kDefaultTrim, within --max-iters) unless --pareto wants
// what is left; greedy does not. Given, it is as said. run.json records what the run used.
TEST_F(ExploreCliTest, ABisectionTrimsByDefaultAndTrimZeroTurnsItOff) {
  const auto trim_of = [&](const std::string& work_dir, const std::vector<std::string>& extra) {
    const CliResult r = explore(work_dir, extra);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(read_file(path(work_dir + "/run.json"), "run settings")).at("trim").get<size_t>();
  };
  EXPECT_EQ(trim_of("bisection", {"--search", "bisection"}), kDefaultTrim);
  EXPECT_EQ(trim_of("off", {"--search", "bisection", "--trim", "0"}), 0u);
  EXPECT_EQ(trim_of("pareto", {"--search", "bisection", "--pareto"}), 0u);
  EXPECT_EQ(trim_of("greedy", {}), 0u);
  EXPECT_EQ(trim_of("greedy_trim", {"--trim", "3"}), 3u);
}

TEST_F(ExploreCliTest, CtrlCStopsAfterTheStepInProgressWithExit130AndTheBestOnDisk) {
  const CliResult whole = explore("whole");
  ASSERT_EQ(whole.exit_code, 0) << whole.err;

  ::setenv("MIXPREC_SIGINT_AFTER_STEPS", "1", 1);
  const CliResult stopped = explore("stopped");
  ::unsetenv("MIXPREC_SIGINT_AFTER_STEPS");
  EXPECT_EQ(stopped.exit_code, 130) << stopped.err;
  EXPECT_NE(stopped.err.find("stopped by SIGINT after the step in progress"), std::string::npos) << stopped.err;
  EXPECT_EQ(ledger_without_timings(path("stopped/ledger.jsonl")).size(), 1u);
  EXPECT_TRUE(std::filesystem::exists(path("stopped/final.onnx")));
  std::ifstream summary(path("stopped/summary.json"));
  const std::string text((std::istreambuf_iterator<char>(summary)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("interrupted"), std::string::npos) << text;

  const CliResult resumed = explore("stopped", {"--resume"});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(ledger_without_timings(path("stopped/ledger.jsonl")), ledger_without_timings(path("whole/ledger.jsonl")));
  EXPECT_EQ(read_file(path("stopped/final.onnx"), "model"), read_file(path("whole/final.onnx"), "model"));
}

TEST_F(ExploreCliTest, ASecondRunInTheSameWorkDirFailsNamingTheLock) {
  // The first run is held mid-way by a lock this test takes as if it were that run.
  std::filesystem::create_directories(path("busy"));
  const pid_t holder = ::fork();
  if (holder == 0) {
    const int fd = ::open(path("busy/.mixprec.lock").c_str(), O_RDWR | O_CREAT, 0666);
    ::flock(fd, LOCK_EX);
    const std::string pid = std::to_string(::getpid()) + "\n";
    [[maybe_unused]] const ssize_t n = ::write(fd, pid.data(), pid.size());
    ::pause();
    std::_Exit(0);
  }
  const std::filesystem::path lock = path("busy/.mixprec.lock");
  for (int i = 0; i < 500 && !(std::filesystem::exists(lock) && std::filesystem::file_size(lock) > 0); ++i) {
    ::usleep(10000);
  }
  const CliResult second = explore("busy");
  ::kill(holder, SIGKILL);
  ::waitpid(holder, nullptr, 0);
  EXPECT_EQ(second.exit_code, 2) << second.err;
  EXPECT_NE(second.err.find(".mixprec.lock: the work dir"), std::string::npos) << second.err;
  EXPECT_NE(second.err.find("in use by another mixprec run (pid " + std::to_string(holder) + ")"), std::string::npos)
      << second.err;
  EXPECT_FALSE(std::filesystem::exists(path("busy/ledger.jsonl")));
}

}  // namespace
}  // namespace mixprec
