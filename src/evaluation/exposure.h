// Which tensors calibration observes: the ones a quantization can read statistics of, under
// every preset and the run's own config, so that exploration and every preset reuse one
// statistics file while every other tensor stays internal to ONNX Runtime (its fusions and
// its memory planner keep working on them).
//
// A config reads the statistics of (rewrite/insert_qdq.cpp, rewrite/place_for_ort_fusion.cpp):
//   - the float activation inputs (not weight, not bias, not constants) of every node it puts
//     in an integer input format;
//   - every output of a node with an integer output_tensors spec;
//   - with OrtCpuFusion, the outputs of its integer nodes, or the output of the Relu/Clip that
//     is an output's only reader (the pair goes after it).
// The rule over-approximates (every output of an OrtCpuFusion integer node, whatever its op
// type): a tensor observed and never read costs binning time only. A tensor the rule misses
// cannot be quantized silently: the rewrite refuses a float activation without statistics.
#pragma once

#include <set>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "mixprec/config.h"

namespace mixprec {

// The tensors of `graph` (a prepared model) whose statistics quantizing it under `config` reads.
std::set<std::string> tensors_read(const QuantConfig& config, const onnx::ModelProto& graph, const std::string& label);

struct Exposure {
  std::vector<std::string> tensors;  // sorted; graph inputs and node outputs of the calibration graph
  // Of them, the outputs of a Conv/ConvTranspose/Gemm/MatMul whose only reader is an activation
  // ONNX Runtime would fuse into that op: observing them keeps the op and its activation apart.
  std::vector<std::string> pre_activations;
};

// On the calibration graph (evaluation/stats_cache.h): tensors_read of every preset (each on the
// graph its own preparation gives, affine folding included: those graphs' tensors are tensors of
// the calibration graph) and of `config` when given, plus the tensors whose rank an opset
// upgrade may ask for.
Exposure calibration_exposure(const onnx::ModelProto& calibration_graph, const QuantConfig* config,
                              const std::string& label);

}  // namespace mixprec
