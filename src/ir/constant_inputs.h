// Constant operands of a node, read the way ops accept them: an initializer input (visible
// from the node's graph, outer scopes included) or, for opsets that had one, the attribute.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <onnx/onnx_pb.h>

#include "ir/graph_view.h"

namespace mixprec::ir {

// Input `input` of `node` when it is a one-element initializer, else the float attribute
// `attribute` when the input is absent; nullopt when neither holds a constant (a computed
// bound, several elements). `label` names the file in a decoding error.
std::optional<float> constant_float(const GraphView& view, const onnx::NodeProto& node, int input,
                                    std::string_view attribute, const std::string& label);

// Quark's relu-like node (check_relu_like_node): a Relu, or a Clip whose lower bound is the
// constant 0. Its output is never negative by construction, which UseUnsignedReLU's
// asymmetric quantization spends its codes on.
bool is_relu_like(const GraphView& view, const onnx::NodeProto& node, const std::string& label);

}  // namespace mixprec::ir
