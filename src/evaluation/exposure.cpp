#include "evaluation/exposure.h"

#include <algorithm>
#include <map>
#include <span>
#include <string_view>

#include "ir/graph_view.h"
#include "mixprec/formats.h"
#include "mixprec/rewrite.h"
#include "rewrite/upgrade_opset.h"

namespace mixprec {
namespace {

// OrtCpuFusion moves an output pair after these when they are the output's only reader.
constexpr std::string_view kGroupClosers[] = {"Relu", "Clip"};
// ONNX Runtime's Conv/Gemm/MatMul + activation fusions.
constexpr std::string_view kFusedProducers[] = {"Conv", "ConvTranspose", "Gemm", "MatMul"};
constexpr std::string_view kFusedActivations[] = {"Relu", "Clip", "Sigmoid", "LeakyRelu", "HardSigmoid", "Tanh"};

bool is_one_of(const onnx::NodeProto& node, std::span<const std::string_view> op_types) {
  return (node.domain().empty() || node.domain() == "ai.onnx") &&
         std::ranges::find(op_types, std::string_view(node.op_type())) != op_types.end();
}

bool is_integer(const std::optional<TensorQuantSpec>& spec) {
  return spec && format_traits(spec->format).is_integer;
}

}  // namespace

std::set<std::string> tensors_read(const QuantConfig& config, const onnx::ModelProto& graph, const std::string& label) {
  const ir::GraphView view(graph.graph(), label);
  std::map<std::string, const NodeAssignment*> by_name;
  const std::vector<NodeAssignment> assignment = assign_layers(config, graph, label);
  for (const auto& a : assignment) by_name.emplace(a.node_name, &a);
  const auto integer_inputs = [&](const onnx::NodeProto& node) {
    const auto it = by_name.find(node.name());
    return it != by_name.end() && !it->second->excluded && is_integer(it->second->config.input_tensors);
  };
  std::set<std::string> read;
  for (size_t index = 0; index < view.node_count(); ++index) {
    const onnx::NodeProto& node = view.node(index);
    const auto it = by_name.find(node.name());
    if (it == by_name.end() || it->second->excluded) continue;
    const LayerConfig& layer = it->second->config;
    if (is_integer(layer.input_tensors)) {
      // Weights and biases are initializers; a computed one is quantized as an activation.
      for (const std::string& input : node.input()) {
        if (!input.empty() && !view.is_initializer(input)) read.insert(input);
      }
    }
    const bool fused_output = config.extra.ort_cpu_fusion && is_integer(layer.input_tensors);
    if (!is_integer(layer.output_tensors) && !fused_output) continue;
    for (const std::string& output : node.output()) {
      if (output.empty()) continue;
      const std::vector<size_t>& readers = view.consumers(output);
      if (!is_integer(layer.output_tensors) && readers.size() == 1 && is_one_of(view.node(readers[0]), kGroupClosers) &&
          !integer_inputs(view.node(readers[0])) && view.node(readers[0]).output_size() >= 1) {
        read.insert(view.node(readers[0]).output(0));
        continue;
      }
      read.insert(output);
    }
  }
  // Constant operands are quantized from their values, not from statistics.
  std::erase_if(read, [&](const std::string& name) {
    const auto producer = view.producer(name);
    return producer && view.node(*producer).op_type() == "Constant";
  });
  return read;
}

Exposure calibration_exposure(const onnx::ModelProto& calibration_graph, const QuantConfig* config,
                              const std::string& label) {
  std::vector<QuantConfig> configs;
  for (const auto& name : preset_names()) configs.push_back(*preset_config(name));
  if (config) configs.push_back(*config);
  std::set<std::string> tensors;
  std::optional<onnx::ModelProto> affine_folded;  // the calibration graph with FoldConvAffine
  for (const QuantConfig& c : configs) {
    const onnx::ModelProto* graph = &calibration_graph;
    if (c.extra.fold_conv_affine) {
      if (!affine_folded) affine_folded = prepare_model(calibration_graph, {.fold_batchnorm = false, .fold_affine = true}, label);
      graph = &*affine_folded;
    }
    tensors.merge(tensors_read(c, *graph, label));
  }
  for (auto& name : tensors_needing_rank(calibration_graph, kNewestUpgradeTarget, label)) tensors.insert(std::move(name));

  const ir::GraphView view(calibration_graph.graph(), label);
  std::set<std::string> known;
  for (const auto& input : calibration_graph.graph().input()) {
    if (!view.is_initializer(input.name())) known.insert(input.name());
  }
  for (const auto& node : calibration_graph.graph().node()) known.insert(node.output().begin(), node.output().end());
  Exposure exposure;
  for (const auto& name : tensors) {
    if (!known.count(name)) continue;  // not a tensor of the calibration graph (an initializer)
    exposure.tensors.push_back(name);
    const auto producer = view.producer(name);
    if (!producer || !is_one_of(view.node(*producer), kFusedProducers)) continue;
    const std::vector<size_t>& readers = view.consumers(name);
    if (readers.size() == 1 && is_one_of(view.node(readers[0]), kFusedActivations)) exposure.pre_activations.push_back(name);
  }
  return exposure;
}

}  // namespace mixprec
