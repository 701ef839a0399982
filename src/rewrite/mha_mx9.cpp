// mha_mx9: the ViT MHA-MX9 pipeline (see mha_mx9.h for the four steps, their Before/After and
// preconditions). Each step matches on the current model, then rewrites; shape inference and
// the static-shape check run after every step.
#include "rewrite/mha_mx9.h"

#include <algorithm>
#include <map>
#include <set>

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include "ir/graph_view.h"
#include "ir/node_builder.h"
#include "mixprec/analysis.h"
#include "mixprec/error.h"
#include "mixprec/formats.h"
#include "mixprec/tensor_proto.h"
#include "rewrite/graph_edit.h"
#include "rewrite/qdq_pairs.h"
#include "rewrite/upgrade_opset.h"

namespace mixprec::rewrite {
namespace {

using mixprec::MhaMx9Step;
using mixprec::MhaMx9Summary;

constexpr int kPathDepth = 16;  // nodes between Q.K^T and P.V (scale, mask, softmax, casts, Q/DQ)

// Shapes and element types the model declares or inference gave, by tensor name.
std::map<std::string, const onnx::TypeProto*> types_of(const onnx::GraphProto& graph) {
  std::map<std::string, const onnx::TypeProto*> types;
  for (const auto* list : {&graph.input(), &graph.output(), &graph.value_info()}) {
    for (const auto& v : *list) {
      if (v.has_type()) types[v.name()] = &v.type();
    }
  }
  return types;
}

// The static dims of `name`, or nullopt when any is unknown.
std::optional<std::vector<int64_t>> static_shape(const std::map<std::string, const onnx::TypeProto*>& types,
                                                 const std::string& name) {
  const auto it = types.find(name);
  if (it == types.end() || !it->second->has_tensor_type() || !it->second->tensor_type().has_shape()) return std::nullopt;
  std::vector<int64_t> dims;
  for (const auto& d : it->second->tensor_type().shape().dim()) {
    if (!d.has_dim_value() || d.dim_value() <= 0) return std::nullopt;
    dims.push_back(d.dim_value());
  }
  return dims;
}

onnx::ValueInfoProto value_info(const std::string& name, int32_t elem_type, const std::vector<int64_t>& dims) {
  onnx::ValueInfoProto v;
  v.set_name(name);
  auto* tensor = v.mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(elem_type);
  for (int64_t d : dims) tensor->mutable_shape()->add_dim()->set_dim_value(d);
  return v;
}

const onnx::TensorProto* find_initializer(const onnx::GraphProto& graph, const std::string& name) {
  for (const auto& init : graph.initializer()) {
    if (init.name() == name) return &init;
  }
  return nullptr;
}

std::string label_of(const onnx::NodeProto& node, size_t index) {
  return node.name().empty() ? node.op_type() + "#" + std::to_string(index) : node.name();
}

void remove_nodes(onnx::GraphProto& graph, const std::set<size_t>& indices) {
  auto& nodes = *graph.mutable_node();
  for (auto it = indices.rbegin(); it != indices.rend(); ++it) nodes.erase(nodes.begin() + static_cast<int>(*it));
}

// Every node unnamed gets a fresh name: the steps find nodes again by name after editing.
void name_nodes(onnx::ModelProto& model) {
  ir::NameAllocator names(model);
  auto& nodes = *model.mutable_graph()->mutable_node();
  for (int i = 0; i < nodes.size(); ++i) {
    if (nodes[i].name().empty()) nodes[i].set_name(names.fresh(nodes[i].op_type() + "_" + std::to_string(i)));
  }
}

// The attention MatMuls analysis finds, split into Q.K^T (the scores) and P.V (reads the Softmax).
struct AttentionMatMuls {
  std::vector<std::string> scores, values;  // node names
};

AttentionMatMuls attention_matmuls(const onnx::ModelProto& model, const std::string& label) {
  const ModelAnalysis analysis = analyze_model(model, label);
  AttentionMatMuls out;
  const ir::GraphView view(model.graph(), label);
  for (const auto& name : analysis.architecture.attention_matmuls) {
    for (size_t i = 0; i < view.node_count(); ++i) {
      if (view.node(i).name() != name) continue;
      // P.V reads the Softmax's probabilities, through Q/DQ and casts.
      bool reads_softmax = false;
      for (const auto& in : view.node(i).input()) {
        for (auto producer = view.producer(in); producer; ) {
          const onnx::NodeProto& p = view.node(*producer);
          if (p.op_type() == "Softmax") reads_softmax = true;
          if ((p.op_type() != "DequantizeLinear" && p.op_type() != "QuantizeLinear" && p.op_type() != "Cast") ||
              p.input_size() == 0) {
            break;
          }
          producer = view.producer(p.input(0));
        }
      }
      (reads_softmax ? out.values : out.scores).push_back(name);
    }
  }
  return out;
}

// The attention path: the attention MatMuls and every node from a Q.K^T forward to its P.V.
std::set<std::string> attention_path(const onnx::ModelProto& model, const AttentionMatMuls& matmuls,
                                     const std::string& label) {
  const ir::GraphView view(model.graph(), label);
  std::set<std::string> path(matmuls.scores.begin(), matmuls.scores.end());
  path.insert(matmuls.values.begin(), matmuls.values.end());
  const std::set<std::string> values(matmuls.values.begin(), matmuls.values.end());
  for (size_t i = 0; i < view.node_count(); ++i) {
    if (std::ranges::find(matmuls.scores, view.node(i).name()) == matmuls.scores.end()) continue;
    std::vector<std::pair<size_t, int>> frontier = {{i, 0}};
    while (!frontier.empty()) {
      const auto [node, depth] = frontier.back();
      frontier.pop_back();
      if (depth >= kPathDepth) continue;
      for (const auto& out : view.node(node).output()) {
        for (size_t reader : view.consumers(out)) {
          const std::string& name = view.node(reader).name();
          if (values.contains(name) || !path.insert(name).second) continue;
          frontier.emplace_back(reader, depth + 1);
        }
      }
    }
  }
  return path;
}

// --- the steps ---------------------------------------------------------------------------

// A constant's tensor: an initializer, or a Constant node's value (exporters such as Paddle's
// write weights as Constant nodes); nullptr otherwise.
const onnx::TensorProto* constant_tensor(const ir::GraphView& view, const std::string& name) {
  if (const onnx::TensorProto* t = view.initializer(name)) return t;
  const auto p = view.producer(name);
  if (!p || view.node(*p).op_type() != "Constant") return nullptr;
  for (const auto& attr : view.node(*p).attribute()) {
    if (attr.name() == "value" && attr.has_t()) return &attr.t();
  }
  return nullptr;
}

// The integer values of a constant (an initializer or a Constant node's value); nullopt otherwise.
std::optional<std::vector<int64_t>> constant_ints(const ir::GraphView& view, const std::string& name,
                                                  const std::string& label) {
  if (name.empty()) return std::nullopt;
  const onnx::TensorProto* t = view.initializer(name);
  if (t == nullptr) {
    const auto p = view.producer(name);
    if (!p || view.node(*p).op_type() != "Constant") return std::nullopt;
    for (const auto& attr : view.node(*p).attribute()) {
      if (attr.name() == "value" && attr.has_t()) t = &attr.t();
    }
    if (t == nullptr) return std::nullopt;
  }
  std::vector<int64_t> out;
  for (float v : tensor_from_proto(*t, label).to_floats()) out.push_back(static_cast<int64_t>(v));
  return out;
}

// An attribute's ints, or the constant input `index` (ops that moved attributes to inputs).
std::optional<std::vector<int64_t>> ints_of(const ir::GraphView& view, const onnx::NodeProto& node, const char* attr,
                                            int index, const std::string& label) {
  if (auto values = ir::ints_attribute(node, attr)) return values;
  if (node.input_size() > index) return constant_ints(view, node.input(index), label);
  return std::nullopt;
}

// One part of a fused projection: its columns and the tensor it must produce.
struct ProjectionPart {
  int64_t columns = 0;
  std::string target;
  std::vector<int64_t> heads;  // [B, N, H, d] for the Reshape -> Transpose form; empty for Split
};

struct FusedProjection {
  size_t matmul = 0;
  std::optional<size_t> bias_add;
  std::vector<ProjectionPart> parts;
  std::set<size_t> removed;  // the nodes the parts replace
};

// MatMul [-> Add] -> Split(last axis): the Split's outputs.
std::optional<std::vector<ProjectionPart>> split_parts(const ir::GraphView& view, size_t split, int64_t rank,
                                                       int64_t columns, const std::string& label, std::string& why) {
  const onnx::NodeProto& node = view.node(split);
  int64_t axis = ir::int_attribute(node, "axis").value_or(0);
  if (axis < 0) axis += rank;
  if (axis != rank - 1) {
    why = "its Split is not along the last axis";
    return std::nullopt;
  }
  std::vector<int64_t> sizes = ints_of(view, node, "split", 1, label).value_or(std::vector<int64_t>{});
  if (sizes.empty() && columns % node.output_size() == 0) {
    sizes.assign(static_cast<size_t>(node.output_size()), columns / node.output_size());
  }
  int64_t total = 0;
  for (int64_t s : sizes) total += s;
  if (total != columns || static_cast<int>(sizes.size()) != node.output_size()) {
    why = "its Split sizes are not constant or do not add up to the weight's columns";
    return std::nullopt;
  }
  std::vector<ProjectionPart> parts;
  for (int i = 0; i < node.output_size(); ++i) parts.push_back({.columns = sizes[static_cast<size_t>(i)], .target = node.output(i)});
  return parts;
}

// MatMul [-> Add] -> Reshape [B, N, P, H, d] -> Transpose(2, 0, 3, 1, 4) -> per part p one
// Gather(axis 0, p) or Slice(axis 0, p:p+1) -> Squeeze(0): the selectors' outputs [B, H, N, d].
std::optional<std::vector<ProjectionPart>> reshape_parts(const ir::GraphView& view, size_t reshape,
                                                         const std::map<std::string, const onnx::TypeProto*>& types,
                                                         int64_t columns, const std::string& label,
                                                         std::set<size_t>& removed, std::string& why) {
  const auto dims = static_shape(types, view.node(reshape).output(0));
  const auto& readers = view.consumers(view.node(reshape).output(0));
  if (!dims || dims->size() != 5 || (*dims)[2] * (*dims)[3] * (*dims)[4] != columns || readers.size() != 1) {
    why = "its Reshape is not [B, N, parts, heads, head size]";
    return std::nullopt;
  }
  const size_t transpose = readers.front();
  const auto perm = ints_of(view, view.node(transpose), "perm", 99, label);
  if (view.node(transpose).op_type() != "Transpose" || !perm || *perm != std::vector<int64_t>{2, 0, 3, 1, 4}) {
    why = "its Reshape is not followed by Transpose(2, 0, 3, 1, 4)";
    return std::nullopt;
  }
  const int64_t count = (*dims)[2];
  std::vector<ProjectionPart> parts(static_cast<size_t>(count));
  std::set<size_t> selectors = {reshape, transpose};
  for (size_t reader : view.consumers(view.node(transpose).output(0))) {
    const onnx::NodeProto& sel = view.node(reader);
    std::optional<int64_t> part;
    std::string target;
    if (sel.op_type() == "Gather" && ir::int_attribute(sel, "axis").value_or(0) == 0) {
      const auto index = constant_ints(view, sel.input(1), label);
      if (index && index->size() == 1) part = index->front();
      target = sel.output(0);
      selectors.insert(reader);
    } else if (sel.op_type() == "Slice") {
      const auto starts = ints_of(view, sel, "starts", 1, label), ends = ints_of(view, sel, "ends", 2, label);
      const auto axes = ints_of(view, sel, "axes", 3, label).value_or(std::vector<int64_t>{0});
      const auto& next = view.consumers(sel.output(0));
      if (starts && ends && starts->size() == 1 && ends->size() == 1 && axes == std::vector<int64_t>{0} &&
          ends->front() == starts->front() + 1 && next.size() == 1 && view.node(next.front()).op_type() == "Squeeze" &&
          ints_of(view, view.node(next.front()), "axes", 1, label) == std::vector<int64_t>{0}) {
        part = starts->front();
        target = view.node(next.front()).output(0);
        selectors.insert({reader, next.front()});
      }
    }
    if (!part || *part < 0 || *part >= count || !parts[static_cast<size_t>(*part)].target.empty()) {
      why = "a reader of its Transpose is not a Gather or Slice -> Squeeze of one part";
      return std::nullopt;
    }
    parts[static_cast<size_t>(*part)] = {.columns = (*dims)[3] * (*dims)[4], .target = target,
                                         .heads = {(*dims)[0], (*dims)[1], (*dims)[3], (*dims)[4]}};
  }
  if (std::ranges::any_of(parts, [](const ProjectionPart& p) { return p.target.empty(); })) {
    why = "not every part of it is read";
    return std::nullopt;
  }
  removed.insert(selectors.begin(), selectors.end());
  return parts;
}

MhaMx9Step split_fused_qkv(onnx::ModelProto& model, const std::string& label) {
  MhaMx9Step step{.name = "split fused QKV"};
  onnx::GraphProto& graph = *model.mutable_graph();
  ir::NameAllocator names(model);
  const ir::GraphView view(graph, label);
  const auto types = types_of(graph);
  std::set<size_t> removed;
  std::map<size_t, std::vector<onnx::NodeProto>> added;  // at each fused MatMul's place
  std::vector<onnx::TensorProto> weights;
  std::vector<onnx::ValueInfoProto> shapes;
  for (size_t i = 0; i < view.node_count(); ++i) {
    const onnx::NodeProto& mm = view.node(i);
    if (mm.op_type() != "MatMul" || !mm.domain().empty() || mm.input_size() != 2) continue;
    const auto& readers = view.consumers(mm.output(0));
    if (readers.size() != 1) continue;
    size_t next = readers.front();
    const onnx::TensorProto* bias = nullptr;
    FusedProjection fused{.matmul = i, .removed = {i}};
    if (view.node(next).op_type() == "Add" && view.consumers(view.node(next).output(0)).size() == 1) {
      const onnx::NodeProto& a = view.node(next);
      bias = constant_tensor(view, a.input(0) == mm.output(0) ? a.input(1) : a.input(0));
      if (bias == nullptr) continue;
      fused.bias_add = next;
      fused.removed.insert(next);
      next = view.consumers(a.output(0)).front();
    }
    const std::string& op = view.node(next).op_type();
    const std::string name = label_of(mm, i);
    if (op == "QuantizeLinear") {
      // A quantized projection (MatMul -> Q -> DQ [-> Add ...] -> Split/Reshape) is not split:
      // its codes' parameters cover all parts. Said when the split follows.
      size_t at = next;
      for (int hop = 0; hop < 4 && view.consumers(view.node(at).output(0)).size() == 1; ++hop) {
        at = view.consumers(view.node(at).output(0)).front();
        const std::string& reached = view.node(at).op_type();
        if (reached == "Split" || (reached == "Reshape" && [&] {
              const auto d = static_shape(types, view.node(at).output(0));
              return d && d->size() == 5;
            }())) {
          step.notes.push_back(name + ": a fused projection with quantized output (Q/DQ before its " + reached +
                               "); left fused: split the float model, then quantize");
          break;
        }
      }
      continue;
    }
    if (op != "Split" && op != "Reshape") continue;
    const onnx::TensorProto* w = constant_tensor(view, mm.input(1));
    const auto shape = static_shape(types, mm.output(0));
    std::string why;
    if (w == nullptr || w->data_type() != onnx::TensorProto::FLOAT || w->dims_size() != 2) {
      why = "the fused projection's weight is not a float32 [D, N] constant";
    } else if (!shape) {
      why = "its output shape is not known";
    } else if (bias != nullptr && (bias->dims_size() != 1 || bias->dims(0) != w->dims(1))) {
      why = "its bias is not one value per column";
    } else {
      const int64_t columns = w->dims(1);
      const auto parts = op == "Split"
                             ? split_parts(view, next, static_cast<int64_t>(shape->size()), columns, label, why)
                             : reshape_parts(view, next, types, columns, label, fused.removed, why);
      if (parts) {
        fused.parts = *parts;
        fused.removed.insert(next);
      }
    }
    if (fused.parts.empty()) {
      // A Reshape after a MatMul is common and not a fused projection unless it splits parts.
      step.notes.push_back(name + ": " + why + "; left fused");
      continue;
    }
    const std::vector<float> wv = tensor_from_proto(*w, label).to_floats();
    const std::vector<float> bv = bias ? tensor_from_proto(*bias, label).to_floats() : std::vector<float>{};
    const int64_t rows = w->dims(0), columns = w->dims(1);
    int64_t offset = 0;
    std::vector<onnx::NodeProto>& out = added[i];
    for (size_t part = 0; part < fused.parts.size(); ++part) {
      const ProjectionPart& p = fused.parts[part];
      const int64_t n = p.columns;
      std::vector<float> piece(static_cast<size_t>(rows * n));
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < n; ++c) piece[static_cast<size_t>(r * n + c)] = wv[static_cast<size_t>(r * columns + offset + c)];
      }
      const std::string base = name + "_part" + std::to_string(part);
      const std::string w_name = names.fresh(base + "_weight");
      weights.push_back(tensor_to_proto(Tensor::from_floats(Shape{rows, n}, piece), w_name));
      std::vector<int64_t> out_shape = *shape;
      out_shape.back() = n;
      const bool heads = !p.heads.empty();
      const std::string projected = bias || heads ? names.fresh(base + "_matmul_out") : p.target;
      out.push_back(ir::make_node({.op_type = "MatMul", .name = names.fresh(base), .inputs = {mm.input(0), w_name},
                                   .outputs = {projected}}));
      shapes.push_back(value_info(projected, onnx::TensorProto::FLOAT, out_shape));
      std::string current = projected;
      if (bias) {
        const std::string b_name = names.fresh(base + "_bias");
        const std::vector<float> b_piece(bv.begin() + offset, bv.begin() + offset + n);
        weights.push_back(tensor_to_proto(Tensor::from_floats(Shape{n}, b_piece), b_name));
        const std::string biased = heads ? names.fresh(base + "_add_out") : p.target;
        out.push_back(ir::make_node({.op_type = "Add", .name = names.fresh(base + "_add"), .inputs = {current, b_name},
                                     .outputs = {biased}}));
        shapes.push_back(value_info(biased, onnx::TensorProto::FLOAT, out_shape));
        current = biased;
      }
      if (heads) {
        // [B, N, H, d], stated explicitly (never -1), then heads first: [B, H, N, d].
        const std::string shape_name = names.fresh(base + "_heads_shape");
        weights.push_back(tensor_to_proto(Tensor::from_floats(DType::kInt64, Shape{4},
                                                              std::vector<float>(p.heads.begin(), p.heads.end())),
                                          shape_name));
        const std::string split_heads = names.fresh(base + "_heads");
        out.push_back(ir::make_node({.op_type = "Reshape", .name = names.fresh(base + "_reshape"),
                                     .inputs = {current, shape_name}, .outputs = {split_heads}}));
        shapes.push_back(value_info(split_heads, onnx::TensorProto::FLOAT, p.heads));
        out.push_back(ir::make_node({.op_type = "Transpose", .name = names.fresh(base + "_transpose"),
                                     .inputs = {split_heads}, .outputs = {p.target},
                                     .attributes = {ir::make_ints_attribute("perm", {0, 2, 1, 3})}}));
        shapes.push_back(value_info(p.target, onnx::TensorProto::FLOAT, {p.heads[0], p.heads[2], p.heads[1], p.heads[3]}));
      }
      offset += n;
    }
    removed.insert(fused.removed.begin(), fused.removed.end());
    step.nodes.push_back(name);
    ++step.edits;
  }
  if (step.edits == 0) {
    if (step.notes.empty()) {
      step.notes.push_back("no fused QKV projection (MatMul [-> bias Add] -> Split, or -> Reshape -> Transpose -> "
                           "Gather/Slice per part)");
    }
    return step;
  }
  // Each projection's parts take its MatMul's place in the node list: they read only its input
  // and constants, so the graph stays sorted.
  auto& nodes = *graph.mutable_node();
  std::vector<onnx::NodeProto> kept;
  for (int n = 0; n < nodes.size(); ++n) {
    if (const auto it = added.find(static_cast<size_t>(n)); it != added.end()) {
      kept.insert(kept.end(), it->second.begin(), it->second.end());
    }
    if (!removed.contains(static_cast<size_t>(n))) kept.push_back(nodes[n]);
  }
  nodes.Clear();
  for (auto& n : kept) *nodes.Add() = std::move(n);
  for (auto& w : weights) *graph.add_initializer() = std::move(w);
  auto& infos = *graph.mutable_value_info();
  for (auto& v : shapes) {
    infos.erase(std::remove_if(infos.begin(), infos.end(), [&](const auto& old) { return old.name() == v.name(); }),
                infos.end());
    *infos.Add() = std::move(v);
  }
  remove_dead_nodes(graph);
  remove_unused(graph);
  return step;
}

MhaMx9Step strip_attention_qdq(onnx::ModelProto& model, const std::set<std::string>& path, const std::string& label) {
  MhaMx9Step step{.name = "strip Q/DQ on the attention path"};
  onnx::GraphProto& graph = *model.mutable_graph();
  const ir::GraphView view(graph, label);
  std::set<size_t> removed;
  std::vector<std::pair<std::string, std::string>> bypass;  // DQ output -> Q input
  const auto on_path = [&](size_t node) { return path.contains(view.node(node).name()); };
  for (size_t d = 0; d < view.node_count(); ++d) {
    const onnx::NodeProto& dq = view.node(d);
    if (dq.op_type() != "DequantizeLinear" || dq.input_size() == 0) continue;
    const auto q = view.producer(dq.input(0));
    if (!q || view.node(*q).op_type() != "QuantizeLinear") continue;
    const auto source = view.producer(view.node(*q).input(0));
    const bool feeds_path = std::ranges::any_of(view.consumers(dq.output(0)), on_path);
    if (!feeds_path && !(source && on_path(*source)) && !on_path(d)) continue;
    if (std::ranges::any_of(graph.output(), [&](const auto& o) { return o.name() == dq.output(0); })) continue;
    bypass.emplace_back(dq.output(0), view.node(*q).input(0));
    removed.insert(d);
    // The Q goes too once no other DQ reads it.
    if (std::ranges::all_of(view.consumers(view.node(*q).output(0)), [&](size_t r) {
          return r == d || removed.contains(r);
        })) {
      removed.insert(*q);
    }
    step.nodes.push_back(label_of(view.node(*q), *q) + " -> " + label_of(dq, d));
    ++step.edits;
  }
  remove_nodes(graph, removed);
  for (const auto& [from, to] : bypass) replace_reads(graph, from, to);
  remove_unused(graph);
  if (step.edits == 0) step.notes.push_back("no Q/DQ pair on the attention path");
  return step;
}

MhaMx9Step wrap_attention_mx9(onnx::ModelProto& model, const AttentionMatMuls& matmuls) {
  MhaMx9Step step{.name = "wrap attention MatMuls with MX9"};
  onnx::GraphProto& graph = *model.mutable_graph();
  ir::NameAllocator names(model);
  const auto types = types_of(graph);
  const BlockFormat& mx9 = *block_format(FormatId::kMx9);
  std::vector<std::pair<size_t, onnx::NodeProto>> inserts;  // before node index
  for (int i = 0; i < graph.node_size(); ++i) {
    onnx::NodeProto& mm = *graph.mutable_node(i);
    const bool scores = std::ranges::find(matmuls.scores, mm.name()) != matmuls.scores.end();
    const bool values = std::ranges::find(matmuls.values, mm.name()) != matmuls.values.end();
    if (!scores && !values) continue;
    for (int operand = 0; operand < 2; ++operand) {
      const std::string in = mm.input(operand);
      const auto shape = static_shape(types, in);
      if (!shape || shape->size() < 2) {
        step.notes.push_back(mm.name() + ": operand '" + in + "' has no known static shape; not wrapped");
        continue;
      }
      // Blocks along the reduction axis: A's last, B's second-to-last.
      const int64_t rank = static_cast<int64_t>(shape->size());
      const int64_t axis = operand == 0 ? rank - 1 : rank - 2;
      const std::string out = names.fresh(in + "_mx9");
      inserts.emplace_back(static_cast<size_t>(i), block_node(in, out, mx9, axis, names.fresh(mm.name() + "_mx9_" +
                                                                                             std::to_string(operand))));
      mm.set_input(operand, out);
      ++step.edits;
    }
    step.nodes.push_back(mm.name());
  }
  auto& nodes = *graph.mutable_node();
  for (auto it = inserts.rbegin(); it != inserts.rend(); ++it) {
    nodes.Add(std::move(it->second));
    std::rotate(nodes.begin() + static_cast<int>(it->first), nodes.end() - 1, nodes.end());
  }
  if (step.edits > 0 && std::ranges::none_of(model.opset_import(), [](const auto& o) { return o.domain() == kQuarkOpsDomain; })) {
    auto* opset = model.add_opset_import();
    opset->set_domain(kQuarkOpsDomain);
    opset->set_version(1);  // Quark's block ops are opset 1
  }
  return step;
}

MhaMx9Step residual_adds_to_bf16(onnx::ModelProto& model, const std::set<std::string>& path, const std::string& label) {
  MhaMx9Step step{.name = "residual adds to bf16 casts"};
  onnx::GraphProto& graph = *model.mutable_graph();
  ir::NameAllocator names(model);
  const ir::GraphView view(graph, label);
  const auto types = types_of(graph);
  const auto computed = [&](const std::string& name) {
    // A constant stays one through Q/DQ and casts (a bias stored as codes, a constant operand
    // quantized like an activation).
    std::string source = name;
    for (int hop = 0; hop < 4; ++hop) {
      if (view.is_initializer(source)) return false;
      const auto p = view.producer(source);
      if (!p) break;
      const std::string& op = view.node(*p).op_type();
      if (op == "Constant") return false;
      if (op != "DequantizeLinear" && op != "QuantizeLinear" && op != "Cast") break;
      source = view.node(*p).input(0);
    }
    const auto t = types.find(name);
    return t != types.end() && t->second->tensor_type().elem_type() == onnx::TensorProto::FLOAT;
  };
  std::vector<std::pair<size_t, std::vector<onnx::NodeProto>>> before, after;
  const auto cast = [&](const std::string& in, const std::string& out, int32_t to) {
    return ir::make_node({.op_type = "Cast", .name = names.fresh(out + "_Cast"), .inputs = {in}, .outputs = {out},
                          .attributes = {ir::make_int_attribute("to", to)}});
  };
  const auto pair = [&](const std::string& in, const std::string& base, std::vector<onnx::NodeProto>& out) {
    const std::string low = names.fresh(base + "_bf16");
    const std::string back = names.fresh(base + "_bf16_float");
    out.push_back(cast(in, low, onnx::TensorProto::BFLOAT16));
    out.push_back(cast(low, back, onnx::TensorProto::FLOAT));
    return back;
  };
  std::vector<size_t> adds;  // matched on the view, rewritten after
  for (size_t i = 0; i < view.node_count(); ++i) {
    const onnx::NodeProto& add = view.node(i);
    if (add.op_type() != "Add" || add.input_size() != 2 || path.contains(add.name())) continue;
    if (computed(add.input(0)) && computed(add.input(1))) adds.push_back(i);
  }
  for (size_t i : adds) {
    onnx::NodeProto& node = *graph.mutable_node(static_cast<int>(i));
    std::vector<onnx::NodeProto> pre, post;
    for (int k = 0; k < 2; ++k) {
      const std::string in = node.input(k);
      node.set_input(k, pair(in, in, pre));
    }
    const std::string y = node.output(0);
    const std::string raw = names.fresh(y + "_sum");
    node.set_output(0, raw);
    const std::string low = names.fresh(y + "_bf16");
    post.push_back(cast(raw, low, onnx::TensorProto::BFLOAT16));
    post.push_back(cast(low, y, onnx::TensorProto::FLOAT));
    before.emplace_back(i, std::move(pre));
    after.emplace_back(i, std::move(post));
    step.nodes.push_back(node.name());
    ++step.edits;
  }
  // Rebuild the node list with each Add's casts around it (the order stays topological).
  std::map<size_t, std::vector<onnx::NodeProto>> pre_of(before.begin(), before.end()), post_of(after.begin(), after.end());
  std::vector<onnx::NodeProto> rebuilt;
  for (int i = 0; i < graph.node_size(); ++i) {
    if (auto it = pre_of.find(static_cast<size_t>(i)); it != pre_of.end()) {
      rebuilt.insert(rebuilt.end(), it->second.begin(), it->second.end());
    }
    rebuilt.push_back(graph.node(i));
    if (auto it = post_of.find(static_cast<size_t>(i)); it != post_of.end()) {
      rebuilt.insert(rebuilt.end(), it->second.begin(), it->second.end());
    }
  }
  graph.mutable_node()->Clear();
  for (auto& n : rebuilt) *graph.add_node() = std::move(n);
  if (step.edits == 0) step.notes.push_back("no residual Add (two computed float inputs) off the attention path");
  return step;
}

void check_static(onnx::ModelProto& model, const MhaMx9Step& step, const std::string& label) {
  const std::vector<std::string> dynamic = infer_static_shapes(model);
  if (!dynamic.empty()) {
    throw Error(ErrorKind::kInternal, label,
                "after '" + step.name + "' " + std::to_string(dynamic.size()) + " tensor(s) have no static shape: " +
                    dynamic.front() + (dynamic.size() > 1 ? ", ..." : "") + "; nothing written");
  }
}

}  // namespace

std::vector<std::string> infer_static_shapes(onnx::ModelProto& model) {
  for (int round = 0; round < 8; ++round) {
    try {
      onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(),
                                         onnx::ShapeInferenceOptions(false, 0, true));
    } catch (const std::exception&) {
      // error_mode 0 keeps going past nodes it cannot infer; a failure here leaves what it had.
    }
    onnx::GraphProto& graph = *model.mutable_graph();
    const auto types = types_of(graph);
    bool added = false;
    for (const auto& node : graph.node()) {
      if (node.domain().empty() || node.domain() == "ai.onnx" || node.input_size() == 0) continue;
      const auto in = types.find(node.input(0));
      if (in == types.end()) continue;
      for (const auto& out : node.output()) {
        if (types.contains(out)) continue;
        onnx::ValueInfoProto v;
        v.set_name(out);
        *v.mutable_type() = *in->second;
        *graph.add_value_info() = std::move(v);
        added = true;
      }
    }
    if (!added) break;
  }
  const auto types = types_of(model.graph());
  std::vector<std::string> dynamic;
  for (const auto& node : model.graph().node()) {
    for (const auto& out : node.output()) {
      if (!out.empty() && !static_shape(types, out)) dynamic.push_back(out + " (" + node.op_type() + ")");
    }
  }
  return dynamic;
}

onnx::ModelProto mha_mx9(const onnx::ModelProto& model, const std::string& label, MhaMx9Summary* summary) {
  onnx::ModelProto out = model;
  for (const auto& input : out.graph().input()) {
    if (find_initializer(out.graph(), input.name())) continue;
    const auto types = types_of(out.graph());
    if (!static_shape(types, input.name())) {
      throw_bad_input(label, "input '" + input.name() + "' has a dynamic dim; the MHA-MX9 pipeline needs static "
                             "shapes (give --input-shape " + input.name() + "=...)");
    }
  }
  name_nodes(out);
  MhaMx9Summary s;
  // The starting shapes: the steps match on them.
  if (const auto dynamic = infer_static_shapes(out); !dynamic.empty()) {
    throw_bad_input(label, std::to_string(dynamic.size()) + " tensor(s) have no static shape even with static inputs: " +
                               dynamic.front() + (dynamic.size() > 1 ? ", ..." : ""));
  }
  // Cast to bfloat16 needs opset 13 (step 4); raised once, before the steps match.
  if (default_opset(out) < kOpsetBFloat16Cast) {
    const auto types = types_of(out.graph());
    const OpsetUpgradeResult up = upgrade_opset(out, kOpsetBFloat16Cast, label, [&](const std::string& name) {
      const auto t = types.find(name);
      return t != types.end() && t->second->tensor_type().has_shape()
                 ? std::optional<int64_t>(t->second->tensor_type().shape().dim_size())
                 : std::nullopt;
    });
    s.opset_raised = std::to_string(up.from) + " -> " + std::to_string(up.to);
    infer_static_shapes(out);
  }
  s.steps.push_back(split_fused_qkv(out, label));
  check_static(out, s.steps.back(), label);
  const AttentionMatMuls matmuls = attention_matmuls(out, label);
  s.attention_blocks = matmuls.values.size();
  if (matmuls.values.empty()) {
    throw_bad_input(label, "no attention block (a Softmax feeding a MatMul): the MHA-MX9 pipeline is for ViT encoders");
  }
  const std::set<std::string> path = attention_path(out, matmuls, label);
  s.steps.push_back(strip_attention_qdq(out, path, label));
  check_static(out, s.steps.back(), label);
  s.steps.push_back(wrap_attention_mx9(out, matmuls));
  check_static(out, s.steps.back(), label);
  s.steps.push_back(residual_adds_to_bf16(out, path, label));
  check_static(out, s.steps.back(), label);
  if (summary != nullptr) *summary = std::move(s);
  return out;
}

}  // namespace mixprec::rewrite
