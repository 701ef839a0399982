// Small helpers shared by the rewrite passes: initializer lookup, renaming reads and tensors,
// and removal of what a rewrite left unused. Fresh names and new nodes come from
// ir/node_builder.h.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>

#include <onnx/onnx_pb.h>

namespace mixprec::rewrite {

// Initializers of the main graph by name (pointers into the graph; invalidated when the
// initializer list changes).
std::unordered_map<std::string, const onnx::TensorProto*> index_initializers(const onnx::GraphProto& graph);

// Calls `visit` on `graph` and on every body (If/Loop/Scan GRAPH and GRAPHS attributes) inside it,
// depth first.
void for_each_graph(const onnx::GraphProto& graph, const std::function<void(const onnx::GraphProto&)>& visit);
// The same, for passes that edit each graph: `visit` may change the graph it is given (its nodes
// included); the bodies visited next are those of the nodes it leaves.
void for_each_graph(onnx::GraphProto& graph, const std::function<void(onnx::GraphProto&)>& visit);

// Removes initializers that no node (in any subgraph) and no graph output reads, and
// value_info entries of tensors that no longer exist.
void remove_unused(onnx::GraphProto& graph);

// Removes, repeatedly, the main-graph nodes none of whose outputs a node (in any subgraph) or a
// graph output reads: what a rewrite left computing for nobody (the shape arithmetic of a
// Reshape it replaced).
void remove_dead_nodes(onnx::GraphProto& graph);

// Replaces every read of `from` by `to` in the nodes of `graph` (subgraph reads included).
// Graph outputs are left alone: the model's interface never changes.
void replace_reads(onnx::GraphProto& graph, const std::string& from, const std::string& to);

// Renames tensor `from` to `to` everywhere: its producer's output, every read, graph outputs
// and value_info. Used to keep a graph output's name when the node producing it goes away.
void rename_tensor(onnx::GraphProto& graph, const std::string& from, const std::string& to);

// Version of the default-domain opset ("" or "ai.onnx"); 0 when absent.
int64_t default_opset(const onnx::ModelProto& model);

}  // namespace mixprec::rewrite
