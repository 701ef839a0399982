// run: the FP32 baseline. Runs a model over samples on one execution provider, measures
// per-run latency, and optionally saves the outputs.
#pragma once

#include <string>
#include <vector>

#include "mixprec/evaluation.h"
#include "mixprec/input_spec.h"
#include "mixprec/runtime.h"

namespace mixprec {

struct RunParams {
  EvaluationSetup setup;        // model_path, and the samples in `evaluation`
  DeploymentTarget deployment;  // the provider the latency is of, every graph optimization on
  size_t warmup_runs = 1;
  // Timed runs cycle over the samples until at least this many were made (latency figures
  // from 2 samples are noise); every sample runs at least once.
  size_t min_timed_runs = 10;
  // .npz of every output: one array per output name, the samples concatenated along axis 0
  // when their shapes agree past axis 0, else one array per sample named "NAME#INDEX".
  std::string save_outputs_path;
};

struct LatencyStats {
  size_t runs = 0;
  double min_ms = 0, median_ms = 0, mean_ms = 0, p90_ms = 0, max_ms = 0;
};

struct RunReport {
  std::string model_path;
  std::string provider;
  std::string runtime_version;
  std::string data_description;
  std::vector<InputSpec> inputs;         // as fed (resolved shapes of the first sample)
  std::vector<InputSpec> outputs;        // as produced by the first sample
  size_t samples = 0;
  LatencyStats latency;
  double inferences_per_second = 0;      // 1000 / mean latency
  double items_per_second = 0;           // inferences/s times the first input's axis-0 size
  double session_create_ms = 0;
  std::string saved_outputs_path;        // empty when not saved
  std::vector<std::string> warnings;
};

RunReport run_model(const RunParams& params);

// Percentile-free summary of timings in milliseconds (median of an even count is the mean
// of the middle two). Empty input → all zeros.
LatencyStats summarize_latency(std::vector<double> times_ms);

}  // namespace mixprec
