// Calibration observes only what a quantization reads, through taps that leave the tensors
// inside ONNX Runtime: the taps see exactly what exposing the tensors fetches, the statistics
// do not depend on the thread counts or on which other tensors are observed, and a config that
// reads a tensor the statistics lack gets it collected, never quantized without a range.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <stdexcept>

#include "evaluation/exposure.h"
#include "evaluation/stats_cache.h"
#include "evaluation/workbench.h"
#include "mixprec/error.h"
#include "mixprec/evaluation.h"
#include "mixprec/model_io.h"
#include "mixprec/sample_source.h"
#include "mixprec/rewrite.h"
#include "mixprec/runtime.h"
#include "support/model_builder.h"
#include "support/temp_dir.h"

namespace mixprec {
namespace {

class Recorder : public TapSink {
 public:
  explicit Recorder(std::vector<std::string> names) : names_(std::move(names)) {}
  void observe(size_t tap, const TensorView& tensor) override {
    seen[names_.at(tap)] = Tensor(tensor.dtype, tensor.shape, {tensor.data, tensor.bytes});
  }
  std::map<std::string, Tensor> seen;

 private:
  std::vector<std::string> names_;
};

class Failing : public TapSink {
 public:
  void observe(size_t, const TensorView&) override { throw std::runtime_error("sink failed"); }
};

NamedTensors one_sample(const Session& session, uint64_t seed) {
  return make_random_source(session.inputs(), 1, seed)->sample(0);
}

TEST(TappedSession, SeesWhatExposingTheTensorsFetches) {
  const onnx::ModelProto model = prepare_model(testing::conv_chain(3), {}, "chain");
  const std::vector<std::string> names = {"input", "conv_0_out", "x_1", "conv_2_out", "output"};
  const Session exposed = Session::from_model(expose_intermediates(model, names, "chain"), "chain");
  Recorder recorder(names);
  const Session tapped = Session::tapped(model, "chain", names, recorder);
  EXPECT_EQ(tapped.outputs().size(), 1u);  // the taps are not the caller's outputs
  for (uint64_t seed : {1u, 2u}) {
    const NamedTensors sample = one_sample(exposed, seed);
    tapped.run_taps(sample);
    for (const auto& [name, tensor] : exposed.run(sample, names)) {
      ASSERT_TRUE(recorder.seen.count(name)) << name;
      EXPECT_EQ(recorder.seen.at(name), tensor) << name;
    }
  }
}

TEST(TappedSession, UnknownTensorsAndSinkFailuresAreErrors) {
  const onnx::ModelProto model = prepare_model(testing::conv_chain(2), {}, "chain");
  Recorder recorder({"nope"});
  EXPECT_THROW(Session::tapped(model, "chain", {"nope"}, recorder), Error);
  Failing failing;
  const Session tapped = Session::tapped(model, "chain", {"x_1"}, failing);
  EXPECT_THROW(
      {
        try {
          tapped.run_taps(one_sample(tapped, 3));
        } catch (const std::runtime_error& e) {
          EXPECT_STREQ(e.what(), "sink failed");
          throw;
        }
      },
      std::runtime_error);
}

// Statistics are bit-identical whatever the intra-op and binning thread counts, and a tensor's
// statistics do not depend on which other tensors are observed.
TEST(CalibrationTaps, StatisticsIndependentOfThreadsAndOfTheObservedSet) {
  const onnx::ModelProto model = prepare_model(testing::conv_chain(4), {}, "chain");
  const Session probe = Session::from_model(model, "chain");
  const auto source = make_random_source(probe.inputs(), 12, 5);
  const CalibrationStats every = calibrate_model(model, "chain", *source);
  const CalibrationStats serial = calibrate_model(
      model, "chain", *source, {.session = {.intra_op_threads = 1}, .binning_threads = 1});
  const CalibrationStats wide = calibrate_model(
      model, "chain", *source, {.session = {.intra_op_threads = 2}, .binning_threads = 5});
  EXPECT_EQ(serial, every);
  EXPECT_EQ(wide, every);
  EXPECT_EQ(every.tensors.size(), 9u);  // input, 4 Conv outputs, 4 Relu outputs
  const CalibrationStats some = calibrate_model(model, "chain", *source, {.tensors = {"x_2", "conv_3_out"}});
  ASSERT_EQ(some.tensors.size(), 2u);
  EXPECT_EQ(some.tensors.at("x_2"), every.tensors.at("x_2"));
  EXPECT_EQ(some.tensors.at("conv_3_out"), every.tensors.at("conv_3_out"));
  EXPECT_EQ(some.ranks.size(), 2u);
}

// conv_chain's Conv outputs are read only by their Relu: no preset quantizes a Relu, and the
// fused preset's output pair goes after the Relu, so the pre-activations stay internal.
TEST(CalibrationExposure, PresetsReadActivationInputsAndFusedOutputsNotPreActivations) {
  const onnx::ModelProto model = prepare_model(testing::conv_chain(3), {}, "chain");
  const std::set<std::string> xint8 = tensors_read(*preset_config("XINT8"), model, "chain");
  EXPECT_EQ(xint8, (std::set<std::string>{"input", "x_1", "x_2"}));
  const std::set<std::string> u8s8 = tensors_read(*preset_config("U8S8"), model, "chain");
  EXPECT_EQ(u8s8, (std::set<std::string>{"input", "x_1", "x_2", "output"}));
  EXPECT_TRUE(tensors_read(*preset_config("BF16"), model, "chain").empty());
  const Exposure exposure = calibration_exposure(model, nullptr, "chain");
  EXPECT_EQ(exposure.tensors, (std::vector<std::string>{"input", "output", "x_1", "x_2"}));
  EXPECT_TRUE(exposure.pre_activations.empty());

  // A config that quantizes Relu reads the Conv outputs: observed, and said to be pre-activations.
  QuantConfig relu = *preset_config("A8W8");
  relu.extra.op_types_to_quantize = {"Conv", "Relu"};
  const Exposure with_relu = calibration_exposure(model, &relu, "chain");
  EXPECT_EQ(with_relu.pre_activations, (std::vector<std::string>{"conv_0_out", "conv_1_out", "conv_2_out"}));
}

class StatsCacheTest : public testing::TempDirTest {};

void remove_tensor(const std::string& stats_path, const std::string& tensor) {
  CalibrationStats stats = load_stats(stats_path);
  stats.tensors.erase(tensor);
  stats.ranks.erase(tensor);
  save_stats(stats, stats_path);
}

// A stats file made for the presets lacks the Conv outputs a Relu-quantizing config reads: the
// workbench collects them on the same data (rewriting the file) and the result is the model
// quantized from statistics of every tensor.
TEST_F(StatsCacheTest, ConfigReadingUnobservedTensorsGetsThemCollected) {
  const std::string path = this->path("chain.onnx");
  save_model(testing::conv_chain(3), path);
  std::filesystem::create_directories(this->path("work"));
  EvaluationSetup setup{.model_path = path, .work_dir = this->path("work")};
  setup.calibration.data.random_samples = 8;
  setup.calibration.data.seed = 4;
  setup.evaluation.data.random_samples = 4;
  setup.evaluation.data.seed = 9;
  QuantConfig relu = *preset_config("A8W8");
  relu.extra.op_types_to_quantize = {"Conv", "Relu"};
  Workbench bench(setup, {});
  EXPECT_FALSE(bench.stats().tensors.count("conv_1_out"));
  EXPECT_THROW(quantize_model(bench.prepared(), assign_layers(relu, bench.prepared(), path), bench.stats(),
                              quantize_options(relu), path),
               Error);  // never quantized without a range
  const onnx::ModelProto built = bench.build(relu);
  EXPECT_TRUE(bench.stats().tensors.count("conv_1_out"));
  EXPECT_TRUE(load_stats(this->path("work/stats.json")).tensors.count("conv_1_out"));

  const Session probe = Session::from_model(bench.prepared(), path);
  const DataSpec data = calibration_data(setup, 8);
  const CalibrationStats every = calibrate_model(bench.prepared(), path, *open_samples(data, probe.inputs(), path));
  EXPECT_EQ(bench.stats().tensors.at("conv_1_out"), every.tensors.at("conv_1_out"));
  const onnx::ModelProto expected = quantize_model(bench.prepared(), assign_layers(relu, bench.prepared(), path), every,
                                                   quantize_options(relu), path);
  EXPECT_EQ(serialize_model(built, path), serialize_model(expected, path));

  // Statistics of other data cannot be completed: a clear error naming the file.
  EvaluationSetup other = setup;
  other.calibration.data.seed = 5;
  remove_tensor(this->path("work/stats.json"), "conv_2_out");
  Workbench reused(other, {});
  try {
    reused.build(relu);
    FAIL() << "completed statistics of other data";
  } catch (const Error& e) {
    EXPECT_EQ(e.file(), this->path("work/stats.json"));
    EXPECT_NE(e.message().find("other data"), std::string::npos) << e.message();
  }
}

}  // namespace
}  // namespace mixprec
