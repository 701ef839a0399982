// The workbench every search and comparison runs on: one model prepared once, its activation
// statistics (calibrated once, or read back from the work dir), and the FP32 reference outputs
// on the evaluation samples (run once). After that, evaluating a config is one graph rewrite
// from the cached statistics plus one evaluation pass; nothing re-runs calibration or the FP32
// model. explore, dry-run, ladder, requantize and guide share it.
//
// The evaluation samples and their references are held in memory up to the setup's
// eval_cache_bytes and spilled to a file in the work dir (a temp file without one) beyond it
// (evaluation/sample_store.h); every pass streams them back one sample at a time, with the
// same results as from memory.
//
// Every session it builds measures accuracy, so every one is an accuracy_session() (CPU,
// whatever the deployment's provider): the rule lives here, not in its callers.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "evaluation/cost_model.h"
#include "evaluation/recovery.h"
#include "mixprec/analysis.h"
#include "mixprec/calibration.h"
#include "mixprec/config.h"
#include "mixprec/devices.h"
#include "mixprec/evaluation.h"
#include "mixprec/macs.h"
#include "mixprec/metrics.h"
#include "mixprec/rewrite.h"
#include "mixprec/runtime.h"
#include "evaluation/sample_store.h"
#include "evaluation/stats_cache.h"

namespace mixprec {

struct WorkbenchOptions {
  PrepareOptions prepare;           // of the config the workbench serves (prepare_options)
  size_t calibration_samples = 0;   // NumCalibSamples of that config (0: every sample)
  // In the setup's work dir: read when it exists (same model only), written after calibrating.
  // Empty, or no work dir: neither.
  std::string stats_file = "stats.json";
  // The config the workbench serves, when it is not a preset: calibration covers the tensors it
  // reads beside every preset's (evaluation/exposure.h). A config built later that reads a
  // tensor the statistics lack gets it collected then (build()).
  std::optional<QuantConfig> config;
};

struct Evaluation {
  std::shared_ptr<const onnx::ModelProto> model;  // the evaluated graph
  std::vector<OutputMetrics> metrics;
  Verdict verdict;
  double psnr_db = kMaxDb;  // worst output
  double pass_rate = 1;     // worst output
  double seconds = 0;       // rewrite + session + evaluation pass
  size_t learned_layers = 0;  // the config's AdaRound / AdaQuant: layers learned for this build
  size_t reused_layers = 0;   // ... and layers taken from the learned-weights store
};

class Workbench {
 public:
  // Loads, analyzes and prepares the model (Constants to initializers, BatchNorm folding), then
  // calibrates (or reads the statistics) and caches the FP32 reference outputs. The data comes
  // from calibration_data() and evaluation_data(); the deployment gives the thread count.
  Workbench(const EvaluationSetup& setup, const DeploymentTarget& deployment, const WorkbenchOptions& options = {});

  const EvaluationSetup& setup() const { return setup_; }
  const TaskInference& task() const { return task_; }
  const onnx::ModelProto& prepared() const { return prepared_; }
  const CalibrationStats& stats() const { return stats_; }
  bool stats_reused() const { return stats_reused_; }
  const std::string& stats_path() const { return stats_path_; }
  double calibration_seconds() const { return calibration_seconds_; }
  double reference_seconds() const { return reference_seconds_; }
  size_t samples() const { return samples_->size(); }
  size_t spilled_samples() const { return samples_->spilled(); }  // read back from the spill file
  NamedTensors sample(size_t index) const { return samples_->inputs(index); }
  size_t evaluations() const { return evaluations_; }
  const std::string& data_description() const { return data_description_; }

  // The nodes `config` puts in integer or block formats (the layers a search may lift).
  std::vector<std::string> quantized_layers(const QuantConfig& config) const;
  // The prepared model quantized under `config` from the statistics; the statistics of tensors
  // it reads that calibration did not observe are collected first (and saved). The config's
  // AdaRound / AdaQuant and bias correction run on a copy of the prepared model first
  // (evaluation/recovery.h), AdaRound's layers taken from the learned-weights store where their
  // upstream and format are unchanged since an earlier build.
  onnx::ModelProto build(const QuantConfig& config);
  // What the last build's recovery algorithms did (empty when the config has none).
  const RecoveryRun& last_recovery() const { return last_recovery_; }
  // MACs of the prepared model's nodes at the first evaluation sample's input shapes (once).
  const MacEstimate& macs();
  // `model` (built here) as it is written to `output`: with every tensor's static shape when the
  // input model's declared shapes are all static (evaluation/static_shapes.h), as quantize does.
  onnx::ModelProto for_writing(onnx::ModelProto model, const std::string& output) const;
  // The format that sets each node's MAC rate under `config` on `device`: the slower there of
  // its activation and weight formats; nodes the config leaves in float are absent (float32).
  std::map<std::string, FormatId> node_formats(const QuantConfig& config, const DeviceProfile& device) const;
  // Expected compute time of `config` on `device` (evaluation/cost_model.h: MACs at the
  // device's nominal relative speeds plus the INT8 <-> float boundaries), absolute and relative
  // to full BF16 there (< 1: faster). kBadInput when the device cannot run one of the config's
  // formats.
  AssignmentCost cost(const QuantConfig& config, const DeviceProfile& device);
  double time_vs_full_bf16(const QuantConfig& config, const DeviceProfile& device);
  // The islands of `config` on `device`: runs of adjacent nodes on one side, by their members
  // among `candidates`.
  std::vector<std::set<std::string>> islands(const QuantConfig& config, const DeviceProfile& device,
                                             const std::set<std::string>& candidates);
  // Linear chains of `candidates` in data-flow order (CostModel::chains).
  std::vector<std::vector<std::string>> chains(const DeviceProfile& device, const std::set<std::string>& candidates);

  // Noise-to-signal power ratio of each named float tensor of the prepared graph under `config`,
  // against FP32, summed over the cached samples: sum (q - ref)^2 / sum ref^2. One pass of each
  // model with the tensors exposed (counted as two evaluations). Tensors that are not float
  // activations are absent.
  std::map<std::string, double> tensor_noise(const QuantConfig& config, const std::vector<std::string>& tensors);

  // The noise each node of `nodes` adds itself under `config` (evaluation/injected_noise.cpp):
  // its output in the quantized model against the same node run in float on the quantized
  // model's own inputs, as a noise-to-signal power ratio summed over the cached samples. One
  // pass of the quantized model with the nodes' tensors exposed (counted as one evaluation),
  // then each node alone. Nodes whose output is not a float tensor are absent.
  std::map<std::string, double> injected_noise(const QuantConfig& config, const std::vector<std::string>& nodes);

  // One rewrite and one pass over the cached samples, judged with the setup's criterion.
  Evaluation evaluate(const QuantConfig& config);
  // The same pass for a model built elsewhere (a quantized model given by the user).
  Evaluation evaluate_model(onnx::ModelProto model);

 private:
  void load_or_calibrate(onnx::ModelProto model);  // consumes the loaded model
  StatsRequest stats_request() const;
  void cache_reference();
  const CostModel& cost_model(const DeviceProfile& device);

  EvaluationSetup setup_;
  WorkbenchOptions options_;
  SessionOptions session_;  // accuracy_session(deployment)
  TaskInference task_;
  onnx::ModelProto prepared_;
  // What the statistics were collected on: the prepared model, or a graph of its own.
  std::optional<onnx::ModelProto> own_calibration_graph_;
  const onnx::ModelProto& calibration_graph() const { return own_calibration_graph_ ? *own_calibration_graph_ : prepared_; }
  CalibrationStats stats_;
  bool stats_reused_ = false;
  bool static_model_ = false;  // the input model's declared shapes are all static
  std::string stats_path_;
  double calibration_seconds_ = 0;
  double reference_seconds_ = 0;
  std::map<std::string, int64_t> ranks_;
  std::unique_ptr<SampleStore> samples_;  // evaluation inputs and FP32 references
  std::string data_description_;
  size_t evaluations_ = 0;
  std::unique_ptr<LearnedWeightStore> learned_;  // AdaRound's layers (the work dir's, else in memory)
  RecoveryRun last_recovery_;
  // The scale search's factors by the config they were searched for without its per-layer
  // choices and the algorithms that run after it: measured once, on the first build, and kept
  // for the search's steps and the other rungs like the statistics (a lifted layer's tensors
  // just lose theirs).
  std::map<std::string, std::map<std::string, float>> range_factors_;
  std::optional<MacEstimate> macs_;
  std::map<std::string, std::unique_ptr<CostModel>> cost_models_;  // by device name
  std::map<std::string, double> full_bf16_time_;                   // by device name
  std::string last_model_;  // serialized graph of the last evaluation, whose session is kept
  std::optional<Session> last_session_;
};

}  // namespace mixprec
