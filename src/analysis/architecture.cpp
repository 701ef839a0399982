// Architecture inference: counts the op families that tell CNNs, transformers and recurrent
// networks apart, then applies the rules documented in mixprec/analysis.h.
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
