// Rewrites checked the ONNX Runtime way: run the model before and after, compare outputs within
// a stated tolerance, and count the ops the rewrite should have produced.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "mixprec/config.h"
#include "mixprec/error.h"
#include "mixprec/jobs.h"
#include "mixprec/log.h"
#include "mixprec/random_data.h"
#include "mixprec/rewrite.h"
#include "mixprec/runtime.h"
#include "mixprec/tensor_proto.h"
#include "support/float_compare.h"
#include "support/model_builder.h"

namespace mixprec {
namespace {

using testing::max_abs;
using testing::max_abs_diff;

using testing::attr_float;
using testing::attr_int;
using testing::attr_ints;
using testing::deterministic_values;
using testing::ModelBuilder;

// Float32 BN folding reorders a few multiplications: outputs agree to float rounding.
constexpr float kFoldTolerance = 1e-5f;

std::map<std::string, int> op_counts(const onnx::ModelProto& model) {
  std::map<std::string, int> counts;
  for (const auto& node : model.graph().node()) ++counts[node.op_type()];
  return counts;
}

NamedTensors random_inputs(const Session& session, uint64_t seed) {
  NamedTensors inputs;
  for (const auto& spec : session.inputs()) inputs.emplace_back(spec.name, random_tensor(spec.dtype, spec.shape, seed));
  return inputs;
}

std::vector<float> run_first_output(const onnx::ModelProto& model, const NamedTensors& inputs) {
  return Session::from_model(model, "test").run(inputs).front().second.to_floats();
}

// input [1,3,8,8] → Conv(4 out, 3x3) → BatchNormalization → Relu → output
onnx::ModelProto conv_bn_model(bool conv_bias) {
  ModelBuilder b;
  b.opset(11)
      .add_input("input", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{3}, int64_t{8}, int64_t{8}})
      .add_output("output", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{4}, int64_t{8}, int64_t{8}})
      .add_initializer("w", {4, 3, 3, 3}, deterministic_values(108, 1))
      .add_initializer("gamma", {4}, {1.5f, 0.5f, -1.0f, 2.0f})
      .add_initializer("beta", {4}, {0.1f, -0.2f, 0.3f, 0.0f})
      .add_initializer("mean", {4}, {0.05f, -0.1f, 0.2f, 0.0f})
      .add_initializer("var", {4}, {0.9f, 1.1f, 0.5f, 2.0f});
  std::vector<std::string> conv_inputs = {"input", "w"};
  if (conv_bias) {
    b.add_initializer("b", {4}, {0.01f, 0.02f, -0.03f, 0.04f});
    conv_inputs.push_back("b");
  }
  b.add_node("Conv", conv_inputs, {"c"}, {attr_ints("pads", {1, 1, 1, 1})}, "conv")
      .add_node("BatchNormalization", {"c", "gamma", "beta", "mean", "var"}, {"bn"}, {attr_float("epsilon", 1e-5f)},
                "bn")
      .add_node("Relu", {"bn"}, {"output"}, {}, "relu");
  return b.build();
}

TEST(RewriteFoldBatchNorm, FoldsIntoConvWithAndWithoutBias) {
  for (bool bias : {true, false}) {
    const onnx::ModelProto model = conv_bn_model(bias);
    PrepareSummary summary;
    const onnx::ModelProto prepared = prepare_model(model, {.fold_batchnorm = true}, "test", &summary);
    EXPECT_EQ(summary.folded_batchnorms, 1u);
    EXPECT_EQ(op_counts(prepared).count("BatchNormalization"), 0u);
    EXPECT_EQ(prepared.graph().node(0).input_size(), 3);  // the fold always leaves a bias
    const Session session = Session::from_model(model, "test");
    const NamedTensors inputs = random_inputs(session, 3);
    EXPECT_LE(max_abs_diff(run_first_output(model, inputs), run_first_output(prepared, inputs)), kFoldTolerance);
  }
}

TEST(RewriteFoldBatchNorm, LeavesSharedConvOutputAlone) {
  onnx::ModelProto model = conv_bn_model(true);
  // The conv output is also a graph output now: folding would change it.
  auto* out = model.mutable_graph()->add_output();
  out->set_name("c");
  out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  PrepareSummary summary;
  prepare_model(model, {}, "test", &summary);
  EXPECT_EQ(summary.folded_batchnorms, 0u);
}

struct Quantized {
  onnx::ModelProto model;
  RewriteSummary summary;
};

Quantized quantize_with(const onnx::ModelProto& model, const QuantConfig& config, size_t samples = 8) {
  const onnx::ModelProto prepared = prepare_model(model, {.fold_batchnorm = config.extra.convert_bn_to_conv}, "test");
  const Session probe = Session::from_model(prepared, "test");
  const auto source = make_random_source(probe.inputs(), samples, 11);
  const CalibrationStats stats = calibrate_model(prepared, "test", *source);
  const auto assignment = assign_layers(config, prepared, "test");
  QuantizeOptions options;
  options.calib_method = config.extra.calib_method;
  options.matmul_nbits = config.extra.matmul_nbits;
  options.int32_bias = config.extra.int32_bias;
  options.unsigned_relu = config.extra.use_unsigned_relu;
  Quantized q;
  q.model = quantize_model(prepared, assignment, stats, options, "test", {}, &q.summary);
  return q;
}

TEST(RewriteInsertQdq, A8W8ConvChainRunsAndStaysWithinQuantizationError) {
  const onnx::ModelProto model = testing::conv_chain(3);
  const Quantized q = quantize_with(model, *preset_config("A8W8"));
  const auto counts = op_counts(q.model);
  // One activation pair per conv input (3), one DQ per weight (3) and per int32 bias (3).
  EXPECT_EQ(counts.at("QuantizeLinear"), 3);
  EXPECT_EQ(counts.at("DequantizeLinear"), 9);
  EXPECT_EQ(q.summary.qdq_pairs, 3);
  EXPECT_EQ(q.summary.quantized_nodes, 3);
  EXPECT_EQ(q.summary.opset_to, 17);  // conv_chain is already opset 17: nothing to raise
  int int8_weights = 0, int32_biases = 0;
  for (const auto& init : q.model.graph().initializer()) {
    int8_weights += init.data_type() == onnx::TensorProto::INT8 && init.dims_size() == 4;
    // The codes, not their int32 zero points.
    int32_biases += init.data_type() == onnx::TensorProto::INT32 && init.name().find("_quantized") != std::string::npos;
  }
  EXPECT_EQ(int8_weights, 3);
  EXPECT_EQ(int32_biases, 3);

  const Session session = Session::from_model(model, "test");
  const NamedTensors inputs = random_inputs(session, 5);
  const auto ref = run_first_output(model, inputs);
  const auto got = run_first_output(q.model, inputs);
  // Three int8 layers calibrated on 8 other random samples: each adds about one step of its
  // range (1/127 ≈ 0.8%), plus clipping where test values exceed the calibrated range. 10% of
  // the output's peak bounds that with margin, and a broken scale or axis breaks it at once.
  EXPECT_LE(max_abs_diff(ref, got), 0.10f * max_abs(ref));
  EXPECT_GT(max_abs_diff(ref, got), 0.0f);  // it really is quantized
}

TEST(RewriteInsertQdq, Bf16PresetUsesCastPairsAndBf16Weights) {
  onnx::ModelProto model = testing::conv_chain(2);
  model.mutable_opset_import(0)->set_version(11);
  const Quantized q = quantize_with(model, *preset_config("BF16"));
  const auto counts = op_counts(q.model);
  EXPECT_EQ(counts.count("QuantizeLinear"), 0u);
  EXPECT_EQ(q.summary.cast_pairs, 2);
  EXPECT_EQ(q.summary.opset_from, 11);
  EXPECT_EQ(q.summary.opset_to, 13);  // Cast to bfloat16 needs opset 13
  int bf16_weights = 0;
  for (const auto& init : q.model.graph().initializer()) bf16_weights += init.data_type() == onnx::TensorProto::BFLOAT16;
  EXPECT_GE(bf16_weights, 2);

  const Session session = Session::from_model(model, "test");
  const NamedTensors inputs = random_inputs(session, 6);
  const auto ref = run_first_output(model, inputs);
  const auto got = run_first_output(q.model, inputs);
  // bf16 keeps 8 significant bits: relative error 2^-8 per rounding, a few roundings per layer.
  EXPECT_LE(max_abs_diff(ref, got), 0.03f * max_abs(ref));
}

// With Int32Bias off and no bias spec the Conv bias stays float, and ONNX Runtime quantizes it
// between the dequantized input and weight with a Round node: an opset-10 model is raised to 11,
// which Round needs (before, the session failed "No Op registered for Round ... version of 10").
TEST(RewriteInsertQdq, AFloatBiasBetweenIntegerOperandsRaisesOpset10To11) {
  onnx::ModelProto model = testing::conv_chain(2);
  model.mutable_opset_import(0)->set_version(10);
  const QuantConfig xint8 = *preset_config("XINT8");  // per-tensor power-of-two: nothing needs opset 13
  ASSERT_TRUE(xint8.global.bias.has_value());
  QuantConfig config = xint8;
  config.global.bias.reset();
  config.extra.int32_bias = false;
  const Quantized q = quantize_with(model, config);
  EXPECT_EQ(q.summary.opset_from, 10);
  EXPECT_EQ(q.summary.opset_to, 11);
  for (const char* bias : {"conv_0.bias", "conv_1.bias"}) {  // the Convs read their float biases
    int float_readers = 0;
    for (const auto& node : q.model.graph().node()) float_readers += node.op_type() == "Conv" && node.input(2) == bias;
    EXPECT_EQ(float_readers, 1) << bias;
  }

  const Session session = Session::from_model(model, "test");
  const NamedTensors inputs = random_inputs(session, 5);
  const auto ref = run_first_output(model, inputs);
  const auto got = run_first_output(q.model, inputs);  // the session ONNX Runtime refused before
  EXPECT_LE(max_abs_diff(ref, got), 0.10f * max_abs(ref));
  EXPECT_GT(max_abs_diff(ref, got), 0.0f);

  // With XINT8's bias spec the bias is ours (a DequantizeLinear), and opset 10 is enough.
  EXPECT_EQ(quantize_with(model, xint8).summary.opset_to, 10);
}

// ONNX Runtime 1.29's WeightBiasQuantization does the same to a ConvTranspose's float bias (a
// decoder's upsampling; before, only Conv and Gemm raised the opset and this model failed to load
// with the Round error): x -> ConvTranspose (stride 2) -> Relu -> ConvTranspose (1x1, no bias, so
// it raises nothing itself; its input Q/DQ is what the first one's output leads to) -> y, opset 10.
TEST(RewriteInsertQdq, AConvTransposeFloatBiasBetweenIntegerOperandsRaisesOpset10To11) {
  ModelBuilder b;
  b.opset(10)
      .add_input("x", onnx::TensorProto::FLOAT, {1, 2, 4, 4})
      .add_initializer("up.weight", {2, 3, 2, 2}, deterministic_values(24, 1))
      .add_initializer("up.bias", {3}, {0.05f, -0.1f, 0.2f})
      .add_initializer("mix.weight", {3, 2, 1, 1}, deterministic_values(6, 2))
      .add_node("ConvTranspose", {"x", "up.weight", "up.bias"}, {"up"}, {attr_ints("strides", {2, 2})}, "up")
      .add_node("Relu", {"up"}, {"up_relu"}, {}, "up_relu")
      .add_node("ConvTranspose", {"up_relu", "mix.weight"}, {"y"}, {}, "mix")
      .add_output("y", onnx::TensorProto::FLOAT, {1, 2, 8, 8});
  const onnx::ModelProto model = b.build();
  QuantConfig config = *preset_config("XINT8");
  config.global.bias.reset();
  config.extra.int32_bias = false;
  const Quantized q = quantize_with(model, config);
  EXPECT_EQ(q.summary.opset_from, 10);
  EXPECT_EQ(q.summary.opset_to, 11);
  int float_bias_readers = 0;
  for (const auto& node : q.model.graph().node()) {
    float_bias_readers += node.input_size() > 2 && node.input(2) == "up.bias";
  }
  EXPECT_EQ(float_bias_readers, 1);

  const Session session = Session::from_model(model, "test");
  const NamedTensors inputs = random_inputs(session, 5);
  const auto ref = run_first_output(model, inputs);
  const auto got = run_first_output(q.model, inputs);  // the Round error before
  EXPECT_LE(max_abs_diff(ref, got), 0.10f * max_abs(ref));
  EXPECT_GT(max_abs_diff(ref, got), 0.0f);
}

// UseUnsignedReLU: x -> Conv -> Relu -> Conv -> Clip(0, 6) -> Conv -> Clip(-1, 1) -> Conv -> y in
// XINT8 (PowerOfTwo_NonOverflow, so the scales follow from the maxima by hand): the Relu's and
// the Clip(0, 6)'s outputs get zero point -128 and half the scale (max / 255 instead of max /
// 127, both rounded up to a power of two), the input and the Clip(-1, 1)'s output stay
// symmetric. Off, every zero point is 0.
TEST(RewriteInsertQdq, UseUnsignedReluGivesReluLikeOutputsEveryCode) {
  ModelBuilder b;
  b.add_input("x", onnx::TensorProto::FLOAT, {1, 2, 4, 4})
      .add_initializer("w1", {2, 2, 1, 1}, deterministic_values(4, 1))
      .add_initializer("w2", {2, 2, 1, 1}, deterministic_values(4, 2))
      .add_initializer("w3", {2, 2, 1, 1}, deterministic_values(4, 3))
      .add_initializer("w4", {2, 2, 1, 1}, deterministic_values(4, 4))
      .add_initializer("zero", {}, {0.0f})
      .add_initializer("six", {}, {6.0f})
      .add_initializer("minus_one", {}, {-1.0f})
      .add_initializer("one", {}, {1.0f})
      .add_node("Conv", {"x", "w1"}, {"c1"}, {}, "conv1")
      .add_node("Relu", {"c1"}, {"r"}, {}, "relu")
      .add_node("Conv", {"r", "w2"}, {"c2"}, {}, "conv2")
      .add_node("Clip", {"c2", "zero", "six"}, {"k"}, {}, "clip6")
      .add_node("Conv", {"k", "w3"}, {"c3"}, {}, "conv3")
      .add_node("Clip", {"c3", "minus_one", "one"}, {"m"}, {}, "clip1")
      .add_node("Conv", {"m", "w4"}, {"y"}, {}, "conv4")
      .add_output("y", onnx::TensorProto::FLOAT, {1, 2, 4, 4});
  const onnx::ModelProto model = b.build();
  QuantConfig config = *preset_config("XINT8");
  config.extra.calib_method = CalibMethod::kPowerOfTwoNonOverflow;
  const auto pairs = [](const onnx::ModelProto& m) {
    std::map<std::string, std::pair<float, int>> out;  // quantized tensor -> (scale, zero point)
    std::map<std::string, const onnx::TensorProto*> inits;
    for (const auto& init : m.graph().initializer()) inits[init.name()] = &init;
    for (const auto& node : m.graph().node()) {
      if (node.op_type() != "QuantizeLinear") continue;
      const Tensor scale = tensor_from_proto(*inits.at(node.input(1)), "test");
      const Tensor zero = tensor_from_proto(*inits.at(node.input(2)), "test");
      EXPECT_EQ(zero.dtype(), DType::kInt8) << node.input(0);
      out[node.input(0)] = {scale.to_floats()[0], static_cast<int>(zero.to_floats()[0])};
    }
    return out;
  };
  const Quantized plain = quantize_with(model, config);
  config.extra.use_unsigned_relu = true;
  const Quantized unsigned_relu = quantize_with(model, config);
  EXPECT_EQ(plain.summary.unsigned_relu_pairs, 0);
  EXPECT_EQ(unsigned_relu.summary.unsigned_relu_pairs, 2);
  EXPECT_EQ(unsigned_relu.summary.qdq_pairs, 4);
  const auto before = pairs(plain.model);
  const auto after = pairs(unsigned_relu.model);
  ASSERT_EQ(after.size(), 4u);
  for (const auto& [tensor, params] : before) EXPECT_EQ(params.second, 0) << tensor;
  for (const std::string tensor : {"r", "k"}) {
    EXPECT_EQ(after.at(tensor).second, -128) << tensor;
    EXPECT_EQ(after.at(tensor).first, before.at(tensor).first / 2) << tensor;
  }
  for (const std::string tensor : {"x", "m"}) EXPECT_EQ(after.at(tensor), before.at(tensor)) << tensor;

  const Session session = Session::from_model(model, "test");
  const NamedTensors inputs = random_inputs(session, 5);
  const auto ref = run_first_output(model, inputs);
  EXPECT_LE(max_abs_diff(ref, run_first_output(unsigned_relu.model, inputs)), 0.10f * max_abs(ref));
}

TEST(RewriteInsertQdq, Int16ActivationsRaiseOpsetTo21) {
  const Quantized q = quantize_with(testing::conv_chain(1), *preset_config("A16W8"));
  EXPECT_EQ(q.summary.opset_to, 21);
  bool int16_zero_point = false;
  for (const auto& init : q.model.graph().initializer()) int16_zero_point |= init.data_type() == onnx::TensorProto::INT16;
  EXPECT_TRUE(int16_zero_point);
  Session::from_model(q.model, "test");  // ONNX Runtime accepts it
}

TEST(RewriteInsertQdq, SharedActivationGetsOnePair) {
  // input feeds two convs: one Q/DQ pair serves both.
  ModelBuilder b;
  b.add_input("input", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{2}, int64_t{4}, int64_t{4}})
      .add_output("a", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{2}, int64_t{4}, int64_t{4}})
      .add_output("b", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{2}, int64_t{4}, int64_t{4}})
      .add_initializer("w1", {2, 2, 1, 1}, deterministic_values(4, 1))
      .add_initializer("w2", {2, 2, 1, 1}, deterministic_values(4, 2))
      .add_node("Conv", {"input", "w1"}, {"a"}, {}, "conv_a")
      .add_node("Conv", {"input", "w2"}, {"b"}, {}, "conv_b");
  const Quantized q = quantize_with(b.build(), *preset_config("XINT8"));
  EXPECT_EQ(op_counts(q.model).at("QuantizeLinear"), 1);
  EXPECT_EQ(q.summary.qdq_pairs, 1);
}

// BFP16 on a Conv chain: one com.amd.quark node per conv input, blocks along the channels;
// weights rounded offline along their input channels (what bfp_fake_quantize gives), bias
// float; no Q/DQ and no calibration needed.
TEST(RewriteInsertQdq, BlockFormatsUseOneQuarkNodePerActivationAndRoundWeightsOffline) {
  const onnx::ModelProto model = testing::conv_chain(2);
  const Quantized q = quantize_with(model, *preset_config("BFP16"));
  const auto counts = op_counts(q.model);
  EXPECT_EQ(counts.at("BFPQuantizeDequantize"), 2);
  EXPECT_EQ(counts.count("QuantizeLinear") + counts.count("DequantizeLinear") + counts.count("Cast"), 0u);
  EXPECT_EQ(q.summary.block_ops, 2);
  EXPECT_EQ(q.summary.block_nodes, 2);
  bool imported = false;
  for (const auto& opset : q.model.opset_import()) imported |= opset.domain() == "com.amd.quark" && opset.version() == 1;
  EXPECT_TRUE(imported);
  for (const auto& node : q.model.graph().node()) {
    if (node.op_type() != "BFPQuantizeDequantize") continue;
    EXPECT_EQ(node.domain(), "com.amd.quark");
    std::map<std::string, int64_t> ints;
    for (const auto& a : node.attribute()) ints[a.name()] = a.i();
    EXPECT_EQ(ints.at("axis"), 1);
    EXPECT_EQ(ints.at("block_size"), 8);
    EXPECT_EQ(ints.at("bit_width"), 16);
  }
  // Each Conv weight is its float weight rounded along axis 1.
  const onnx::ModelProto prepared = prepare_model(model, {}, "test");
  std::map<std::string, Tensor> originals;
  for (const auto& init : prepared.graph().initializer()) originals.emplace(init.name(), tensor_from_proto(init, "test"));
  size_t checked = 0;
  for (const auto& node : q.model.graph().node()) {
    if (node.op_type() != "Conv") continue;
    const std::string& stored = node.input(1);
    const onnx::TensorProto* init = nullptr;
    for (const auto& i : q.model.graph().initializer()) {
      if (i.name() == stored) init = &i;
    }
    ASSERT_NE(init, nullptr) << stored;
    const std::string original = stored.substr(0, stored.rfind("_bfp16"));
    const Tensor& w = originals.at(original);
    std::vector<float> want = w.to_floats();
    bfp_fake_quantize(want, w.shape(), 1, block_format(FormatId::kBfp16)->bfp, want);
    EXPECT_EQ(tensor_from_proto(*init, "test").to_floats(), want);
    EXPECT_NE(want, w.to_floats());
    EXPECT_EQ(node.input_size() > 2 ? originals.count(node.input(2)) : 1u, 1u) << "bias stays the float initializer";
    ++checked;
  }
  EXPECT_EQ(checked, 2u);

  const Session session = Session::from_model(model, "test");
  const NamedTensors inputs = random_inputs(session, 8);
  const auto ref = run_first_output(model, inputs);
  const auto got = run_first_output(q.model, inputs);
  // 7-bit mantissas against a block's largest exponent: under 1% of a block's peak per
  // rounding, two layers of activations and weights: 5% of the output's peak is ample.
  EXPECT_LE(max_abs_diff(ref, got), 0.05f * max_abs(ref));
  EXPECT_GT(max_abs_diff(ref, got), 0.0f);

  // dequantize removes the block nodes; the offline-rounded weights stay as they are.
  StripSummary strip;
  const onnx::ModelProto stripped = strip_quantization(q.model, "test", &strip);
  EXPECT_EQ(strip.block_nodes, 2);
  EXPECT_EQ(op_counts(stripped).count("BFPQuantizeDequantize"), 0u);
  Session::from_model(stripped, "test");
}

// A MatMul's blocks run along the dot product: the last axis of its left operand, K of its
// weight (rows of a [K, N] weight: axis 0).
TEST(RewriteInsertQdq, BlockAxisFollowsTheMatMulReduction) {
  ModelBuilder b;
  b.add_input("x", onnx::TensorProto::FLOAT, {int64_t{2}, int64_t{4}, int64_t{32}})
      .add_output("y", onnx::TensorProto::FLOAT, {int64_t{2}, int64_t{4}, int64_t{8}})
      .add_initializer("w", {32, 8}, deterministic_values(256, 4))
      .add_node("MatMul", {"x", "w"}, {"y"}, {}, "mm");
  const Quantized q = quantize_with(b.build(), *preset_config("MXINT8"));
  const onnx::NodeProto* mx = nullptr;
  for (const auto& node : q.model.graph().node()) {
    if (node.op_type() == "MXQuantizeDequantize") mx = &node;
  }
  ASSERT_NE(mx, nullptr);
  std::map<std::string, const onnx::AttributeProto*> attributes;
  for (const auto& a : mx->attribute()) attributes[a.name()] = &a;
  EXPECT_EQ(attributes.at("axis")->i(), -1);
  EXPECT_EQ(attributes.at("element_dtype")->s(), "int8");
  const Tensor w = Tensor::from_floats({32, 8}, deterministic_values(256, 4));
  std::vector<float> want = w.to_floats();
  mx_fake_quantize(want, w.shape(), 0, block_format(FormatId::kMxInt8)->mx_spec, want);
  bool found = false;
  for (const auto& init : q.model.graph().initializer()) {
    if (init.name() == "w_mxint8") {
      EXPECT_EQ(tensor_from_proto(init, "test").to_floats(), want);
      found = true;
    }
  }
  EXPECT_TRUE(found);
}

// A8W4: the MatMul weight [K=64, N=8] is stored as int4 codes in blocks of 32 along K (a
// blocked DequantizeLinear, opset 21: axis 0, block_size 32, scales [2, 8]); ONNX Runtime runs
// it, and stripping folds back exactly the values of our own dequantization.
TEST(RewriteInsertQdq, Int4WeightsInBlocksUseABlockedDequantizeLinear) {
  ModelBuilder b;
  b.add_input("x", onnx::TensorProto::FLOAT, {int64_t{3}, int64_t{64}})
      .add_output("y", onnx::TensorProto::FLOAT, {int64_t{3}, int64_t{8}})
      .add_initializer("w", {64, 8}, deterministic_values(512, 5))
      .add_node("MatMul", {"x", "w"}, {"y"}, {}, "mm");
  const onnx::ModelProto model = b.build();
  const Quantized q = quantize_with(model, *preset_config("A8W4"));
  const onnx::NodeProto* dq = nullptr;
  for (const auto& node : q.model.graph().node()) {
    if (node.op_type() == "DequantizeLinear" && node.input(0) == "w_quantized") dq = &node;
  }
  ASSERT_NE(dq, nullptr);
  std::map<std::string, int64_t> attributes;
  for (const auto& a : dq->attribute()) attributes[a.name()] = a.i();
  EXPECT_EQ(attributes, (std::map<std::string, int64_t>{{"axis", 0}, {"block_size", 32}}));
  std::map<std::string, const onnx::TensorProto*> initializers;
  for (const auto& init : q.model.graph().initializer()) initializers[init.name()] = &init;
  const onnx::TensorProto& codes = *initializers.at("w_quantized");
  EXPECT_EQ(codes.data_type(), 22);  // INT4
  EXPECT_EQ(codes.raw_data().size(), 256u);  // two codes per byte
  EXPECT_EQ(tensor_from_proto(*initializers.at(dq->input(1)), "test").shape(), (Shape{2, 8}));
  int64_t opset = 0;
  for (const auto& o : q.model.opset_import()) {
    if (o.domain().empty()) opset = o.version();
  }
  EXPECT_GE(opset, 21);

  const Tensor w = Tensor::from_floats({64, 8}, deterministic_values(512, 5));
  const QuantParams p = choose_weight_params(w, FormatId::kInt4, 0, {.symmetric = true, .block_size = 32});
  const std::vector<float> want = dequantize_tensor(quantize_tensor(w, p, FormatId::kInt4), p).to_floats();
  const onnx::ModelProto stripped = strip_quantization(q.model, "test", nullptr);
  bool folded = false;
  for (const auto& init : stripped.graph().initializer()) {
    if (init.name() == dq->output(0)) {
      EXPECT_EQ(tensor_from_proto(init, "test").to_floats(), want);
      folded = true;
    }
  }
  EXPECT_TRUE(folded);
  const Session session = Session::from_model(model, "test");
  const NamedTensors inputs = random_inputs(session, 3);
  const auto ref = run_first_output(model, inputs);
  // int8 activations and 4-bit weights: a few percent of the output range, not more.
  EXPECT_LE(max_abs_diff(ref, run_first_output(q.model, inputs)), 0.15f * max_abs(ref));
}

// FP8: activations through a float8 QuantizeLinear with no zero point (output_dtype names the
// type, opset 21: ONNX Runtime's Clip/QuantizeLinear fusion throws on a float8 zero-point
// constant), weights stored as FP8 codes per output channel, bias float; ONNX Runtime runs it.
TEST(RewriteInsertQdq, Fp8UsesFloat8ZeroPointsAndStoredCodes) {
  const onnx::ModelProto model = testing::conv_chain(2);
  struct Case {
    const char* preset;
    int32_t type;
    float tolerance;  // of the output's largest magnitude
  };
  // E4M3 keeps 3 mantissa bits (a relative step of 2^-3 at worst), E5M2 2 (2^-2).
  for (const auto& [preset, type, tolerance] : {Case{"FP8E4M3", 17, 0.1f}, Case{"FP8E5M2", 19, 0.2f}}) {
    const Quantized q = quantize_with(model, *preset_config(preset));
    std::map<std::string, const onnx::TensorProto*> initializers;
    for (const auto& init : q.model.graph().initializer()) initializers[init.name()] = &init;
    size_t quantizers = 0, stored = 0;
    for (const auto& node : q.model.graph().node()) {
      if (node.op_type() == "QuantizeLinear") {
        ++quantizers;
        EXPECT_EQ(node.input_size(), 2) << node.name();
        ASSERT_EQ(node.attribute_size(), 1);
        EXPECT_EQ(node.attribute(0).name(), "output_dtype");
        EXPECT_EQ(node.attribute(0).i(), type);
      }
      if (node.op_type() == "DequantizeLinear" && initializers.contains(node.input(0))) {
        ++stored;
        EXPECT_EQ(initializers.at(node.input(0))->data_type(), type) << node.name();
      }
    }
    EXPECT_EQ(quantizers, 2u) << preset;
    EXPECT_EQ(stored, 2u) << preset;  // the weights; biases stay float
    const Session session = Session::from_model(model, "test");
    const NamedTensors inputs = random_inputs(session, 4);
    const auto ref = run_first_output(model, inputs);
    EXPECT_LE(max_abs_diff(ref, run_first_output(q.model, inputs)), tolerance * max_abs(ref)) << preset;
  }
}

// extra_options.MatMulNBits: the same 4-bit weights as ONNX Runtime's MatMulNBits. K = 40 is
// not a multiple of the block (32), so the last block is padded; int4 codes need no zero-point
// input (8 is MatMulNBits' default), asymmetric uint4 codes in blocks of 16 carry theirs. The
// outputs match the DequantizeLinear + MatMul form to float rounding.
TEST(RewriteMatMulNBits, FourBitMatMulWeightsBecomeMatMulNBits) {
  ModelBuilder b;
  b.add_input("x", onnx::TensorProto::FLOAT, {int64_t{3}, int64_t{40}})
      .add_output("y", onnx::TensorProto::FLOAT, {int64_t{3}, int64_t{8}})
      .add_initializer("w", {40, 8}, deterministic_values(320, 6))
      .add_node("MatMul", {"x", "w"}, {"y"}, {}, "mm");
  const onnx::ModelProto model = b.build();
  QuantConfig uint4 = *preset_config("A8W4");
  uint4.global.weight = TensorQuantSpec{.format = FormatId::kUInt4, .symmetric = false, .group_size = 16};
  for (const auto& [config, zero_points] : {std::pair{*preset_config("A8W4"), false}, std::pair{uint4, true}}) {
    const Quantized dq = quantize_with(model, config);
    QuantConfig nbits_config = config;
    nbits_config.extra.matmul_nbits = true;
    const Quantized nbits = quantize_with(model, nbits_config);
    EXPECT_EQ(nbits.summary.matmul_nbits, 1);
    const auto counts = op_counts(nbits.model);
    ASSERT_EQ(counts.count("MatMulNBits"), 1u);
    EXPECT_EQ(counts.count("MatMul"), 0u);
    EXPECT_EQ(counts.at("DequantizeLinear"), 1);  // the activation's pair only
    for (const auto& node : nbits.model.graph().node()) {
      if (node.op_type() != "MatMulNBits") continue;
      EXPECT_EQ(node.domain(), "com.microsoft");
      EXPECT_EQ(node.input_size(), zero_points ? 4 : 3);
      std::map<std::string, int64_t> attributes;
      for (const auto& a : node.attribute()) attributes[a.name()] = a.i();
      const int64_t block = config.global.weight->group_size.value();
      EXPECT_EQ(attributes, (std::map<std::string, int64_t>{{"K", 40}, {"N", 8}, {"bits", 4}, {"block_size", block}}));
    }
    const Session session = Session::from_model(model, "test");
    const NamedTensors inputs = random_inputs(session, 9);
    const auto want = run_first_output(dq.model, inputs);
    EXPECT_LE(max_abs_diff(want, run_first_output(nbits.model, inputs)), 1e-5f * max_abs(want) + 1e-6f);
  }
}

TEST(RewriteStrip, DequantizeOfQuantizeRecoversTheFloatGraph) {
  const onnx::ModelProto model = testing::conv_chain(3);
  for (const char* preset : {"A8W8", "BF16", "XINT8"}) {
    const Quantized q = quantize_with(model, *preset_config(preset));
    StripSummary summary;
    const onnx::ModelProto stripped = strip_quantization(q.model, "test", &summary);
    const auto counts = op_counts(stripped);
    EXPECT_EQ(counts.count("QuantizeLinear") + counts.count("DequantizeLinear") + counts.count("Cast"), 0u) << preset;
    EXPECT_EQ(counts.at("Conv"), 3) << preset;
    for (const auto& init : stripped.graph().initializer()) EXPECT_EQ(init.data_type(), onnx::TensorProto::FLOAT);
    const Session session = Session::from_model(model, "test");
    const NamedTensors inputs = random_inputs(session, 7);
    const auto ref = run_first_output(model, inputs);
    // Only the weights' rounding is left: well inside the quantized model's own error.
    EXPECT_LE(max_abs_diff(ref, run_first_output(stripped, inputs)), 0.03f * max_abs(ref) + 1e-3f) << preset;
  }
}

// A Quark-made model: Extended Q/DQ (com.amd.quark) on the activation, an Extended DQ of int8
// codes for the weight, a BFP node on the output. dequantize leaves the float MatMul with the
// weight folded back to (q - zp) * scale.
TEST(RewriteStrip, QuarkExtendedQdqAndBlockNodesStrip) {
  const onnx::ModelProto model = ModelBuilder()
                                     .add_input("x", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{2}})
                                     .add_output("y", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{2}})
                                     .add_initializer("s", {}, {0.5f})
                                     .add_initializer_i8("zp", {}, {0})
                                     .add_initializer_i8("w_q", {2, 2}, {2, -4, 6, 8})
                                     .add_node("ExtendedQuantizeLinear", {"x", "s", "zp"}, {"x_q"}, {}, "q", "com.amd.quark")
                                     .add_node("ExtendedDequantizeLinear", {"x_q", "s", "zp"}, {"x_dq"}, {}, "dq", "com.amd.quark")
                                     .add_node("ExtendedDequantizeLinear", {"w_q", "s", "zp"}, {"w"}, {}, "w_dq", "com.amd.quark")
                                     .add_node("MatMul", {"x_dq", "w"}, {"mm"}, {}, "mm")
                                     .add_node("BFPQuantizeDequantize", {"mm"}, {"y"}, {}, "fq", "com.amd.quark")
                                     .build();
  StripSummary summary;
  const onnx::ModelProto stripped = strip_quantization(model, "test", &summary);
  EXPECT_EQ(summary.qdq_pairs, 1);
  EXPECT_EQ(summary.block_nodes, 1);
  EXPECT_EQ(summary.folded_initializers, 1);
  const auto counts = op_counts(stripped);
  EXPECT_EQ(counts.size(), 1u);  // the MatMul alone, its output renamed to the graph's "y"
  EXPECT_EQ(counts.at("MatMul"), 1);
  EXPECT_EQ(stripped.graph().output(0).name(), "y");
  // [1, 2] x [[1, -2], [3, 4]] = [7, 6]
  EXPECT_EQ(run_first_output(stripped, {{"x", Tensor::from_floats({1, 2}, std::vector<float>{1.0f, 2.0f})}}),
            (std::vector<float>{7.0f, 6.0f}));
}

TEST(RewriteStrip, QdqAtGraphOutputKeepsTheOutputName) {
  QuantConfig config = *preset_config("A8W8");
  config.global.output_tensors = config.global.input_tensors;
  const Quantized q = quantize_with(testing::conv_chain(1), config);
  ASSERT_EQ(q.model.graph().output(0).name(), "output");
  const onnx::ModelProto stripped = strip_quantization(q.model, "test");
  EXPECT_EQ(stripped.graph().output(0).name(), "output");
  EXPECT_EQ(op_counts(stripped).count("QuantizeLinear"), 0u);
  Session::from_model(stripped, "test");
}

TEST(RewriteStrip, QOperatorModelIsUnsupported) {
  ModelBuilder b;
  b.add_input("x", onnx::TensorProto::UINT8, {int64_t{1}, int64_t{1}, int64_t{2}, int64_t{2}})
      .add_output("y", onnx::TensorProto::UINT8, {int64_t{1}, int64_t{1}, int64_t{2}, int64_t{2}})
      .add_initializer("s", {}, {0.1f})
      .add_initializer_u8("z", {}, {128})
      .add_initializer_i8("w", {1, 1, 1, 1}, {1})
      .add_node("QLinearConv", {"x", "s", "z", "w", "s", "z", "s", "z"}, {"y"}, {}, "qconv");
  try {
    strip_quantization(b.build(), "model.onnx");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
    EXPECT_NE(e.message().find("qconv"), std::string::npos) << e.what();
  }
}

TEST(RewriteInsertQdq, MissingStatisticsIsBadInput) {
  const onnx::ModelProto prepared = prepare_model(testing::conv_chain(1), {}, "test");
  const auto assignment = assign_layers(*preset_config("A8W8"), prepared, "test");
  EXPECT_THROW(quantize_model(prepared, assignment, CalibrationStats{}, {}, "test"), Error);
}

// The DequantizeLinear feeding input `index` of the node named `name`, or nullptr.
const onnx::NodeProto* dq_feeding(const onnx::ModelProto& model, const std::string& name, int index) {
  for (const onnx::NodeProto& n : model.graph().node()) {
    if (n.name() != name) continue;
    for (const onnx::NodeProto& p : model.graph().node()) {
      if (p.op_type() == "DequantizeLinear" && p.output(0) == n.input(index)) return &p;
    }
  }
  return nullptr;
}

size_t warnings_naming(const std::vector<std::string>& warnings, const std::string& node, const std::string& text) {
  return std::ranges::count_if(warnings, [&](const std::string& w) {
    return w.find("node '" + node + "'") != std::string::npos && w.find(text) != std::string::npos;
  });
}

TEST(RewriteInsertQdq, BiasThatWouldOverflowInt32RaisesItsChannelsWeightScaleWithAWarning) {
  // Conv over 2 output channels; channel 1's weights are all zero, so its per-channel scale is
  // kMinScale and 0.5 / (input scale x kMinScale) is far beyond int32 under A16W8: the channel's
  // weight scale is raised until the bias fits (its weights, zeros, stay zeros).
  ModelBuilder b;
  b.add_input("input", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{1}, int64_t{4}, int64_t{4}})
      .add_output("output", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{2}, int64_t{4}, int64_t{4}})
      .add_initializer("w", {2, 1, 1, 1}, {0.75f, 0.0f})
      .add_initializer("b", {2}, {0.1f, 0.5f})
      .add_node("Conv", {"input", "w", "b"}, {"output"}, {}, "zero_channel_conv");
  const onnx::ModelProto model = b.build();
  QuantConfig config = *preset_config("A16W8");
  config.global.weight->per_channel = true;
  std::vector<std::string> warnings;
  const LogSink previous = set_log_sink([&](LogLevel level, const std::string& message) {
    if (level == LogLevel::kWarning) warnings.push_back(message);
  });
  const Quantized q = quantize_with(model, config);
  set_log_sink(previous);
  EXPECT_EQ(warnings_naming(warnings, "zero_channel_conv", "1 weight channel scale(s) raised"), 1u)
      << (warnings.empty() ? "no warning" : warnings.front());
  const onnx::NodeProto* bias_dq = dq_feeding(q.model, "zero_channel_conv", 2);
  ASSERT_NE(bias_dq, nullptr) << "the bias is int32 codes, not float";

  const Session session = Session::from_model(model, "test");
  const NamedTensors inputs = random_inputs(session, 5);
  const auto got = run_first_output(q.model, inputs);
  // Channel 1 is its bias alone: 0.5 (it read back as 0.0152 when the codes saturated).
  for (size_t i = 16; i < 32; ++i) EXPECT_FLOAT_EQ(got[i], 0.5f) << i;
}

// Int16 activations and int16 weights make input scale x weight scale tiny (2^-30 for ranges
// of 1): a bias larger than about twice |x| |w| has no int32 code. Left float, ONNX Runtime
// quantizes it itself (WeightBiasQuantization, at its default optimization level) and the
// overflowing cast gives INT32_MIN: ppocr_cls measured 8.9 dB that way, 47.6 dB with the fit.
// Either with our int32 bias or with the bias kept float (Int32Bias off), the weight scale is
// raised and the model computes w x + b in ONNX Runtime. (The Conv feeds another quantized
// Conv, as in a network: a lone Conv whose output is the graph's was left alone by ONNX Runtime.)
TEST(RewriteInsertQdq, LargeBiasBetweenInt16OperandsRunsRightInOnnxRuntime) {
  ModelBuilder b;
  b.add_input("input", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{1}, int64_t{4}, int64_t{4}})
      .add_output("output", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{2}, int64_t{4}, int64_t{4}})
      .add_initializer("w", {2, 1, 1, 1}, {0.75f, 0.01f})
      .add_initializer("b", {2}, {0.1f, 5.0f})
      .add_initializer("w2", {2, 2, 1, 1}, {1.0f, 0.5f, -0.5f, 1.0f})
      .add_initializer("b2", {2}, {0.0f, 0.0f})
      .add_node("Conv", {"input", "w", "b"}, {"mid"}, {}, "big_bias_conv")
      .add_node("Conv", {"mid", "w2", "b2"}, {"output"}, {}, "next_conv");
  const onnx::ModelProto model = b.build();
  const Session session = Session::from_model(model, "test");
  const NamedTensors inputs = random_inputs(session, 7);
  const auto want = run_first_output(model, inputs);
  for (const bool int32_bias : {true, false}) {
    QuantConfig config = *preset_config("A16W8");
    config.global.weight->format = FormatId::kInt16;
    config.global.weight->per_channel = true;
    config.extra.int32_bias = int32_bias;
    std::vector<std::string> warnings;
    const LogSink previous = set_log_sink([&](LogLevel level, const std::string& message) {
      if (level == LogLevel::kWarning) warnings.push_back(message);
    });
    const Quantized q = quantize_with(model, config);
    set_log_sink(previous);
    EXPECT_EQ(warnings_naming(warnings, "big_bias_conv", "raised"), 1u) << int32_bias;
    EXPECT_EQ(dq_feeding(q.model, "big_bias_conv", 2) != nullptr, int32_bias);
    const auto got = run_first_output(q.model, inputs);
    ASSERT_EQ(got.size(), want.size());
    // int16 on both operands: the error is ~1e-4 of the ranges; a wrapped bias is off by 5.
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 2e-3) << int32_bias << " " << i;
  }
}

}  // namespace
}  // namespace mixprec
