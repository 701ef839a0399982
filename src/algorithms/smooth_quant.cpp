// smooth_quant: SmoothQuant (Xiao et al. 2023, "SmoothQuant: Accurate and Efficient Post-Training
// Quantization for Large Language Models").
//
//   Before:  x → P → a → MatMul(a, W1) → y1          (every reader of a a MatMul/Gemm with a
//                      → MatMul(a, W2) → y2           constant weight: one group)
//   After, for each input channel j of the group, with
//              a_j = max |a[..., j]| over the calibration samples (one float pass),
//              w_j = max over the group's weights of max |W row j|,
//              s_j = a_j^alpha / w_j^(1 - alpha)        (1 when a_j or w_j is 0)
//            the weights' rows j are multiplied by s_j and a's channel j divided by it:
//   folded:  P a LayerNormalization over the last axis (its scale and bias / s), a Mul by a
//            per-channel constant (the constant / s), or such a Mul followed by an Add of a
//            per-channel constant (an exporter's LayerNorm affine: both / s), when a feeds only
//            the group and the constants only P:
//              x → P' → a' → MatMul(a', W1') → y1 ...
//   else:    a float Mul by 1/s in front of the group (it stays float: the activation is then
//              quantized once, after smoothing, where its channels are flat):
//              x → P → a → Mul(a, 1/s) → a' → MatMul(a', W1') → y1 ...
//   y is unchanged up to float rounding; a' has channel ranges a_j^(1-alpha) w_j^(1-alpha)
//   instead of a_j, so a per-tensor activation scale wastes fewer codes on outlier channels, at
//   the price of wider weight rows (which per-channel weight scales absorb).
//
// Groups: a main-graph activation (not an initializer) read by MatMul (the left operand) or
// Gemm (transA = 0) nodes only, each with a float rank-2 initializer weight read by that node
// alone, whose K (the reduction length) agrees with the channels measured; a tensor also read by
// other ops (a residual) is smoothed through a Mul. If/Loop bodies are not smoothed (a note).
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "common/timing.h"
#include "algorithms/layer_sites.h"
#include "ir/graph_view.h"
#include "ir/op_traits.h"
#include "mixprec/algorithms.h"
#include "mixprec/error.h"
#include "mixprec/tensor_proto.h"

namespace mixprec {
namespace {

// Bounds on s_j: a near-dead channel (a_j tiny) must not send a weight row to 0 or infinity.
constexpr double kMinSmoothScale = 1e-5;
constexpr double kMaxSmoothScale = 1e5;

struct Member {
  size_t node = 0;
  std::string weight;
  bool trans_b = false;  // Gemm B [N, K]
  int64_t rows = 0;      // K
  int64_t columns = 0;   // N
};

struct Group {
  std::string activation;
  std::vector<Member> members;
};

std::optional<Member> as_member(const ir::GraphView& view, size_t index, const std::string& activation) {
  const onnx::NodeProto& node = view.node(index);
  if (!node.domain().empty() || node.input_size() < 2 || node.input(0) != activation || node.input(1) == activation) {
    return std::nullopt;
  }
  if (node.op_type() != "MatMul" && node.op_type() != "Gemm") return std::nullopt;
  if (node.op_type() == "Gemm" && ir::int_attribute(node, "transA").value_or(0) != 0) return std::nullopt;
  Member m{.node = index, .weight = node.input(1)};
  if (!algorithms::private_float(view, m.weight)) return std::nullopt;
  const onnx::TensorProto& w = *view.initializer(m.weight);
  if (w.dims_size() != 2 || w.dims(0) <= 0 || w.dims(1) <= 0) return std::nullopt;
  m.trans_b = node.op_type() == "Gemm" && ir::int_attribute(node, "transB").value_or(0) != 0;
  m.rows = m.trans_b ? w.dims(1) : w.dims(0);
  m.columns = m.trans_b ? w.dims(0) : w.dims(1);
  return m;
}

// The groups of the main graph, in order of their first reader.
std::vector<Group> find_groups(const ir::GraphView& view) {
  std::vector<Group> groups;
  std::set<std::string> seen;
  for (size_t i : view.topological_order()) {
    const onnx::NodeProto& node = view.node(i);
    if ((node.op_type() != "MatMul" && node.op_type() != "Gemm") || node.input_size() < 2) continue;
    const std::string& activation = node.input(0);
    if (activation.empty() || view.is_initializer(activation) || !seen.insert(activation).second) continue;
    Group group{.activation = activation};
    bool all = true;
    for (size_t reader : view.consumers(activation)) {
      const onnx::NodeProto& r = view.node(reader);
      if (r.op_type() != "MatMul" && r.op_type() != "Gemm") continue;  // another reader: a Mul, not a fold
      const std::optional<Member> member = as_member(view, reader, activation);
      if (!member) {
        all = false;  // a reader with an activation or shared weight: no common s for the group
        break;
      }
      group.members.push_back(*member);
    }
    if (!all || group.members.empty()) continue;
    const int64_t rows = group.members.front().rows;
    if (std::ranges::all_of(group.members, [&](const Member& m) { return m.rows == rows; })) groups.push_back(std::move(group));
  }
  return groups;
}

// A per-channel constant of `channels` elements broadcast along the last axis ([C], [1, .., C]).
bool per_channel_constant(const ir::GraphView& view, const std::string& name, int64_t channels) {
  if (!algorithms::private_float(view, name)) return false;
  const onnx::TensorProto& t = *view.initializer(name);
  if (t.dims_size() == 0 || t.dims(t.dims_size() - 1) != channels) return false;
  for (int i = 0; i + 1 < t.dims_size(); ++i) {
    if (t.dims(i) != 1) return false;
  }
  return true;
}

// The constant of a Mul/Add `node` by a per-channel constant (the other input computed).
std::optional<std::string> affine_constant(const ir::GraphView& view, const onnx::NodeProto& node, int64_t channels) {
  if (!node.domain().empty() || node.input_size() != 2 || node.output_size() != 1) return std::nullopt;
  for (int k = 0; k < 2; ++k) {
    if (per_channel_constant(view, node.input(k), channels) && !view.is_initializer(node.input(1 - k))) return node.input(k);
  }
  return std::nullopt;
}

// The initializers that take 1/s when the group's activation is folded into its producer;
// empty when it cannot be.
std::vector<std::string> fold_targets(const ir::GraphView& view, const Group& group, int64_t channels) {
  const std::string& a = group.activation;
  if (view.is_graph_output(a) || view.consumers(a).size() != group.members.size()) return {};
  const std::optional<size_t> producer = view.producer(a);
  if (!producer) return {};
  const onnx::NodeProto& p = view.node(*producer);
  if (!p.domain().empty()) return {};
  if (p.op_type() == "LayerNormalization") {
    if (p.output(0) != a || ir::int_attribute(p, "axis").value_or(-1) != -1) return {};
    for (int k = 1; k < p.output_size(); ++k) {
      if (!p.output(k).empty() && !view.consumers(p.output(k)).empty()) return {};
    }
    std::vector<std::string> targets;
    for (int k = 1; k < std::min(p.input_size(), 3); ++k) {
      if (p.input(k).empty()) continue;
      if (!per_channel_constant(view, p.input(k), channels)) return {};
      targets.push_back(p.input(k));
    }
    return targets;
  }
  if (p.op_type() == "Mul") {
    const auto g = affine_constant(view, p, channels);
    return g ? std::vector<std::string>{*g} : std::vector<std::string>{};
  }
  if (p.op_type() == "Add") {
    const auto b = affine_constant(view, p, channels);
    if (!b) return {};
    const std::string& upstream = p.input(0) == *b ? p.input(1) : p.input(0);
    const std::optional<size_t> mul = view.producer(upstream);
    if (!mul || view.is_graph_output(upstream) || view.consumers(upstream).size() != 1) return {};
    const onnx::NodeProto& m = view.node(*mul);
    if (m.op_type() != "Mul") return {};
    const auto g = affine_constant(view, m, channels);
    return g ? std::vector<std::string>{*g, *b} : std::vector<std::string>{};
  }
  return {};
}

std::string unique_name(const std::set<std::string>& taken, const std::string& base) {
  std::string name = base;
  for (int k = 1; taken.count(name); ++k) name = base + "_" + std::to_string(k);
  return name;
}

class MaximaSink : public TapSink {
 public:
  explicit MaximaSink(const std::vector<std::string>& tensors) : tensors_(tensors), maxima_(tensors.size()) {}
  void observe(size_t tap, const TensorView& tensor) override {
    if (tensor.dtype != DType::kFloat32 || tensor.shape.empty()) return;
    const auto channels = static_cast<size_t>(tensor.shape.back());
    std::vector<float>& m = maxima_[tap];
    if (channels == 0) return;
    if (m.empty()) m.assign(channels, 0.0f);
    if (m.size() != channels) {
      throw_bad_input(tensor_label(tap), "its last dim changed between samples (" + std::to_string(m.size()) + ", then " +
                                             std::to_string(channels) + "): SmoothQuant needs one channel count");
    }
    const std::span<const float> values = tensor.floats();
    for (size_t i = 0; i < values.size(); ++i) {
      const float v = std::fabs(values[i]);
      if (std::isfinite(v)) m[i % channels] = std::max(m[i % channels], v);
    }
  }
  ChannelMaxima take() {
    ChannelMaxima out;
    for (size_t i = 0; i < tensors_.size(); ++i) {
      if (!maxima_[i].empty()) out[tensors_[i]] = std::move(maxima_[i]);
    }
    return out;
  }

 private:
  std::string tensor_label(size_t tap) const { return "tensor " + tensors_[tap]; }
  const std::vector<std::string>& tensors_;
  std::vector<std::vector<float>> maxima_;
};

}  // namespace

std::vector<std::string> smooth_quant_activations(const onnx::ModelProto& prepared, const std::string& label) {
  const ir::GraphView view(prepared.graph(), label);
  std::vector<std::string> names;
  for (const Group& g : find_groups(view)) names.push_back(g.activation);
  return names;
}

ChannelMaxima measure_channel_maxima(const onnx::ModelProto& model, const std::vector<std::string>& tensors,
                                     const SampleSource& source, const std::vector<size_t>& samples,
                                     const SessionOptions& session, const std::string& label) {
  if (tensors.empty()) return {};
  MaximaSink sink(tensors);
  Session tapped = Session::tapped(model, label, tensors, sink, session);
  const auto run = [&](size_t index) { tapped.run_taps(source.sample(index)); };
  if (samples.empty()) {
    for (size_t i = 0; i < source.size(); ++i) run(i);
  } else {
    for (size_t i : samples) run(i);
  }
  return sink.take();
}

SmoothQuantSummary smooth_quant(onnx::ModelProto& model, const SmoothQuantSettings& settings, const ChannelMaxima& maxima,
                                const std::string& label) {
  const auto start = Clock::now();
  SmoothQuantSummary summary{.alpha = settings.alpha};
  if (!(settings.alpha >= 0 && settings.alpha <= 1)) {
    throw_bad_input(label, "SmoothQuant alpha must be in [0, 1], not " + std::to_string(settings.alpha));
  }
  struct Plan {
    Group group;
    std::vector<double> scales;
    std::vector<std::string> fold;  // empty: a Mul
    std::string producer;           // its op type ("graph input" when none)
  };
  std::vector<Plan> plans;
  size_t body_candidates = 0;
  {
    const ir::GraphView view(model.graph(), label);
    for (Group& group : find_groups(view)) {
      const auto measured = maxima.find(group.activation);
      const int64_t channels = group.members.front().rows;
      if (measured == maxima.end() || static_cast<int64_t>(measured->second.size()) != channels) {
        summary.notes.push_back("smoothquant: " + group.activation + " was not measured with " + std::to_string(channels) +
                                " channels on its last axis: left alone");
        continue;
      }
      std::vector<double> w(static_cast<size_t>(channels), 0.0);
      std::map<std::string, std::vector<float>> weights;
      for (const Member& m : group.members) {
        const std::vector<float> values = tensor_from_proto(*view.initializer(m.weight), label).to_floats();
        for (int64_t j = 0; j < m.rows; ++j) {
          for (int64_t n = 0; n < m.columns; ++n) {
            const float v = values[static_cast<size_t>(m.trans_b ? n * m.rows + j : j * m.columns + n)];
            w[static_cast<size_t>(j)] = std::max(w[static_cast<size_t>(j)], static_cast<double>(std::fabs(v)));
          }
        }
      }
      std::vector<double> s(static_cast<size_t>(channels), 1.0);
      for (size_t j = 0; j < s.size(); ++j) {
        const double a = measured->second[j];
        if (a > 0 && w[j] > 0) {
          s[j] = std::clamp(std::pow(a, settings.alpha) / std::pow(w[j], 1.0 - settings.alpha), kMinSmoothScale,
                            kMaxSmoothScale);
        }
      }
      std::vector<std::string> fold = fold_targets(view, group, channels);
      const std::optional<size_t> producer = view.producer(group.activation);
      std::string producer_type = producer ? view.node(*producer).op_type() : "graph input";
      if (view.consumers(group.activation).size() > group.members.size()) producer_type += " also read by other ops";
      plans.push_back({.group = std::move(group), .scales = std::move(s), .fold = std::move(fold), .producer = producer_type});
    }
    for (size_t i = 0; i < view.node_count(); ++i) {
      for (const auto& body : view.subgraphs(i)) {
        for (const auto& n : body->graph().node()) body_candidates += n.op_type() == "MatMul" || n.op_type() == "Gemm";
      }
    }
  }
  if (body_candidates > 0) {
    summary.notes.push_back("smoothquant: " + std::to_string(body_candidates) +
                            " MatMul/Gemm nodes in If/Loop/Scan bodies are not smoothed");
  }
  if (plans.empty()) {
    summary.notes.push_back("smoothquant: no MatMul/Gemm with a constant weight reads a computed activation: nothing smoothed");
    summary.seconds = seconds_since(start);
    return summary;
  }

  onnx::GraphProto& graph = *model.mutable_graph();
  std::map<std::string, onnx::TensorProto*> protos;
  for (auto& init : *graph.mutable_initializer()) protos.emplace(init.name(), &init);
  const auto rescale = [&](const std::string& name, const auto& factor) {  // factor(flat index) multiplies
    onnx::TensorProto& proto = *protos.at(name);
    std::vector<float> values = tensor_from_proto(proto, label).to_floats();
    for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(values[i] * factor(i));
    const std::vector<int64_t> dims(proto.dims().begin(), proto.dims().end());
    proto = tensor_to_proto(Tensor::from_floats(dims, values), name);
  };
  std::set<std::string> taken;
  for (const auto& n : graph.node()) {
    taken.insert(n.name());
    for (const auto& o : n.output()) taken.insert(o);
  }
  for (const auto& init : graph.initializer()) taken.insert(init.name());
  for (const auto& input : graph.input()) taken.insert(input.name());
  // Muls to insert, keyed by the index of the node they go before.
  std::multimap<size_t, onnx::NodeProto> inserted;
  std::map<std::string, size_t> unfolded;  // producer op type -> groups
  for (const Plan& plan : plans) {
    const std::vector<double>& s = plan.scales;
    const size_t channels = s.size();
    for (const Member& m : plan.group.members) {
      rescale(m.weight, [&](size_t i) { return s[m.trans_b ? i % channels : i / static_cast<size_t>(m.columns)]; });
      ++summary.layers;
    }
    const auto [lo, hi] = std::ranges::minmax_element(s);
    summary.max_scale_ratio = std::max(summary.max_scale_ratio, *hi / *lo);
    ++summary.groups;
    if (!plan.fold.empty()) {
      for (const std::string& name : plan.fold) rescale(name, [&](size_t i) { return 1.0 / s[i % channels]; });
      ++summary.folded;
      continue;
    }
    ++unfolded[plan.producer];
    const std::string& a = plan.group.activation;
    const std::string mul_name = unique_name(taken, a + "/smooth_quant");
    const std::string scale_name = unique_name(taken, a + "/smooth_quant_scale");
    const std::string output = unique_name(taken, a + "/smoothed");
    for (const std::string& n : {mul_name, scale_name, output}) taken.insert(n);
    std::vector<float> inverse(channels);
    for (size_t j = 0; j < channels; ++j) inverse[j] = static_cast<float>(1.0 / s[j]);
    *graph.add_initializer() = tensor_to_proto(Tensor::from_floats({static_cast<int64_t>(channels)}, inverse), scale_name);
    onnx::NodeProto mul;
    mul.set_op_type("Mul");
    mul.set_name(mul_name);
    mul.add_input(a);
    mul.add_input(scale_name);
    mul.add_output(output);
    mul.set_doc_string(std::string(ir::kSmoothQuantScaleDoc));
    size_t first = static_cast<size_t>(graph.node_size());
    for (const Member& m : plan.group.members) {
      graph.mutable_node(static_cast<int>(m.node))->set_input(0, output);
      first = std::min(first, m.node);
    }
    inserted.emplace(first, std::move(mul));
    ++summary.muls;
  }
  if (!unfolded.empty()) {
    std::string producers;
    for (const auto& [type, count] : unfolded) producers += (producers.empty() ? "" : ", ") + type + " x" + std::to_string(count);
    summary.notes.push_back("smoothquant: " + std::to_string(summary.muls) + " activations smoothed through a float Mul " +
                            "(no per-channel affine producer reading only them to fold 1/s into): " + producers);
  }
  if (!inserted.empty()) {
    google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
    nodes.Swap(graph.mutable_node());
    for (int i = 0; i < nodes.size(); ++i) {
      const auto [from, to] = inserted.equal_range(static_cast<size_t>(i));
      for (auto it = from; it != to; ++it) *graph.add_node() = std::move(it->second);
      *graph.add_node() = std::move(nodes[i]);
    }
  }
  // Statistics carry the model's fingerprint, which reads this mark (as CLE's).
  auto* mark = model.add_metadata_props();
  mark->set_key("mixprec.smooth_quant");
  mark->set_value("alpha=" + std::to_string(settings.alpha) + " groups=" + std::to_string(summary.groups));
  summary.seconds = seconds_since(start);
  return summary;
}

}  // namespace mixprec
