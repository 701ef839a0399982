// What every pass adds to a graph goes through here: fresh names (NameAllocator) and nodes
// (make_node), so inserted nodes and tensors never collide with the model's own names and are
// built one way.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include <onnx/onnx_pb.h>

namespace mixprec::ir {

// Hands out names no one has taken. Deterministic: the same reservations and requests give the
// same names.
class NameAllocator {
 public:
  NameAllocator() = default;  // nothing taken
  // Takes every name `model` uses: node, value, initializer (dense and sparse), graph input,
  // output and value_info names of the main graph and of every subgraph (ONNX names are global
  // across scopes: a subgraph may read any outer name).
  explicit NameAllocator(const onnx::ModelProto& model);

  void reserve(const std::string& name);
  bool taken(const std::string& name) const;
  // `base` itself when free, else the first free one of base_1, base_2, ...; taken from then on.
  // `base` must not be empty.
  std::string fresh(const std::string& base);

 private:
  std::unordered_set<std::string> used_;
};

// A node as make_node builds it; name what differs:
//   make_node({.op_type = "Cast", .name = n, .inputs = {x}, .outputs = {y}, .attributes = {...}})
struct NodeSpec {
  std::string op_type;
  std::string domain;  // "" = the default domain
  std::string name;
  std::vector<std::string> inputs;   // "" = an omitted optional input
  std::vector<std::string> outputs;
  std::vector<onnx::AttributeProto> attributes;
};
onnx::NodeProto make_node(NodeSpec spec);

onnx::AttributeProto make_int_attribute(const std::string& name, int64_t value);
onnx::AttributeProto make_float_attribute(const std::string& name, float value);
onnx::AttributeProto make_ints_attribute(const std::string& name, const std::vector<int64_t>& values);
onnx::AttributeProto make_string_attribute(const std::string& name, const std::string& value);
// Sets `attribute` on `node`: an attribute of the same name is removed first, so the new one
// always comes last.
void set_attribute(onnx::NodeProto& node, onnx::AttributeProto attribute);

}  // namespace mixprec::ir
