// Jobs: what the CLI's quantize, dequantize and compare commands do, as library calls (run is
// in mixprec/run.h). Each job validates its inputs before any work, never modifies the input
// model, and writes outputs atomically (a failed job leaves nothing half-written).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "mixprec/analysis.h"
#include "mixprec/config.h"
#include "mixprec/evaluation.h"
#include "mixprec/metrics.h"
#include "mixprec/rewrite.h"

namespace mixprec {

struct QuantizeParams {
  // model_path, calibration (empty: calibration_data()'s rule with the config's
  // NumCalibSamples), progress; the evaluation data and criterion are not used.
  EvaluationSetup setup;
  ConfigSource config;
  std::string output_path;
  // The shape of the effective config written beside the model (OUTPUT.config.json); Quark's
  // fails before any work when the config holds what that shape cannot say.
  ConfigShape config_shape = ConfigShape::kMixprec;
  std::optional<CalibMethod> calib_method;  // overrides the config's methods
  // --fp-nodes / --fp-precision (keep_nodes_at): these nodes stay at BF16 or FP16.
  std::vector<std::string> fp_nodes;
  FormatId fp_precision = FormatId::kBFloat16;
  // --ffn-only (quantize_only_nodes): the config's global layer quantizes only the MLP and
  // attention projection MatMul/Gemm analysis finds in the prepared model; the rest stays float.
  bool ffn_only = false;
  // Read when it exists (statistics of this model; every preset of one model shares them),
  // else written after calibrating. Empty: neither.
  std::string stats_path;
  // Calibration runs on CPU (accuracy_session) with its threads; the written model must load on
  // CPU and, when another provider is named, on that provider too.
  DeploymentTarget deployment;
  // --make-static: the written model's inputs take the shapes of the calibration samples
  // (--input-shape / --image-size pin them) and every tensor gets its static shape, as the VAIML
  // compiler requires. Without it, a model whose declared shapes are all static is written with
  // every tensor's static shape, and checked to have no dynamic dim.
  bool make_static = false;
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
  size_t nodes = 0, nodes_integer = 0, nodes_fp8 = 0, nodes_bf16 = 0, nodes_fp16 = 0, nodes_block = 0, nodes_float = 0;
  std::vector<std::string> float_weights;  // describe_float_weights: ops whose weights stay float, and why
  PrepareSummary prepare;                            // prepare.cle, prepare.smooth_quant: when they ran
  std::optional<ScaleSearchSummary> scale_search;       // when the config asks for it
  std::optional<ReconstructionSummary> reconstruction;   // AdaRound/AdaQuant, when the config asks for it
  std::optional<BiasCorrectionSummary> bias_correction;  // when the config asks for it
  RewriteSummary rewrite;
  StaticShapeSummary static_shapes;
  // --ffn-only: the nodes the global layer went to, and the blocks they came from.
  std::vector<std::string> ffn_nodes;
  std::string ffn_summary;  // "2 MLP blocks, 4 attention projections"
  std::vector<std::string> warnings;
};

// Algorithms run in this order: CLE and SmoothQuant while preparing (before statistics are collected or read),
// then the rewrite, then AdaRound or AdaQuant and bias correction on the calibration data
// (which need the quantized model; their progress goes to setup.progress, one call per layer)
// and a second rewrite with the learned weights and corrected biases.
QuantizeReport quantize_job(const QuantizeParams& params);

struct DequantizeReport {
  std::string output_path;
  StripSummary strip;
  std::vector<std::string> warnings;
};

DequantizeReport dequantize_job(const std::string& model_path, const std::string& output_path);

struct CompareParams {
  // model_path: the reference (FP32) model; evaluation: the samples both models run on;
  // criterion; progress.
  EvaluationSetup setup;
  std::string candidate_path;  // the model judged against the reference
  // Both models run on this provider: compare is how a user checks a model on a runtime of
  // their choice (the accuracy-measuring workflows always use CPU).
  DeploymentTarget deployment;
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

// `mixprec patch`: the VitisAI provider's patch edits (VITIS.md's first exception to "a model
// changes only through a config"): com.microsoft Q/DQ retagged to the default domain where its
// opset allows, sub_block_shift_bits written on BFP nodes, and shape / data_type attributes on Extended Q/DQ and BFP/MX nodes from one
// run. The patched model is run on the same samples and its outputs must equal the input
// model's bit for bit (kInternal otherwise, nothing written); the input is never modified.
struct PatchParams {
  // model_path; evaluation: the samples the shapes are observed on and the outputs compared
  // (empty: see evaluation_data(), one seeded random sample by default).
  EvaluationSetup setup;
  std::string output_path;
};

struct PatchReport {
  std::string output_path;
  VaipPatchSummary summary;
  size_t samples = 0;
  std::string data_description;
  size_t outputs_compared = 0;  // outputs found bit-identical on every sample
  // Empty when the outputs were compared with the input model's; else why and against what.
  std::string reference;
  std::vector<std::string> warnings;
};

PatchReport patch_job(const PatchParams& params);

// mha-mx9: the ViT MHA-MX9 pipeline (src/rewrite/mha_mx9.h) on a float or QDQ ViT encoder, the
// rewritten model's outputs compared with the input model's on the same samples.
struct MhaMx9Params {
  // model_path; evaluation: the samples the outputs are compared on (empty: evaluation_data()'s
  // rule, four seeded random samples by default); its input_shapes pin dynamic input dims first.
  EvaluationSetup setup;
  std::string output_path;
};

struct MhaMx9Report {
  std::string output_path;
  MhaMx9Summary summary;
  std::vector<std::string> pinned_inputs;  // "x 1x3x224x224", for inputs --input-shape pinned
  size_t samples = 0;
  std::string data_description;
  std::vector<OutputMetrics> metrics;      // the rewritten model against the input model
  std::vector<std::string> warnings;
};

MhaMx9Report mha_mx9_job(const MhaMx9Params& params);

}  // namespace mixprec
