// AdaRound and AdaQuant on tiny models built in code. The rewrite is mixprec's own
// (quantize_model) with weight-only int8 specs, so a layer's input X is the float input itself
// and the loss of any codes can be computed here by hand (Gemm) or by ONNX Runtime running the
// rewritten model (Conv): both independent of the code under test.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>

#include "algorithms/layer_reconstruction.h"
#include "common/text.h"
#include "evaluation/recovery.h"
#include "ir/node_builder.h"
#include "mixprec/algorithms.h"
#include "mixprec/rewrite.h"
#include "mixprec/runtime.h"
#include "mixprec/tensor_proto.h"
#include "support/model_builder.h"

namespace mixprec {
namespace {

using onnx::TensorProto;
using testing::ModelBuilder;

constexpr const char* kLabel = "test";

std::vector<float> normal_values(size_t count, uint64_t seed, float spread = 1.0f) {
  std::mt19937_64 random(seed);
  std::normal_distribution<float> normal(0.0f, spread);
  std::vector<float> out(count);
  for (float& v : out) v = normal(random);
  return out;
}

// Seeded normal samples of one input.
class NormalSamples : public SampleSource {
 public:
  NormalSamples(std::string name, Shape shape, size_t count) : name_(std::move(name)), shape_(std::move(shape)), count_(count) {}
  size_t size() const override { return count_; }
  NamedTensors sample(size_t index) const override {
    // Correlated inputs (a shared component) make the rounding choice matter: with white X
    // every weight's error counts alone and nearest rounding is already optimal.
    const auto n = static_cast<size_t>(shape_numel(shape_));
    std::vector<float> values = normal_values(n, 100 + index);
    const std::vector<float> shared = normal_values(n / static_cast<size_t>(shape_.back()), 500 + index);
    for (size_t i = 0; i < n; ++i) values[i] += 2.0f * shared[i / static_cast<size_t>(shape_.back())];
    return {{name_, Tensor::from_floats(shape_, values)}};
  }
  std::string describe() const override { return std::to_string(count_) + " normal samples"; }

 private:
  std::string name_;
  Shape shape_;
  size_t count_;
};

constexpr int64_t kRows = 16;  // Gemm: samples' rows
constexpr int64_t kIn = 12;
constexpr int64_t kOut = 6;

// x [16, 12] -> Gemm(x, W [6, 12], transB = 1, b) -> y [16, 6].
onnx::ModelProto gemm_model() {
  return ModelBuilder()
      .add_input("x", TensorProto::FLOAT, {kRows, kIn})
      .add_initializer("w", {kOut, kIn}, normal_values(kOut * kIn, 7, 0.3f))
      .add_initializer("b", {kOut}, normal_values(kOut, 8))
      .add_node("Gemm", {"x", "w", "b"}, {"y"}, {ir::make_int_attribute("transB", 1)}, "gemm")
      .add_output("y", TensorProto::FLOAT, {kRows, kOut})
      .build();
}

// x [1, 4, 7, 7] -> Conv(W [6, 2, 3, 3], group 2, stride 2, pads 1, dilation 1) -> y [1, 6, 4, 4].
onnx::ModelProto grouped_conv_model() {
  return ModelBuilder()
      .add_input("x", TensorProto::FLOAT, {1, 4, 7, 7})
      .add_initializer("w", {6, 2, 3, 3}, normal_values(6 * 2 * 9, 9, 0.3f))
      .add_node("Conv", {"x", "w"}, {"y"},
                {ir::make_int_attribute("group", 2), testing::attr_ints("strides", {2, 2}),
                 testing::attr_ints("pads", {1, 1, 1, 1})},
                "conv")
      .add_output("y", TensorProto::FLOAT, {1, 6, 4, 4})
      .build();
}

// Weight-only quantization with `spec`: the layer's input stays float.
std::vector<NodeAssignment> weight_only(const onnx::ModelProto& model, const TensorQuantSpec& spec) {
  QuantConfig config;
  config.global.weight = spec;
  return assign_layers(config, model, kLabel);
}

RewriteFn rewrite_for(const std::vector<NodeAssignment>& assignment) {
  return [&assignment](const onnx::ModelProto& prepared) {
    return quantize_model(prepared, assignment, {}, {}, kLabel);
  };
}

std::vector<float> initializer(const onnx::ModelProto& model, const std::string& name) {
  for (const auto& init : model.graph().initializer()) {
    if (init.name() == name) return tensor_from_proto(init, kLabel).to_floats();
  }
  ADD_FAILURE() << "no initializer " << name;
  return {};
}

// The codes the rewrite stores for `node`'s weight and their scales, read from the quantized
// model: DequantizeLinear(codes, scale[, zero point]) -> node input 1.
struct StoredCodes {
  std::vector<float> codes;
  std::vector<float> scale;
};
StoredCodes stored_codes(const onnx::ModelProto& quantized, const std::string& node_name) {
  std::string weight;
  for (const auto& n : quantized.graph().node()) {
    if (n.name() == node_name) weight = n.input(1);
  }
  for (const auto& n : quantized.graph().node()) {
    if (n.op_type() == "DequantizeLinear" && n.output(0) == weight) {
      return {initializer(quantized, n.input(0)), initializer(quantized, n.input(1))};
    }
  }
  ADD_FAILURE() << "no DequantizeLinear feeds " << node_name;
  return {};
}

// Sum over samples of ||y_quantized - y_float||^2, both run by ONNX Runtime: the
// reconstruction loss times the number of columns, computed without the code under test.
double output_error(const onnx::ModelProto& reference, const onnx::ModelProto& quantized, const SampleSource& samples) {
  const Session a = Session::from_model(reference, kLabel);
  const Session b = Session::from_model(quantized, kLabel);
  double total = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    const auto want = a.run(samples.sample(i)).at(0).second.to_floats();
    const auto got = b.run(samples.sample(i)).at(0).second.to_floats();
    for (size_t k = 0; k < want.size(); ++k) total += (got[k] - want[k]) * (got[k] - want[k]);
  }
  return total;
}

// By hand: sum over samples and rows of ||(Wq - W) x||^2 for the Gemm, Wq = s * codes.
double gemm_error_by_hand(const std::vector<float>& w, const std::vector<float>& codes, const std::vector<float>& scale,
                          const SampleSource& samples) {
  double total = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    const auto x = samples.sample(i).at(0).second.to_floats();
    for (int64_t m = 0; m < kRows; ++m) {
      for (int64_t n = 0; n < kOut; ++n) {
        const float s = scale[scale.size() == 1 ? 0 : static_cast<size_t>(n)];
        double e = 0;
        for (int64_t k = 0; k < kIn; ++k) {
          const auto at = static_cast<size_t>(n * kIn + k);
          e += (s * codes[at] - w[at]) * x[static_cast<size_t>(m * kIn + k)];
        }
        total += e * e;
      }
    }
  }
  return total;
}

// Every code within one step of nearest rounding of the original weight on the same scales.
void expect_within_one_step(const std::vector<float>& w, const StoredCodes& learned, int64_t rows) {
  const size_t per_row = w.size() / static_cast<size_t>(rows);
  for (size_t i = 0; i < w.size(); ++i) {
    const float s = learned.scale[learned.scale.size() == 1 ? 0 : i / per_row];
    EXPECT_LE(std::fabs(learned.codes[i] - std::nearbyint(w[i] / s)), 1.0f) << "weight " << i;
  }
}

TEST(AlgorithmsAdaRound, GemmLossFallsBelowNearestAndCodesStayWithinOneStep) {
  const onnx::ModelProto model = gemm_model();
  onnx::ModelProto prepared = model;
  const NormalSamples samples("x", {kRows, kIn}, 8);
  const auto assignment = weight_only(prepared, {.format = FormatId::kXInt8});  // per tensor, 2^k
  const RewriteFn rewrite = rewrite_for(assignment);
  const onnx::ModelProto nearest = rewrite(prepared);
  const ReconstructionSummary summary = reconstruct_layers(
      prepared, rewrite, samples, default_reconstruction(ReconstructionMethod::kAdaRound), {.assignment = &assignment}, kLabel);
  ASSERT_EQ(summary.layers, 1u);
  ASSERT_EQ(summary.per_layer.size(), 1u);
  EXPECT_EQ(summary.per_layer[0].columns, 8u * kRows);
  EXPECT_GT(summary.per_layer[0].changed, 0u);

  const std::vector<float> w = initializer(model, "w");
  const onnx::ModelProto learned_model = rewrite(prepared);
  const StoredCodes before = stored_codes(nearest, "gemm");
  const StoredCodes after = stored_codes(learned_model, "gemm");
  EXPECT_EQ(after.scale, before.scale);  // the same grid
  expect_within_one_step(w, after, kOut);
  const double loss_nearest = gemm_error_by_hand(w, before.codes, before.scale, samples);
  const double loss_learned = gemm_error_by_hand(w, after.codes, after.scale, samples);
  EXPECT_LT(loss_learned, loss_nearest * 0.95) << loss_nearest << " -> " << loss_learned;
  // The summary's loss is the same quantity per column.
  EXPECT_NEAR(summary.per_layer[0].loss_learned, loss_learned / (8.0 * kRows), 1e-3 * loss_learned / (8.0 * kRows));
  // ONNX Runtime runs the result and agrees: the model's output error is the loss.
  EXPECT_NEAR(output_error(model, learned_model, samples), loss_learned, 1e-3 * loss_learned);
}

TEST(AlgorithmsAdaRound, WrittenBackWeightsRequantizeToTheLearnedCodes) {
  onnx::ModelProto prepared = gemm_model();
  const NormalSamples samples("x", {kRows, kIn}, 4);
  const auto assignment = weight_only(prepared, {.format = FormatId::kInt8, .per_channel = true});
  const RewriteFn rewrite = rewrite_for(assignment);
  ReconstructionSettings settings = default_reconstruction(ReconstructionMethod::kAdaRound);
  settings.iterations = 300;
  reconstruct_layers(prepared, rewrite, samples, settings, {.assignment = &assignment}, kLabel);
  // W' = s * q exactly, and the rewrite of W' stores q with the same per-channel scales.
  const std::vector<float> written = initializer(prepared, "w");
  const StoredCodes stored = stored_codes(rewrite(prepared), "gemm");
  ASSERT_EQ(stored.scale.size(), static_cast<size_t>(kOut));
  for (size_t i = 0; i < written.size(); ++i) {
    const float s = stored.scale[i / static_cast<size_t>(kIn)];
    EXPECT_EQ(written[i], stored.codes[i] * s) << i;
    EXPECT_LE(std::fabs(stored.codes[i]), 127.0f);  // never the -128 that would widen the range
  }
}

// AdaRound on `model`'s one layer with per-channel int8 weights only: the rewrite's models
// before (nearest rounding) and after learning, and the summary.
struct LearnedModels {
  onnx::ModelProto nearest;
  onnx::ModelProto learned;
  ReconstructionSummary summary;
};
LearnedModels learn_per_channel_int8(const onnx::ModelProto& model, const SampleSource& samples) {
  onnx::ModelProto prepared = model;
  const auto assignment = weight_only(prepared, {.format = FormatId::kInt8, .per_channel = true});
  const RewriteFn rewrite = rewrite_for(assignment);
  LearnedModels out;
  out.nearest = rewrite(prepared);
  out.summary = reconstruct_layers(prepared, rewrite, samples, default_reconstruction(ReconstructionMethod::kAdaRound),
                                   {.assignment = &assignment}, kLabel);
  out.learned = rewrite(prepared);
  return out;
}

// The loss the layer measured through its im2col, times the columns, is the output error ONNX
// Runtime shows, before and after learning; learning lowers it by 5 % at least.
void expect_loss_is_the_output_error(const onnx::ModelProto& model, const LearnedModels& layer,
                                     const SampleSource& samples, double columns) {
  const double loss_before = output_error(model, layer.nearest, samples);
  const double loss_after = output_error(model, layer.learned, samples);
  EXPECT_NEAR(layer.summary.per_layer[0].loss_nearest * columns, loss_before, 1e-3 * loss_before);
  EXPECT_NEAR(layer.summary.per_layer[0].loss_learned * columns, loss_after, 1e-3 * loss_after);
  EXPECT_LT(loss_after, loss_before * 0.95) << loss_before << " -> " << loss_after;
}

TEST(AlgorithmsAdaRound, GroupedConvLossFallsBelowNearest) {
  const onnx::ModelProto model = grouped_conv_model();
  onnx::ModelProto prepared = model;
  const NormalSamples samples("x", {1, 4, 7, 7}, 6);
  const auto assignment = weight_only(prepared, {.format = FormatId::kInt8, .per_channel = true});
  const RewriteFn rewrite = rewrite_for(assignment);
  const onnx::ModelProto nearest = rewrite(prepared);
  size_t progress_calls = 0;
  const ReconstructionSummary summary =
      reconstruct_layers(prepared, rewrite, samples, default_reconstruction(ReconstructionMethod::kAdaRound),
                         {.assignment = &assignment, .progress = [&](size_t done, size_t total) {
                            ++progress_calls;
                            EXPECT_EQ(total, 1u);
                            EXPECT_EQ(done, 1u);
                          }},
                         kLabel);
  ASSERT_EQ(summary.layers, 1u);
  EXPECT_EQ(progress_calls, 1u);
  EXPECT_EQ(summary.per_layer[0].columns, 6u * 16u);  // 4 x 4 output positions per sample
  const onnx::ModelProto learned_model = rewrite(prepared);
  const std::vector<float> w = initializer(model, "w");
  expect_within_one_step(w, stored_codes(learned_model, "conv"), 6);
  const double before = output_error(model, nearest, samples);
  const double after = output_error(model, learned_model, samples);
  EXPECT_LT(after, before * 0.95) << before << " -> " << after;
  // The loss the layer measured through its im2col is the one ONNX Runtime's Conv shows.
  EXPECT_NEAR(summary.per_layer[0].loss_nearest * 6 * 16, before, 1e-3 * before);
  EXPECT_NEAR(summary.per_layer[0].loss_learned * 6 * 16, after, 1e-3 * after);
}

// x [1, 4, 5, 5] -> ConvTranspose(W [4, 3, 3, 3], group 2, strides 2, pads (1, 0, 0, 1),
// output_padding (1, 0), dilations (1, 2)) -> y [1, 6, 11, 12]:
// H = 2 (5 - 1) + 1 + 3 - 1 - 0 = 11, W = 2 (5 - 1) + 0 + (2 (3 - 1) + 1) - 0 - 1 = 12.
onnx::ModelProto grouped_conv_transpose_model() {
  return ModelBuilder()
      .add_input("x", TensorProto::FLOAT, {1, 4, 5, 5})
      .add_initializer("w", {4, 3, 3, 3}, normal_values(4 * 3 * 9, 19, 0.3f))
      .add_node("ConvTranspose", {"x", "w"}, {"y"},
                {ir::make_int_attribute("group", 2), testing::attr_ints("strides", {2, 2}),
                 testing::attr_ints("pads", {1, 0, 0, 1}), testing::attr_ints("output_padding", {1, 0}),
                 testing::attr_ints("dilations", {1, 2})},
                "deconv")
      .add_output("y", TensorProto::FLOAT, {1, 6, 11, 12})
      .build();
}

TEST(AlgorithmsAdaRound, GroupedConvTransposeLossIsTheOutputErrorAndFallsBelowNearest) {
  const onnx::ModelProto model = grouped_conv_transpose_model();
  const NormalSamples samples("x", {1, 4, 5, 5}, 6);
  // Per channel along axis 1 (C_out / groups = 3 scales, shared by both groups).
  const LearnedModels layer = learn_per_channel_int8(model, samples);
  ASSERT_EQ(layer.summary.layers, 1u) << text::join(layer.summary.notes, "; ");
  constexpr double kColumns = 6.0 * 11 * 12;  // output positions per sample x samples
  EXPECT_EQ(layer.summary.per_layer[0].columns, static_cast<size_t>(kColumns));
  const StoredCodes before = stored_codes(layer.nearest, "deconv");
  const StoredCodes after = stored_codes(layer.learned, "deconv");
  ASSERT_EQ(after.scale.size(), 3u);
  EXPECT_EQ(after.scale, before.scale);
  const std::vector<float> w = initializer(model, "w");
  for (size_t i = 0; i < w.size(); ++i) {  // element [c, o, kh, kw] is on scale o
    const float s = after.scale[(i / 9) % 3];
    EXPECT_LE(std::fabs(after.codes[i] - std::nearbyint(w[i] / s)), 1.0f) << "weight " << i;
  }
  // The transposed im2col gathers each tap's input where the op scatters it.
  expect_loss_is_the_output_error(model, layer, samples, kColumns);
}

// x [1, 4, 5, 6, 7] -> Conv(W [6, 2, 3, 2, 3], group 2, strides (2, 1, 2), pads (1, 0, 1, 0, 1, 1),
// dilations (1, 2, 1)) -> y [1, 6, 2, 5, 4]: D = (5 + 1 - 3) / 2 + 1 = 2, H = (6 + 1 - 3) / 1 + 1 = 5,
// W = (7 + 2 - 3) / 2 + 1 = 4.
onnx::ModelProto grouped_conv3d_model() {
  return ModelBuilder()
      .add_input("x", TensorProto::FLOAT, {1, 4, 5, 6, 7})
      .add_initializer("w", {6, 2, 3, 2, 3}, normal_values(6 * 2 * 18, 29, 0.3f))
      .add_node("Conv", {"x", "w"}, {"y"},
                {ir::make_int_attribute("group", 2), testing::attr_ints("strides", {2, 1, 2}),
                 testing::attr_ints("pads", {1, 0, 1, 0, 1, 1}), testing::attr_ints("dilations", {1, 2, 1})},
                "conv3d")
      .add_output("y", TensorProto::FLOAT, {1, 6, 2, 5, 4})
      .build();
}

TEST(AlgorithmsAdaRound, Conv3dLossIsTheOutputErrorAndFallsBelowNearest) {
  const onnx::ModelProto model = grouped_conv3d_model();
  const NormalSamples samples("x", {1, 4, 5, 6, 7}, 6);
  const LearnedModels layer = learn_per_channel_int8(model, samples);
  ASSERT_EQ(layer.summary.layers, 1u) << text::join(layer.summary.notes, "; ");
  constexpr double kColumns = 6.0 * 2 * 5 * 4;  // output positions per sample x samples
  EXPECT_EQ(layer.summary.per_layer[0].columns, static_cast<size_t>(kColumns));
  expect_within_one_step(initializer(model, "w"), stored_codes(layer.learned, "conv3d"), 6);
  expect_loss_is_the_output_error(model, layer, samples, kColumns);  // through the 3-D im2col
}

TEST(AlgorithmsAdaRound, ConvTransposeWithOutputShapeIsSkippedWithANote) {
  onnx::ModelProto prepared = ModelBuilder()
                                  .add_input("x", TensorProto::FLOAT, {1, 2, 4, 4})
                                  .add_initializer("w", {2, 2, 2, 2}, normal_values(16, 23, 0.3f))
                                  .add_node("ConvTranspose", {"x", "w"}, {"y"},
                                            {testing::attr_ints("strides", {2, 2}),
                                             testing::attr_ints("output_shape", {8, 8})},
                                            "deconv")
                                  .add_output("y", TensorProto::FLOAT, {1, 2, 8, 8})
                                  .build();
  const onnx::ModelProto before = prepared;
  const NormalSamples samples("x", {1, 2, 4, 4}, 2);
  const auto assignment = weight_only(prepared, {.format = FormatId::kInt8});
  const ReconstructionSummary summary =
      reconstruct_layers(prepared, rewrite_for(assignment), samples, default_reconstruction(ReconstructionMethod::kAdaRound),
                         {.assignment = &assignment}, kLabel);
  EXPECT_EQ(summary.layers, 0u);
  ASSERT_FALSE(summary.notes.empty());
  EXPECT_NE(text::join(summary.notes, "; ").find("deconv skipped (a ConvTranspose with output_shape"), std::string::npos)
      << text::join(summary.notes, "; ");
  EXPECT_EQ(prepared.SerializeAsString(), before.SerializeAsString());
}

TEST(AlgorithmsAdaQuant, LossDecreasesOnTheGemm) {
  const onnx::ModelProto model = gemm_model();
  onnx::ModelProto prepared = model;
  const NormalSamples samples("x", {kRows, kIn}, 8);
  const auto assignment = weight_only(prepared, {.format = FormatId::kXInt8});
  const RewriteFn rewrite = rewrite_for(assignment);
  const onnx::ModelProto nearest = rewrite(prepared);
  ReconstructionSettings settings = default_reconstruction(ReconstructionMethod::kAdaQuant);
  settings.learning_rate = 1e-3;  // weights ~0.3 on a 2^-8 grid: 1e-5 would need far more steps here
  settings.iterations = 500;
  const ReconstructionSummary summary =
      reconstruct_layers(prepared, rewrite, samples, settings, {.assignment = &assignment}, kLabel);
  ASSERT_EQ(summary.layers, 1u);
  const onnx::ModelProto learned_model = rewrite(prepared);
  const std::vector<float> w = initializer(model, "w");
  const StoredCodes before = stored_codes(nearest, "gemm");
  const StoredCodes after = stored_codes(learned_model, "gemm");
  EXPECT_EQ(after.scale, before.scale);
  const double loss_nearest = gemm_error_by_hand(w, before.codes, before.scale, samples);
  const double loss_learned = gemm_error_by_hand(w, after.codes, after.scale, samples);
  EXPECT_LT(loss_learned, loss_nearest * 0.95) << loss_nearest << " -> " << loss_learned;
  EXPECT_NEAR(output_error(model, learned_model, samples), loss_learned, 1e-3 * loss_learned);
}

// x [16, 12] -> Gemm "first" (W1 [12, 12]) -> h -> Gemm "second" (W2 [6, 12]) -> y.
onnx::ModelProto two_gemms() {
  return ModelBuilder()
      .add_input("x", TensorProto::FLOAT, {kRows, kIn})
      .add_initializer("w1", {kIn, kIn}, normal_values(kIn * kIn, 21, 0.3f))
      .add_initializer("w2", {kOut, kIn}, normal_values(kOut * kIn, 22, 0.3f))
      .add_node("Gemm", {"x", "w1"}, {"h"}, {ir::make_int_attribute("transB", 1)}, "first")
      .add_node("Gemm", {"h", "w2"}, {"y"}, {ir::make_int_attribute("transB", 1)}, "second")
      .add_output("y", TensorProto::FLOAT, {kRows, kOut})
      .build();
}

TEST(AlgorithmsAdaRound, FloatOutputTargetTakesBackTheUpstreamError) {
  const onnx::ModelProto model = two_gemms();
  const NormalSamples samples("x", {kRows, kIn}, 8);
  const auto assignment = weight_only(model, {.format = FormatId::kXInt8});
  const RewriteFn rewrite = rewrite_for(assignment);
  double error[2] = {0, 0};
  for (const ReconstructionTarget target : {ReconstructionTarget::kQuantizedInput, ReconstructionTarget::kFloatOutput}) {
    SCOPED_TRACE(reconstruction_target_names().name(target));
    onnx::ModelProto prepared = model;
    ReconstructionSettings settings = default_reconstruction(ReconstructionMethod::kAdaRound);
    settings.target = target;
    const ReconstructionSummary summary =
        reconstruct_layers(prepared, rewrite, samples, settings, {.assignment = &assignment}, kLabel);
    ASSERT_EQ(summary.layers, 2u);
    EXPECT_EQ(summary.levels, 2u);
    const double measured = output_error(model, rewrite(prepared), samples);
    error[static_cast<int>(target)] = measured;
    if (target == ReconstructionTarget::kFloatOutput) {
      // The second layer's loss is ||W2q h^ - W2 h||^2 per column: the model's own output error.
      EXPECT_NEAR(summary.per_layer[1].loss_learned * 8 * kRows, measured, 1e-3 * measured);
    }
  }
  EXPECT_LT(error[1], error[0]) << error[0] << " -> " << error[1];
}

// drop_ratio (QDrop) by hand: one column, quantized input x^ = (1, 2), float input x = (3, 5),
// W = (1, 1) at scale 1, codes (2, 1). Each input element is x^_i with chance q, else x_i; the
// loss is E[(2 m1 + m2 - W x)^2], W x = 8:
//   q = 1:   (2 + 2 - 8)^2 = 16          q = 0:   (6 + 5 - 8)^2 = 9
//   q = 1/2: the four draws (1,2) (1,5) (3,2) (3,5) give -4, -1, 0, 3: (16 + 1 + 0 + 9) / 4 = 6.5,
//            and the loss of W itself (m1 + m2 - 8: -5, -2, -3, 0) is (25 + 4 + 9 + 0) / 4 = 9.5.
TEST(AlgorithmsDropRatio, TheLossIsTheExpectationOverTheDraws) {
  const Eigen::Vector2d quantized(1, 2), floats(3, 5);
  const Eigen::MatrixXd gram = quantized * quantized.transpose();
  const Eigen::MatrixXd cross = quantized * floats.transpose();  // C_ij = x^_i x_j
  const Eigen::MatrixXd reference = floats * floats.transpose();
  algorithms::GroupProblem g;
  g.weight = algorithms::Matrix::Ones(1, 2);
  g.scale = algorithms::Column::Ones(1);
  g.zero_point = algorithms::Column::Zero(1);
  algorithms::Matrix codes(1, 2);
  codes << 2, 1;
  const std::pair<double, double> expected[] = {{1.0, 16.0}, {0.0, 9.0}, {0.5, 6.5}};
  for (const auto& [q, loss] : expected) {
    SCOPED_TRACE(q);
    algorithms::set_inputs(g, gram, cross, reference, q);
    EXPECT_NEAR(algorithms::reconstruction_loss(g, codes), loss, 1e-9);
  }
  algorithms::set_inputs(g, gram, cross, reference, 0.5);
  EXPECT_NEAR(g.offset, 9.5, 1e-9);
  // E[m m^T]: diagonal q x^^2 + (1-q) x^2 = 5, 14.5; off it E[m1] E[m2] = 2 x 3.5 = 7.
  EXPECT_NEAR(g.gram(0, 0), 5.0, 1e-6);
  EXPECT_NEAR(g.gram(0, 1), 7.0, 1e-6);
  EXPECT_NEAR(g.gram(1, 1), 14.5, 1e-6);
  // At q = 0 the upstream's error is gone: codes (1, 1), W itself, cost nothing.
  algorithms::set_inputs(g, gram, cross, reference, 0.0);
  EXPECT_NEAR(algorithms::reconstruction_loss(g, algorithms::Matrix::Ones(1, 2)), 0.0, 1e-9);
}

// Learns `model` twice with one store: the first run makes `passes` passes, the second none
// (every layer from the store); `check` sees each run's model and summary.
void learn_twice_with_a_store(const onnx::ModelProto& model, const RewriteFn& rewrite, const SampleSource& samples,
                              const ReconstructionSettings& settings, const std::vector<NodeAssignment>& assignment,
                              size_t passes,
                              const std::function<void(const onnx::ModelProto&, const ReconstructionSummary&)>& check) {
  LearnedWeightMemory store;
  for (int run = 0; run < 2; ++run) {
    SCOPED_TRACE(run == 0 ? "learned" : "from the store");
    onnx::ModelProto prepared = model;
    const ReconstructionSummary summary = reconstruct_layers(
        prepared, rewrite, samples, settings, {.assignment = &assignment, .store = &store, .data = "normal"}, kLabel);
    EXPECT_EQ(summary.passes, run == 0 ? passes : 0u);
    check(prepared, summary);
  }
}

// update_bias by hand: one input row, two columns, x^ = (1, 3), x = (2, 2), W = 1 at scale 1,
// code 2. W_q x^ - W x = (0, 4): mean 2, so the best shift is -2 and leaves (-2, 2), loss
// (4 + 4) / 2 = 4 where the bias as it is leaves (0 + 16) / 2 = 8. The centred matrices give the
// same: G - m m^T = 5 - 4 = 1, C - m x^T = 4 - 4 = 0, F - x x^T = 0, so R = 1, L0 = 1 and
// L = 1 + 2 + 1 = 4.
TEST(AlgorithmsUpdateBias, TheBestShiftAndItsLossByHand) {
  Eigen::MatrixXd quantized(1, 2), floats(1, 2);
  quantized << 1, 3;
  floats << 2, 2;
  const Eigen::MatrixXd gram = quantized * quantized.transpose() / 2;
  const Eigen::MatrixXd cross = quantized * floats.transpose() / 2;
  const Eigen::MatrixXd reference = floats * floats.transpose() / 2;
  const algorithms::InputMeans means{.quantized = quantized.rowwise().mean(), .floats = floats.rowwise().mean()};
  algorithms::GroupProblem g;
  g.weight = algorithms::Matrix::Ones(1, 1);
  g.scale = algorithms::Column::Ones(1);
  g.zero_point = algorithms::Column::Zero(1);
  const algorithms::Matrix codes = algorithms::Matrix::Constant(1, 1, 2.0f);
  algorithms::set_inputs(g, gram, cross, reference, 1.0);
  EXPECT_NEAR(algorithms::reconstruction_loss(g, codes), 8.0, 1e-9);
  algorithms::set_inputs(g, gram, cross, reference, 1.0, &means);
  EXPECT_NEAR(algorithms::reconstruction_loss(g, codes), 4.0, 1e-9);
  EXPECT_NEAR(algorithms::bias_shift(g, codes)(0), -2.0f, 1e-6);
  // W itself: (2 - 2, 2 - 2) after the shift -(1 x 2 - 2) = 0.
  EXPECT_NEAR(algorithms::bias_shift(g, algorithms::Matrix::Ones(1, 1))(0), 0.0f, 1e-6);
}

// Through the driver: AdaQuant with update_bias writes the bias the shift gives. For the codes it
// learned, that bias is the best there is: the Gemm's output error on the samples is what the
// centred loss says, and below the same codes' error with the bias as it was. The learned bias
// comes back from the store.
TEST(AlgorithmsUpdateBias, TheGemmsBiasIsLearnedAndStored) {
  const onnx::ModelProto model = ModelBuilder()
                                     .add_input("x", TensorProto::FLOAT, {kRows, kIn})
                                     .add_initializer("w", {kOut, kIn}, normal_values(kOut * kIn, 31, 0.3f))
                                     .add_initializer("b", {kOut}, normal_values(kOut, 32, 0.1f))
                                     .add_node("Gemm", {"x", "w", "b"}, {"y"}, {ir::make_int_attribute("transB", 1)}, "gemm")
                                     .add_output("y", TensorProto::FLOAT, {kRows, kOut})
                                     .build();
  const NormalSamples samples("x", {kRows, kIn}, 8);
  const auto assignment = weight_only(model, {.format = FormatId::kXInt8});
  const RewriteFn rewrite = rewrite_for(assignment);
  ReconstructionSettings settings = default_reconstruction(ReconstructionMethod::kAdaQuant);
  settings.learning_rate = 1e-3;
  settings.iterations = 300;
  settings.update_bias = true;
  onnx::ModelProto learned = model;
  const ReconstructionSummary summary =
      reconstruct_layers(learned, rewrite, samples, settings, {.assignment = &assignment}, kLabel);
  ASSERT_EQ(summary.layers, 1u);
  EXPECT_EQ(summary.biases, 1u);
  EXPECT_NE(initializer(learned, "b"), initializer(model, "b"));
  const double error = output_error(model, rewrite(learned), samples);
  EXPECT_NEAR(summary.per_layer[0].loss_learned * 8 * kRows, error, 1e-3 * error);
  onnx::ModelProto old_bias = learned;
  for (auto& init : *old_bias.mutable_graph()->mutable_initializer()) {
    if (init.name() == "b") init = tensor_to_proto(Tensor::from_floats({kOut}, initializer(model, "b")), "b");
  }
  const double error_old_bias = output_error(model, rewrite(old_bias), samples);
  EXPECT_LT(error, error_old_bias);
  // From the store: the same weights and bias, with no pass.
  learn_twice_with_a_store(model, rewrite, samples, settings, assignment, 1,
                           [&](const onnx::ModelProto& prepared, const ReconstructionSummary& again) {
                             EXPECT_EQ(again.biases, 1u);
                             EXPECT_EQ(initializer(prepared, "b"), initializer(learned, "b"));
                             EXPECT_EQ(initializer(prepared, "w"), initializer(learned, "w"));
                           });
}

// A MatMul has no bias: it is learned with a note, not an error.
TEST(AlgorithmsUpdateBias, ALayerWithoutABiasKeepsItWithANote) {
  onnx::ModelProto prepared = ModelBuilder()
                                  .add_input("x", TensorProto::FLOAT, {kRows, kIn})
                                  .add_initializer("w", {kIn, kOut}, normal_values(kOut * kIn, 33, 0.3f))
                                  .add_node("MatMul", {"x", "w"}, {"y"}, {}, "matmul")
                                  .add_output("y", TensorProto::FLOAT, {kRows, kOut})
                                  .build();
  const NormalSamples samples("x", {kRows, kIn}, 4);
  const auto assignment = weight_only(prepared, {.format = FormatId::kXInt8});
  ReconstructionSettings settings = default_reconstruction(ReconstructionMethod::kAdaQuant);
  settings.iterations = 50;
  settings.update_bias = true;
  const ReconstructionSummary summary =
      reconstruct_layers(prepared, rewrite_for(assignment), samples, settings, {.assignment = &assignment}, kLabel);
  EXPECT_EQ(summary.biases, 0u);
  EXPECT_NE(text::join(summary.notes, "; ").find("adaquant: update_bias: 1 layers keep their bias"), std::string::npos)
      << text::join(summary.notes, "; ");
}

// Through the driver: drop_ratio reaches the layers, is reported, and changes what is learned
// (the second Gemm's upstream error is half taken back).
TEST(AlgorithmsDropRatio, ReachesTheLayersAndTheSummary) {
  const onnx::ModelProto model = two_gemms();
  const NormalSamples samples("x", {kRows, kIn}, 8);
  const auto assignment = weight_only(model, {.format = FormatId::kXInt8});
  const RewriteFn rewrite = rewrite_for(assignment);
  std::vector<float> second[2];
  double nearest_loss[2] = {0, 0};
  for (int run = 0; run < 2; ++run) {
    onnx::ModelProto prepared = model;
    ReconstructionSettings settings = default_reconstruction(ReconstructionMethod::kAdaRound);
    settings.drop_ratio = run == 0 ? 1.0 : 0.0;
    const ReconstructionSummary summary =
        reconstruct_layers(prepared, rewrite, samples, settings, {.assignment = &assignment}, kLabel);
    ASSERT_EQ(summary.layers, 2u);
    EXPECT_EQ(summary.drop_ratio, settings.drop_ratio);
    second[run] = initializer(prepared, "w2");
    nearest_loss[run] = summary.per_layer[1].loss_nearest;
  }
  EXPECT_NE(second[0], second[1]);
  // With q = 0 the second layer's nearest codes are judged on the float input alone: only their
  // own rounding error, below what the quantized upstream adds to it.
  EXPECT_LT(nearest_loss[1], nearest_loss[0]);
}

// Quark's lr_adjust [threshold, rate]: a layer whose output's mean squared error before learning
// (worked here from the nearest codes: the squared error over the 8 x 16 x 6 output elements)
// is above the threshold learns at the rate; at or below it, at the settings' own rate. Either
// way the weights are those a plain run at that rate learns.
TEST(AlgorithmsLrAdjust, ALayerAboveTheThresholdLearnsAtItsRate) {
  const onnx::ModelProto model = gemm_model();
  const NormalSamples samples("x", {kRows, kIn}, 8);
  const auto assignment = weight_only(model, {.format = FormatId::kXInt8});
  const RewriteFn rewrite = rewrite_for(assignment);
  const StoredCodes nearest = stored_codes(rewrite(model), "gemm");
  const double mse = gemm_error_by_hand(initializer(model, "w"), nearest.codes, nearest.scale, samples) / (8.0 * kRows * kOut);
  ReconstructionSettings settings = default_reconstruction(ReconstructionMethod::kAdaRound);
  settings.iterations = 200;
  const auto learn = [&](const ReconstructionSettings& s, ReconstructionSummary& summary) {
    onnx::ModelProto prepared = model;
    summary = reconstruct_layers(prepared, rewrite, samples, s, {.assignment = &assignment}, kLabel);
    return initializer(prepared, "w");
  };
  ReconstructionSummary summary;
  const std::vector<float> at_default = learn(settings, summary);
  EXPECT_EQ(summary.per_layer.at(0).learning_rate, 0.1);
  EXPECT_FALSE(summary.lr_adjust);
  ReconstructionSettings slow = settings;
  slow.learning_rate = 0.002;
  const std::vector<float> at_slow = learn(slow, summary);
  ASSERT_NE(at_slow, at_default);  // the rate matters on this layer
  for (const double threshold : {mse * 0.999, mse * 1.001}) {
    SCOPED_TRACE(threshold);
    const bool above = threshold < mse;
    ReconstructionSettings adjusted = settings;
    adjusted.lr_adjust = ReconstructionSettings::LearningRateAdjust{.threshold = threshold, .learning_rate = 0.002};
    EXPECT_EQ(learn(adjusted, summary), above ? at_slow : at_default);
    EXPECT_EQ(summary.lr_adjust, adjusted.lr_adjust);
    EXPECT_EQ(summary.lr_adjusted, above ? 1u : 0u);
    EXPECT_EQ(summary.per_layer.at(0).learning_rate, above ? 0.002 : 0.1);
    EXPECT_NEAR(summary.per_layer.at(0).loss_nearest / kOut, mse, 1e-4 * mse);
  }
}

// Quark's target_op_type: only the listed op types are learned. x -> Conv -> Flatten -> Gemm;
// listing Gemm learns the Gemm alone, as the plain run does (the Conv keeps its weights, which
// are the Gemm's upstream either way); Quark's LayerNormalization matches no layer, a note.
TEST(AlgorithmsTargetOpType, OnlyTheListedOpTypesAreLearned) {
  const onnx::ModelProto model = ModelBuilder()
                                     .add_input("x", TensorProto::FLOAT, {1, 4, 7, 7})
                                     .add_initializer("wc", {6, 2, 3, 3}, normal_values(6 * 2 * 9, 9, 0.3f))
                                     .add_initializer("wg", {kOut, 6 * 16}, normal_values(kOut * 6 * 16, 10, 0.3f))
                                     .add_node("Conv", {"x", "wc"}, {"c"},
                                               {ir::make_ints_attribute("pads", {1, 1, 1, 1}),
                                                ir::make_ints_attribute("strides", {2, 2}), ir::make_int_attribute("group", 2)},
                                               "conv")
                                     .add_node("Flatten", {"c"}, {"f"}, {}, "flatten")
                                     .add_node("Gemm", {"f", "wg"}, {"y"}, {ir::make_int_attribute("transB", 1)}, "gemm")
                                     .add_output("y", TensorProto::FLOAT, {1, kOut})
                                     .build();
  const NormalSamples samples("x", {1, 4, 7, 7}, 8);
  const auto assignment = weight_only(model, {.format = FormatId::kXInt8});
  const RewriteFn rewrite = rewrite_for(assignment);
  ReconstructionSettings settings = default_reconstruction(ReconstructionMethod::kAdaRound);
  settings.target = ReconstructionTarget::kQuantizedInput;
  settings.iterations = 200;
  const auto learn = [&](const std::vector<std::string>& op_types, ReconstructionSummary& summary) {
    ReconstructionSettings s = settings;
    s.op_types = op_types;
    onnx::ModelProto prepared = model;
    summary = reconstruct_layers(prepared, rewrite, samples, s, {.assignment = &assignment}, kLabel);
    return prepared;
  };
  ReconstructionSummary summary;
  const onnx::ModelProto every = learn({}, summary);
  ASSERT_EQ(summary.layers, 2u);
  ASSERT_NE(initializer(every, "wc"), initializer(model, "wc"));
  ASSERT_NE(initializer(every, "wg"), initializer(model, "wg"));
  const onnx::ModelProto gemm_only = learn({"Gemm"}, summary);
  ASSERT_EQ(summary.per_layer.size(), 1u);
  EXPECT_EQ(summary.per_layer[0].node, "gemm");
  EXPECT_EQ(initializer(gemm_only, "wc"), initializer(model, "wc"));
  EXPECT_NE(initializer(gemm_only, "wg"), initializer(model, "wg"));
  const onnx::ModelProto conv_only = learn({"Conv"}, summary);
  ASSERT_EQ(summary.per_layer.size(), 1u);
  EXPECT_EQ(initializer(conv_only, "wc"), initializer(every, "wc"));  // the first layer learns alike
  EXPECT_EQ(initializer(conv_only, "wg"), initializer(model, "wg"));
  const onnx::ModelProto none = learn({"LayerNormalization"}, summary);
  EXPECT_EQ(summary.layers, 0u);
  ASSERT_EQ(summary.notes.size(), 1u);
  EXPECT_EQ(summary.notes[0],
            "adaround: no LayerNormalization with a float weight the config stores as integer codes: nothing learned");
  EXPECT_EQ(none.SerializeAsString(), model.SerializeAsString());
}

// x -> Gemm -> Relu -> Gemm -> Gemm -> y, weights drawn from `seed`.
onnx::ModelProto three_gemms(uint64_t seed) {
  return ModelBuilder()
      .add_input("x", TensorProto::FLOAT, {kRows, kIn})
      .add_initializer("w1", {kIn, kIn}, normal_values(kIn * kIn, seed, 0.3f))
      .add_initializer("w2", {kIn, kIn}, normal_values(kIn * kIn, seed + 1, 0.3f))
      .add_initializer("w3", {kOut, kIn}, normal_values(kOut * kIn, seed + 2, 0.3f))
      .add_node("Gemm", {"x", "w1"}, {"h1"}, {ir::make_int_attribute("transB", 1)}, "first")
      .add_node("Relu", {"h1"}, {"r1"}, {}, "relu")
      .add_node("Gemm", {"r1", "w2"}, {"h2"}, {ir::make_int_attribute("transB", 1)}, "second")
      .add_node("Gemm", {"h2", "w3"}, {"y"}, {ir::make_int_attribute("transB", 1)}, "third")
      .add_output("y", TensorProto::FLOAT, {kRows, kOut})
      .build();
}

// The output error power over the float output's power, by ONNX Runtime's outputs alone.
double relative_output_error(const onnx::ModelProto& reference, const onnx::ModelProto& quantized, const SampleSource& samples) {
  const Session a = Session::from_model(reference, kLabel);
  const Session b = Session::from_model(quantized, kLabel);
  double error = 0, power = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    const auto want = a.run(samples.sample(i)).at(0).second.to_floats();
    const auto got = b.run(samples.sample(i)).at(0).second.to_floats();
    for (size_t k = 0; k < want.size(); ++k) {
      error += (static_cast<double>(got[k]) - want[k]) * (static_cast<double>(got[k]) - want[k]);
      power += static_cast<double>(want[k]) * want[k];
    }
  }
  return error / power;
}

// selective_update (Quark's): a layer's learned weights stay only where the whole model's output
// error falls below what it was with the layers kept before them. On these weights, learned on
// the quantized input alone (layer-local loss), the second layer's update raises the model's
// error and goes back; the first and third stay. Every loss is checked against ONNX Runtime's
// outputs computed here, and the store gives back the same decisions without a pass.
TEST(AlgorithmsSelectiveUpdate, KeepsOnlyUpdatesThatLowerTheModelsOutputError) {
  const NormalSamples samples("x", {kRows, kIn}, 8);
  const onnx::ModelProto model = three_gemms(45);
  const auto assignment = weight_only(model, {.format = FormatId::kXInt8});
  const RewriteFn rewrite = rewrite_for(assignment);
  ReconstructionSettings settings = default_reconstruction(ReconstructionMethod::kAdaRound);
  settings.target = ReconstructionTarget::kQuantizedInput;
  settings.iterations = 300;
  onnx::ModelProto all = model;
  reconstruct_layers(all, rewrite, samples, settings, {.assignment = &assignment}, kLabel);
  settings.selective_update = true;
  onnx::ModelProto prepared = model;
  const ReconstructionSummary summary =
      reconstruct_layers(prepared, rewrite, samples, settings, {.assignment = &assignment}, kLabel);
  EXPECT_TRUE(summary.selective_update);
  ASSERT_EQ(summary.per_layer.size(), 3u);
  EXPECT_EQ(summary.layers, 3u);
  EXPECT_EQ(summary.rejected, 1u);
  const double before = relative_output_error(model, rewrite(model), samples);
  EXPECT_NEAR(summary.output_loss_before, before, 1e-9 * before);
  const double after = relative_output_error(model, rewrite(prepared), samples);
  EXPECT_NEAR(summary.output_loss_after, after, 1e-9 * after);
  EXPECT_LT(after, before);
  double kept = before;
  for (const LayerReconstruction& layer : summary.per_layer) {
    SCOPED_TRACE(layer.node);
    if (layer.rejected) {
      EXPECT_GE(layer.output_loss, kept);
    } else {
      EXPECT_LT(layer.output_loss, kept);
      kept = layer.output_loss;
    }
  }
  EXPECT_FALSE(summary.per_layer[0].rejected);
  EXPECT_TRUE(summary.per_layer[1].rejected);
  EXPECT_FALSE(summary.per_layer[2].rejected);
  EXPECT_EQ(initializer(prepared, "w1"), initializer(all, "w1"));  // learned alike, kept
  EXPECT_EQ(initializer(prepared, "w2"), initializer(model, "w2"));  // given back
  EXPECT_NE(initializer(prepared, "w3"), initializer(model, "w3"));
  // The store keeps what was learned, not the decision: a rerun decides again, alike, with no pass.
  learn_twice_with_a_store(model, rewrite, samples, settings, assignment, 3,
                           [&](const onnx::ModelProto& again, const ReconstructionSummary& rerun) {
                             EXPECT_EQ(rerun.rejected, 1u);
                             EXPECT_EQ(again.SerializeAsString(), prepared.SerializeAsString());
                           });
}

// A model whose outputs are all indices gives selective_update nothing to compare: a note, and
// every update stays.
TEST(AlgorithmsSelectiveUpdate, NoFloatOutputIsANoteAndKeepsEveryUpdate) {
  onnx::ModelProto model = gemm_model();
  model.mutable_graph()->clear_output();
  *model.mutable_graph()->add_node() = ir::make_node({.op_type = "ArgMax", .name = "argmax", .inputs = {"y"}, .outputs = {"k"},
                                                       .attributes = {ir::make_int_attribute("axis", 1)}});
  auto* output = model.mutable_graph()->add_output();
  output->set_name("k");
  output->mutable_type()->mutable_tensor_type()->set_elem_type(TensorProto::INT64);
  const NormalSamples samples("x", {kRows, kIn}, 4);
  const auto assignment = weight_only(model, {.format = FormatId::kXInt8});
  ReconstructionSettings settings = default_reconstruction(ReconstructionMethod::kAdaRound);
  settings.iterations = 100;
  settings.selective_update = true;
  onnx::ModelProto prepared = model;
  const ReconstructionSummary summary =
      reconstruct_layers(prepared, rewrite_for(assignment), samples, settings, {.assignment = &assignment}, kLabel);
  EXPECT_EQ(summary.layers, 1u);
  EXPECT_EQ(summary.rejected, 0u);
  EXPECT_FALSE(summary.selective_update);
  ASSERT_EQ(summary.notes.size(), 1u);
  EXPECT_NE(summary.notes[0].find("selective_update has no float model output to compare"), std::string::npos);
  EXPECT_NE(initializer(prepared, "w"), initializer(model, "w"));
}

TEST(AlgorithmsAdaRound, NoApplicableLayerIsANoteNotAnError) {
  onnx::ModelProto prepared = gemm_model();
  const onnx::ModelProto original = prepared;
  const NormalSamples samples("x", {kRows, kIn}, 2);
  // BF16 weights have no integer codes to learn.
  const auto assignment = weight_only(prepared, {.format = FormatId::kBFloat16});
  const ReconstructionSummary summary = reconstruct_layers(prepared, rewrite_for(assignment), samples,
                                                           default_reconstruction(ReconstructionMethod::kAdaRound),
                                                           {.assignment = &assignment}, kLabel);
  EXPECT_EQ(summary.layers, 0u);
  ASSERT_EQ(summary.notes.size(), 1u);
  EXPECT_NE(summary.notes[0].find("adaround: no Conv/ConvTranspose/Gemm/MatMul"), std::string::npos) << summary.notes[0];
  EXPECT_EQ(prepared.SerializeAsString(), original.SerializeAsString());
}

TEST(AlgorithmsAdaRound, SameInputsGiveTheSameWeights) {
  const NormalSamples samples("x", {1, 4, 7, 7}, 3);
  std::vector<float> first;
  for (int run = 0; run < 2; ++run) {
    onnx::ModelProto prepared = grouped_conv_model();
    const auto assignment = weight_only(prepared, {.format = FormatId::kXInt8});
    ReconstructionSettings settings = default_reconstruction(ReconstructionMethod::kAdaRound);
    settings.iterations = 200;
    reconstruct_layers(prepared, rewrite_for(assignment), samples, settings, {.assignment = &assignment}, kLabel);
    if (run == 0) first = initializer(prepared, "w");
    else EXPECT_EQ(initializer(prepared, "w"), first);
  }
}

// A search's steps: a layer is learned again exactly when its upstream or its own format
// changed; otherwise the store gives back the very weights it learned.
TEST(AlgorithmsAdaRound, StoreRelearnsOnlyLayersWhoseUpstreamOrFormatChanged) {
  const NormalSamples samples("x", {kRows, kIn}, 4);
  ReconstructionSettings settings = default_reconstruction(ReconstructionMethod::kAdaRound);
  settings.iterations = 200;
  LearnedWeightMemory store;
  auto assignment = weight_only(two_gemms(), {.format = FormatId::kXInt8});
  const auto set_format = [&](const std::string& node, FormatId format) {
    for (auto& a : assignment) {
      if (a.node_name == node) a.config.weight->format = format;
    }
  };
  struct Run {
    ReconstructionSummary summary;
    std::vector<float> w1, w2;
  };
  const auto run = [&] {
    onnx::ModelProto prepared = two_gemms();
    Run r;
    r.summary = reconstruct_layers(prepared, rewrite_for(assignment), samples, settings,
                                   {.assignment = &assignment, .store = &store, .data = "normal samples"}, kLabel);
    r.w1 = initializer(prepared, "w1");
    r.w2 = initializer(prepared, "w2");
    return r;
  };
  const Run first = run();
  EXPECT_EQ(first.summary.layers, 2u);
  EXPECT_EQ(first.summary.reused, 0u);
  EXPECT_EQ(first.summary.passes, 2u);

  const Run again = run();
  EXPECT_EQ(again.summary.layers, 2u);
  EXPECT_EQ(again.summary.reused, 2u);
  EXPECT_EQ(again.summary.passes, 0u);
  EXPECT_EQ(again.w1, first.w1);
  EXPECT_EQ(again.w2, first.w2);
  ASSERT_EQ(again.summary.per_layer.size(), 2u);
  EXPECT_TRUE(again.summary.per_layer[0].reused);
  EXPECT_EQ(again.summary.per_layer[1].loss_learned, first.summary.per_layer[1].loss_learned);

  // The second layer's format changes: the first is reused, the second learned on its grid.
  set_format("second", FormatId::kInt8);
  const Run second_changed = run();
  EXPECT_EQ(second_changed.summary.reused, 1u);
  EXPECT_EQ(second_changed.summary.passes, 1u);
  EXPECT_EQ(second_changed.w1, first.w1);
  EXPECT_NE(second_changed.w2, first.w2);

  // The first layer's format changes: the second's input changes with it, so both are learned.
  set_format("first", FormatId::kInt8);
  const Run first_changed = run();
  EXPECT_EQ(first_changed.summary.reused, 0u);
  EXPECT_EQ(first_changed.summary.passes, 2u);

  // The same samples under another name are other samples.
  onnx::ModelProto prepared = two_gemms();
  const ReconstructionSummary renamed = reconstruct_layers(
      prepared, rewrite_for(assignment), samples, settings,
      {.assignment = &assignment, .store = &store, .data = "other samples"}, kLabel);
  EXPECT_EQ(renamed.reused, 0u);
}

TEST(AlgorithmsAdaRound, WorkDirStoreReadsBackWholeFilesOnly) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "learned_weights_test";
  std::filesystem::remove_all(dir);
  LearnedWeightDir store(dir);
  EXPECT_FALSE(store.find("k1").has_value());
  store.store("k1", {.weights = {1.5f, -0.25f, 3e-9f}, .loss_nearest = 0.125, .loss_learned = 0.0625, .changed = 2});
  const std::optional<LearnedLayer> back = store.find("k1");
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->weights, (std::vector<float>{1.5f, -0.25f, 3e-9f}));
  EXPECT_EQ(back->loss_nearest, 0.125);
  EXPECT_EQ(back->loss_learned, 0.0625);
  EXPECT_EQ(back->changed, 2u);
  EXPECT_FALSE(std::filesystem::exists(dir / "k1.f32.partial"));
  // Cut short, or with bytes after the floats: not used.
  const std::filesystem::path file = dir / "k1.f32";
  const auto size = std::filesystem::file_size(file);
  std::filesystem::resize_file(file, size - 1);
  EXPECT_FALSE(store.find("k1").has_value());
  std::filesystem::resize_file(file, size + 4);
  EXPECT_FALSE(store.find("k1").has_value());
  std::ofstream(dir / "k2.f32") << "mixprec-learned-weights-1 99999999999999 0 0 0\n";
  EXPECT_FALSE(store.find("k2").has_value());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace mixprec
