// upgrade_opset: one table of the operator changes between opsets 7 and 21, one adapter per
// change that alters a node's meaning or moves its attributes into inputs.
//
// Before (opset 9)                          After (opset 13)
//   Clip[min=0, max=6](x)                     Clip(x, clip/min=0, clip/max=6)
//   Squeeze[axes=[1]](x)                      Squeeze(x, squeeze/axes=[1])
//   Softmax[axis=1](x), x of rank 3           Shape(x) -------------------------------+
//                                             Flatten[axis=1](x) -> Softmax[axis=1] -> Reshape -> y
//   Upsample[nearest](x, scales)              Resize[nearest, asymmetric, floor](x, roi=[], scales)
//
// Preconditions: a valid graph (ir::GraphView), a default-domain opset of at least 7, a target
// of at most 21, no model-local functions.
//
// The table has a row only where an operator's meaning, or the placement of its attributes and
// inputs, changed incompatibly (ONNX Changelog.md through opset 21, cross-checked against
// onnx/version_converter's adapters). Versions that only widen types, accept negative axes, or
// add attributes and optional inputs whose defaults keep the old behaviour need no row: Add,
// Mul, Cast, Concat, Conv, Gemm, MaxPool, Reshape, BatchNormalization-15, Dropout-10, ...
//
// Stages: match() finds the nodes that have a row in (from, target]; plan() runs the rows'
// adapters on copies of those nodes, so every error is raised before the model changes;
// apply() splices the rewritten nodes and new initializers into their graphs.
#include "rewrite/upgrade_opset.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <ranges>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "ir/graph_view.h"
#include "ir/node_builder.h"
#include "ir/onnx_names.h"
#include "mixprec/error.h"
#include "mixprec/tensor.h"

namespace mixprec {
namespace {

using onnx::TensorProto;

// --- Protobuf helpers ---------------------------------------------------------------------

// Removes attribute `name` from `node` and returns it; nullopt when absent.
std::optional<onnx::AttributeProto> take_attribute(onnx::NodeProto& node, std::string_view name) {
  auto* attributes = node.mutable_attribute();
  for (int i = 0; i < attributes->size(); ++i) {
    if (attributes->Get(i).name() != name) continue;
    onnx::AttributeProto taken = std::move(*attributes->Mutable(i));
    attributes->DeleteSubrange(i, 1);
    return taken;
  }
  return std::nullopt;
}

// Sets input `index`, padding skipped optional inputs with "".
void set_input(onnx::NodeProto& node, int index, const std::string& name) {
  while (node.input_size() <= index) node.add_input("");
  node.set_input(index, name);
}

// 1-D tensors from attribute values (RepeatedField) or arrays.
TensorProto int64_vector(const std::ranges::sized_range auto& values) {
  TensorProto tensor;
  tensor.set_data_type(TensorProto::INT64);
  tensor.add_dims(static_cast<int64_t>(std::ranges::size(values)));
  tensor.mutable_int64_data()->Add(std::ranges::begin(values), std::ranges::end(values));
  return tensor;
}

TensorProto float_vector(const std::ranges::sized_range auto& values) {
  TensorProto tensor;
  tensor.set_data_type(TensorProto::FLOAT);
  tensor.add_dims(static_cast<int64_t>(std::ranges::size(values)));
  tensor.mutable_float_data()->Add(std::ranges::begin(values), std::ranges::end(values));
  return tensor;
}

// A scalar of a floating-point element type; nullopt for other types.
std::optional<TensorProto> float_scalar(float value, int32_t elem_type) {
  TensorProto tensor;
  tensor.set_data_type(elem_type);
  switch (elem_type) {
    case TensorProto::FLOAT: tensor.add_float_data(value); break;
    case TensorProto::DOUBLE: tensor.add_double_data(value); break;
    case TensorProto::FLOAT16: tensor.add_int32_data(float_to_half(value)); break;  // bits, widened
    default: return std::nullopt;
  }
  return tensor;
}

// The values of a float32 tensor held in the proto; nullopt for other types and external data.
std::optional<std::vector<float>> float_values(const TensorProto& tensor) {
  if (tensor.data_type() != TensorProto::FLOAT || tensor.data_location() == TensorProto::EXTERNAL) {
    return std::nullopt;
  }
  if (!tensor.has_raw_data()) return std::vector<float>(tensor.float_data().begin(), tensor.float_data().end());
  std::vector<float> values(tensor.raw_data().size() / sizeof(float));
  // raw_data is little-endian, like every host we build for.
  std::memcpy(values.data(), tensor.raw_data().data(), values.size() * sizeof(float));
  return values;
}

// "min/max attributes -> inputs", "k attribute -> input".
std::string attributes_to_inputs(const std::vector<std::string_view>& names) {
  std::string joined;
  for (std::string_view name : names) {
    if (!joined.empty()) joined += '/';
    joined += name;
  }
  return joined + (names.size() > 1 ? " attributes -> inputs" : " attribute -> input");
}

// --- Adapters ---------------------------------------------------------------------------------

struct OpsetChange;

// What one node becomes: the adapted copy, the nodes placed around it, and the initializers
// they read (added to the graph that owns the node).
struct NodeRewrite {
  std::vector<onnx::NodeProto> before;
  onnx::NodeProto node;
  std::vector<onnx::NodeProto> after;
  std::vector<TensorProto> initializers;
};

// An adapter's view of its node: the copy to rewrite, fresh names, and what the model says
// about values (rank, element type, constant contents).
class Adaptation {
 public:
  Adaptation(const ir::NodeRef& site, const RankLookup& rank_of, ir::NameAllocator& names, const std::string& label)
      : site_(site), rank_of_(rank_of), names_(names), label_(label), node_label_(ir::node_label(site)) {
    // A copy is safe: no op with an adapter owns a subgraph (Scan's row has none), so no
    // subgraph rewrite can hide inside it.
    rewrite_.node = site.node();
    const onnx::NodeProto& node = site.node();
    name_base_ = node.name().empty() ? node.output(0) : node.name();
  }

  onnx::NodeProto& node() { return rewrite_.node; }
  const std::string& original_op_type() const { return site_.node().op_type(); }
  const std::string& node_label() const { return node_label_; }
  NodeRewrite& rewrite() { return rewrite_; }
  // The row being applied, for messages.
  void set_change(const OpsetChange& change) { change_ = &change; }

  std::string fresh_name(std::string_view what) { return names_.fresh(name_base_ + "/" + std::string(what)); }

  // Adds `tensor` under a fresh name derived from `what`; returns the name.
  std::string add_initializer(TensorProto tensor, std::string_view what) {
    tensor.set_name(fresh_name(what));
    rewrite_.initializers.push_back(std::move(tensor));
    return rewrite_.initializers.back().name();
  }

  // A scalar initializer of `elem_type` (a floating-point type) holding `value`.
  std::string add_float_scalar(float value, int32_t elem_type, std::string_view what) {
    std::optional<TensorProto> scalar = float_scalar(value, elem_type);
    if (!scalar) {
      malformed(std::string(what) + " needs a floating-point input, not " + ir::onnx_type_name(elem_type));
    }
    return add_initializer(std::move(*scalar), what);
  }

  // Removes and returns attribute `name`, which the node's old opset requires.
  onnx::AttributeProto take_required_attribute(std::string_view name) {
    std::optional<onnx::AttributeProto> attribute = take_attribute(node(), name);
    if (!attribute) malformed("required attribute '" + std::string(name) + "' is missing");
    return std::move(*attribute);
  }

  // `rank_of` first, then the shape the model declares (value_info, graph input/output, initializer).
  std::optional<int64_t> rank(const std::string& name) const {
    if (rank_of_) {
      if (std::optional<int64_t> rank = rank_of_(name)) return rank;
    }
    if (const onnx::TypeProto_Tensor* type = declared_type(name); type != nullptr && type->has_shape()) {
      return type->shape().dim_size();
    }
    if (const TensorProto* initializer = site_.graph->resolve_initializer(name)) return initializer->dims_size();
    return std::nullopt;
  }

  std::optional<int32_t> elem_type(const std::string& name) const {
    if (const onnx::TypeProto_Tensor* type = declared_type(name); type != nullptr && type->elem_type() != 0) {
      return type->elem_type();
    }
    if (const TensorProto* initializer = site_.graph->resolve_initializer(name)) return initializer->data_type();
    return std::nullopt;
  }

  // The contents of a float32 initializer or Constant output; nullopt when not a known constant.
  std::optional<std::vector<float>> constant_floats(const std::string& name) const {
    if (const TensorProto* initializer = site_.graph->resolve_initializer(name)) return float_values(*initializer);
    const std::optional<ir::NodeRef> producer = site_.graph->resolve_producer(name);
    if (!producer || producer->node().op_type() != "Constant" ||
        !ir::is_default_domain(producer->node().domain())) {
      return std::nullopt;
    }
    const onnx::AttributeProto* value = ir::find_attribute(producer->node(), "value");
    return value != nullptr ? float_values(value->t()) : std::nullopt;
  }

  // The node cannot be rewritten to the opset of the change being applied.
  [[noreturn]] void unsupported(const std::string& reason) const;
  // The node is invalid in its own opset.
  [[noreturn]] void malformed(const std::string& problem) const {
    throw_bad_input(label_, "node '" + node_label_ + "' (" + original_op_type() + "): " + problem);
  }

 private:
  const onnx::TypeProto_Tensor* declared_type(const std::string& name) const {
    const onnx::ValueInfoProto* info = site_.graph->resolve_value_info(name);
    return info != nullptr && info->type().has_tensor_type() ? &info->type().tensor_type() : nullptr;
  }

  const ir::NodeRef site_;
  const RankLookup& rank_of_;
  ir::NameAllocator& names_;
  const std::string& label_;
  const std::string node_label_;
  std::string name_base_;  // new names are "<node name or first output>/<what>"
  const OpsetChange* change_ = nullptr;
  NodeRewrite rewrite_;
};

// An adapter rewrites its node from the meaning before `since_version` to the meaning from
// `since_version` on. It returns what it changed ("" when the node needed nothing) or throws.
using Adapter = std::string (*)(Adaptation&);

struct OpsetChange {
  std::string_view op_type;
  int64_t since_version;  // the first opset with the new meaning
  Adapter adapter;        // nullptr: no rewrite keeps the meaning; the user must re-export
};

std::string re_export_advice(const std::string& node_label, const OpsetChange& change) {
  const std::string since = std::to_string(change.since_version);
  return "node '" + node_label + "': op " + std::string(change.op_type) + " changed meaning in opset " + since +
         "; re-export the model at opset >= " + since;
}

void Adaptation::unsupported(const std::string& reason) const {
  throw_unsupported(label_, re_export_advice(node_label_, *change_) + " (" + reason + ")");
}

// BatchNormalization-9 dropped `spatial`; only spatial=1 (per-channel statistics) survived.
std::string drop_spatial_attribute(Adaptation& a) {
  const std::optional<onnx::AttributeProto> spatial = take_attribute(a.node(), "spatial");
  if (!spatial) return "";
  if (spatial->i() != 1) a.unsupported("spatial=0 has no equivalent");
  return "spatial=1 attribute dropped (the only behaviour left)";
}

std::string upsample_scales_to_input(Adaptation& a) {
  const onnx::AttributeProto scales = a.take_required_attribute("scales");
  set_input(a.node(), 1, a.add_initializer(float_vector(scales.floats()), "scales"));
  return attributes_to_inputs({"scales"});
}

// Resize-10 is Upsample-9 under a new name: same inputs, same `mode`.
std::string upsample_to_resize(Adaptation& a) {
  a.node().set_op_type("Resize");
  return "-> Resize";
}

// Slice-10 inputs 1..3 are starts, ends and (optional) axes.
std::string slice_attributes_to_inputs(Adaptation& a) {
  static constexpr std::array<std::string_view, 3> kMoved{"starts", "ends", "axes"};
  std::vector<std::string_view> moved;
  for (int i = 0; i < 3; ++i) {
    const std::optional<onnx::AttributeProto> values =
        kMoved[i] == "axes" ? take_attribute(a.node(), kMoved[i]) : a.take_required_attribute(kMoved[i]);
    if (!values) continue;
    set_input(a.node(), i + 1, a.add_initializer(int64_vector(values->ints()), kMoved[i]));
    moved.push_back(kMoved[i]);
  }
  return attributes_to_inputs(moved);
}

std::string topk_k_to_input(Adaptation& a) {
  const int64_t k = a.take_required_attribute("k").i();
  set_input(a.node(), 1, a.add_initializer(int64_vector(std::array{k}), "k"));
  return attributes_to_inputs({"k"});
}

// Clip-11 bounds are optional inputs of the input's element type; an absent attribute (the
// old default, the type's full range) becomes an omitted input. An undeclared element type is
// taken as float32: Clip-6 only takes float types, and ONNX Runtime rejects a wrong guess at load.
std::string clip_bounds_to_inputs(Adaptation& a) {
  static constexpr std::array<std::pair<int, std::string_view>, 2> kBounds{{{1, "min"}, {2, "max"}}};
  std::vector<std::string_view> moved;
  const int32_t elem_type = a.elem_type(a.node().input(0)).value_or(TensorProto::FLOAT);
  for (const auto& [index, bound] : kBounds) {
    if (const std::optional<onnx::AttributeProto> value = take_attribute(a.node(), bound)) {
      set_input(a.node(), index, a.add_float_scalar(value->f(), elem_type, bound));
      moved.push_back(bound);
    }
  }
  return moved.empty() ? "" : attributes_to_inputs(moved);
}

// Pad-11: pads and the constant value became inputs; `value` only ever applied to mode constant.
std::string pad_attributes_to_inputs(Adaptation& a) {
  const onnx::AttributeProto pads = a.take_required_attribute("pads");
  set_input(a.node(), 1, a.add_initializer(int64_vector(pads.ints()), "pads"));
  const std::optional<onnx::AttributeProto> value = take_attribute(a.node(), "value");
  if (!value || ir::string_attribute(a.node(), "mode").value_or("constant") != "constant") {
    return attributes_to_inputs({"pads"});
  }
  const int32_t elem_type = a.elem_type(a.node().input(0)).value_or(TensorProto::FLOAT);
  set_input(a.node(), 2, a.add_float_scalar(value->f(), elem_type, "value"));
  return attributes_to_inputs({"pads", "value"});
}

// The nearest_mode that reproduces ONNX Runtime's opset-10 rounding of a source coordinate:
// truncation when upsampling, ceil when downsampling, decided per axis by its scale.
std::string opset10_nearest_mode(Adaptation& a, const std::string& scales, std::string* caveat) {
  if (a.original_op_type() == "Upsample") return "floor";  // Upsample's scales are >= 1
  const std::optional<std::vector<float>> values = a.constant_floats(scales);
  if (!values) {
    *caveat = " (scales are not constant: exact when upsampling)";
    return "floor";
  }
  const bool upsamples = std::ranges::all_of(*values, [](float scale) { return scale >= 1.0f; });
  const bool downsamples = std::ranges::all_of(*values, [](float scale) { return scale <= 1.0f; });
  if (!upsamples && !downsamples) a.unsupported("nearest resize that both up- and downsamples has no equivalent");
  return upsamples ? "floor" : "ceil";
}

// Resize-11 added roi (required until opset 13; an empty tensor when unused) and made the
// opset-10 coordinate mapping one choice among several, no longer the default.
std::string resize_explicit_opset10_mapping(Adaptation& a) {
  onnx::NodeProto& node = a.node();
  const std::string scales = node.input(1);
  set_input(node, 1, a.add_initializer(float_vector(std::array<float, 0>{}), "roi"));
  set_input(node, 2, scales);
  ir::set_attribute(node, ir::make_string_attribute("coordinate_transformation_mode", "asymmetric"));
  std::string note = "empty roi input, coordinate_transformation_mode asymmetric";
  if (ir::string_attribute(node, "mode").value_or("nearest") == "nearest") {
    std::string caveat;
    const std::string nearest_mode = opset10_nearest_mode(a, scales, &caveat);
    ir::set_attribute(node, ir::make_string_attribute("nearest_mode", nearest_mode));
    note += ", nearest_mode " + nearest_mode + caveat;
  }
  return note;
}

std::string scatter_to_scatter_elements(Adaptation& a) {
  a.node().set_op_type("ScatterElements");
  return "-> ScatterElements";
}

// Dropout-12's ratio input may be any float type, whatever the data's type.
std::string dropout_ratio_to_input(Adaptation& a) {
  const std::optional<onnx::AttributeProto> ratio = take_attribute(a.node(), "ratio");
  if (!ratio) return "";
  set_input(a.node(), 1, a.add_float_scalar(ratio->f(), TensorProto::FLOAT, "ratio"));
  return attributes_to_inputs({"ratio"});
}

// Softmax, LogSoftmax and Hardmax before 13 flatten the input to 2-D at `axis` (default 1) and
// normalise each row; from 13 they normalise along the single axis `axis` (default -1). On the
// last axis both agree; elsewhere the old meaning is spelled out with Flatten and Reshape.
std::string coerced_axis_to_single_axis(Adaptation& a) {
  onnx::NodeProto& node = a.node();
  const std::string input = node.input(0);
  const std::optional<int64_t> rank = a.rank(input);
  if (!rank) a.unsupported("the rewrite needs the rank of input '" + input + "', which is unknown");
  const int64_t axis = ir::int_attribute(node, "axis").value_or(1);
  const int64_t normalized = axis < 0 ? axis + *rank : axis;
  if (normalized < 0 || normalized > *rank) {
    a.malformed("axis " + std::to_string(axis) + " is out of range for a rank-" + std::to_string(*rank) + " input");
  }
  if (normalized == *rank - 1) {
    ir::set_attribute(node, ir::make_int_attribute("axis", -1));
    return "axis " + std::to_string(axis) + " -> -1 (the last axis: same meaning)";
  }
  const std::string output = node.output(0);
  const std::string shape = a.fresh_name("shape");
  const std::string flattened = a.fresh_name("flattened");
  const std::string normalized_2d = a.fresh_name(node.op_type() + "_2d");
  a.rewrite().before.push_back(
      ir::make_node({.op_type = "Shape", .name = a.fresh_name("Shape"), .inputs = {input}, .outputs = {shape}}));
  a.rewrite().before.push_back(ir::make_node({.op_type = "Flatten",
                                              .name = a.fresh_name("Flatten"),
                                              .inputs = {input},
                                              .outputs = {flattened},
                                              .attributes = {ir::make_int_attribute("axis", normalized)}}));
  node.set_input(0, flattened);
  node.set_output(0, normalized_2d);
  ir::set_attribute(node, ir::make_int_attribute("axis", 1));
  a.rewrite().after.push_back(ir::make_node(
      {.op_type = "Reshape", .name = a.fresh_name("Reshape"), .inputs = {normalized_2d, shape}, .outputs = {output}}));
  return "axis " + std::to_string(axis) + " of a rank-" + std::to_string(*rank) + " input -> Flatten, " +
         node.op_type() + " on axis 1, Reshape back";
}

std::string axes_attribute_to_input(Adaptation& a) {
  const std::optional<onnx::AttributeProto> axes = take_attribute(a.node(), "axes");
  if (!axes) return "";
  set_input(a.node(), 1, a.add_initializer(int64_vector(axes->ints()), "axes"));
  return attributes_to_inputs({"axes"});
}

std::string split_attribute_to_input(Adaptation& a) {
  const std::optional<onnx::AttributeProto> split = take_attribute(a.node(), "split");
  if (!split) return "";
  set_input(a.node(), 1, a.add_initializer(int64_vector(split->ints()), "split"));
  return attributes_to_inputs({"split"});
}

// Split-18 needs either the split input or num_outputs; before, equal parts were implied.
std::string split_explicit_num_outputs(Adaptation& a) {
  onnx::NodeProto& node = a.node();
  if ((node.input_size() > 1 && !node.input(1).empty()) || ir::find_attribute(node, "num_outputs") != nullptr) {
    return "";
  }
  ir::set_attribute(node, ir::make_int_attribute("num_outputs", node.output_size()));
  return "num_outputs=" + std::to_string(node.output_size()) + " (equal parts, formerly implied)";
}

// Resize-13 dropped tf_half_pixel_for_nn, x_in = (x_out + 0.5) / scale. half_pixel subtracts
// 0.5 more (exactly, in float), which these nearest modes compensate for to the same pixel.
std::string replace_tf_half_pixel_for_nn(Adaptation& a) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 2> kEquivalentNearestMode{{
      {"round_prefer_floor", "ceil"},  // round half down of v == ceil(v - 0.5)
      {"floor", "round_prefer_ceil"},  // floor(v) == round half up of (v - 0.5)
  }};
  onnx::NodeProto& node = a.node();
  const std::string coordinates = ir::string_attribute(node, "coordinate_transformation_mode").value_or("half_pixel");
  if (coordinates != "tf_half_pixel_for_nn") return "";
  const std::string mode = ir::string_attribute(node, "mode").value_or("nearest");
  const std::string nearest_mode = ir::string_attribute(node, "nearest_mode").value_or("round_prefer_floor");
  const auto equivalent = std::ranges::find(kEquivalentNearestMode, nearest_mode,
                                            &std::pair<std::string_view, std::string_view>::first);
  if (mode != "nearest" || equivalent == kEquivalentNearestMode.end()) {
    a.unsupported("tf_half_pixel_for_nn with mode " + mode + ", nearest_mode " + nearest_mode +
                  " has no equivalent");
  }
  ir::set_attribute(node, ir::make_string_attribute("coordinate_transformation_mode", "half_pixel"));
  ir::set_attribute(node, ir::make_string_attribute("nearest_mode", std::string(equivalent->second)));
  return "coordinate_transformation_mode tf_half_pixel_for_nn -> half_pixel, nearest_mode " + nearest_mode +
         " -> " + std::string(equivalent->second) + " (same pixels)";
}

// BatchNormalization-14 has no saved_mean/saved_var outputs (training only before).
std::string reject_saved_statistics(Adaptation& a) {
  const onnx::NodeProto& node = a.node();
  for (int i = 3; i < node.output_size(); ++i) {
    if (!node.output(i).empty()) a.unsupported("its saved_mean/saved_var outputs no longer exist");
  }
  return "";
}

// RoiAlign-16 added coordinate_transformation_mode with default half_pixel; before, the
// mapping was what is now called output_half_pixel.
std::string roialign_explicit_output_half_pixel(Adaptation& a) {
  ir::set_attribute(a.node(), ir::make_string_attribute("coordinate_transformation_mode", "output_half_pixel"));
  return "coordinate_transformation_mode output_half_pixel (the former behaviour) made explicit";
}

std::string gridsample_mode_names(Adaptation& a) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 2> kRenamed{{
      {"bilinear", "linear"},
      {"bicubic", "cubic"},
  }};
  const std::string mode = ir::string_attribute(a.node(), "mode").value_or("");
  const auto renamed = std::ranges::find(kRenamed, mode, &std::pair<std::string_view, std::string_view>::first);
  if (renamed == kRenamed.end()) return "";
  ir::set_attribute(a.node(), ir::make_string_attribute("mode", std::string(renamed->second)));
  return "mode " + mode + " -> " + std::string(renamed->second);
}

// One row per incompatible change, ascending by since_version.
constexpr std::array kOpsetChanges{
    OpsetChange{"BatchNormalization", 9, drop_spatial_attribute},
    OpsetChange{"Scan", 9, nullptr},  // Scan-8 had a batch axis and a sequence_lens input
    OpsetChange{"Upsample", 9, upsample_scales_to_input},
    OpsetChange{"Slice", 10, slice_attributes_to_inputs},
    OpsetChange{"TopK", 10, topk_k_to_input},
    OpsetChange{"Upsample", 10, upsample_to_resize},  // deprecated
    OpsetChange{"Clip", 11, clip_bounds_to_inputs},
    OpsetChange{"Pad", 11, pad_attributes_to_inputs},
    OpsetChange{"Resize", 11, resize_explicit_opset10_mapping},
    OpsetChange{"Scatter", 11, scatter_to_scatter_elements},  // deprecated
    OpsetChange{"Dropout", 12, dropout_ratio_to_input},
    OpsetChange{"Hardmax", 13, coerced_axis_to_single_axis},
    OpsetChange{"LogSoftmax", 13, coerced_axis_to_single_axis},
    OpsetChange{"ReduceSum", 13, axes_attribute_to_input},
    OpsetChange{"Resize", 13, replace_tf_half_pixel_for_nn},
    OpsetChange{"Softmax", 13, coerced_axis_to_single_axis},
    OpsetChange{"Split", 13, split_attribute_to_input},
    OpsetChange{"Squeeze", 13, axes_attribute_to_input},
    OpsetChange{"Unsqueeze", 13, axes_attribute_to_input},
    OpsetChange{"BatchNormalization", 14, reject_saved_statistics},
    OpsetChange{"RoiAlign", 16, roialign_explicit_output_half_pixel},
    OpsetChange{"ReduceL1", 18, axes_attribute_to_input},
    OpsetChange{"ReduceL2", 18, axes_attribute_to_input},
    OpsetChange{"ReduceLogSum", 18, axes_attribute_to_input},
    OpsetChange{"ReduceLogSumExp", 18, axes_attribute_to_input},
    OpsetChange{"ReduceMax", 18, axes_attribute_to_input},
    OpsetChange{"ReduceMean", 18, axes_attribute_to_input},
    OpsetChange{"ReduceMin", 18, axes_attribute_to_input},
    OpsetChange{"ReduceProd", 18, axes_attribute_to_input},
    OpsetChange{"ReduceSumSquare", 18, axes_attribute_to_input},
    OpsetChange{"Split", 18, split_explicit_num_outputs},
    OpsetChange{"DFT", 20, nullptr},                 // axis attribute -> input with another default
    OpsetChange{"GridSample", 20, gridsample_mode_names},
    OpsetChange{"GroupNormalization", 21, nullptr},  // scale and bias per channel, not per group
};
static_assert(std::ranges::is_sorted(kOpsetChanges, {}, &OpsetChange::since_version));

// The first change of `op_type` in (after, target].
const OpsetChange* next_change(std::string_view op_type, int64_t after, int64_t target) {
  const auto it = std::ranges::find_if(kOpsetChanges, [&](const OpsetChange& change) {
    return change.op_type == op_type && change.since_version > after && change.since_version <= target;
  });
  return it == kOpsetChanges.end() ? nullptr : &*it;
}

// --- IR versions ------------------------------------------------------------------------------

struct IrRequirement {
  int64_t opset;
  int64_t ir_version;  // the IR version the ONNX release introducing `opset` defined
};
constexpr std::array kIrRequirements{
    IrRequirement{7, 3},  IrRequirement{9, 4},  IrRequirement{10, 5},  IrRequirement{11, 6},
    IrRequirement{12, 7}, IrRequirement{15, 8}, IrRequirement{19, 9}, IrRequirement{21, 10},
};

// For opset >= 7.
int64_t required_ir_version(int64_t opset) {
  const auto it = std::ranges::find_if(kIrRequirements | std::views::reverse,
                                       [&](const IrRequirement& row) { return row.opset <= opset; });
  return it->ir_version;
}

// --- match, plan, apply -----------------------------------------------------------------------

struct UpgradePlan {
  // Keyed by graph (main graph or subgraph) and node index within it.
  std::unordered_map<const onnx::GraphProto*, std::unordered_map<int, NodeRewrite>> rewrites;
  std::vector<std::string> adapted;
};

// Default-domain nodes, in every graph, with a change in (from, target].
std::vector<ir::NodeRef> match(const ir::GraphView& view, int64_t from, int64_t target) {
  std::vector<ir::NodeRef> sites;
  for (const ir::NodeRef& ref : view.nested_nodes()) {
    const onnx::NodeProto& node = ref.node();
    if (ir::is_default_domain(node.domain()) && next_change(node.op_type(), from, target) != nullptr) {
      sites.push_back(ref);
    }
  }
  return sites;
}

UpgradePlan plan(const std::vector<ir::NodeRef>& sites, int64_t from, int64_t target, const std::string& label,
                 const RankLookup& rank_of, ir::NameAllocator& names) {
  UpgradePlan plan;
  for (const ir::NodeRef& site : sites) {
    Adaptation adaptation(site, rank_of, names, label);
    bool changed = false;
    int64_t opset = from;
    // Rows apply in opset order; after a rename (Upsample -> Resize) the new name's rows follow.
    while (const OpsetChange* change = next_change(adaptation.node().op_type(), opset, target)) {
      opset = change->since_version;
      if (change->adapter == nullptr) throw_unsupported(label, re_export_advice(adaptation.node_label(), *change));
      adaptation.set_change(*change);
      const std::string op_type = adaptation.node().op_type();
      if (std::string what = change->adapter(adaptation); !what.empty()) {
        plan.adapted.push_back(op_type + " '" + adaptation.node_label() + "': " + what);
        changed = true;
      }
    }
    if (changed) {
      plan.rewrites[&site.graph->graph()].emplace(static_cast<int>(site.index), std::move(adaptation.rewrite()));
    }
  }
  return plan;
}

void apply(UpgradePlan& plan, onnx::GraphProto& graph) {
  // Subgraphs first, while the plan's graph addresses surely hold: splicing moves this graph's nodes.
  for (onnx::NodeProto& node : *graph.mutable_node()) {
    for (onnx::AttributeProto& attribute : *node.mutable_attribute()) {
      if (attribute.has_g()) apply(plan, *attribute.mutable_g());
      for (onnx::GraphProto& subgraph : *attribute.mutable_graphs()) apply(plan, subgraph);
    }
  }
  const auto found = plan.rewrites.find(&graph);
  if (found == plan.rewrites.end()) return;
  google::protobuf::RepeatedPtrField<onnx::NodeProto> spliced;
  for (int i = 0; i < graph.node_size(); ++i) {
    const auto rewrite = found->second.find(i);
    if (rewrite == found->second.end()) {
      spliced.Add(std::move(*graph.mutable_node(i)));
      continue;
    }
    NodeRewrite& r = rewrite->second;
    for (onnx::NodeProto& node : r.before) spliced.Add(std::move(node));
    spliced.Add(std::move(r.node));
    for (onnx::NodeProto& node : r.after) spliced.Add(std::move(node));
    for (TensorProto& tensor : r.initializers) graph.mutable_initializer()->Add(std::move(tensor));
  }
  graph.mutable_node()->Swap(&spliced);
}

// Index of the one default-domain opset import.
int default_opset_index(const onnx::ModelProto& model, const std::string& label) {
  std::optional<int> index;
  for (int i = 0; i < model.opset_import_size(); ++i) {
    if (!ir::is_default_domain(model.opset_import(i).domain())) continue;
    if (index) throw_bad_input(label, "the model imports the default ONNX domain twice");
    index = i;
  }
  if (!index) {
    throw_bad_input(label, "the model imports no opset for the default ONNX domain (ai.onnx), so no operator "
                           "version is known: export it again with its opset");
  }
  return *index;
}

}  // namespace

std::vector<std::string> tensors_needing_rank(const onnx::ModelProto& model, int64_t target, const std::string& label) {
  const int64_t from = model.opset_import(default_opset_index(model, label)).version();
  std::vector<std::string> tensors;
  for (const auto& node : model.graph().node()) {
    if (!ir::is_default_domain(node.domain()) || node.input_size() == 0 || node.input(0).empty()) continue;
    const OpsetChange* change = next_change(node.op_type(), from, target);
    for (; change != nullptr; change = next_change(node.op_type(), change->since_version, target)) {
      if (change->adapter == coerced_axis_to_single_axis) {
        tensors.push_back(node.input(0));
        break;
      }
    }
  }
  return tensors;
}

OpsetUpgradeResult upgrade_opset(onnx::ModelProto& model, int64_t target, const std::string& label,
                                 const RankLookup& rank_of) {
  const int opset_index = default_opset_index(model, label);
  const int64_t from = model.opset_import(opset_index).version();
  if (target <= from) return {.from = from, .to = from};
  if (from < kOldestUpgradableOpset) {
    throw_unsupported(label, "opset " + std::to_string(from) + " is older than opset " +
                                 std::to_string(kOldestUpgradableOpset) +
                                 ", the oldest ONNX Runtime runs; re-export the model");
  }
  if (target > kNewestUpgradeTarget) {
    throw_unsupported(label, "cannot upgrade to opset " + std::to_string(target) +
                                 ": operator changes are known up to opset " + std::to_string(kNewestUpgradeTarget));
  }
  if (model.functions_size() > 0) throw_unsupported(label, "model-local functions are not upgraded");

  UpgradePlan upgrade;
  {
    const ir::GraphView view(model.graph(), label);
    ir::NameAllocator names(model);
    upgrade = plan(match(view, from, target), from, target, label, rank_of, names);
  }
  apply(upgrade, *model.mutable_graph());
  model.mutable_opset_import(opset_index)->set_version(target);
  model.set_ir_version(std::max(model.ir_version(), required_ir_version(target)));
  return {.from = from, .to = target, .adapted = std::move(upgrade.adapted)};
}

}  // namespace mixprec
