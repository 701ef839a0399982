// MAC estimation from shapes: fix the graph inputs' dims, run ONNX shape inference on a copy,
// then apply each op's formula (its ir::OpTraits row names it) to the known shapes.
#include "mixprec/macs.h"

#include <algorithm>
#include <optional>
#include <set>
#include <span>
#include <string_view>

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include "common/text.h"
#include "ir/graph_view.h"
#include "ir/op_traits.h"
#include "mixprec/analysis.h"
#include "mixprec/error.h"

namespace mixprec {
namespace {

// How many fallback nodes a note names before it says "...".
constexpr size_t kNoteMaxNodes = 5;

bool is_numeric(const onnx::TensorShapeProto::Dimension& dim) { return dim.has_dim_value() && dim.dim_value() >= 0; }

using Shape = std::vector<int64_t>;

// The fully known shape of `name` as seen from `graph`: an initializer's dims, or a declared or
// inferred ValueInfo whose dims are all numbers. nullopt for "" (an omitted optional input).
std::optional<Shape> known_shape(const ir::GraphView& graph, const std::string& name) {
  if (name.empty()) return std::nullopt;
  if (const onnx::TensorProto* initializer = graph.resolve_initializer(name)) {
    return Shape(initializer->dims().begin(), initializer->dims().end());
  }
  const onnx::ValueInfoProto* info = graph.resolve_value_info(name);
  if (!info || !info->type().has_tensor_type() || !info->type().tensor_type().has_shape()) return std::nullopt;
  Shape shape;
  for (const auto& dim : info->type().tensor_type().shape().dim()) {
    if (!is_numeric(dim)) return std::nullopt;
    shape.push_back(dim.dim_value());
  }
  return shape;
}

std::optional<Shape> input_shape(const ir::GraphView& graph, const onnx::NodeProto& node, int input) {
  return input < node.input_size() ? known_shape(graph, node.input(input)) : std::nullopt;
}

std::optional<Shape> output_shape(const ir::GraphView& graph, const onnx::NodeProto& node) {
  return node.output_size() > 0 ? known_shape(graph, node.output(0)) : std::nullopt;
}

// Products in double: element counts of large models overflow nothing, and MACs are reported
// as doubles anyway.
double product(std::span<const int64_t> dims) {
  double result = 1;
  for (int64_t dim : dims) result *= static_cast<double>(dim);
  return result;
}

bool attribute_set(const onnx::NodeProto& node, std::string_view name) {
  return ir::int_attribute(node, name).value_or(0) != 0;
}

// The formulas (ir::MacFormula): the exact MACs of `node`, nullopt when a shape a formula needs
// is unknown. X / A is input 0, W / B the row's weight_input.
using MacFormulaFn = std::optional<double> (*)(const ir::GraphView& graph, const onnx::NodeProto& node,
                                               int weight_input);

std::optional<double> conv_macs(const ir::GraphView& graph, const onnx::NodeProto& node, int weight_input) {
  const std::optional<Shape> weight = input_shape(graph, node, weight_input);
  const std::optional<Shape> output = output_shape(graph, node);
  if (!weight || weight->empty() || !output) return std::nullopt;
  return product(*output) * product(std::span(*weight).subspan(1));
}

std::optional<double> conv_transpose_macs(const ir::GraphView& graph, const onnx::NodeProto& node,
                                          int weight_input) {
  const std::optional<Shape> weight = input_shape(graph, node, weight_input);
  const std::optional<Shape> input = input_shape(graph, node, 0);
  if (!weight || weight->empty() || !input) return std::nullopt;
  return product(*input) * product(std::span(*weight).subspan(1));
}

std::optional<double> matmul_macs(const ir::GraphView& graph, const onnx::NodeProto& node, int weight_input) {
  const std::optional<Shape> weight = input_shape(graph, node, weight_input);
  const std::optional<Shape> a = input_shape(graph, node, 0);
  const std::optional<Shape> output = output_shape(graph, node);
  if (!output) return std::nullopt;
  // K is A's last dim; B's second-to-last (its only one when 1-D) when A is unknown.
  std::optional<int64_t> k;
  if (a && !a->empty()) {
    k = a->back();
  } else if (weight && !weight->empty()) {
    k = weight->size() == 1 ? weight->front() : (*weight)[weight->size() - 2];
  }
  if (!k) return std::nullopt;
  return product(*output) * static_cast<double>(*k);
}

std::optional<double> gemm_macs(const ir::GraphView& graph, const onnx::NodeProto& node, int weight_input) {
  const std::optional<Shape> weight = input_shape(graph, node, weight_input);
  const std::optional<Shape> a = input_shape(graph, node, 0);
  if (!weight || weight->size() != 2) return std::nullopt;
  const bool trans_b = attribute_set(node, "transB");
  const int64_t k = trans_b ? (*weight)[1] : (*weight)[0];
  const int64_t n = trans_b ? (*weight)[0] : (*weight)[1];
  std::optional<int64_t> m;
  if (a && a->size() == 2) {
    m = attribute_set(node, "transA") ? (*a)[1] : (*a)[0];
  } else if (const std::optional<Shape> output = output_shape(graph, node); output && output->size() == 2) {
    m = (*output)[0];
  }
  if (!m) return std::nullopt;
  return static_cast<double>(*m) * static_cast<double>(n) * static_cast<double>(k);
}

// Every time step multiplies the input by W and the hidden state by R, per direction and gate:
// X is [seq, batch, input] (or [batch, seq, input] with layout 1: the same product).
std::optional<double> recurrent_macs(const ir::GraphView& graph, const onnx::NodeProto& node, int weight_input) {
  const std::optional<Shape> x = input_shape(graph, node, 0);
  const std::optional<Shape> w = input_shape(graph, node, weight_input);
  const std::optional<Shape> r = input_shape(graph, node, weight_input + 1);
  if (!x || x->size() != 3 || !w || !r) return std::nullopt;
  return static_cast<double>((*x)[0]) * static_cast<double>((*x)[1]) * (product(*w) + product(*r));
}

// Indexed by ir::MacFormula.
constexpr MacFormulaFn kMacFormulas[] = {nullptr, conv_macs, conv_transpose_macs, matmul_macs, gemm_macs,
                                         recurrent_macs};
static_assert(std::size(kMacFormulas) == ir::kMacFormulaCount);

MacFormulaFn mac_formula(const ir::OpTraits& traits) { return kMacFormulas[static_cast<size_t>(traits.macs)]; }

std::string join_labels(const std::vector<std::string>& labels) {
  std::string joined;
  for (size_t i = 0; i < labels.size() && i < kNoteMaxNodes; ++i) {
    if (i > 0) joined += ", ";
    joined += labels[i];
  }
  if (labels.size() > kNoteMaxNodes) joined += ", ...";
  return joined;
}

// Gives the copy's graph inputs the shapes the estimate assumes (see the header).
void fix_input_shapes(onnx::GraphProto* graph, const std::map<std::string, std::vector<int64_t>>& input_shapes,
                      const std::string& model_path, std::vector<std::string>* notes) {
  std::vector<std::string_view> initializers;
  for (const onnx::TensorProto& initializer : graph->initializer()) initializers.push_back(initializer.name());
  const auto is_initializer = [&](std::string_view name) {
    return std::find(initializers.begin(), initializers.end(), name) != initializers.end();
  };

  std::vector<std::string> input_names;
  for (const onnx::ValueInfoProto& input : graph->input()) {
    if (!is_initializer(input.name())) input_names.push_back(input.name());
  }
  for (const auto& [name, dims] : input_shapes) {
    if (std::find(input_names.begin(), input_names.end(), name) == input_names.end()) {
      const std::string known = text::join(input_names);
      throw_bad_input(model_path, "input shape given for '" + name + "', which is not a graph input (inputs: " + known + ")");
    }
  }

  for (onnx::ValueInfoProto& input : *graph->mutable_input()) {
    if (is_initializer(input.name())) continue;
    const auto given = input_shapes.find(input.name());
    // Sequence, map and optional inputs keep their types; only an untyped input may become a
    // tensor, and only when the caller gives it a shape.
    const bool untyped = input.type().value_case() == onnx::TypeProto::VALUE_NOT_SET;
    if (!input.type().has_tensor_type() && !(untyped && given != input_shapes.end())) {
      if (given != input_shapes.end()) throw_bad_input(model_path, "input '" + input.name() + "' is not a tensor");
      continue;
    }
    onnx::TypeProto_Tensor* tensor = input.mutable_type()->mutable_tensor_type();
    if (given != input_shapes.end()) {
      const std::vector<int64_t>& dims = given->second;
      const bool declared = tensor->has_shape();
      if (declared && tensor->shape().dim_size() != static_cast<int>(dims.size())) {
        throw_bad_input(model_path, "input '" + input.name() + "' has rank " + std::to_string(tensor->shape().dim_size()) +
                                        ", the given shape has " + std::to_string(dims.size()) + " dims");
      }
      for (size_t i = 0; i < dims.size(); ++i) {
        if (dims[i] <= 0) {
          throw_bad_input(model_path, "input '" + input.name() + "': dim " + std::to_string(i) + " of the given shape is " +
                                          std::to_string(dims[i]) + ", must be > 0");
        }
        if (declared && is_numeric(tensor->shape().dim(static_cast<int>(i))) &&
            tensor->shape().dim(static_cast<int>(i)).dim_value() != dims[i]) {
          throw_bad_input(model_path, "input '" + input.name() + "': dim " + std::to_string(i) + " is declared " +
                                          std::to_string(tensor->shape().dim(static_cast<int>(i)).dim_value()) +
                                          ", the given shape has " + std::to_string(dims[i]));
        }
      }
      onnx::TensorShapeProto* shape = tensor->mutable_shape();
      shape->clear_dim();
      for (int64_t dim : dims) shape->add_dim()->set_dim_value(dim);
      continue;
    }
    if (!tensor->has_shape() || tensor->shape().dim_size() == 0 || is_numeric(tensor->shape().dim(0))) continue;
    onnx::TensorShapeProto::Dimension* batch = tensor->mutable_shape()->mutable_dim(0);
    const std::string what = batch->has_dim_param() ? "batch dim '" + batch->dim_param() + "'" : "unknown first dim";
    notes->push_back("input '" + input.name() + "': " + what + " taken as 1");
    batch->set_dim_value(1);
  }
}

// Declares each observed shape as a value_info of the graph (bodies included) computing it.
void declare_observed_shapes(onnx::GraphProto& graph, const std::map<std::string, std::vector<int64_t>>& shapes) {
  const auto declare = [&](const std::string& name) {
    const auto it = shapes.find(name);
    if (it == shapes.end()) return;
    onnx::ValueInfoProto& info = *graph.add_value_info();
    info.set_name(name);
    onnx::TypeProto_Tensor* tensor = info.mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t dim : it->second) tensor->mutable_shape()->add_dim()->set_dim_value(dim);
  };
  std::set<std::string> declared;
  for (const auto& info : graph.value_info()) declared.insert(info.name());
  for (const auto& input : graph.input()) declared.insert(input.name());
  for (const auto& output : graph.output()) declared.insert(output.name());
  for (auto& node : *graph.mutable_node()) {
    for (const auto& output : node.output()) {
      if (!declared.contains(output)) declare(output);
    }
    for (auto& attribute : *node.mutable_attribute()) {
      if (attribute.has_g()) declare_observed_shapes(*attribute.mutable_g(), shapes);
      for (auto& body : *attribute.mutable_graphs()) declare_observed_shapes(body, shapes);
    }
  }
}

}  // namespace

MacEstimate estimate_node_macs(const onnx::ModelProto& model,
                               const std::map<std::string, std::vector<int64_t>>& input_shapes,
                               const std::string& model_path,
                               const std::map<std::string, std::vector<int64_t>>& observed_shapes) {
  MacEstimate estimate;
  onnx::ModelProto copy = model;
  fix_input_shapes(copy.mutable_graph(), input_shapes, model_path, &estimate.notes);
  if (!observed_shapes.empty()) declare_observed_shapes(*copy.mutable_graph(), observed_shapes);
  // error_mode 0: a node ONNX cannot infer (unknown schema, opset beyond libonnx's) keeps its
  // declared shapes and the rest of the graph is still inferred.
  try {
    onnx::shape_inference::InferShapes(copy, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(false, 0, true));
  } catch (const std::exception& e) {
    estimate.notes.push_back(std::string("ONNX shape inference failed, only declared shapes are used: ") + e.what());
  }

  const ir::GraphView view(copy.graph(), model_path);
  std::vector<std::string> estimated;  // fallback nodes
  std::vector<std::string> uncounted;  // compute nodes without a formula
  for (const ir::NodeRef& ref : view.nested_nodes()) {
    const onnx::NodeProto& node = ref.node();
    NodeMacs result{.op_type = ir::qualified_op_type(node)};
    const std::string label = ir::node_label(ref);
    const ir::OpTraits& traits = ir::op_traits(node);
    if (const MacFormulaFn formula = mac_formula(traits)) {
      if (const std::optional<double> macs = formula(*ref.graph, node, traits.weight_input)) {
        result.macs = *macs;
      } else {
        const std::optional<Shape> weight = input_shape(*ref.graph, node, traits.weight_input);
        result.macs = weight ? product(*weight) : 0;
        result.exact = false;
        estimated.push_back(label);
      }
    } else if (traits.flags & ir::kCompute) {
      result.exact = false;
      uncounted.push_back(label);
    }
    estimate.total += result.macs;
    estimate.exact = estimate.exact && result.exact;
    // Labels are unique unless the model repeats a node name; such nodes share one entry.
    const auto [it, inserted] = estimate.nodes.emplace(label, result);
    if (!inserted) {
      it->second.macs += result.macs;
      it->second.exact = it->second.exact && result.exact;
    }
  }
  if (!estimated.empty()) {
    estimate.notes.push_back(std::to_string(estimated.size()) +
                             " node(s) with unknown shapes estimated from their weight's element count: " +
                             join_labels(estimated));
  }
  if (!uncounted.empty()) {
    estimate.notes.push_back(std::to_string(uncounted.size()) + " compute node(s) not counted (no MAC formula): " +
                             join_labels(uncounted));
  }
  return estimate;
}

}  // namespace mixprec
