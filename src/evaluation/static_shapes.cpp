#include "evaluation/static_shapes.h"

#include <algorithm>
#include <map>
#include <set>

#include "common/text.h"
#include "mixprec/analysis.h"
#include "mixprec/error.h"
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
  if (const std::vector<std::string> left = dynamic_dims(model); !left.empty()) {
    throw Error(ErrorKind::kInternal, output,
                "the quantized model has " + std::to_string(left.size()) + " dynamic dims where it must be static (" +
                    left.front() + (left.size() > 1 ? ", ..." : "") + "); nothing written");
  }
  return summary;
}

}  // namespace mixprec
