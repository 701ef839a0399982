// Statistics collected once per model and reused by every preset and config of it.
//
// They are collected on the calibration graph: the model prepared with the config's BatchNorm
// folding (ConvertBNToConv) but without the affine folding (FoldConvAffine). Folding a Conv's
// following per-channel Mul/Add into it removes only the Conv's own output and keeps the
// downstream tensor's name and values, so every float tensor of an affine-folded preparation
// is a tensor of the calibration graph with the same values: XINT8 (no affine folding) and
// A16W8 / U8S8 (affine folding) read the same statistics file. A config with CLE or SmoothQuant
// is calibrated on its own prepared (equalized, smoothed) model: its ranges are those of the
// weights and activations it quantizes.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "mixprec/calibration.h"
#include "mixprec/config.h"
#include "mixprec/evaluation.h"
#include "mixprec/rewrite.h"

namespace mixprec {

// The preparation statistics are collected under, for a config's preparation.
PrepareOptions calibration_preparation(PrepareOptions prepare);

// prepare_model's channel_maxima for SmoothQuant: a float pass on the samples calibration takes
// of the setup's calibration data (`max_samples` as StatsRequest's).
ChannelMaximaFn smooth_quant_measurer(const EvaluationSetup& setup, const SessionOptions& session, size_t max_samples);

struct StatsRequest {
  std::string path;        // read when it exists (kBadInput when it is another model's), else
                           // written after collecting; empty: neither
  size_t max_samples = 0;  // NumCalibSamples (0: every sample; 100 random ones without data)
  SessionOptions session;  // accuracy_session()
  // The config the statistics serve, beside every preset (evaluation/exposure.h); nullptr:
  // the presets only.
  const QuantConfig* config = nullptr;
};

struct CachedStats {
  CalibrationStats stats;
  bool reused = false;     // read from `path`
  double seconds = 0;      // of the calibration pass; 0 when reused
};

// `calibration_graph` is prepare_model(model, calibration_preparation(...)) of the setup's
// model. The samples are calibration_data(setup, ...), resolved only when collecting.
// Calibration observes calibration_exposure(graph, request.config); the tensors a file holds
// are the ones its ranks name (every observed tensor has a rank). When a file lacks tensors the
// exposure asks for (statistics of an earlier run under other configs), they are collected on
// the same data and added (the file is rewritten); statistics collected on other data than
// this setup's are kBadInput naming the file.

CachedStats load_or_collect_stats(const onnx::ModelProto& calibration_graph, const EvaluationSetup& setup,
                                  const StatsRequest& request);

// Collects the statistics of those of `tensors` (names of the calibration graph) that `stats`
// lacks, on the setup's calibration data, adds them to `stats` and rewrites request.path when
// set. False when nothing was missing. kBadInput naming the file when `stats` came from other
// data than this setup's.
bool add_missing_stats(const onnx::ModelProto& calibration_graph, const EvaluationSetup& setup,
                       const StatsRequest& request, const std::vector<std::string>& tensors, CalibrationStats& stats);

// The rank of every tensor of `prepared`: inferred (infer_tensor_ranks, exactly from `sample`
// when given), then overridden by the ranks calibration saw (exact).
std::map<std::string, int64_t> rank_table(const onnx::ModelProto& prepared, const std::string& label,
                                          const CalibrationStats& stats, const NamedTensors* sample = nullptr);
// A lookup over a rank table the caller keeps alive.
RankLookup rank_lookup(const std::map<std::string, int64_t>& ranks);

}  // namespace mixprec
