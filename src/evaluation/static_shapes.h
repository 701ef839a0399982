// Static shapes, as the VAIML compiler requires them (VITIS.md): a model whose shapes are all
// static must stay so when quantized, and --make-static pins a dynamic one.
#pragma once

#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "mixprec/evaluation.h"
#include "mixprec/runtime.h"
#include "mixprec/tensor.h"

namespace mixprec {

// Runs `model` on `samples` (one or two; the first two are used), the main graph's node outputs
// tapped, and writes what the runs saw as the model's shapes: value_info for every tensor they
// computed (replacing the entries there were) and the outputs' shapes; with `pin_inputs`, the
// graph inputs' dims too. Then no declared dim may be dynamic (kInternal naming `output`). A
// tensor whose shape differs between the two samples has a data-dependent shape: kUnsupported
// naming it and its op, since no static shape holds it; so do samples of two input shapes.
StaticShapeSummary declare_static_shapes(onnx::ModelProto& model, const std::vector<NamedTensors>& samples, bool pin_inputs,
                                         const SessionOptions& session, const std::string& label,
                                         const std::string& output);

}  // namespace mixprec
