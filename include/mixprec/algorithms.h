// Accuracy-recovery algorithms (src/algorithms/): they change a float model's weights so that
// its quantized form loses less, without changing what the float model computes (CLE) or by
// measuring and compensating what quantization shifts (bias correction).
//
// The stage sits between config and rewrite: prepare_model() runs CLE and SmoothQuant on the
// prepared float model (so statistics are collected on the equalized, smoothed model), the jobs
// run AdaRound/AdaQuant and then bias correction on a prepared model and its first quantized
// rewrite, then rewrite again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "mixprec/config.h"
#include "mixprec/runtime.h"
#include "mixprec/sample_source.h"

namespace mixprec {

struct EqualizeSummary {
  size_t pairs = 0;            // head -> tail layer pairs equalized
  size_t mul_tails = 0;        // heads equalized into the constant Mul after them
  int64_t steps = 0;           // equalization sweeps run
  size_t clip6_replaced = 0;   // Clip(0, 6) turned into Relu (ReplaceClip6Relu)
  double last_change = 0;      // of the last sweep: mean over pairs of the mean |s - 1|
  double seconds = 0;
  std::vector<std::string> notes;  // "no Conv/Gemm pairs ..." when CLE does not apply
};

// Cross-layer equalization (algorithms/equalize_layers.cpp) of `model` in place. The model must
// be prepared (Constants as initializers). A model without pairs is left unchanged, with a note.
EqualizeSummary equalize_layers(onnx::ModelProto& model, const CleSettings& settings, const std::string& label);

struct SmoothQuantSummary {
  double alpha = 0.5;
  size_t groups = 0;           // activations smoothed (one s shared by the MatMuls reading one)
  size_t layers = 0;           // MatMul/Gemm weights whose rows were scaled
  size_t folded = 0;           // groups whose 1/s went into the producer (LayerNorm, Mul[+Add])
  size_t muls = 0;             // groups that got a float Mul by 1/s
  double max_scale_ratio = 0;  // the largest max(s) / min(s) of a group: how unequal the channels were
  size_t samples = 0;          // of the float pass that measured the activations
  double seconds = 0;          // the pass included
  std::vector<std::string> notes;  // "no MatMul/Gemm ..." when nothing applies; groups left alone
};

// max |x| per channel of the last axis, by tensor name.
using ChannelMaxima = std::map<std::string, std::vector<float>>;

// The activations smooth_quant() would smooth (algorithms/smooth_quant.cpp), whose channel
// maxima it needs. `prepared` as for equalize_layers.
std::vector<std::string> smooth_quant_activations(const onnx::ModelProto& prepared, const std::string& label);
// One float pass of `model` over `samples` of `source` (empty: all), the `tensors` tapped.
ChannelMaxima measure_channel_maxima(const onnx::ModelProto& model, const std::vector<std::string>& tensors,
                                     const SampleSource& source, const std::vector<size_t>& samples,
                                     const SessionOptions& session, const std::string& label);
// SmoothQuant of `model` in place from the measured maxima (a group without them is left alone,
// with a note); exact in FP32 up to rounding. See the file's header for the rewrite.
SmoothQuantSummary smooth_quant(onnx::ModelProto& model, const SmoothQuantSettings& settings, const ChannelMaxima& maxima,
                                const std::string& label);

// Learned layer weights kept across runs of reconstruct_layers (a search rewrites the same model
// many times, lifting a few layers each step): by a key that names everything the learned
// weights depend on (see reconstruct_layers), the weights written back. correct_bias's kModel
// keeps each layer's bias shift in the same store (as `weights`, keys of its own). find() gives nothing for
// an unknown key; what it gives must have the weight's element count (plus the bias's, with update_bias) or it is
// not used.
struct LearnedLayer {
  std::vector<float> weights;  // as written back (W' = s (C - z)), the weight's own order; with update_bias
                               // the learned bias follows
  double loss_nearest = 0;     // LayerReconstruction's, when it was learned
  double loss_learned = 0;
  size_t changed = 0;
};
class LearnedWeightStore {
 public:
  virtual ~LearnedWeightStore() = default;
  virtual std::optional<LearnedLayer> find(const std::string& key) = 0;
  virtual void store(const std::string& key, const LearnedLayer& layer) = 0;
};

struct BiasCorrectionOptions {
  BiasCorrectionMode mode = BiasCorrectionMode::kLayer;  // config.h
  SessionOptions session;          // accuracy_session()
  std::vector<size_t> samples;     // indices of `source` to measure on (empty: every sample)
  // kModel: each layer's applied shift is looked up and kept by a key of the data, the samples
  // and digests of the layer's output in the quantized and the float model (see correct_bias.cpp);
  // a level whose layers are all known runs no pass. kLayer (one pass in all) does not use it.
  LearnedWeightStore* store = nullptr;
  std::string data;                // what `source` is (its description, files and preprocessing)
  // kModel: the float model whose outputs the corrections aim at (null: `prepared` as it comes).
  // After AdaRound or AdaQuant, `prepared` holds the learned weights, which already lean against
  // the upstream's error; measured against them, bias correction would take that back. Same node
  // and initializer names as `prepared`. kLayer does not use it (see correct_bias.cpp).
  const onnx::ModelProto* reference = nullptr;
};

struct BiasCorrectionSummary {
  size_t layers = 0;               // biases corrected
  size_t reused = 0;               // of those, shifts taken from the store
  size_t passes = 0;               // passes over the samples (the float reference's included)
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

// Bias correction (algorithms/correct_bias.cpp): for every Conv/ConvTranspose/Gemm of `prepared` with float
// initializer weights that rewrite(prepared) quantizes, the mean over samples, batch and
// spatial axes of (float output - quantized output) on `source` is added to that node's bias in
// `prepared` (a layer without bias gets one). kModel: the models' outputs, level by level with
// the upstream layers already corrected; kLayer: the layer alone, float against quantized on
// the quantized model's own input. Rewrite `prepared` again afterwards.
BiasCorrectionSummary correct_bias(onnx::ModelProto& prepared, const RewriteFn& rewrite, const SampleSource& source,
                                   const BiasCorrectionOptions& options, const std::string& label);


struct ReconstructionOptions {
  SessionOptions session;          // accuracy_session()
  std::vector<size_t> samples;     // indices of `source` to learn on (empty: every sample)
  // The layers' specs: the weight grid of a node is the one its assignment's weight spec gives
  // (config/weight_grid.h), the grid the rewrite stores the codes on.
  const std::vector<NodeAssignment>* assignment = nullptr;
  std::function<void(size_t done, size_t total)> progress;  // after each layer
  // Where learned weights are looked up before a layer is learned and kept after (none: every
  // layer is learned). `data` names the samples (their source), which the key includes.
  LearnedWeightStore* store = nullptr;
  std::string data;
};

struct LayerReconstruction {
  std::string node;
  size_t weights = 0;          // elements learned (the grid's anchors excluded)
  size_t columns = 0;          // columns of X the loss is measured on (after subsampling)
  double loss_nearest = 0;     // ||(W_q - W) X||^2 / columns with nearest rounding
  double loss_learned = 0;     // the same with the learned codes
  size_t changed = 0;          // codes that differ from nearest rounding
  double seconds = 0;          // statistics + optimization of this layer
  bool reused = false;         // taken from the store: the losses are those it was learned with
  // selective_update: the quantized model's output error with this layer's weights written back
  // (algorithms/output_error.h), and whether they went back because it was not below the error
  // before them.
  double output_loss = 0;
  bool rejected = false;
  double learning_rate = 0;    // the rate it learned at (lr_adjust's when its loss_nearest per output is above the threshold)
};

struct ReconstructionSummary {
  ReconstructionMethod method = ReconstructionMethod::kAdaRound;
  int64_t iterations = 0;
  double drop_ratio = 1;       // ReconstructionSettings::drop_ratio
  bool update_bias = false;    // ReconstructionSettings::update_bias
  size_t biases = 0;           // update_bias: layers whose bias was learned too
  bool selective_update = false;  // ReconstructionSettings::selective_update
  size_t rejected = 0;         // selective_update: layers written back and then given their weights back
  double output_loss_before = 0;  // selective_update: the quantized model's output error before any update
  double output_loss_after = 0;   // and after the updates kept
  std::optional<ReconstructionSettings::LearningRateAdjust> lr_adjust;  // ReconstructionSettings::lr_adjust
  size_t lr_adjusted = 0;         // lr_adjust: layers above its threshold, learned at its rate
  size_t layers = 0;           // layers whose learned weights were written back
  size_t reused = 0;           // of those, taken from the store (learned by an earlier run)
  size_t levels = 0;           // rewrite rounds
  size_t passes = 0;           // passes over the samples (a level whose layers are all stored has none)
  size_t samples = 0;
  std::vector<LayerReconstruction> per_layer;
  double seconds = 0;
  std::vector<std::string> notes;  // "no ... layer" when nothing applies; layers skipped, and why
};

// AdaRound / AdaQuant (algorithms/adaround.cpp, adaquant.cpp over layer_reconstruction.cpp):
// for every Conv/ConvTranspose/Gemm/MatMul of `prepared` whose float initializer weight rewrite(prepared)
// stores as integer codes, the codes minimising ||W_q X^ - W X||^2 on the layer's input X^ in the
// quantized model (level by level, the upstream layers' learned codes already in place; X the
// float model's input with ReconstructionTarget::kFloatOutput, X^ itself otherwise) are
// learned and written back into `prepared` as W' = scale * (code - zero point), which the
// rewrite quantizes to exactly those codes (checked; a layer where it would not keeps its
// weights, with a note). Rewrite `prepared` again afterwards.
ReconstructionSummary reconstruct_layers(onnx::ModelProto& prepared, const RewriteFn& rewrite, const SampleSource& source,
                                         const ReconstructionSettings& settings, const ReconstructionOptions& options,
                                         const std::string& label);

struct ScaleSearchOptions {
  SessionOptions session;          // accuracy_session()
  std::vector<size_t> samples;     // indices of `source` to search on (empty: every sample)
  // Indices of other samples of `source` that judge the result: shifts that do not lower their
  // output error are not kept (a note says so). Empty: not judged.
  std::vector<size_t> validation;
  std::function<void(size_t done, size_t total)> progress;  // after each tensor
  // The rewrite with the shifts found (tensor -> n): its loss on the same samples is measured
  // (ScaleSearchSummary::loss_rebuilt); shifts whose rewrite does not lower the loss are not
  // kept, and a rewrite off the searched loss by over 1 % is a note. Unset: not checked.
  std::function<onnx::ModelProto(const std::map<std::string, int>& shifts)> rebuild;
};

struct ScaleSearchSummary {
  size_t tensors = 0;              // activations searched
  std::map<std::string, int> shifts;  // tensor -> n: its range (and scale) times 2^n; only n != 0
  size_t trials = 0;               // passes over the samples
  size_t biases = 0;               // int32 biases requantized with their input's moved scale, as the rewrite does
  size_t samples = 0;
  double loss_before = 0;          // sum over float outputs of error power / output power
  double loss_after = 0;
  std::optional<double> loss_rebuilt;  // ScaleSearchOptions::rebuild's model's loss
  size_t validation_samples = 0;
  std::optional<double> validation_before;  // the held-out samples' loss without and with the shifts found
  std::optional<double> validation_after;
  bool rejected = false;           // the held-out samples or the rewrite did not gain: shifts is empty
  double seconds = 0;
  std::vector<std::string> notes;  // pairs not searched, or nothing to search
};

// Activation scale search (algorithms/scale_search.cpp): on `quantized` (a rewrite of a model
// whose float form is `reference`), the power-of-two shift of each main-graph activation's
// scale that lowers the model's output error on `source`, by coordinate descent in graph order.
// Give the shifts to the rewrite as QuantizeOptions::activation_range_factors (2^n) and rewrite.
ScaleSearchSummary search_activation_scales(const onnx::ModelProto& quantized, const onnx::ModelProto& reference,
                                            const SampleSource& source, const ScaleSearchSettings& settings,
                                            const ScaleSearchOptions& options, const std::string& label);

// The op types (default domain) bias correction works on (Conv/ConvTranspose/Gemm), for what
// counts them (the plan's costs and recovery ladder); AdaRound/AdaQuant's are
// reconstructed_op_types() (config.h).
std::span<const char* const> bias_corrected_op_types();

}  // namespace mixprec
