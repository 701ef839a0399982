// mha_mx9: the ViT MHA-MX9 pipeline (VITIS.md's second exception to "a model changes only
// through a config"): four graph edits for ViT encoders on the NPU, each followed by ONNX shape
// inference (data propagation on; custom-domain quant ops take their first input's shape) and
// the static-shape check.
//   1. split_fused_qkv:  X -> MatMul(W [D, 3D]) [-> Add(b [3D])] -> Split(last axis, 3) -> q, k, v
//                        becomes three MatMuls X -> MatMul(W_q) [-> Add(b_q)] -> q, ... with their
//                        output shapes declared (never -1);
//   2. strip_attention_qdq: Q -> DQ pairs on the attention path (the inputs of Q.K^T and P.V, and
//                        every tensor from Q.K^T through its scaling, mask and Softmax to P.V)
//                        are bypassed: that path stays float before MX9 wraps it;
//   3. wrap_attention_mx9: both operands of Q.K^T and P.V through com.amd.quark
//                        BFPQuantizeDequantize in MX9 (to_bfp_prime, 16 bits), blocks along the
//                        product's reduction axis (A: its last axis, B: its second-to-last);
//   4. residual_adds_to_bf16: each residual Add (two computed inputs, off the attention path)
//                        computes in BF16: its inputs and its output through Cast(bf16) ->
//                        Cast(float) pairs (the exact BF16 emulation the BF16 format uses).
// The model must have static input shapes (pin them first); a step that finds nothing to do
// says so. An attention MatMul or fused projection of an unknown shape is left as it is, named.
#pragma once

#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "mixprec/rewrite.h"

namespace mixprec::rewrite {

// The pipeline on `model` (never changed): the rewritten model. kBadInput naming `label` when
// the model has no attention block or a dynamic input dim; kInternal when a step leaves a
// tensor without a static shape (naming it and the step).
onnx::ModelProto mha_mx9(const onnx::ModelProto& model, const std::string& label, MhaMx9Summary* summary = nullptr);

// ONNX shape inference with data propagation on `model`, in place, then every custom-domain
// node without an inferred output shape takes its first input's (repeated until nothing
// changes). Returns the tensors (node outputs of the main graph) whose shape is not fully
// static afterwards: "name (op)".
std::vector<std::string> infer_static_shapes(onnx::ModelProto& model);

}  // namespace mixprec::rewrite
