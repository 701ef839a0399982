// Model analysis (pipeline step 1): what a model is before anything touches it — metadata, how
// (and how much) it is already quantized, its op mix, its inputs/outputs, its island structure
// and the task type that decides the accuracy metric of every later step.
//
// Contract: analyze_model() reads the ModelProto only; it never modifies it, never runs it, and
// needs no weights beyond the initializers' metadata. It visits subgraphs (If/Loop/Scan bodies):
// their nodes count everywhere below unless a field says "main graph". Malformed graphs (a node
// reading a name nobody defines, a name defined twice, a cycle) throw mixprec::Error kBadInput
// naming `model_path` and the node.
//
// Definitions used throughout:
// - *Compute node*: a node whose op is a compute op of the op table (is_compute_op()): Conv,
//   ConvTranspose, Gemm, MatMul, Einsum, attention ops, LSTM/GRU/RNN, ORT's fused variants, and
//   the quantized kernels (QLinearConv, QLinearMatMul, ConvInteger, MatMulInteger, QGemm, ...).
// - *Operands* of a compute node: its activation and weight inputs (e.g. Conv X and W, not B).
// - *Precision* of a compute node:
//     kQuantized  a quantized kernel (QOperator), or every present operand is dequantized: it
//                 comes from a dequantize op (DequantizeLinear in any domain, custom
//                 quantize-dequantize ops), possibly through layout-only ops (Reshape,
//                 Transpose, Squeeze, Unsqueeze, Flatten, Identity);
//     kBFloat16 / kFloat16
//                 every present operand comes (through layout-only ops) from a Cast to float
//                 whose input is declared bfloat16 / float16 (by a Cast, an initializer or a
//                 ValueInfo: a cast pair, or a low-precision initializer cast up);
//     kFloat      anything else, including partly quantized nodes (e.g. weight-only DQ).
// - *Cast pair*: a Cast to FLOAT whose input is produced by a Cast to BFLOAT16 or FLOAT16.
// - *Island*: a maximal group of compute nodes of one precision, connected through links; two
//   compute nodes are linked when they have the same precision and one reaches the other along
//   a data path whose intermediate nodes are all non-compute nodes (a node that owns a subgraph
//   is reached from the nodes producing that subgraph's outputs). Islands are listed in nested
//   topological order of their first node; first/last are the island's first and last nodes in
//   that order.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <onnx/onnx_pb.h>

namespace mixprec {

enum class QuantState {
  kFloat,         // no quantization found
  kQdq,           // QuantizeLinear/DequantizeLinear (default domain) around float ops; Q/DQ
                  // that only bound quantized kernels (a Q feeding only QOperator nodes, a DQ
                  // reading a QOperator output) belong to kQOperator instead
  kCastPairs,     // bf16/fp16 emulated with Cast-to-low / Cast-to-float pairs
  kQOperator,     // quantized kernels (QLinearConv, MatMulInteger, QGemm, ...)
  kCustomDomain,  // quantize/dequantize ops in a non-default domain (com.microsoft, com.amd.quark,
                  // com.vai.quantize, ...)
  kMixed,         // more than one of the above
};

// Precision of a compute node or island (see the definitions above).
enum class Precision { kFloat, kQuantized, kBFloat16, kFloat16 };

enum class TaskType { kClassification, kDetection, kRegression, kSequence, kUnknown };

// What kind of network the model is; decides which quantization plan fits (see
// infer_architecture rules below).
enum class Architecture { kCnn, kTransformer, kHybrid, kRecurrent, kUnknown };

const char* to_string(QuantState state);
const char* to_string(Precision precision);
const char* to_string(TaskType task);
const char* to_string(Architecture architecture);

// One dimension of a declared shape: a value, a symbolic name, or unknown (neither).
struct Dim {
  std::optional<int64_t> value;
  std::string param;  // dim_param when symbolic

  std::string to_string() const;  // "3", "N" or "?"
};

// A graph input or output as declared in the model.
struct TensorInfo {
  std::string name;
  std::string dtype;               // "float32", "int64", ... ("undefined" when not declared)
  std::optional<std::vector<Dim>> shape;  // nullopt when the rank is not declared
};

// "[N, 3, 224, 224]", "[]" for a scalar, "[*]" when the rank is unknown.
std::string dims_to_string(const std::optional<std::vector<Dim>>& shape);

struct QuantizationSummary {
  QuantState state = QuantState::kFloat;
  int64_t quantize_linear = 0;      // default-domain QuantizeLinear nodes
  int64_t dequantize_linear = 0;    // default-domain DequantizeLinear nodes
  int64_t cast_pairs_bf16 = 0;
  int64_t cast_pairs_fp16 = 0;
  int64_t qoperator_nodes = 0;      // quantized kernels and QLinear* element-wise ops
  int64_t custom_domain_nodes = 0;  // quantize/dequantize ops outside the default domain
  // Edge quantization: main-graph inputs read by a quantize op (the model takes float and
  // quantizes at its edge) and main-graph outputs produced by a dequantize op.
  int64_t edge_quantized_inputs = 0;
  int64_t edge_dequantized_outputs = 0;
  // Quantized element types seen (zero points, quantized operands, Q outputs, cast-pair
  // targets), where the model declares them; sorted, unique ("bfloat16", "int8", "uint8", ...).
  std::vector<std::string> dtypes;
};

// "op_type" for the default domain, "domain:op_type" otherwise.
struct OpCount {
  std::string op_type;
  int64_t count = 0;
};

// Compute nodes of one op type, by precision.
struct ComputeOpCount {
  std::string op_type;
  int64_t total = 0;
  int64_t quantized = 0;
  int64_t bf16 = 0;
  int64_t fp16 = 0;
  int64_t float32 = 0;
};

struct Coverage {
  int64_t compute_nodes = 0;
  int64_t quantized = 0;
  int64_t bf16 = 0;
  int64_t fp16 = 0;
  int64_t float32 = 0;
  double quantized_percent = 0;  // 100 * quantized / compute_nodes (0 without compute nodes)
  double emulated_percent = 0;   // 100 * (bf16 + fp16) / compute_nodes
};

// Coverage of the compute nodes of one graph: the main graph ("main") or an If/Loop/Scan body
// by its path ("If_0.then_branch", "If_0.then_branch/If_1.else_branch"); nested bodies count
// in their own row only.
struct GraphCoverage {
  std::string graph;
  Coverage coverage;
};

struct Island {
  Precision precision = Precision::kFloat;
  int64_t node_count = 0;
  std::string first_node;  // labels as ir node labels: name, or "<op>#<index>" when unnamed
  std::string last_node;
};

struct IslandSummary {
  std::vector<Island> islands;
  int64_t float_islands = 0;
  int64_t quantized_islands = 0;
  int64_t bf16_islands = 0;
  int64_t fp16_islands = 0;
};

struct TaskInference {
  TaskType type = TaskType::kUnknown;
  std::string reason;  // which rule fired, with the facts it used
};

// An MLP (feed-forward) block: a MatMul/Gemm with a constant weight, an activation, and the
// MatMul/Gemm with a constant weight it feeds (bias Adds, Q/DQ and casts between them allowed).
struct MlpBlock {
  std::string up;          // node labels
  std::string activation;  // "Gelu", "Gelu (decomposed: Erf)", "Gelu (tanh form)", "Swish (Sigmoid x Mul)", "Relu", ...
  std::string down;
};

// A MatMul/Gemm with a constant weight that makes an attention block's operand or reads its
// result: role "q", "k" (the two sides of Q.K^T), "v" (P.V's right side), "out" (reads P.V's
// result); a fused projection split after it has its roles joined: "q+k+v".
struct AttentionProjection {
  std::string node;
  std::string role;
};

struct ArchitectureInference {
  Architecture type = Architecture::kUnknown;
  std::string reason;  // the counts the rule used
  int64_t conv_nodes = 0;       // Conv, ConvTranspose and their quantized/fused forms
  int64_t matmul_nodes = 0;     // MatMul, Gemm and their quantized/fused forms
  int64_t attention_blocks = 0; // fused attention ops + Softmax nodes feeding a MatMul
  int64_t normalizations = 0;   // LayerNormalization-style ops + decomposed ones (ReduceMean feeding Sub)
  int64_t recurrent_nodes = 0;  // LSTM, GRU, RNN, Loop, Scan
  // Labels of the attention blocks' activation-by-activation MatMuls: the one reading the
  // Softmax (P.V) and the one whose scores feed it (Q.K^T, through scaling, masking and
  // layout ops). Node-label order, unique.
  std::vector<std::string> attention_matmuls;
  // The weight MatMuls of the feed-forward and attention parts (what an FFN-only quantization
  // quantizes), in graph (topological) order.
  std::vector<MlpBlock> mlp_blocks;
  std::vector<AttentionProjection> attention_projections;
};

struct ModelAnalysis {
  std::string model_path;
  int64_t ir_version = 0;
  std::map<std::string, int64_t> opsets;  // domain ("ai.onnx" for the default) -> version
  std::string producer_name;
  std::string producer_version;
  std::string graph_name;
  int64_t node_count = 0;  // all nodes, subgraphs included

  QuantizationSummary quantization;
  std::vector<OpCount> op_histogram;  // count descending, then op_type ascending
  std::vector<TensorInfo> inputs;     // main-graph inputs that are not initializers
  std::vector<TensorInfo> outputs;    // main-graph outputs
  std::vector<std::string> dynamic_dims;  // dynamic_dims(): empty when every declared shape is static
  std::vector<std::string> body_dynamic_dims;  // body_dynamic_dims(): inside If/Loop/Scan bodies
  std::vector<ComputeOpCount> compute_ops;  // total descending, then op_type ascending
  Coverage coverage;
  // One row per graph holding compute nodes, main graph first, then bodies in node order;
  // empty when the model has no body with compute nodes (the totals above say it all).
  std::vector<GraphCoverage> graph_coverage;
  IslandSummary islands;
  TaskInference task;
  ArchitectureInference architecture;
};

// Every dim of the main graph's inputs (initializers excluded), outputs and value_info that is
// not a positive number, as "'name' dim 2 ('height')" ("... dim 0 (unknown)", "... dim 1 (0)";
// "'name' (no shape)" for a tensor without one). Empty: the declared shapes are all static, as
// the VAIML compiler needs them.
std::vector<std::string> dynamic_dims(const onnx::ModelProto& model);

// QuantizeLinear nodes reading a graph input and DequantizeLinear nodes writing a graph output
// of `graph` (any domain: the op names are the same). analyze_model's edge counts; compile's
// probe counts them in an optimized graph.
struct EdgeQdqCount {
  int64_t quantized_inputs = 0, dequantized_outputs = 0;
};
EdgeQdqCount count_edge_qdq(const onnx::GraphProto& graph);
// The same for the inputs, outputs and value_info of every If/Loop/Scan body, each prefixed by
// its body's scope ("If_0.then_branch/'h' dim 0 (unknown)"; nested bodies "If_0.else_branch/Loop_3.body/").
std::vector<std::string> body_dynamic_dims(const onnx::ModelProto& model);

// Analyzes `model`; `model_path` only names the model in errors and in the result.
ModelAnalysis analyze_model(const onnx::ModelProto& model, const std::string& model_path);

// The weight MatMul/Gemm nodes of the MLP blocks (up and down) and the attention projections,
// each once, in the order the blocks list them: what an FFN-only quantization quantizes.
std::vector<std::string> feed_forward_nodes(const ArchitectureInference& architecture);

// True when the op table (src/ir/op_traits.cpp) marks (domain, op_type) as compute. "" and
// "ai.onnx" both mean the default domain.
bool is_compute_op(std::string_view domain, std::string_view op_type);

// Task-type rules, tried in this order on the main graph's outputs; the first that holds wins.
// The *head* of an output is the node producing it, looking through representation-only ops
// (Identity, Cast, quantize/dequantize); a class count C that is not a number (symbolic or
// unknown) counts as >= 2.
//   detection       >= 2 outputs and a NonMaxSuppression/TopK/ScatterND node at most
//                   kDetectionOpMaxDistance nodes upstream of an output (the output's
//                   producer is 1 node upstream).
//   classification  one output [N, C], C >= 2, head Softmax/LogSoftmax/Gemm/MatMul/Flatten;
//                   or one output [N] with head ArgMax.
//   sequence        one output [N, T, C], C >= 2, head Softmax/LogSoftmax/Gemm/MatMul; or one
//                   output [N, T] with head ArgMax.
//   regression      every output is a floating-point tensor of declared rank, consumed
//                   directly ([N, 1] scores, [N, C, H, W] maps, embeddings, ...).
//   unknown         otherwise (undeclared shapes or element types, integer outputs, ...).
inline constexpr int kDetectionOpMaxDistance = 8;

// Architecture rules, tried in this order over every node (subgraphs included); the first that
// holds wins. An *attention block* is a fused attention op (Attention, MultiHeadAttention,
// GroupQueryAttention, ...) or a Softmax whose output reaches a MatMul through layout and
// representation-only ops (softmax(QK^T)V).
//   recurrent    an LSTM, GRU or RNN node, or a Loop/Scan node;
//   transformer  attention blocks, and MatMul/Gemm nodes at least as many as Conv nodes;
//   hybrid       attention blocks, and more Conv than MatMul/Gemm nodes (a CNN backbone with
//                attention, e.g. SVTR, ViT-hybrids);
//   cnn          Conv nodes, at least as many as MatMul/Gemm nodes, no attention block;
//   unknown      otherwise (plain MLPs, no compute at all, ...).

}  // namespace mixprec
