#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <optional>
#include <string>

#include "ir/node_builder.h"
#include "mixprec/algorithms.h"
#include "mixprec/tensor_proto.h"
#include "support/model_builder.h"

namespace mixprec {
namespace {

using onnx::TensorProto;
using testing::ModelBuilder;

// The samples a test states, one per call.
class FixedSamples : public SampleSource {
 public:
  explicit FixedSamples(std::vector<std::vector<float>> samples, Shape shape = {1, 1, 2, 2})
      : samples_(std::move(samples)), shape_(std::move(shape)) {}
  size_t size() const override { return samples_.size(); }
  NamedTensors sample(size_t index) const override { return {{"x", Tensor::from_floats(shape_, samples_.at(index))}}; }
  std::string describe() const override { return std::to_string(samples_.size()) + " fixed samples"; }

 private:
  std::vector<std::vector<float>> samples_;
  Shape shape_;
};

// x [1, 1, 2, 2] -> Conv "conv" (1x1, W = `weight`, b = `bias`) -> y.
onnx::ModelProto float_model(float bias, float weight = 1.0f) {
  return ModelBuilder()
      .add_input("x", TensorProto::FLOAT, {1, 1, 2, 2})
      .add_initializer("w", {1, 1, 1, 1}, {weight})
      .add_initializer("b", {1}, {bias})
      .add_node("Conv", {"x", "w", "b"}, {"y"}, {}, "conv")
      .add_output("y", TensorProto::FLOAT, {1, 1, 2, 2})
      .build();
}

// The same Conv with its input through int8 Q/DQ at scale 1 (integers pass exactly) and its
// weight stored as int8 `code` at scale 0.25: the quantized weight is code / 4 instead of 1.
onnx::ModelProto quantized_model(int8_t code, float bias) {
  return ModelBuilder()
      .add_input("x", TensorProto::FLOAT, {1, 1, 2, 2})
      .add_initializer("x_scale", {}, {1.0f})
      .add_initializer_i8("x_zero", {}, {0})
      .add_initializer_i8("w_q", {1, 1, 1, 1}, {code})
      .add_initializer("w_scale", {}, {0.25f})
      .add_initializer("b", {1}, {bias})
      .add_node("QuantizeLinear", {"x", "x_scale", "x_zero"}, {"xq"}, {}, "conv/input_q")
      .add_node("DequantizeLinear", {"xq", "x_scale", "x_zero"}, {"xd"}, {}, "conv/input_dq")
      .add_node("DequantizeLinear", {"w_q", "w_scale"}, {"wd"}, {}, "conv/weight_dq")
      .add_node("Conv", {"xd", "wd", "b"}, {"y"}, {}, "conv")
      .add_output("y", TensorProto::FLOAT, {1, 1, 2, 2})
      .build();
}

float bias_of(const onnx::ModelProto& model, const std::string& name = "b") {
  for (const auto& init : model.graph().initializer()) {
    if (init.name() == name) return tensor_from_proto(init, "test").to_floats().at(0);
  }
  return -1000;
}

// The rewrite of float_model(b) into quantized_model(code, b), reading the current bias.
RewriteFn rewrite_with_code(int8_t code) {
  return [code](const onnx::ModelProto& prepared) { return quantized_model(code, bias_of(prepared)); };
}

// x -> Conv "conv1" (W = 1, b1) -> h -> Conv "conv2" (W = 1, b2) -> y.
onnx::ModelProto two_layers(float b1, float b2) {
  return ModelBuilder()
      .add_input("x", TensorProto::FLOAT, {1, 1, 2, 2})
      .add_initializer("w1", {1, 1, 1, 1}, {1.0f})
      .add_initializer("b1", {1}, {b1})
      .add_initializer("w2", {1, 1, 1, 1}, {1.0f})
      .add_initializer("b2", {1}, {b2})
      .add_node("Conv", {"x", "w1", "b1"}, {"h"}, {}, "conv1")
      .add_node("Conv", {"h", "w2", "b2"}, {"y"}, {}, "conv2")
      .add_output("y", TensorProto::FLOAT, {1, 1, 2, 2})
      .build();
}

// Both weights through DequantizeLinear: conv1's as code 5 at scale 0.25 (1.25), conv2's as
// code 4 (exactly 1); the biases are the prepared model's.
onnx::ModelProto two_layers_quantized_with(const onnx::ModelProto& prepared, int8_t code2) {
  return ModelBuilder()
      .add_input("x", TensorProto::FLOAT, {1, 1, 2, 2})
      .add_initializer_i8("w1_q", {1, 1, 1, 1}, {5})
      .add_initializer_i8("w2_q", {1, 1, 1, 1}, {code2})
      .add_initializer("w_scale", {}, {0.25f})
      .add_initializer("b1", {1}, {bias_of(prepared, "b1")})
      .add_initializer("b2", {1}, {bias_of(prepared, "b2")})
      .add_node("DequantizeLinear", {"w1_q", "w_scale"}, {"w1d"}, {}, "conv1/weight_dq")
      .add_node("DequantizeLinear", {"w2_q", "w_scale"}, {"w2d"}, {}, "conv2/weight_dq")
      .add_node("Conv", {"x", "w1d", "b1"}, {"h"}, {}, "conv1")
      .add_node("Conv", {"h", "w2d", "b2"}, {"y"}, {}, "conv2")
      .add_output("y", TensorProto::FLOAT, {1, 1, 2, 2})
      .build();
}
onnx::ModelProto two_layers_quantized(const onnx::ModelProto& prepared) { return two_layers_quantized_with(prepared, 4); }

// A store in a map, counting what it was asked.
class MapStore : public LearnedWeightStore {
 public:
  std::optional<LearnedLayer> find(const std::string& key) override {
    const auto it = layers_.find(key);
    return it == layers_.end() ? std::nullopt : std::optional<LearnedLayer>(it->second);
  }
  void store(const std::string& key, const LearnedLayer& layer) override { layers_[key] = layer; }
  size_t size() const { return layers_.size(); }

 private:
  std::map<std::string, LearnedLayer> layers_;
};

TEST(AlgorithmsBiasCorrection, HandWorkedShift) {
  // Quantized weight 1.25 (code 5): y - y' = -0.25 x. Samples x = [1, 2, 3, 6] and
  // [-1, 0, 1, 4]: mean x = (12 + 4) / 8 = 2, so the mean shift is -0.25 * 2 = -0.5. The float
  // output's spread (std of x over the 8 values, sqrt(68 / 8 - 4) = 2.12) is above it: applied in full.
  // A single layer: both modes measure the same shift.
  for (const BiasCorrectionMode mode : {BiasCorrectionMode::kModel, BiasCorrectionMode::kLayer}) {
    SCOPED_TRACE(bias_correction_mode_names().name(mode));
    onnx::ModelProto prepared = float_model(0.0f);
    const FixedSamples samples({{1, 2, 3, 6}, {-1, 0, 1, 4}});
    const BiasCorrectionSummary summary = correct_bias(prepared, rewrite_with_code(5), samples, {.mode = mode}, "test");
    EXPECT_EQ(summary.layers, 1u);
    EXPECT_EQ(summary.samples, 2u);
    EXPECT_EQ(summary.damped_channels, 0u);
    EXPECT_DOUBLE_EQ(summary.mean_abs_shift, 0.5);
    EXPECT_FLOAT_EQ(bias_of(prepared), -0.5f);
  }
}

// The float Conv with its bias stored as int8 codes at scale 1 (a coarse bias grid, as XINT8's
// int8 bias can be), the weight exact (code 4 at 0.25), the input as in quantized_model.
onnx::ModelProto coarse_bias_model(float bias) {
  return ModelBuilder()
      .add_input("x", TensorProto::FLOAT, {1, 1, 2, 2})
      .add_initializer("x_scale", {}, {1.0f})
      .add_initializer_i8("x_zero", {}, {0})
      .add_initializer_i8("w_q", {1, 1, 1, 1}, {4})
      .add_initializer("w_scale", {}, {0.25f})
      .add_initializer_i8("b_q", {1}, {static_cast<int8_t>(std::nearbyint(bias))})
      .add_initializer("b_scale", {}, {1.0f})
      .add_node("QuantizeLinear", {"x", "x_scale", "x_zero"}, {"xq"}, {}, "conv/input_q")
      .add_node("DequantizeLinear", {"xq", "x_scale", "x_zero"}, {"xd"}, {}, "conv/input_dq")
      .add_node("DequantizeLinear", {"w_q", "w_scale"}, {"wd"}, {}, "conv/weight_dq")
      .add_node("DequantizeLinear", {"b_q", "b_scale"}, {"bd"}, {}, "conv/bias_dq")
      .add_node("Conv", {"xd", "wd", "bd"}, {"y"}, {}, "conv")
      .add_output("y", TensorProto::FLOAT, {1, 1, 2, 2})
      .build();
}

TEST(AlgorithmsBiasCorrection, TheShiftIsAddedToTheBiasAsStored) {
  // b = 0.3 is stored as code 0: the measured shift is 0.3, which is b's own rounding error.
  // Added to the stored bias (0) it gives 0.3, which the grid rounds to 0 again: off by 0.3, the
  // nearest the grid has. Added to the float bias it would give 0.6, rounded to 1: off by 0.7.
  for (const BiasCorrectionMode mode : {BiasCorrectionMode::kModel, BiasCorrectionMode::kLayer}) {
    SCOPED_TRACE(bias_correction_mode_names().name(mode));
    onnx::ModelProto prepared = float_model(0.3f);
    const FixedSamples samples({{1, 2, 3, 6}, {-1, 0, 1, 4}});
    const RewriteFn rewrite = [](const onnx::ModelProto& p) { return coarse_bias_model(bias_of(p)); };
    const BiasCorrectionSummary summary = correct_bias(prepared, rewrite, samples, {.mode = mode}, "test");
    EXPECT_EQ(summary.layers, 1u);
    EXPECT_NEAR(summary.mean_abs_shift, 0.3, 1e-6);
    EXPECT_FLOAT_EQ(bias_of(prepared), 0.3f);
  }
}

TEST(AlgorithmsBiasCorrection, TheWholeModelModeAimsAtTheReferenceModel) {
  // After AdaRound the prepared weight is its learned on-grid value 1.25 (code 5); the float
  // model's is 1. Against the prepared model the quantized one has no shift (both give 1.25 x);
  // against the reference it is -0.25 * mean x = -0.5, as in HandWorkedShift.
  const FixedSamples samples({{1, 2, 3, 6}, {-1, 0, 1, 4}});
  const onnx::ModelProto reference = float_model(0.0f);
  onnx::ModelProto learned = float_model(0.0f, 1.25f);
  correct_bias(learned, rewrite_with_code(5), samples, {.mode = BiasCorrectionMode::kModel, .reference = &reference}, "test");
  EXPECT_FLOAT_EQ(bias_of(learned), -0.5f);
  onnx::ModelProto alone = float_model(0.0f, 1.25f);
  correct_bias(alone, rewrite_with_code(5), samples, {.mode = BiasCorrectionMode::kModel}, "test");
  EXPECT_FLOAT_EQ(bias_of(alone), 0.0f);
  // The layer mode's twin keeps the learned weight: nothing to correct, reference or not.
  onnx::ModelProto layer = float_model(0.0f, 1.25f);
  correct_bias(layer, rewrite_with_code(5), samples, {.mode = BiasCorrectionMode::kLayer, .reference = &reference}, "test");
  EXPECT_FLOAT_EQ(bias_of(layer), 0.0f);
}

TEST(AlgorithmsBiasCorrection, LargeShiftIsDampedToTheChannelSpread) {
  // Quantized weight 3 (code 12): shift = -2 * mean x = -6 on the samples [1, 2, 3, 6] alone,
  // whose std is sqrt(50 / 4 - 9) = sqrt(3.5), above the bias 0.5: the correction stops there.
  onnx::ModelProto prepared = float_model(0.5f);
  const FixedSamples samples({{1, 2, 3, 6}});
  const BiasCorrectionSummary summary = correct_bias(prepared, rewrite_with_code(12), samples, {}, "test");
  EXPECT_EQ(summary.damped_channels, 1u);
  EXPECT_DOUBLE_EQ(summary.mean_abs_shift, 6.0);
  EXPECT_FLOAT_EQ(bias_of(prepared), 0.5f - std::sqrt(3.5f));
}

TEST(AlgorithmsBiasCorrection, DownstreamIsMeasuredAfterTheUpstreamCorrection) {
  // conv1 shifts by -0.25 * mean x = -0.5 and is corrected first (level 0); conv2 (exact
  // weight) then sees conv1's corrected output, whose mean matches the float one: its shift is
  // 0, not conv1's -0.5 again.
  onnx::ModelProto prepared = two_layers(0.0f, 0.0f);
  const FixedSamples samples({{1, 2, 3, 6}, {-1, 0, 1, 4}});
  const BiasCorrectionSummary summary =
      correct_bias(prepared, two_layers_quantized, samples, {.mode = BiasCorrectionMode::kModel}, "test");
  EXPECT_EQ(summary.layers, 2u);
  EXPECT_EQ(summary.levels, 2u);
  EXPECT_FLOAT_EQ(bias_of(prepared, "b1"), -0.5f);
  EXPECT_FLOAT_EQ(bias_of(prepared, "b2"), 0.0f);
  // Layer by layer: conv2 against its float twin on the same input also has no shift of its own.
  onnx::ModelProto alone = two_layers(0.0f, 0.0f);
  EXPECT_EQ(correct_bias(alone, two_layers_quantized, samples, {.mode = BiasCorrectionMode::kLayer}, "test").levels, 1u);
  EXPECT_FLOAT_EQ(bias_of(alone, "b1"), -0.5f);
  EXPECT_FLOAT_EQ(bias_of(alone, "b2"), 0.0f);
}

// The whole-model mode keeps each layer's shift by the digests of its quantized and float
// output: a second run takes both from the store without a pass; changing conv2's weight codes
// measures conv2 again (its quantized output changed), not conv1 (whose output did not).
TEST(AlgorithmsBiasCorrection, TheStoreMeasuresAgainOnlyTheLayersWhoseQuantizedOutputChanged) {
  const FixedSamples samples({{1, 2, 3, 6}, {-1, 0, 1, 4}});
  MapStore store;
  const BiasCorrectionOptions options{.mode = BiasCorrectionMode::kModel, .store = &store, .data = "two fixed samples"};
  onnx::ModelProto first = two_layers(0.0f, 0.0f);
  const BiasCorrectionSummary measured = correct_bias(first, two_layers_quantized, samples, options, "test");
  EXPECT_EQ(measured.reused, 0u);
  EXPECT_EQ(measured.passes, 3u);  // the float reference, then one per level
  EXPECT_EQ(store.size(), 2u);

  onnx::ModelProto again = two_layers(0.0f, 0.0f);
  const BiasCorrectionSummary reused = correct_bias(again, two_layers_quantized, samples, options, "test");
  EXPECT_EQ(reused.layers, 2u);
  EXPECT_EQ(reused.reused, 2u);
  EXPECT_EQ(reused.passes, 0u);
  EXPECT_EQ(bias_of(again, "b1"), bias_of(first, "b1"));  // bit for bit
  EXPECT_EQ(bias_of(again, "b2"), bias_of(first, "b2"));

  // conv2 stored as code 5 (1.25): its input's mean is the float mean 2 after conv1's
  // correction, so its shift is -0.25 * 2 = -0.5 (spread 2.12: not damped).
  const RewriteFn coarser = [](const onnx::ModelProto& prepared) { return two_layers_quantized_with(prepared, 5); };
  onnx::ModelProto changed = two_layers(0.0f, 0.0f);
  const BiasCorrectionSummary partly = correct_bias(changed, coarser, samples, options, "test");
  EXPECT_EQ(partly.reused, 1u);
  EXPECT_EQ(partly.passes, 2u);  // the reference, then conv2's level
  EXPECT_FLOAT_EQ(bias_of(changed, "b1"), -0.5f);
  EXPECT_FLOAT_EQ(bias_of(changed, "b2"), -0.5f);

  // Other data: nothing is reused.
  onnx::ModelProto other = two_layers(0.0f, 0.0f);
  BiasCorrectionOptions other_data = options;
  other_data.data = "other samples";
  EXPECT_EQ(correct_bias(other, two_layers_quantized, samples, other_data, "test").reused, 0u);
}

// x [1, 2, 1, 2] -> ConvTranspose "deconv" (W [2, 1, 1, 1] = 1, group 2: output channel o
// reads input channel o) -> y [1, 2, 1, 2]; with `codes` the weights are stored as int8 codes
// at scale 0.25 and the biases are the prepared model's.
onnx::ModelProto grouped_deconv(const std::optional<std::vector<int8_t>>& codes, const std::vector<float>& bias) {
  ModelBuilder b;
  b.add_input("x", TensorProto::FLOAT, {1, 2, 1, 2}).add_initializer("b", {2}, bias);
  std::string weight = "w";
  if (codes) {
    b.add_initializer_i8("w_q", {2, 1, 1, 1}, *codes)
        .add_initializer("w_scale", {}, {0.25f})
        .add_node("DequantizeLinear", {"w_q", "w_scale"}, {"wd"}, {}, "deconv/weight_dq");
    weight = "wd";
  } else {
    b.add_initializer("w", {2, 1, 1, 1}, {1.0f, 1.0f});
  }
  return b.add_node("ConvTranspose", {"x", weight, "b"}, {"y"}, {ir::make_int_attribute("group", 2)}, "deconv")
      .add_output("y", TensorProto::FLOAT, {1, 2, 1, 2})
      .build();
}

std::vector<float> biases_of(const onnx::ModelProto& model) {
  for (const auto& init : model.graph().initializer()) {
    if (init.name() == "b") return tensor_from_proto(init, "test").to_floats();
  }
  return {};
}

TEST(AlgorithmsBiasCorrection, GroupedConvTransposeShiftsEachOutputChannel) {
  // Codes 5 and 3 (1.25 and 0.75 against 1). The sample x = channel 0 (1, 3), channel 1 (2, 6):
  // channel 0's shift is -0.25 * mean 2 = -0.5, channel 1's +0.25 * mean 4 = +1; the float
  // outputs' spreads (1 and 2) are not below them: applied in full. Two output channels, as
  // W's dims[1] (1) x group (2) says.
  for (const BiasCorrectionMode mode : {BiasCorrectionMode::kModel, BiasCorrectionMode::kLayer}) {
    SCOPED_TRACE(bias_correction_mode_names().name(mode));
    onnx::ModelProto prepared = grouped_deconv(std::nullopt, {0.0f, 0.0f});
    const FixedSamples samples({{1, 3, 2, 6}}, {1, 2, 1, 2});
    const RewriteFn rewrite = [](const onnx::ModelProto& p) { return grouped_deconv(std::vector<int8_t>{5, 3}, biases_of(p)); };
    const BiasCorrectionSummary summary = correct_bias(prepared, rewrite, samples, {.mode = mode}, "test");
    EXPECT_EQ(summary.layers, 1u);
    EXPECT_EQ(summary.damped_channels, 0u);
    EXPECT_DOUBLE_EQ(summary.mean_abs_shift, 0.75);
    const std::vector<float> b = biases_of(prepared);
    ASSERT_EQ(b.size(), 2u);
    EXPECT_FLOAT_EQ(b[0], -0.5f);
    EXPECT_FLOAT_EQ(b[1], 1.0f);
  }
}

TEST(AlgorithmsBiasCorrection, NothingQuantizedIsANote) {
  onnx::ModelProto prepared = float_model(0.0f);
  const FixedSamples samples({{1, 2, 3, 6}});
  const RewriteFn nothing = [](const onnx::ModelProto& model) { return model; };
  const BiasCorrectionSummary summary = correct_bias(prepared, nothing, samples, {}, "test");
  EXPECT_EQ(summary.layers, 0u);
  ASSERT_EQ(summary.notes.size(), 1u);
  EXPECT_FLOAT_EQ(bias_of(prepared), 0.0f);
}

}  // namespace
}  // namespace mixprec
