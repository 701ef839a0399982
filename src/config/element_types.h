// A light element-type inference that recognises shape and index computations in graphs
// without value_info (the op table's output_type column says how each op's outputs get theirs).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

#include "ir/graph_view.h"

namespace mixprec::selection {

// ONNX element types of the values of one graph (not of its subgraphs): declared types
// (inputs, outputs, value_info) and initializers first, then, in topological order, node
// outputs from the op table's output types (Shape → int64, Cast → its `to`,
// Gather/Concat/Reshape/... → their data input's type, ...). Values whose type cannot be told
// are absent. Ops outside the default domain have unknown output types.
// `outer`: the types of the enclosing graphs' values, which a subgraph reads by name.
std::unordered_map<std::string, int32_t> infer_element_types(const ir::GraphView& graph,
                                                             const std::unordered_map<std::string, int32_t>& outer = {});
// The same over `graph` and every subgraph below it (each seeded with its enclosing graph's
// types), in one map: ONNX value names are unique across nested scopes.
std::unordered_map<std::string, int32_t> infer_nested_element_types(
    const ir::GraphView& graph, const std::unordered_map<std::string, int32_t>& outer = {});

// Integer and bool element types: the types of shapes, indices and masks (nothing to quantize).
bool is_integer_or_bool_type(int32_t elem_type);

}  // namespace mixprec::selection
