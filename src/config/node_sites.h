// Every node of a model, the nodes of If/Loop/Scan bodies included, with the path configs,
// ledgers and reports name it by: its own name in the main graph, and below an owner the owner's
// path, the attribute and the node's name: "If_3.then_branch/Gemm_1" (GRAPHS attributes add the
// element: "Foo_2.branches[1]/Conv_0"). Nodes without a name go by the name ensure_node_names
// would give them, so a config written against a prepared model selects the same nodes in the
// unprepared original.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "ir/graph_view.h"

namespace mixprec::selection {

struct NodeSite {
  ir::NodeRef ref;
  std::string name;                  // the node's own (or planned) name
  std::string path;                  // == name in the main graph
  std::optional<size_t> owner;       // the site of the node whose body holds it
};

// The main graph's nodes first, in node order, then each body's in ensure_node_names's order
// (bodies breadth first, in node and attribute order); an owner comes before its bodies' nodes.
std::vector<NodeSite> node_sites(const ir::GraphView& main);

}  // namespace mixprec::selection
