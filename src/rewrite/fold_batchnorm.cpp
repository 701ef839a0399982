// fold_batchnorm: BatchNormalization after a Conv becomes part of the Conv.
//
//   Before:  x → Conv(W, B?) → c → BatchNormalization(gamma, beta, mean, var, eps) → y
//   After:   x → Conv(W', B') → y
//            with s = gamma / sqrt(var + eps) per output channel k:
//            W'[k] = W[k] * s[k],  B'[k] = (B[k] - mean[k]) * s[k] + beta[k]   (B = 0 if absent)
//
// Preconditions (a site not meeting them is left alone): W, B, gamma, beta, mean and var are
// float initializers of the main graph read by no other node; c is read only by the
// BatchNormalization and is not a graph output; the BatchNormalization has one output
// (inference mode) and per-channel params of W's output-channel count.
#include "rewrite/fold_batchnorm.h"

#include <cmath>
#include <unordered_map>

#include "ir/graph_view.h"
#include "ir/node_builder.h"
#include "mixprec/tensor_proto.h"
#include "rewrite/graph_edit.h"

namespace mixprec::rewrite {
namespace {

struct FoldSite {
  size_t conv = 0;
  size_t batchnorm = 0;
};

bool is_private_float_initializer(const ir::GraphView& view, const std::string& name) {
  const onnx::TensorProto* init = view.initializer(name);
  return init && init->data_type() == onnx::TensorProto::FLOAT && view.consumers(name).size() == 1;
}

std::vector<FoldSite> match(const ir::GraphView& view) {
  std::vector<FoldSite> sites;
  for (size_t i = 0; i < view.node_count(); ++i) {
    const onnx::NodeProto& bn = view.node(i);
    if (bn.op_type() != "BatchNormalization" || !bn.domain().empty() || bn.input_size() != 5 ||
        bn.output_size() != 1) {
      continue;
    }
    const auto conv_index = view.producer(bn.input(0));
    if (!conv_index) continue;
    const onnx::NodeProto& conv = view.node(*conv_index);
    if (conv.op_type() != "Conv" || !conv.domain().empty() || conv.output_size() != 1) continue;
    if (view.consumers(conv.output(0)).size() != 1 || view.is_graph_output(conv.output(0))) continue;
    bool ok = conv.input_size() >= 2 && is_private_float_initializer(view, conv.input(1));
    if (conv.input_size() >= 3 && !conv.input(2).empty()) ok = ok && is_private_float_initializer(view, conv.input(2));
    for (int k = 1; k < 5 && ok; ++k) ok = is_private_float_initializer(view, bn.input(k));
    if (!ok) continue;
    const onnx::TensorProto* w = view.initializer(conv.input(1));
    if (w->dims_size() < 1) continue;
    const int64_t channels = w->dims(0);
    for (int k = 1; k < 5 && ok; ++k) {
      const onnx::TensorProto* p = view.initializer(bn.input(k));
      ok = p->dims_size() == 1 && p->dims(0) == channels;
    }
    if (ok) sites.push_back({*conv_index, i});
  }
  return sites;
}

void apply(onnx::ModelProto& model, const std::vector<FoldSite>& sites, const std::string& label) {
  onnx::GraphProto& graph = *model.mutable_graph();
  ir::NameAllocator names(model);
  std::unordered_map<std::string, onnx::TensorProto*> inits;
  for (auto& init : *graph.mutable_initializer()) inits.emplace(init.name(), &init);
  std::vector<bool> drop(static_cast<size_t>(graph.node_size()), false);
  for (const FoldSite& site : sites) {
    onnx::NodeProto& conv = *graph.mutable_node(static_cast<int>(site.conv));
    const onnx::NodeProto& bn = graph.node(static_cast<int>(site.batchnorm));
    const float eps = ir::float_attribute(bn, "epsilon").value_or(1e-5f);
    const auto param = [&](int k) { return tensor_from_proto(*inits.at(bn.input(k)), label).to_floats(); };
    const std::vector<float> gamma = param(1), beta = param(2), mean = param(3), var = param(4);
    onnx::TensorProto& w_proto = *inits.at(conv.input(1));
    Tensor w = tensor_from_proto(w_proto, label);
    const size_t channels = gamma.size();
    const size_t per_channel = static_cast<size_t>(w.numel()) / channels;
    std::vector<float> bias(channels, 0.0f);
    const bool has_bias = conv.input_size() >= 3 && !conv.input(2).empty();
    if (has_bias) bias = tensor_from_proto(*inits.at(conv.input(2)), label).to_floats();
    auto w_values = w.as<float>();
    for (size_t k = 0; k < channels; ++k) {
      const float s = gamma[k] / std::sqrt(var[k] + eps);
      for (size_t j = 0; j < per_channel; ++j) w_values[k * per_channel + j] *= s;
      bias[k] = (bias[k] - mean[k]) * s + beta[k];
    }
    w_proto = tensor_to_proto(w, w_proto.name());
    const Tensor b = Tensor::from_floats({static_cast<int64_t>(channels)}, bias);
    if (has_bias) {
      *inits.at(conv.input(2)) = tensor_to_proto(b, conv.input(2));
    } else {
      const std::string name = names.fresh(conv.name() + "_folded_bias");
      *graph.add_initializer() = tensor_to_proto(b, name);
      while (conv.input_size() < 2) conv.add_input("");
      conv.add_input(name);
      inits.clear();  // add_initializer may reallocate
      for (auto& init : *graph.mutable_initializer()) inits.emplace(init.name(), &init);
    }
    conv.set_output(0, bn.output(0));
    drop[site.batchnorm] = true;
  }
  auto* nodes = graph.mutable_node();
  for (int i = nodes->size() - 1; i >= 0; --i) {
    if (drop[static_cast<size_t>(i)]) nodes->DeleteSubrange(i, 1);
  }
  remove_unused(graph);
}

}  // namespace

size_t fold_batchnorm(onnx::ModelProto& model, const std::string& label) {
  std::vector<FoldSite> sites;
  {
    const ir::GraphView view(model.graph(), label);
    sites = match(view);
  }
  apply(model, sites, label);
  return sites.size();
}

}  // namespace mixprec::rewrite
