// scale_search: the activations' scales chosen by the model's output error, one power of two at
// a time (coordinate descent), instead of by each tensor's own quantization error.
//
//   Before:  quantized:  x → Q(s_x) → DQ(s_x) → Conv → y → Q(s_y) → DQ(s_y) → ...   s from the
//            calibration method (PowerOfTwo_MinMSE: the 2^k with the least error on the tensor)
//   After:   shifts n_t per activation t: the rewrite's range of t times 2^n_t (QuantizeOptions::
//            activation_range_factors), so s_t' = s_t 2^n_t; power-of-two scales stay powers of two
//
// Why: a method that minimises each tensor's own squared error weighs an outlier it clips like
// any other value, but the model does not: on the PP-OCR detector at 640x640 the activations
// alone (weights float) give 20.3 dB with PowerOfTwo_MinMSE, 21.4 dB with float-scale MinMSE and
// 23.3 dB with float-scale Percentile (99.999), the one that clips least. Which tensors want more
// range and which more resolution only the output shows.
//
// The search: the quantized model is copied once with every main-graph activation's scale
// initializers (its QuantizeLinear's and its DequantizeLinears') turned into graph inputs, and
// one session runs it; a trial feeds the scales and runs the samples. The loss is the output
// error power over the float model's output power, summed over the float outputs (1 / SQNR per
// output: outputs of any magnitude weigh alike), over every sample, the float outputs computed
// once. Tensors go in graph order (the order the rewrite wrote their pairs); each tries one step
// finer (2^-1, more clipping; only with ScaleSearchSettings::finer, the default), and if that
// does not lower the loss one step coarser, and keeps stepping in a direction that lowered it,
// at most max_shift steps from the start. A move is kept only when it lowers the loss and raises
// it on neither half of the samples (even and odd ones): with one sample set the search fits the
// pictures it sees (det 320x320, 8 pictures: output SQNR 2.2 -> 11.6 dB there, the evaluation
// pictures 18.6 -> 18.2 dB). Held-out samples (ScaleSearchOptions::validation) then judge the
// shifts found, all or none (det 640x640: the held-out SQNR would fall 5.8 -> 0.9 dB). `sweeps`
// passes over the tensors. Exact and deterministic: the same samples give the same shifts.
// An int32 bias at input scale x weight scale (Int32Bias) moves with its input's scale: the
// rewrite requantizes the float bias there, so the search feeds the bias the rewrite would
// write (FollowingBias); the rewrite with the shifts is then measured on the same samples, and
// shifts it does not gain from are dropped.
//
// Not searched (a note counts them): pairs inside If/Loop/Scan bodies, per-channel or blocked
// activation scales, scales that are not float initializers.
#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "algorithms/output_error.h"
#include "common/text.h"
#include "common/timing.h"
#include "ir/graph_view.h"
#include "ir/op_traits.h"
#include "mixprec/algorithms.h"
#include "mixprec/formats.h"
#include "mixprec/tensor_proto.h"

namespace mixprec {
namespace {

// One activation: its tensor (what Q reads) and the scale initializers its pairs use.
struct ScaledTensor {
  std::string tensor;
  std::vector<std::string> scales;  // initializer names, in the order first met
};

// A one-element float initializer of the main graph, or nullptr.
const onnx::TensorProto* float_scalar(const ir::GraphView& view, const std::string& name) {
  const onnx::TensorProto* t = view.initializer(name);
  if (t == nullptr || t->data_type() != onnx::TensorProto::FLOAT) return nullptr;
  int64_t count = 1;
  for (int64_t d : t->dims()) count *= d;
  return count == 1 ? t : nullptr;
}

// The main graph's activation pairs whose scale can be fed: Q on a tensor that is not an
// initializer, a one-element float scale initializer on the Q and on every DQ reading it (a Q
// whose output is read by anything else, a body included, is skipped and counted).
std::vector<ScaledTensor> scaled_tensors(const ir::GraphView& view, size_t& skipped) {
  std::vector<ScaledTensor> out;
  std::map<std::string, size_t> index;
  for (size_t n : view.topological_order()) {
    const onnx::NodeProto& node = view.node(n);
    if (node.op_type() != "QuantizeLinear" || !node.domain().empty() || node.input_size() < 2) continue;
    if (view.is_initializer(node.input(0))) continue;  // a weight or a bias
    std::vector<std::string> scales{node.input(1)};
    bool feedable = float_scalar(view, node.input(1)) != nullptr;
    for (size_t reader : view.consumers(node.output(0))) {
      const onnx::NodeProto& dq = view.node(reader);
      if (dq.op_type() != "DequantizeLinear" || dq.input_size() < 2 || dq.input(0) != node.output(0) ||
          float_scalar(view, dq.input(1)) == nullptr) {
        feedable = false;
        continue;
      }
      if (std::ranges::find(scales, dq.input(1)) == scales.end()) scales.push_back(dq.input(1));
    }
    if (!feedable) {
      ++skipped;
      continue;
    }
    const auto [it, added] = index.emplace(node.input(0), out.size());
    if (added) out.push_back({.tensor = node.input(0), .scales = {}});
    for (const auto& s : scales) {
      auto& list = out[it->second].scales;
      if (std::ranges::find(list, s) == list.end()) list.push_back(s);
    }
  }
  return out;
}

// An int32 bias whose scale is its node's input scale x weight scale: when the input's scale
// moves by 2^n, the rewrite requantizes the float bias at the moved scale, and a bias that is
// off by one accumulator step is coherent over a whole channel (cls: one such rounding in the
// stem turned 25.3 dB output SQNR into 15.7 dB). The search feeds it as the rewrite would give it.
struct FollowingBias {
  size_t node = 0;          // in the main graph
  int input = 0;            // the bias input of that node
  size_t dequantize = 0;    // the bias's DequantizeLinear
  size_t tensor = 0;        // the searched activation the node reads (index into tensors)
  Tensor bias;              // the float bias (the reference model's)
  std::vector<float> scales;  // the bias scales as rewritten (one, or one per element)
  std::string fed;          // the graph input that replaces it
};

// The value the rewrite gives `b` at its scales times 2^n, as DequantizeLinear computes it.
Tensor requantized_bias(const FollowingBias& b, int n) {
  std::vector<float> scales = b.scales;
  for (float& s : scales) s = std::ldexp(s, n);
  if (saturating_bias_element(b.bias, scales)) return b.bias;  // the rewrite leaves it float
  const Tensor codes = quantize_bias(b.bias, scales);
  std::vector<float> values(codes.as<int32_t>().begin(), codes.as<int32_t>().end());
  for (size_t i = 0; i < values.size(); ++i) values[i] *= scales[scales.size() == 1 ? 0 : i];
  return Tensor::from_floats(b.bias.shape(), values);
}

// The main graph's weighted nodes whose bias is an int32 DequantizeLinear (read by that node
// alone) and whose data input is a searched activation's DequantizeLinear, with the float bias
// found by node name in `reference`, and only where requantizing it at the rewritten scales
// gives the stored codes back (so the search starts from the rewrite's model exactly), with no
// zero point other than 0.
std::vector<FollowingBias> following_biases(const ir::GraphView& view, const ir::GraphView& reference,
                                            const std::map<std::string, size_t>& searched, const std::string& label) {
  std::map<std::string, size_t> reference_nodes;
  for (size_t n = 0; n < reference.node_count(); ++n) {
    if (!reference.node(n).name().empty()) reference_nodes.emplace(reference.node(n).name(), n);
  }
  // The searched tensor behind a DequantizeLinear's output: DQ <- Q <- tensor.
  const auto searched_tensor = [&](const std::string& name) -> std::optional<size_t> {
    const auto dq = view.producer(name);
    if (!dq || view.node(*dq).op_type() != "DequantizeLinear") return std::nullopt;
    const auto q = view.producer(view.node(*dq).input(0));
    if (!q || view.node(*q).op_type() != "QuantizeLinear") return std::nullopt;
    const auto it = searched.find(view.node(*q).input(0));
    return it == searched.end() ? std::nullopt : std::optional<size_t>(it->second);
  };
  std::vector<FollowingBias> out;
  for (size_t n = 0; n < view.node_count(); ++n) {
    const onnx::NodeProto& node = view.node(n);
    const int bias = ir::op_traits(node).config_bias_input();
    if (bias < 1 || bias >= node.input_size() || node.input(bias).empty()) continue;
    const auto dq = view.producer(node.input(bias));
    if (!dq || view.consumers(node.input(bias)).size() != 1) continue;
    const onnx::NodeProto& d = view.node(*dq);
    if (d.op_type() != "DequantizeLinear" || d.input_size() < 2) continue;
    // The fed value is codes x scale: a zero point other than 0 (or not a constant) is not that.
    if (d.input_size() > 2 && !d.input(2).empty()) {
      const onnx::TensorProto* zero_point = view.initializer(d.input(2));
      if (zero_point == nullptr || std::ranges::any_of(tensor_from_proto(*zero_point, label).to_floats(),
                                                       [](float z) { return z != 0; })) {
        continue;
      }
    }
    const onnx::TensorProto* codes = view.initializer(d.input(0));
    const onnx::TensorProto* scale = view.initializer(d.input(1));
    if (codes == nullptr || codes->data_type() != onnx::TensorProto::INT32 || scale == nullptr ||
        scale->data_type() != onnx::TensorProto::FLOAT) {
      continue;
    }
    const auto tensor = searched_tensor(node.input(0));
    const auto twin = reference_nodes.find(node.name());
    if (!tensor || twin == reference_nodes.end()) continue;
    const onnx::NodeProto& float_node = reference.node(twin->second);
    if (float_node.input_size() <= bias) continue;
    const onnx::TensorProto* float_bias = reference.initializer(float_node.input(bias));
    if (float_bias == nullptr || float_bias->data_type() != onnx::TensorProto::FLOAT) continue;
    FollowingBias b{.node = n, .input = bias, .dequantize = *dq, .tensor = *tensor,
                    .bias = tensor_from_proto(*float_bias, label), .scales = tensor_from_proto(*scale, label).to_floats(), .fed = {}};
    const Tensor stored = tensor_from_proto(*codes, label);
    if (b.bias.shape().size() != 1 || stored.shape() != b.bias.shape() ||
        (b.scales.size() != 1 && b.scales.size() != stored.to_floats().size()) ||
        std::ranges::any_of(b.scales, [](float s) { return !(s > 0) || !std::isfinite(s); }) ||
        saturating_bias_element(b.bias, b.scales) || !(quantize_bias(b.bias, b.scales) == stored)) {
      continue;
    }
    out.push_back(std::move(b));
  }
  return out;
}

}  // namespace

ScaleSearchSummary search_activation_scales(const onnx::ModelProto& quantized, const onnx::ModelProto& reference,
                                            const SampleSource& source, const ScaleSearchSettings& settings,
                                            const ScaleSearchOptions& options, const std::string& label) {
  const auto t0 = Clock::now();
  ScaleSearchSummary summary;
  size_t skipped = 0;
  size_t nested = 0;
  std::vector<ScaledTensor> tensors;
  std::map<std::string, float> initial;  // the scale initializers' values
  std::vector<FollowingBias> biases;
  {
    const ir::GraphView view(quantized.graph(), label);
    tensors = scaled_tensors(view, skipped);
    std::map<std::string, size_t> index;
    for (size_t t = 0; t < tensors.size(); ++t) index.emplace(tensors[t].tensor, t);
    biases = following_biases(view, ir::GraphView(reference.graph(), label), index, label);
    for (const ir::NodeRef& ref : view.nested_nodes()) nested += ref.graph != &view && ref.node().op_type() == "QuantizeLinear";
    for (const ScaledTensor& t : tensors) {
      for (const std::string& scale : t.scales) initial[scale] = tensor_from_proto(*view.initializer(scale), label).as<float>()[0];
    }
  }
  if (skipped > 0) {
    summary.notes.push_back("scale_search: " + std::to_string(skipped) +
                            " activation pairs without one float scale initializer are left as calibrated");
  }
  if (nested > 0) {
    summary.notes.push_back("scale_search: " + std::to_string(nested) +
                            " activation pairs inside If/Loop/Scan bodies are left as calibrated");
  }
  if (tensors.empty()) {
    summary.notes.push_back("scale_search: no activation has an integer Q/DQ pair in the main graph: nothing searched");
    summary.seconds = seconds_since(t0);
    return summary;
  }

  // The search model: each (tensor, scale initializer) a graph input of its own, so that two
  // tensors sharing one initializer still move apart.
  onnx::ModelProto searched = quantized;
  onnx::GraphProto& graph = *searched.mutable_graph();
  struct Feed {
    std::string input;
    float value = 0;
    size_t tensor = 0;
  };
  std::vector<Feed> feeds;
  std::map<std::pair<std::string, std::string>, std::string> renamed;  // (tensor, scale) -> input
  for (size_t t = 0; t < tensors.size(); ++t) {
    for (const auto& scale : tensors[t].scales) {
      const std::string input = "mixprec_scale_search." + std::to_string(t) + "." + scale;
      renamed[{tensors[t].tensor, scale}] = input;
      feeds.push_back({.input = input, .value = initial.at(scale), .tensor = t});
      onnx::ValueInfoProto* info = graph.add_input();
      info->set_name(input);
      info->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
      info->mutable_type()->mutable_tensor_type()->mutable_shape();
    }
  }
  std::map<std::string, std::string> q_tensor;  // Q output -> the tensor it quantizes
  for (auto& node : *graph.mutable_node()) {
    if (node.op_type() == "QuantizeLinear" && node.domain().empty() && node.input_size() >= 2) {
      const auto it = renamed.find({node.input(0), node.input(1)});
      if (it == renamed.end()) continue;
      q_tensor[node.output(0)] = node.input(0);
      node.set_input(1, it->second);
    }
  }
  for (auto& node : *graph.mutable_node()) {
    if (node.op_type() != "DequantizeLinear" || node.input_size() < 2) continue;
    const auto from = q_tensor.find(node.input(0));
    if (from == q_tensor.end()) continue;
    node.set_input(1, renamed.at({from->second, node.input(1)}));
  }
  std::set<std::string> fed;  // initializers the feeds replace
  for (const auto& [key, input] : renamed) fed.insert(key.second);
  std::set<int> dropped_nodes;
  for (size_t i = 0; i < biases.size(); ++i) {
    FollowingBias& b = biases[i];
    b.fed = "mixprec_scale_search.bias." + std::to_string(i) + "." + graph.node(static_cast<int>(b.node)).input(b.input);
    onnx::ValueInfoProto* info = graph.add_input();
    info->set_name(b.fed);
    info->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
    info->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(b.bias.shape()[0]);
    graph.mutable_node(static_cast<int>(b.node))->set_input(b.input, b.fed);
    const onnx::NodeProto& dq = graph.node(static_cast<int>(b.dequantize));
    for (const std::string& operand : dq.input()) fed.insert(operand);
    dropped_nodes.insert(static_cast<int>(b.dequantize));
  }
  for (auto it = dropped_nodes.rbegin(); it != dropped_nodes.rend(); ++it) graph.mutable_node()->DeleteSubrange(*it, 1);
  std::set<std::string> still_read;  // by any node, bodies included
  for (const ir::NodeRef& ref : ir::GraphView(graph, label).nested_nodes()) {
    still_read.insert(ref.node().input().begin(), ref.node().input().end());
  }
  for (int i = graph.initializer_size() - 1; i >= 0; --i) {
    const std::string& name = graph.initializer(i).name();
    if (fed.count(name) && !still_read.count(name)) graph.mutable_initializer()->DeleteSubrange(i, 1);
  }

  // The samples and the float model's outputs, once: those searched on, and those held out.
  std::vector<size_t> indices = options.samples;
  if (indices.empty()) {
    for (size_t i = 0; i < source.size(); ++i) indices.push_back(i);
  }
  const Session floats = Session::from_model(reference, label, options.session);
  const algorithms::OutputReference searched_on(floats, source, indices);
  const algorithms::OutputReference held_out(floats, source, options.validation);
  summary.samples = indices.size();
  summary.validation_samples = options.validation.size();

  std::vector<int> shift(tensors.size(), 0);
  std::map<std::pair<size_t, int>, Tensor> bias_values;  // (bias, shift) -> the value fed
  // The loss of `session`'s outputs on `set` (the scales fed when `with_scales`).
  const auto loss_of = [&](const Session& session, const algorithms::OutputReference& set, bool with_scales) {
    if (!with_scales) return set.loss(session);
    return set.loss(session, [&](NamedTensors& feed) {
      for (const Feed& f : feeds) {
        const float value = std::ldexp(f.value, shift[f.tensor]);
        feed.emplace_back(f.input, Tensor::from_floats({}, std::span<const float>(&value, 1)));
      }
      for (size_t i = 0; i < biases.size(); ++i) {
        const int n = shift[biases[i].tensor];
        auto value = bias_values.find({i, n});
        if (value == bias_values.end()) value = bias_values.emplace(std::pair{i, n}, requantized_bias(biases[i], n)).first;
        feed.emplace_back(biases[i].fed, value->second);
      }
    });
  };
  const Session session = Session::from_model(searched, label, options.session);
  const auto loss = [&] {
    ++summary.trials;
    return loss_of(session, searched_on, true);
  };

  algorithms::OutputLoss best = loss();
  summary.loss_before = best.total;
  const int64_t sweeps = std::max<int64_t>(1, settings.sweeps);
  for (int64_t sweep = 0; sweep < sweeps; ++sweep) {
    bool moved = false;
    for (size_t t = 0; t < tensors.size(); ++t) {
      for (int direction : {-1, +1}) {
        if (direction < 0 && !settings.finer) continue;
        bool improved = false;
        while (std::abs(shift[t] + direction) <= settings.max_shift) {
          shift[t] += direction;
          const algorithms::OutputLoss trial = loss();
          if (trial.better_than(best)) {
            best = trial;
            improved = true;
            continue;
          }
          shift[t] -= direction;
          break;
        }
        if (improved) {
          moved = true;
          break;
        }
      }
      if (options.progress) options.progress(sweep * tensors.size() + t + 1, sweeps * tensors.size());
    }
    if (!moved) break;
  }
  summary.loss_after = best.total;
  summary.tensors = tensors.size();
  summary.biases = biases.size();
  // The held-out samples judge the shifts: when they do not gain, none is kept.
  if (held_out.samples() > 0 && std::ranges::any_of(shift, [](int n) { return n != 0; })) {
    summary.validation_after = loss_of(session, held_out, true).total;
    const std::vector<int> found = std::exchange(shift, std::vector<int>(tensors.size(), 0));
    summary.validation_before = loss_of(session, held_out, true).total;
    if (*summary.validation_after < *summary.validation_before) {
      shift = found;
    } else {
      summary.rejected = true;
      summary.loss_after = summary.loss_before;
      summary.notes.push_back("scale_search: the shifts lowered the searched samples' output error but not the held-out "
                              "samples': none kept");
    }
  }
  for (size_t t = 0; t < tensors.size(); ++t) {
    if (shift[t] != 0) summary.shifts[tensors[t].tensor] = shift[t];
  }
  if (options.rebuild) {
    const onnx::ModelProto rebuilt = options.rebuild(summary.shifts);
    summary.loss_rebuilt = loss_of(Session::from_model(rebuilt, label, options.session), searched_on, false).total;
    const auto db = [](double l) { return text::fixed(-10 * std::log10(std::max(l, 1e-30))) + " dB"; };
    if (!summary.shifts.empty() && !(*summary.loss_rebuilt < summary.loss_before)) {
      summary.notes.push_back("scale_search: the rewrite with the shifts gives " + db(*summary.loss_rebuilt) +
                              " output SQNR against " + db(summary.loss_before) + " without: none kept");
      summary.shifts.clear();
      summary.rejected = true;
      summary.loss_after = summary.loss_before;
    } else if (std::abs(*summary.loss_rebuilt - summary.loss_after) > 0.01 * summary.loss_after) {
      // Something in the rewrite follows an activation's scale that the search did not (a float
      // bias ONNX Runtime quantizes itself, a weight scale raised to fit a bias): the rewrite,
      // not the search, is what the model gets.
      summary.notes.push_back("scale_search: the rewrite with the shifts gives " + db(*summary.loss_rebuilt) +
                              " output SQNR where the search measured " + db(summary.loss_after));
    }
  }
  summary.seconds = seconds_since(t0);
  return summary;
}

}  // namespace mixprec
