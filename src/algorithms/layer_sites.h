// The weighted layers an algorithm of the post-rewrite kind (bias correction, AdaRound,
// AdaQuant) works on, in data-flow levels, and the upstream part of a model that computes
// their inputs. Shared by correct_bias.cpp and layer_reconstruction.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "ir/graph_view.h"

namespace mixprec::algorithms {

struct LayerSite {
  std::string node;    // name, in the prepared and the quantized model
  std::string output;  // the layer's output tensor in the prepared model
  size_t index = 0;    // the node's index in the prepared model's graph
  // The number of sites on the longest path above this one: sites of one level do not feed
  // each other, so one rewrite and one pass serve a whole level once the levels above are done.
  size_t level = 0;
};

struct SiteRule {
  std::span<const char* const> op_types;  // default domain
  // true: the quantized model reads the weight (input 1) through DequantizeLinear (an integer
  // format); false: input 0 or input 1 through DequantizeLinear.
  bool integer_weight = false;
  // Further conditions on a candidate of the prepared model (may add notes); empty: none.
  std::function<bool(const ir::GraphView& prepared, const onnx::NodeProto& node)> accept;
};

// The nodes of `prepared` of the rule's op types, named, with one output and a float
// initializer weight of rank >= 2 at input 1, that `quantized` (a rewrite of `prepared`
// keeping node names) quantizes as the rule says, in topological order with their levels.
std::vector<LayerSite> layer_sites(const onnx::ModelProto& prepared, const onnx::ModelProto& quantized,
                                   const SiteRule& rule, const std::string& label);

// A digest of what computes each tensor of `model`'s main graph: a graph input by its name and
// type, an initializer by its contents, a node's output by the node (op type, domain,
// attributes, bodies included; not its name or its tensors' names, which a rewrite numbers) and
// its inputs' digests. Equal digests: computed alike from the same graph inputs, so a layer's
// input of equal digest in two rewrites holds the same values (what a body reads from outside
// it is digested by the body's text only). The learned-weights store keys on it.
std::map<std::string, uint64_t> tensor_digests(const onnx::ModelProto& model, const std::string& label);

// Whether `name` is a float initializer that exactly one node reads: a weight an algorithm may
// rescale in place without changing another node (CLE, SmoothQuant).
bool private_float(const ir::GraphView& view, const std::string& name);

// `model` cut down to what computes `outputs` (a level's pass need not run the layers below
// it): the nodes they depend on, the initializers those read, `outputs` as the only graph
// outputs. A model with subgraphs is kept whole (implicit inputs are not traced here).
onnx::ModelProto upstream_of(onnx::ModelProto model, const std::vector<std::string>& outputs, const std::string& label);

// The main graph's initializer `name`, or nullptr.
onnx::TensorProto* find_initializer(onnx::ModelProto& model, const std::string& name);

// Sets a float initializer's values, keeping its name and dims (an algorithm writing back a
// weight or bias it changed).
void replace_values(onnx::TensorProto& proto, const std::vector<float>& values);

}  // namespace mixprec::algorithms
