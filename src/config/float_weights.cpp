// float_weights: the nodes whose weights a config leaves float, grouped for the quantize summary.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "common/text.h"
#include "config/node_sites.h"
#include "ir/graph_view.h"
#include "ir/op_traits.h"
#include "mixprec/config.h"

namespace mixprec {
namespace {

constexpr int64_t kWeightValues = 64;  // fewer: scales, shapes, per-tensor constants
constexpr size_t kNamed = 3;

int64_t values_of(const onnx::TensorProto& tensor) {
  int64_t count = 1;
  for (int64_t d : tensor.dims()) count *= d;
  return count;
}

}  // namespace

std::vector<std::string> describe_float_weights(const std::vector<NodeAssignment>& assignment,
                                                const onnx::ModelProto& prepared, const std::string& label) {
  const ir::GraphView view(prepared.graph(), label);
  const std::vector<selection::NodeSite> sites = selection::node_sites(view);
  struct Group {
    std::string reason;
    std::vector<std::string> nodes;
  };
  // (op type, the reason's rule: its text before ':' or ' (') -> the first reason and the nodes
  std::map<std::pair<std::string, std::string>, Group> by_op;
  for (size_t site = 0; site < sites.size() && site < assignment.size(); ++site) {
    const NodeAssignment& a = assignment[site];
    // A node whose inputs get a format quantizes a constant input from its values.
    const auto is_float = [](const std::optional<TensorQuantSpec>& spec) {
      return !spec || spec->format == FormatId::kFloat32;
    };
    if (!a.excluded && !(is_float(a.config.weight) && is_float(a.config.input_tensors))) continue;
    const onnx::NodeProto& node = sites[site].ref.node();
    // Data movement (Reshape, Slice, Gather, Concat, ...) hands its constant on: the reader
    // quantizes the result as its own input.
    const ir::OpTraits& traits = ir::op_traits(node);
    if ((traits.flags & ir::kLayoutOnly) != 0 || traits.ort_fusion == ir::OrtFusionGroup::kDropQdq ||
        traits.ort_fusion == ir::OrtFusionGroup::kVariadic) {
      continue;
    }
    bool has_weights = false;
    for (const std::string& input : node.input()) {
      const onnx::TensorProto* tensor = input.empty() ? nullptr : sites[site].ref.graph->resolve_initializer(input);
      has_weights = has_weights || (tensor && tensor->data_type() == onnx::TensorProto::FLOAT && values_of(*tensor) >= kWeightValues);
    }
    if (!has_weights) continue;
    const std::string reason = a.excluded ? a.reason : "its layer config gives its inputs and weight no format";
    Group& group = by_op[{a.op_type, reason.substr(0, std::min(reason.find(':'), reason.find(" (")))}];
    if (group.nodes.empty()) group.reason = reason;
    group.nodes.push_back(a.node_name);
  }
  std::vector<std::string> lines;
  for (const auto& [key, group] : by_op) {
    const std::string& op_type = key.first;
    std::vector<std::string> named(group.nodes.begin(), group.nodes.begin() + static_cast<long>(std::min(kNamed, group.nodes.size())));
    lines.push_back(std::to_string(group.nodes.size()) + " x " + op_type + " (" + text::join(named, ", ") +
                    (group.nodes.size() > kNamed ? ", ..." : "") + ") because " + group.reason);
  }
  return lines;
}

}  // namespace mixprec
