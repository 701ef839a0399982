// strip_edge_qdq: the model as it runs when the runtime does its edge quantization (the
// VAIML compiler's edge-quantization-in-rt=1): the standalone QuantizeLinear on each graph
// input and DequantizeLinear on each graph output leave the graph; the host feeds the codes and
// reads the codes. Used by --edge-quant-auto to compare both builds on a provider; never a
// delivered model (the model modification policy allows no such edit).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace mixprec::rewrite {

// A Q reading a main-graph input, or a DQ writing a main-graph output.
struct EdgeSite {
  bool input = true;
  std::string tensor;        // the graph input / output
  std::string node;          // label of the Q / DQ (ir::node_label: its name, or "<op>#<index>")
  int32_t codes = 0;         // onnx::TensorProto element type of the codes (0: unknown)
  std::vector<float> scale;  // what the runtime applies (empty when not an initializer)
  std::vector<int32_t> zero_point;
  int64_t axis = -1;         // per-axis parameters; -1 per tensor
  // Why the runtime cannot take it over; empty when it can (standalone):
  // - the Q's codes are dequantized into float arithmetic (a fake-quant pair: its rounding is an
  //   emulation, the float op needs float input);
  // - the codes are not integers (a bf16/fp16/fp8 Q/DQ emulates a float format);
  // - the graph input is read by other nodes too, or the codes' type is unknown.
  std::string excluded;
};

// Every edge Q/DQ of the main graph, standalone or not, inputs first, in graph order.
std::vector<EdgeSite> match_edge_qdq(const onnx::ModelProto& model, const std::string& label);

// `model` with the standalone `sites` removed: such an input becomes the codes' type and is read
// where the Q's output was; such an output is the codes the DQ read, under the output's name.
onnx::ModelProto strip_edge_qdq(const onnx::ModelProto& model, const std::vector<EdgeSite>& sites);

}  // namespace mixprec::rewrite
