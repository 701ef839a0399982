#pragma once

#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "mixprec/rewrite.h"

namespace mixprec::rewrite {

// Inserts Q/DQ pairs and cast pairs for every node's assignment, where each node reads its
// operands (no runtime-specific placement: see place_for_ort_fusion); see insert_qdq.cpp.
// Returns the default-domain opset the inserted nodes need.
int64_t insert_qdq(onnx::ModelProto& model, const std::vector<NodeAssignment>& assignment,
                   const CalibrationStats& stats, const QuantizeOptions& options, const std::string& label,
                   RewriteSummary& summary);

}  // namespace mixprec::rewrite
