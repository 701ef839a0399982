// Quantization state: which quantization mechanisms a model already contains, how many nodes
// each one accounts for, and which quantized element types it uses.
#include <algorithm>
#include <set>

#include "analysis/model_graph.h"

namespace mixprec::analysis {
namespace {

bool is_default_q_or_dq(const ModelGraph& graph, size_t id) {
  const ir::QuantRole role = graph.quant_role(id);
  return (role == ir::QuantRole::kQuantize || role == ir::QuantRole::kDequantize) && ir::is_default_domain(graph.node(id).domain());
}

// A default-domain Q/DQ that only converts at the edge of quantized kernels: a Q all of whose
// readers are QOperator nodes, or a DQ reading a QOperator output. QOperator-format models are
// full of them and are not QDQ models.
bool bounds_qoperator_region(const ModelGraph& graph, size_t id) {
  const onnx::NodeProto& n = graph.node(id);
  if (n.input_size() == 0 || n.output_size() == 0) return false;
  if (graph.quant_role(id) == ir::QuantRole::kDequantize) {
    const auto source = graph.producer(id, n.input(0));
    return source && graph.quant_role(*source) == ir::QuantRole::kQOperator;
  }
  const ir::NodeRef& ref = graph.ref(id);
  const std::vector<size_t>& readers = ref.graph->consumers(n.output(0));
  return !readers.empty() && std::all_of(readers.begin(), readers.end(), [&](size_t reader) {
    const onnx::NodeProto& consumer = ref.graph->node(reader);
    const ir::OpTraits* traits = ir::find_op_traits(consumer.domain(), consumer.op_type());
    return traits != nullptr && traits->quant_role == ir::QuantRole::kQOperator;
  });
}

// The block format a BFP/MX fake-quantization node applies, by Quark's names: "bfp16", "mx9"
// (to_bfp_prime at 16 bits), "mxint8", "mxfp8_e4m3", ...; "" for other nodes.
std::string block_format_name(const onnx::NodeProto& n) {
  const auto text = [&](const char* key, const char* fallback) {
    return ir::string_attribute(n, key).value_or(fallback);
  };
  if (n.op_type().starts_with("MX")) return "mx" + text("element_dtype", "int8");
  if (!n.op_type().starts_with("BFP")) return "";
  const int64_t bits = ir::int_attribute(n, "bit_width").value_or(16);
  if (text("bfp_method", "to_bfp") == "to_bfp") return "bfp" + std::to_string(bits);
  return "mx" + std::to_string(bits - 7);  // MX4/MX6/MX9 are 11/13/16 bits
}

// Quantized element types a quantization node declares.
void collect_quant_types(const ModelGraph& graph, size_t id, std::set<std::string>* types) {
  const onnx::NodeProto& n = graph.node(id);
  const ir::OpTraits& traits = *graph.traits(id);
  if (traits.quant_role == ir::QuantRole::kQuantizeDequantize) {
    if (const std::string block = block_format_name(n); !block.empty()) types->insert(block);
    return;
  }
  for (int i = 0; i < n.input_size(); ++i) {
    if (!ir::mask_has_input(traits.quant_type_inputs, i) || n.input(i).empty()) continue;
    if (const int32_t type = graph.element_type(id, n.input(i)); type != onnx::TensorProto::UNDEFINED) {
      types->insert(ir::onnx_type_name(type));
    }
  }
  // ONNX QuantizeLinear without a zero point outputs uint8, unless opset 21's output_dtype says.
  const bool has_zero_point = n.input_size() > 2 && !n.input(2).empty();
  if (traits.quant_role == ir::QuantRole::kQuantize && ir::is_default_domain(n.domain()) && !has_zero_point) {
    int64_t type = ir::int_attribute(n, "output_dtype").value_or(onnx::TensorProto::UNDEFINED);
    if (type == onnx::TensorProto::UNDEFINED) type = onnx::TensorProto::UINT8;
    types->insert(ir::onnx_type_name(static_cast<int32_t>(type)));
  }
}

}  // namespace

QuantizationSummary summarize_quantization(const ModelGraph& graph) {
  QuantizationSummary summary;
  std::set<std::string> types;
  bool has_qdq = false;
  for (size_t id = 0; id < graph.size(); ++id) {
    const ir::QuantRole role = graph.quant_role(id);
    if (role != ir::QuantRole::kNone) collect_quant_types(graph, id, &types);

    if (is_default_q_or_dq(graph, id)) {
      ++(role == ir::QuantRole::kQuantize ? summary.quantize_linear : summary.dequantize_linear);
      has_qdq = has_qdq || !bounds_qoperator_region(graph, id);
    } else if (role == ir::QuantRole::kQOperator) {
      ++summary.qoperator_nodes;
    } else if (role != ir::QuantRole::kNone) {
      ++summary.custom_domain_nodes;
    }

    // A cast pair is counted at its second Cast: to FLOAT, reading a Cast to BF16/FP16.
    if (const int32_t low = graph.cast_back_source_type(id); low != onnx::TensorProto::UNDEFINED) {
      const auto source = graph.producer(id, graph.node(id).input(0));
      if (source && graph.cast_target(*source) == low) {
        ++(low == onnx::TensorProto::BFLOAT16 ? summary.cast_pairs_bf16 : summary.cast_pairs_fp16);
        types.insert(ir::onnx_type_name(low));
      }
    }
  }

  const bool mechanisms[] = {has_qdq, summary.cast_pairs_bf16 + summary.cast_pairs_fp16 > 0,
                             summary.qoperator_nodes > 0, summary.custom_domain_nodes > 0};
  constexpr QuantState kStates[] = {QuantState::kQdq, QuantState::kCastPairs, QuantState::kQOperator,
                                    QuantState::kCustomDomain};
  const auto present = std::count(std::begin(mechanisms), std::end(mechanisms), true);
  if (present > 1) {
    summary.state = QuantState::kMixed;
  } else if (present == 1) {
    summary.state = kStates[std::find(std::begin(mechanisms), std::end(mechanisms), true) - std::begin(mechanisms)];
  }
  summary.dtypes.assign(types.begin(), types.end());
  return summary;
}

}  // namespace mixprec::analysis
