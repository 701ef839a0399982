// ort_weight_quantization: the float weights ONNX Runtime quantizes itself when it loads a model.
//
// ONNX Runtime's WeightBiasQuantization (1.29, a level-1 transformer: every optimization level
// but none, before any execution provider takes its nodes) rewrites a Conv, ConvTranspose or
// Gemm whose input 0 is a per-tensor DequantizeLinear and whose only path out leads, through
// Relu/Clip at most, to a QuantizeLinear:
//
//   Before:  DQ(x) → Conv(W float32 initializer, b) → [Relu|Clip]* → Q
//   After:   DQ(x) → Conv(DQ(Q(W, s_w)), DQ(round(b / (s_x s_w)))) → [Relu|Clip]* → Q
//            s_w: int8, per tensor, symmetric over max |W|
//
// So a layer whose config keeps its weight float (a weight spec of null or Float32) next to an
// integer input runs int8 weights under ONNX Runtime, whatever the model says. This finds those
// layers in a rewritten model (bodies of If/Loop/Scan included, as the transformer recurses), so
// the rewrite can say so; it mirrors the transformer's conditions and changes nothing.
#pragma once

#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace mixprec::rewrite {

struct OrtQuantizedWeight {
  std::string node;        // ir::node_label: the name, or "<op>#<index>", scoped in bodies
  bool with_bias = false;  // its float bias gets int32 codes too, through a Round (opset 11)
};

// The nodes whose float32 weight initializer ONNX Runtime quantizes to int8 at load, in nested
// topological order. `label` names the model if its graph is malformed (ir::GraphView's kBadInput).
std::vector<OrtQuantizedWeight> ort_quantized_float_weights(const onnx::ModelProto& model, const std::string& label);

}  // namespace mixprec::rewrite
