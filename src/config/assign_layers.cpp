// assign_layers: which formats each node of the model (If/Loop/Scan bodies included) gets, and
// which rule decided it.
// ensure_node_names: stable names for unnamed nodes, shared by both so that a config written
// against a named model selects the same nodes in the unnamed original.
#include <algorithm>
#include <optional>
#include <ranges>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "config/element_types.h"
#include "config/node_sites.h"
#include "config/node_pattern.h"
#include "ir/graph_view.h"
#include "ir/node_builder.h"
#include "ir/op_traits.h"
#include "mixprec/config.h"
#include "mixprec/error.h"
#include "mixprec/log.h"

namespace mixprec {
namespace {

using selection::NodePattern;
using ir::ConfigRole;

// --- Node names ----------------------------------------------------------------------------------

// The graphs of a model in naming order: the main graph, then subgraphs breadth-first (node
// order, then attribute order).
std::vector<const onnx::GraphProto*> graphs_in_naming_order(const onnx::GraphProto& main) {
  std::vector<const onnx::GraphProto*> graphs{&main};
  for (size_t i = 0; i < graphs.size(); ++i) {
    for (const onnx::NodeProto& node : graphs[i]->node()) {
      for (const onnx::AttributeProto& attribute : node.attribute()) {
        if (attribute.has_g()) graphs.push_back(&attribute.g());
        for (const onnx::GraphProto& graph : attribute.graphs()) graphs.push_back(&graph);
      }
    }
  }
  return graphs;
}

// The name of every node of `graphs` (in order) once ensure_node_names has run.
std::vector<std::string> planned_node_names(const std::vector<const onnx::GraphProto*>& graphs) {
  // Only node names are taken: a node may share its name with a tensor.
  ir::NameAllocator allocator;
  for (const onnx::GraphProto* graph : graphs) {
    for (const onnx::NodeProto& node : graph->node()) allocator.reserve(node.name());
  }
  std::vector<std::string> names;
  for (const onnx::GraphProto* graph : graphs) {
    for (int index = 0; index < graph->node_size(); ++index) {
      const onnx::NodeProto& node = graph->node(index);
      names.push_back(node.name().empty() ? allocator.fresh(node.op_type() + "_" + std::to_string(index)) : node.name());
    }
  }
  return names;
}

}  // namespace

namespace selection {

std::vector<NodeSite> node_sites(const ir::GraphView& main) {
  struct Scope {
    const ir::GraphView* view;
    std::string attribute;  // ".then_branch", ".branches[1]"; "" for the main graph
    std::optional<size_t> owner;
  };
  // Breadth first, as graphs_in_naming_order: the scopes are found while the sites are laid out.
  std::vector<Scope> scopes{{&main, "", std::nullopt}};
  std::vector<NodeSite> sites;
  std::vector<size_t> scope_of;  // per site
  for (size_t g = 0; g < scopes.size(); ++g) {
    const ir::GraphView& view = *scopes[g].view;
    for (size_t i = 0; i < view.node_count(); ++i) {
      sites.push_back({.ref = {&view, i}, .name = {}, .path = {}, .owner = scopes[g].owner});
      scope_of.push_back(g);
      const size_t site = sites.size() - 1;
      const std::vector<const ir::GraphView*> bodies = view.subgraphs(i);
      size_t b = 0;
      for (const onnx::AttributeProto& attribute : view.node(i).attribute()) {
        if (attribute.has_g()) scopes.push_back({bodies.at(b++), "." + attribute.name(), site});
        for (int k = 0; k < attribute.graphs_size(); ++k) {
          scopes.push_back({bodies.at(b++), "." + attribute.name() + "[" + std::to_string(k) + "]", site});
        }
      }
    }
  }
  std::vector<const onnx::GraphProto*> graphs;
  for (const Scope& scope : scopes) graphs.push_back(&scope.view->graph());
  const std::vector<std::string> names = planned_node_names(graphs);
  for (size_t k = 0; k < sites.size(); ++k) {  // an owner's path is set before its bodies'
    NodeSite& site = sites[k];
    site.name = names[k];
    site.path = site.owner ? sites[*site.owner].path + scopes[scope_of[k]].attribute + "/" + site.name : site.name;
  }
  return sites;
}

}  // namespace selection

namespace {

// --- What the rules look at ----------------------------------------------------------------------

void warn(const std::string& label, const std::string& message) {
  log_warning(label.empty() ? message : label + ": " + message);
}

// Nodes on a data path from one of `starts` to one of `ends`, both included.
std::vector<bool> nodes_on_paths(const ir::GraphView& graph, const std::vector<size_t>& starts,
                                 const std::vector<size_t>& ends) {
  const auto consumers_of = [&](size_t node, auto&& visit) {
    for (const std::string& output : graph.node(node).output()) {
      if (output.empty()) continue;
      for (size_t consumer : graph.consumers(output)) visit(consumer);
    }
  };
  std::vector<bool> reaches_end(graph.node_count(), false);
  for (const size_t node : graph.topological_order() | std::views::reverse) {
    bool reaches = std::ranges::find(ends, node) != ends.end();
    consumers_of(node, [&](size_t consumer) { reaches = reaches || reaches_end[consumer]; });
    reaches_end[node] = reaches;
  }
  std::vector<bool> on_path(graph.node_count(), false);
  std::vector<size_t> pending(starts);
  while (!pending.empty()) {
    const size_t node = pending.back();
    pending.pop_back();
    if (on_path[node] || !reaches_end[node]) continue;
    on_path[node] = true;
    consumers_of(node, [&](size_t consumer) { pending.push_back(consumer); });
  }
  return on_path;
}

using NodesByName = std::unordered_map<std::string, std::vector<size_t>>;

// Per node: the index of the first exclude.subgraphs entry whose paths cover it.
std::vector<std::optional<size_t>> find_subgraph_exclusions(const ExcludeConfig& exclude, const ir::GraphView& graph,
                                                            const NodesByName& nodes_by_name,
                                                            const std::string& label) {
  const auto& subgraphs = exclude.subgraphs;
  std::string missing;
  for (size_t i = 0; i < subgraphs.size(); ++i) {
    for (const std::string& name : {subgraphs[i].first, subgraphs[i].second}) {
      if (nodes_by_name.contains(name)) continue;
      missing += (missing.empty() ? "" : ", ") + ("\"" + name + "\" (exclude.subgraphs[" + std::to_string(i) + "])");
    }
  }
  if (!missing.empty()) throw_bad_input(label, "exclude.subgraphs names nodes the model does not have: " + missing);

  std::vector<std::optional<size_t>> exclusions(graph.node_count());
  for (size_t i = 0; i < subgraphs.size(); ++i) {
    const auto& [start, end] = subgraphs[i];
    const std::vector<bool> on_path = nodes_on_paths(graph, nodes_by_name.at(start), nodes_by_name.at(end));
    if (std::ranges::find(on_path, true) == on_path.end()) {
      warn(label, "exclude.subgraphs[" + std::to_string(i) + "]: no data path from \"" + start + "\" to \"" + end +
                      "\", nothing excluded");
    }
    for (size_t node = 0; node < on_path.size(); ++node) {
      if (on_path[node] && !exclusions[node]) exclusions[node] = i;
    }
  }
  return exclusions;
}

// Everything the rules need, computed once per assign_layers call. Indices are node sites
// (node_sites: the main graph's nodes first, in node order, then the bodies').
struct Context {
  Context(const QuantConfig& quant_config, const onnx::ModelProto& model, const std::string& config_label)
      : config(quant_config),
        label(config_label),
        graph(model.graph(), config_label),
        sites(selection::node_sites(graph)),
        patterns(selection::compile_patterns(quant_config, config_label)),
        types(selection::infer_nested_element_types(graph)) {
    for (size_t site = 0; site < sites.size(); ++site) site_of.emplace(sites[site].ref, site);
    for (size_t node = 0; node < graph.node_count(); ++node) nodes_by_name[sites[node].name].push_back(node);
    const std::vector<std::string>& listed = config.extra.op_types_to_quantize;
    op_types_to_quantize = listed.empty() ? default_op_types_to_quantize() : listed;
    subgraph_exclusions = find_subgraph_exclusions(config.exclude, graph, nodes_by_name, label);
  }

  const onnx::NodeProto& node(size_t index) const { return sites[index].ref.node(); }
  const ir::GraphView& graph_of(size_t index) const { return *sites[index].ref.graph; }
  const ir::OpTraits& rule(size_t index) const { return ir::op_traits(node(index)); }
  // A pattern names a node by its path or by its own name (as a model viewer shows it).
  bool matches(const NodePattern& pattern, size_t index) const {
    return pattern.matches(sites[index].path) || (sites[index].owner && pattern.matches(sites[index].name));
  }
  bool is_initializer_input(size_t index, int input) const {
    return input >= 0 && input < node(index).input_size() &&
           graph_of(index).resolve_initializer(node(index).input(input)) != nullptr;
  }
  // The site producing `name` as node `index` sees it (its graph, then enclosing graphs).
  std::optional<size_t> producer(size_t index, const std::string& name) const {
    const std::optional<ir::NodeRef> ref = graph_of(index).resolve_producer(name);
    return ref ? std::optional<size_t>(site_of.at(*ref)) : std::nullopt;
  }
  // Normalization arithmetic: a kNormalization op, unless it is plain scaling by a constant.
  bool is_normalization(size_t index) const {
    const ir::OpTraits& op = rule(index);
    return op.config_role == ConfigRole::kNormalization && !(op.scaling_input >= 0 && is_constant_input(index, op.scaling_input));
  }
  // An initializer or the output of a Constant node.
  bool is_constant_input(size_t index, int input) const {
    if (input >= node(index).input_size()) return false;
    const std::string& name = node(index).input(input);
    const std::optional<size_t> from = producer(index, name);
    return graph_of(index).resolve_initializer(name) != nullptr ||
           (from && ir::is_default_domain(node(*from).domain()) && node(*from).op_type() == "Constant");
  }

  const QuantConfig& config;
  const std::string& label;
  const ir::GraphView graph;
  std::vector<selection::NodeSite> sites;
  std::unordered_map<ir::NodeRef, size_t, ir::NodeRefHash> site_of;
  NodesByName nodes_by_name;  // main-graph nodes (exclude.subgraphs paths run in the main graph)
  selection::ConfigPatterns patterns;
  std::unordered_map<std::string, int32_t> types;
  std::vector<std::string> op_types_to_quantize;
  std::vector<std::optional<size_t>> subgraph_exclusions;  // per main-graph node
};

// --- The rules that keep a node in float ---------------------------------------------------------
// Each returns the reason when it applies to node `index`.

using FloatRule = std::optional<std::string> (*)(const Context& context, size_t index);

std::optional<std::string> excluded_by_name(const Context& context, size_t index) {
  for (const NodePattern& pattern : context.patterns.excludes) {
    if (context.matches(pattern, index)) return "exclude.node_names pattern " + pattern.text();
  }
  return std::nullopt;
}

std::optional<std::string> excluded_by_subgraph(const Context& context, size_t index) {
  if (index >= context.subgraph_exclusions.size()) return std::nullopt;  // in a body: see assign_layers
  const std::optional<size_t> entry = context.subgraph_exclusions[index];
  if (!entry) return std::nullopt;
  const auto& [start, end] = context.config.exclude.subgraphs[*entry];
  return "exclude.subgraphs[" + std::to_string(*entry) + "] " + start + " -> " + end;
}

std::optional<std::string> excluded_by_layer_type(const Context& context, size_t index) {
  const auto& layer_types = context.config.layer_types;
  const std::string& op_type = context.node(index).op_type();
  for (size_t i = 0; i < layer_types.size(); ++i) {
    if (!layer_types[i].layer_config && std::ranges::find(layer_types[i].op_types, op_type) != layer_types[i].op_types.end()) {
      return "layer_type_config[" + std::to_string(i) + "] op type " + op_type + ": null layer (kept in float)";
    }
  }
  return std::nullopt;
}

std::optional<std::string> shape_or_index(const Context& context, size_t index) {
  const onnx::NodeProto& node = context.node(index);
  if (context.rule(index).config_role == ConfigRole::kShapeIndex) return "shape/index op " + node.op_type() + " (never quantized)";
  bool any_output = false;
  for (const std::string& output : node.output()) {
    if (output.empty()) continue;
    const auto type = context.types.find(output);
    if (type == context.types.end() || !selection::is_integer_or_bool_type(type->second)) return std::nullopt;
    any_output = true;
  }
  if (!any_output) return std::nullopt;
  return "outputs are integer or bool: a shape/index computation (never quantized)";
}

std::optional<std::string> smoothing_scale(const Context& context, size_t index) {
  if (context.node(index).doc_string() != ir::kSmoothQuantScaleDoc) return std::nullopt;
  return "SmoothQuant's activation scale (never quantized: its output is quantized, after smoothing)";
}

std::optional<std::string> normalization_arithmetic(const Context& context, size_t index) {
  const onnx::NodeProto& node = context.node(index);
  if (context.is_normalization(index)) return "normalization arithmetic " + node.op_type() + " (never quantized)";
  if ((context.rule(index).flags & ir::kNormalizationOperand) == 0) return std::nullopt;
  for (const std::string& input : node.input()) {
    const std::optional<size_t> producer = input.empty() ? std::nullopt : context.producer(index, input);
    if (producer && context.is_normalization(*producer)) {
      return "normalization arithmetic: " + node.op_type() + " reads " + context.node(*producer).op_type() + " " +
             context.sites[*producer].path + " (never quantized)";
    }
  }
  return std::nullopt;
}

std::optional<std::string> op_type_not_listed(const Context& context, size_t index) {
  const std::string& op_type = context.node(index).op_type();
  if (std::ranges::find(context.op_types_to_quantize, op_type) != context.op_types_to_quantize.end()) {
    return std::nullopt;
  }
  return "op type " + op_type + " not in " +
         (context.config.extra.op_types_to_quantize.empty() ? "the default op types to quantize" : "OpTypesToQuantize");
}

// In priority order: the first rule that applies decides (see assign_layers in config.h).
constexpr FloatRule kFloatRules[] = {
    excluded_by_name,         excluded_by_subgraph, excluded_by_layer_type,
    shape_or_index,           smoothing_scale,      normalization_arithmetic,
    op_type_not_listed,
};

// --- Quantized nodes -----------------------------------------------------------------------------

// The layer config of a node no rule keeps in float: the last matching override, else the last
// layer type entry with a layer for its op type, else global.
NodeAssignment apply_layer_config(const Context& context, size_t index, NodeAssignment assignment) {
  const auto& overrides = context.config.specific;
  const auto& layer_types = context.config.layer_types;
  assignment.config = context.config.global;
  assignment.reason = "global";
  for (size_t i = layer_types.size(); i-- > 0;) {
    const std::string& op_type = context.node(index).op_type();
    if (!layer_types[i].layer_config || std::ranges::find(layer_types[i].op_types, op_type) == layer_types[i].op_types.end()) {
      continue;
    }
    assignment.config = *layer_types[i].layer_config;
    assignment.reason = "layer_type_config[" + std::to_string(i) + "] op type " + op_type;
    break;
  }
  for (size_t i = overrides.size(); i-- > 0;) {
    const auto& targets = context.patterns.targets[i];
    const auto match = std::ranges::find_if(targets, [&](const NodePattern& p) { return context.matches(p, index); });
    if (match == targets.end()) continue;
    assignment.config = overrides[i].layer_config;
    assignment.reason = "specific_layer_config[" + std::to_string(i) + "] pattern " + match->text();
    break;
  }
  // Weight and bias specs need the tensor as an initializer at the op's weight/bias input.
  // Dropping them is only worth a note where the op has such an input.
  const ir::OpTraits& rule = context.rule(index);
  const struct {
    const char* name;
    std::optional<TensorQuantSpec>& spec;
    int input;
  } constant_inputs[] = {
      {"weight", assignment.config.weight, rule.config_weight_input()},
      {"bias", assignment.config.bias, rule.config_bias_input()},
  };
  for (const auto& [name, spec, input] : constant_inputs) {
    if (!spec || context.is_initializer_input(index, input)) continue;
    spec.reset();
    if (input >= 0 && input < context.node(index).input_size()) {
      assignment.reason += std::string("; ") + name + " left in float (input " + std::to_string(input) +
                           " is not an initializer)";
    }
  }
  return assignment;
}

void warn_about_patterns(const Context& context) {
  const auto warn_if_unmatched = [&](const NodePattern& pattern) {
    bool matched = false;
    for (size_t index = 0; index < context.sites.size() && !matched; ++index) matched = context.matches(pattern, index);
    if (!matched) {
      warn(context.label, pattern.path() + ": pattern \"" + pattern.text() + "\" matches no node");
    }
  };
  for (const auto& targets : context.patterns.targets) {
    for (const NodePattern& pattern : targets) {
      if (pattern.looks_like_regex()) {
        warn(context.label, pattern.path() + ": \"" + pattern.text() +
                                "\" starts with '^' but has no \".*\", so it is matched as an exact node name, "
                                "not as a regex");
      }
      warn_if_unmatched(pattern);
    }
  }
  for (const NodePattern& pattern : context.patterns.excludes) warn_if_unmatched(pattern);
}

void warn_about_op_types(const Context& context) {
  // A preset's own list (U8S8 adds Div for hard-swish's "/ 6") is not the user's choice.
  if (is_preset_op_types(context.config.extra.op_types_to_quantize)) return;
  for (const std::string& op_type : context.config.extra.op_types_to_quantize) {
    const ir::OpTraits& rule = ir::op_traits("", op_type);
    if (rule.config_role != ConfigRole::kShapeIndex && rule.config_role != ConfigRole::kNormalization) continue;
    // A scaling op (Div by a constant) is quantized where it scales: listing it is worth a
    // warning only when the model has such nodes and every one of them normalizes.
    if (rule.scaling_input >= 0) {
      bool scales = false, normalizes = false;
      for (size_t index = 0; index < context.sites.size(); ++index) {
        if (context.node(index).op_type() != op_type) continue;
        (context.is_normalization(index) ? normalizes : scales) = true;
      }
      if (scales || !normalizes) continue;
    }
    warn(context.label, "extra_options.OpTypesToQuantize lists " + op_type + ", but " + op_type + " nodes are " +
                            (rule.config_role == ConfigRole::kShapeIndex ? "shape/index ops" : "normalization arithmetic") +
                            " and are never quantized" +
                            (rule.scaling_input >= 0
                                 ? " (every " + op_type + " node of this model normalizes; one whose input " +
                                       std::to_string(rule.scaling_input) + " is a constant would be)"
                                 : ""));
  }
}

// An op type of layer_type_config that no node has, or that a layer is given but the op types
// to quantize leave out (rule 3 keeps those nodes in float before any layer applies).
void warn_about_layer_types(const Context& context) {
  const auto& layer_types = context.config.layer_types;
  for (size_t i = 0; i < layer_types.size(); ++i) {
    const std::string where = "layer_type_config[" + std::to_string(i) + "]";
    for (const std::string& op_type : layer_types[i].op_types) {
      bool present = false;
      for (size_t index = 0; index < context.sites.size() && !present; ++index) present = context.node(index).op_type() == op_type;
      if (!present) {
        warn(context.label, where + ": op type " + op_type + " matches no node");
      } else if (layer_types[i].layer_config &&
                 std::ranges::find(context.op_types_to_quantize, op_type) == context.op_types_to_quantize.end()) {
        warn(context.label, where + " gives " + op_type + " a layer, but " + op_type + " is not in " +
                                (context.config.extra.op_types_to_quantize.empty() ? "the default op types to quantize"
                                                                                   : "OpTypesToQuantize") +
                                ": its nodes stay in float (list it in extra_options.OpTypesToQuantize)");
      }
    }
  }
}

}  // namespace

std::vector<NodeAssignment> assign_layers(const QuantConfig& config, const onnx::ModelProto& model,
                                          const std::string& label) {
  const Context context(config, model, label);
  warn_about_patterns(context);
  warn_about_op_types(context);
  warn_about_layer_types(context);

  std::vector<NodeAssignment> assignments;
  assignments.reserve(context.sites.size());
  for (size_t index = 0; index < context.sites.size(); ++index) {
    const selection::NodeSite& site = context.sites[index];
    NodeAssignment assignment{.node_name = site.path, .op_type = context.node(index).op_type()};
    std::optional<std::string> float_reason;
    // A body inherits its owner's exclusion by the user (a name pattern or a subgraph path).
    if (const NodeAssignment* owner = site.owner ? &assignments[*site.owner] : nullptr;
        owner && owner->excluded && (owner->reason.starts_with("exclude.") || owner->reason.starts_with("inside "))) {
      float_reason = owner->reason.starts_with("inside ") ? owner->reason
                                                           : "inside " + owner->node_name + ": " + owner->reason;
    }
    for (const FloatRule rule : kFloatRules) {
      if (float_reason || (float_reason = rule(context, index))) break;
    }
    if (float_reason) {
      assignment.excluded = true;
      assignment.reason = std::move(*float_reason);
      assignments.push_back(std::move(assignment));
    } else {
      assignments.push_back(apply_layer_config(context, index, std::move(assignment)));
    }
  }
  return assignments;
}

size_t ensure_node_names(onnx::ModelProto& model) {
  const std::vector<const onnx::GraphProto*> graphs = graphs_in_naming_order(model.graph());
  const std::vector<std::string> names = planned_node_names(graphs);
  size_t position = 0, named = 0;
  for (const onnx::GraphProto* graph : graphs) {
    // The graphs belong to `model`, which is ours to modify; the traversal is shared with
    // assign_layers, which only reads.
    for (onnx::NodeProto& node : *const_cast<onnx::GraphProto*>(graph)->mutable_node()) {
      if (node.name().empty()) {
        node.set_name(names[position]);
        ++named;
      }
      ++position;
    }
  }
  return named;
}

}  // namespace mixprec
