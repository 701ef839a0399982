// correct_bias: empirical bias correction (Nagel et al. 2019, section 4.2) of Conv,
// ConvTranspose and Gemm.
//
//   Before:  prepared:  x → Conv(W, b) → y            quantized = rewrite(prepared):  ... → Conv(DQ(Wq), b') → y'
//   After:   prepared:  x → Conv(W, b~ + d) → y,
//            b~ the bias as the quantized model computes with it (b' dequantized). d includes
//            b's own rounding error b - b~, so with a coarse bias grid (XINT8's int8 bias) b + d
//            would count it twice, once in d and once when the rewrite rounds again; b~ + d is
//            what the grid should hold. (On the PP-OCR models in XINT8 the change moves results
//            by up to 1.3 dB either way: the int8 grid's rounding decides there; BENCHMARKS.md.)
//            d[k] = mean over samples, batch and spatial axes of (y - y')[:, k, ...], where y is
//            the float model's output (BiasCorrectionOptions::reference when given: after
//            AdaRound, the model before it, whose weights are the ones to aim at) and y' the
//            quantized model's with every upstream layer already corrected; limited to
//            |d[k]| <= max(|b[k]|, std(y[:, k])).
//
// That is mode kModel. Layers are corrected level by level in data-flow order (level = the
// number of corrected layers on the longest path above a layer; layers of one level do not
// feed each other), each level's pass running only the part of the model above it: one
// rewrite and one pass over the samples per level, so a layer's shift is measured on the
// quantized upstream as it will be, and what an upstream layer's correction already fixed is
// not corrected twice. The shift includes what the quantized activation ops between layers
// (Mul, Add, pooling, ...) add, which only the next biases can take back. The float outputs'
// channel means are measured once. The limit damps a correction that is large against both the
// bias and the channel's own spread (a sign the mean was measured on too little data); limited
// channels are counted. A layer without bias gets one; a shared bias initializer is left
// alone, with a note.
//
// The store (BiasCorrectionOptions::store, kModel): a layer's applied shift (after damping) is
// kept under a key of the data, the samples, the layer, and the digests (algorithms::
// tensor_digests) of its output in the level's quantized model (its quantized input and
// weights, its bias, everything upstream with the corrections so far) and in the float model.
// A level whose layers are all known adds their shifts without a pass, and the float
// reference's pass runs only when some layer has to be measured; a search step that lifts a
// few layers measures again only the layers below them.
//
// Mode kLayer measures each layer alone: a float twin of the layer (its float W and b as
// `prepared` holds them) reads the tensor the quantized layer's input Q reads, and d[k] is the
// mean of (twin - quantized layer). One rewrite and one pass for every layer; the shifts of the
// quantized activation ops between layers are left alone. After AdaRound the twin keeps the
// learned weights: they already aim at the float model's output, which a twin with the float
// weights would pull back toward its own (det 320x320 XINT8, CLE + Mul tails + AdaRound + this
// mode: 25.31 dB with the learned twin, 23.61 with the float one).
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>

#include "algorithms/layer_sites.h"
#include "common/digest.h"
#include "common/text.h"
#include "common/timing.h"
#include "ir/graph_view.h"
#include "ir/node_builder.h"
#include "mixprec/algorithms.h"
#include "mixprec/tensor_proto.h"
#include "rewrite/quant_ops.h"

namespace mixprec {
namespace {

struct Site {
  std::string node;    // name, in both models
  std::string output;  // the layer's output tensor in the prepared model
  int64_t channels = 0;
  size_t level = 0;
};

// Per-channel sums over samples, batch and spatial positions.
struct ChannelMoments {
  std::vector<double> sum;
  std::vector<double> squares;
  double count = 0;  // elements per channel

  void add(const Tensor& t, int64_t channels) {
    const auto& shape = t.shape();
    if (t.dtype() != DType::kFloat32 || shape.size() < 2 || shape[1] != channels) return;
    if (sum.empty()) {
      sum.assign(static_cast<size_t>(channels), 0.0);
      squares.assign(static_cast<size_t>(channels), 0.0);
    }
    int64_t inner = 1;
    for (size_t d = 2; d < shape.size(); ++d) inner *= shape[d];
    const auto v = t.as<float>();
    for (int64_t n = 0; n < shape[0]; ++n) {
      for (int64_t c = 0; c < channels; ++c) {
        const size_t base = static_cast<size_t>((n * channels + c) * inner);
        double s = 0;
        double q = 0;
        for (int64_t i = 0; i < inner; ++i) {
          const double x = v[base + static_cast<size_t>(i)];
          s += x;
          q += x * x;
        }
        sum[static_cast<size_t>(c)] += s;
        squares[static_cast<size_t>(c)] += q;
      }
    }
    count += static_cast<double>(shape[0] * inner);
  }
  double mean(size_t c) const { return count > 0 ? sum[c] / count : 0.0; }
  double spread(size_t c) const {
    if (count == 0) return 0;
    const double m = mean(c);
    return std::sqrt(std::max(0.0, squares[c] / count - m * m));
  }
};

// The tensor a (possibly Q/DQ-wrapped) input reads before quantization.
std::string unquantized(const ir::GraphView& view, const std::string& name) {
  const auto dq = view.producer(name);
  if (!dq || view.node(*dq).op_type() != "DequantizeLinear") return name;
  const auto q = view.producer(view.node(*dq).input(0));
  if (!q || view.node(*q).op_type() != "QuantizeLinear") return name;
  return view.node(*q).input(0);
}

// The bias of each of `names`' nodes as `quantized` computes with it: a float initializer as
// is, constant codes through their dequantize node (rewrite::dequantize_constant); absent when
// the node has no bias or it is computed otherwise. The shift measured on `quantized` is
// relative to this bias, not to the float one: with a coarse bias grid (XINT8's int8 bias, one
// power-of-two step for the whole tensor) the float bias plus the shift would count the bias's
// own rounding error twice, once in the shift and once when the rewrite rounds again.
std::map<std::string, std::vector<float>> stored_biases(const onnx::ModelProto& quantized, const std::set<std::string>& names,
                                                        const std::string& label) {
  const ir::GraphView view(quantized.graph(), label);
  std::map<std::string, std::vector<float>> out;
  for (size_t i = 0; i < view.node_count(); ++i) {
    const onnx::NodeProto& node = view.node(i);
    if (!names.contains(node.name()) || node.input_size() < 3 || node.input(2).empty()) continue;
    const std::string& bias = node.input(2);
    if (const onnx::TensorProto* plain = view.resolve_initializer(bias); plain && plain->data_type() == onnx::TensorProto::FLOAT) {
      out[node.name()] = tensor_from_proto(*plain, label).to_floats();
      continue;
    }
    const auto dq = view.producer(bias);
    if (!dq || !rewrite::is_one_of(view.node(*dq), rewrite::kDequantizeOps)) continue;
    if (std::optional<Tensor> values = rewrite::dequantize_constant(view, view.node(*dq), label)) {
      out[node.name()] = values->to_floats();
    }
  }
  return out;
}

int64_t output_channels(const onnx::NodeProto& node, const onnx::TensorProto& weight) {
  if (node.op_type() == "Conv") return weight.dims(0);
  if (node.op_type() == "ConvTranspose") return weight.dims(1) * ir::int_attribute(node, "group").value_or(1);
  const bool trans_b = ir::int_attribute(node, "transB").value_or(0) != 0;
  return trans_b ? weight.dims(0) : weight.dims(1);
}

constexpr const char* kCorrectedOps[] = {"Conv", "ConvTranspose", "Gemm"};

// The layers to correct: Conv/ConvTranspose/Gemm of `prepared` with float initializer weights (and a private
// bias, if any) that `quantized` quantizes (an input read through DequantizeLinear), with
// their levels.
std::vector<Site> find_sites(const onnx::ModelProto& prepared, const onnx::ModelProto& quantized,
                             const std::string& label, std::vector<std::string>& notes) {
  const algorithms::SiteRule rule{
      .op_types = kCorrectedOps, .integer_weight = false, .accept = [&](const ir::GraphView& view, const onnx::NodeProto& node) {
        const bool has_bias = node.input_size() >= 3 && !node.input(2).empty();
        if (has_bias && (!view.initializer(node.input(2)) || view.consumers(node.input(2)).size() != 1)) {
          notes.push_back("bias_correction: " + node.name() + " skipped (its bias is shared or computed)");
          return false;
        }
        return true;
      }};
  const ir::GraphView view(prepared.graph(), label);
  std::vector<Site> sites;
  for (const algorithms::LayerSite& s : algorithms::layer_sites(prepared, quantized, rule, label)) {
    const onnx::NodeProto& node = view.node(s.index);
    sites.push_back({.node = s.node, .output = s.output, .channels = output_channels(node, *view.initializer(node.input(1))),
                     .level = s.level});
  }
  return sites;
}

// Sets the bias of node `name` in `model` to `stored` (stored_biases': the bias the shift was
// measured with; the model's own bias when absent) plus `shift`, each channel damped to the
// reference's limit when `reference` is given; creates the bias when absent. Returns what was
// added (empty when the bias cannot be written).
std::vector<float> add_to_bias(onnx::ModelProto& model, const std::string& name, const std::vector<double>& shift,
                               const std::vector<float>* stored, const ChannelMoments* reference, const std::string& label,
                               BiasCorrectionSummary& summary) {
  onnx::GraphProto& graph = *model.mutable_graph();
  onnx::NodeProto* node = nullptr;
  for (auto& n : *graph.mutable_node()) {
    if (n.name() == name) node = &n;
  }
  if (!node) return {};
  const size_t channels = shift.size();
  onnx::TensorProto* proto = nullptr;
  if (node->input_size() >= 3 && !node->input(2).empty()) {
    proto = algorithms::find_initializer(model, node->input(2));
    if (!proto) return {};
  }
  const std::vector<float> own = proto ? tensor_from_proto(*proto, label).to_floats() : std::vector<float>(channels, 0.0f);
  if (own.size() != channels) return {};
  std::vector<float> bias = stored != nullptr && stored->size() == channels ? *stored : own;
  std::vector<float> added(channels);
  for (size_t c = 0; c < channels; ++c) {
    double applied = shift[c];
    if (reference) {
      const double limit = std::max(std::fabs(static_cast<double>(own[c])), reference->spread(c));
      applied = std::clamp(shift[c], -limit, limit);
      if (applied != shift[c]) ++summary.damped_channels;
    }
    added[c] = static_cast<float>(applied);
    bias[c] += added[c];  // as a stored shift is added back, so a reused shift gives the same bias
  }
  if (proto) {
    algorithms::replace_values(*proto, bias);
  } else {
    const std::string bias_name = ir::NameAllocator(model).fresh(name + "_corrected_bias");
    *graph.add_initializer() = tensor_to_proto(Tensor::from_floats({static_cast<int64_t>(channels)}, bias), bias_name);
    while (node->input_size() < 2) node->add_input("");
    node->add_input(bias_name);
  }
  return added;
}

// Mode kLayer: every site against its float twin in one pass of `quantized`.
void correct_layer_shifts(onnx::ModelProto& prepared, const onnx::ModelProto& quantized, const std::vector<Site>& sites,
                          const SampleSource& source, const std::vector<size_t>& indices,
                          const BiasCorrectionOptions& options, const std::string& label, BiasCorrectionSummary& summary,
                          double& shift_total, size_t& shift_channels) {
  onnx::ModelProto probe = quantized;
  std::vector<std::string> outputs;  // quantized output, twin output, per site
  {
    const ir::GraphView float_view(prepared.graph(), label);
    std::map<std::string, const onnx::NodeProto*> float_nodes;
    for (size_t i = 0; i < float_view.node_count(); ++i) float_nodes.emplace(float_view.node(i).name(), &float_view.node(i));
    const ir::GraphView view(quantized.graph(), label);
    std::map<std::string, const onnx::NodeProto*> nodes;
    for (size_t i = 0; i < view.node_count(); ++i) nodes.emplace(view.node(i).name(), &view.node(i));
    ir::NameAllocator names(quantized);
    for (const Site& site : sites) {
      const onnx::NodeProto& node = *nodes.at(site.node);
      const onnx::NodeProto& original = *float_nodes.at(site.node);
      onnx::NodeProto twin = node;
      twin.set_name(names.fresh(node.name() + "_float_twin"));
      twin.clear_input();
      twin.add_input(unquantized(view, node.input(0)));
      for (int i = 1; i < original.input_size() && i < 3; ++i) {
        const std::string copy = names.fresh(original.input(i) + "_float");
        auto* init = probe.mutable_graph()->add_initializer();
        *init = *float_view.initializer(original.input(i));
        init->set_name(copy);
        twin.add_input(copy);
      }
      twin.clear_output();
      twin.add_output(names.fresh(node.name() + "_float_twin_output"));
      outputs.push_back(node.output(0));
      outputs.push_back(twin.output(0));
      *probe.mutable_graph()->add_node() = std::move(twin);
    }
  }
  const Session session = Session::from_model(probe, label, options.session, outputs);
  probe.Clear();
  std::vector<ChannelMoments> got_q(sites.size());
  std::vector<ChannelMoments> got_float(sites.size());
  for (size_t index : indices) {
    const NamedTensors got = session.run(source.sample(index), outputs);
    for (size_t k = 0; k < sites.size(); ++k) {
      got_q[k].add(got.at(2 * k).second, sites[k].channels);
      got_float[k].add(got.at(2 * k + 1).second, sites[k].channels);
    }
  }
  std::set<std::string> names;
  for (const Site& site : sites) names.insert(site.node);
  const std::map<std::string, std::vector<float>> stored = stored_biases(quantized, names, label);
  for (size_t k = 0; k < sites.size(); ++k) {
    if (got_q[k].count == 0 || got_float[k].count == 0) continue;
    std::vector<double> shift(static_cast<size_t>(sites[k].channels));
    for (size_t c = 0; c < shift.size(); ++c) {
      shift[c] = got_float[k].mean(c) - got_q[k].mean(c);
      shift_total += std::fabs(shift[c]);
      ++shift_channels;
    }
    const auto it = stored.find(sites[k].node);
    add_to_bias(prepared, sites[k].node, shift, it == stored.end() ? nullptr : &it->second, &got_float[k], label, summary);
    ++summary.layers;
  }
}

}  // namespace

BiasCorrectionSummary correct_bias(onnx::ModelProto& prepared, const RewriteFn& rewrite, const SampleSource& source,
                                   const BiasCorrectionOptions& options, const std::string& label) {
  const auto start = Clock::now();
  BiasCorrectionSummary summary;
  summary.mode = options.mode;
  std::vector<size_t> indices = options.samples;
  if (indices.empty()) {
    for (size_t i = 0; i < source.size(); ++i) indices.push_back(i);
  }
  summary.samples = indices.size();
  const onnx::ModelProto first = rewrite(prepared);
  const std::vector<Site> sites = find_sites(prepared, first, label, summary.notes);
  if (sites.empty()) {
    summary.notes.push_back("bias_correction: no quantized " + text::join_each(kCorrectedOps, std::identity{}, "/") + " with float weights: nothing corrected");
    summary.seconds = seconds_since(start);
    return summary;
  }
  double shift_total = 0;
  size_t shift_channels = 0;
  if (options.mode == BiasCorrectionMode::kLayer) {
    correct_layer_shifts(prepared, first, sites, source, indices, options, label, summary, shift_total, shift_channels);
    summary.levels = 1;
    summary.passes = 1;
    summary.mean_abs_shift = shift_channels ? shift_total / static_cast<double>(shift_channels) : 0;
    summary.seconds = seconds_since(start);
    return summary;
  }
  // The float model's channel means, before any correction: measured first without a store;
  // with one, when a layer is first measured, on a copy of the model as it came.
  std::vector<ChannelMoments> reference;
  const std::optional<onnx::ModelProto> uncorrected =
      options.store && !options.reference ? std::optional<onnx::ModelProto>(prepared) : std::nullopt;
  const onnx::ModelProto& target = options.reference ? *options.reference : uncorrected ? *uncorrected : prepared;
  const auto measure_reference = [&] {
    reference.assign(sites.size(), ChannelMoments{});
    std::vector<std::string> outputs;
    for (const Site& s : sites) outputs.push_back(s.output);
    const Session session = Session::from_model(target, label, options.session, outputs);
    for (size_t index : indices) {
      const NamedTensors got = session.run(source.sample(index), outputs);
      for (size_t k = 0; k < sites.size(); ++k) reference[k].add(got.at(k).second, sites[k].channels);
    }
    ++summary.passes;
  };
  if (!options.store) measure_reference();
  const std::map<std::string, uint64_t> float_digests =
      options.store ? algorithms::tensor_digests(target, label) : std::map<std::string, uint64_t>{};
  const std::string samples_text = text::join_each(indices, [](size_t i) { return std::to_string(i); });
  size_t levels = 0;
  for (const Site& s : sites) levels = std::max(levels, s.level + 1);
  for (size_t level = 0; level < levels; ++level) {
    std::vector<size_t> members;
    for (size_t k = 0; k < sites.size(); ++k) {
      if (sites[k].level == level) members.push_back(k);
    }
    if (members.empty()) continue;
    // The quantized model with every upstream correction so far; the layers' outputs keep
    // their names through the rewrite (its Q/DQ go on inputs).
    onnx::ModelProto quantized = rewrite(prepared);
    std::set<std::string> tensors;
    for (const auto& n : quantized.graph().node()) tensors.insert(n.output().begin(), n.output().end());
    for (size_t& k : members) {
      if (!tensors.count(sites[k].output)) {
        summary.notes.push_back("bias_correction: " + sites[k].node + " skipped (the rewrite renamed its output)");
        k = sites.size();
      }
    }
    std::erase(members, sites.size());
    if (members.empty()) continue;
    std::set<std::string> names;
    for (size_t k : members) names.insert(sites[k].node);
    const std::map<std::string, std::vector<float>> stored = stored_biases(quantized, names, label);
    const auto stored_of = [&](size_t k) -> const std::vector<float>* {
      const auto it = stored.find(sites[k].node);
      return it == stored.end() ? nullptr : &it->second;
    };
    // Layers whose shift the store knows get it now; the others are measured in one pass.
    std::map<size_t, std::string> keys;
    if (options.store) {
      const std::map<std::string, uint64_t> digests = algorithms::tensor_digests(quantized, label);
      for (size_t k : members) {
        Fnv1a key;
        for (const std::string& part : {std::string("bias_correction-model-2"), options.data, samples_text, sites[k].node,
                                        std::to_string(digests.at(sites[k].output)),
                                        std::to_string(float_digests.at(sites[k].output))}) {
          key.add(part);
        }
        keys[k] = key.hex();
      }
      std::erase_if(members, [&](size_t k) {
        const std::optional<LearnedLayer> known = options.store->find(keys[k]);
        if (!known || known->weights.size() != static_cast<size_t>(sites[k].channels)) return false;
        const std::vector<double> shift(known->weights.begin(), known->weights.end());
        if (add_to_bias(prepared, sites[k].node, shift, stored_of(k), nullptr, label, summary).empty()) return false;
        summary.damped_channels += known->changed;
        ++summary.layers;
        ++summary.reused;
        return true;
      });
      if (members.empty()) continue;
    }
    if (reference.empty()) measure_reference();
    std::vector<std::string> outputs;
    for (size_t k : members) outputs.push_back(sites[k].output);
    const Session session =
        Session::from_model(algorithms::upstream_of(std::move(quantized), outputs, label), label, options.session, outputs);
    std::vector<ChannelMoments> measured(members.size());
    for (size_t index : indices) {
      const NamedTensors got = session.run(source.sample(index), outputs);
      for (size_t m = 0; m < members.size(); ++m) measured[m].add(got.at(m).second, sites[members[m]].channels);
    }
    ++summary.passes;
    for (size_t m = 0; m < members.size(); ++m) {
      const Site& site = sites[members[m]];
      const ChannelMoments& want = reference[members[m]];
      if (measured[m].count == 0 || want.count == 0) continue;
      std::vector<double> shift(static_cast<size_t>(site.channels));
      for (size_t c = 0; c < shift.size(); ++c) {
        shift[c] = want.mean(c) - measured[m].mean(c);
        shift_total += std::fabs(shift[c]);
        ++shift_channels;
      }
      const size_t damped_before = summary.damped_channels;
      std::vector<float> added = add_to_bias(prepared, site.node, shift, stored_of(members[m]), &want, label, summary);
      ++summary.layers;
      if (options.store && !added.empty()) {
        options.store->store(keys.at(members[m]),
                             {.weights = std::move(added), .changed = summary.damped_channels - damped_before});
      }
    }
  }
  summary.levels = levels;
  summary.mean_abs_shift = shift_channels ? shift_total / static_cast<double>(shift_channels) : 0;
  summary.seconds = seconds_since(start);
  return summary;
}

std::span<const char* const> bias_corrected_op_types() { return kCorrectedOps; }

}  // namespace mixprec
