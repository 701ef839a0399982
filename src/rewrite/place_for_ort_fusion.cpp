// place_for_ort_fusion: moves and adds the Q/DQ pairs ONNX Runtime's CPU provider needs to fuse
// each quantized node into an integer kernel (OrtCpuFusion, the U8S8 preset).
//
// ONNX Runtime fuses a group "DQ inputs -> op -> Q" when every reader of the op's output is
// that one Q and the DQ/Q element types agree (its QDQ selectors). insert_qdq puts a pair where
// each node reads a tensor, so an op's output goes to several pairs, to float readers, or
// nowhere, and the op runs in float:
//   Before (insert_qdq):
//     DQ -> Conv -> c -> Relu -> r -> Q -> DQ -> Conv2      Conv runs in float
//     DQ -> Mul -> m -> Q -> DQ -> Div(/ 6) -> hs            Div runs in float, requantized
//     DQ -> Conv -> y  (graph output)                        Conv runs in float
//   After:
//     DQ -> Conv -> Relu -> Q -> DQ -> r -> Conv2            QLinearConv; ORT drops the Relu
//     DQ -> Mul -> Q(s) -> DequantizeLinear(s / 6) -> hs     QLinearMul; the Div is gone
//     DQ -> Conv -> Q -> DQ -> y                             QLinearConv
// The rules, one row each in kRules (as ONNX Runtime's selector/action registry: which node,
// when, what), tried in order on every node of the original graph, in graph order:
//   - a quantized Div by a float constant (no zero, no Inf/NaN) becomes a Mul by its
//     reciprocal (QLinearMul exists, no QLinearDiv); tensor names stay, so statistics apply;
//   - a quantized Mul by a positive finite scalar constant c (hard-swish's "/ 6") is absorbed
//     into the scale of its input's codes: DequantizeLinear(x_q, s * c, z) is exactly
//     DequantizeLinear(x_q, s, z) * c, so the Mul, its requantization and its kernel all go;
//   - a quantized op of a fusing group (Conv, MatMul, Gemm, Add/Mul, Concat, unary) gets a pair
//     on its output with its input spec, unless its output's only reader is an unquantized
//     Relu/Clip: then the pair goes after the Relu/Clip, which ONNX Runtime drops since the Q
//     already clamps;
//   - an unquantized data-movement op (MaxPool, Reshape, Resize, ...) reading such a pair's
//     output gets a pair with the same scale and zero point: ONNX Runtime then runs it on the
//     8-bit codes.
// A pair placed on a tensor replaces the pairs insert_qdq gave its readers in the same format
// (their Q would requantize the placed DQ's output); a replaced pair's parameters come from
// the producer's spec, and a reader's int32 bias is quantized again from the prepared model's
// float bias at its new input scale.
//
// Preconditions: the model is insert_qdq's output of `prepared` for the same assignment,
// statistics and options; the assignment names every node of the original main graph (assign_layers does),
// so the nodes it does not name are insert_qdq's; the graph is topologically sorted.
// Postconditions: outputs keep their names; the RewriteSummary counts the pairs of the final
// graph (as if they had been placed once).
#include "rewrite/place_for_ort_fusion.h"

#include <cmath>
#include <functional>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/graph_view.h"
#include "ir/node_builder.h"
#include "ir/onnx_names.h"
#include "ir/op_traits.h"
#include "mixprec/error.h"
#include "mixprec/formats.h"
#include "mixprec/log.h"
#include "mixprec/tensor_proto.h"
#include "rewrite/graph_edit.h"
#include "rewrite/qdq_pairs.h"

namespace mixprec::rewrite {
namespace {

using ir::OrtFusionGroup;

// A pair insert_qdq put on `source` for the nodes that read `output`: QuantizeLinear ->
// DequantizeLinear (integer) or Cast -> Cast (bf16/fp16).
struct InsertedPair {
  size_t first = 0;  // Q / Cast to the low type
  std::string source;
  bool integer = false;
};

// One node the rules act on.
struct Site {
  size_t node = 0;  // in the graph insert_qdq wrote
  std::string name;
  const LayerConfig* config = nullptr;  // nullptr: left in float
  std::string op_type;                  // after a Div became a Mul
  std::vector<std::string> inputs;      // the tensors it reads, before insert_qdq's pairs
  std::optional<Tensor> reciprocal;     // Div -> Mul: 1 / input 1
  // A Mul absorbed into the scale of the codes of its non-constant input.
  std::optional<ResolvedSpec> absorbed;  // the scaled spec of those codes
  std::string dq;                        // the DQ output the Mul read
  std::string codes;                     // its codes when insert_qdq made the pair; else placed
  std::vector<std::pair<int, ResolvedSpec>> output_pairs;  // pairs after the node: output, spec
};

struct Reroute {
  size_t node = 0;
  int input = 0;
  std::string tensor;
};

// A node whose data input now reads a pair with another scale than the one its int32 bias was
// quantized at (a reader whose spec differs from its producer's in more than the format).
struct BiasRescale {
  size_t node = 0;
  float input_scale = 0;  // the new one
};

struct Plan {
  std::vector<Site> sites;
  std::vector<Reroute> reroutes;
  std::vector<BiasRescale> bias_rescales;
  std::unordered_set<std::string> inserted;  // names of insert_qdq's pair nodes
};

// What the rules have decided so far, while match() walks the graph.
struct MatchState {
  Plan plan;
  std::unordered_map<std::string, ResolvedSpec> placed;     // tensor -> the pair placed on it
  std::unordered_map<std::string, TensorQuantSpec> closers;  // Relu/Clip node -> spec of its Q
};

constexpr uint16_t group_bit(OrtFusionGroup group) { return static_cast<uint16_t>(1u << static_cast<unsigned>(group)); }

class Matcher;
// A condition may note in the site what its action needs.
using Condition = bool (Matcher::*)(const MatchState& state, Site& site) const;
using Action = void (Matcher::*)(MatchState& state, Site& site) const;

enum class Assigned : uint8_t { kQuantized, kFloat };  // integer input spec / left in float

// A rule applies to nodes in `assigned` state whose op is `op_type` or in one of `groups`.
struct PlacementRule {
  const char* name;
  Assigned assigned;
  std::string_view op_type;  // "" = by group
  uint16_t groups;
  Condition when;
  Action then;
  bool last;  // no later rule applies to the node once this one has
};

class Matcher {
 public:
  Matcher(const onnx::GraphProto& graph, const std::vector<NodeAssignment>& assignment, const ActivationSpecs& specs,
          const std::string& label)
      : graph_(graph), specs_(specs), label_(label) {
    for (const NodeAssignment& a : assignment) by_name_.emplace(a.node_name, &a);
    for (const onnx::ValueInfoProto& output : graph.output()) graph_outputs_.insert(output.name());
    for (int i = 0; i < graph.node_size(); ++i) {
      const onnx::NodeProto& node = graph.node(i);
      for (const std::string& output : node.output()) producers_.emplace(output, static_cast<size_t>(i));
      for (int s = 0; s < node.input_size(); ++s) readers_[node.input(s)].emplace_back(static_cast<size_t>(i), s);
    }
    find_inserted_pairs();
    for (int i = 0; i < graph.node_size(); ++i) {
      if (!is_original(static_cast<size_t>(i))) continue;
      const onnx::NodeProto& node = graph.node(i);
      for (int s = 0; s < node.input_size(); ++s) original_readers_[source_of(node.input(s))].push_back(static_cast<size_t>(i));
    }
  }

  // The sites of every rule, in graph order (each node's rules see the earlier nodes' pairs).
  Plan match() const;

  // --- Conditions and actions of the rules (kRules) ---------------------------------------------
  bool divides_by_constant(const MatchState& state, Site& site) const;
  void multiply_by_reciprocal(MatchState& state, Site& site) const;
  bool multiplies_by_positive_scalar(const MatchState& state, Site& site) const;
  void absorb_into_scale(MatchState& state, Site& site) const;
  bool has_no_output_spec(const MatchState& state, Site& site) const;
  void quantize_outputs(MatchState& state, Site& site) const;
  bool closes_a_group(const MatchState& state, Site& site) const;
  void quantize_after_clamp(MatchState& state, Site& site) const;
  bool reads_placed_codes(const MatchState& state, Site& site) const;
  void keep_codes(MatchState& state, Site& site) const;

 private:
  const onnx::NodeProto& node(size_t index) const { return graph_.node(static_cast<int>(index)); }
  const NodeAssignment* assignment_of(size_t index) const {
    const auto it = by_name_.find(node(index).name());
    return it == by_name_.end() ? nullptr : it->second;
  }
  bool is_original(size_t index) const { return assignment_of(index) != nullptr; }
  // The node's config when its inputs are in an integer format; nullptr otherwise.
  const LayerConfig* integer_config(size_t index) const {
    const NodeAssignment* a = assignment_of(index);
    if (a == nullptr || a->excluded || !a->config.input_tensors) return nullptr;
    return format_traits(a->config.input_tensors->format).is_qdq ? &a->config : nullptr;
  }
  std::optional<size_t> producer(const std::string& tensor) const {
    const auto it = producers_.find(tensor);
    return it == producers_.end() ? std::nullopt : std::optional<size_t>(it->second);
  }
  // The tensor `name` stands for before insert_qdq's pairs.
  const std::string& source_of(const std::string& name) const {
    const auto it = inserted_.find(name);
    return it == inserted_.end() ? name : it->second.source;
  }
  const InsertedPair* inserted_integer_pair(const std::string& output) const {
    const auto it = inserted_.find(output);
    return it != inserted_.end() && it->second.integer ? &it->second : nullptr;
  }
  float scalar(const std::string& initializer) const {
    return tensor_from_proto(*specs_.initializer(initializer), label_).to_floats().at(0);
  }

  void find_inserted_pairs();
  bool applies(const PlacementRule& rule, const Site& site) const;
  // Records a pair on output `output` of the site's node and shares it.
  void place(MatchState& state, Site& site, int output, const ResolvedSpec& spec) const;
  // `tensor` is now the output of a pair for `spec`: the readers of insert_qdq's pairs on it
  // in the same format read it instead.
  void share(MatchState& state, const std::string& tensor, const ResolvedSpec& spec) const;
  void read_placed_pair(MatchState& state, size_t reader, int input, const InsertedPair& pair,
                        const ResolvedSpec& spec) const;
  // The first input of `reader` insert_qdq paired (its data input, whose scale its int32 bias
  // was quantized at); -1 when none.
  int data_input(size_t reader) const;
  bool has_int32_bias(size_t reader) const;

  const onnx::GraphProto& graph_;
  const ActivationSpecs& specs_;
  const std::string& label_;
  std::unordered_map<std::string, const NodeAssignment*> by_name_;
  std::unordered_set<std::string> graph_outputs_;
  std::unordered_map<std::string, size_t> producers_;
  std::unordered_map<std::string, std::vector<std::pair<size_t, int>>> readers_;  // (node, input)
  std::unordered_map<std::string, InsertedPair> inserted_;           // by the pair's output
  std::unordered_map<std::string, std::vector<std::string>> integer_pairs_on_;  // source -> pair outputs
  std::unordered_map<std::string, std::vector<size_t>> original_readers_;  // one entry per input read
  std::unordered_set<std::string> inserted_nodes_;  // names of insert_qdq's pair nodes
};

constexpr uint16_t kOutputQuantizingGroups =
    group_bit(OrtFusionGroup::kConv) | group_bit(OrtFusionGroup::kMatMul) | group_bit(OrtFusionGroup::kGemm) |
    group_bit(OrtFusionGroup::kBinary) | group_bit(OrtFusionGroup::kVariadic) | group_bit(OrtFusionGroup::kUnary);

// clang-format off
constexpr PlacementRule kRules[] = {
  // name                    node state          op      groups
  {"divide by multiplying",  Assigned::kQuantized, "Div", 0,
   &Matcher::divides_by_constant,           &Matcher::multiply_by_reciprocal, false},
  {"absorb a scalar Mul",    Assigned::kQuantized, "Mul", 0,
   &Matcher::multiplies_by_positive_scalar, &Matcher::absorb_into_scale,      true},
  {"Q after the op",         Assigned::kQuantized, "",    kOutputQuantizingGroups,
   &Matcher::has_no_output_spec,            &Matcher::quantize_outputs,       true},
  {"Q after Relu/Clip",      Assigned::kFloat,     "",    group_bit(OrtFusionGroup::kQuantizeClamp),
   &Matcher::closes_a_group,                &Matcher::quantize_after_clamp,   true},
  {"codes through movement", Assigned::kFloat,     "",    group_bit(OrtFusionGroup::kDropQdq),
   &Matcher::reads_placed_codes,            &Matcher::keep_codes,             true},
};
// clang-format on

void Matcher::find_inserted_pairs() {
  // A pair reads a tensor no output_tensors pair of insert_qdq produced: those sit on a node's
  // output and are where the tensor is made, not where it is read.
  const auto on_a_read_tensor = [&](const std::string& tensor) {
    const std::optional<size_t> p = producer(tensor);
    if (!p) return true;
    const NodeAssignment* a = assignment_of(*p);
    return a == nullptr || a->excluded || !a->config.output_tensors ||
           a->config.output_tensors->format == FormatId::kFloat32;
  };
  for (int i = 0; i < graph_.node_size(); ++i) {
    const size_t last = static_cast<size_t>(i);
    const onnx::NodeProto& back = node(last);
    if (is_original(last) || !ir::is_default_domain(back.domain()) || back.input_size() < 1) continue;
    const std::optional<size_t> first = producer(back.input(0));
    if (!first || is_original(*first)) continue;
    const onnx::NodeProto& front = node(*first);
    if (front.input_size() < 1 || !ir::is_default_domain(front.domain())) continue;
    const bool integer = back.op_type() == "DequantizeLinear" && front.op_type() == "QuantizeLinear" &&
                         back.input_size() == 3 && front.input_size() == 3 && back.input(1) == front.input(1) &&
                         back.input(2) == front.input(2);
    const bool cast = back.op_type() == "Cast" && front.op_type() == "Cast" &&
                      ir::int_attribute(back, "to") == onnx::TensorProto::FLOAT;
    if ((integer || cast) && on_a_read_tensor(front.input(0))) {
      inserted_.emplace(back.output(0), InsertedPair{*first, front.input(0), integer});
      if (integer) integer_pairs_on_[front.input(0)].push_back(back.output(0));
      inserted_nodes_.insert(front.name());
      inserted_nodes_.insert(back.name());
    }
  }
}

bool Matcher::applies(const PlacementRule& rule, const Site& site) const {
  if ((rule.assigned == Assigned::kQuantized) != (site.config != nullptr)) return false;
  const onnx::NodeProto& n = node(site.node);
  if (!rule.op_type.empty()) return ir::is_default_domain(n.domain()) && site.op_type == rule.op_type;
  return (rule.groups & group_bit(ir::op_traits(n.domain(), site.op_type).ort_fusion)) != 0;
}

Plan Matcher::match() const {
  MatchState state;
  state.plan.inserted = inserted_nodes_;
  for (size_t i = 0; i < static_cast<size_t>(graph_.node_size()); ++i) {
    const NodeAssignment* a = assignment_of(i);
    if (a == nullptr) continue;  // inserted by insert_qdq
    // Assigned nodes that do not read integers take no rule: bf16/fp16 nodes, and nodes whose
    // assignment keeps their inputs float.
    if (!a->excluded && integer_config(i) == nullptr) continue;
    Site site{.node = i, .name = node(i).name(), .config = integer_config(i), .op_type = node(i).op_type()};
    for (const std::string& input : node(i).input()) site.inputs.push_back(source_of(input));
    bool acted = false;
    for (const PlacementRule& rule : kRules) {
      if (!applies(rule, site) || !(this->*rule.when)(state, site)) continue;
      (this->*rule.then)(state, site);
      acted = true;
      if (rule.last) break;
    }
    if (acted) state.plan.sites.push_back(std::move(site));
  }
  return std::move(state.plan);
}

// --- Div by a constant -> Mul by its reciprocal -------------------------------------------------

bool Matcher::divides_by_constant(const MatchState&, Site& site) const {
  if (site.inputs.size() != 2 || !specs_.is_float_initializer(site.inputs[1])) return false;
  const Tensor divisor = tensor_from_proto(*specs_.initializer(site.inputs[1]), label_);
  std::vector<float> reciprocal = divisor.to_floats();
  for (float& v : reciprocal) {
    if (v == 0 || !std::isfinite(v)) return false;
    v = 1.0f / v;
  }
  site.reciprocal = Tensor::from_floats(divisor.shape(), reciprocal);
  return true;
}

void Matcher::multiply_by_reciprocal(MatchState&, Site& site) const { site.op_type = "Mul"; }

// --- Mul by a positive scalar -> the scale of its input's codes ---------------------------------

bool Matcher::multiplies_by_positive_scalar(const MatchState& state, Site& site) const {
  const onnx::NodeProto& n = node(site.node);
  if (site.inputs.size() != 2 || n.output_size() != 1) return false;
  if (site.config->output_tensors) return false;
  const auto is_constant = [&](int k) { return (k == 1 && site.reciprocal) || specs_.is_float_initializer(site.inputs[k]); };
  const int constant = is_constant(1) ? 1 : is_constant(0) ? 0 : -1;
  if (constant < 0 || is_constant(1 - constant)) return false;
  const Tensor c = constant == 1 && site.reciprocal ? *site.reciprocal
                                                    : tensor_from_proto(*specs_.initializer(site.inputs[constant]), label_);
  if (c.numel() != 1) return false;
  const float factor = c.to_floats()[0];
  if (!(factor > 0.0f) || !std::isfinite(factor)) return false;
  const std::string& x = site.inputs[1 - constant];
  if (!specs_.is_float_tensor(x)) return false;
  // The codes it reads: a pair placed on x in its format, else the pair insert_qdq gave it.
  const auto placed = state.placed.find(x);
  const bool shared = placed != state.placed.end() && placed->second.format == site.config->input_tensors->format;
  const ResolvedSpec spec = shared ? placed->second : specs_.resolve(x, *site.config->input_tensors);
  if (!spec.is_qdq() || spec.params.scale.size() != 1) return false;
  const std::string& read = n.input(1 - constant);
  if (!shared && inserted_integer_pair(read) == nullptr) return false;
  site.dq = shared ? x : read;
  if (!shared) site.codes = node(inserted_integer_pair(read)->first).output(0);
  site.absorbed = spec;
  site.absorbed->params.scale[0] *= factor;
  return true;
}

void Matcher::absorb_into_scale(MatchState& state, Site& site) const {
  share(state, node(site.node).output(0), *site.absorbed);
}

// --- A Q after the op (or after the Relu/Clip that closes its group) ----------------------------

bool Matcher::has_no_output_spec(const MatchState&, Site& site) const {
  const std::optional<TensorQuantSpec>& spec = site.config->output_tensors;
  return !spec || spec->format == FormatId::kFloat32;
}

void Matcher::quantize_outputs(MatchState& state, Site& site) const {
  const onnx::NodeProto& n = node(site.node);
  const TensorQuantSpec& spec = *site.config->input_tensors;
  for (int o = 0; o < n.output_size(); ++o) {
    const std::string& output = n.output(o);
    if (output.empty() || !specs_.is_float_tensor(output)) continue;
    // The group ends at the only reader when that is a float Relu/Clip (its Q goes after it).
    const auto readers = original_readers_.find(output);
    if (!graph_outputs_.contains(output) && readers != original_readers_.end() && readers->second.size() == 1) {
      const size_t reader = readers->second.front();
      const onnx::NodeProto& r = node(reader);
      if (ir::op_traits(r).ort_fusion == OrtFusionGroup::kQuantizeClamp && integer_config(reader) == nullptr &&
          r.output_size() >= 1 && specs_.is_float_tensor(r.output(0))) {
        state.closers.emplace(r.name(), spec);
        continue;
      }
    }
    place(state, site, o, specs_.resolve(output, spec));
  }
}

bool Matcher::closes_a_group(const MatchState& state, Site& site) const {
  const onnx::NodeProto& n = node(site.node);
  return state.closers.contains(n.name()) && n.output_size() >= 1 && specs_.is_float_tensor(n.output(0));
}

void Matcher::quantize_after_clamp(MatchState& state, Site& site) const {
  const onnx::NodeProto& n = node(site.node);
  place(state, site, 0, specs_.resolve(n.output(0), state.closers.at(n.name())));
}

// --- Data movement on the codes -----------------------------------------------------------------

bool Matcher::reads_placed_codes(const MatchState& state, Site& site) const {
  const onnx::NodeProto& n = node(site.node);
  return n.output_size() >= 1 && n.input_size() >= 1 && specs_.is_float_tensor(n.output(0)) &&
         state.placed.contains(n.input(0));
}

void Matcher::keep_codes(MatchState& state, Site& site) const {
  place(state, site, 0, state.placed.at(node(site.node).input(0)));
}

// --- Placing ------------------------------------------------------------------------------------

void Matcher::place(MatchState& state, Site& site, int output, const ResolvedSpec& spec) const {
  site.output_pairs.emplace_back(output, spec);
  share(state, node(site.node).output(output), spec);
}

void Matcher::share(MatchState& state, const std::string& tensor, const ResolvedSpec& spec) const {
  state.placed.emplace(tensor, spec);
  const auto pairs = integer_pairs_on_.find(tensor);
  if (pairs == integer_pairs_on_.end()) return;
  for (const std::string& pair_output : pairs->second) {
    const auto readers = readers_.find(pair_output);
    if (readers == readers_.end()) continue;
    for (const auto& [reader, input] : readers->second) read_placed_pair(state, reader, input, inserted_.at(pair_output), spec);
  }
}

void Matcher::read_placed_pair(MatchState& state, size_t reader, int input, const InsertedPair& pair,
                               const ResolvedSpec& spec) const {
  const LayerConfig* config = integer_config(reader);
  if (config == nullptr || config->input_tensors->format != spec.format) return;
  state.plan.reroutes.push_back({reader, input, pair.source});
  const float old_scale = scalar(node(pair.first).input(1));
  if (input == data_input(reader) && has_int32_bias(reader) && spec.params.scale.at(0) != old_scale) {
    state.plan.bias_rescales.push_back({reader, spec.params.scale[0]});
  }
}

int Matcher::data_input(size_t reader) const {
  const onnx::NodeProto& n = node(reader);
  for (int s = 0; s < n.input_size(); ++s) {
    if (inserted_.contains(n.input(s))) return s;
  }
  return -1;
}

bool Matcher::has_int32_bias(size_t reader) const {
  const onnx::NodeProto& n = node(reader);
  const int bias = ir::op_traits(n).config_bias_input();
  if (bias < 0 || bias >= n.input_size()) return false;
  const std::optional<size_t> dq = producer(n.input(bias));
  if (!dq || is_original(*dq) || node(*dq).op_type() != "DequantizeLinear") return false;
  const onnx::TensorProto* codes = specs_.initializer(node(*dq).input(0));
  return codes != nullptr && codes->data_type() == onnx::TensorProto::INT32;
}

// --- apply ----------------------------------------------------------------------------------

class Applier {
 public:
  Applier(onnx::ModelProto& model, const onnx::ModelProto& prepared, const ActivationSpecs& specs,
          const std::string& label, RewriteSummary& summary)
      : model_(model), graph_(*model.mutable_graph()), prepared_(prepared), specs_(specs), label_(label),
        summary_(summary) {}

  // Returns the default-domain opset the new nodes need.
  int64_t apply(const Plan& plan) {
    // First what goes: the reads that move to placed pairs or disappear with their node, then
    // insert_qdq's pairs nobody reads any more, so that new names are chosen among what is left
    // (as if those pairs had never been written).
    for (const Reroute& r : plan.reroutes) graph_.mutable_node(static_cast<int>(r.node))->set_input(r.input, r.tensor);
    for (const BiasRescale& b : plan.bias_rescales) rescale_bias(graph_.node(static_cast<int>(b.node)), b);
    std::unordered_set<std::string> kept;  // codes an absorbed Mul will read
    for (const Site& site : plan.sites) {
      onnx::NodeProto& n = *graph_.mutable_node(static_cast<int>(site.node));
      if (site.absorbed) {
        n.clear_input();
        if (!site.codes.empty()) kept.insert(site.codes);
      } else if (site.reciprocal) {
        n.set_input(1, "");
      }
    }
    remove_unread(kept, [&](const onnx::NodeProto& n) { return plan.inserted.contains(n.name()); });
    remove_unused(graph_);

    PairWriter pairs(model_, label_, summary_);
    std::unordered_map<std::string, const Site*> sites;  // by node name: indices moved above
    for (const Site& site : plan.sites) sites.emplace(site.name, &site);
    google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
    nodes.Swap(graph_.mutable_node());
    for (int i = 0; i < nodes.size(); ++i) {
      const auto site = sites.find(nodes.Get(i).name());
      if (site == sites.end()) {
        *graph_.add_node() = std::move(*nodes.Mutable(i));
      } else {
        rewrite(std::move(*nodes.Mutable(i)), *site->second, pairs);
      }
    }
    pairs.flush_initializers();
    // A placed pair whose only reader was absorbed keeps its Q (the codes), not its DQ.
    remove_unread({}, [&](const onnx::NodeProto& n) { return absorbed_reads_.contains(n.output(0)); });
    remove_unused(graph_);
    return pairs.required_opset();
  }

 private:
  void rewrite(onnx::NodeProto n, const Site& site, PairWriter& pairs) {
    if (site.reciprocal) {
      const std::string name = pairs.names().fresh(site.inputs[1] + "_reciprocal");
      pairs.add_initializer(tensor_to_proto(*site.reciprocal, name));
      n.set_op_type("Mul");
      if (!site.absorbed) {
        const ResolvedSpec spec = specs_.resolve_values(site.reciprocal->to_floats(), *site.config->input_tensors);
        const std::string out = pairs.pair_output_name(name, spec);
        std::vector<onnx::NodeProto> before;
        pairs.emit_pair(name, spec, out, before);
        for (auto& b : before) *graph_.add_node() = std::move(b);
        n.set_input(1, out);
      }
    }
    if (site.absorbed) {
      const std::string codes = site.codes.empty() ? placed_codes_.at(site.dq) : site.codes;
      const auto [scale, zero_point] = pairs.add_params(n.output(0), site.absorbed->format, site.absorbed->params);
      *graph_.add_node() = ir::make_node({.op_type = "DequantizeLinear",
                                          .name = pairs.names().fresh(n.name() + "_absorbed_DequantizeLinear"),
                                          .inputs = qdq_inputs(codes, scale, zero_point),
                                          .outputs = {n.output(0)}});
      placed_codes_.emplace(n.output(0), codes);
      absorbed_reads_.insert(site.dq);
      return;
    }
    std::vector<onnx::NodeProto> after;
    for (const auto& [o, spec] : site.output_pairs) {
      const std::string output = n.output(o);
      const std::string pre = pairs.names().fresh(output + "_prequant");
      n.set_output(o, pre);
      placed_codes_.emplace(output, pairs.emit_pair(pre, spec, output, after));
    }
    *graph_.add_node() = std::move(n);
    for (auto& a : after) *graph_.add_node() = std::move(a);
  }

  // Quantizes the float bias of `n` again, at the new input scale x the weight scales.
  void rescale_bias(const onnx::NodeProto& n, const BiasRescale& rescale) {
    const ir::OpTraits& traits = ir::op_traits(n);
    const onnx::NodeProto& bias_dq = producer_node(graph_, n.input(traits.config_bias_input()));
    const onnx::NodeProto& weight_dq = producer_node(graph_, n.input(traits.config_weight_input()));
    onnx::TensorProto& codes = mutable_initializer(bias_dq.input(0));
    onnx::TensorProto& scale = mutable_initializer(bias_dq.input(1));
    std::vector<float> scales = tensor_from_proto(*specs_.initializer(weight_dq.input(1)), label_).to_floats();
    for (float& s : scales) s = rescale.input_scale * s;
    const Tensor bias = float_bias(n, traits.config_bias_input());
    if (const auto element = saturating_bias_element(bias, scales)) {
      log_warning(label_ + ": node '" + n.name() + "': bias element " + std::to_string(*element) +
                  " saturates int32 at the input scale placed for ONNX Runtime's fusion; it reads back clipped");
    }
    codes = tensor_to_proto(quantize_bias(bias, scales), codes.name());
    const Shape scale_shape(scale.dims().begin(), scale.dims().end());
    scale = tensor_to_proto(Tensor::from_floats(scale_shape, scales), scale.name());
  }

  // The float bias input `index` of `n` read in the model insert_qdq quantized.
  Tensor float_bias(const onnx::NodeProto& n, int index) const {
    for (const onnx::NodeProto& original : prepared_.graph().node()) {
      if (original.name() != n.name()) continue;
      for (const onnx::TensorProto& init : prepared_.graph().initializer()) {
        if (init.name() == original.input(index)) return tensor_from_proto(init, label_);
      }
    }
    throw Error(ErrorKind::kInternal, label_, "no float bias of '" + n.name() + "' in the prepared model");
  }

  static const onnx::NodeProto& producer_node(const onnx::GraphProto& graph, const std::string& tensor) {
    for (const onnx::NodeProto& n : graph.node()) {
      for (const std::string& output : n.output()) {
        if (output == tensor) return n;
      }
    }
    throw Error(ErrorKind::kInternal, "", "no producer of '" + tensor + "'");
  }

  onnx::TensorProto& mutable_initializer(const std::string& name) {
    for (onnx::TensorProto& t : *graph_.mutable_initializer()) {
      if (t.name() == name) return t;
    }
    throw Error(ErrorKind::kInternal, label_, "no initializer '" + name + "'");
  }

  // Removes the Q/DQ nodes `removable` accepts while nothing reads them (nor `kept`): a Q goes
  // once its DQ has. Each DQ removed was a pair of the summary.
  void remove_unread(const std::unordered_set<std::string>& kept,
                     const std::function<bool(const onnx::NodeProto&)>& removable) {
    for (bool removed = true; removed;) {
      removed = false;
      std::unordered_set<std::string> read = kept;
      for (const auto& output : graph_.output()) read.insert(output.name());
      for (const auto& n : graph_.node()) read.insert(n.input().begin(), n.input().end());
      auto* nodes = graph_.mutable_node();
      for (int i = nodes->size() - 1; i >= 0; --i) {
        const onnx::NodeProto& n = nodes->Get(i);
        const bool q = n.op_type() == "QuantizeLinear", dq = n.op_type() == "DequantizeLinear";
        if (!(q || dq) || !removable(n) || read.contains(n.output(0))) continue;
        summary_.qdq_pairs -= dq;
        nodes->DeleteSubrange(i, 1);
        removed = true;
      }
    }
  }

  onnx::ModelProto& model_;
  onnx::GraphProto& graph_;
  const onnx::ModelProto& prepared_;
  const ActivationSpecs& specs_;
  const std::string& label_;
  RewriteSummary& summary_;
  std::unordered_map<std::string, std::string> placed_codes_;  // placed pair's output -> its codes
  std::unordered_set<std::string> absorbed_reads_;         // DQ outputs an absorbed Mul read
};

}  // namespace

int64_t place_for_ort_fusion(onnx::ModelProto& model, const onnx::ModelProto& prepared,
                             const std::vector<NodeAssignment>& assignment, const CalibrationStats& stats,
                             const QuantizeOptions& options, const std::string& label, RewriteSummary& summary) {
  const ActivationSpecs specs(model.graph(), stats, options, label);
  const Plan plan = Matcher(model.graph(), assignment, specs, label).match();
  return Applier(model, prepared, specs, label, summary).apply(plan);
}

}  // namespace mixprec::rewrite
