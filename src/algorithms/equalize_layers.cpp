// equalize_layers: cross-layer equalization (CLE, Nagel et al. 2019, "Data-Free Quantization
// through Weight Equalization and Bias Correction").
//
//   Before:  x → Head(W1, b1) → h → [Relu | LeakyRelu | Pad | ReduceMean]* → Tail(W2, b2) → y
//   After:   the same graph; for each head output channel k, with
//              r1[k] = max |W1 row k| (and |b1[k]| with CLEScaleAppendBias),
//              r2[k] = max |W2 input-column k|,
//              s[k]  = r2[k] / sqrt(r1[k] r2[k])          (1 when either range is 0)
//            W1 row k and b1[k] are multiplied by s[k], W2 column k divided by it, so both
//            ranges become sqrt(r1 r2). The ops between are positively homogeneous per
//            channel (f(s x) = s f(x) for s > 0), so y is unchanged up to float rounding.
//   With ReplaceClip6Relu, every Clip(0, 6) first becomes Relu (not exact: values above 6 pass
//   through; it is what the option asks), so CLE also crosses ReLU6.
//
// Mul tails (CLEMulTails, mixprec's own), after the pairs:
//   Before:  x → Head(W, b) → h → Mul(h, m) → y       (m a constant: one value, or one per channel)
//   After:   x → Head(W / t, b / t) → h / t → Mul(h / t, m t) → y, for each head output channel k
//              r[k] = sqrt(max |W row k| (and |b[k]| with CLEScaleAppendBias) x sum |W row k|),
//              t[k] = r[k] / max_j r[j], then m[k] t[k] rounded to the power-of-two int8 grid
//              its largest value sets, and t[k] taken back from the rounded value,
//            so y is unchanged up to float rounding and m t has one value per channel.
//   A per-tensor weight scale then serves every row: exporters put a scalar or per-channel
//   Mul after a Conv (PP-LCNet's learnable affine, BatchNorm as Mul + Add), which no pair
//   crosses, and its Conv's rows can be far apart (det's pointwise Convs: 27x). r[k] is the
//   geometric mean of what the row's weight scale sees (its largest |w|) and of what bounds
//   its output channel's range (sum |w| times the input's); h / t, quantized per tensor too,
//   moves with both. Measured on det 320x320 (XINT8 + CLE, 28 Mul tails): evening the largest
//   |w| alone 18.3 dB, sum |w| alone 22.4, sqrt(largest x sum) 24.1 dB, without tails 19.2.
//
// Head and Tail are Conv (any group count: depthwise included) or Gemm (transA = 0 for a tail).
// A head row is an output channel (Conv W[k], Gemm B column k, or row k with transB); a tail
// column is an input channel (for a grouped Conv, column c mod I/g of the rows of c's group;
// Gemm B row c, or column c with transB). Conv -> DepthwiseConv -> Conv is two pairs sharing the
// depthwise layer; sweeps go over every pair in graph order, CLESteps times (-1: until the
// mean over pairs of the mean |s - 1| of a sweep is below kConvergedChange, at most
// kMaxAdaptiveSteps sweeps).
//
// Preconditions (a chain not meeting them is left alone): weights and biases are float
// initializers read by that node only; every tensor from the head's output to the tail's input
// has exactly one consumer and is not a graph output; a Pad is constant-0 (or reflect/edge)
// with constant pads that leave the channel axis alone; a ReduceMean has constant axes, all
// spatial; the channel counts of head and tail agree, and a Gemm tail reads a rank-2 tensor
// (after a ReduceMean with keepdims=0) while a Conv tail reads its own rank. A Mul tail's head
// output has that Mul as its only consumer and is not a graph output; the Mul's constant is a
// float initializer read by that Mul only, broadcast along the channel axis alone.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "common/timing.h"
#include "algorithms/layer_sites.h"
#include "ir/constant_inputs.h"
#include "ir/graph_view.h"
#include "mixprec/algorithms.h"
#include "mixprec/tensor_proto.h"

namespace mixprec {
namespace {

// Keeps float exponents sane when one range is tiny; any s > 0 keeps the model exact.
constexpr double kMinEqualizeScale = 1e-6;
constexpr double kMaxEqualizeScale = 1e6;
// The adaptive mode (CLESteps -1) stops when a sweep's mean over pairs of the mean |s - 1| is
// below this. Once balanced, s differs from 1 only by the rounding of the float ranges
// (~6e-8 relative), so the threshold sits above that floor: lower, the loop never stops.
constexpr double kConvergedChange = 1e-6;
constexpr int64_t kMaxAdaptiveSteps = 100;
// The largest int8 code of a symmetric power-of-two scale: a Mul tail's constant is rounded to
// the grid on which its largest value is at most this many steps.
constexpr double kInt8Top = 127.0;

enum class LayerKind { kConv, kGemm };

// One weighted layer and how its weight's elements map to channels.
struct Layer {
  size_t node = 0;
  LayerKind kind = LayerKind::kConv;
  std::string weight;
  std::string bias;  // empty: none
  std::vector<int64_t> dims;
  int64_t group = 1;     // Conv
  bool trans_b = false;  // Gemm

  int64_t outputs() const {
    if (kind == LayerKind::kConv) return dims[0];
    return trans_b ? dims[0] : dims[1];
  }
  int64_t inputs() const {
    if (kind == LayerKind::kConv) return dims[1] * group;
    return trans_b ? dims[1] : dims[0];
  }
  int64_t kernel() const {
    int64_t k = 1;
    for (size_t i = 2; i < dims.size(); ++i) k *= dims[i];
    return k;
  }
  // Calls f(index) for every weight element of output channel `k`.
  template <class F>
  void for_each_in_row(int64_t k, F f) const {
    if (kind == LayerKind::kConv) {
      const int64_t per_row = dims[1] * kernel();
      for (int64_t i = 0; i < per_row; ++i) f(static_cast<size_t>(k * per_row + i));
    } else if (trans_b) {  // B [N, K]
      for (int64_t i = 0; i < dims[1]; ++i) f(static_cast<size_t>(k * dims[1] + i));
    } else {  // B [K, N]
      for (int64_t i = 0; i < dims[0]; ++i) f(static_cast<size_t>(i * dims[1] + k));
    }
  }
  // Calls f(index) for every weight element that reads input channel `c`.
  template <class F>
  void for_each_in_column(int64_t c, F f) const {
    if (kind == LayerKind::kConv) {
      const int64_t per_group_in = dims[1];
      const int64_t per_group_out = dims[0] / group;
      const int64_t g = c / per_group_in;
      const int64_t j = c % per_group_in;
      const int64_t k = kernel();
      for (int64_t o = g * per_group_out; o < (g + 1) * per_group_out; ++o) {
        for (int64_t r = 0; r < k; ++r) f(static_cast<size_t>((o * per_group_in + j) * k + r));
      }
    } else if (trans_b) {  // B [N, K]
      for (int64_t n = 0; n < dims[0]; ++n) f(static_cast<size_t>(n * dims[1] + c));
    } else {  // B [K, N]
      for (int64_t n = 0; n < dims[1]; ++n) f(static_cast<size_t>(c * dims[1] + n));
    }
  }
};

struct Pair {
  Layer head;
  Layer tail;
};

std::optional<std::vector<int64_t>> constant_ints(const ir::GraphView& view, const onnx::NodeProto& node, int input,
                                                  const std::string& attribute, const std::string& label) {
  if (node.input_size() > input && !node.input(input).empty()) {
    const onnx::TensorProto* init = view.initializer(node.input(input));
    if (!init) return std::nullopt;
    std::vector<int64_t> out;
    for (float v : tensor_from_proto(*init, label).to_floats()) out.push_back(static_cast<int64_t>(v));
    return out;
  }
  return ir::ints_attribute(node, attribute).value_or(std::vector<int64_t>{});
}

std::optional<Layer> as_layer(const ir::GraphView& view, size_t index) {
  const onnx::NodeProto& node = view.node(index);
  if (!node.domain().empty() || node.output_size() != 1 || node.input_size() < 2) return std::nullopt;
  Layer layer;
  layer.node = index;
  layer.weight = node.input(1);
  if (!algorithms::private_float(view, layer.weight)) return std::nullopt;
  const onnx::TensorProto& w = *view.initializer(layer.weight);
  layer.dims.assign(w.dims().begin(), w.dims().end());
  if (node.input_size() >= 3 && !node.input(2).empty()) {
    layer.bias = node.input(2);
    if (!algorithms::private_float(view, layer.bias)) return std::nullopt;
  }
  if (node.op_type() == "Conv") {
    layer.kind = LayerKind::kConv;
    layer.group = ir::int_attribute(node, "group").value_or(1);
    if (layer.dims.size() < 3 || layer.group < 1 || layer.dims[0] % layer.group != 0) return std::nullopt;
  } else if (node.op_type() == "Gemm") {
    layer.kind = LayerKind::kGemm;
    layer.trans_b = ir::int_attribute(node, "transB").value_or(0) != 0;
    if (layer.dims.size() != 2) return std::nullopt;
  } else {
    return std::nullopt;
  }
  for (int64_t d : layer.dims) {
    if (d <= 0) return std::nullopt;
  }
  if (!layer.bias.empty()) {
    const onnx::TensorProto& b = *view.initializer(layer.bias);
    int64_t count = 1;
    for (int64_t d : b.dims()) count *= d;
    if (count != layer.outputs() || (b.dims_size() == 2 && b.dims(0) != 1) || b.dims_size() > 2) return std::nullopt;
  }
  return layer;
}

// Whether `node` between head and tail keeps per-channel scaling; updates the tensor rank.
bool passes_scaling(const ir::GraphView& view, const onnx::NodeProto& node, int64_t& rank, const std::string& label) {
  if (!node.domain().empty() || node.output_size() != 1) return false;
  const std::string& type = node.op_type();
  if (type == "Relu" || type == "LeakyRelu") return true;
  if (type == "Pad") {
    const std::string mode = ir::string_attribute(node, "mode").value_or("constant");
    if (mode == "constant") {
      const auto value = ir::constant_float(view, node, 2, "value", label);
      const bool has_value_input = node.input_size() > 2 && !node.input(2).empty();
      if (has_value_input ? (!value || *value != 0.0f) : (value && *value != 0.0f)) return false;
    } else if (mode != "reflect" && mode != "edge") {
      return false;
    }
    if (node.input_size() > 3 && !node.input(3).empty()) return false;  // axes input: not handled
    const auto pads = constant_ints(view, node, 1, "pads", label);
    if (!pads || static_cast<int64_t>(pads->size()) != 2 * rank || rank < 2) return false;
    return (*pads)[1] == 0 && (*pads)[static_cast<size_t>(rank + 1)] == 0;
  }
  if (type == "ReduceMean") {
    auto axes = constant_ints(view, node, 1, "axes", label);
    if (!axes || axes->empty()) return false;
    for (int64_t& a : *axes) {
      if (a < 0) a += rank;
      if (a < 2 || a >= rank) return false;
    }
    if (ir::int_attribute(node, "keepdims").value_or(1) == 0) {
      rank -= static_cast<int64_t>(std::set<int64_t>(axes->begin(), axes->end()).size());
    }
    return true;
  }
  return false;
}

std::vector<Pair> match(const ir::GraphView& view, const std::string& label) {
  std::vector<Pair> pairs;
  for (size_t index : view.topological_order()) {
    const auto head = as_layer(view, index);
    if (!head) continue;
    int64_t rank = head->kind == LayerKind::kConv ? static_cast<int64_t>(head->dims.size()) : 2;
    std::string tensor = view.node(index).output(0);
    for (;;) {
      if (view.consumers(tensor).size() != 1 || view.is_graph_output(tensor)) break;
      const size_t next = view.consumers(tensor).front();
      const onnx::NodeProto& node = view.node(next);
      if (const auto tail = as_layer(view, next)) {
        const bool reads_data = node.input(0) == tensor && node.input(1) != tensor;
        const bool kind_fits = tail->kind == LayerKind::kConv ? rank == static_cast<int64_t>(tail->dims.size())
                                                              : rank == 2 && ir::int_attribute(node, "transA").value_or(0) == 0;
        if (reads_data && kind_fits && tail->inputs() == head->outputs()) pairs.push_back({*head, *tail});
        break;
      }
      if (!passes_scaling(view, node, rank, label)) break;
      tensor = node.output(0);
    }
  }
  return pairs;
}

// A head whose output only a Mul by a constant reads (scalar, or one value per channel).
struct MulTail {
  Layer head;
  std::string constant;     // the Mul's constant input, a private float initializer
  std::vector<double> mul;  // its value for each head output channel
  int64_t rank = 4;         // of the head's output
};

// The constant's values, one per head output channel, when it broadcasts along the channel axis
// only (size 1, or C with every other dim 1 and the channel dim at axis 1 of `rank`).
std::optional<std::vector<double>> per_channel(const onnx::TensorProto& proto, int64_t channels, int64_t rank,
                                               const std::string& label) {
  int64_t count = 1;
  for (int64_t d : proto.dims()) count *= d;
  // A constant of higher rank than the head's output would raise the Mul's output rank.
  if (proto.dims_size() > rank) return std::nullopt;
  const auto values = tensor_from_proto(proto, label).to_floats();
  if (count == 1) return std::vector<double>(static_cast<size_t>(channels), values.at(0));
  if (count != channels) return std::nullopt;
  // Right-aligned broadcasting: the C must sit at axis 1 of the output.
  const int64_t axis = 1 - (rank - proto.dims_size());
  if (axis < 0 || proto.dims(static_cast<int>(axis)) != channels) return std::nullopt;
  return std::vector<double>(values.begin(), values.end());
}

std::vector<MulTail> match_mul_tails(const ir::GraphView& view, const std::string& label) {
  std::vector<MulTail> tails;
  for (size_t index : view.topological_order()) {
    const auto head = as_layer(view, index);
    if (!head) continue;
    const std::string& tensor = view.node(index).output(0);
    if (view.consumers(tensor).size() != 1 || view.is_graph_output(tensor)) continue;
    const onnx::NodeProto& mul = view.node(view.consumers(tensor).front());
    if (mul.op_type() != "Mul" || !mul.domain().empty() || mul.input_size() != 2) continue;
    const std::string& constant = mul.input(0) == tensor ? mul.input(1) : mul.input(0);
    if (constant == tensor || !algorithms::private_float(view, constant)) continue;
    const int64_t rank = head->kind == LayerKind::kConv ? static_cast<int64_t>(head->dims.size()) : 2;
    auto mul_values = per_channel(*view.initializer(constant), head->outputs(), rank, label);
    if (!mul_values) continue;
    tails.push_back({*head, constant, std::move(*mul_values), rank});
  }
  return tails;
}

// Clip(0, 6) → Relu, for ReplaceClip6Relu.
size_t replace_clip6(onnx::ModelProto& model, const std::string& label) {
  std::vector<int> sites;
  {
    const ir::GraphView view(model.graph(), label);
    for (size_t i = 0; i < view.node_count(); ++i) {
      const onnx::NodeProto& node = view.node(i);
      if (node.op_type() != "Clip" || !node.domain().empty()) continue;
      const auto low = ir::constant_float(view, node, 1, "min", label);
      const auto high = ir::constant_float(view, node, 2, "max", label);
      if (low && high && *low == 0.0f && *high == 6.0f) sites.push_back(static_cast<int>(i));
    }
  }
  for (int i : sites) {
    onnx::NodeProto& node = *model.mutable_graph()->mutable_node(i);
    const std::string in = node.input(0);
    node.set_op_type("Relu");
    node.clear_input();
    node.add_input(in);
    node.clear_attribute();
  }
  return sites.size();
}

}  // namespace

EqualizeSummary equalize_layers(onnx::ModelProto& model, const CleSettings& settings, const std::string& label) {
  const auto start = Clock::now();
  EqualizeSummary summary;
  if (settings.replace_clip6_relu) summary.clip6_replaced = replace_clip6(model, label);
  std::vector<Pair> pairs;
  {
    const ir::GraphView view(model.graph(), label);
    pairs = match(view, label);
  }
  summary.pairs = pairs.size();
  std::vector<MulTail> mul_tails;
  if (settings.mul_tails) {
    const ir::GraphView view(model.graph(), label);
    mul_tails = match_mul_tails(view, label);
  }
  summary.mul_tails = mul_tails.size();
  if (settings.mul_tails && mul_tails.empty()) {
    summary.notes.push_back("cle: no Conv/Gemm read only by a Mul by a constant: no Mul tails equalized");
  }
  if (pairs.empty() && mul_tails.empty()) {
    summary.notes.push_back("cle: no Conv/Gemm -> (Relu|LeakyRelu|Pad|ReduceMean)* -> Conv/Gemm pairs: nothing equalized");
    summary.seconds = seconds_since(start);
    return summary;
  }
  // Every weight and bias the pairs touch, as floats, written back once at the end.
  std::map<std::string, onnx::TensorProto*> protos;
  for (auto& init : *model.mutable_graph()->mutable_initializer()) protos.emplace(init.name(), &init);
  std::map<std::string, std::vector<float>> values;
  const auto load = [&](const std::string& name) {
    if (!name.empty() && !values.count(name)) values[name] = tensor_from_proto(*protos.at(name), label).to_floats();
  };
  for (const Pair& p : pairs) {
    for (const Layer* layer : {&p.head, &p.tail}) {
      load(layer->weight);
      load(layer->bias);
    }
  }
  for (const MulTail& m : mul_tails) {
    load(m.head.weight);
    load(m.head.bias);
  }
  const int64_t sweeps = pairs.empty() ? 0 : settings.steps < 0 ? kMaxAdaptiveSteps : settings.steps;
  for (int64_t step = 0; step < sweeps; ++step) {
    double change = 0;
    for (const Pair& p : pairs) {
      std::vector<float>& w1 = values.at(p.head.weight);
      std::vector<float>& w2 = values.at(p.tail.weight);
      std::vector<float>* b1 = p.head.bias.empty() ? nullptr : &values.at(p.head.bias);
      const int64_t channels = p.head.outputs();
      double pair_change = 0;
      for (int64_t k = 0; k < channels; ++k) {
        double r1 = 0;
        double r2 = 0;
        p.head.for_each_in_row(k, [&](size_t i) { r1 = std::max(r1, std::fabs(static_cast<double>(w1[i]))); });
        if (b1 && settings.scale_append_bias) r1 = std::max(r1, std::fabs(static_cast<double>((*b1)[static_cast<size_t>(k)])));
        p.tail.for_each_in_column(k, [&](size_t i) { r2 = std::max(r2, std::fabs(static_cast<double>(w2[i]))); });
        if (r1 == 0 || r2 == 0) continue;  // a dead channel: nothing to balance
        const double s = std::clamp(r2 / std::sqrt(r1 * r2), kMinEqualizeScale, kMaxEqualizeScale);
        const auto sf = static_cast<float>(s);
        p.head.for_each_in_row(k, [&](size_t i) { w1[i] *= sf; });
        if (b1) (*b1)[static_cast<size_t>(k)] *= sf;
        p.tail.for_each_in_column(k, [&](size_t i) { w2[i] /= sf; });
        pair_change += std::fabs(s - 1.0);
      }
      change += pair_change / static_cast<double>(channels);
    }
    change /= static_cast<double>(pairs.size());
    summary.steps = step + 1;
    summary.last_change = change;
    if (settings.steps < 0 && change < kConvergedChange) break;
  }
  if (settings.steps < 0 && summary.last_change >= kConvergedChange) {
    summary.notes.push_back("cle: not converged after " + std::to_string(kMaxAdaptiveSteps) + " sweeps (last change " +
                            std::to_string(summary.last_change) + ")");
  }
  // Mul tails (header): the new constants sit on the power-of-two int8 grid their largest value
  // sets, so a power-of-two quantizer stores them exactly; a channel whose value would round to
  // 0 there, or whose row or constant is 0, keeps t = 1.
  for (const MulTail& m : mul_tails) {
    std::vector<float>& w = values.at(m.head.weight);
    std::vector<float>* b = m.head.bias.empty() ? nullptr : &values.at(m.head.bias);
    const int64_t channels = m.head.outputs();
    const std::vector<double>& mul = m.mul;
    std::vector<double> r(static_cast<size_t>(channels), 0.0);
    double top = 0;
    for (int64_t k = 0; k < channels; ++k) {
      double largest_w = 0;
      double sum = 0;
      m.head.for_each_in_row(k, [&](size_t i) {
        const double v = std::fabs(static_cast<double>(w[i]));
        largest_w = std::max(largest_w, v);
        sum += v;
      });
      if (b && settings.scale_append_bias) largest_w = std::max(largest_w, std::fabs(static_cast<double>((*b)[static_cast<size_t>(k)])));
      r[static_cast<size_t>(k)] = std::sqrt(largest_w * sum);
      top = std::max(top, r[static_cast<size_t>(k)]);
    }
    if (top == 0) continue;
    std::vector<double> scaled(mul.size());
    double largest = 0;
    for (size_t k = 0; k < mul.size(); ++k) {
      scaled[k] = r[k] > 0 ? mul[k] * r[k] / top : mul[k];
      largest = std::max(largest, std::fabs(scaled[k]));
    }
    if (largest == 0) continue;
    const double step = std::exp2(std::ceil(std::log2(largest / kInt8Top)));
    std::vector<float> constant(mul.size());
    for (size_t k = 0; k < mul.size(); ++k) {
      const double snapped = std::nearbyint(scaled[k] / step) * step;
      // snapped has mul[k]'s sign (r[k] > 0), so t > 0.
      const double t = mul[k] != 0 && r[k] > 0 && snapped != 0 ? snapped / mul[k] : 1.0;
      const auto k64 = static_cast<int64_t>(k);
      const auto inv = static_cast<float>(1.0 / t);
      m.head.for_each_in_row(k64, [&](size_t i) { w[i] *= inv; });
      if (b) (*b)[k] *= inv;
      constant[k] = static_cast<float>(mul[k] * t);
    }
    std::vector<int64_t> dims(static_cast<size_t>(m.rank - 1), 1);
    dims[0] = channels;
    *protos.at(m.constant) = tensor_to_proto(Tensor::from_floats(dims, constant), m.constant);
  }
  for (auto& [name, floats] : values) {
    onnx::TensorProto& proto = *protos.at(name);
    const std::vector<int64_t> dims(proto.dims().begin(), proto.dims().end());
    proto = tensor_to_proto(Tensor::from_floats(dims, floats), name);
  }
  // Statistics carry the model's fingerprint, which reads this mark: ranges collected before
  // equalization are never reused after it (model_fingerprint, evaluation/calibrate.cpp).
  auto* mark = model.add_metadata_props();
  mark->set_key("mixprec.cle");
  mark->set_value("pairs=" + std::to_string(summary.pairs) + " steps=" + std::to_string(summary.steps) +
                  " append_bias=" + (settings.scale_append_bias ? "1" : "0") +
                  (settings.mul_tails ? " mul_tails=" + std::to_string(summary.mul_tails) : std::string()));
  summary.seconds = seconds_since(start);
  return summary;
}

}  // namespace mixprec
