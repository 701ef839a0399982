// What insert_qdq and place_for_ort_fusion both need to put a tensor through a format:
//   ActivationSpecs  the parameters an activation gets from its spec and the calibration
//                    statistics (a constant's values are its statistics), and which tensors
//                    are float;
//   PairWriter       the nodes and initializers of a pair: QuantizeLinear -> DequantizeLinear
//                    for integer formats, Cast(to low) -> Cast(to float) for bf16/fp16, one
//                    com.amd.quark BFPQuantizeDequantize / MXQuantizeDequantize for block
//                    formats, with fresh names, counted in the RewriteSummary, and the opset
//                    they need.
#pragma once

#include <memory>

#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <onnx/onnx_pb.h>

#include "ir/node_builder.h"
#include "mixprec/formats.h"
#include "mixprec/rewrite.h"

namespace mixprec::rewrite {

// Opsets the inserted nodes need (ONNX operator changelog).
inline constexpr int64_t kOpsetPerTensorQdq = 10;
inline constexpr int64_t kOpsetPerChannelQdq = 13;  // DequantizeLinear `axis`
inline constexpr int64_t kOpsetBlockedQdq = 21;     // DequantizeLinear `block_size`
inline constexpr int64_t kOpsetBFloat16Cast = 13;   // Cast to/from bfloat16
inline constexpr int64_t kOpsetFloat16Cast = 6;
// ONNX Runtime's WeightBiasQuantization (1.29; the older BiasQuantization did Conv and Gemm)
// gives a float Conv, ConvTranspose or Gemm bias between dequantized operands int32 codes through
// a Round node of the model's domain, whatever its opset: Round is opset 11. (Only where the op's
// output leads to a QuantizeLinear, through Relu/Clip at most; elsewhere the bias stays float.)
inline constexpr int64_t kOpsetOrtBiasQuantization = 11;
inline bool is_ort_bias_quantized(std::string_view op_type) {
  return op_type == "Conv" || op_type == "ConvTranspose" || op_type == "Gemm";
}
// Quark's operators for the block formats (runtime/quark_ops.h runs them), opset version 1.
inline constexpr const char* kQuarkOpsDomain = "com.amd.quark";

// A spec with the defaults filled in and, for integer formats, its scale and zero point; for
// block formats params.axis is the blocks' axis (the consumer's reduction axis).
struct ResolvedSpec {
  FormatId format = FormatId::kFloat32;
  QuantParams params;  // integer formats; the axis alone for block formats
  bool unsigned_relu = false;  // asymmetric because UseUnsignedReLU asked it of a relu-like output

  bool is_qdq() const { return format_traits(format).is_qdq; }
};

// What the graph says about an activation: the output of a bounded activation
// (ir::kBoundedOutput), of a relu-like node (ir::is_relu_like); QuantizeOptions::
// activation_range_factors' factor for it.
struct ActivationFacts {
  bool bounded = false;
  bool relu_like = false;
  float factor = 1.0f;
};

// The activation side of a graph as a pass sees it when it starts. Borrows its arguments.
class ActivationSpecs {
 public:
  // `graph`: the main graph; its bodies' tensors (If/Loop/Scan) are known too.
  ActivationSpecs(const onnx::GraphProto& graph, const CalibrationStats& stats, const QuantizeOptions& options,
                  const std::string& label);
  // The view from inside `body`, a subgraph of `outer`'s graph: its initializers, then outer's.
  ActivationSpecs(const onnx::GraphProto& body, const ActivationSpecs& outer);

  // `spec` for `tensor`: the range from the tensor's statistics (an initializer's values when
  // calibration did not see it) through the spec's method. kBadInput when there are neither.
  ResolvedSpec resolve(const std::string& tensor, const TensorQuantSpec& spec) const;
  // `spec` for a constant that is not (yet) in the graph.
  ResolvedSpec resolve_values(std::span<const float> values, const TensorQuantSpec& spec) const;

  // Activations are quantized only when they are float: declared or inferred float, or seen
  // as float32 by calibration. Tensors of another known type (int64 shapes, bool masks) pass
  // through; a tensor of unknown type without statistics is an error in resolve().
  bool is_float_tensor(const std::string& name) const;
  // Statistics or constant values to quantize `tensor` from.
  bool has_statistics(const std::string& tensor) const;
  // An initializer of the graph as it was when this was made; nullptr otherwise.
  const onnx::TensorProto* initializer(const std::string& name) const;
  bool is_float_initializer(const std::string& name) const;

 private:
  ResolvedSpec resolve_stats(const TensorStats& stats, const TensorQuantSpec& spec, const ActivationFacts& facts = {}) const;

  const CalibrationStats& stats_;
  const QuantizeOptions& options_;
  const std::string& label_;
  std::unordered_map<std::string, const onnx::TensorProto*> initializers_;
  const ActivationSpecs* outer_ = nullptr;  // a body's enclosing graph
  // Of the whole model (the main graph's specs own them, a body's borrow them).
  struct Model {
    std::unordered_map<std::string, int32_t> element_types;  // declared or inferred
    std::unordered_set<std::string> bounded;  // outputs of ops with ir::kBoundedOutput
    std::unordered_set<std::string> relu_like;  // outputs of ir::is_relu_like nodes
  };
  std::shared_ptr<const Model> model_;
  mutable std::map<std::string, TensorStats> constant_stats_;
};

// Writes pairs and their parameters into one model. New initializers are held until
// flush_initializers(), so pointers to the graph's initializers stay valid meanwhile.
class PairWriter {
 public:
  PairWriter(onnx::ModelProto& model, const std::string& label, RewriteSummary& summary);
  // Writes into `body`, a subgraph of `outer`'s graph, sharing its names, summary and opset.
  PairWriter(onnx::GraphProto& body, PairWriter& outer);
  PairWriter(const PairWriter&) = delete;  // bodies' writers point at their root
  PairWriter& operator=(const PairWriter&) = delete;

  ir::NameAllocator& names() { return root_->names_; }
  const std::string& label() const { return label_; }
  RewriteSummary& summary() { return summary_; }

  // Appends the nodes that take `in` through `spec` to `out` to `nodes` and counts the pair;
  // returns the codes (the QuantizeLinear's output), "" for a cast pair.
  std::string emit_pair(const std::string& in, const ResolvedSpec& spec, const std::string& out,
                        std::vector<onnx::NodeProto>& nodes);
  // A fresh name for the output of a pair on `tensor`: "<tensor>_dq", "<tensor>_bf16", ...
  std::string pair_output_name(const std::string& tensor, const ResolvedSpec& spec);
  // Scale and zero-point initializers "<base>_scale", "<base>_zero_point" (scalars per tensor,
  // 1-D per channel, the blocked shape of `tensor_shape` per block); returns their names. FP8
  // has no zero-point initializer (its name is ""; see qdq_inputs).
  std::pair<std::string, std::string> add_params(const std::string& base, FormatId format, const QuantParams& params,
                                                 const Shape& tensor_shape = {});
  onnx::NodeProto cast_node(const std::string& in, const std::string& out, int32_t to);

  void add_initializer(onnx::TensorProto tensor) { new_initializers_.push_back(std::move(tensor)); }
  void flush_initializers();

  void need_opset(int64_t opset) { root_->required_opset_ = std::max(root_->required_opset_, opset); }
  // The default-domain opset the written nodes need (in every graph).
  int64_t required_opset() const { return root_->required_opset_; }
  // Other domains the written nodes use (version 1 each).
  void need_domain(const std::string& domain) { root_->domains_.insert(domain); }
  const std::set<std::string>& required_domains() const { return root_->domains_; }

 private:
  onnx::GraphProto& graph_;
  const std::string& label_;
  RewriteSummary& summary_;
  PairWriter* root_;  // this, or the main graph's writer
  ir::NameAllocator names_;  // the root's only
  std::vector<onnx::TensorProto> new_initializers_;
  int64_t required_opset_ = 0;
  std::set<std::string> domains_;
};

// One com.amd.quark fake-quantization node taking `in` to `out` in `block`'s format, its blocks
// along `axis`, with every attribute written.
onnx::NodeProto block_node(const std::string& in, const std::string& out, const BlockFormat& block, int64_t axis,
                           const std::string& name);

// One node of an added format's op (formats.h's add_format) taking `in` to `out`.
onnx::NodeProto added_format_node(const std::string& in, const std::string& out, const AddedFormat& format,
                                  const std::string& name);

// "_bf16" or "_fp16": how names mark a low-precision copy.
std::string cast_suffix(FormatId format);
// A Q/DQ node's inputs: {x, scale, zero point}, or {x, scale} when the zero point is "" (FP8).
std::vector<std::string> qdq_inputs(const std::string& x, const std::string& scale, const std::string& zero_point);

}  // namespace mixprec::rewrite
