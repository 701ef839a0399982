// Pipeline jobs: what the CLI's quantize, dequantize and compare commands do, as library calls.
// Each job validates its inputs before any work, never modifies the input model, and writes
// outputs atomically (a failed job leaves nothing half-written).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "mixprec/analysis.h"
#include "mixprec/calibration.h"
#include "mixprec/config.h"
#include "mixprec/metrics.h"
#include "mixprec/rewrite.h"
#include "mixprec/runtime.h"
#include "mixprec/sample_source.h"

namespace mixprec {

// Where samples come from: .npy/.npz files, image files or folders (decoded with `preprocess`,
// an image_preprocess_preset name), or seeded random data.
struct DataSpec {
  DataOptions data;
  std::string preprocess;      // empty: "imagenet", with a warning naming the choice
  int64_t image_height = 0;    // 0: from the model input (static dim, or --input-shape)
  int64_t image_width = 0;
};

std::unique_ptr<SampleSource> open_samples(const DataSpec& spec, const std::vector<InputSpec>& inputs,
                                           const std::string& model_path);

// Called after each sample of a pass: (done, total).
using ProgressFn = std::function<void(size_t, size_t)>;

// A digest of the graph's structure (nodes, names, initializer shapes): statistics carry it so
// a stats file made for another model is refused.
std::string model_fingerprint(const onnx::ModelProto& model);

struct CalibrateOptions {
  SessionOptions session;
  size_t max_samples = 0;  // 0: every sample of the source
  ProgressFn progress;
};

// One streaming pass over `source`: min/max/histogram of every float tensor of the main graph
// (graph inputs and every node output). Memory does not grow with the number of samples.
CalibrationStats calibrate_model(const onnx::ModelProto& prepared, const std::string& label,
                                 const SampleSource& source, const CalibrateOptions& options = {});

// Ranks of the main graph's tensors: from ONNX's shape inference and ONNX Runtime's session
// metadata, and exactly from one run on `sample` when given (exporters often leave ranks to be
// found only at run time, e.g. behind a Reshape to a computed shape).
std::map<std::string, int64_t> infer_tensor_ranks(const onnx::ModelProto& model, const std::string& label,
                                                  const NamedTensors* sample = nullptr);

struct QuantizeParams {
  std::string model_path;
  std::string output_path;
  std::string config_path;          // one of config_path / preset / config
  std::string preset;
  std::optional<QuantConfig> config;
  DataSpec calibration;
  std::optional<CalibMethod> calib_method;  // overrides the config's methods
  std::string stats_path;           // read when it exists, else written after calibrating
  SessionOptions session;
  ProgressFn progress;
};

struct QuantizeReport {
  std::string output_path;
  std::string config_path;          // the effective config, beside the model
  std::string stats_path;           // empty when statistics were not saved
  bool stats_reused = false;
  bool calibrated = false;
  size_t calibration_samples = 0;
  double calibration_seconds = 0;
  std::string data_description;
  size_t nodes = 0, nodes_integer = 0, nodes_bf16 = 0, nodes_fp16 = 0, nodes_float = 0;
  PrepareSummary prepare;
  RewriteSummary rewrite;
  std::vector<std::string> warnings;
};

QuantizeReport quantize_job(const QuantizeParams& params);

struct DequantizeReport {
  std::string output_path;
  StripSummary strip;
  std::vector<std::string> warnings;
};

DequantizeReport dequantize_job(const std::string& model_path, const std::string& output_path);

struct CompareParams {
  std::string reference_path;
  std::string model_path;
  DataSpec data;
  Tolerance tolerance;
  std::optional<AccuracyTarget> target;
  SessionOptions session;
  ProgressFn progress;
};

struct CompareReport {
  TaskInference task;
  size_t samples = 0;
  std::string data_description;
  std::vector<OutputMetrics> outputs;
  Verdict verdict;
  std::vector<std::string> warnings;
};

CompareReport compare_job(const CompareParams& params);

}  // namespace mixprec
