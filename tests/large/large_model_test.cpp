// Models over 2 GB end to end (issue 18): a 2.25 GiB model with external data, generated here,
// quantized and explored by the mixprec executable; a result over 2 GB must come out with
// external data. Memory is the point: quantize once peaked at 7x the model's size. The bounds
// below are what mixprec holds today, so a regression fails here; the issue's target of 2x
// is not met yet: beside mixprec's one copy of the weights, ONNX Runtime keeps its own (it
// reads the session's external data into its memory even for initializers given through
// AddInitializer), and explore adds the candidate model and its session. Figures go to the log.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "mixprec/model_io.h"
#include "mixprec/npy.h"
#include "mixprec/random_data.h"
#include "support/cli_runner.h"
#include "support/large_model.h"

namespace mixprec {
namespace {

namespace fs = std::filesystem;

constexpr double kGiB = 1024.0 * 1024 * 1024;
// Peak resident memory over the model's size, measured at 2.3-2.5 (quantize) and 3.9-4.4 (explore)
// on this model, with a margin for the allocator: the prepared model, ONNX Runtime's copy of
// it, and in explore the candidate model with its session.
constexpr double kQuantizePeak = 2.75;
constexpr double kExplorePeak = 5.0;

class LargeModel : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("mixprec_large_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    weight_bytes_ = testing::write_large_matmul_model((dir_ / "large.onnx").string());
    // 4 calibration samples and 4 evaluation samples of the [1, 8192] input.
    for (int i = 0; i < 4; ++i) {
      write_npy((dir_ / ("calib_" + std::to_string(i) + ".npy")).string(),
                random_tensor(DType::kFloat32, {1, 8192}, 10 + i));
      write_npy((dir_ / ("eval_" + std::to_string(i) + ".npy")).string(),
                random_tensor(DType::kFloat32, {1, 8192}, 20 + i));
    }
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  static std::string path(const std::string& name) { return (dir_ / name).string(); }
  static std::vector<std::string> files(const std::string& prefix) {
    std::vector<std::string> out;
    for (int i = 0; i < 4; ++i) out.push_back(path(prefix + std::to_string(i) + ".npy"));
    return out;
  }

  // Checks and logs one run's figures; `bound` is the largest peak allowed, in model sizes.
  static void report(const std::string& what, const CliResult& r, double bound) {
    const double model = static_cast<double>(weight_bytes_);
    std::printf("[large] %s: %.1f s, peak RSS %.2f GiB (%.2fx the %.2f GiB model)\n", what.c_str(), r.seconds,
                static_cast<double>(r.peak_rss_bytes) / kGiB, static_cast<double>(r.peak_rss_bytes) / model,
                model / kGiB);
    EXPECT_LE(static_cast<double>(r.peak_rss_bytes), bound * model) << what;
  }

  static void quantize_to_int8();
  static void quantize_mostly_float();
  static void explore();

  static inline fs::path dir_;
  static inline uint64_t weight_bytes_ = 0;
};

// One test, so the 2.25 GiB model is generated once: quantize to int8, quantize with most of
// the model left float (a result over 2 GB), explore.
TEST_F(LargeModel, QuantizeAndExploreAModelOver2GB) {
  ASSERT_GT(weight_bytes_, kProtobufLimitBytes);
  quantize_to_int8();
  quantize_mostly_float();
  explore();
}

void LargeModel::quantize_to_int8() {
  std::vector<std::string> args = {"quantize", path("large.onnx"), "-o", path("int8.onnx"), "--preset", "XINT8",
                                   "--calibration-data"};
  for (const auto& f : files("calib_")) args.push_back(f);
  const CliResult r = run_cli(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  report("quantize XINT8", r, kQuantizePeak);
  // 0.56 GiB of int8 weights: under the limit, so one self-contained file.
  EXPECT_FALSE(fs::exists(path("int8.onnx.data")));
  std::printf("[large] int8.onnx: %.2f GiB\n", static_cast<double>(fs::file_size(path("int8.onnx"))) / kGiB);
  EXPECT_LT(fs::file_size(path("int8.onnx")), weight_bytes_ / 3);
}

void LargeModel::quantize_mostly_float() {
  // Every MatMul but the first stays float: the result keeps 2 GiB of float weights.
  std::ofstream(path("mostly_float.json")) << R"({"global_config": {"input_tensors": {"spec": "XInt8Spec", "params": {}},
      "weight": {"spec": "XInt8Spec", "params": {}}},
    "exclude": {"node_names": ["^matmul_[1-8]$"], "subgraphs": []}})";
  std::vector<std::string> args = {"quantize", path("large.onnx"), "-o", path("mixed.onnx"), "--config",
                                   path("mostly_float.json"), "--calibration-data"};
  for (const auto& f : files("calib_")) args.push_back(f);
  const CliResult r = run_cli(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  report("quantize, 8 of 9 layers float", r, kQuantizePeak);
  ASSERT_TRUE(fs::exists(path("mixed.onnx.data")));
  const auto data = fs::file_size(path("mixed.onnx.data"));
  std::printf("[large] mixed.onnx: %.4f GiB + mixed.onnx.data %.2f GiB\n",
              static_cast<double>(fs::file_size(path("mixed.onnx"))) / kGiB, static_cast<double>(data) / kGiB);
  EXPECT_GT(data, kProtobufLimitBytes);
  EXPECT_LT(fs::file_size(path("mixed.onnx")), uint64_t{1} << 20);  // the graph alone
  const onnx::ModelProto header = load_model(path("mixed.onnx"), {.load_external_data = false});
  size_t external = 0;
  for (const auto& init : header.graph().initializer()) external += init.data_location() == onnx::TensorProto::EXTERNAL;
  EXPECT_EQ(external, 9u);  // the 8 float weights and matmul_0's int8 one: every tensor over 1 KiB
}

// Full INT8 gives 41.9 dB and full BF16 about 50: the bisection lifts a few layers.
void LargeModel::explore() {
  std::vector<std::string> args = {"explore", path("large.onnx"), "--work-dir", path("explore"), "--search",
                                   "bisection", "--target-accuracy", "psnr>45", "--calibration-data"};
  for (const auto& f : files("calib_")) args.push_back(f);
  args.push_back("--data");
  for (const auto& f : files("eval_")) args.push_back(f);
  const CliResult r = run_cli(args);
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 3) << r.err;  // 3: the criterion missed, a verdict
  report("explore (bisection)", r, kExplorePeak);
  EXPECT_TRUE(fs::exists(path("explore/final.onnx")));
  EXPECT_TRUE(fs::exists(path("explore/summary.json")));
  std::printf("[large] explore: %s", r.out.c_str());
}

}  // namespace
}  // namespace mixprec
