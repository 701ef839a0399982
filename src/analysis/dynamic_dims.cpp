// dynamic_dims (analysis.h): the declared dims a compiler needing static shapes stops on.
#include <set>

#include "mixprec/analysis.h"

namespace mixprec {
namespace {

void add_dynamic(const onnx::ValueInfoProto& info, std::vector<std::string>& out) {
  const std::string name = "'" + info.name() + "'";
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

}  // namespace

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
