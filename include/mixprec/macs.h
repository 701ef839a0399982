// MAC estimation (analysis stage): how many multiply-accumulates each node of a model performs
// for one inference, from the model alone. The model is never run and never modified.
//
// Contract:
// - ONNX shape inference runs on a copy of the model whose graph inputs have their dims fixed:
//   an input named in `input_shapes` takes that shape (it must name a graph input that is not
//   an initializer and is (or is untyped, and becomes) a tensor, match a declared rank, agree
//   with every declared numeric dim and be > 0 everywhere); otherwise a symbolic or unknown first dim (the batch) is taken as 1. Other
//   symbolic dims stay symbolic, and shapes depending on them stay unknown. Nodes ONNX's
//   schemas do not cover (or that fail inference) leave their outputs to the declared
//   value_info, if any.
// - Every node of the main graph and of its subgraphs gets an entry, keyed by its ir node label
//   (the name; "<op>#<index>" when unnamed; subgraph nodes prefixed by their scope), as in
//   analyze_model(). A subgraph node counts once, as for one run of its body. Nodes sharing a
//   label (a repeated node name) share one entry holding their sum.
// - Formulas (W = weight input, elements = product of dims):
//     Conv, ConvInteger, QLinearConv, com.microsoft FusedConv:
//         output elements x prod(W dims[1:])        (C_in/group x prod(kernel))
//     ConvTranspose:  input elements x prod(W dims[1:])   (C_out/group x prod(kernel))
//     MatMul, MatMulInteger, QLinearMatMul:  output elements x K   (K = last dim of A)
//     Gemm, com.microsoft FusedGemm and QGemm:  M x N x K   (transA/transB honoured)
//     LSTM, GRU, RNN:  seq x batch x (W elements + R elements)   (every gate of every direction)
//     every other op:  0.
//   A node's `exact` is true when every shape its formula needs is known. When one is not, the
//   node gets the documented fallback, exact = false: the weight's element count (the MACs of
//   one output position / one row with batch 1), or 0 when the weight shape is unknown too.
//   Compute ops without a formula (Einsum, attention, ...; see is_compute_op()) get 0 with
//   exact = false: they do compute, this estimator just does not count it.
// - Bad `input_shapes` and malformed graphs throw Error kBadInput naming `model_path`.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace mixprec {

struct NodeMacs {
  std::string op_type;  // "domain:op_type" outside the default domain
  double macs = 0;
  bool exact = true;    // false: a fallback estimate (see the contract)
};

struct MacEstimate {
  std::map<std::string, NodeMacs> nodes;  // by node label
  double total = 0;                       // sum of nodes' macs
  bool exact = true;                      // every node exact
  // Assumptions and degradations, one line each: batch dims taken as 1, shape inference that
  // failed as a whole, nodes that fell back to an estimate. Callers surface them as warnings.
  std::vector<std::string> notes;
};

// `observed_shapes`: shapes of float tensors seen while the model ran (inside If/Loop/Scan
// bodies, where shape inference does not reach): declared in the copy before inference, so the
// shapes that follow from them are inferred too.
MacEstimate estimate_node_macs(const onnx::ModelProto& model,
                               const std::map<std::string, std::vector<int64_t>>& input_shapes = {},
                               const std::string& model_path = "",
                               const std::map<std::string, std::vector<int64_t>>& observed_shapes = {});

// How a runtime's optimized graph (ONNX Runtime's, saved with every optimization on) runs the
// compute of the model it was built from: each node of `source_macs` with MACs is looked up by
// name in `optimized` (the runtime keeps a fused node's name), and its MACs count as integer
// when it became an integer kernel (QLinearConv, QLinearMatMul, ConvInteger, MatMulInteger,
// QGemm, ...), as float when it is still a float op (emulated BF16/FP16 included), and as
// unmatched when the name is gone (merged into another kernel).
struct PartitionReport {
  double integer_macs = 0, float_macs = 0, unmatched_macs = 0;
  std::map<std::string, size_t> integer_kernels;  // op type -> nodes ("QLinearConv" -> 62)
  std::vector<std::string> float_nodes;           // "name (op_type)" of compute nodes left in float
  int64_t quantize_linear = 0, dequantize_linear = 0;  // left in the optimized graph
  double integer_share() const {
    const double total = integer_macs + float_macs + unmatched_macs;
    return total > 0 ? integer_macs / total : 0;
  }
};

PartitionReport partition_report(const MacEstimate& source_macs, const onnx::ModelProto& optimized);

}  // namespace mixprec
