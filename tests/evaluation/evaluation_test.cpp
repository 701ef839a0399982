// The evaluation core's rules: which data calibration and evaluation use, the seeded subset
// calibration takes, statistics shared by every preset of a model, accuracy on CPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "evaluation/stats_cache.h"
#include "evaluation/workbench.h"
#include "mixprec/error.h"
#include "mixprec/evaluation.h"
#include "mixprec/jobs.h"
#include "mixprec/log.h"
#include "mixprec/model_io.h"
#include "mixprec/tensor_proto.h"
#include "support/explore_models.h"
#include "support/model_builder.h"
#include "support/temp_dir.h"

namespace mixprec {
namespace {
namespace fs = std::filesystem;
using onnx::TensorProto;
using testing::ModelBuilder;

bool any_contains(const std::vector<std::string>& warnings, const std::string& text) {
  return std::any_of(warnings.begin(), warnings.end(), [&](const std::string& w) { return w.find(text) != std::string::npos; });
}

TEST(SpreadSubset, OneIndexPerStratumSortedAndSeeded) {
  const std::vector<size_t> a = spread_subset(250, 100, 7);
  ASSERT_EQ(a.size(), 100u);
  // Stratum k of 100 over 250 samples is [k*250/100, (k+1)*250/100): index k lies in it.
  for (size_t k = 0; k < a.size(); ++k) {
    EXPECT_GE(a[k], k * 250 / 100) << k;
    EXPECT_LT(a[k], (k + 1) * 250 / 100) << k;
  }
  EXPECT_TRUE(std::is_sorted(a.begin(), a.end()));
  EXPECT_EQ(std::set<size_t>(a.begin(), a.end()).size(), 100u);  // no sample twice
  EXPECT_EQ(spread_subset(250, 100, 7), a);                       // the same seed, the same subset
  EXPECT_NE(spread_subset(250, 100, 8), a);
  EXPECT_GT(a.back(), 200u);  // the tail of the set is used, not only the first 100 files
  EXPECT_EQ(spread_subset(3, 10, 1), (std::vector<size_t>{0, 1, 2}));  // fewer samples than asked: all
  EXPECT_EQ(spread_subset(5, 5, 1), (std::vector<size_t>{0, 1, 2, 3, 4}));
}

TEST(CalibrationData, OneRuleForEveryCommand) {
  EvaluationSetup setup;
  setup.model_path = "m.onnx";
  setup.calibration.data.files = {"calib"};
  setup.evaluation.data.files = {"eval"};
  {
    WarningCollector warnings;
    EXPECT_EQ(calibration_data(setup, 100).data.files, std::vector<std::string>{"calib"});
    EXPECT_EQ(evaluation_data(setup).data.files, std::vector<std::string>{"eval"});
    EXPECT_TRUE(warnings.warnings().empty());
  }
  setup.calibration.data.files.clear();
  {
    WarningCollector warnings;
    EXPECT_EQ(calibration_data(setup, 100).data.files, std::vector<std::string>{"eval"});
    EXPECT_TRUE(any_contains(warnings.warnings(), "calibrating on the evaluation samples, which flatters INT8"));
  }
  setup.evaluation.data.files.clear();
  setup.evaluation.data.random_samples = 32;
  {
    WarningCollector warnings;
    const DataSpec random = calibration_data(setup, 64);
    EXPECT_TRUE(random.data.files.empty());
    EXPECT_EQ(random.data.random_samples, 64u);
    EXPECT_TRUE(any_contains(warnings.warnings(), "ranges from random data can mislead"));
  }
  setup.evaluation.data.random_samples = 0;
  setup.calibration.data.files = {"calib"};
  {
    WarningCollector warnings;
    EXPECT_EQ(evaluation_data(setup).data.files, std::vector<std::string>{"calib"});
    EXPECT_TRUE(any_contains(warnings.warnings(), "evaluating on the calibration data"));
  }
  setup.calibration.data.files.clear();
  EXPECT_THROW(evaluation_data(setup), Error);
}

TEST(AccuracySession, IsCpuWhateverTheDeploymentProvider) {
  DeploymentTarget deployment;
  deployment.provider = "CUDA";
  deployment.provider_options = {{"device_id", "0"}};
  deployment.threads = 3;
  const SessionOptions accuracy = accuracy_session(deployment);
  EXPECT_EQ(accuracy.provider, "CPU");
  EXPECT_TRUE(accuracy.provider_options.empty());
  EXPECT_EQ(accuracy.intra_op_threads, 3);
  EXPECT_EQ(accuracy.optimization, GraphOptimization::kBasic);
  EXPECT_FALSE(deployment.on_cpu());
  EXPECT_EQ(deployment.session().provider, "CUDA");
  EXPECT_EQ(deployment.session().optimization, GraphOptimization::kAll);
}

class CalibrationTest : public testing::TempDirTest {};

TEST_F(CalibrationTest, NumCalibSamplesTakesASpreadSubsetAndSaysSo) {
  const onnx::ModelProto model = testing::one_sensitive_layer_model();
  const Session probe = Session::from_model(model, "model");
  DataSpec spec;
  spec.data.random_samples = 12;
  spec.data.seed = 3;
  const auto source = open_samples(spec, probe.inputs(), "model");
  const CalibrationStats stats = calibrate_model(model, "model", *source, {.max_samples = 4, .seed = 5});
  EXPECT_EQ(stats.samples, 4u);
  EXPECT_NE(stats.data_description.find("4 of 12 random samples"), std::string::npos) << stats.data_description;
  EXPECT_NE(stats.data_description.find("seeded, evenly spread"), std::string::npos) << stats.data_description;
  // The input's range is the range over exactly the chosen samples.
  float lo = 1e30f, hi = -1e30f;
  for (size_t i : spread_subset(12, 4, 5)) {
    const NamedTensors sample = source->sample(i);
    for (float v : sample.front().second.as<float>()) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  }
  EXPECT_EQ(stats.tensors.at("x").min, lo);
  EXPECT_EQ(stats.tensors.at("x").max, hi);
}

// x [1, 2, 4, 4] -> Conv "conv" (2 channels, 3x3, pad 1) -> Mul by [1, 2, 1, 1] constants
// "scale" -> Add "shift" -> Relu -> Conv "head" -> y: the per-channel presets fold scale and
// shift into "conv" (FoldConvAffine), XINT8 does not.
onnx::ModelProto conv_affine_model() {
  return ModelBuilder()
      .add_input("x", TensorProto::FLOAT, {1, 2, 4, 4})
      .add_initializer("w", {2, 2, 3, 3}, testing::deterministic_values(36, 1))
      .add_initializer("b", {2}, {0.1f, -0.2f})
      .add_initializer("s", {1, 2, 1, 1}, {1.5f, -0.5f})
      .add_initializer("t", {1, 2, 1, 1}, {0.25f, 0.5f})
      .add_initializer("w2", {2, 2, 1, 1}, testing::deterministic_values(4, 2))
      .add_node("Conv", {"x", "w", "b"}, {"c"}, {testing::attr_ints("pads", {1, 1, 1, 1})}, "conv")
      .add_node("Mul", {"c", "s"}, {"m"}, {}, "scale")
      .add_node("Add", {"m", "t"}, {"a"}, {}, "shift")
      .add_node("Relu", {"a"}, {"r"}, {}, "relu")
      .add_node("Conv", {"r", "w2"}, {"y"}, {}, "head")
      .add_output("y", TensorProto::FLOAT, {1, 2, 4, 4})
      .build();
}

TEST_F(CalibrationTest, OneStatisticsFileServesEveryPresetOfAModel) {
  // The README's example: quantize --preset XINT8 --stats S, then --preset A16W8 --stats S.
  // A16W8 folds the Mul/Add into the Conv (another prepared graph) and still reads S.
  save_model(conv_affine_model(), path("model.onnx"));
  QuantizeParams xint8;
  xint8.setup.model_path = path("model.onnx");
  xint8.setup.calibration.data.random_samples = 8;
  xint8.setup.calibration.data.seed = 1;
  xint8.config.preset = "XINT8";
  xint8.output_path = path("xint8.onnx");
  xint8.stats_path = path("stats.json");
  const QuantizeReport first = quantize_job(xint8);
  EXPECT_TRUE(first.calibrated);
  EXPECT_EQ(first.prepare.folded_affines, 0u);

  QuantizeParams a16w8 = xint8;
  a16w8.config.preset = "A16W8";
  a16w8.output_path = path("a16w8.onnx");
  const QuantizeReport second = quantize_job(a16w8);
  EXPECT_TRUE(second.stats_reused);
  EXPECT_FALSE(second.calibrated);
  EXPECT_EQ(second.prepare.folded_affines, 2u);

  // The same model as A16W8 calibrated on its own: the shared statistics lose nothing.
  QuantizeParams fresh = a16w8;
  fresh.stats_path = path("fresh_stats.json");
  fresh.output_path = path("a16w8_fresh.onnx");
  const QuantizeReport own = quantize_job(fresh);
  EXPECT_TRUE(own.calibrated);
  EXPECT_EQ(read_file(path("stats.json"), "stats"), read_file(path("fresh_stats.json"), "stats"));
  EXPECT_EQ(read_file(path("a16w8.onnx"), "model"), read_file(path("a16w8_fresh.onnx"), "model"));

  // Another model's statistics are still refused.
  save_model(testing::one_sensitive_layer_model(), path("other.onnx"));
  QuantizeParams other = xint8;
  other.setup.model_path = path("other.onnx");
  other.output_path = path("other_q.onnx");
  try {
    quantize_job(other);
    FAIL() << "used another model's statistics";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("collected on another model"), std::string::npos) << e.what();
    EXPECT_FALSE(fs::exists(path("other_q.onnx")));
  }
}

TEST_F(CalibrationTest, UseExternalDataFormatPutsTheWeightsInADataFile) {
  // x [1, 64] -> MatMul (64 x 64 weights: 4 KiB of int8 codes) -> y.
  save_model(ModelBuilder()
                 .add_input("x", TensorProto::FLOAT, {1, 64})
                 .add_output("y", TensorProto::FLOAT, {1, 64})
                 .add_initializer("w", {64, 64}, testing::deterministic_values(64 * 64, 5))
                 .add_node("MatMul", {"x", "w"}, {"y"}, {}, "fc")
                 .build(),
             path("model.onnx"));
  QuantizeParams q;
  q.setup.model_path = path("model.onnx");
  q.setup.calibration.data.random_samples = 4;
  q.config.config = preset_config("XINT8");
  q.output_path = path("inline.onnx");
  quantize_job(q);
  q.config.config->use_external_data_format = true;  // Quark's option
  q.output_path = path("external.onnx");
  const QuantizeReport r = quantize_job(q);

  EXPECT_FALSE(fs::exists(path("inline.onnx.data")));
  ASSERT_TRUE(fs::exists(path("external.onnx.data")));
  EXPECT_GE(fs::file_size(path("external.onnx.data")), 64u * 64u);
  EXPECT_LT(fs::file_size(path("external.onnx")), fs::file_size(path("inline.onnx")));
  EXPECT_TRUE(load_config(r.config_path).use_external_data_format);
  // The same weights, read back from the data file.
  const onnx::ModelProto inline_model = load_model(path("inline.onnx")), external = load_model(path("external.onnx"));
  ASSERT_EQ(external.graph().initializer_size(), inline_model.graph().initializer_size());
  for (int i = 0; i < inline_model.graph().initializer_size(); ++i) {
    EXPECT_EQ(tensor_from_proto(external.graph().initializer(i), "external").to_floats(),
              tensor_from_proto(inline_model.graph().initializer(i), "inline").to_floats());
  }
}

TEST_F(CalibrationTest, QuantizeWithoutDataCalibratesOnSeededRandomDataWithAWarning) {
  save_model(conv_affine_model(), path("model.onnx"));
  QuantizeParams q;
  q.setup.model_path = path("model.onnx");
  q.config.preset = "XINT8";
  q.output_path = path("q.onnx");
  WarningCollector warnings;
  const QuantizeReport r = quantize_job(q);
  EXPECT_TRUE(r.calibrated);
  EXPECT_EQ(r.calibration_samples, 100u);  // the preset's NumCalibSamples
  EXPECT_TRUE(any_contains(warnings.warnings(), "ranges from random data can mislead"));
}

TEST_F(CalibrationTest, InjectedNoiseIsTheNodesOwnRoundingWhateverItDoesToUpstreamNoise) {
  // x [1, 64] >= 0 -> MatMul "a" (positive weights) -> h -> MatMul "b" (ones [64, 1], a sum)
  // -> y. The sum adds the 64 coherent signal values but mostly independent rounding errors, so
  // the noise-to-signal ratio at y is far below h's: "output minus worst input" scores "b"
  // negative although "b" rounds its own inputs and weights. The injected noise is its own.
  std::vector<float> wa = testing::deterministic_values(64 * 64, 3, 0.5f);
  for (float& v : wa) v = std::fabs(v) + 0.01f;
  save_model(ModelBuilder()
                 .add_input("x", TensorProto::FLOAT, {1, 64})
                 .add_output("y", TensorProto::FLOAT, {1, 1})
                 .add_initializer("wa", {64, 64}, wa)
                 .add_initializer("wb", {64, 1}, std::vector<float>(64, 1.0f))
                 .add_node("MatMul", {"x", "wa"}, {"h"}, {}, "a")
                 .add_node("MatMul", {"h", "wb"}, {"y"}, {}, "b")
                 .build(),
             path("model.onnx"));
  EvaluationSetup setup{.model_path = path("model.onnx"), .work_dir = path("work")};
  setup.calibration.data.random_samples = 8;
  setup.calibration.data.seed = 1;
  setup.evaluation.data.random_samples = 8;
  setup.evaluation.data.seed = 2;
  const QuantConfig xint8 = *preset_config("XINT8");
  Workbench bench(setup, DeploymentTarget{}, {.prepare = prepare_options(xint8)});
  const auto injected = bench.injected_noise(xint8, {"a", "b"});
  ASSERT_TRUE(injected.count("a") && injected.count("b"));
  EXPECT_GT(injected.at("b"), 0.0);
  const auto nsr = bench.tensor_noise(xint8, {"h", "y"});
  EXPECT_LT(nsr.at("y") - nsr.at("h"), 0.0);  // the older score's sign for "b"
  // Worked by hand for "b": run the quantized model, then b alone in float on its h.
  const onnx::ModelProto built = bench.build(xint8);
  const Session quantized = Session::from_model(expose_intermediates(built, {"h", "y"}, "q"), "q");
  const Session alone = Session::from_model(ModelBuilder()
                                                .add_input("h", TensorProto::FLOAT, {1, 64})
                                                .add_output("y", TensorProto::FLOAT, {1, 1})
                                                .add_initializer("wb", {64, 1}, std::vector<float>(64, 1.0f))
                                                .add_node("MatMul", {"h", "wb"}, {"y"}, {}, "b")
                                                .build(),
                                            "b alone");
  double noise = 0, signal = 0;
  for (size_t s = 0; s < bench.samples(); ++s) {
    const NamedTensors t = quantized.run(bench.sample(s), {"h", "y"});
    const float f = alone.run({{"h", t[0].second}}).front().second.as<float>()[0];
    const float q = t[1].second.as<float>()[0];
    noise += (static_cast<double>(q) - f) * (static_cast<double>(q) - f);
    signal += static_cast<double>(f) * f;
  }
  EXPECT_NEAR(injected.at("b"), noise / signal, 1e-9 * (noise / signal));
}

}  // namespace
}  // namespace mixprec
