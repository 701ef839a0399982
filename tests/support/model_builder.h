// ModelBuilder: tiny ONNX models written in code, for unit tests (no binary blobs in the repo).
//
// Contract:
// - build() returns a self-contained ModelProto: ir_version 8, default-domain opset 17 unless
//   set otherwise, plus an opset import (version 1) for every other domain a node uses and no
//   opset() call declared.
// - Nodes added without a name are named "<op_type>_<node index>".
// - Initializers use the typed TensorProto fields (float_data, int64_data, int32_data).
// - Nothing is validated: tests of malformed models build them on purpose.
//
// The canned models below are valid for ONNX Runtime's CPU provider: every input and output
// has a declared element type and shape, weights are small deterministic values, and
// activations stay within a few units so int8 QDQ layers are meaningful.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <onnx/onnx_pb.h>

namespace mixprec::testing {

// A declared dimension: a number, a symbolic name ("N"), or "?" for a dimension with neither.
using DimSpec = std::variant<int64_t, std::string>;

onnx::AttributeProto attr_int(const std::string& name, int64_t value);
onnx::AttributeProto attr_float(const std::string& name, float value);
onnx::AttributeProto attr_string(const std::string& name, const std::string& value);
onnx::AttributeProto attr_ints(const std::string& name, const std::vector<int64_t>& values);
onnx::AttributeProto attr_floats(const std::string& name, const std::vector<float>& values);
onnx::AttributeProto attr_graph(const std::string& name, const onnx::GraphProto& graph);

// `count` values in [-scale, scale], a pure function of (count, seed): the same on every platform.
std::vector<float> deterministic_values(size_t count, uint32_t seed, float scale = 0.5f);

class ModelBuilder {
 public:
  // Sets (or replaces) the opset version of `domain` ("" = default domain).
  ModelBuilder& opset(int64_t version, const std::string& domain = "");
  ModelBuilder& ir_version(int64_t version);
  ModelBuilder& graph_name(const std::string& name);

  ModelBuilder& add_input(const std::string& name, int32_t elem_type, const std::vector<DimSpec>& dims);
  // An input whose rank is not declared.
  ModelBuilder& add_input(const std::string& name, int32_t elem_type);
  ModelBuilder& add_output(const std::string& name, int32_t elem_type, const std::vector<DimSpec>& dims);
  // An output whose rank is not declared.
  ModelBuilder& add_output(const std::string& name, int32_t elem_type);
  // A value_info entry (declared type of an intermediate value).
  ModelBuilder& add_value_info(const std::string& name, int32_t elem_type, const std::vector<DimSpec>& dims);

  ModelBuilder& add_initializer(const std::string& name, const std::vector<int64_t>& dims,
                                const std::vector<float>& values);
  ModelBuilder& add_initializer_i64(const std::string& name, const std::vector<int64_t>& dims,
                                    const std::vector<int64_t>& values);
  ModelBuilder& add_initializer_i32(const std::string& name, const std::vector<int64_t>& dims,
                                    const std::vector<int32_t>& values);
  ModelBuilder& add_initializer_i8(const std::string& name, const std::vector<int64_t>& dims,
                                   const std::vector<int8_t>& values);
  ModelBuilder& add_initializer_u8(const std::string& name, const std::vector<int64_t>& dims,
                                   const std::vector<uint8_t>& values);
  ModelBuilder& add_initializer(const onnx::TensorProto& tensor);

  ModelBuilder& add_node(const std::string& op_type, const std::vector<std::string>& inputs,
                         const std::vector<std::string>& outputs,
                         const std::vector<onnx::AttributeProto>& attributes = {}, const std::string& name = "",
                         const std::string& domain = "");

  // The graph alone (for If/Loop bodies via attr_graph).
  onnx::GraphProto build_graph() const;
  onnx::ModelProto build() const;

 private:
  onnx::GraphProto graph_;
  std::vector<std::pair<std::string, int64_t>> opsets_{{"", 17}};
  int64_t ir_version_ = 8;
};

// --- Canned models --------------------------------------------------------------------------

// How one layer of conv_chain() is expressed.
enum class LayerPrecision {
  kFloat,    // plain float Conv
  kQdqInt8,  // QuantizeLinear/DequantizeLinear (uint8 activation, int8 weight) before the Conv
  kCastBf16, // Cast-to-bfloat16 / Cast-to-float pairs on the activation and the weight
  kCastFp16, // the same with float16
};

// "input" [1, 3, 8, 8] float -> per layer i: Conv "conv_<i>" (3x3, pad 1, 4 output channels,
// bias) -> Relu "relu_<i>" -> ... -> "output" [1, 4, 8, 8]. Layer i's activation input is
// "x_<i>" (x_0 = "input"); Q/DQ and Cast nodes are named "conv_<i>/input_q", "conv_<i>/input_dq",
// "conv_<i>/weight_dq", "conv_<i>/input_cast", "conv_<i>/input_uncast", "conv_<i>/weight_cast",
// "conv_<i>/weight_uncast".
onnx::ModelProto conv_chain(const std::vector<LayerPrecision>& layers);
onnx::ModelProto conv_chain(int layers);      // every layer kFloat
onnx::ModelProto qdq_conv_chain(int layers);  // every layer kQdqInt8
onnx::ModelProto bf16_conv_chain(int layers); // every layer kCastBf16

// "input" [1, 16] float -> Gemm "fc" (transB, bias) -> Softmax "softmax" -> "probs" [1, classes].
onnx::ModelProto gemm_classifier(int64_t classes);

// "input" [1, 8] float -> per layer i: MatMul "matmul_<i>" (8x8 weight) -> Relu "relu_<i>" ->
// ... -> "output" [1, 8].
onnx::ModelProto matmul_chain(int layers);

// "input" [1, 4, 8] float -> `conv_layers` 1-D Convs "conv_<i>" (1x1, 4 channels) -> one
// self-attention block: MatMuls "proj_q/k/v" (8x8), Transpose, MatMul "qk", Softmax "softmax",
// MatMul "pv" -> ReduceMean "norm_mean" and Sub "norm_sub" (the start of a decomposed
// LayerNorm) -> "output" [1, 4, 8]. 5 MatMuls: a transformer with conv_layers <= 5, a hybrid above.
onnx::ModelProto attention_model(int conv_layers);

// "x" [1, 4] -> Q "q_in" (0.5, 128 u8) -> DQ "dq_in" -> MatMul "mm" (W codes int8 "wq" x 0.25 by
// DQ "dq_w") -> Q "q_out" (1.0, 128 u8) -> DQ "dq_out" -> "y" [1, 2]; W = [[1, -1], [2, 0], [0, 1],
// [-1, 2]]. Integer arithmetic with a standalone Q on its input and DQ on its output.
ModelBuilder edge_qdq_matmul();

// "input" [1, 3, 8, 8] -> Conv "trunk" -> Relu -> two heads: Conv "head_a" -> "out_a"
// [1, 2, 8, 8] and Conv "head_b" -> Sigmoid -> "out_b" [1, 1, 8, 8].
onnx::ModelProto multi_output_model();

// Inputs "boxes" [1, 8, 4] and "scores" [1, 1, 8] -> NonMaxSuppression "nms" (at most 3 boxes,
// IoU 0.5) -> "selected" [K, 3] int64, and the selected boxes "det_boxes" [K, 4] gathered from
// the input boxes.
onnx::ModelProto nms_detection_model();

// A block with one case of each OrtCpuFusion placement rule (the hard-swish of MobileNetV3 /
// PP-OCR after a Conv):
//   "x" [1, 3, 16, 16] -> Conv "c1" -> Relu "relu" -> Conv "c2" -> Add "hs/add" (+3)
//     -> Clip "hs/clip" (0, 6) -> Mul "hs/mul" (c2 out x clip) -> Div "hs/div" (/6)
//     -> MaxPool "pool" 2x2 -> Conv "c3" (1x1) -> "y" [1, 4, 8, 8]
onnx::ModelProto hardswish_block();

}  // namespace mixprec::testing
