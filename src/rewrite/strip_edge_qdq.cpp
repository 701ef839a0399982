// strip_edge_qdq (see strip_edge_qdq.h).
//
// Before:  x (float) -> QuantizeLinear -> x_q -> DequantizeLinear -> Conv -> ... -> y_q -> DequantizeLinear -> y (float)
// After:   x (uint8) -----------------------> DequantizeLinear -> Conv -> ... -> y (uint8)
//
// Preconditions (else the site is matched but excluded, with the reason):
// - the Q is the graph input's only reader, and its codes are not a graph output;
// - the codes reach integer arithmetic: every DequantizeLinear reading them feeds nodes whose
//   result is quantized again within a short single-reader chain (Conv -> Relu -> Q), not a
//   float island (that would be a fake-quant pair);
// - the DQ's codes come from a Q of integer arithmetic (a node whose every computed input is
//   dequantized) or from an integer kernel; they are not a graph input or output themselves.
#include "rewrite/strip_edge_qdq.h"

#include <algorithm>
#include <unordered_set>

#include "ir/graph_view.h"
#include "mixprec/tensor.h"
#include "mixprec/tensor_proto.h"
#include "rewrite/graph_edit.h"

namespace mixprec::rewrite {
namespace {

constexpr int kQuantizedWithin = 3;  // nodes a DQ's reader may pass through before the Q (Conv -> Relu -> Clip -> Q)

bool is_q(const onnx::NodeProto& node) {
  return node.op_type() == "QuantizeLinear" && (node.domain().empty() || node.domain() == "ai.onnx" ||
                                                node.domain() == "com.microsoft");
}
bool is_dq(const onnx::NodeProto& node) {
  return node.op_type() == "DequantizeLinear" && (node.domain().empty() || node.domain() == "ai.onnx" ||
                                                  node.domain() == "com.microsoft");
}

bool is_graph_output(const onnx::GraphProto& graph, const std::string& name) {
  return std::ranges::any_of(graph.output(), [&](const auto& out) { return out.name() == name; });
}

std::string quoted_node(const ir::GraphView& view, size_t index) {
  std::string out = "'";
  out.append(ir::node_label({&view, index})).append("' (").append(view.node(index).op_type()).append(")");
  return out;
}

// Whether what `node` computes is quantized again: it is a Q, or one of its outputs is read by
// a Q within kQuantizedWithin single-reader steps.
bool requantized(const ir::GraphView& view, size_t node, int steps) {
  if (is_q(view.node(node))) return true;
  if (steps == 0) return false;
  for (const auto& out : view.node(node).output()) {
    const auto& readers = view.consumers(out);
    if (readers.empty() || is_graph_output(view.graph(), out)) return false;
    if (std::ranges::all_of(readers, [&](size_t r) { return is_q(view.node(r)); })) continue;
    if (readers.size() != 1 || !requantized(view, readers.front(), steps - 1)) return false;
  }
  return true;
}

const DTypeTraits* codes_traits(int32_t type) {
  for (const DTypeTraits& traits : all_dtype_traits()) {
    if (traits.onnx_type == type) return &traits;
  }
  return nullptr;
}

bool integer_codes(int32_t type) {
  const DTypeTraits* traits = codes_traits(type);
  if (traits == nullptr) return false;
  switch (traits->dtype) {
    case DType::kInt8: case DType::kUInt8: case DType::kInt16: case DType::kUInt16: case DType::kInt4:
    case DType::kUInt4: return true;
    default: return false;
  }
}

// A float-coded Q/DQ (bf16, fp16, fp8) emulates a float format: there is no integer edge.
std::string float_codes(int32_t type) {
  const DTypeTraits* traits = codes_traits(type);
  return "its codes are " + (traits != nullptr ? std::string(traits->name) : "of type " + std::to_string(type)) +
         ", not integers: nothing for the runtime to quantize";
}

int32_t initializer_type(const ir::GraphView& view, const std::string& name) {
  const onnx::TensorProto* init = view.initializer(name);
  return init != nullptr ? init->data_type() : 0;
}

int32_t declared_type(const onnx::GraphProto& graph, const std::string& name) {
  for (const auto* list : {&graph.value_info(), &graph.input(), &graph.output()}) {
    for (const auto& v : *list) {
      if (v.name() == name && v.type().has_tensor_type()) return v.type().tensor_type().elem_type();
    }
  }
  return 0;
}

// The element type a Q writes: its zero point's, else opset 21's output_dtype, else uint8.
int32_t q_codes(const ir::GraphView& view, const onnx::NodeProto& q) {
  if (q.input_size() > 2 && !q.input(2).empty()) return initializer_type(view, q.input(2));
  const auto output_dtype = ir::int_attribute(q, "output_dtype");
  return output_dtype && *output_dtype != 0 ? static_cast<int32_t>(*output_dtype) : onnx::TensorProto::UINT8;
}

void read_params(const ir::GraphView& view, const onnx::NodeProto& node, const std::string& label, EdgeSite& site) {
  if (const onnx::TensorProto* scale = node.input_size() > 1 ? view.initializer(node.input(1)) : nullptr) {
    site.scale = tensor_from_proto(*scale, label).to_floats();
  }
  if (const onnx::TensorProto* zp = node.input_size() > 2 ? view.initializer(node.input(2)) : nullptr) {
    for (float v : tensor_from_proto(*zp, label).to_floats()) site.zero_point.push_back(static_cast<int32_t>(v));
  }
  if (site.scale.size() > 1) site.axis = ir::int_attribute(node, "axis").value_or(1);
}

EdgeSite match_input(const ir::GraphView& view, size_t q, const std::string& label) {
  const onnx::NodeProto& node = view.node(q);
  EdgeSite site{.input = true, .tensor = node.input(0), .node = ir::node_label({&view, q})};
  site.codes = q_codes(view, node);
  read_params(view, node, label, site);
  if (!integer_codes(site.codes)) {
    site.excluded = float_codes(site.codes);
    return site;
  }
  for (size_t reader : view.consumers(site.tensor)) {
    if (reader != q) {
      site.excluded = "the input is also read by " + quoted_node(view, reader);
      return site;
    }
  }
  const std::string& codes = node.output(0);
  if (is_graph_output(view.graph(), codes)) {
    site.excluded = "its codes are a graph output";
    return site;
  }
  for (size_t reader : view.consumers(codes)) {
    if (!is_dq(view.node(reader))) continue;  // an integer kernel reads the codes (QLinearConv, ...)
    const std::string& dequantized = view.node(reader).output(0);
    if (is_graph_output(view.graph(), dequantized)) {
      site.excluded = "a fake-quant pair: " + quoted_node(view, reader) + " writes a graph output";
      return site;
    }
    for (size_t op : view.consumers(dequantized)) {
      if (!requantized(view, op, kQuantizedWithin)) {
        site.excluded = "a fake-quant pair: " + quoted_node(view, reader) + " feeds float arithmetic at " +
                        quoted_node(view, op);
        return site;
      }
    }
  }
  return site;
}

EdgeSite match_output(const ir::GraphView& view, size_t dq, const std::string& label) {
  const onnx::NodeProto& node = view.node(dq);
  EdgeSite site{.input = false, .tensor = node.output(0), .node = ir::node_label({&view, dq})};
  read_params(view, node, label, site);
  const std::string& codes = node.input(0);
  const auto producer = view.producer(codes);
  if (node.input_size() > 2 && !node.input(2).empty()) site.codes = initializer_type(view, node.input(2));
  if (site.codes == 0 && producer && is_q(view.node(*producer))) site.codes = q_codes(view, view.node(*producer));
  if (site.codes == 0) site.codes = declared_type(view.graph(), codes);
  if (!producer) {
    site.excluded = "its codes are a graph input or a constant";
  } else if (is_graph_output(view.graph(), codes)) {
    site.excluded = "its codes are a graph output too";
  } else if (site.codes == 0) {
    site.excluded = "the type of its codes is not known";
  } else if (!integer_codes(site.codes)) {
    site.excluded = float_codes(site.codes);
  } else if (is_q(view.node(*producer))) {
    const auto source = view.producer(view.node(*producer).input(0));
    if (!source) {
      site.excluded = "a fake-quant pair: its Q quantizes a graph input";
    } else {
      for (const auto& in : view.node(*source).input()) {
        if (in.empty() || view.is_initializer(in)) continue;
        const auto from = view.producer(in);
        if (!from || !is_dq(view.node(*from))) {
          site.excluded = "a fake-quant pair: its Q quantizes float arithmetic at " + quoted_node(view, *source);
          break;
        }
      }
    }
  }
  return site;
}

}  // namespace

std::vector<EdgeSite> match_edge_qdq(const onnx::ModelProto& model, const std::string& label) {
  const ir::GraphView view(model.graph(), label);
  std::vector<EdgeSite> sites;
  std::unordered_set<std::string> inputs;
  for (const auto& input : model.graph().input()) {
    if (!view.is_initializer(input.name())) inputs.insert(input.name());
  }
  for (size_t i = 0; i < view.node_count(); ++i) {
    const onnx::NodeProto& node = view.node(i);
    if (is_q(node) && node.input_size() > 0 && inputs.contains(node.input(0))) sites.push_back(match_input(view, i, label));
  }
  for (size_t i = 0; i < view.node_count(); ++i) {
    const onnx::NodeProto& node = view.node(i);
    if (is_dq(node) && node.output_size() > 0 && is_graph_output(model.graph(), node.output(0))) {
      sites.push_back(match_output(view, i, label));
    }
  }
  return sites;
}

onnx::ModelProto strip_edge_qdq(const onnx::ModelProto& model, const std::vector<EdgeSite>& sites) {
  onnx::ModelProto out = model;
  onnx::GraphProto& graph = *out.mutable_graph();
  const auto set_type = [](auto& values, const std::string& name, int32_t type) {
    for (auto& v : values) {
      if (v.name() == name) v.mutable_type()->mutable_tensor_type()->set_elem_type(type);
    }
  };
  for (const EdgeSite& site : sites) {
    if (!site.excluded.empty()) continue;
    auto& nodes = *graph.mutable_node();
    const auto it = std::ranges::find_if(nodes, [&](const onnx::NodeProto& n) {
      return site.input ? is_q(n) && n.input_size() > 0 && n.input(0) == site.tensor
                        : is_dq(n) && n.output_size() > 0 && n.output(0) == site.tensor;
    });
    if (it == nodes.end()) continue;
    if (site.input) {
      const std::string codes = it->output(0);
      nodes.erase(it);
      replace_reads(graph, codes, site.tensor);
      set_type(*graph.mutable_input(), site.tensor, site.codes);
    } else {
      const std::string codes = it->input(0);
      nodes.erase(it);
      auto& infos = *graph.mutable_value_info();  // the float output's own entry would contradict the codes'
      infos.erase(std::remove_if(infos.begin(), infos.end(), [&](const auto& v) { return v.name() == site.tensor; }),
                  infos.end());
      rename_tensor(graph, codes, site.tensor);
      set_type(*graph.mutable_output(), site.tensor, site.codes);
    }
  }
  remove_unused(graph);
  return out;
}

}  // namespace mixprec::rewrite
