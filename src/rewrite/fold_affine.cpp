// fold_affine: a per-channel scale or shift by a constant after a Conv becomes part of the Conv.
//
//   Before:  x → Conv(W, B?) → c → Mul(c, s) → m → Add(m, t) → y      (either operand order)
//   After:   x → Conv(W', B') → y
//            W'[k] = W[k] * s[k],  B'[k] = B[k] * s[k] + t[k]            (B = 0 if absent)
//   Div(c, d) is Mul by 1/d, Sub(c, t) is Add of -t; chains fold one op at a time.
//
// Preconditions (a site not meeting them is left alone): the Conv (default domain, one output)
// has float initializer weights and bias read by no other node; c is read only by the folded
// op and is not a graph output; the other operand is a float initializer of finite values (non
// zero for Div) whose shape, aligned to c's rank from the right, is 1 on every axis but the
// channel axis 1, where it is 1 or W's output-channel count (so the op neither broadcasts c
// to a larger shape nor mixes channels). Exactly the float arithmetic of the original up to
// rounding; statistics, configs and Q/DQ then see one node instead of three.
#include "rewrite/fold_affine.h"

#include <cmath>
#include <optional>
#include <unordered_map>

#include "ir/graph_view.h"
#include "ir/node_builder.h"
#include "mixprec/tensor_proto.h"
#include "rewrite/graph_edit.h"

namespace mixprec::rewrite {
namespace {

enum class Kind { kScale, kShift };

struct FoldSite {
  size_t conv = 0;
  size_t op = 0;
  Kind kind = Kind::kScale;
  std::vector<float> values;  // one per output channel
};

bool is_private_float_initializer(const ir::GraphView& view, const std::string& name) {
  const onnx::TensorProto* init = view.initializer(name);
  return init && init->data_type() == onnx::TensorProto::FLOAT && view.consumers(name).size() == 1;
}

// The constant as one value per output channel, or nullopt when its shape does not qualify.
std::optional<std::vector<float>> per_channel(const onnx::TensorProto& constant, int64_t rank, int64_t channels,
                                              const std::string& label) {
  if (constant.data_type() != onnx::TensorProto::FLOAT || constant.dims_size() > rank) return std::nullopt;
  const int64_t offset = rank - constant.dims_size();  // constant axis j is output axis j + offset
  int64_t count = 1;
  for (int j = 0; j < constant.dims_size(); ++j) {
    const int64_t dim = constant.dims(j);
    const bool channel_axis = j + offset == 1;
    if (dim != 1 && !(channel_axis && dim == channels)) return std::nullopt;
    count *= dim;
  }
  const std::vector<float> values = tensor_from_proto(constant, label).to_floats();
  for (float v : values) {
    if (!std::isfinite(v)) return std::nullopt;
  }
  std::vector<float> out(static_cast<size_t>(channels), values.at(0));
  if (count == channels && channels > 1) out = values;
  return out;
}

std::vector<FoldSite> match(const ir::GraphView& view, const std::string& label) {
  std::vector<FoldSite> sites;
  for (size_t i = 0; i < view.node_count(); ++i) {
    const onnx::NodeProto& op = view.node(i);
    const std::string& type = op.op_type();
    if (!op.domain().empty() || op.input_size() != 2 || op.output_size() != 1) continue;
    if (type != "Mul" && type != "Add" && type != "Div" && type != "Sub") continue;
    // Mul and Add commute; Div and Sub fold only with the constant second.
    const bool commutes = type == "Mul" || type == "Add";
    for (int side = 0; side < (commutes ? 2 : 1); ++side) {
      const std::string& data = op.input(side);
      const std::string& constant_name = op.input(1 - side);
      const auto conv_index = view.producer(data);
      const onnx::TensorProto* constant = view.initializer(constant_name);
      if (!conv_index || !constant) continue;
      const onnx::NodeProto& conv = view.node(*conv_index);
      if (conv.op_type() != "Conv" || !conv.domain().empty() || conv.output_size() != 1) continue;
      if (view.consumers(data).size() != 1 || view.is_graph_output(data)) continue;
      if (conv.input_size() < 2 || !is_private_float_initializer(view, conv.input(1))) continue;
      if (conv.input_size() >= 3 && !conv.input(2).empty() && !is_private_float_initializer(view, conv.input(2))) continue;
      const onnx::TensorProto* w = view.initializer(conv.input(1));
      if (w->dims_size() < 3) continue;
      auto values = per_channel(*constant, w->dims_size(), w->dims(0), label);
      if (!values) continue;
      FoldSite site{*conv_index, i, type == "Mul" || type == "Div" ? Kind::kScale : Kind::kShift, std::move(*values)};
      bool ok = true;
      for (float& v : site.values) {
        if (type == "Div") {
          ok = ok && v != 0.0f;
          v = 1.0f / v;
        } else if (type == "Sub") {
          v = -v;
        }
      }
      if (ok) sites.push_back(std::move(site));
      break;
    }
  }
  return sites;
}

void apply(onnx::ModelProto& model, const std::vector<FoldSite>& sites, const std::string& label) {
  onnx::GraphProto& graph = *model.mutable_graph();
  ir::NameAllocator names(model);
  std::vector<bool> drop(static_cast<size_t>(graph.node_size()), false);
  std::unordered_map<std::string, onnx::TensorProto*> inits;
  const auto index_initializers = [&] {
    inits.clear();
    for (auto& init : *graph.mutable_initializer()) inits.emplace(init.name(), &init);
  };
  index_initializers();
  for (const FoldSite& site : sites) {
    onnx::NodeProto& conv = *graph.mutable_node(static_cast<int>(site.conv));
    const onnx::NodeProto& op = graph.node(static_cast<int>(site.op));
    const size_t channels = site.values.size();
    std::vector<float> bias(channels, 0.0f);
    const bool has_bias = conv.input_size() >= 3 && !conv.input(2).empty();
    if (has_bias) bias = tensor_from_proto(*inits.at(conv.input(2)), label).to_floats();
    if (site.kind == Kind::kScale) {
      onnx::TensorProto& w_proto = *inits.at(conv.input(1));
      Tensor w = tensor_from_proto(w_proto, label);
      const size_t per_channel_count = static_cast<size_t>(w.numel()) / channels;
      auto w_values = w.as<float>();
      for (size_t k = 0; k < channels; ++k) {
        for (size_t j = 0; j < per_channel_count; ++j) w_values[k * per_channel_count + j] *= site.values[k];
        bias[k] *= site.values[k];
      }
      w_proto = tensor_to_proto(w, w_proto.name());
    } else {
      for (size_t k = 0; k < channels; ++k) bias[k] += site.values[k];
    }
    const Tensor b = Tensor::from_floats({static_cast<int64_t>(channels)}, bias);
    if (has_bias) {
      *inits.at(conv.input(2)) = tensor_to_proto(b, conv.input(2));
    } else if (site.kind == Kind::kShift) {
      const std::string name = names.fresh(conv.name() + "_folded_bias");
      *graph.add_initializer() = tensor_to_proto(b, name);
      while (conv.input_size() < 2) conv.add_input("");
      conv.add_input(name);
      index_initializers();  // add_initializer may reallocate
    }
    conv.set_output(0, op.output(0));
    drop[site.op] = true;
  }
  auto* nodes = graph.mutable_node();
  for (int i = nodes->size() - 1; i >= 0; --i) {
    if (drop[static_cast<size_t>(i)]) nodes->DeleteSubrange(i, 1);
  }
  remove_unused(graph);
}

}  // namespace

size_t fold_affine(onnx::ModelProto& model, const std::string& label) {
  size_t folded = 0;
  for (;;) {  // one op per Conv per pass: Conv -> Mul -> Add takes two
    std::vector<FoldSite> sites;
    {
      const ir::GraphView view(model.graph(), label);
      sites = match(view, label);
    }
    // A Conv appears at most once per pass (its output has one consumer), so sites are independent.
    if (sites.empty()) return folded;
    apply(model, sites, label);
    folded += sites.size();
  }
}

}  // namespace mixprec::rewrite
