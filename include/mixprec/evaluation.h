// The evaluation core: what every job that calibrates or measures accuracy shares.
//
// - EvaluationSetup: the model, the work dir, where calibration and evaluation samples come
//   from, the accuracy criterion and a progress callback. Every params struct of the jobs and
//   workflows (quantize, compare, run, explore, dry-run, ladder, requantize, guide, plan) holds
//   one by value and hands it down unchanged.
// - DeploymentTarget: where the model is meant to run: the device profile (formats allowed,
//   nominal speeds) and the ONNX Runtime execution provider with its options and threads.
//   Accuracy is always measured on ONNX Runtime's CPU provider (every format is emulated
//   exactly there); the provider serves only what is about deployment: compile, exec timing,
//   and the check that a produced model loads on it.
// - The calibration driver (one streaming pass), the model fingerprint statistics carry, and
//   the rank inference the rewrites need.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "mixprec/calibration.h"
#include "mixprec/devices.h"
#include "mixprec/metrics.h"
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

  // Neither files nor random samples: the user gave no data.
  bool empty() const { return data.files.empty() && data.random_samples == 0; }
};

std::unique_ptr<SampleSource> open_samples(const DataSpec& spec, const std::vector<InputSpec>& inputs,
                                           const std::string& model_path);

// Called after each sample of a pass: (done, total).
using ProgressFn = std::function<void(size_t, size_t)>;

// What "accurate enough" means: the element-wise tolerance of the pass rate and, optionally, a
// target that replaces the task's own criterion.
struct Criterion {
  Tolerance tolerance;                  // atol 0.015, rtol 0.01
  std::optional<AccuracyTarget> target; // nullopt: the task's criterion (metrics.h default_targets)
};

struct EvaluationSetup {
  std::string model_path;
  std::string work_dir;        // statistics, evaluated models, ledgers; jobs that write no work files ignore it
  DataSpec calibration;        // empty: see calibration_data()
  DataSpec evaluation;         // empty: see evaluation_data()
  Criterion criterion;
  ProgressFn progress;         // calibration (and comparison) progress
  // Bytes of evaluation samples and FP32 reference outputs a workbench holds in memory; the
  // samples beyond are spilled to a file in the work dir (a temp file without one) and read
  // back one at a time by every pass. Results do not depend on it.
  size_t eval_cache_bytes = size_t{1} << 30;
};

// The data calibration runs on. One rule for every command: the setup's calibration data when
// given; else its evaluation files, with a warning that calibrating on the evaluation samples
// flatters INT8; else `random_samples` seeded random samples (SPEC's UseRandomData, seed 0),
// with a warning that ranges from random data can mislead.
DataSpec calibration_data(const EvaluationSetup& setup, size_t random_samples);
// The data accuracy is measured on: the setup's evaluation data when given; else its
// calibration files, with a warning (no held-out samples); else kBadInput naming the model.
DataSpec evaluation_data(const EvaluationSetup& setup);

// What declare_static_shapes (evaluation/static_shapes.h) did to a model about to be written.
struct StaticShapeSummary {
  bool checked = false;             // the written model was made or kept static and checked
  bool inputs_pinned = false;       // --make-static pinned dynamic input dims
  std::vector<std::string> inputs;  // "x 1x3x640x640", when pinned
  size_t value_infos = 0;           // tensors whose static shape the model now declares
  std::vector<std::string> dynamic_in_input;  // the input model's dynamic dims (dynamic_dims)
  // If/Loop/Scan bodies: a run does not observe them, so ONNX shape inference (data
  // propagation on) declares what the main graph's shapes determine; what stays dynamic or
  // undeclared is listed (body_dynamic_dims) and warned about, not refused.
  size_t body_value_infos = 0;
  std::vector<std::string> body_dynamic;
};

struct DeploymentTarget {
  std::string device = "ve2";  // device profile (devices.h): stx, ve2, cpu
  std::string provider = "CPU";  // ONNX Runtime execution provider, short or full name
  std::map<std::string, std::string> provider_options;
  int threads = 0;             // intra-op threads, on every session (0: ONNX Runtime's default)

  // kBadInput naming the known devices when `device` is unknown.
  const DeviceProfile& profile() const;
  // A session on the deployment provider with every graph optimization (a deployment's).
  SessionOptions session(GraphOptimization optimization = GraphOptimization::kAll) const;
  bool on_cpu() const;  // the provider is ONNX Runtime's CPU provider
};

// A provider asked to build a session of a model a job produced (a deployment check).
struct RuntimeTrial {
  std::string runtime;         // "CPUExecutionProvider", or the provider asked for
  std::string model;           // which model it loaded
  bool ok = false;
  std::string detail;          // what it was used for, or why it failed
};
// The model at `model_path` on the deployment's provider (every optimization on). A failure is
// recorded in the trial and logged as a warning, not thrown.
RuntimeTrial try_on_provider(const DeploymentTarget& deployment, const std::string& model_path);

// The sessions accuracy is measured with: the CPU provider, basic graph optimizations (the
// graph stays close to what was written), the deployment's thread count. The rule lives here.
SessionOptions accuracy_session(const DeploymentTarget& deployment);

// A digest of the graph's structure (nodes, names, initializer shapes) and of the "mixprec.*"
// metadata marks a preparation leaves (CLE's): statistics carry it so a stats file made for
// another model, or for the same model without equalization, is refused.
std::string model_fingerprint(const onnx::ModelProto& model);

// `count` sample indices out of `total`, evenly spread and seeded: index k is drawn uniformly
// from the k-th of `count` equal strata of [0, total), so the subset covers the whole set
// (file order often groups similar samples) and the same seed gives the same subset. Sorted.
// count >= total gives every index.
std::vector<size_t> spread_subset(size_t total, size_t count, uint64_t seed);

struct CalibrateOptions {
  SessionOptions session;  // CPU (accuracy_session)
  size_t max_samples = 0;  // 0: every sample of the source; else spread_subset(size, max, seed)
  uint64_t seed = 0;       // of the subset
  ProgressFn progress;
  // The tensors observed (graph inputs or node outputs; see evaluation/exposure.h for the ones
  // a quantization reads). Empty: every graph input and node output.
  std::vector<std::string> tensors;
  size_t binning_threads = 0;  // beside the run's own thread; 0: one per core
};

// One streaming pass over `source`: min/max/histogram of every observed float tensor, and the
// rank of every observed tensor. The tensors stay inside ONNX Runtime (tap nodes hand them to
// the binning, runtime.h), so the run keeps its memory planning; binning overlaps the runs.
// Memory does not grow with the number of samples. The statistics' data_description says how
// many of how many samples were used.
CalibrationStats calibrate_model(const onnx::ModelProto& prepared, const std::string& label,
                                 const SampleSource& source, const CalibrateOptions& options = {});

// Ranks of the main graph's tensors: from ONNX's shape inference and ONNX Runtime's session
// metadata, and exactly from one run on `sample` when given (exporters often leave ranks to be
// found only at run time, e.g. behind a Reshape to a computed shape).
std::map<std::string, int64_t> infer_tensor_ranks(const onnx::ModelProto& model, const std::string& label,
                                                  const NamedTensors* sample = nullptr);

}  // namespace mixprec
