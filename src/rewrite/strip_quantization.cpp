// strip_quantization: the float model inside a QDQ or cast-pair model.
//
//   Before:  x → QuantizeLinear → q → DequantizeLinear → x'  → op
//            W_q → DequantizeLinear → W'                     → op
//            x → Cast(to=bf16) → Cast(to=float) → x''        → op
//            W_bf16 → Cast(to=float) → W''                   → op
//            x → BFPQuantizeDequantize | MXQuantizeDequantize → x'''  → op   (block formats)
//   After:   x → op,  W (float initializer = dequantized codes / widened values) → op
//
// Works on QuantizeLinear/DequantizeLinear of the default domain and of com.microsoft, and on
// Quark's operators: ExtendedQuantizeLinear/ExtendedDequantizeLinear and the block nodes of
// com.amd.quark, and their com.vai.quantize predecessors (as Quark's remove_qdq does). A block
// node on a weight initializer leaves the float weight it rounded; a weight mixprec rounded
// offline keeps its rounded values. A pair
// whose output is a graph output keeps the output's name (its source tensor is renamed). A
// Q whose codes are also read elsewhere (or a graph input holding codes) stays: the model
// really computes on them. QOperator kernels cannot be stripped by removing nodes and are
// kUnsupported. If/Loop/Scan bodies are stripped the same way, each inside its own body.
#include "mixprec/rewrite.h"

#include <cmath>
#include <unordered_map>
#include <unordered_set>

#include "ir/graph_view.h"
#include "ir/node_builder.h"
#include "mixprec/error.h"
#include "mixprec/tensor_proto.h"
#include "rewrite/graph_edit.h"
#include "rewrite/quant_ops.h"

namespace mixprec {
namespace {

using rewrite::is_one_of;
using rewrite::kBlockOps;
using rewrite::kDequantizeOps;
using rewrite::kQuantizeOps;

constexpr const char* kQOperatorOps[] = {"QLinearConv",   "QLinearMatMul", "MatMulInteger", "ConvInteger",
                                         "QGemm",         "QLinearAdd",    "QLinearMul",    "QLinearConcat",
                                         "QLinearSigmoid", "QLinearLeakyRelu", "QLinearAveragePool",
                                         "QLinearGlobalAveragePool", "QLinearSoftmax", "DynamicQuantizeMatMul"};

bool is_low_float(int32_t type) { return type == onnx::TensorProto::BFLOAT16 || type == onnx::TensorProto::FLOAT16; }

int64_t cast_to(const onnx::NodeProto& node) { return ir::int_attribute(node, "to").value_or(0); }

// Strips one graph: `view` indexes it as it was, `graph` is the copy that is edited (its nodes
// in the view's order until run() removes some). Bodies are stripped first, each on its own.
class Stripper {
 public:
  Stripper(const ir::GraphView& view, const std::string& label, StripSummary& summary, ir::NameAllocator& names)
      : view_(view), label_(label), summary_(summary), names_(names) {}

  void run(onnx::GraphProto& graph) {
    const ir::GraphView& view = view_;
    for (size_t i = 0; i < view.node_count(); ++i) {
      const onnx::NodeProto& node = view.node(i);
      for (const char* op : kQOperatorOps) {
        if (node.op_type() == op) {
          throw_unsupported(label_, "node '" + ir::node_label({&view, i}) + "' is a quantized kernel (" + op +
                                        "): dequantize strips QDQ and cast-pair models, not QOperator ones");
        }
      }
      if (!has_subgraph(node)) continue;
      const std::vector<const ir::GraphView*> bodies = view.subgraphs(i);
      size_t b = 0;
      for (auto& attribute : *graph.mutable_node(static_cast<int>(i))->mutable_attribute()) {
        if (attribute.has_g()) Stripper(*bodies.at(b++), label_, summary_, names_).run(*attribute.mutable_g());
        for (auto& body : *attribute.mutable_graphs()) Stripper(*bodies.at(b++), label_, summary_, names_).run(body);
      }
    }
    for (size_t i = 0; i < view.node_count(); ++i) match_node(view, i);

    auto* nodes = graph.mutable_node();
    for (int i = nodes->size() - 1; i >= 0; --i) {
      if (drop_.count(static_cast<size_t>(i))) nodes->DeleteSubrange(i, 1);
    }
    for (auto& init : folded_) *graph.add_initializer() = std::move(init);
    for (const auto& [from, unused] : bypass_) {
      const std::string source = source_of(from);
      if (!view.is_graph_output(from)) {
        rewrite::replace_reads(graph, from, source);
      } else if (view.producer(source) && !drop_.count(*view.producer(source)) && !view.is_graph_output(source)) {
        rewrite::rename_tensor(graph, source, from);  // the output keeps its name
      } else {
        // The source is a graph input, an initializer or another output: bridge it.
        *graph.add_node() = ir::make_node(
            {.op_type = "Identity", .name = names_.fresh(from + "_Identity"), .inputs = {source}, .outputs = {from}});
      }
    }
    rewrite::remove_unused(graph);
  }

 private:
  static bool has_subgraph(const onnx::NodeProto& node) {
    for (const auto& attr : node.attribute()) {
      if (attr.has_g() || attr.graphs_size() > 0) return true;
    }
    return false;
  }

  // The source a chain of removable nodes ends at: follows bypasses already recorded, so
  // Q→DQ→Q→DQ chains collapse to the first float tensor.
  std::string source_of(const std::string& name) const {
    auto it = bypass_.find(name);
    return it == bypass_.end() ? name : source_of(it->second);
  }

  void match_node(const ir::GraphView& view, size_t i) {
    const onnx::NodeProto& node = view.node(i);
    if (is_one_of(node, kBlockOps) && node.input_size() >= 1 && node.output_size() >= 1) {
      drop_.insert(i);
      bypass_[node.output(0)] = node.input(0);
      ++summary_.block_nodes;
      return;
    }
    if (is_one_of(node, kDequantizeOps)) {
      if (fold_constant_dq(view, i)) return;
      const auto q_index = view.producer(node.input(0));
      if (!q_index || !is_one_of(view.node(*q_index), kQuantizeOps)) return;
      drop_.insert(i);
      bypass_[node.output(0)] = view.node(*q_index).input(0);
      ++summary_.qdq_pairs;
      if (only_read_by_dropped(view, node.input(0))) drop_.insert(*q_index);
      return;
    }
    if (node.op_type() == "Cast" && cast_to(node) == onnx::TensorProto::FLOAT) {
      const onnx::TensorProto* init = view.resolve_initializer(node.input(0));
      if (init && is_low_float(init->data_type())) {
        const Tensor low = tensor_from_proto(*init, label_);
        folded_.push_back(tensor_to_proto(Tensor::from_floats(low.shape(), low.to_floats()), node.output(0)));
        drop_.insert(i);
        ++summary_.folded_initializers;
        return;
      }
      const auto low_index = view.producer(node.input(0));
      if (!low_index) return;
      const onnx::NodeProto& low = view.node(*low_index);
      if (low.op_type() != "Cast" || !is_low_float(static_cast<int32_t>(cast_to(low)))) return;
      drop_.insert(i);
      bypass_[node.output(0)] = low.input(0);
      ++summary_.cast_pairs;
      if (only_read_by_dropped(view, node.input(0))) drop_.insert(*low_index);
    }
  }

  bool only_read_by_dropped(const ir::GraphView& view, const std::string& name) const {
    if (view.is_graph_output(name)) return false;
    for (size_t c : view.consumers(name)) {
      if (!drop_.count(c)) return false;
    }
    return true;
  }

  // DequantizeLinear of constant codes → a float initializer named as its output.
  bool fold_constant_dq(const ir::GraphView& view, size_t i) {
    std::optional<Tensor> values = rewrite::dequantize_constant(view, view.node(i), label_);
    if (!values) return false;
    folded_.push_back(tensor_to_proto(*values, view.node(i).output(0)));
    drop_.insert(i);
    ++summary_.folded_initializers;
    return true;
  }

  const ir::GraphView& view_;
  const std::string& label_;
  StripSummary& summary_;
  ir::NameAllocator& names_;
  std::unordered_set<size_t> drop_;
  std::unordered_map<std::string, std::string> bypass_;  // removed tensor → the tensor it stood for
  std::vector<onnx::TensorProto> folded_;
};

}  // namespace

onnx::ModelProto strip_quantization(const onnx::ModelProto& model, const std::string& label, StripSummary* summary) {
  StripSummary local;
  StripSummary& s = summary ? *summary : local;
  const ir::GraphView view(model.graph(), label);
  ir::NameAllocator names(model);
  onnx::ModelProto out = model;
  Stripper(view, label, s, names).run(*out.mutable_graph());
  return out;
}

}  // namespace mixprec
