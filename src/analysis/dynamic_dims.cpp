// dynamic_dims (analysis.h): the declared dims a compiler needing static shapes stops on.
#include <set>

#include "mixprec/analysis.h"

namespace mixprec {
namespace {

void add_dynamic(const onnx::ValueInfoProto& info, std::vector<std::string>& out, const std::string& scope = "") {
  const std::string name = scope + "'" + info.name() + "'";
  if (!info.type().has_tensor_type()) return;  // sequences, maps: not the compiler's tensors
  const auto& type = info.type().tensor_type();
  if (!type.has_shape()) {
    out.push_back(name + " (no shape)");
    return;
  }
  for (int i = 0; i < type.shape().dim_size(); ++i) {
    const auto& dim = type.shape().dim(i);
    if (dim.has_dim_value() && dim.dim_value() > 0) continue;
    const std::string what = dim.has_dim_param() ? "'" + dim.dim_param() + "'"
                             : dim.has_dim_value() ? std::to_string(dim.dim_value())
                                                   : "unknown";
    out.push_back(name + " dim " + std::to_string(i) + " (" + what + ")");
  }
}

// Every body of `graph`'s nodes, depth first, with its scope ("If_0.then_branch/").
void visit_bodies(const onnx::GraphProto& graph, const std::string& scope,
                  std::vector<std::pair<std::string, const onnx::GraphProto*>>& out) {
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto& node = graph.node(i);
    const std::string label = node.name().empty() ? node.op_type() + "#" + std::to_string(i) : node.name();
    for (const auto& attr : node.attribute()) {
      const auto add = [&](const onnx::GraphProto& body) {
        const std::string inner = scope + label + "." + attr.name() + "/";
        out.emplace_back(inner, &body);
        visit_bodies(body, inner, out);
      };
      if (attr.has_g()) add(attr.g());
      for (const auto& g : attr.graphs()) add(g);
    }
  }
}

}  // namespace

std::vector<std::string> body_dynamic_dims(const onnx::ModelProto& model) {
  std::vector<std::pair<std::string, const onnx::GraphProto*>> bodies;
  visit_bodies(model.graph(), "", bodies);
  std::vector<std::string> out;
  for (const auto& [scope, body] : bodies) {
    for (const auto* list : {&body->input(), &body->output(), &body->value_info()}) {
      for (const auto& info : *list) add_dynamic(info, out, scope);
    }
  }
  return out;
}

std::vector<std::string> dynamic_dims(const onnx::ModelProto& model) {
  const onnx::GraphProto& g = model.graph();
  std::set<std::string> initializers;
  for (const auto& init : g.initializer()) initializers.insert(init.name());
  std::vector<std::string> out;
  for (const auto& input : g.input()) {
    if (!initializers.count(input.name())) add_dynamic(input, out);
  }
  for (const auto& output : g.output()) add_dynamic(output, out);
  for (const auto& info : g.value_info()) add_dynamic(info, out);
  return out;
}

}  // namespace mixprec
