// MIXPREC_ORT_LIB: a user points mixprec at their own ONNX Runtime build, and a path that is
// not one fails with a clear error naming the variable.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "mixprec/model_io.h"
#include "support/cli_runner.h"
#include "support/model_builder.h"
#include "support/temp_dir.h"

namespace mixprec {
namespace {

class RuntimeCliTest : public testing::TempDirTest {
 protected:
  CliResult run_with_lib(const std::string& lib, const std::vector<std::string>& args) {
    ::setenv("MIXPREC_ORT_LIB", lib.c_str(), 1);
    CliResult result = run_cli(args);
    ::unsetenv("MIXPREC_ORT_LIB");
    return result;
  }
};

TEST_F(RuntimeCliTest, VersionNamesTheLinkedRuntimeByDefault) {
  const CliResult r = run_cli({"--version"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("ONNX Runtime 1."), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(linked)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("CPUExecutionProvider"), std::string::npos) << r.out;
}

TEST_F(RuntimeCliTest, AnotherBuildIsLoadedAndRunsModels) {
  // A copy of the SDK's library under another name stands for the user's own build: the
  // process must report and use that file, not the one it was linked with.
  const std::string copy = path("libonnxruntime_user.so");
  std::filesystem::copy_file(MIXPREC_ORT_SDK_LIB, copy);
  const CliResult version = run_with_lib(copy, {"--version"});
  EXPECT_EQ(version.exit_code, 0) << version.err;
  EXPECT_NE(version.out.find("(" + copy + ")"), std::string::npos) << version.out;

  const std::string model = path("chain.onnx");
  save_model(testing::conv_chain(2), model);
  const CliResult run = run_with_lib(copy, {"run", model, "--random", "2", "--seed", "1"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
}

TEST_F(RuntimeCliTest, APathThatIsNotOnnxRuntimeIsAClearError) {
  const CliResult missing = run_with_lib(path("nope.so"), {"--version"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("MIXPREC_ORT_LIB=" + path("nope.so") + ": cannot load"), std::string::npos) << missing.err;

  // A real shared library that is not ONNX Runtime: the C library every process has.
  const CliResult other = run_with_lib("libc.so.6", {"--version"});
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_NE(other.err.find("not an ONNX Runtime library"), std::string::npos) << other.err;
}

}  // namespace
}  // namespace mixprec
