#include "evaluation/exposure.h"

#include <algorithm>
#include <functional>
#include <map>
#include <span>
#include <string_view>
#include <unordered_map>

#include "config/node_sites.h"
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

bool is_qdq(const std::optional<TensorQuantSpec>& spec) {
  return spec && format_traits(spec->format).is_qdq;
}

}  // namespace

std::set<std::string> tensors_read(const QuantConfig& config, const onnx::ModelProto& graph, const std::string& label) {
  const ir::GraphView view(graph.graph(), label);
  const std::vector<selection::NodeSite> sites = selection::node_sites(view);
  const std::vector<NodeAssignment> assignment = assign_layers(config, graph, label);
  // assign_layers gives one entry per site, in site order.
  std::unordered_map<ir::NodeRef, size_t, ir::NodeRefHash> site_of;
  for (size_t site = 0; site < sites.size(); ++site) site_of.emplace(sites[site].ref, site);
  const auto integer_inputs = [&](const ir::GraphView& scope, size_t index) {
    const size_t site = site_of.at({&scope, index});
    return !assignment[site].excluded && is_qdq(assignment[site].config.input_tensors);
  };
  std::set<std::string> read, constants;
  for (size_t site = 0; site < sites.size(); ++site) {
    const ir::GraphView& scope = *sites[site].ref.graph;
    const onnx::NodeProto& node = sites[site].ref.node();
    if (node.op_type() == "Constant") constants.insert(node.output().begin(), node.output().end());
    if (assignment[site].excluded) continue;
    const LayerConfig& layer = assignment[site].config;
    if (is_qdq(layer.input_tensors)) {
      // Weights and biases are initializers; a computed one is quantized as an activation.
      for (const std::string& input : node.input()) {
        if (!input.empty() && scope.resolve_initializer(input) == nullptr) read.insert(input);
      }
    }
    const bool fused_output = config.extra.ort_cpu_fusion && is_qdq(layer.input_tensors);
    if (!is_qdq(layer.output_tensors) && !fused_output) continue;
    for (const std::string& output : node.output()) {
      if (output.empty()) continue;
      const std::vector<size_t>& readers = scope.consumers(output);
      if (!is_qdq(layer.output_tensors) && readers.size() == 1 && is_one_of(scope.node(readers[0]), kGroupClosers) &&
          !integer_inputs(scope, readers[0]) && scope.node(readers[0]).output_size() >= 1) {
        read.insert(scope.node(readers[0]).output(0));
        continue;
      }
      read.insert(output);
    }
  }
  // Constant operands are quantized from their values, not from statistics.
  std::erase_if(read, [&](const std::string& name) { return constants.contains(name); });
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
  // The graph inputs and node outputs of every graph (bodies' too), with the graph producing them.
  std::map<std::string, const ir::GraphView*> known;
  const std::function<void(const ir::GraphView&)> add_known = [&](const ir::GraphView& scope) {
    for (const auto& input : scope.graph().input()) {
      if (!scope.is_initializer(input.name())) known.emplace(input.name(), &scope);
    }
    for (size_t index = 0; index < scope.node_count(); ++index) {
      for (const std::string& output : scope.node(index).output()) known.emplace(output, &scope);
      for (const ir::GraphView* body : scope.subgraphs(index)) add_known(*body);
    }
  };
  add_known(view);
  Exposure exposure;
  for (const auto& name : tensors) {
    const auto it = known.find(name);
    if (it == known.end()) continue;  // not a tensor of the calibration graph (an initializer)
    exposure.tensors.push_back(name);
    const ir::GraphView& scope = *it->second;
    const auto producer = scope.producer(name);
    if (!producer || !is_one_of(scope.node(*producer), kFusedProducers)) continue;
    const std::vector<size_t>& readers = scope.consumers(name);
    if (readers.size() == 1 && is_one_of(scope.node(readers[0]), kFusedActivations)) exposure.pre_activations.push_back(name);
  }
  return exposure;
}

}  // namespace mixprec
