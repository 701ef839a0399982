#include "evaluation/static_shapes.h"

#include <algorithm>
#include <map>
#include <set>

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include "common/text.h"
#include "mixprec/analysis.h"
#include "mixprec/error.h"
#include "mixprec/log.h"
#include "mixprec/tensor.h"

namespace mixprec {
namespace {

void set_shape(onnx::ValueInfoProto& info, const ObservedTensor& seen) {
  auto* type = info.mutable_type()->mutable_tensor_type();
  type->set_elem_type(dtype_to_onnx(seen.dtype));
  auto* shape = type->mutable_shape();
  shape->clear_dim();
  for (int64_t d : seen.shape) shape->add_dim()->set_dim_value(d);
}

std::string shape_text(const Shape& shape) {
  return text::join_each(shape, [](int64_t d) { return std::to_string(d); }, "x");
}

bool static_info(const onnx::ValueInfoProto& info) {
  if (!info.type().has_tensor_type() || !info.type().tensor_type().has_shape()) return false;
  return std::ranges::all_of(info.type().tensor_type().shape().dim(),
                             [](const auto& d) { return d.has_dim_value() && d.dim_value() > 0; });
}

bool has_bodies(const onnx::GraphProto& graph) {
  return std::ranges::any_of(graph.node(), [](const onnx::NodeProto& node) {
    return std::ranges::any_of(node.attribute(), [](const auto& a) { return a.has_g() || a.graphs_size() > 0; });
  });
}

// Drops the value_info entries of `graph` and its bodies that inference left without a static
// shape; counts the static ones of the bodies (depth > 0).
void keep_static_value_info(onnx::GraphProto& graph, int depth, size_t& body_static) {
  auto& infos = *graph.mutable_value_info();
  infos.erase(std::remove_if(infos.begin(), infos.end(), [](const auto& v) { return !static_info(v); }), infos.end());
  if (depth > 0) body_static += static_cast<size_t>(infos.size());
  for (auto& node : *graph.mutable_node()) {
    for (auto& attr : *node.mutable_attribute()) {
      if (attr.has_g()) keep_static_value_info(*attr.mutable_g(), depth + 1, body_static);
      for (auto& g : *attr.mutable_graphs()) keep_static_value_info(g, depth + 1, body_static);
    }
  }
}

// The bodies' shapes from the main graph's observed ones (the taps reach the main graph only),
// kept only when ONNX Runtime builds and runs the model with them: ONNX's inference can get a
// body wrong (a branch never taken, shapes that depend on data), and a wrong declared shape
// fails the session.
void declare_body_shapes(onnx::ModelProto& model, StaticShapeSummary& summary, const NamedTensors& sample,
                         const SessionOptions& session, const std::string& label) {
  if (!has_bodies(model.graph())) return;
  onnx::ModelProto inferred = model;
  std::string refused;
  try {
    onnx::shape_inference::InferShapes(inferred, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(false, 0, true));
    size_t body_static = 0;
    keep_static_value_info(*inferred.mutable_graph(), 0, body_static);
    (void)Session::from_model(inferred, label, session).run(sample);
    summary.body_value_infos = body_static;
    model = std::move(inferred);
  } catch (const std::exception& e) {
    refused = e.what();
  }
  summary.body_dynamic = body_dynamic_dims(model);
  if (!refused.empty()) {
    log_warning(label + ": the shapes ONNX shape inference gives the If/Loop/Scan bodies are not declared: " +
                "ONNX Runtime refuses them (" + refused + ")");
  }
  if (!summary.body_dynamic.empty()) {
    log_warning(label + ": " + std::to_string(summary.body_dynamic.size()) +
                " dims inside If/Loop/Scan bodies stay dynamic or undeclared (" + summary.body_dynamic.front() +
                (summary.body_dynamic.size() > 1 ? ", ..." : "") +
                "): a run cannot observe them; the VAIML compiler needs them static (control flow usually stays on "
                "the CPU)");
  }
}

}  // namespace

StaticShapeSummary declare_static_shapes(onnx::ModelProto& model, const std::vector<NamedTensors>& samples, bool pin_inputs,
                                         const SessionOptions& session, const std::string& label,
                                         const std::string& output) {
  if (samples.empty()) throw_bad_input(label, "no sample to observe the static shapes on");
  onnx::GraphProto& g = *model.mutable_graph();
  std::vector<std::string> tensors;
  std::map<std::string, std::string> producer;  // tensor -> "op 'node'"
  for (const auto& node : g.node()) {
    for (const auto& out : node.output()) {
      if (out.empty()) continue;
      tensors.push_back(out);
      producer[out] = node.op_type() + " '" + node.name() + "'";
    }
  }
  const NamedTensors& first = samples[0];
  const std::map<std::string, ObservedTensor> seen = observe_tensors(model, label, tensors, first, session);
  if (samples.size() > 1) {
    const NamedTensors& second = samples[1];
    const bool same_inputs = std::ranges::equal(first, second, [](const auto& a, const auto& b) {
      return a.first == b.first && a.second.shape() == b.second.shape();
    });
    if (!same_inputs) {
      throw_unsupported(label, "the samples do not share one input shape (" + first.front().first + " " +
                                   shape_text(first.front().second.shape()) + ", then " +
                                   shape_text(second.front().second.shape()) +
                                   "): pin it with --input-shape or --image-size for static shapes");
    }
    for (const auto& [name, again] : observe_tensors(model, label, tensors, second, session)) {
      const auto it = seen.find(name);
      if (it != seen.end() && it->second.shape != again.shape) {
        throw_unsupported(label, "tensor '" + name + "' of " + producer[name] + " has a data-dependent shape (" +
                                     shape_text(it->second.shape) + ", then " + shape_text(again.shape) +
                                     " on two samples of one input shape): no static shape holds it");
      }
    }
  }
  StaticShapeSummary summary{.checked = true, .inputs_pinned = pin_inputs};
  if (pin_inputs) {
    for (auto& input : *g.mutable_input()) {
      const auto given = std::ranges::find(first, input.name(), [](const auto& named) { return named.first; });
      if (given == first.end()) continue;  // an initializer listed as an input
      set_shape(input, {given->second.shape(), given->second.dtype()});
      summary.inputs.push_back(input.name() + " " + shape_text(given->second.shape()));
    }
  }
  std::set<std::string> outputs;
  for (auto& graph_output : *g.mutable_output()) {
    outputs.insert(graph_output.name());
    const auto it = seen.find(graph_output.name());
    if (it != seen.end()) set_shape(graph_output, it->second);
  }
  g.clear_value_info();
  for (const std::string& name : tensors) {
    const auto it = seen.find(name);
    if (it == seen.end() || outputs.count(name)) continue;  // not computed (an unused branch), or declared above
    onnx::ValueInfoProto& info = *g.add_value_info();
    info.set_name(name);
    set_shape(info, it->second);
    ++summary.value_infos;
  }
  // ONNX Runtime infers If/Loop bodies from the declared shapes of what they read; a model whose
  // bodies it cannot infer once the shapes are static is refused with its reason (silero's VAD:
  // with its inputs pinned, the inference of its LSTM branch fails).
  if (has_bodies(g)) {
    try {
      (void)Session::from_model(model, label, session);
    } catch (const std::exception& e) {
      throw_unsupported(label, std::string("with static shapes declared, ONNX Runtime's shape inference of the "
                                           "If/Loop/Scan bodies fails (") + e.what() +
                                   "): the model cannot be written static; quantize it without --make-static");
    }
  }
  declare_body_shapes(model, summary, first, session, label);
  if (const std::vector<std::string> left = dynamic_dims(model); !left.empty()) {
    throw Error(ErrorKind::kInternal, output,
                "the quantized model has " + std::to_string(left.size()) + " dynamic dims where it must be static (" +
                    left.front() + (left.size() > 1 ? ", ..." : "") + "); nothing written");
  }
  return summary;
}

}  // namespace mixprec
