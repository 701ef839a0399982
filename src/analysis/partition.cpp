// partition_report: which of a model's MACs a runtime runs in integer kernels (see macs.h).
#include <string>
#include <string_view>

#include "mixprec/macs.h"

namespace mixprec {
namespace {

// ONNX Runtime's integer compute kernels (what its QDQ fusions produce); it places some of the
// standard ones (QLinearConv) in its own com.microsoft domain.
constexpr std::string_view kIntegerKernels[] = {
    "QLinearConv",          "QLinearMatMul",         "ConvInteger", "MatMulInteger",       "QGemm",
    "MatMulIntegerToFloat", "DynamicQuantizeMatMul", "QAttention",  "QLinearConvTranspose",
};

bool is_integer_kernel(const onnx::NodeProto& node) {
  const std::string& domain = node.domain();
  if (!domain.empty() && domain != "ai.onnx" && domain != "com.microsoft") return false;
  for (const auto op : kIntegerKernels) {
    if (op == node.op_type()) return true;
  }
  return false;
}

// ONNX Runtime names the kernel a fusion creates "<original node>_token_<n>".
std::string origin_name(const std::string& name) {
  const auto at = name.rfind("_token_");
  if (at == std::string::npos || at + 7 == name.size()) return name;
  for (size_t i = at + 7; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return name;
  }
  return name.substr(0, at);
}

}  // namespace

PartitionReport partition_report(const MacEstimate& source_macs, const onnx::ModelProto& optimized) {
  std::map<std::string, const onnx::NodeProto*> by_name;
  PartitionReport report;
  for (const auto& node : optimized.graph().node()) {
    if (node.op_type() == "QuantizeLinear") ++report.quantize_linear;
    if (node.op_type() == "DequantizeLinear") ++report.dequantize_linear;
    if (node.name().empty()) continue;
    // An integer kernel wins over other nodes made from the same original (layout changes).
    const onnx::NodeProto*& slot = by_name[origin_name(node.name())];
    if (slot == nullptr || is_integer_kernel(node)) slot = &node;
  }
  for (const auto& [name, node_macs] : source_macs.nodes) {
    if (node_macs.macs <= 0) continue;
    const auto it = by_name.find(name);
    if (it == by_name.end()) {
      report.unmatched_macs += node_macs.macs;
    } else if (is_integer_kernel(*it->second)) {
      report.integer_macs += node_macs.macs;
      ++report.integer_kernels[it->second->op_type()];
    } else {
      report.float_macs += node_macs.macs;
      report.float_nodes.push_back(name + " (" + it->second->op_type() + ")");
    }
  }
  return report;
}

}  // namespace mixprec
