// Small helpers shared by the rewrite passes: fresh names, node construction, initializer
// lookup and removal of what a rewrite left unused.
#pragma once

#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <onnx/onnx_pb.h>

#include "mixprec/tensor.h"

namespace mixprec::rewrite {

// Hands out names unused by any node, tensor or initializer of the model (subgraphs
// included), so inserted nodes and tensors never collide with the model's own.
class NameAllocator {
 public:
  explicit NameAllocator(const onnx::ModelProto& model);
  // `base` itself when free, else base_1, base_2, ...
  std::string fresh(const std::string& base);

 private:
  std::unordered_set<std::string> used_;
};

onnx::NodeProto make_node(const std::string& op_type, const std::vector<std::string>& inputs,
                          const std::vector<std::string>& outputs, const std::string& name,
                          const std::string& domain = "");
void set_int_attribute(onnx::NodeProto& node, const std::string& name, int64_t value);

// Initializers of the main graph by name (pointers into the graph; invalidated when the
// initializer list changes).
std::unordered_map<std::string, const onnx::TensorProto*> index_initializers(const onnx::GraphProto& graph);

// Removes initializers that no node (in any subgraph) and no graph output reads, and
// value_info entries of tensors that no longer exist.
void remove_unused(onnx::GraphProto& graph);

// Replaces every read of `from` by `to` in the nodes of `graph` (subgraph reads included).
// Graph outputs are left alone: the model's interface never changes.
void replace_reads(onnx::GraphProto& graph, const std::string& from, const std::string& to);

// Renames tensor `from` to `to` everywhere: its producer's output, every read, graph outputs
// and value_info. Used to keep a graph output's name when the node producing it goes away.
void rename_tensor(onnx::GraphProto& graph, const std::string& from, const std::string& to);

// Version of the default-domain opset ("" or "ai.onnx"); 0 when absent.
int64_t default_opset(const onnx::ModelProto& model);

}  // namespace mixprec::rewrite
