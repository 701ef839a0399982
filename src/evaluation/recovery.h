// The accuracy-recovery algorithms that run after the rewrite (AdaRound / AdaQuant, then bias
// correction), as quantize and the workbench (explore, guide, requantize) both run them: on the
// calibration samples (calibration_data(), NumCalibSamples spread over them), each changing the
// prepared model, which is rewritten again afterwards.
//
//   Before:  prepared (float), rewrite(prepared) = the quantized model with nearest codes
//   After:   prepared with learned weights and corrected biases; rewrite(prepared) is the model
//
// AdaRound's learned weights, and the whole-model bias correction's shifts, can be kept in a
// LearnedWeightStore: the work dir's (learned_weights/, one file per layer and key) or one in
// memory. A search's steps then learn or measure only the layers whose upstream or format
// changed since a step before.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "mixprec/algorithms.h"
#include "mixprec/config.h"
#include "mixprec/evaluation.h"
#include "mixprec/runtime.h"

namespace mixprec {

struct RecoveryRun {
  std::optional<ScaleSearchSummary> scale_search;
  std::optional<ReconstructionSummary> reconstruction;
  std::optional<BiasCorrectionSummary> bias_correction;
  bool changed = false;  // prepared was changed: rewrite it again
};

// Runs `recipe`'s scale search, reconstruction and bias correction on `prepared` (in place).
// The scale search's factors go into `range_factors`, which must be the map the `rewrite`
// reads (its QuantizeOptions::activation_range_factors), so that the algorithms after it and
// the caller's last rewrite see them. Nothing to run: an empty result.
// `untouched`: the caller's own copy of `prepared` as it comes, if it keeps one (the workbench
// does): bias correction (model) after AdaRound/AdaQuant aims at it. Without it, that recipe
// copies `prepared` before the reconstruction.
RecoveryRun recover_accuracy(onnx::ModelProto& prepared, const RewriteFn& rewrite, const AlgorithmRecipe& recipe,
                             const std::vector<NodeAssignment>& assignment, const EvaluationSetup& setup,
                             size_t calibration_samples, const SessionOptions& session, LearnedWeightStore* store,
                             std::map<std::string, float>& range_factors, const std::string& label,
                             const onnx::ModelProto* untouched = nullptr);

// Learned weights in files under `dir` (created on the first store): DIR/KEY.f32, a text header
// line then the floats. A file that cannot be read back whole is not used (a warning says so)
// and is learned again; a store that cannot be written warns and goes on.
class LearnedWeightDir : public LearnedWeightStore {
 public:
  explicit LearnedWeightDir(std::filesystem::path dir) : dir_(std::move(dir)) {}
  std::optional<LearnedLayer> find(const std::string& key) override;
  void store(const std::string& key, const LearnedLayer& layer) override;

 private:
  std::filesystem::path dir_;
  bool warned_write_ = false;
};

// The same in memory (a workbench without a work dir).
class LearnedWeightMemory : public LearnedWeightStore {
 public:
  std::optional<LearnedLayer> find(const std::string& key) override;
  void store(const std::string& key, const LearnedLayer& layer) override { layers_[key] = layer; }

 private:
  std::map<std::string, LearnedLayer> layers_;
};

}  // namespace mixprec
