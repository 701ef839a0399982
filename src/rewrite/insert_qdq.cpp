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
//   After (block formats: BFP16, MX4/6/9, MXINT8, MXFP8/6/4):
//            a → com.amd.quark BFPQuantizeDequantize | MXQuantizeDequantize → a'
//            W' = W rounded offline to the format (float32 values on the format's grid)
//            blocks run along the product's reduction axis: channels for Conv inputs and
//            weights, the last axis of a MatMul's left operand, K of its weight; a bias keeps
//            float (it is added to the accumulator)
//
// Activations: one pair per (tensor, format, parameters), shared by every consumer that asks
// for the same; the range comes from the calibration statistics through the spec's method.
// Weights and biases are float initializers quantized once, offline (per channel along the
// op's output-channel axis when the spec says per_channel). With Int32Bias a bias whose node
// has integer input and weight formats becomes int32 codes at input scale x weight scale;
// where a code would overflow int32 the weight's scale is raised until it fits, with a warning
// naming the node (ONNX Runtime would otherwise quantize the float bias itself, and wrap).
// output_tensors specs put a pair after the node; a graph output keeps its name.
// Nodes are emitted in the original order with inserted nodes just before their consumer
// (or just after their producer for outputs), so the graph stays topologically sorted.
//
// Preconditions: a prepared model (mixprec::prepare_model) whose main graph is topologically
// sorted. Placement for a runtime's fusions is a later pass (place_for_ort_fusion).
#include "rewrite/insert_qdq.h"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "common/text.h"
#include "config/weight_grid.h"
#include "ir/graph_view.h"
#include "ir/node_builder.h"
#include "ir/op_traits.h"
#include "mixprec/error.h"
#include "mixprec/log.h"
#include "mixprec/formats.h"
#include "mixprec/tensor_proto.h"
#include "rewrite/graph_edit.h"
#include "rewrite/qdq_pairs.h"

namespace mixprec::rewrite {
namespace {

class Inserter {
 public:
  using ByPath = std::unordered_map<std::string, const NodeAssignment*>;

  Inserter(onnx::ModelProto& model, const CalibrationStats& stats, const QuantizeOptions& options,
           const std::string& label, RewriteSummary& summary)
      : graph_(*model.mutable_graph()), options_(options), label_(label), summary_(summary),
        specs_(graph_, stats, options, label), pairs_(model, label, summary) {}
  // A body of a node of `outer`'s graph; `scope` is the body's path ("If_3.then_branch").
  Inserter(onnx::GraphProto& body, Inserter& outer, std::string scope)
      : graph_(body), options_(outer.options_), label_(outer.label_), summary_(outer.summary_),
        specs_(body, outer.specs_), pairs_(body, outer.pairs_), scope_(std::move(scope)) {}

  void run(const std::vector<NodeAssignment>& assignment) {
    ByPath by_path;
    for (const auto& a : assignment) by_path.emplace(a.node_name, &a);
    run(by_path);
  }

  int64_t required_opset() const { return pairs_.required_opset(); }
  const std::set<std::string>& required_domains() const { return pairs_.required_domains(); }

 private:
  // Nodes are named by path (config/node_sites.h): their own name in the main graph.
  std::string path_of(const onnx::NodeProto& node) const {
    return scope_.empty() ? node.name() : scope_ + "/" + node.name();
  }

  void run(const ByPath& by_path) {
    google::protobuf::RepeatedPtrField<onnx::NodeProto> original;
    original.Swap(graph_.mutable_node());
    for (auto& node : original) {
      const std::string path = path_of(node);
      for (auto& attribute : *node.mutable_attribute()) {  // bodies first: they run inside the node
        if (attribute.has_g()) Inserter(*attribute.mutable_g(), *this, path + "." + attribute.name()).run(by_path);
        for (int k = 0; k < attribute.graphs_size(); ++k) {
          Inserter(*attribute.mutable_graphs(k), *this, path + "." + attribute.name() + "[" + std::to_string(k) + "]")
              .run(by_path);
        }
      }
      const auto it = by_path.find(path);
      if (it != by_path.end() && !it->second->excluded && observed(node, path, it->second->config)) {
        rewrite_node(std::move(node), it->second->config);
      } else {
        *graph_.add_node() = std::move(node);
      }
    }
    pairs_.flush_initializers();
    remove_unused(graph_);
  }

  // In a body, an activation calibration never saw (a branch no calibration sample took) leaves
  // the node float, with a note, where its config would quantize it to an integer format; in the
  // main graph the missing statistics are an error (resolve()).
  bool observed(const onnx::NodeProto& node, const std::string& path, const LayerConfig& config) {
    if (scope_.empty()) return true;
    const ir::OpTraits& traits = ir::op_traits(node);
    const auto integer = [](const std::optional<TensorQuantSpec>& spec) {
      return spec && format_traits(spec->format).is_qdq;
    };
    std::vector<std::string> missing;
    for (int i = 0; i < node.input_size() && integer(config.input_tensors); ++i) {
      const std::string& input = node.input(i);
      if (input.empty() || is_float_initializer(node, i) || i == traits.config_weight_input() ||
          i == traits.config_bias_input() || !specs_.is_float_tensor(input) || specs_.has_statistics(input)) {
        continue;
      }
      missing.push_back(input);
    }
    for (const std::string& output : node.output()) {
      if (integer(config.output_tensors) && !output.empty() && specs_.is_float_tensor(output) &&
          !specs_.has_statistics(output)) {
        missing.push_back(output);
      }
    }
    if (missing.empty()) return true;
    summary_.unobserved.push_back(path);
    return false;
  }

  void rewrite_node(onnx::NodeProto node, const LayerConfig& config) {
    const ir::OpTraits& traits = ir::op_traits(node);
    const int weight_index = is_float_initializer(node, traits.config_weight_input()) ? traits.config_weight_input() : -1;
    const int bias_index = is_float_initializer(node, traits.config_bias_input()) ? traits.config_bias_input() : -1;
    std::optional<ResolvedSpec> input_spec, weight_spec;
    bool any_integer = false, any_bf16 = false, any_fp16 = false, any_block = false;
    auto note_format = [&](FormatId f) {
      any_integer = any_integer || format_traits(f).is_qdq;
      any_block = any_block || format_traits(f).is_block;
      any_bf16 = any_bf16 || f == FormatId::kBFloat16;
      any_fp16 = any_fp16 || f == FormatId::kFloat16;
    };

    const auto extra_weight = [&](int i) {
      return ir::mask_has_input(traits.extra_weight_inputs, i) && is_float_initializer(node, i);
    };
    for (int i = 0; i < node.input_size(); ++i) {
      const std::string& input = node.input(i);
      if (input.empty() || i == weight_index || i == bias_index || (weight_index >= 0 && extra_weight(i))) continue;
      if (!config.input_tensors || config.input_tensors->format == FormatId::kFloat32) continue;
      if (!specs_.is_float_tensor(input)) continue;
      ResolvedSpec spec = specs_.resolve(input, *config.input_tensors);
      if (format_traits(spec.format).is_block) spec.params.axis = activation_block_axis(node, i);
      node.set_input(i, activation_pair(input, spec));
      if (!input_spec) input_spec = spec;  // the data input's parameters feed the bias scale
      note_format(spec.format);
    }
    // A bias that becomes int32 codes at input scale x weight scale: ours with Int32Bias, or
    // ONNX Runtime's when the bias stays float (its WeightBiasQuantization quantizes a float
    // Conv/ConvTranspose/Gemm bias between dequantized operands). Either way the codes must fit,
    // which the weight's scales are raised for.
    const bool bias_stays_float = !config.bias || config.bias->format == FormatId::kFloat32 ||
                                  format_traits(config.bias->format).is_block;
    const bool int32_bias_inputs = traits.extra_weight_inputs == 0 && bias_index >= 0 && input_spec &&
                                   has_integer_codes(input_spec->format) && input_spec->params.scale.size() == 1;
    const bool bias_limited = int32_bias_inputs && (options_.int32_bias || bias_stays_float);
    if (weight_index >= 0 && config.weight && config.weight->format != FormatId::kFloat32) {
      std::optional<BiasLimit> limit;
      if (bias_limited) limit = BiasLimit{node.input(bias_index), input_spec->params.scale[0]};
      weight_spec = weight_operand(node, weight_index, *config.weight, limit);
      note_format(weight_spec->format);
      for (int i = 0; i < node.input_size(); ++i) {
        if (extra_weight(i)) weight_operand(node, i, *config.weight);  // the grid's axis follows each one's rank
      }
    }
    // Int32Bias applies whenever input and weight have integer codes and the weight one scale
    // per output channel, whatever the bias spec says (as in Quark); otherwise the bias spec
    // decides. (Not a recurrent op's: its bias is added to each gate in float, not to one
    // accumulator; not FP8's, which accumulates in float; not a block-wise weight's, with
    // several scales per output channel.)
    const bool integer_operands = int32_bias_inputs && weight_spec && has_integer_codes(weight_spec->format);
    const bool int32_bias = options_.int32_bias && integer_operands && weight_spec->params.block_size == 0;
    if (int32_bias) {
      int32_bias_operand(node, bias_index, *input_spec, *weight_spec);
    } else if (bias_index >= 0 && !bias_stays_float) {
      bias_operand(node, bias_index, *config.bias);
      note_format(config.bias->format);
    } else if (integer_operands && is_ort_bias_quantized(node.op_type())) {
      pairs_.need_opset(kOpsetOrtBiasQuantization);  // the bias stays float: ONNX Runtime quantizes it
    }
    std::vector<onnx::NodeProto> after;
    if (config.output_tensors && config.output_tensors->format != FormatId::kFloat32) {
      for (int o = 0; o < node.output_size(); ++o) {
        const std::string output = node.output(o);
        if (output.empty() || !specs_.is_float_tensor(output)) continue;
        ResolvedSpec spec = specs_.resolve(output, *config.output_tensors);
        if (format_traits(spec.format).is_block) spec.params.axis = 1;  // the channels, as Quark
        const std::string pre = pairs_.names().fresh(output + "_prequant");
        node.set_output(o, pre);
        pairs_.emit_pair(pre, spec, output, after);
        note_format(spec.format);
      }
    }
    *graph_.add_node() = std::move(node);
    for (auto& n : after) *graph_.add_node() = std::move(n);
    summary_.quantized_nodes += any_integer;
    summary_.bf16_nodes += any_bf16;
    summary_.fp16_nodes += any_fp16;
    summary_.block_nodes += any_block;
  }

  bool is_float_initializer(const onnx::NodeProto& node, int index) const {
    return index >= 0 && index < node.input_size() && specs_.is_float_initializer(node.input(index));
  }

  // The axis a block format's blocks run along for input `index` of `node`: the reduction axis
  // of the product it feeds (a MatMul's left operand: its last axis; its right operand: the
  // second last; Gemm: by transA/transB; a recurrent op's inputs: the last), else the channels
  // (axis 1, as Quark).
  static int64_t activation_block_axis(const onnx::NodeProto& node, int index) {
    if (node.op_type() == "MatMul") return index == 0 ? -1 : -2;
    // A recurrent op's X [seq, batch, input] and states [dirs, batch, hidden] meet W and R
    // along their last axis.
    if (node.op_type() == "LSTM" || node.op_type() == "GRU" || node.op_type() == "RNN") return -1;
    if (node.op_type() == "Gemm" && index < 2) {
      const bool transposed = ir::int_attribute(node, index == 0 ? "transA" : "transB").value_or(0) != 0;
      return (index == 0) == transposed ? 0 : 1;
    }
    return 1;
  }

  // The name of `tensor` as seen through the pair for `spec`, inserting the pair once.
  std::string activation_pair(const std::string& tensor, const ResolvedSpec& spec) {
    const auto key = std::make_tuple(tensor, spec.format, spec.params.scale, spec.params.zero_point, spec.params.axis);
    if (auto it = shared_pairs_.find(key); it != shared_pairs_.end()) return it->second;
    const std::string out = pairs_.pair_output_name(tensor, spec);
    std::vector<onnx::NodeProto> nodes;
    pairs_.emit_pair(tensor, spec, out, nodes);
    for (auto& n : nodes) *graph_.add_node() = std::move(n);
    shared_pairs_.emplace(key, out);
    return out;
  }

  // A bias that will become int32 codes at input_scale x the weight's scales.
  struct BiasLimit {
    std::string bias;
    float input_scale = 0;
  };

  // Replaces a float weight initializer by its stored codes (or low-precision copy) and the
  // node that turns it back into float. Returns the weight's resolved spec. With `limit`, the
  // weight's integer scales are raised where the bias would overflow int32 codes.
  ResolvedSpec weight_operand(onnx::NodeProto& node, int index, const TensorQuantSpec& spec,
                              const std::optional<BiasLimit>& limit = std::nullopt) {
    const std::string name = node.input(index);
    const Tensor w = tensor_from_proto(*specs_.initializer(name), label_);
    ResolvedSpec out{spec.format, {}};
    ++summary_.quantized_weights;
    if (const AddedFormat* added = added_format(spec.format)) {
      if (added->weights) {  // the weight stays float; the plugin's op fake-quantizes it as it runs
        const std::string out_name = pairs_.names().fresh(name + "_" + added->name);
        *graph_.add_node() = added_format_node(name, out_name, *added, pairs_.names().fresh(name + "_" + added->op_type));
        pairs_.need_domain(added->domain);
        ++summary_.added_format_ops;
        node.set_input(index, out_name);
      }
      return out;
    }
    if (const BlockFormat* block = block_format(spec.format)) {
      node.set_input(index, stored_block_rounded(name, w, spec.format, *block, ir::weight_reduction_axis(node, static_cast<int64_t>(w.shape().size()))));
      return out;
    }
    if (!format_traits(spec.format).is_qdq) {
      node.set_input(index, stored_low_precision(name, w, spec.format));
      return out;
    }
    config::WeightGrid grid = config::weight_grid(node, spec, w, label_);
    if (grid.axis >= 0) pairs_.need_opset(kOpsetPerChannelQdq);
    if (limit && has_integer_codes(spec.format) && grid.params.block_size == 0) {
      fit_bias(node, *limit, spec.format, grid.params);
    }
    out.params = std::move(grid.params);
    node.set_input(index, stored_codes(name, quantize_tensor(w, out.params, spec.format), spec.format, out.params));
    return out;
  }

  void fit_bias(const onnx::NodeProto& node, const BiasLimit& limit, FormatId format, QuantParams& params) {
    const Tensor b = tensor_from_proto(*specs_.initializer(limit.bias), label_);
    if (params.scale.size() != 1 && static_cast<int64_t>(params.scale.size()) != b.numel()) return;
    const BiasFit fit = raise_weight_scales_for_bias(b, limit.input_scale, params.scale,
                                                     format_traits(format).power_of_two_scale);
    if (fit.raised == 0) return;
    const bool per_tensor = params.scale.size() == 1;
    const std::string what =
        per_tensor ? std::string("the per-tensor weight scale") : std::to_string(fit.raised) + " weight channel scale(s)";
    const std::string cost =
        per_tensor ? "every channel's weights are that much coarser; per-channel weights confine it to the channels "
                     "whose bias needs it"
                   : "those channels' weights are that much coarser: a large bias next to small weights";
    log_warning(label_ + ": node '" + node.name() + "': bias '" + limit.bias +
                "' overflows int32 codes at input scale x weight scale; " + what + " raised up to x" +
                text::fixed(fit.factor, 2) + " so it fits (" + cost + ")");
  }

  // Bias codes at scale = input scale x weight scale (per output channel with a per-channel
  // weight), so an integer kernel adds them to its int32 accumulator unchanged.
  void int32_bias_operand(onnx::NodeProto& node, int index, const ResolvedSpec& input, const ResolvedSpec& weight) {
    const std::string name = node.input(index);
    const Tensor b = tensor_from_proto(*specs_.initializer(name), label_);
    QuantParams params;
    params.axis = weight.params.axis >= 0 ? 0 : -1;
    for (float ws : weight.params.scale) params.scale.push_back(input.params.scale[0] * ws);
    if (const auto element = saturating_bias_element(b, params.scale)) {
      // Saturated codes would silently change the bias (0.5 read back as 0.0152): keep it exact.
      const size_t i = *element;
      // (fit_bias raised the weight scales so this cannot happen unless the scales stopped fitting.)
      log_warning(label_ + ": node '" + node.name() + "': bias '" + name + "' element " + std::to_string(i) + " (" +
                  std::to_string(b.to_floats()[i]) + ") overflows int32 at input scale x weight scale " +
                  std::to_string(params.scale[params.scale.size() == 1 ? 0 : i]) +
                  "; the bias stays float (ONNX Runtime may requantize it to int32 and wrap)");
      return;
    }
    ++summary_.quantized_weights;
    params.zero_point.assign(params.scale.size(), 0);
    const std::string codes = pairs_.names().fresh(name + "_quantized");
    pairs_.add_initializer(tensor_to_proto(quantize_bias(b, params.scale), codes));
    const Shape shape = params.axis >= 0 ? Shape{static_cast<int64_t>(params.scale.size())} : Shape{};
    const std::string scale = pairs_.names().fresh(name + "_scale");
    pairs_.add_initializer(tensor_to_proto(Tensor::from_floats(shape, params.scale), scale));
    const std::string zero_point = pairs_.names().fresh(name + "_zero_point");
    pairs_.add_initializer(tensor_to_proto(Tensor(DType::kInt32, shape), zero_point));
    node.set_input(index, dequantize_node(codes, scale, zero_point, params.axis, name));
  }

  void bias_operand(onnx::NodeProto& node, int index, const TensorQuantSpec& spec) {
    const std::string name = node.input(index);
    const Tensor b = tensor_from_proto(*specs_.initializer(name), label_);
    ++summary_.quantized_weights;
    if (!format_traits(spec.format).is_qdq) {
      node.set_input(index, stored_low_precision(name, b, spec.format));
      return;
    }
    const QuantParams params = choose_weight_params(b, spec.format, -1, {});  // per tensor
    node.set_input(index, stored_codes(name, quantize_tensor(b, params, spec.format), spec.format, params));
  }

  std::string stored_codes(const std::string& name, const Tensor& codes, FormatId format, const QuantParams& params) {
    const std::string stored = pairs_.names().fresh(name + "_quantized");
    pairs_.add_initializer(tensor_to_proto(codes, stored));
    const auto [scale, zero_point] = pairs_.add_params(name, format, params, codes.shape());
    pairs_.need_opset(std::max(kOpsetPerTensorQdq, format_traits(format).min_opset));
    return dequantize_node(stored, scale, zero_point, params.axis, name, params.block_size);
  }

  std::string dequantize_node(const std::string& codes, const std::string& scale, const std::string& zero_point,
                              int64_t axis, const std::string& base, int64_t block_size = 0) {
    const std::string out = pairs_.names().fresh(base + "_dq");
    std::vector<onnx::AttributeProto> attributes;
    if (axis >= 0) {
      attributes.push_back(ir::make_int_attribute("axis", axis));
      pairs_.need_opset(kOpsetPerChannelQdq);
    }
    if (block_size > 0) {
      attributes.push_back(ir::make_int_attribute("block_size", block_size));
      pairs_.need_opset(kOpsetBlockedQdq);
    }
    *graph_.add_node() = ir::make_node({.op_type = "DequantizeLinear",
                                        .name = pairs_.names().fresh(base + "_DequantizeLinear"),
                                        .inputs = qdq_inputs(codes, scale, zero_point),
                                        .outputs = {out},
                                        .attributes = std::move(attributes)});
    return out;
  }

  // A weight rounded once to a block format along `axis`, stored as float32 (no node: the
  // values are already on the format's grid, where a block node would leave them).
  std::string stored_block_rounded(const std::string& name, const Tensor& values, FormatId format,
                                   const BlockFormat& block, int64_t axis) {
    std::vector<float> rounded = values.to_floats();
    fake_quantize_blocks(block, rounded, values.shape(), axis, rounded);
    const std::string stored = pairs_.names().fresh(name + "_" + format_traits(format).name);
    pairs_.add_initializer(tensor_to_proto(Tensor::from_floats(values.shape(), rounded), stored));
    return stored;
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
    const std::string stored = pairs_.names().fresh(name + cast_suffix(format));
    pairs_.add_initializer(tensor_to_proto(low, stored));
    const std::string out = pairs_.names().fresh(stored + "_float");
    *graph_.add_node() = pairs_.cast_node(stored, out, onnx::TensorProto::FLOAT);
    pairs_.need_opset(format == FormatId::kBFloat16 ? kOpsetBFloat16Cast : kOpsetFloat16Cast);
    return out;
  }

  onnx::GraphProto& graph_;
  const QuantizeOptions& options_;
  const std::string& label_;
  RewriteSummary& summary_;
  const ActivationSpecs specs_;
  PairWriter pairs_;
  std::map<std::tuple<std::string, FormatId, std::vector<float>, std::vector<int32_t>, int64_t>, std::string> shared_pairs_;
  std::string scope_;  // "" for the main graph
};

}  // namespace

int64_t insert_qdq(onnx::ModelProto& model, const std::vector<NodeAssignment>& assignment,
                   const CalibrationStats& stats, const QuantizeOptions& options, const std::string& label,
                   RewriteSummary& summary) {
  Inserter inserter(model, stats, options, label, summary);
  inserter.run(assignment);
  for (const std::string& domain : inserter.required_domains()) {
    const auto& imports = model.opset_import();
    if (std::none_of(imports.begin(), imports.end(), [&](const auto& o) { return o.domain() == domain; })) {
      auto& opset = *model.add_opset_import();
      opset.set_domain(domain);
      opset.set_version(1);
    }
  }
  return inserter.required_opset();
}

}  // namespace mixprec::rewrite
