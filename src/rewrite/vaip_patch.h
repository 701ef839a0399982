// vaip_patch: the VitisAI provider's patch edits (vaip_patch.cpp says which).
#pragma once

#include <map>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "mixprec/rewrite.h"
#include "mixprec/tensor.h"

namespace mixprec::rewrite {

// The main-graph tensors whose shapes vaip_patch writes as attributes (outputs of Extended
// Q/DQ and BFP/MX nodes): the caller observes them in a run.
std::vector<std::string> vaip_patch_shape_tensors(const onnx::ModelProto& model);

// `model` with the edits applied; `observed` maps a tensor to the shape and type it had in a run.
// `label` names the model in errors.
onnx::ModelProto vaip_patch(const onnx::ModelProto& model, const std::map<std::string, ObservedTensor>& observed,
                            const std::string& label, VaipPatchSummary* summary = nullptr);

// Only the zero-point edit (bf16/fp16 codes' zero points in their type): a model that other
// tools left with a float32 or uint16 zero point may not run until it is made, and the other
// edits are checked against a run.
onnx::ModelProto vaip_fix_zero_points(const onnx::ModelProto& model, const std::string& label,
                                      VaipPatchSummary* summary = nullptr);

}  // namespace mixprec::rewrite
