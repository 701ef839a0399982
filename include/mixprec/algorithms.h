// Accuracy-recovery algorithms (src/algorithms/): they change a float model's weights so that
// its quantized form loses less, without changing what the float model computes (CLE) or by
// measuring and compensating what quantization shifts (bias correction).
//
// The stage sits between config and rewrite: prepare_model() runs CLE on the prepared float
// model (so statistics are collected on the equalized model), the jobs run bias correction on
// a prepared model and its first quantized rewrite, then rewrite again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "mixprec/config.h"
#include "mixprec/runtime.h"
#include "mixprec/sample_source.h"

namespace mixprec {

struct EqualizeSummary {
  size_t pairs = 0;            // head -> tail layer pairs equalized
  int64_t steps = 0;           // equalization sweeps run
  size_t clip6_replaced = 0;   // Clip(0, 6) turned into Relu (ReplaceClip6Relu)
  double last_change = 0;      // of the last sweep: mean over pairs of the mean |s - 1|
  double seconds = 0;
  std::vector<std::string> notes;  // "no Conv/Gemm pairs ..." when CLE does not apply
};

// Cross-layer equalization (algorithms/equalize_layers.cpp) of `model` in place. The model must
// be prepared (Constants as initializers). A model without pairs is left unchanged, with a note.
EqualizeSummary equalize_layers(onnx::ModelProto& model, const CleSettings& settings, const std::string& label);

struct BiasCorrectionOptions {
  BiasCorrectionMode mode = BiasCorrectionMode::kLayer;  // config.h
  SessionOptions session;          // accuracy_session()
  std::vector<size_t> samples;     // indices of `source` to measure on (empty: every sample)
};

struct BiasCorrectionSummary {
  size_t layers = 0;               // biases corrected
  BiasCorrectionMode mode = BiasCorrectionMode::kLayer;
  size_t levels = 0;               // rewrite + pass rounds (layers of one level share one)
  size_t damped_channels = 0;      // channels whose correction was limited (see correct_bias.cpp)
  size_t samples = 0;
  double mean_abs_shift = 0;       // over corrected channels, before damping
  double seconds = 0;
  std::vector<std::string> notes;
};

// The quantization rewrite of a prepared float model (the caller's config, statistics and
// options bound in); it must keep node names and the names of the Conv/Gemm outputs.
using RewriteFn = std::function<onnx::ModelProto(const onnx::ModelProto& prepared)>;

// Bias correction (algorithms/correct_bias.cpp): for every Conv/Gemm of `prepared` with float
// initializer weights that rewrite(prepared) quantizes, the mean over samples, batch and
// spatial axes of (float output - quantized output) on `source` is added to that node's bias in
// `prepared` (a layer without bias gets one). kModel: the models' outputs, level by level with
// the upstream layers already corrected; kLayer: the layer alone, float against quantized on
// the quantized model's own input. Rewrite `prepared` again afterwards.
BiasCorrectionSummary correct_bias(onnx::ModelProto& prepared, const RewriteFn& rewrite, const SampleSource& source,
                                   const BiasCorrectionOptions& options, const std::string& label);

}  // namespace mixprec
