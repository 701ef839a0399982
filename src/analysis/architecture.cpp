// Architecture inference: counts the op families that tell CNNs, transformers and recurrent
// networks apart, then applies the rules documented in mixprec/analysis.h; and finds the
// feed-forward (MLP) blocks and attention projections:
//
//   MLP:        MatMul/Gemm(W1) → [Add b1] → activation (Gelu | Erf form | tanh form |
//               Sigmoid·x | Relu | Clip | ...) → [Q/DQ, Cast, Reshape] → MatMul/Gemm(W2)
//   attention:  MatMul(W) → layout (Reshape, Transpose, Split, Slice, Gather, scale, bias) →
//               Q.K^T / P.V  → layout → MatMul(W_out)
//
// W are constant weights (initializers or Constants, possibly behind DequantizeLinear, Cast,
// Transpose or Reshape). The region between W1 and W2 stops at a residual Add/Sub (two
// non-constant inputs), a normalization (ReduceMean), a Softmax and any MatMul.
#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "analysis/model_graph.h"

namespace mixprec::analysis {
namespace {

bool one_of(std::string_view op, std::initializer_list<std::string_view> names) {
  for (std::string_view name : names) {
    if (op == name) return true;
  }
  return false;
}

bool is_conv(std::string_view op) {
  return one_of(op, {"Conv", "ConvTranspose", "QLinearConv", "ConvInteger", "FusedConv", "NhwcConv", "QLinearConvTranspose"});
}
bool is_matmul(std::string_view op) {
  return one_of(op, {"MatMul", "Gemm", "QLinearMatMul", "MatMulInteger", "QGemm", "FusedMatMul", "FusedGemm",
                     "MatMulIntegerToFloat", "DynamicQuantizeMatMul", "MatMulNBits"});
}
bool is_fused_attention(std::string_view op) {
  return one_of(op, {"Attention", "MultiHeadAttention", "GroupQueryAttention", "PackedAttention",
                     "PackedMultiHeadAttention", "QAttention", "DecoderMaskedMultiHeadAttention", "SparseAttention"});
}
bool is_normalization(std::string_view op) {
  return one_of(op, {"LayerNormalization", "SimplifiedLayerNormalization", "SkipLayerNormalization",
                     "SkipSimplifiedLayerNormalization", "RMSNormalization", "EmbedLayerNormalization"});
}
bool is_recurrent(std::string_view op) { return one_of(op, {"LSTM", "GRU", "RNN", "DynamicQuantizeLSTM", "Loop", "Scan"}); }
// Ops a Softmax output may pass through on its way to the attention MatMul.
bool passes_values(std::string_view op) {
  return one_of(op, {"Cast", "Dropout", "Identity", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten",
                     "QuantizeLinear", "DequantizeLinear", "Where"});
}

// Ops between the Q.K^T MatMul and its Softmax: scaling, masking, bias.
bool scales_scores(std::string_view op) { return passes_values(op) || one_of(op, {"Div", "Mul", "Add", "Sub"}); }

// The nearest node upstream of `id` (at most 4 hops, through ops `passes` accepts) whose op is
// `wanted`.
template <typename Passes>
std::optional<size_t> upstream(const ModelGraph& graph, size_t id, std::string_view wanted, Passes passes) {
  std::vector<size_t> frontier = graph.predecessors(id);
  for (int hop = 0; hop < 4 && !frontier.empty(); ++hop) {
    std::vector<size_t> next;
    for (size_t p : frontier) {
      const std::string& op = graph.node(p).op_type();
      if (op == wanted) return p;
      if (passes(op)) next.insert(next.end(), graph.predecessors(p).begin(), graph.predecessors(p).end());
    }
    frontier = std::move(next);
  }
  return std::nullopt;
}

bool is_layout(std::string_view op) {
  return one_of(op, {"Reshape", "Transpose", "Split", "Slice", "Gather", "Squeeze", "Unsqueeze", "Flatten", "Identity",
                     "Dropout", "Cast", "QuantizeLinear", "DequantizeLinear"});
}
bool is_nonlinear(std::string_view op) {
  return one_of(op, {"Gelu", "FastGelu", "BiasGelu", "QuickGelu", "Erf", "Tanh", "Sigmoid", "HardSigmoid", "HardSwish",
                     "Relu", "LeakyRelu", "PRelu", "Elu", "Selu", "Celu", "Mish", "Softplus", "Clip", "ThresholdedRelu"});
}
// Ops an MLP's activation region is made of.
bool in_activation(std::string_view op) {
  return is_nonlinear(op) || one_of(op, {"Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Cast", "QuantizeLinear",
                                         "DequantizeLinear", "Identity", "Dropout", "Reshape", "Flatten", "Squeeze",
                                         "Unsqueeze"});
}

class FeedForward {
 public:
  explicit FeedForward(const ModelGraph& graph) : graph_(graph), successors_(graph.size()) {
    for (size_t id = 0; id < graph.size(); ++id) {
      for (size_t p : graph.predecessors(id)) successors_[p].push_back(id);
    }
  }

  // A MatMul/Gemm whose second operand is a constant and whose first is not.
  bool weight_matmul(size_t id) const {
    const onnx::NodeProto& n = graph_.node(id);
    if ((n.op_type() != "MatMul" && n.op_type() != "Gemm") || !n.domain().empty() || n.input_size() < 2) return false;
    return constant(id, n.input(1)) && !constant(id, n.input(0));
  }

  std::optional<MlpBlock> mlp_from(size_t up) const {
    std::set<size_t> region;
    std::vector<size_t> frontier = successors_[up];
    for (int hop = 0; hop < 12 && !frontier.empty(); ++hop) {
      std::vector<size_t> next;
      for (size_t s : frontier) {
        if (region.contains(s)) continue;
        if (weight_matmul(s)) {
          const std::string activation = activation_name(region);
          if (activation.empty()) return std::nullopt;  // a linear chain, not an MLP
          return MlpBlock{graph_.label(up), activation, graph_.label(s)};
        }
        const onnx::NodeProto& n = graph_.node(s);
        if (!in_activation(n.op_type())) continue;
        if ((n.op_type() == "Add" || n.op_type() == "Sub") && n.input_size() == 2 && !constant(s, n.input(0)) &&
            !constant(s, n.input(1)) && !reads_only_region(s, up, region)) {
          continue;  // a residual connection: the block ends before it
        }
        region.insert(s);
        next.insert(next.end(), successors_[s].begin(), successors_[s].end());
      }
      frontier = std::move(next);
    }
    return std::nullopt;
  }

  // The weight MatMuls upstream of `id`'s input `index` through layout, scaling and bias ops.
  std::set<size_t> projections_into(size_t id, int index) const {
    const onnx::NodeProto& n = graph_.node(id);
    if (index >= n.input_size()) return {};
    const auto first = graph_.producer(id, n.input(index));
    if (!first) return {};
    return weight_matmuls_reached({*first}, 10, [this](size_t p) -> const std::vector<size_t>& {
      const std::string& op = graph_.node(p).op_type();
      return is_layout(op) || one_of(op, {"Mul", "Div", "Add"}) ? graph_.predecessors(p) : kNone;
    });
  }

  // The weight MatMuls downstream of `id` through layout ops.
  std::set<size_t> projections_from(size_t id) const {
    return weight_matmuls_reached(successors_[id], 8, [this](size_t s) -> const std::vector<size_t>& {
      return is_layout(graph_.node(s).op_type()) ? successors_[s] : kNone;
    });
  }

 private:
  static inline const std::vector<size_t> kNone;

  // The weight MatMuls a walk from `frontier` reaches within `hops`, stopping at each one;
  // `next_of(id)` is where the walk goes on from a node that is not one (kNone: nowhere).
  template <typename Next>
  std::set<size_t> weight_matmuls_reached(std::vector<size_t> frontier, int hops, Next next_of) const {
    std::set<size_t> found, seen;
    for (int hop = 0; hop < hops && !frontier.empty(); ++hop) {
      std::vector<size_t> next;
      for (size_t id : frontier) {
        if (!seen.insert(id).second) continue;
        if (weight_matmul(id)) {
          found.insert(id);
        } else {
          const std::vector<size_t>& more = next_of(id);
          next.insert(next.end(), more.begin(), more.end());
        }
      }
      frontier = std::move(next);
    }
    return found;
  }

  bool constant(size_t id, const std::string& name, int depth = 0) const {
    if (name.empty() || depth > 4) return false;
    const auto p = graph_.producer(id, name);
    if (!p) return graph_.ref(id).graph->resolve_initializer(name) != nullptr;
    const onnx::NodeProto& n = graph_.node(*p);
    if (n.op_type() == "Constant") return true;
    if (one_of(n.op_type(), {"DequantizeLinear", "Cast", "Transpose", "Identity", "Reshape", "Unsqueeze", "Squeeze"}) &&
        n.input_size() > 0) {
      return constant(*p, n.input(0), depth + 1);
    }
    return false;
  }

  // True when both inputs of `id` come from `up` or the region (x + f(x) inside an activation).
  bool reads_only_region(size_t id, size_t up, const std::set<size_t>& region) const {
    return std::ranges::all_of(graph_.predecessors(id), [&](size_t p) {
      return p == up || region.contains(p) || graph_.node(p).op_type() == "Constant";
    });
  }

  std::string activation_name(const std::set<size_t>& region) const {
    std::set<std::string> ops;
    for (size_t id : region) ops.insert(graph_.node(id).op_type());
    if (ops.contains("Erf")) return "Gelu (decomposed: Erf)";
    if (ops.contains("Tanh") && ops.contains("Pow")) return "Gelu (tanh form)";
    if (ops.contains("Sigmoid") && ops.contains("Mul")) return "Swish (Sigmoid x Mul)";
    if (ops.contains("HardSigmoid") && ops.contains("Mul")) return "HardSwish (HardSigmoid x Mul)";
    for (size_t id : region) {
      if (is_nonlinear(graph_.node(id).op_type())) return graph_.node(id).op_type();
    }
    return "";
  }

  const ModelGraph& graph_;
  std::vector<std::vector<size_t>> successors_;
};

void find_feed_forward(const ModelGraph& graph, ArchitectureInference& result) {
  const FeedForward ff(graph);
  for (size_t id = 0; id < graph.size(); ++id) {
    if (!ff.weight_matmul(id)) continue;
    if (auto block = ff.mlp_from(id)) result.mlp_blocks.push_back(std::move(*block));
  }
  // Attention blocks: P.V reads a Softmax; Q.K^T feeds it.
  std::map<size_t, std::set<std::string>> roles;
  for (size_t id = 0; id < graph.size(); ++id) {
    const onnx::NodeProto& n = graph.node(id);
    if (n.op_type() != "MatMul" || ff.weight_matmul(id)) continue;
    const auto softmax = upstream(graph, id, "Softmax", passes_values);
    if (!softmax) continue;
    if (const auto scores = upstream(graph, *softmax, "MatMul", scales_scores)) {
      for (size_t p : ff.projections_into(*scores, 0)) roles[p].insert("q");
      for (size_t p : ff.projections_into(*scores, 1)) roles[p].insert("k");
    }
    // P.V: the operand that is not the probabilities is V.
    const auto reaches_softmax = [&](int index) {
      const auto p = graph.producer(id, n.input(index));
      if (!p) return false;
      if (*p == *softmax) return true;
      return passes_values(graph.node(*p).op_type()) && upstream(graph, *p, "Softmax", passes_values) == softmax;
    };
    for (size_t p : ff.projections_into(id, reaches_softmax(0) ? 1 : 0)) roles[p].insert("v");
    for (size_t p : ff.projections_from(id)) roles[p].insert("out");
  }
  for (const auto& [id, set] : roles) {
    std::string role;
    for (const char* r : {"q", "k", "v", "out"}) {
      if (!set.contains(r)) continue;
      if (!role.empty()) role += '+';
      role += r;
    }
    result.attention_projections.push_back({graph.label(id), role});
  }
}

}  // namespace

ArchitectureInference infer_architecture(const ModelGraph& graph) {
  ArchitectureInference result;
  std::set<size_t> attention_softmax, attention_matmuls;
  int64_t fused_attention = 0;
  for (size_t id = 0; id < graph.size(); ++id) {
    const std::string& op = graph.node(id).op_type();
    if (is_conv(op)) ++result.conv_nodes;
    if (is_matmul(op)) {
      ++result.matmul_nodes;
      if (const auto softmax = upstream(graph, id, "Softmax", passes_values)) {
        attention_softmax.insert(*softmax);
        attention_matmuls.insert(id);
        if (const auto scores = upstream(graph, *softmax, graph.node(id).op_type(), scales_scores)) {
          attention_matmuls.insert(*scores);
        }
      }
    }
    if (is_fused_attention(op)) ++fused_attention;
    if (is_recurrent(op)) ++result.recurrent_nodes;
    if (is_normalization(op)) ++result.normalizations;
    if (op == "Sub") {
      for (size_t p : graph.predecessors(id)) {
        if (graph.node(p).op_type() == "ReduceMean") {
          ++result.normalizations;
          break;
        }
      }
    }
  }
  result.attention_blocks = fused_attention + static_cast<int64_t>(attention_softmax.size());
  for (size_t id : attention_matmuls) result.attention_matmuls.push_back(graph.label(id));
  find_feed_forward(graph, result);

  const std::string counts = std::to_string(result.conv_nodes) + " Conv, " + std::to_string(result.matmul_nodes) +
                             " MatMul/Gemm, " + std::to_string(result.attention_blocks) + " attention blocks, " +
                             std::to_string(result.normalizations) + " normalizations, " +
                             std::to_string(result.recurrent_nodes) + " recurrent/loop nodes";
  if (result.recurrent_nodes > 0) {
    result.type = Architecture::kRecurrent;
    result.reason = "recurrent or loop nodes present (" + counts + ")";
  } else if (result.attention_blocks > 0 && result.matmul_nodes >= result.conv_nodes) {
    result.type = Architecture::kTransformer;
    result.reason = "attention blocks and MatMul/Gemm at least as many as Conv (" + counts + ")";
  } else if (result.attention_blocks > 0) {
    result.type = Architecture::kHybrid;
    result.reason = "a convolutional backbone with attention blocks: more Conv than MatMul/Gemm (" + counts + ")";
  } else if (result.conv_nodes > 0 && result.conv_nodes >= result.matmul_nodes) {
    result.type = Architecture::kCnn;
    result.reason = "Conv nodes at least as many as MatMul/Gemm, no attention block (" + counts + ")";
  } else {
    result.type = Architecture::kUnknown;
    result.reason = "no rule holds (" + counts + ")";
  }
  return result;
}

}  // namespace mixprec::analysis

namespace mixprec {

std::vector<std::string> feed_forward_nodes(const ArchitectureInference& architecture) {
  std::vector<std::string> nodes;
  const auto add = [&](const std::string& node) {
    if (std::ranges::find(nodes, node) == nodes.end()) nodes.push_back(node);
  };
  for (const MlpBlock& b : architecture.mlp_blocks) {
    add(b.up);
    add(b.down);
  }
  for (const AttentionProjection& p : architecture.attention_projections) add(p.node);
  return nodes;
}

}  // namespace mixprec
