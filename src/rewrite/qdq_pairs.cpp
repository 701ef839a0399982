#include "rewrite/qdq_pairs.h"

#include <algorithm>

#include "config/element_types.h"
#include "ir/constant_inputs.h"
#include "ir/graph_view.h"
#include "ir/op_traits.h"
#include "mixprec/error.h"
#include "mixprec/tensor_proto.h"
#include "rewrite/graph_edit.h"

namespace mixprec::rewrite {
namespace {

void store_code(Tensor& t, size_t i, int32_t value) {
  switch (t.dtype()) {
    case DType::kInt8: t.as<int8_t>()[i] = static_cast<int8_t>(value); break;
    case DType::kUInt8: t.as<uint8_t>()[i] = static_cast<uint8_t>(value); break;
    case DType::kInt16: t.as<int16_t>()[i] = static_cast<int16_t>(value); break;
    case DType::kUInt16: t.as<uint16_t>()[i] = static_cast<uint16_t>(value); break;
    case DType::kInt32: t.as<int32_t>()[i] = value; break;
    case DType::kInt4: t.as<int8_t>()[i] = static_cast<int8_t>(value); break;
    case DType::kUInt4: t.as<uint8_t>()[i] = static_cast<uint8_t>(value); break;
    default: throw Error(ErrorKind::kInternal, "", "zero point of a non-integer type");
  }
}

}  // namespace

std::string cast_suffix(FormatId format) { return format == FormatId::kBFloat16 ? "_bf16" : "_fp16"; }

std::vector<std::string> qdq_inputs(const std::string& x, const std::string& scale, const std::string& zero_point) {
  if (zero_point.empty()) return {x, scale};
  return {x, scale, zero_point};
}

// --- ActivationSpecs -------------------------------------------------------------------------

ActivationSpecs::ActivationSpecs(const onnx::GraphProto& graph, const CalibrationStats& stats,
                                 const QuantizeOptions& options, const std::string& label)
    : stats_(stats), options_(options), label_(label), initializers_(index_initializers(graph)) {
  const ir::GraphView view(graph, label);
  auto model = std::make_shared<Model>();
  model->element_types = selection::infer_nested_element_types(view);
  for (const ir::NodeRef& ref : view.nested_nodes()) {
    const onnx::NodeProto& node = ref.node();
    if (node.output_size() == 0) continue;
    if ((ir::op_traits(node).flags & ir::kBoundedOutput) != 0) model->bounded.insert(node.output(0));
    // Read only when asked for: a Clip's bound is decoded to tell.
    if (options.unsigned_relu && ir::is_relu_like(*ref.graph, node, label)) model->relu_like.insert(node.output(0));
  }
  model_ = std::move(model);
}

ActivationSpecs::ActivationSpecs(const onnx::GraphProto& body, const ActivationSpecs& outer)
    : stats_(outer.stats_), options_(outer.options_), label_(outer.label_), initializers_(index_initializers(body)),
      outer_(&outer), model_(outer.model_) {}

ResolvedSpec ActivationSpecs::resolve(const std::string& tensor, const TensorQuantSpec& spec) const {
  if (!format_traits(spec.format).is_qdq) return {spec.format, {}};
  if (const auto it = stats_.tensors.find(tensor); it != stats_.tensors.end()) {
    const auto factor = options_.activation_range_factors.find(tensor);
    return resolve_stats(it->second, spec,
                         {.bounded = model_->bounded.contains(tensor),
                          .relu_like = model_->relu_like.contains(tensor),
                          .factor = factor == options_.activation_range_factors.end() ? 1.0f : factor->second});
  }
  if (const auto it = constant_stats_.find(tensor); it != constant_stats_.end()) return resolve_stats(it->second, spec);
  const onnx::TensorProto* constant = initializer(tensor);
  if (constant == nullptr) {
    throw_bad_input(label_, "no calibration statistics for tensor '" + tensor +
                                "' (statistics of another model, or of the model before preparation?)");
  }
  StatsCollector collector;
  collector.update(tensor_from_proto(*constant, label_).to_floats());
  return resolve_stats(constant_stats_.emplace(tensor, collector.stats()).first->second, spec);
}

ResolvedSpec ActivationSpecs::resolve_values(std::span<const float> values, const TensorQuantSpec& spec) const {
  StatsCollector collector;
  collector.update(values);
  return resolve_stats(collector.stats(), spec);
}

ResolvedSpec ActivationSpecs::resolve_stats(const TensorStats& stats, const TensorQuantSpec& spec,
                                            const ActivationFacts& facts) const {
  ResolvedSpec out{spec.format, {}};
  const FormatTraits& traits = format_traits(spec.format);
  if (!traits.is_qdq) return out;
  if (spec.group_size) {
    throw_bad_input(label_, "params.group_size is a weight option: an activation's " + std::string(traits.spec_name) +
                                " has one scale per tensor");
  }
  bool symmetric = traits.power_of_two_scale || spec.symmetric.value_or(options_.activation_symmetric);
  // UseUnsignedReLU: a relu-like output's codes all go to [0, max] (integer codes only: FP8's
  // zero point is 0). Power-of-two scales stay powers of two, the zero point at qmin.
  if (options_.unsigned_relu && facts.relu_like && symmetric && has_integer_codes(spec.format)) {
    symmetric = false;
    out.unsigned_relu = true;
  }
  const CalibMethod method = spec.calib_method.value_or(options_.calib_method);
  RangeOptions range_options = options_.range;
  range_options.symmetric = symmetric;
  Range range = compute_range(stats, method, spec.format, range_options);
  if (facts.bounded && calib_method_traits(method).keeps_bounded_range) {
    // A bounded activation (an SE gate's HardSigmoid, a Softmax) has no outliers to cut: a
    // method that clips by the histogram's shape (Entropy cut SE gates to 0.15-0.34 of their
    // 0..1 and collapsed the classifier) keeps at least the range the data shows.
    range.min = std::min(range.min, stats.min);
    range.max = std::max(range.max, stats.max);
  }
  range.min *= facts.factor;
  range.max *= facts.factor;
  out.params = choose_params(spec.format, range.min, range.max,
                             {.symmetric = symmetric, .power_of_two = calib_method_traits(method).power_of_two});
  return out;
}

bool ActivationSpecs::is_float_tensor(const std::string& name) const {
  if (stats_.tensors.count(name)) return true;
  const auto it = model_->element_types.find(name);
  return it == model_->element_types.end() || it->second == onnx::TensorProto::FLOAT;
}

bool ActivationSpecs::has_statistics(const std::string& tensor) const {
  return stats_.tensors.contains(tensor) || initializer(tensor) != nullptr;
}

const onnx::TensorProto* ActivationSpecs::initializer(const std::string& name) const {
  const auto it = initializers_.find(name);
  if (it != initializers_.end()) return it->second;
  return outer_ ? outer_->initializer(name) : nullptr;
}

bool ActivationSpecs::is_float_initializer(const std::string& name) const {
  const onnx::TensorProto* tensor = name.empty() ? nullptr : initializer(name);
  return tensor != nullptr && tensor->data_type() == onnx::TensorProto::FLOAT;
}

// --- PairWriter ------------------------------------------------------------------------------

PairWriter::PairWriter(onnx::ModelProto& model, const std::string& label, RewriteSummary& summary)
    : graph_(*model.mutable_graph()), label_(label), summary_(summary), root_(this), names_(model) {}

PairWriter::PairWriter(onnx::GraphProto& body, PairWriter& outer)
    : graph_(body), label_(outer.label_), summary_(outer.summary_), root_(outer.root_) {}

std::string PairWriter::emit_pair(const std::string& in, const ResolvedSpec& spec, const std::string& out,
                                  std::vector<onnx::NodeProto>& nodes) {
  if (const AddedFormat* added = added_format(spec.format)) {
    nodes.push_back(added_format_node(in, out, *added, names().fresh(in + "_" + added->name)));
    need_domain(added->domain);
    ++summary_.added_format_ops;
    return "";
  }
  if (const BlockFormat* block = block_format(spec.format)) {
    nodes.push_back(block_node(in, out, *block, spec.params.axis, names().fresh(in + "_" + format_traits(spec.format).name)));
    need_domain(kQuarkOpsDomain);
    ++summary_.block_ops;
    return "";
  }
  if (!spec.is_qdq()) {
    const std::string low = names().fresh(in + cast_suffix(spec.format) + "_low");
    nodes.push_back(cast_node(in, low, dtype_to_onnx(format_traits(spec.format).storage)));
    nodes.push_back(cast_node(low, out, onnx::TensorProto::FLOAT));
    need_opset(spec.format == FormatId::kBFloat16 ? kOpsetBFloat16Cast : kOpsetFloat16Cast);
    ++summary_.cast_pairs;
    return "";
  }
  const auto [scale, zero_point] = add_params(in, spec.format, spec.params);
  const std::string q = names().fresh(in + "_q");
  std::vector<onnx::AttributeProto> attributes;
  if (zero_point.empty()) {  // FP8: the type from opset 21's output_dtype (add_params says why)
    attributes.push_back(ir::make_int_attribute("output_dtype", dtype_to_onnx(format_traits(spec.format).storage)));
  }
  nodes.push_back(ir::make_node({.op_type = "QuantizeLinear",
                                 .name = names().fresh(in + "_QuantizeLinear"),
                                 .inputs = qdq_inputs(in, scale, zero_point),
                                 .outputs = {q},
                                 .attributes = std::move(attributes)}));
  nodes.push_back(ir::make_node({.op_type = "DequantizeLinear",
                                 .name = names().fresh(in + "_DequantizeLinear"),
                                 .inputs = qdq_inputs(q, scale, zero_point),
                                 .outputs = {out}}));
  need_opset(std::max(kOpsetPerTensorQdq, format_traits(spec.format).min_opset));
  ++summary_.qdq_pairs;
  if (spec.unsigned_relu) ++summary_.unsigned_relu_pairs;
  return q;
}

std::string PairWriter::pair_output_name(const std::string& tensor, const ResolvedSpec& spec) {
  if (format_traits(spec.format).is_block) return names().fresh(tensor + "_" + format_traits(spec.format).name + "_fq");
  return names().fresh(tensor + (spec.is_qdq() ? "_dq" : cast_suffix(spec.format)));
}

onnx::NodeProto block_node(const std::string& in, const std::string& out, const BlockFormat& block, int64_t axis,
                           const std::string& name) {
  std::vector<onnx::AttributeProto> attributes;
  const auto integer = [&](const char* key, int64_t value) { attributes.push_back(ir::make_int_attribute(key, value)); };
  const auto text = [&](const char* key, const std::string& value) {
    attributes.push_back(ir::make_string_attribute(key, value));
  };
  if (block.mx) {
    text("element_dtype", mx_element_traits(block.mx_spec.element).name);
    integer("axis", axis);
    integer("block_size", block.mx_spec.block_size);
    integer("rounding_mode", static_cast<int64_t>(block.mx_spec.rounding));
  } else {
    const BfpSpec& bfp = block.bfp;
    text("bfp_method", bfp.method == BfpMethod::kBfp ? "to_bfp" : "to_bfp_prime");
    integer("axis", axis);
    integer("bit_width", bfp.bit_width);
    integer("block_size", bfp.block_size);
    integer("rounding_mode", static_cast<int64_t>(bfp.rounding));
    // Written even where Quark's defaults would give them: VAIP's patching expects them.
    integer("sub_block_size", bfp.sub_block_size);
    integer("sub_block_shift_bits", bfp.sub_block_shift_bits);
    integer("convert_to_bfloat_before_bfp", bfp.round_to_bfloat16_first ? 1 : 0);
  }
  return ir::make_node({.op_type = block.mx ? "MXQuantizeDequantize" : "BFPQuantizeDequantize",
                        .domain = kQuarkOpsDomain,
                        .name = name,
                        .inputs = {in},
                        .outputs = {out},
                        .attributes = std::move(attributes)});
}

onnx::NodeProto added_format_node(const std::string& in, const std::string& out, const AddedFormat& format,
                                  const std::string& name) {
  std::vector<onnx::AttributeProto> attributes;
  for (const AddedFormatAttribute& a : format.attributes) {
    switch (a.kind) {
      case AddedFormatAttribute::Kind::kInt: attributes.push_back(ir::make_int_attribute(a.name, a.i)); break;
      case AddedFormatAttribute::Kind::kFloat: attributes.push_back(ir::make_float_attribute(a.name, a.f)); break;
      case AddedFormatAttribute::Kind::kString: attributes.push_back(ir::make_string_attribute(a.name, a.s)); break;
    }
  }
  return ir::make_node({.op_type = format.op_type,
                        .domain = format.domain,
                        .name = name,
                        .inputs = {in},
                        .outputs = {out},
                        .attributes = std::move(attributes)});
}

std::pair<std::string, std::string> PairWriter::add_params(const std::string& base, FormatId format,
                                                           const QuantParams& params, const Shape& tensor_shape) {
  const Shape shape = param_shape(params, tensor_shape);
  const std::string scale = names().fresh(base + "_scale");
  add_initializer(tensor_to_proto(Tensor::from_floats(shape, params.scale), scale));
  // FP8's zero point is always 0 and is left out: ONNX Runtime's Clip -> QuantizeLinear fusion
  // throws on a float8 zero-point constant ("Unexpected data type for QuantizeLinear input
  // y_zero_point of 17") at its default optimization level, so a model with one would not load
  // where users run it. The Q node says its type with output_dtype instead (opset 21).
  if (!has_integer_codes(format)) return {scale, ""};
  Tensor zp(format_traits(format).storage, shape);
  for (size_t i = 0; i < params.zero_point.size(); ++i) store_code(zp, i, params.zero_point[i]);
  const std::string zero_point = names().fresh(base + "_zero_point");
  add_initializer(tensor_to_proto(zp, zero_point));
  return {scale, zero_point};
}

onnx::NodeProto PairWriter::cast_node(const std::string& in, const std::string& out, int32_t to) {
  return ir::make_node({.op_type = "Cast",
                        .name = names().fresh(out + "_Cast"),
                        .inputs = {in},
                        .outputs = {out},
                        .attributes = {ir::make_int_attribute("to", to)}});
}

void PairWriter::flush_initializers() {
  for (onnx::TensorProto& tensor : new_initializers_) *graph_.add_initializer() = std::move(tensor);
  new_initializers_.clear();
}

}  // namespace mixprec::rewrite
