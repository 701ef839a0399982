// Workbench::injected_noise: how much noise a node adds itself, apart from what reaches it.
//
// In the quantized model a node reads x_q (its producers' outputs, with every upstream error)
// and writes y_q (with its own input and weight rounding on top). Running the node alone in
// float on the same x_q gives f(x_q): everything but its own rounding. So
//   injected = sum |y_q - f(x_q)|^2 / sum |f(x_q)|^2
// is the node's own contribution, whatever upstream did and however the node amplifies or
// attenuates it — which the older "output noise minus the worst input's" could not tell apart
// (a node that attenuates noise scored negative however much it added).
#include <set>

#include "config/element_types.h"
#include "evaluation/workbench.h"
#include "ir/graph_view.h"
#include "mixprec/error.h"

namespace mixprec {
namespace {

// The node alone as a model: its non-initializer inputs become graph inputs, its initializers
// are copied, its first output is the model's output.
// Only nodes whose inputs are all float are probed (`types` says so), so every graph input is
// declared float32, with its rank from `ranks` and every dim symbolic.
onnx::ModelProto single_node_model(const onnx::ModelProto& model, const onnx::NodeProto& node,
                                   const std::set<std::string>& initializer_names,
                                   const std::map<std::string, int64_t>& ranks) {
  onnx::ModelProto single;
  single.set_ir_version(model.ir_version());
  *single.mutable_opset_import() = model.opset_import();
  onnx::GraphProto& graph = *single.mutable_graph();
  graph.set_name(node.name());
  *graph.add_node() = node;
  for (const auto& init : model.graph().initializer()) {
    for (const auto& input : node.input()) {
      if (input == init.name()) *graph.add_initializer() = init;
    }
  }
  std::set<std::string> seen;
  for (const auto& input : node.input()) {
    if (input.empty() || initializer_names.count(input) || !seen.insert(input).second) continue;
    auto* value = graph.add_input();
    value->set_name(input);
    auto* type = value->mutable_type()->mutable_tensor_type();
    type->set_elem_type(onnx::TensorProto::FLOAT);
    const auto rank = ranks.find(input);
    if (rank == ranks.end()) continue;  // rank unknown: left undeclared
    auto* shape = type->mutable_shape();
    for (int64_t d = 0; d < rank->second; ++d) shape->add_dim()->set_dim_param(input + "_d" + std::to_string(d));
  }
  graph.add_output()->set_name(node.output(0));
  return single;
}

}  // namespace

std::map<std::string, double> Workbench::injected_noise(const QuantConfig& config, const std::vector<std::string>& nodes) {
  ++evaluations_;
  const std::string& label = setup_.model_path;
  const onnx::ModelProto built = build(config);
  std::set<std::string> initializer_names;
  for (const auto& init : prepared_.graph().initializer()) initializer_names.insert(init.name());
  std::map<std::string, const onnx::NodeProto*> by_name;
  for (const auto& node : prepared_.graph().node()) by_name[node.name()] = &node;
  const ir::GraphView view(prepared_.graph(), label);
  const auto types = selection::infer_element_types(view);
  // Float: declared or inferred so, or calibrated (statistics are collected on float tensors only).
  const auto is_float = [&](const std::string& name) {
    const auto it = types.find(name);
    return it != types.end() ? it->second == onnx::TensorProto::FLOAT : stats_.tensors.count(name) > 0;
  };

  // The tensors the nodes read and write, as the quantized graph computes them (producer-side
  // names survive quantization: Q/DQ go on the reader's side).
  std::set<std::string> available;
  for (const auto& input : built.graph().input()) available.insert(input.name());
  for (const auto& node : built.graph().node()) available.insert(node.output().begin(), node.output().end());
  struct Probe {
    std::string node;
    std::vector<std::string> inputs;
    std::string output;
    std::unique_ptr<Session> alone;
  };
  std::vector<Probe> probes;
  std::set<std::string> exposed;
  for (const auto& name : nodes) {
    const auto it = by_name.find(name);
    if (it == by_name.end() || it->second->output_size() == 0) continue;
    const onnx::NodeProto& node = *it->second;
    Probe probe{.node = name, .output = node.output(0)};
    bool complete = available.count(probe.output) > 0;
    for (const auto& input : node.input()) {
      if (input.empty() || initializer_names.count(input)) continue;
      complete = complete && available.count(input) > 0 && is_float(input) && ranks_.count(input) > 0;
      probe.inputs.push_back(input);
    }
    if (!complete) continue;
    probe.alone = std::make_unique<Session>(
        Session::from_model(single_node_model(prepared_, node, initializer_names, ranks_), label + " (" + name + " alone)",
                            session_));
    exposed.insert(probe.inputs.begin(), probe.inputs.end());
    exposed.insert(probe.output);
    probes.push_back(std::move(probe));
  }
  const std::vector<std::string> names(exposed.begin(), exposed.end());
  const Session quantized = Session::from_model(expose_intermediates(built, names, label), label, session_);
  std::map<std::string, std::pair<double, double>> power;  // noise, signal
  for (size_t s = 0; s < samples(); ++s) {
    NamedTensors tensors = quantized.run(sample(s), names);
    std::map<std::string, const Tensor*> by_tensor;
    for (const auto& [name, tensor] : tensors) by_tensor[name] = &tensor;
    for (const Probe& probe : probes) {
      const Tensor& y_q = *by_tensor.at(probe.output);
      if (y_q.dtype() != DType::kFloat32) continue;
      NamedTensors feed;
      bool float_inputs = true;
      for (const auto& input : probe.inputs) {
        feed.emplace_back(input, *by_tensor.at(input));
        float_inputs = float_inputs && by_tensor.at(input)->dtype() == DType::kFloat32;
      }
      if (!float_inputs) continue;
      const NamedTensors out = probe.alone->run(feed);
      const Tensor& f = out.front().second;
      if (f.shape() != y_q.shape() || f.dtype() != DType::kFloat32) continue;
      const auto a = y_q.as<float>();
      const auto b = f.as<float>();
      auto& [noise, signal] = power[probe.node];
      for (size_t i = 0; i < a.size(); ++i) {
        const double d = static_cast<double>(a[i]) - b[i];
        noise += d * d;
        signal += static_cast<double>(b[i]) * b[i];
      }
    }
  }
  std::map<std::string, double> ratio;
  for (const auto& [name, p] : power) ratio[name] = p.second > 0 ? p.first / p.second : (p.first > 0 ? 1.0 : 0.0);
  return ratio;
}

}  // namespace mixprec
