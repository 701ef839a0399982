// vaip_patch: the only graph edits the Vitis AI workflow allows outside a config (VITIS.md,
// "Model modification policy"), so that a Quark-made or other tool's model loads in the
// VitisAI provider as it expects:
//
//   com.microsoft QuantizeLinear/DequantizeLinear   → the default domain, when the default op at
//       the model's opset takes the zero point's type (int8/uint8 from opset 10, an axis from 13,
//       int16/uint16/int4/uint4 from 21); otherwise the node stays and the summary says why
//   BFPQuantizeDequantize / BFPFixNeuron without sub_block_shift_bits
//       → sub_block_shift_bits = 1 written out (Quark's default; the provider's own is 2)
//   Extended Q/DQ and BFP/MX nodes → `shape` (INTS, the output's shape) and `data_type`
//       (STRING, the output's element type: "int8", "bfloat16", "float32", ...) from the
//       shapes observed in a run (the caller runs the model; their outputs are elementwise)
//   zero points of bf16/fp16 Q/DQ that are not BFLOAT16/FLOAT16 raw data → the codes' type.
//       Text formats (ONNX's printer before it knew bf16 raw data, JSON/YAML dumps, hand-written
//       models) carry such a zero point as float32 or double values, as the 16-bit pattern in a
//       uint16/int16 tensor, or in int32_data; the provider takes only a BFLOAT16 zero point for
//       its bf16 Q/DQ, and ONNX Runtime refuses a DequantizeLinear whose zero point's type is not
//       its codes'. The codes' type is read from the node's own zero point, a DequantizeLinear's
//       constant codes, or the zero point of the Q (DQ) it pairs with; the value must be exact
//       in that type (a float zero point 0.3 is not a bf16 value: the node is kept and named).
//
// Nothing else changes: no node is added or removed, no value is rounded. Bodies of If/Loop/
// Scan are patched the same way; their custom nodes get shape attributes only when a shape
// was observed for them.
#include "rewrite/vaip_patch.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <optional>
#include <set>
#include <string>

#include "ir/graph_view.h"
#include "ir/node_builder.h"
#include "common/text.h"
#include "mixprec/error.h"
#include "mixprec/tensor_proto.h"
#include "rewrite/graph_edit.h"
#include "rewrite/quant_ops.h"

namespace mixprec::rewrite {
namespace {

constexpr const char* kMicrosoft = "com.microsoft";

bool is_extended_qdq(const onnx::NodeProto& node) {
  return (is_one_of(node, kQuantizeOps) || is_one_of(node, kDequantizeOps)) && node.domain() != kMicrosoft &&
         !node.domain().empty() && node.domain() != "ai.onnx";
}

bool is_bfp(const onnx::NodeProto& node) {
  return is_one_of(node, kBlockOps) && (node.op_type() == "BFPQuantizeDequantize" || node.op_type() == "BFPFixNeuron");
}

bool same_attribute(const onnx::NodeProto& node, const onnx::AttributeProto& want) {
  const onnx::AttributeProto* a = ir::find_attribute(node, want.name());
  return a != nullptr && a->SerializeAsString() == want.SerializeAsString();
}

// The first opset of the default domain whose QuantizeLinear/DequantizeLinear takes `type`
// codes (with an axis when `per_axis`).
// (By the dtype table: the ONNX headers mixprec builds with predate the FP8 and 4-bit types.)
int64_t first_default_opset(int32_t type, bool per_axis) {
  if (type == onnx::TensorProto::INT8 || type == onnx::TensorProto::UINT8) return per_axis ? 13 : 10;
  if (type == onnx::TensorProto::INT16 || type == onnx::TensorProto::UINT16) return 21;
  for (DType d : {DType::kFloat8E4M3FN, DType::kFloat8E5M2}) {
    if (type == dtype_to_onnx(d)) return 19;
  }
  for (DType d : {DType::kInt4, DType::kUInt4}) {
    if (type == dtype_to_onnx(d)) return 21;
  }
  return 0;  // none
}

// "INT16", "FLOAT8E4M3FN": the type as ONNX spells it, from the dtype table.
std::string onnx_type_name(int32_t type) {
  for (const DTypeTraits& t : all_dtype_traits()) {
    if (t.onnx_type == type) {
      std::string name = t.name;
      for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      return name;
    }
  }
  return "type " + std::to_string(type);
}

class Patcher {
 public:
  Patcher(onnx::ModelProto& model, const std::map<std::string, ObservedTensor>& observed, const std::string& label,
          VaipPatchSummary& summary)
      : model_(model), observed_(observed), label_(label), summary_(summary), opset_(default_opset(model)) {}

  void run() {
    for_each_graph(*model_.mutable_graph(), [&](onnx::GraphProto& graph) { patch(graph); });
  }
  void run_zero_points() {
    for_each_graph(*model_.mutable_graph(), [&](onnx::GraphProto& graph) { fix_zero_points(graph); });
  }

 private:
  // One graph; for_each_graph brings the bodies.
  void patch(onnx::GraphProto& graph) {
    fix_zero_points(graph);
    for (onnx::NodeProto& node : *graph.mutable_node()) {
      if (node.domain() == kMicrosoft && (is_one_of(node, kQuantizeOps) || is_one_of(node, kDequantizeOps))) {
        retag(graph, node);
      }
      if (is_bfp(node) && !ir::find_attribute(node, "sub_block_shift_bits")) {
        ir::set_attribute(node, ir::make_int_attribute("sub_block_shift_bits", 1));
        ++summary_.shift_bits_written;
      }
      if (is_extended_qdq(node) || is_one_of(node, kBlockOps)) add_shape(node);
    }
  }

  // The codes' type of a com.microsoft Q/DQ: its zero point's; without one, a DequantizeLinear's
  // constant input's, and a QuantizeLinear's uint8 (ONNX's default). 0: not known from a constant.
  static int32_t code_type(const onnx::GraphProto& graph, const onnx::NodeProto& node) {
    if (node.input_size() >= 3 && !node.input(2).empty()) {
      const onnx::TensorProto* zp = find_initializer(graph, node.input(2));
      return zp ? zp->data_type() : 0;
    }
    if (node.op_type() == "QuantizeLinear") return onnx::TensorProto::UINT8;
    const onnx::TensorProto* codes = node.input_size() >= 1 ? find_initializer(graph, node.input(0)) : nullptr;
    return codes ? codes->data_type() : 0;
  }

  void retag(const onnx::GraphProto& graph, onnx::NodeProto& node) {
    const int32_t type = code_type(graph, node);
    const bool per_axis = ir::find_attribute(node, "axis") != nullptr;
    const int64_t needed = first_default_opset(type, per_axis);
    if (needed == 0 || needed > opset_) {
      std::string why;
      if (type == 0) {
        why = "its code type is not known from a constant (zero point or codes)";
      } else if (needed == 0) {
        why = "its " + onnx_type_name(type) + " codes have no default-domain Q/DQ";
      } else {
        why = "its " + onnx_type_name(type) + " codes need opset " + std::to_string(needed) + ", the model has " +
              std::to_string(opset_);
      }
      summary_.kept.push_back(node.name() + ": " + why);
      return;
    }
    node.set_domain("");
    ++summary_.retagged;
  }

  void add_shape(onnx::NodeProto& node) {
    if (node.output_size() < 1) return;
    const auto it = observed_.find(node.output(0));
    if (it == observed_.end()) {
      summary_.no_shape.push_back(node.name());
      return;
    }
    onnx::AttributeProto shape;
    shape.set_name("shape");
    shape.set_type(onnx::AttributeProto::INTS);
    for (int64_t d : it->second.shape) shape.add_ints(d);
    const onnx::AttributeProto type = ir::make_string_attribute("data_type", dtype_name(it->second.dtype));
    if (same_attribute(node, shape) && same_attribute(node, type)) return;  // patched before
    ir::set_attribute(node, std::move(shape));
    ir::set_attribute(node, type);
    ++summary_.shape_attributes;
  }

  // ---- zero points of float (bf16/fp16) codes ----

  static bool float_codes(int32_t type) {
    return type == onnx::TensorProto::BFLOAT16 || type == onnx::TensorProto::FLOAT16;
  }
  // The node's name, or (other tools leave Q/DQ unnamed) its op and first output.
  static std::string name_of(const onnx::NodeProto& node) {
    if (!node.name().empty()) return node.name();
    return node.op_type() + " writing '" + (node.output_size() > 0 ? node.output(0) : std::string()) + "'";
  }
  static std::string zero_point_of(const onnx::NodeProto& node) {
    return node.input_size() >= 3 ? node.input(2) : std::string();
  }
  // Inputs named `name` in `graph` and the bodies inside it.
  static int64_t uses(const onnx::GraphProto& graph, const std::string& name) {
    int64_t n = 0;
    for_each_graph(graph, [&](const onnx::GraphProto& g) {
      for (const onnx::NodeProto& node : g.node()) n += std::ranges::count(node.input(), name);
    });
    return n;
  }

  // The zero point `proto` holds, as `target` (BFLOAT16/FLOAT16) raw data; empty with `why` set
  // when it cannot be written exactly.
  static std::optional<onnx::TensorProto> as_float_codes(const onnx::TensorProto& proto, int32_t target,
                                                          const std::string& label, std::string& why) {
    const DType to = dtype_from_onnx(target);
    const int32_t from = proto.data_type();
    Tensor value;
    if (from == target) {
      value = tensor_from_proto(proto, label);  // int32_data or raw: the same 16-bit patterns
    } else if (from == onnx::TensorProto::UINT16 || from == onnx::TensorProto::INT16) {
      const Tensor bits = tensor_from_proto(proto, label);  // the pattern a text format kept
      value = Tensor(to, bits.shape(), std::span(bits.data(), bits.byte_size()));
    } else if (from == onnx::TensorProto::FLOAT || from == onnx::TensorProto::DOUBLE || float_codes(from)) {
      const Tensor given = tensor_from_proto(proto, label);
      std::vector<double> values;
      if (from == onnx::TensorProto::DOUBLE) {
        values.assign(given.as<double>().begin(), given.as<double>().end());
      } else {
        for (float v : given.to_floats()) values.push_back(v);
      }
      const std::vector<float> narrowed(values.begin(), values.end());
      value = Tensor::from_floats(to, given.shape(), narrowed);
      const std::vector<float> back = value.to_floats();
      for (size_t i = 0; i < values.size(); ++i) {
        if (std::isnan(values[i]) || static_cast<double>(back[i]) != values[i]) {
          std::array<char, 32> digits{};
          char* end = from == onnx::TensorProto::DOUBLE
                                ? std::to_chars(digits.data(), digits.data() + digits.size(), values[i]).ptr
                                : std::to_chars(digits.data(), digits.data() + digits.size(), narrowed[i]).ptr;
          why = "its zero point " + std::string(digits.data(), static_cast<size_t>(end - digits.data())) + " is not a " +
                onnx_type_name(target) + " value";
          return std::nullopt;
        }
      }
    } else {
      why = "its zero point is " + onnx_type_name(from) + ", which cannot hold the zero point of " + onnx_type_name(target) +
            " codes";
      return std::nullopt;
    }
    onnx::TensorProto fixed = tensor_to_proto(value, proto.name());
    if (!proto.doc_string().empty()) fixed.set_doc_string(proto.doc_string());
    return fixed;
  }

  void fix_zero_points(onnx::GraphProto& graph) {
    std::map<std::string, int> initializer_index;
    for (int i = 0; i < graph.initializer_size(); ++i) initializer_index.emplace(graph.initializer(i).name(), i);
    const auto type_of = [&](const std::string& name) -> int32_t {
      const auto it = initializer_index.find(name);
      return it == initializer_index.end() ? 0 : graph.initializer(it->second).data_type();
    };
    std::map<std::string, const onnx::NodeProto*> quantize_by_output;
    std::multimap<std::string, const onnx::NodeProto*> dequantize_by_input;
    for (const onnx::NodeProto& node : graph.node()) {
      if (is_one_of(node, kQuantizeOps) && node.output_size() >= 1) quantize_by_output.emplace(node.output(0), &node);
      if (is_one_of(node, kDequantizeOps) && node.input_size() >= 1) dequantize_by_input.emplace(node.input(0), &node);
    }
    // Per zero point: the float code types its Q/DQ nodes have, and the nodes.
    struct Users {
      std::set<int32_t> types;
      std::vector<std::string> nodes;
    };
    std::map<std::string, Users> zero_points;
    for (const onnx::NodeProto& node : graph.node()) {
      const bool dequantize = is_one_of(node, kDequantizeOps);
      if (!dequantize && !is_one_of(node, kQuantizeOps)) continue;
      const std::string zp = zero_point_of(node);
      if (zp.empty()) continue;
      std::set<int32_t> types;
      const auto consider = [&](int32_t type) {
        if (float_codes(type)) types.insert(type);
      };
      consider(type_of(zp));
      if (dequantize) {
        consider(type_of(node.input(0)));
        const auto q = quantize_by_output.find(node.input(0));
        if (q != quantize_by_output.end()) consider(type_of(zero_point_of(*q->second)));
      } else {
        const auto [first, last] = dequantize_by_input.equal_range(node.output(0));
        for (auto it = first; it != last; ++it) consider(type_of(zero_point_of(*it->second)));
      }
      if (types.empty()) continue;
      if (types.size() > 1) {
        summary_.kept.push_back(name_of(node) + ": its codes are both FLOAT16 and BFLOAT16 by its zero point and its partner's");
        continue;
      }
      zero_points[zp].types.insert(*types.begin());
      zero_points[zp].nodes.push_back(name_of(node));
    }
    for (const auto& [zp, users] : zero_points) {
      const std::string nodes = text::join(users.nodes);
      const auto it = initializer_index.find(zp);
      const auto keep = [&](const std::string& why) {
        for (const std::string& node : users.nodes) summary_.kept.push_back(node + ": " + why);
      };
      if (users.types.size() > 1) {
        keep("its zero point '" + zp + "' is shared by FLOAT16 and BFLOAT16 Q/DQ");
        continue;
      }
      const int32_t target = *users.types.begin();
      if (it == initializer_index.end()) {
        keep("its zero point '" + zp + "' is not an initializer of its graph: its type is not checked against the " +
             onnx_type_name(target) + " codes");
        continue;
      }
      onnx::TensorProto& proto = *graph.mutable_initializer(it->second);
      if (proto.data_type() == target && proto.has_raw_data()) continue;  // already as the provider reads it
      if (proto.data_type() == target && proto.int32_data_size() == 0) continue;  // empty or external: not ours to touch
      if (uses(graph, zp) != static_cast<int64_t>(users.nodes.size())) {
        keep("its zero point '" + zp + "' is also an input of other nodes");
        continue;
      }
      if (std::ranges::any_of(graph.input(), [&](const onnx::ValueInfoProto& v) { return v.name() == zp; })) {
        keep("its zero point '" + zp + "' is also a graph input");
        continue;
      }
      std::string why;
      std::optional<onnx::TensorProto> fixed = as_float_codes(proto, target, label_, why);
      if (!fixed) {
        keep(why);
        continue;
      }
      const std::string from =
          proto.data_type() == target ? onnx_type_name(target) + " in int32_data" : onnx_type_name(proto.data_type());
      proto = std::move(*fixed);
      for (onnx::ValueInfoProto& v : *graph.mutable_value_info()) {
        if (v.name() == zp && v.type().has_tensor_type()) v.mutable_type()->mutable_tensor_type()->set_elem_type(target);
      }
      ++summary_.zero_points_fixed;
      summary_.zero_point_fixes.push_back(zp + ": " + from + " -> " + onnx_type_name(target) + " raw data (" + nodes + ")");
    }
  }

  static const onnx::TensorProto* find_initializer(const onnx::GraphProto& graph, const std::string& name) {
    for (const auto& init : graph.initializer()) {
      if (init.name() == name) return &init;
    }
    return nullptr;
  }

  onnx::ModelProto& model_;
  const std::map<std::string, ObservedTensor>& observed_;
  const std::string& label_;
  VaipPatchSummary& summary_;
  int64_t opset_;
};

}  // namespace

std::vector<std::string> vaip_patch_shape_tensors(const onnx::ModelProto& model) {
  std::vector<std::string> tensors;
  for (const onnx::NodeProto& node : model.graph().node()) {
    if ((is_extended_qdq(node) || is_one_of(node, kBlockOps)) && node.output_size() >= 1) {
      tensors.push_back(node.output(0));
    }
  }
  return tensors;
}

onnx::ModelProto vaip_patch(const onnx::ModelProto& model, const std::map<std::string, ObservedTensor>& observed,
                            const std::string& label, VaipPatchSummary* summary) {
  onnx::ModelProto patched = model;
  VaipPatchSummary local;
  Patcher(patched, observed, label, summary ? *summary : local).run();
  return patched;
}

onnx::ModelProto vaip_fix_zero_points(const onnx::ModelProto& model, const std::string& label, VaipPatchSummary* summary) {
  onnx::ModelProto fixed = model;
  VaipPatchSummary local;
  const std::map<std::string, ObservedTensor> none;
  Patcher(fixed, none, label, summary ? *summary : local).run_zero_points();
  return fixed;
}

}  // namespace mixprec::rewrite
