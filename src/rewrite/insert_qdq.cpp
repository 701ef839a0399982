// insert_qdq: puts each node's operands into the formats its assignment names.
//
//   Before:  a → Conv(a, W, B) → y
//   After (integer formats):
//            a → QuantizeLinear(s_a, z_a) → DequantizeLinear → a'
//            W_q (int8 codes) → DequantizeLinear(s_w[, axis]) → W'
//            B_q (int32 codes, scale s_a·s_w) → DequantizeLinear → B'
//            Conv(a', W', B') → y
//   After (BF16/FP16):
//            a → Cast(to=bf16) → Cast(to=float) → a';  W_bf16 → Cast(to=float) → W'
//
// Activations: one pair per (tensor, format, parameters), shared by every consumer that asks
// for the same; the range comes from the calibration statistics through the spec's method.
// Weights and biases are float initializers quantized once, offline (per channel along the
// op's output-channel axis when the spec says per_channel). With Int32Bias a bias whose node
// has integer input and weight formats becomes int32 codes at input scale x weight scale.
// output_tensors specs put a pair after the node; a graph output keeps its name.
// Nodes are emitted in the original order with inserted nodes just before their consumer
// (or just after their producer for outputs), so the graph stays topologically sorted.
//
// OrtCpuFusion (QuantizeOptions::ort_cpu_fusion) places the pairs ONNX Runtime's CPU provider
// needs to fuse a group "DQ inputs -> op -> Q" into an integer kernel (its QDQ selectors: every
// consumer of the op's output must be that one Q, and the DQ/Q element types must agree):
//   Before (inputs only):  DQ -> Conv -> Sigmoid ...        Conv runs in float
//   After:                 DQ -> Conv -> Q -> DQ -> Sigmoid  QLinearConv, then float Sigmoid
//   - a quantized node of kOutputQuantizedOps gets a pair on its output with its input spec
//     (shared with every consumer that quantizes the tensor in the same format);
//   - when that output's only consumer is an unquantized Relu/Clip, the pair goes after the
//     Relu/Clip instead: ONNX Runtime drops a Relu/Clip whose range the Q already enforces;
//   - an unquantized data-movement op (kCodePreservingOps) reading a quantized output gets a
//     pair on its output with the same scale and zero point: ONNX Runtime then drops both
//     and runs the op on the 8-bit codes;
//   - a quantized Div by a constant becomes Mul by its reciprocal (QLinearMul exists, no
//     QLinearDiv); the tensor names stay, so calibration statistics still apply;
//   - a quantized Mul by a positive scalar constant c (hard-swish's "/ 6") is absorbed into the
//     scale of its input's codes: DequantizeLinear(x_q, s * c, z) is exactly
//     DequantizeLinear(x_q, s, z) * c, so the Mul, its requantization and the integer kernel
//     ONNX Runtime would run for it all go, and the result is exact rather than requantized.
#include "rewrite/insert_qdq.h"

#include <algorithm>
#include <map>
#include <optional>
#include <span>
#include <string_view>
#include <tuple>
#include <array>
#include <cmath>
#include <unordered_map>
#include <unordered_set>

#include "config/element_types.h"
#include "ir/graph_view.h"
#include "ir/node_builder.h"
#include "ir/op_traits.h"
#include "mixprec/error.h"
#include "mixprec/formats.h"
#include "mixprec/tensor_proto.h"
#include "rewrite/graph_edit.h"

namespace mixprec::rewrite {
namespace {

// Opsets the inserted nodes need (ONNX operator changelog).
constexpr int64_t kOpsetPerTensorQdq = 10;
constexpr int64_t kOpsetPerChannelQdq = 13;  // DequantizeLinear `axis`
constexpr int64_t kOpsetBFloat16Cast = 13;   // Cast to/from bfloat16
constexpr int64_t kOpsetFloat16Cast = 6;

struct ResolvedSpec {
  FormatId format = FormatId::kFloat32;
  QuantParams params;  // integer formats only

  bool is_integer() const { return format_traits(format).is_integer; }
};

std::string cast_suffix(FormatId format) { return format == FormatId::kBFloat16 ? "_bf16" : "_fp16"; }

using ir::OrtFusionGroup;

// OrtCpuFusion: the groups whose op becomes an integer kernel when its output goes through a Q.
bool quantizes_output(const onnx::NodeProto& node) {
  switch (ir::op_traits(node).ort_fusion) {
    case OrtFusionGroup::kConv: case OrtFusionGroup::kMatMul: case OrtFusionGroup::kGemm:
    case OrtFusionGroup::kBinary: case OrtFusionGroup::kVariadic: case OrtFusionGroup::kUnary:
      return true;
    default:
      return false;
  }
}

bool in_group(const onnx::NodeProto& node, OrtFusionGroup group) { return ir::op_traits(node).ort_fusion == group; }

bool is_op(const onnx::NodeProto& node, std::string_view op_type) {
  return ir::is_default_domain(node.domain()) && node.op_type() == op_type;
}

class Inserter {
 public:
  Inserter(onnx::ModelProto& model, const CalibrationStats& stats, const QuantizeOptions& options,
           const std::string& label, RewriteSummary& summary)
      : graph_(*model.mutable_graph()), stats_(stats), options_(options), label_(label),
        summary_(summary), names_(model) {
    for (const auto& init : graph_.initializer()) initializers_.emplace(init.name(), init);
    const ir::GraphView view(graph_, label);
    element_types_ = selection::infer_element_types(view);
  }

  void run(const std::vector<NodeAssignment>& assignment) {
    for (const auto& a : assignment) by_name_.emplace(a.node_name, &a);
    google::protobuf::RepeatedPtrField<onnx::NodeProto> original;
    original.Swap(graph_.mutable_node());
    for (const auto& node : original) {
      for (const std::string& input : node.input()) {
        if (!input.empty()) consumers_[input].push_back(&node);
      }
    }
    for (const auto& output : graph_.output()) graph_outputs_.insert(output.name());
    for (auto& node : original) {
      if (const LayerConfig* config = assigned_config(node)) {
        rewrite_node(node, *config);
      } else {
        emit_unquantized(node);
      }
    }
    for (auto& init : new_initializers_) *graph_.add_initializer() = std::move(init);
    remove_unread_dequantize();
    remove_unused(graph_);
  }

  int64_t required_opset() const { return required_opset_; }

 private:
  // A pair whose DequantizeLinear lost its only reader to an absorbed Mul keeps its Q (the
  // codes), not the DQ.
  void remove_unread_dequantize() {
    std::unordered_set<std::string> read(graph_outputs_.begin(), graph_outputs_.end());
    for (const auto& node : graph_.node()) read.insert(node.input().begin(), node.input().end());
    auto* nodes = graph_.mutable_node();
    for (int i = nodes->size() - 1; i >= 0; --i) {
      const onnx::NodeProto& node = nodes->Get(i);
      if (node.op_type() == "DequantizeLinear" && absorbed_inputs_.contains(node.output(0)) && !read.contains(node.output(0))) {
        nodes->DeleteSubrange(i, 1);
        --summary_.qdq_pairs;
      }
    }
  }

  void need_opset(int64_t opset) { required_opset_ = std::max(required_opset_, opset); }

  // The node's layer config; nullptr when the assignment keeps it in float.
  const LayerConfig* assigned_config(const onnx::NodeProto& node) const {
    const auto it = by_name_.find(node.name());
    return it == by_name_.end() || it->second->excluded ? nullptr : &it->second->config;
  }
  // The layer config of a node whose input tensors are in an integer format.
  const LayerConfig* integer_config(const onnx::NodeProto& node) const {
    const LayerConfig* config = assigned_config(node);
    return config && config->input_tensors && format_traits(config->input_tensors->format).is_integer ? config
                                                                                                       : nullptr;
  }

  // A node the assignment leaves in float. With OrtCpuFusion it may still get a pair on its
  // output: the Relu/Clip closing a quantized node's group, or a data-movement op that keeps
  // its input's codes.
  void emit_unquantized(onnx::NodeProto node) {
    std::vector<onnx::NodeProto> after;
    if (options_.ort_cpu_fusion && node.output_size() >= 1 && is_float_tensor(node.output(0))) {
      if (const auto closing = group_closers_.find(node.name()); closing != group_closers_.end()) {
        quantize_output(node, 0, resolve_activation(node.output(0), closing->second), &after);
      } else if (in_group(node, OrtFusionGroup::kDropQdq) && node.input_size() >= 1) {
        if (const auto input = quantized_outputs_.find(node.input(0)); input != quantized_outputs_.end()) {
          quantize_output(node, 0, input->second, &after);
        }
      }
    }
    *graph_.add_node() = std::move(node);
    for (auto& n : after) *graph_.add_node() = std::move(n);
  }

  // Renames output `o` of `node`, appends the pair that turns it back into the original name to
  // `after`, and records it so consumers quantizing the same tensor in the same format share it.
  void quantize_output(onnx::NodeProto& node, int o, const ResolvedSpec& spec, std::vector<onnx::NodeProto>* after) {
    const std::string output = node.output(o);
    const std::string pre = names_.fresh(output + "_prequant");
    node.set_output(o, pre);
    emit_pair(pre, spec, output, after);
    quantized_outputs_.emplace(output, spec);
  }

  // OrtCpuFusion: where the output Q of a quantized node goes. nullopt: on the output itself;
  // otherwise the name of the Relu/Clip after which it goes (recorded in group_closers_).
  std::optional<std::string> group_closer(const std::string& output) const {
    if (graph_outputs_.contains(output)) return std::nullopt;
    const auto it = consumers_.find(output);
    if (it == consumers_.end() || it->second.size() != 1) return std::nullopt;
    const onnx::NodeProto& consumer = *it->second.front();
    if (!in_group(consumer, OrtFusionGroup::kQuantizeClamp) || integer_config(consumer) != nullptr) return std::nullopt;
    if (consumer.output_size() < 1 || !is_float_tensor(consumer.output(0))) return std::nullopt;
    return consumer.name();
  }

  // OrtCpuFusion: a Div by a float constant (no zero, no Inf/NaN) becomes a Mul by the
  // reciprocal, which ONNX Runtime fuses (QLinearMul).
  void divide_by_multiplying(onnx::NodeProto& node) {
    if (!is_op(node, "Div") || node.input_size() != 2) return;
    if (!is_float_initializer(node, 1)) return;
    const Tensor divisor = tensor_from_proto(initializers_.at(node.input(1)), label_);
    std::vector<float> reciprocal = divisor.to_floats();
    for (float& v : reciprocal) {
      if (v == 0 || !std::isfinite(v)) return;
      v = 1.0f / v;
    }
    const std::string name = names_.fresh(node.input(1) + "_reciprocal");
    onnx::TensorProto proto = tensor_to_proto(Tensor::from_floats(divisor.shape(), reciprocal), name);
    initializers_.emplace(name, proto);
    new_initializers_.push_back(std::move(proto));
    node.set_op_type("Mul");
    node.set_input(1, name);
  }

  // Fills in what a spec leaves to the defaults and derives activation parameters.
  ResolvedSpec resolve_activation(const std::string& tensor, const TensorQuantSpec& spec) {
    ResolvedSpec out{spec.format, {}};
    const FormatTraits& traits = format_traits(spec.format);
    if (!traits.is_integer) return out;
    const bool symmetric = traits.power_of_two_scale || spec.symmetric.value_or(options_.activation_symmetric);
    const CalibMethod method = spec.calib_method.value_or(options_.calib_method);
    const TensorStats& stats = stats_for(tensor);
    RangeOptions range_options = options_.range;
    range_options.symmetric = symmetric;
    const Range range = compute_range(stats, method, spec.format, range_options);
    out.params = choose_params(spec.format, range.min, range.max,
                               {.symmetric = symmetric, .power_of_two = calib_method_traits(method).power_of_two});
    return out;
  }

  const TensorStats& stats_for(const std::string& tensor) {
    if (auto it = stats_.tensors.find(tensor); it != stats_.tensors.end()) return it->second;
    if (auto it = initializers_.find(tensor); it != initializers_.end()) {
      // A constant operand: its values are its statistics.
      StatsCollector collector;
      collector.update(tensor_from_proto(it->second, label_).to_floats());
      return constant_stats_.emplace(tensor, collector.stats()).first->second;
    }
    throw_bad_input(label_, "no calibration statistics for tensor '" + tensor +
                                "' (statistics of another model, or of the model before preparation?)");
  }

  // The spec activation `input` is read with under `wanted`: the pair an earlier quantized
  // output already went through when its format matches (reused: true), else a new one from
  // the statistics.
  std::pair<ResolvedSpec, bool> read_spec(const std::string& input, const TensorQuantSpec& wanted) {
    const auto shared = quantized_outputs_.find(input);
    if (shared != quantized_outputs_.end() && shared->second.format == wanted.format) return {shared->second, true};
    return {resolve_activation(input, wanted), false};
  }

  // OrtCpuFusion: a Mul of a quantized activation by a positive finite scalar constant becomes
  // a DequantizeLinear of the activation's codes at the scaled scale (see the header comment).
  // False (nothing emitted) when the node does not qualify.
  bool absorb_scale(const onnx::NodeProto& node, const LayerConfig& config) {
    if (!is_op(node, "Mul") || node.input_size() != 2 || node.output_size() != 1) {
      return false;
    }
    if (config.output_tensors || !config.input_tensors) return false;
    const int constant = is_float_initializer(node, 1) ? 1 : is_float_initializer(node, 0) ? 0 : -1;
    if (constant < 0 || is_float_initializer(node, 1 - constant)) return false;
    const Tensor c = tensor_from_proto(initializers_.at(node.input(constant)), label_);
    if (c.numel() != 1) return false;
    const float factor = c.to_floats()[0];
    if (!(factor > 0.0f) || !std::isfinite(factor)) return false;
    const std::string& x = node.input(1 - constant);
    if (!is_float_tensor(x)) return false;
    const auto [spec, reuse] = read_spec(x, *config.input_tensors);
    if (!spec.is_integer() || spec.params.scale.size() != 1) return false;
    const std::string dq = reuse ? x : activation_pair(x, spec);
    const auto codes = codes_of_.find(dq);
    if (codes == codes_of_.end()) return false;
    absorbed_inputs_.insert(dq);
    ResolvedSpec scaled = spec;
    scaled.params.scale[0] *= factor;
    const auto [scale, zero_point] = add_params(node.output(0), spec.format, scaled.params);
    *graph_.add_node() = ir::make_node({.op_type = "DequantizeLinear",
                                        .name = names_.fresh(node.name() + "_absorbed_DequantizeLinear"),
                                        .inputs = {codes->second, scale, zero_point},
                                        .outputs = {node.output(0)}});
    codes_of_.emplace(node.output(0), codes->second);
    quantized_outputs_.emplace(node.output(0), scaled);
    ++summary_.quantized_nodes;
    return true;
  }

  void rewrite_node(onnx::NodeProto node, const LayerConfig& config) {
    const bool fuse = options_.ort_cpu_fusion && integer_config(node) != nullptr;
    if (fuse) divide_by_multiplying(node);
    if (fuse && absorb_scale(node, config)) return;
    const ir::OpTraits& traits = ir::op_traits(node);
    const int weight_index = is_float_initializer(node, traits.config_weight_input()) ? traits.config_weight_input() : -1;
    const int bias_index = is_float_initializer(node, traits.config_bias_input()) ? traits.config_bias_input() : -1;
    std::optional<ResolvedSpec> input_spec, weight_spec;
    bool any_integer = false, any_bf16 = false, any_fp16 = false;
    auto note_format = [&](FormatId f) {
      any_integer = any_integer || format_traits(f).is_integer;
      any_bf16 = any_bf16 || f == FormatId::kBFloat16;
      any_fp16 = any_fp16 || f == FormatId::kFloat16;
    };

    for (int i = 0; i < node.input_size(); ++i) {
      const std::string& input = node.input(i);
      if (input.empty() || i == weight_index || i == bias_index) continue;
      if (!config.input_tensors || config.input_tensors->format == FormatId::kFloat32) continue;
      if (!is_float_tensor(input)) continue;
      const auto [spec, reuse] = read_spec(input, *config.input_tensors);
      if (!reuse) node.set_input(i, activation_pair(input, spec));
      if (!input_spec) input_spec = spec;  // the data input's parameters feed the bias scale
      note_format(spec.format);
    }
    if (weight_index >= 0 && config.weight && config.weight->format != FormatId::kFloat32) {
      const onnx::TensorProto& w = initializers_.at(node.input(weight_index));
      const int64_t axis = config.weight->ch_axis.value_or(ir::weight_channel_axis(traits, node, w.dims_size()));
      weight_spec = weight_operand(node, weight_index, *config.weight, axis);
      note_format(weight_spec->format);
    }
    // Int32Bias applies whenever input and weight are integer, whatever the bias spec says
    // (as in Quark); otherwise the bias spec decides.
    const bool int32_bias = options_.int32_bias && input_spec && input_spec->is_integer() && weight_spec &&
                            weight_spec->is_integer() && input_spec->params.scale.size() == 1;
    if (bias_index >= 0 && int32_bias) {
      int32_bias_operand(node, bias_index, *input_spec, *weight_spec);
    } else if (bias_index >= 0 && config.bias && config.bias->format != FormatId::kFloat32) {
      bias_operand(node, bias_index, *config.bias);
      note_format(config.bias->format);
    }
    std::vector<onnx::NodeProto> after;
    if (config.output_tensors && config.output_tensors->format != FormatId::kFloat32) {
      for (int o = 0; o < node.output_size(); ++o) {
        const std::string output = node.output(o);
        if (output.empty() || !is_float_tensor(output)) continue;
        const ResolvedSpec spec = resolve_activation(output, *config.output_tensors);
        const std::string pre = names_.fresh(output + "_prequant");
        node.set_output(o, pre);
        emit_pair(pre, spec, output, &after);
        note_format(spec.format);
      }
    } else if (fuse && quantizes_output(node)) {
      for (int o = 0; o < node.output_size(); ++o) {
        const std::string output = node.output(o);
        if (output.empty() || !is_float_tensor(output)) continue;
        if (const std::optional<std::string> closer = group_closer(output)) {
          group_closers_.emplace(*closer, *config.input_tensors);
          continue;
        }
        quantize_output(node, o, resolve_activation(output, *config.input_tensors), &after);
      }
    }
    *graph_.add_node() = node;
    for (auto& n : after) *graph_.add_node() = std::move(n);
    summary_.quantized_nodes += any_integer;
    summary_.bf16_nodes += any_bf16;
    summary_.fp16_nodes += any_fp16;
  }

  bool is_float_initializer(const onnx::NodeProto& node, int index) const {
    if (index < 0 || index >= node.input_size() || node.input(index).empty()) return false;
    auto it = initializers_.find(node.input(index));
    return it != initializers_.end() && it->second.data_type() == onnx::TensorProto::FLOAT;
  }

  // Activations are quantized only when they are float: declared or inferred float, or seen
  // as float32 by calibration. Tensors of another known type (int64 shapes, bool masks) pass
  // through; a tensor of unknown type without statistics is an error in resolve_activation.
  bool is_float_tensor(const std::string& name) const {
    if (stats_.tensors.count(name)) return true;
    auto it = element_types_.find(name);
    return it == element_types_.end() || it->second == onnx::TensorProto::FLOAT;
  }

  // The name of `tensor` as seen through the pair for `spec`, inserting the pair once.
  std::string activation_pair(const std::string& tensor, const ResolvedSpec& spec) {
    const auto key = std::make_tuple(tensor, spec.format, spec.params.scale, spec.params.zero_point);
    if (auto it = pairs_.find(key); it != pairs_.end()) return it->second;
    const std::string out = names_.fresh(tensor + (spec.is_integer() ? "_dq" : cast_suffix(spec.format)));
    std::vector<onnx::NodeProto> nodes;
    emit_pair(tensor, spec, out, &nodes);
    for (auto& n : nodes) *graph_.add_node() = std::move(n);
    pairs_.emplace(key, out);
    return out;
  }

  // Appends the nodes that take `in` through `spec` to `out`.
  void emit_pair(const std::string& in, const ResolvedSpec& spec, const std::string& out,
                 std::vector<onnx::NodeProto>* nodes) {
    if (!spec.is_integer()) {
      const std::string low = names_.fresh(in + cast_suffix(spec.format) + "_low");
      nodes->push_back(cast_node(in, low, dtype_to_onnx(format_traits(spec.format).storage)));
      nodes->push_back(cast_node(low, out, onnx::TensorProto::FLOAT));
      need_opset(spec.format == FormatId::kBFloat16 ? kOpsetBFloat16Cast : kOpsetFloat16Cast);
      ++summary_.cast_pairs;
      return;
    }
    const auto [scale, zero_point] = add_params(in, spec.format, spec.params);
    const std::string q = names_.fresh(in + "_q");
    codes_of_.emplace(out, q);
    nodes->push_back(ir::make_node({.op_type = "QuantizeLinear",
                                    .name = names_.fresh(in + "_QuantizeLinear"),
                                    .inputs = {in, scale, zero_point},
                                    .outputs = {q}}));
    nodes->push_back(ir::make_node({.op_type = "DequantizeLinear",
                                    .name = names_.fresh(in + "_DequantizeLinear"),
                                    .inputs = {q, scale, zero_point},
                                    .outputs = {out}}));
    need_opset(std::max(kOpsetPerTensorQdq, format_traits(spec.format).min_opset));
    ++summary_.qdq_pairs;
  }

  onnx::NodeProto cast_node(const std::string& in, const std::string& out, int32_t to) {
    return ir::make_node({.op_type = "Cast",
                          .name = names_.fresh(out + "_Cast"),
                          .inputs = {in},
                          .outputs = {out},
                          .attributes = {ir::make_int_attribute("to", to)}});
  }

  // Scale and zero-point initializers (scalars per tensor, 1-D per channel).
  std::pair<std::string, std::string> add_params(const std::string& base, FormatId format, const QuantParams& params) {
    const Shape shape = params.axis >= 0 ? Shape{static_cast<int64_t>(params.scale.size())} : Shape{};
    const std::string scale = names_.fresh(base + "_scale");
    new_initializers_.push_back(tensor_to_proto(Tensor::from_floats(shape, params.scale), scale));
    const DType storage = format_traits(format).storage;
    Tensor zp(storage, shape);
    for (size_t i = 0; i < params.zero_point.size(); ++i) store_code(zp, i, params.zero_point[i]);
    const std::string zero_point = names_.fresh(base + "_zero_point");
    new_initializers_.push_back(tensor_to_proto(zp, zero_point));
    return {scale, zero_point};
  }

  static void store_code(Tensor& t, size_t i, int32_t value) {
    switch (t.dtype()) {
      case DType::kInt8: t.as<int8_t>()[i] = static_cast<int8_t>(value); break;
      case DType::kUInt8: t.as<uint8_t>()[i] = static_cast<uint8_t>(value); break;
      case DType::kInt16: t.as<int16_t>()[i] = static_cast<int16_t>(value); break;
      case DType::kUInt16: t.as<uint16_t>()[i] = static_cast<uint16_t>(value); break;
      case DType::kInt32: t.as<int32_t>()[i] = value; break;
      default: throw Error(ErrorKind::kInternal, "", "zero point of a non-integer type");
    }
  }

  // Replaces a float weight initializer by its stored codes (or low-precision copy) and the
  // node that turns it back into float. Returns the weight's resolved spec.
  ResolvedSpec weight_operand(onnx::NodeProto& node, int index, const TensorQuantSpec& spec, int64_t axis) {
    const std::string name = node.input(index);
    const Tensor w = tensor_from_proto(initializers_.at(name), label_);
    const FormatTraits& traits = format_traits(spec.format);
    ResolvedSpec out{spec.format, {}};
    ++summary_.quantized_weights;
    if (!traits.is_integer) {
      node.set_input(index, stored_low_precision(name, w, spec.format));
      return out;
    }
    const bool symmetric = traits.power_of_two_scale || spec.symmetric.value_or(true);
    const ParamOptions param_options{.symmetric = symmetric};
    if (spec.per_channel && traits.per_channel_allowed) {
      if (axis < 0 || axis >= static_cast<int64_t>(w.shape().size())) {
        throw_bad_input(label_, "node '" + node.name() + "': weight channel axis " + std::to_string(axis) +
                                    " is outside its shape " + shape_to_string(w.shape()));
      }
      out.params = choose_weight_params(w, spec.format, axis, param_options);
      need_opset(kOpsetPerChannelQdq);
    } else {
      out.params = choose_weight_params(w, spec.format, -1, param_options);  // per tensor
    }
    node.set_input(index, stored_codes(name, quantize_tensor(w, out.params, spec.format), spec.format, out.params));
    return out;
  }

  // Bias codes at scale = input scale x weight scale (per output channel with a per-channel
  // weight), so an integer kernel adds them to its int32 accumulator unchanged.
  void int32_bias_operand(onnx::NodeProto& node, int index, const ResolvedSpec& input, const ResolvedSpec& weight) {
    const std::string name = node.input(index);
    const Tensor b = tensor_from_proto(initializers_.at(name), label_);
    ++summary_.quantized_weights;
    QuantParams params;
    params.axis = weight.params.axis >= 0 ? 0 : -1;
    for (float ws : weight.params.scale) params.scale.push_back(input.params.scale[0] * ws);
    params.zero_point.assign(params.scale.size(), 0);
    const std::string codes = names_.fresh(name + "_quantized");
    new_initializers_.push_back(tensor_to_proto(quantize_bias(b, params.scale), codes));
    const Shape shape = params.axis >= 0 ? Shape{static_cast<int64_t>(params.scale.size())} : Shape{};
    const std::string scale = names_.fresh(name + "_scale");
    new_initializers_.push_back(tensor_to_proto(Tensor::from_floats(shape, params.scale), scale));
    const std::string zero_point = names_.fresh(name + "_zero_point");
    new_initializers_.push_back(tensor_to_proto(Tensor(DType::kInt32, shape), zero_point));
    node.set_input(index, dequantize_node(codes, scale, zero_point, params.axis, name));
  }

  void bias_operand(onnx::NodeProto& node, int index, const TensorQuantSpec& spec) {
    const std::string name = node.input(index);
    const Tensor b = tensor_from_proto(initializers_.at(name), label_);
    ++summary_.quantized_weights;
    if (!format_traits(spec.format).is_integer) {
      node.set_input(index, stored_low_precision(name, b, spec.format));
      return;
    }
    const QuantParams params = choose_weight_params(b, spec.format, -1, {});  // per tensor
    node.set_input(index, stored_codes(name, quantize_tensor(b, params, spec.format), spec.format, params));
  }

  std::string stored_codes(const std::string& name, const Tensor& codes, FormatId format, const QuantParams& params) {
    const std::string stored = names_.fresh(name + "_quantized");
    new_initializers_.push_back(tensor_to_proto(codes, stored));
    const auto [scale, zero_point] = add_params(name, format, params);
    need_opset(std::max(kOpsetPerTensorQdq, format_traits(format).min_opset));
    return dequantize_node(stored, scale, zero_point, params.axis, name);
  }

  std::string dequantize_node(const std::string& codes, const std::string& scale, const std::string& zero_point,
                              int64_t axis, const std::string& base) {
    const std::string out = names_.fresh(base + "_dq");
    std::vector<onnx::AttributeProto> attributes;
    if (axis >= 0) {
      attributes.push_back(ir::make_int_attribute("axis", axis));
      need_opset(kOpsetPerChannelQdq);
    }
    *graph_.add_node() = ir::make_node({.op_type = "DequantizeLinear",
                                        .name = names_.fresh(base + "_DequantizeLinear"),
                                        .inputs = {codes, scale, zero_point},
                                        .outputs = {out},
                                        .attributes = std::move(attributes)});
    return out;
  }

  // A weight rounded once to bf16/fp16, stored at that precision, cast back to float.
  std::string stored_low_precision(const std::string& name, const Tensor& values, FormatId format) {
    const DType storage = format_traits(format).storage;
    Tensor low(storage, values.shape());
    const auto in = values.as<float>();
    auto bits = low.as<uint16_t>();
    for (size_t i = 0; i < bits.size(); ++i) {
      bits[i] = storage == DType::kBFloat16 ? float_to_bfloat16(in[i]) : float_to_half(in[i]);
    }
    const std::string stored = names_.fresh(name + cast_suffix(format));
    new_initializers_.push_back(tensor_to_proto(low, stored));
    const std::string out = names_.fresh(stored + "_float");
    *graph_.add_node() = cast_node(stored, out, onnx::TensorProto::FLOAT);
    need_opset(format == FormatId::kBFloat16 ? kOpsetBFloat16Cast : kOpsetFloat16Cast);
    return out;
  }

  onnx::GraphProto& graph_;
  const CalibrationStats& stats_;
  const QuantizeOptions& options_;
  const std::string& label_;
  RewriteSummary& summary_;
  ir::NameAllocator names_;
  std::unordered_map<std::string, onnx::TensorProto> initializers_;  // the original ones
  std::unordered_map<std::string, int32_t> element_types_;           // declared or inferred
  std::map<std::string, TensorStats> constant_stats_;
  std::map<std::tuple<std::string, FormatId, std::vector<float>, std::vector<int32_t>>, std::string> pairs_;
  // OrtCpuFusion state.
  std::unordered_map<std::string, const NodeAssignment*> by_name_;
  std::unordered_map<std::string, std::vector<const onnx::NodeProto*>> consumers_;  // original nodes
  std::unordered_set<std::string> graph_outputs_;
  std::unordered_map<std::string, ResolvedSpec> quantized_outputs_;  // tensor -> the pair it went through
  std::unordered_map<std::string, TensorQuantSpec> group_closers_;   // Relu/Clip node -> spec of its Q
  std::unordered_map<std::string, std::string> codes_of_;  // a pair's DQ output -> its Q output (the codes)
  std::unordered_set<std::string> absorbed_inputs_;        // DQ outputs an absorbed Mul read (see absorb_scale)
  std::vector<onnx::TensorProto> new_initializers_;
  int64_t required_opset_ = 0;
};

}  // namespace

int64_t insert_qdq(onnx::ModelProto& model, const std::vector<NodeAssignment>& assignment,
                   const CalibrationStats& stats, const QuantizeOptions& options, const std::string& label,
                   RewriteSummary& summary) {
  Inserter inserter(model, stats, options, label, summary);
  inserter.run(assignment);
  return inserter.required_opset();
}

}  // namespace mixprec::rewrite
