// End-to-end on the real PP-OCR models (fetched by scripts/setup.sh): analysis task types,
// reproducible baseline runs, and the outputs file of `mixprec run`.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "mixprec/analysis.h"
#include "mixprec/model_io.h"
#include "mixprec/npy.h"
#include "mixprec/run.h"
#include "mixprec/runtime.h"
#include "support/cli_runner.h"

namespace mixprec {
namespace {

namespace fs = std::filesystem;

std::string model_path(const std::string& name) { return std::string(MIXPREC_MODELS_DIR) + "/" + name; }

ModelAnalysis analyze_file(const std::string& name) {
  const std::string path = model_path(name);
  return analyze_model(load_model(path), path);
}

TEST(RealModelAnalysis, DirectionClassifierIsClassification) {
  const ModelAnalysis a = analyze_file("ppocr_cls.onnx");
  EXPECT_EQ(a.task.type, TaskType::kClassification) << a.task.reason;
  EXPECT_EQ(a.quantization.state, QuantState::kFloat);
  EXPECT_GT(a.coverage.compute_nodes, 0);
}

TEST(RealModelAnalysis, DetectorMapIsRegression) {
  const ModelAnalysis a = analyze_file("ppocr_det.onnx");
  EXPECT_EQ(a.task.type, TaskType::kRegression) << a.task.reason;
  EXPECT_EQ(a.quantization.state, QuantState::kFloat);
}

TEST(RealModelAnalysis, RecognizerIsPerTimeStepClassification) {
  const ModelAnalysis a = analyze_file("ppocr_rec.onnx");
  EXPECT_EQ(a.task.type, TaskType::kSequence) << a.task.reason;
  EXPECT_GT(a.op_histogram.size(), 5u);
}

struct RealModelCase {
  const char* file;
  const char* input_shape;  // pins the dynamic dims
};

class RealModelRun : public ::testing::TestWithParam<RealModelCase> {};

RunParams seeded_params(const RealModelCase& c) {
  RunParams params;
  params.setup.model_path = model_path(c.file);
  params.setup.evaluation.data.random_samples = 2;
  params.setup.evaluation.data.seed = 1234;
  params.setup.evaluation.data.input_shapes = parse_input_shapes({c.input_shape});
  params.min_timed_runs = 2;
  params.warmup_runs = 0;
  return params;
}

TEST_P(RealModelRun, SeededRunsAreBitIdenticalAndSavedOutputsReadBack) {
  const fs::path dir =
      fs::temp_directory_path() / ("mixprec_e2e_" + std::string(GetParam().file) + "_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  RunParams a = seeded_params(GetParam());
  a.save_outputs_path = (dir / "a.npz").string();
  RunParams b = seeded_params(GetParam());
  b.save_outputs_path = (dir / "b.npz").string();
  const RunReport ra = run_model(a);
  const RunReport rb = run_model(b);
  EXPECT_EQ(ra.samples, 2u);
  EXPECT_GT(ra.latency.min_ms, 0.0);
  EXPECT_LE(ra.latency.min_ms, ra.latency.median_ms);

  const NamedTensors saved_a = read_npz(a.save_outputs_path);
  const NamedTensors saved_b = read_npz(b.save_outputs_path);
  ASSERT_EQ(saved_a.size(), ra.outputs.size());
  EXPECT_EQ(saved_a, saved_b);  // same seed → bit-identical outputs

  // The saved arrays are exactly what the runtime produces for those samples.
  Session session = Session::from_file(a.setup.model_path, a.deployment.session());
  auto source = open_samples(a.setup.evaluation, session.inputs(), a.setup.model_path);
  const NamedTensors first = session.run(source->sample(0));
  const NamedTensors second = session.run(source->sample(1));
  ASSERT_EQ(first.size(), saved_a.size());
  for (size_t o = 0; o < first.size(); ++o) {
    const Tensor& stacked = saved_a[o].second;
    const Tensor& one = first[o].second;
    EXPECT_EQ(saved_a[o].first, first[o].first);
    ASSERT_EQ(stacked.byte_size(), one.byte_size() + second[o].second.byte_size());
    EXPECT_TRUE(std::equal(one.data(), one.data() + one.byte_size(), stacked.data()));
    EXPECT_TRUE(std::equal(second[o].second.data(), second[o].second.data() + second[o].second.byte_size(),
                           stacked.data() + one.byte_size()));
  }
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(PpOcr, RealModelRun,
                         ::testing::Values(RealModelCase{"ppocr_cls.onnx", "x=1x3x48x192"},
                                           RealModelCase{"ppocr_det.onnx", "x=1x3x160x160"},
                                           RealModelCase{"ppocr_rec.onnx", "x=1x3x48x160"}),
                         [](const auto& test) { return fs::path(test.param.file).stem().string(); });

// The command line: exit codes and one-line errors naming the file.
TEST(RealModelCli, AnalyzeJsonNamesTheTaskType) {
  const CliResult r = run_cli({"analyze", model_path("ppocr_cls.onnx"), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"classification\""), std::string::npos) << r.out;
}

TEST(RealModelCli, RunWithoutShapeForDynamicInputIsBadInput) {
  const CliResult r = run_cli({"run", model_path("ppocr_det.onnx"), "--random", "1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("ppocr_det.onnx"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--input-shape"), std::string::npos) << r.err;
}

TEST(RealModelCli, MissingAndCorruptModelsAreBadInput) {
  const CliResult missing = run_cli({"analyze", "/nonexistent/model.onnx"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("/nonexistent/model.onnx"), std::string::npos);

  const fs::path corrupt = fs::temp_directory_path() / ("mixprec_corrupt_" + std::to_string(::getpid()) + ".onnx");
  {
    std::ifstream in(model_path("ppocr_cls.onnx"), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream(corrupt, std::ios::binary) << bytes.substr(0, bytes.size() / 3);
  }
  const CliResult truncated = run_cli({"analyze", corrupt.string()});
  EXPECT_EQ(truncated.exit_code, 2) << truncated.err;
  EXPECT_NE(truncated.err.find(corrupt.string()), std::string::npos) << truncated.err;
  EXPECT_EQ(std::count(truncated.err.begin(), truncated.err.end(), '\n'), 1) << truncated.err;
  fs::remove(corrupt);
}

TEST(RealModelCli, RunPrintsLatencyAndSavesOutputs) {
  const fs::path out = fs::temp_directory_path() / ("mixprec_cli_run_" + std::to_string(::getpid()) + ".npz");
  const CliResult r = run_cli({"run", model_path("ppocr_cls.onnx"), "--random", "3", "--seed", "5", "--input-shape",
                               "x=1x3x48x192", "--runs", "3", "--save-outputs", out.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("median"), std::string::npos) << r.out;
  const NamedTensors saved = read_npz(out.string());
  ASSERT_EQ(saved.size(), 1u);
  EXPECT_EQ(saved[0].second.shape(), (Shape{3, 2}));  // 3 samples of [1, 2] stacked on axis 0
  fs::remove(out);
}

}  // namespace
}  // namespace mixprec
