// The integer grid a weight spec gives a node's weight: the one place that turns a
// TensorQuantSpec into scales and zero points for a weight, so the rewrite (insert_qdq) that
// stores the codes and the algorithms that choose them (AdaRound, AdaQuant) round onto the
// same grid.
#pragma once

#include <string>

#include <onnx/onnx_pb.h>

#include "mixprec/config.h"
#include "mixprec/formats.h"
#include "mixprec/tensor.h"

namespace mixprec::config {

struct WeightGrid {
  QuantParams params;     // empty for float formats
  int64_t axis = -1;      // params.axis: the channel axis per channel, the reduction axis per group, else -1
  bool symmetric = true;  // power-of-two formats are always symmetric
};

// `weight` is `node`'s float weight and `spec` its integer or float spec: per group of
// spec.group_size along the op's reduction axis (ir::weight_reduction_axis) when the spec sets
// it, else per channel along spec.ch_axis (default: the op's output-channel axis) when the spec
// asks and the format allows it, else per tensor; symmetric unless the spec says otherwise. kBadInput (naming `label` and
// the node) when the axis is outside the weight's shape.
// With spec.reduce_range (8-bit integer formats, reduces_range()) the grid has half the levels:
// scales x 127/63 symmetric (codes in [-63, 63]), x 255/127 otherwise, zero points / as much.
WeightGrid weight_grid(const onnx::NodeProto& node, const TensorQuantSpec& spec, const Tensor& weight,
                       const std::string& label);
bool reduces_range(FormatId format);

}  // namespace mixprec::config
