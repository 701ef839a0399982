#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "mixprec/rewrite.h"

namespace mixprec::rewrite {

// Moves and adds Q/DQ pairs in `model`, insert_qdq's output of `prepared`, so that ONNX
// Runtime's CPU provider fuses every quantized node into an integer kernel; see
// place_for_ort_fusion.cpp. `assignment`, `stats` and `options` are the ones insert_qdq ran
// with; `prepared` gives the float biases to quantize again where a node's input scale
// changes. Returns the default-domain opset the inserted nodes need.
int64_t place_for_ort_fusion(onnx::ModelProto& model, const onnx::ModelProto& prepared,
                             const std::vector<NodeAssignment>& assignment, const CalibrationStats& stats,
                             const QuantizeOptions& options, const std::string& label, RewriteSummary& summary);

}  // namespace mixprec::rewrite
