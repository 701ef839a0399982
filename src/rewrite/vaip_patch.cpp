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
//
// Nothing else changes: no node is added or removed, no value is rounded. Bodies of If/Loop/
// Scan are patched the same way; their custom nodes get shape attributes only when a shape
// was observed for them.
#include "rewrite/vaip_patch.h"

#include <cctype>
#include <string>

#include "ir/graph_view.h"
#include "ir/node_builder.h"
#include "mixprec/error.h"
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
  for (const auto& a : node.attribute()) {
    if (a.name() == want.name()) return a.SerializeAsString() == want.SerializeAsString();
  }
  return false;
}

bool has_attribute(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name) return true;
  }
  return false;
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
  Patcher(onnx::ModelProto& model, const std::map<std::string, ObservedTensor>& observed, VaipPatchSummary& summary)
      : model_(model), observed_(observed), summary_(summary), opset_(default_opset(model)) {}

  void run() { patch(*model_.mutable_graph()); }

 private:
  void patch(onnx::GraphProto& graph) {
    for (onnx::NodeProto& node : *graph.mutable_node()) {
      for (onnx::AttributeProto& a : *node.mutable_attribute()) {
        if (a.has_g()) patch(*a.mutable_g());
        for (onnx::GraphProto& g : *a.mutable_graphs()) patch(g);
      }
      if (node.domain() == kMicrosoft && (is_one_of(node, kQuantizeOps) || is_one_of(node, kDequantizeOps))) {
        retag(graph, node);
      }
      if (is_bfp(node) && !has_attribute(node, "sub_block_shift_bits")) {
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
    const bool per_axis = has_attribute(node, "axis");
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

  static const onnx::TensorProto* find_initializer(const onnx::GraphProto& graph, const std::string& name) {
    for (const auto& init : graph.initializer()) {
      if (init.name() == name) return &init;
    }
    return nullptr;
  }

  onnx::ModelProto& model_;
  const std::map<std::string, ObservedTensor>& observed_;
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
                            VaipPatchSummary* summary) {
  onnx::ModelProto patched = model;
  VaipPatchSummary local;
  Patcher(patched, observed, summary ? *summary : local).run();
  return patched;
}

}  // namespace mixprec::rewrite
