#include "ir/constant_inputs.h"

#include "ir/onnx_names.h"
#include "mixprec/tensor_proto.h"

namespace mixprec::ir {

std::optional<float> constant_float(const GraphView& view, const onnx::NodeProto& node, int input,
                                    std::string_view attribute, const std::string& label) {
  if (node.input_size() > input && !node.input(input).empty()) {
    const onnx::TensorProto* init = view.resolve_initializer(node.input(input));
    if (init == nullptr) return std::nullopt;
    const auto values = tensor_from_proto(*init, label).to_floats();
    if (values.size() != 1) return std::nullopt;
    return values[0];
  }
  return float_attribute(node, attribute);
}

bool is_relu_like(const GraphView& view, const onnx::NodeProto& node, const std::string& label) {
  if (!is_default_domain(node.domain())) return false;
  if (node.op_type() == "Relu") return true;
  if (node.op_type() != "Clip") return false;
  const std::optional<float> low = constant_float(view, node, 1, "min", label);
  return low && *low == 0.0f;
}

}  // namespace mixprec::ir
