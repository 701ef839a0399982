// Graph rewrites: put a float model into the precisions a config assigns (Q/DQ pairs for
// integer formats, Cast pairs for BF16/FP16), fold BatchNormalization into Conv, and the
// inverse — strip any Q/DQ or Cast-pair quantization back to a float model.
//
// Every pass takes a const model and returns a new one; the input is never modified. The pass
// order of quantize_model() is one explicit list (src/rewrite/quantize_model.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "mixprec/algorithms.h"
#include "mixprec/calibration.h"
#include "mixprec/config.h"

namespace mixprec {

// Rank of a tensor of the model when known (used where an opset upgrade needs it).
using RankLookup = std::function<std::optional<int64_t>(const std::string&)>;

// Turns the main graph's Constant nodes into initializers (exporters emit weights that way),
// names every unnamed node, folds BatchNormalization into the Conv before it when
// `fold_batchnorm` is set (ConvertBNToConv), and then the per-channel Mul/Div/Add/Sub by
// constants that follow a Conv when `fold_affine` is set (FoldConvAffine), then equalizes the
// layers when `cle` is set (IncludeCLE / algo_config "cle": fold, then equalize), and last
// smooths the constant-weight MatMuls' activations when `smooth_quant` is set (one float pass
// through `channel_maxima`, which must then be given: kInternal otherwise).
// Calibration, configs and rewrites all work on the prepared model, so tensor and node names
// agree between them.
struct PrepareOptions {
  bool fold_batchnorm = true;
  bool fold_affine = false;  // per-channel Mul/Div/Add/Sub by constants after a Conv
  std::optional<CleSettings> cle;
  std::optional<SmoothQuantSettings> smooth_quant;  // needs prepare_model's channel_maxima
  std::vector<PassCall> passes;                     // added kFloat passes (config.h), last
};
// SmoothQuant's float pass: the channel maxima of `tensors` of the model prepared so far, on the
// calibration data (evaluation's smooth_quant_measurer binds a setup's); `samples` gets how many
// samples it ran.
using ChannelMaximaFn =
    std::function<ChannelMaxima(const onnx::ModelProto& model, const std::vector<std::string>& tensors, size_t& samples)>;
struct PrepareSummary {
  size_t constants_converted = 0;
  size_t named_nodes = 0;
  size_t folded_batchnorms = 0;
  size_t folded_affines = 0;  // Mul/Div/Add/Sub ops folded into a Conv
  std::optional<EqualizeSummary> cle;  // when CLE ran
  std::optional<SmoothQuantSummary> smooth_quant;  // when SmoothQuant ran
  std::vector<std::string> passes;  // each added pass run: "name (origin): 0.01 s"
};
// `model` is taken by value: pass std::move(model) when it is not needed afterwards (a 2 GB
// model is then rewritten in place instead of copied).
onnx::ModelProto prepare_model(onnx::ModelProto model, const PrepareOptions& options, const std::string& label,
                               PrepareSummary* summary = nullptr, const ChannelMaximaFn* channel_maxima = nullptr);
// The preparation a config asks for: ConvertBNToConv, FoldConvAffine and CLE.
PrepareOptions prepare_options(const QuantConfig& config);

struct QuantizeOptions {
  CalibMethod calib_method = CalibMethod::kMinMax;  // when a spec does not name one
  RangeOptions range;                               // percentile; symmetric comes from the spec
  bool activation_symmetric = true;                 // when a spec does not say
  bool unsigned_relu = false;                       // extra_options.UseUnsignedReLU (config.h)
  bool int32_bias = true;                           // bias = int32 at input scale x weight scale
  bool ort_cpu_fusion = false;                      // extra_options.OrtCpuFusion (config.h)
  bool matmul_nbits = false;                        // extra_options.MatMulNBits (config.h)
  std::vector<PassCall> passes;                     // added kQuantized passes (config.h), last
  // An activation's calibrated range times this factor before its parameters are chosen (the
  // scale search's 2^n, algorithms.h): a power-of-two scale stays one. By tensor name.
  std::map<std::string, float> activation_range_factors;
};

// The options a config's extra_options set (CalibMethod, ActivationSymmetric, Int32Bias,
// OrtCpuFusion); the percentile stays at its default.
QuantizeOptions quantize_options(const QuantConfig& config);

struct RewriteSummary {
  int64_t opset_from = 0;
  int64_t opset_to = 0;
  int64_t quantized_nodes = 0;    // nodes with at least one Q/DQ operand
  int64_t bf16_nodes = 0;         // nodes with at least one bf16 cast operand
  int64_t fp16_nodes = 0;
  int64_t block_nodes = 0;        // nodes with at least one BFP/MX operand
  int64_t qdq_pairs = 0;          // activation Q/DQ pairs inserted
  int64_t unsigned_relu_pairs = 0;  // of them, on relu-like outputs made asymmetric by UseUnsignedReLU
  int64_t cast_pairs = 0;         // activation cast pairs inserted
  int64_t block_ops = 0;          // activation BFP/MX fake-quantization nodes inserted
  int64_t added_format_ops = 0;   // nodes of a plugin's format (formats.h's add_format), activations and weights
  int64_t quantized_weights = 0;  // weight/bias initializers stored quantized (+DQ) or low precision (+Cast)
  int64_t matmul_nbits = 0;       // MatMuls with 4-bit weights made com.microsoft MatMulNBits
  std::vector<std::string> notes; // opset adaptations, skipped inputs and why
  // Body nodes (If/Loop/Scan, by path) left float although their config gives them an integer
  // format: calibration never saw their activations (no sample took that branch).
  std::vector<std::string> unobserved;
  // Conv/ConvTranspose/Gemm nodes with a float32 weight next to a quantized input, which ONNX
  // Runtime quantizes to int8 itself when it loads the model (src/rewrite/ort_weight_quantization.h);
  // quantize_model warns about them.
  std::vector<std::string> ort_quantized_weights;
};

// Rewrites a PREPARED float model (see prepare_model) so each node gets the formats of its
// assignment. Activation ranges come from `stats` (keyed by tensor name); weights and biases
// are quantized offline from their values. The default-domain opset is raised only as far as
// the formats used need (13 for per-channel Q/DQ and bfloat16 casts, 21 for 16-bit Q/DQ).
// Nodes inside If/Loop/Scan bodies are rewritten too (their pairs and stored weights live in
// the body). kBadInput when a main-graph activation has no statistics (stats of another model);
// a body node whose activations calibration never saw stays float (RewriteSummary::unobserved).
// `prepared` is taken by value, as prepare_model's input is.
onnx::ModelProto quantize_model(onnx::ModelProto prepared, const std::vector<NodeAssignment>& assignment,
                                const CalibrationStats& stats, const QuantizeOptions& options,
                                const std::string& label, const RankLookup& rank_of = {},
                                RewriteSummary* summary = nullptr);

// What the ViT MHA-MX9 pipeline did (mha-mx9; src/rewrite/mha_mx9.h has the steps).
struct MhaMx9Step {
  std::string name;                 // "split fused QKV", ...
  size_t edits = 0;                 // projections split, pairs stripped, operands wrapped, adds converted
  std::vector<std::string> nodes;   // what it changed (node labels)
  std::vector<std::string> notes;   // what it left, and why
};

struct MhaMx9Summary {
  std::vector<MhaMx9Step> steps;
  size_t attention_blocks = 0;      // P.V MatMuls found
  std::string opset_raised;         // "11 -> 13" when the bf16 casts needed a newer opset
};

// What vaip_patch changed; each count is nodes.
struct VaipPatchSummary {
  int64_t retagged = 0;             // com.microsoft Q/DQ now in the default domain
  std::vector<std::string> kept;    // "node: why" for Q/DQ left as they are (com.microsoft retagging, zero points)
  int64_t shift_bits_written = 0;   // BFP nodes given sub_block_shift_bits = 1 explicitly
  int64_t shape_attributes = 0;     // custom quant nodes given shape / data_type
  std::vector<std::string> no_shape;  // custom quant nodes no run observed (bodies)
  int64_t zero_points_fixed = 0;    // bf16/fp16 codes' zero-point initializers rewritten in their type
  std::vector<std::string> zero_point_fixes;  // "zp: FLOAT -> BFLOAT16 raw data (q, dq)"
  int64_t edits() const { return retagged + shift_bits_written + shape_attributes + zero_points_fixed; }
};

struct StripSummary {
  int64_t qdq_pairs = 0;          // activation Q→DQ pairs removed
  int64_t cast_pairs = 0;         // activation cast pairs removed
  int64_t block_nodes = 0;        // BFP/MX fake-quantization nodes removed
  int64_t folded_initializers = 0;// quantized / low-precision initializers turned back to float
  std::vector<std::string> notes;
};

// The float model inside a QDQ or cast-pair model (ours or another tool's): Q→DQ pairs and
// Cast-to-low→Cast-to-float pairs disappear, DequantizeLinear / Cast of initializers fold into
// float initializers. Custom-domain Q/DQ (com.microsoft; Quark's com.amd.quark Extended Q/DQ)
// are handled the same way, and Quark's BFP/MX fake-quantization nodes are removed. QOperator
// models (QLinearConv, ...) are kUnsupported naming the node.
onnx::ModelProto strip_quantization(const onnx::ModelProto& model, const std::string& label,
                                    StripSummary* summary = nullptr);

}  // namespace mixprec
