// Quark-style quantization configuration: load/save JSON in two shapes, presets by name, and
// node selection (which layer gets which formats).
//
// mixprec's shape (SPEC.md's, written by default):
//   { "global_config": LAYER, "specific_layer_config": [ {"target_node_names": [...],
//     "layer_config": LAYER}, ... ], "layer_type_config": [ {"op_types": ["Conv", ...],
//     "layer_config": LAYER | null}, ... ], "exclude": {"node_names": [regex...],
//     "subgraphs": [[start, end], ...]}, "algo_config": [...], "use_external_data_format": bool,
//     "extra_options": {...} }
//   LAYER = { "input_tensors": SPEC, "weight": SPEC, "bias": SPEC, "output_tensors": SPEC }
//   SPEC  = { "spec": "XInt8Spec" | "Int8Spec" | ..., "params": { "symmetric": bool,
//             "per_channel": bool, "ch_axis": int, "calib_method": "MinMax" | ... } }
//   A LAYER key may be null or absent: that tensor stays in float. "spec" is a spec name of the
//   format table (format_from_name also accepts its short names, "int8"); saving writes spec names.
//   layer_type_config, algo_config and use_external_data_format are written only when set, so
//   configs without them keep SPEC.md's shape; a layer_type_config entry must state its
//   layer_config (null: its op types stay in float).
// Only these shapes load: specific_layer_config must be a list (Quark's dict form is an error
// that says to use the list-of-objects form) and each exclude.subgraphs entry a [start, end]
// pair of node names. Unknown specs and calibration methods, malformed JSON and values of the
// wrong type are errors (kBadInput naming the file and the key path, e.g.
// "cfg.json: extra_options.NumCalibSamples must be an integer"); so are invalid regexes.
// Unknown keys at any level and unknown extra options are a visible warning (log_warning) and
// are kept so that saving preserves them.
//
// Quark's shape (what amd/Quark's ONNX QConfig.to_dict() writes and from_dict() reads, and what
// Olive's Quark pass takes) is read too, and written on request (ConfigShape::kQuark); see
// src/config/quark_config.cpp for its mapping onto these structs.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>
#include <onnx/onnx_pb.h>

#include "mixprec/calibration.h"
#include "mixprec/enum_names.h"
#include "mixprec/formats.h"

namespace mixprec {

struct TensorQuantSpec {
  FormatId format = FormatId::kFloat32;
  std::optional<bool> symmetric;           // unset: format default / ActivationSymmetric
  bool per_channel = false;
  std::optional<int64_t> ch_axis;          // unset: the op's weight output-channel axis
  // Weights: one scale per group of this many consecutive weights along the op's reduction
  // (input-channel) axis, ONNX's blocked DequantizeLinear (Quark's QuantGranularity.Group);
  // takes precedence over per_channel. Unset: per channel or per tensor.
  std::optional<int64_t> group_size;
  // Weights of an 8-bit integer format on half the code range ([-63, 63] symmetric, [0, 127]
  // otherwise), ONNX Runtime's reduce_range: x86 CPUs without VNNI add u8 x s8 products in
  // int16 pairs that saturate (vpmaddubsw), which 7-bit weights cannot reach.
  bool reduce_range = false;
  std::optional<CalibMethod> calib_method; // unset: extra_options.CalibMethod
  nlohmann::ordered_json unknown_params = nlohmann::ordered_json::object();
  nlohmann::ordered_json unknown_keys = nlohmann::ordered_json::object();  // beside spec/params

  bool operator==(const TensorQuantSpec&) const = default;
};

// Formats for one layer's tensors; unset means "left in float".
struct LayerConfig {
  std::optional<TensorQuantSpec> input_tensors;
  std::optional<TensorQuantSpec> weight;
  std::optional<TensorQuantSpec> bias;
  std::optional<TensorQuantSpec> output_tensors;
  nlohmann::ordered_json unknown_keys = nlohmann::ordered_json::object();

  bool operator==(const LayerConfig&) const = default;
};

struct LayerOverride {
  // A pattern that starts with '^' and contains ".*" is a regex (RE2 syntax, full match);
  // anything else is an exact node name.
  std::vector<std::string> target_node_names;
  LayerConfig layer_config;
  nlohmann::ordered_json unknown_keys = nlohmann::ordered_json::object();

  bool operator==(const LayerOverride&) const = default;
};

// Formats for every node of some op types (Quark's layer_type_config). nullopt: those nodes stay
// in float, excluded as Quark's null layer excludes them (no specific_layer_config entry brings
// them back).
struct LayerTypeOverride {
  std::vector<std::string> op_types;  // exact op_type names ("Conv", "Gemm")
  std::optional<LayerConfig> layer_config;
  nlohmann::ordered_json unknown_keys = nlohmann::ordered_json::object();

  bool operator==(const LayerTypeOverride&) const = default;
};

struct ExcludeConfig {
  std::vector<std::string> node_names;                            // regexes (full match)
  // Start node, end node: every main-graph node on a data path from start to end, both
  // included, is excluded. Names that match no node are an error.
  std::vector<std::pair<std::string, std::string>> subgraphs;
  nlohmann::ordered_json unknown_keys = nlohmann::ordered_json::object();

  bool operator==(const ExcludeConfig&) const = default;
};

// How bias correction measures a layer's shift (algorithms/correct_bias.cpp). kLayer (the
// default): the layer alone, in float on the quantized model's own input, against its
// quantized form; one pass. kModel: the float model's output against the quantized model's,
// level by level with the upstream already corrected; one rewrite and pass per level, and it
// also takes back what the quantized Mul/Add/pooling between layers shift. Measured on the
// PP-OCR models (XINT8, 320x320 det): det +3.9 dB with kLayer, +2.0 dB with kModel (and 20x
// the time); cls -1.5 dB with kLayer, +5.7 dB with kModel.
enum class BiasCorrectionMode { kModel, kLayer };
const EnumNames<BiasCorrectionMode>& bias_correction_mode_names();  // "model", "layer"

// The layer-reconstruction algorithms (algorithms/layer_reconstruction.cpp): AdaRound learns
// each weight's rounding direction, AdaQuant the weights themselves, layer by layer on
// calibration data. Quark's FastFinetune OptimAlgorithm names them.
enum class ReconstructionMethod { kAdaRound, kAdaQuant };
const EnumNames<ReconstructionMethod>& reconstruction_method_names();  // "adaround", "adaquant"

// What a layer's learned weights reproduce. kFloatOutput (the default): the float model's
// output of that layer, ||W_q X^ - W X||^2 with X^ the layer's input in the quantized model and
// X the float model's, so each layer also takes back what the quantized layers and activations
// above it shifted (one more pass of the float model per level). kQuantizedInput: the layer's
// own float output on its quantized input, ||W_q X^ - W X^||^2 (upstream errors are neither
// compounded nor corrected). Measured (XINT8 + CLE, 32 calibration pictures): the PP-OCR
// detector at 320x320 26.7 dB with kFloatOutput, 20.5 dB with kQuantizedInput (19.2 without);
// the classifier 16.3 and 15.2 dB (13.5 plain XINT8).
enum class ReconstructionTarget { kQuantizedInput, kFloatOutput };
const EnumNames<ReconstructionTarget>& reconstruction_target_names();  // "quantized_input", "float_output"

// extra_options.FastFinetune, Quark's spelling (IncludeFastFT turns it on). Unset values take
// the method's defaults (ReconstructionSettings). Quark's other keys (BatchSize, DataSize,
// OptimDevice, ...) are kept and warned about: mixprec uses every calibration sample as one
// batch, on CPU.
struct FastFinetuneOptions {
  ReconstructionMethod optim_algorithm = ReconstructionMethod::kAdaRound;  // OptimAlgorithm
  std::optional<int64_t> num_iterations;  // NumIterations, >= 1
  std::optional<double> learning_rate;    // LearningRate, > 0
  std::optional<double> reg_param;        // RegParam (AdaRound), >= 0
  std::optional<double> drop_ratio;       // DropRatio, in [0, 1]
  std::optional<bool> update_bias;        // UpdateBias (AdaQuant; AdaRound ignores it, as in Quark)
  std::optional<bool> selective_update;   // SelectiveUpdate
  std::optional<std::vector<double>> beta_range;  // BetaRange (AdaRound): [start, end], both > 0
  std::optional<double> warm_start;       // WarmStart (AdaRound), in [0, 1)
  std::optional<std::vector<double>> lr_adjust;  // LRAdjust: [threshold >= 0, learning rate > 0]
  std::optional<std::vector<std::string>> target_op_type;  // TargetOpType: the op types learned
  nlohmann::ordered_json unknown = nlohmann::ordered_json::object();

  bool operator==(const FastFinetuneOptions&) const = default;
};

struct ExtraOptions {
  std::vector<std::string> op_types_to_quantize;  // empty: the default quantizable op table
  bool activation_symmetric = true;
  // UseUnsignedReLU (Quark's): the output of a Relu, or of a Clip whose lower bound is 0, is
  // quantized asymmetric even where activations are symmetric, zero point at the format's
  // lowest code, so its never-negative values get all the codes (XINT8: [0, 255 x 2^k] instead
  // of [0, 127 x 2^k], one bit more resolution). Off by default, as in Quark.
  bool use_unsigned_relu = false;
  bool use_random_data = false;
  bool convert_bn_to_conv = true;
  bool bf16_qdq_to_cast = true;
  bool int32_bias = true;
  // "OrtCpuFusion": place Q/DQ so ONNX Runtime's CPU provider fuses the quantized nodes into
  // its integer kernels (src/rewrite/place_for_ort_fusion.cpp): every quantized node whose ORT
  // fusion needs a Q on its output gets one (after a following Relu/Clip, which ORT then
  // drops), data-movement ops between quantized tensors (MaxPool, Resize, Reshape, ...) keep
  // their input's scale and zero point so ORT runs them on the codes, and a quantized Div by a
  // constant becomes a Mul by its reciprocal (ORT has QLinearMul, no QLinearDiv), which a Mul
  // by a positive scalar constant then leaves for the scale of its input's codes. Off: inputs
  // only.
  bool ort_cpu_fusion = false;
  // "MatMulNBits": MatMul weights stored as 4-bit codes in blocks along K (Int4Spec/UInt4Spec
  // with params.group_size a power of two >= 16) become ONNX Runtime's com.microsoft
  // MatMulNBits, which its CPU provider runs with a 4-bit kernel (src/rewrite/matmul_nbits.h).
  // The same values as the DequantizeLinear + MatMul it replaces. Off: the standard ONNX form.
  bool matmul_nbits = false;
  // FoldConvAffine: per-channel Mul/Div/Add/Sub by constants right after a Conv (how many
  // exporters write a BatchNormalization) are folded into the Conv when preparing. Folding
  // spreads each output channel's weight range apart, which per-channel weight scales absorb
  // and a per-tensor scale does not, so the presets with per-channel weights turn it on.
  bool fold_conv_affine = false;
  CalibMethod calib_method = CalibMethod::kMinMax;
  int64_t num_calib_samples = 100;        // must be >= 1
  // Accuracy-recovery algorithms in Quark's extra_options spellings (algo_config is the other
  // way to ask for them; algorithm_recipe() merges both). IncludeCLE: cross-layer equalization
  // of the prepared model, CLESteps times (-1: until the weights stop changing);
  // CLEScaleAppendBias: a head channel's range includes its bias; ReplaceClip6Relu: Clip(0, 6)
  // becomes Relu first (not exact: values above 6 pass), so CLE also crosses ReLU6.
  // CLEMulTails (mixprec's own): CLE also evens the rows of a Conv/Gemm read only by a Mul by
  // a constant (an exporter's scale or BatchNorm multiplier), the Mul's constant taking the
  // scale (algorithms/equalize_layers.cpp).
  // BiasCorrection: each quantized Conv/Gemm's mean output shift is added back to its bias.
  // IncludeSQ: SmoothQuant on the MatMul/Gemm layers with constant weights, SmoothAlpha the
  // share of each activation channel's range moved into the weights (in [0, 1]).
  // Off by default (Quark's include_cle defaults on; mixprec's presets say what they run).
  bool include_cle = false;
  int64_t cle_steps = 1;                  // >= 1, or -1
  bool cle_scale_append_bias = true;
  bool replace_clip6_relu = false;
  bool cle_mul_tails = false;
  bool bias_correction = false;
  BiasCorrectionMode bias_correction_mode = BiasCorrectionMode::kLayer;  // BiasCorrectionMode
  bool include_fast_ft = false;           // IncludeFastFT: run FastFinetune's method
  FastFinetuneOptions fast_finetune;      // FastFinetune
  bool include_sq = false;                // IncludeSQ
  double smooth_alpha = 0.5;              // SmoothAlpha, in [0, 1]
  nlohmann::ordered_json unknown = nlohmann::ordered_json::object();  // kept, warned about

  bool operator==(const ExtraOptions&) const = default;
};

// One entry of "algo_config" (Quark's list form): {"name": "cle", "cle_steps": 2} or
// {"name": "adaround", "num_iterations": 1000}. Names and parameters are checked when the
// config loads: an unknown name, or one mixprec does not implement (smoothquant, gptq, ...), is
// an error naming the implemented ones; so is a parameter the algorithm does not take, a value
// out of range, or adaround and adaquant together (both choose the same weights' codes).
struct AlgorithmEntry {
  std::string name;                  // "cle" | "bias_correction" | "adaround" | "adaquant" | "smoothquant" | "scale_search"
  std::optional<int64_t> cle_steps;  // cle only: >= 1, or -1 (unset: extra_options.CLESteps)
  std::optional<BiasCorrectionMode> mode;  // bias_correction only (unset: BiasCorrectionMode)
  // adaround and adaquant (unset: the method's defaults, ReconstructionSettings).
  std::optional<int64_t> num_iterations;   // >= 1
  std::optional<double> learning_rate;     // > 0
  std::optional<double> reg_param;         // adaround only, >= 0
  std::optional<ReconstructionTarget> target;  // adaround and adaquant (unset: ReconstructionSettings)
  std::optional<double> drop_ratio;        // adaround and adaquant, in [0, 1] (unset: ReconstructionSettings)
  std::optional<bool> update_bias;         // adaquant only
  std::optional<bool> selective_update;    // adaround and adaquant
  std::optional<std::vector<double>> beta_range;  // adaround only: [start, end], both > 0
  std::optional<double> warm_start;        // adaround only, in [0, 1)
  std::optional<std::vector<double>> lr_adjust;  // adaround and adaquant: [threshold >= 0, learning rate > 0]
  std::optional<std::vector<std::string>> target_op_type;  // adaround and adaquant: the op types learned
  std::optional<double> alpha;             // smoothquant only, in [0, 1] (unset: extra_options.SmoothAlpha)
  // scale_search only (unset: ScaleSearchSettings' defaults).
  std::optional<int64_t> max_shift;        // >= 1
  std::optional<int64_t> sweeps;           // >= 1
  std::optional<int64_t> num_samples;      // >= 1, at most NumCalibSamples are there
  std::optional<bool> finer;
  // An added pass's entry (add_pass): every key beside "name", as given; the pass reads them.
  nlohmann::ordered_json params = nlohmann::ordered_json::object();

  bool operator==(const AlgorithmEntry&) const = default;
};

// Passes added at run time (a plugin's, mixprec/plugins.h): algo_config names them as it names
// the built-in algorithms, {"name": "clip-outliers", "sigma": 4}, and every key beside "name"
// goes to the pass as a JSON object. A kFloat pass edits the prepared float model, after CLE
// and SmoothQuant and before statistics are collected (so the statistics are the edited
// model's); a kQuantized pass edits each quantized model the run builds, last (after the opset
// upgrade), so a search measures what it writes. Passes of one stage run in algo_config order.
// Add them before any run starts: the table is read without a lock.
enum class PassStage : uint8_t { kFloat, kQuantized };
const EnumNames<PassStage>& pass_stage_names();  // "float", "quantized"
struct AddedPass {
  std::string name;    // unique among the algorithms, built-in ones included
  std::string origin;  // who added it ("plugin test-passes"): named in its errors
  PassStage stage = PassStage::kFloat;
  // Edits `model` in place; `params` is the entry's JSON object; throws Error (kBadInput for
  // parameters it refuses, naming `label`).
  std::function<void(onnx::ModelProto& model, const std::string& params, const std::string& label)> run;
};
// kBadInput (no file) for an empty or taken name or a missing function.
void add_pass(AddedPass pass);
const AddedPass* find_added_pass(std::string_view name);  // nullptr when none has the name
std::vector<std::string> added_pass_names();

struct QuantConfig {
  LayerConfig global;
  std::vector<LayerOverride> specific;
  std::vector<LayerTypeOverride> layer_types;  // "layer_type_config"
  ExcludeConfig exclude;
  ExtraOptions extra;
  std::vector<AlgorithmEntry> algorithms;  // "algo_config"
  // Every tensor of at least 1 KiB of the written model goes to its external data file (Quark's
  // option); false: only a model over protobuf's 2 GB limit gets one.
  bool use_external_data_format = false;
  nlohmann::ordered_json unknown_keys = nlohmann::ordered_json::object();

  bool operator==(const QuantConfig&) const = default;
};

// The two JSON shapes of a config: mixprec's (SPEC.md's) and Quark's serialised QConfig.
enum class ConfigShape { kMixprec, kQuark };
const EnumNames<ConfigShape>& config_shape_names();  // "mixprec", "quark"

// The shape `json` is written in: Quark's when it has a part only Quark's shape has (a tensor
// with "data_type", a layer with "activation", [layer, names] pairs, exclude as a list, Olive's
// quant_mode/quant_format), else mixprec's. kBadInput naming `label` and one key of each when
// it mixes the two.
ConfigShape detect_config_shape(const nlohmann::ordered_json& json, const std::string& label);
// Either shape (detect_config_shape); `label` (a file name) prefixes every error and warning.
// Reading Quark's shape notes it (log_info).
QuantConfig parse_config(const nlohmann::ordered_json& json, const std::string& label);
QuantConfig load_config(const std::string& path);  // kIo when unreadable
// kMixprec: the SPEC shape in a stable key order; unset tensors and default params are left
// out, every extra option is written. parse_config(config_to_json(c), ...) == c.
// kQuark: Quark's QConfig.to_dict() shape (src/config/quark_config.cpp); parse_config gives c
// back for a config whose specs leave unset what they inherit (as presets, explore and
// configs read from Quark's shape do) and the same node assignment for any other. kBadInput
// (no file: the caller names it) for what Quark's shape cannot say: a ch_axis, an unknown key,
// a calibration method Quark's tensor config has no spelling for, ...
nlohmann::ordered_json config_to_json(const QuantConfig& config, ConfigShape shape = ConfigShape::kMixprec);
// The text save_config writes to `path` (config_to_json, indented); its errors name `path`, so
// a caller can ask for it before any work and fail early on what the shape cannot hold.
std::string config_file_text(const QuantConfig& config, ConfigShape shape, const std::string& path);
void save_config(const QuantConfig& config, const std::string& path,
                 ConfigShape shape = ConfigShape::kMixprec);  // atomic

// What a config asks the algorithms stage (src/algorithms/) to run, from algo_config and the
// extra options together. CLE, then SmoothQuant (one float pass over calibration data for its
// activation ranges), run on the prepared float model before statistics are collected;
// AdaRound/AdaQuant, then bias correction, after the first rewrite, on calibration data.
struct CleSettings {
  int64_t steps = 1;               // -1: until the total weight change is below a threshold
  bool scale_append_bias = true;   // CLEScaleAppendBias
  bool replace_clip6_relu = false; // ReplaceClip6Relu
  bool mul_tails = false;          // CLEMulTails

  bool operator==(const CleSettings&) const = default;
};
// SmoothQuant (Xiao et al. 2023): per input channel j of a constant-weight MatMul/Gemm,
// s_j = a_j^alpha / w_j^(1 - alpha) from the activation's and the weight rows' max |.|.
struct SmoothQuantSettings {
  double alpha = 0.5;

  bool operator==(const SmoothQuantSettings&) const = default;
};
// Activation scale search (algorithms/scale_search.cpp): each activation's scale moved by
// powers of two, at most max_shift steps, where the model's output error on calibration
// samples falls; `sweeps` passes over the tensors, on `samples` calibration samples.
// `finer`: finer scales are tried too (more clipping); without, only coarser ones.
struct ScaleSearchSettings {
  int64_t max_shift = 2;
  int64_t sweeps = 1;
  int64_t samples = 8;
  bool finer = true;

  bool operator==(const ScaleSearchSettings&) const = default;
};
// AdaRound / AdaQuant: `iterations` Adam steps per layer at `learning_rate` on the loss
// ||W_q X^ - W X||^2 / columns of X (see ReconstructionTarget). AdaRound adds reg_param * sum(1 - |2h - 1|^beta) after the
// first warm_start fraction of the steps, beta falling linearly from beta_start to beta_end
// (Quark's warm_start and beta_range, whose defaults these are).
struct ReconstructionSettings {
  ReconstructionMethod method = ReconstructionMethod::kAdaRound;
  ReconstructionTarget target = ReconstructionTarget::kFloatOutput;
  int64_t iterations = 1000;
  double learning_rate = 0.1;
  double reg_param = 0.01;
  double warm_start = 0.2;
  double beta_start = 20;
  double beta_end = 2;
  // Quark's drop_ratio (QDrop, Wei et al. 2022), kFloatOutput only: the chance that an element
  // of the layer's input X is the quantized model's rather than the float model's, each element
  // drawn on its own. 1 (the default, as in Quark): X^ throughout. The loss is taken in
  // expectation over the draws (layer_reconstruction.h), so no draw is made.
  double drop_ratio = 1;
  // Quark's update_bias (AdaQuant only, as in Quark): the layer's bias is learned with its
  // weights. The loss is then the one of the best bias for the codes (the inputs' Gram matrices
  // centred on their means), and the bias takes that best shift, -mean(W_q X^ - W X) per output
  // (layer_reconstruction.h). Only a layer's own 1-D bias initializer is updated.
  bool update_bias = false;
  // Quark's selective_update: a layer's learned weights are kept only where they lower the whole
  // quantized model's output error on the samples (algorithms/output_error.h) below what it was
  // before them; otherwise the layer keeps the weights it had. One pass of the quantized model
  // over the samples per layer, plus one at the start; the float outputs are taken once.
  bool selective_update = false;
  // Quark's lr_adjust (threshold, rate): a layer whose loss before learning, per output element
  // (its loss with the rewrite's own codes over its output rows: the mean squared error of its
  // output before any activation), is above `threshold` learns at `learning_rate` instead of the
  // settings' rate. Unset (the default, as in Quark): every layer at the settings' rate.
  struct LearningRateAdjust {
    double threshold = 0;
    double learning_rate = 0;
    bool operator==(const LearningRateAdjust&) const = default;
  };
  std::optional<LearningRateAdjust> lr_adjust;
  // Quark's target_op_type: the op types whose layers are learned (empty: all of
  // reconstructed_op_types()); an op type outside those matches no layer.
  std::vector<std::string> op_types;

  bool operator==(const ReconstructionSettings&) const = default;
};
// The defaults of a method (Quark's: AdaRound 1000 steps at 0.1; AdaQuant 3000 at 1e-5, the
// step count issue 12 asks for, where Quark's preset says 1000).
ReconstructionSettings default_reconstruction(ReconstructionMethod method);
// The op types (default domain) whose weights AdaRound and AdaQuant learn: Conv, ConvTranspose,
// Gemm, MatMul.
std::span<const char* const> reconstructed_op_types();

// One added pass as a config asks for it.
struct PassCall {
  std::string name;
  PassStage stage = PassStage::kFloat;
  std::string params;  // the entry's JSON object, compact

  bool operator==(const PassCall&) const = default;
};

struct AlgorithmRecipe {
  std::optional<CleSettings> cle;
  std::optional<SmoothQuantSettings> smooth_quant;
  std::optional<ScaleSearchSettings> scale_search;
  std::optional<ReconstructionSettings> reconstruction;
  std::optional<BiasCorrectionMode> bias_correction;
  std::vector<PassCall> passes;  // added passes, in algo_config order

  bool empty() const { return !cle && !smooth_quant && !scale_search && !reconstruction && !bias_correction && passes.empty(); }
  std::vector<PassCall> passes_of(PassStage stage) const;
  // "cle", "smoothquant", the float passes, "adaround" | "adaquant", "bias_correction", the
  // quantized passes: in the order they run
  std::vector<std::string> names() const;
  // The same, bias correction with its mode: "bias_correction (layer)".
  std::vector<std::string> labels() const;
};
AlgorithmRecipe algorithm_recipe(const QuantConfig& config);
std::vector<std::string> algorithm_labels(const QuantConfig& config);  // algorithm_recipe(config).labels()
// The algorithm names algo_config accepts (the implemented ones, then the added passes).
std::vector<std::string> algorithm_names();

// Presets by name (case-insensitive): XINT8, A8W8, U8S8, A16W8, BF16, FP16 (one table row
// each, documented in src/config/presets.cpp). nullopt for an unknown name. U8S8 is the
// ONNX Runtime CPU preset: OrtCpuFusion on, Div and Concat added to the default op types.
std::optional<QuantConfig> preset_config(const std::string& name);
// Every format the config can put a tensor in (global and overrides), sorted, unique; float32
// only when the config says so explicitly.
std::vector<FormatId> formats_used(const QuantConfig& config);
std::vector<std::string> preset_names();

// Quark's search presets: a name that stands for an exploration, not one config
// (S16S16_MIXED_S8S8: INT8 where it is enough, INT16 where it is not). explore takes the name
// as its starting preset and lift; quantize refuses it, saying which explore to run.
struct SearchPreset {
  std::string name;
  std::string base;  // the starting preset
  std::string lift;  // what a layer that needs it is lifted to
};
std::optional<SearchPreset> search_preset(const std::string& name);
// True when `op_types` is exactly the OpTypesToQuantize a preset writes (U8S8's list, say): the
// user did not choose it, so assign_layers does not warn about its entries.
bool is_preset_op_types(const std::vector<std::string>& op_types);

// Where a job's config comes from: a file, a preset name, or a config built in memory.
struct ConfigSource {
  std::string path;
  std::string preset;
  std::optional<QuantConfig> config;

  size_t given() const;  // how many of the three are set
};
// The config `source` names. kBadInput when more than one is given ("give one of a config, a
// preset or a plan"), when none is given (the message lists the presets), or for an unknown
// preset (listing the known ones); load_config's errors for a file.
QuantConfig resolve_config(const ConfigSource& source);
// `method` everywhere in `config`: the extra option and every spec that names its own.
void override_calib_method(QuantConfig& config, CalibMethod method);

// The Vitis AI quantize script's --fp-nodes / --fp-precision: the named nodes (exact names)
// kept at `precision` (BF16 or FP16: activations, weights and bias), as one
// specific_layer_config entry after the config's own, so the effective config says it.
// kBadInput for another precision, an empty name, or a name the config would read as a regex
// (a '^' start with ".*" in it: such patterns belong in the config's target_node_names).
void keep_nodes_at(QuantConfig& config, const std::vector<std::string>& nodes, FormatId precision);

// --ffn-only: the config's global layer applies only to `nodes` (the model's MLP and attention
// projection MatMul/Gemm, feed_forward_nodes()): it becomes the FIRST specific_layer_config
// entry, so the config's own entries still override it, and global_config is left empty, so
// every other node (Softmax, LayerNorm arithmetic, convolutions) stays float. kBadInput (naming
// `label`) when `nodes` is empty, the global layer quantizes nothing, or the config has
// layer_type_config layers (they would quantize other nodes).
void quantize_only_nodes(QuantConfig& config, const std::vector<std::string>& nodes, const std::string& label);

// The op types quantized when extra_options.OpTypesToQuantize is empty: the weighted compute
// ops (Conv, ConvTranspose, Gemm, MatMul) and the arithmetic an int8 accelerator runs natively
// (Add, Mul, AveragePool, GlobalAveragePool). Ops that only move values (Reshape, Concat,
// MaxPool, ...) are left out: their inputs already carry their producer's quantization.
std::vector<std::string> default_op_types_to_quantize();

// What the config decides for one node of the model.
struct NodeAssignment {
  std::string node_name;
  std::string op_type;
  LayerConfig config;  // after global → specific overrides; empty when excluded
  bool excluded = false;  // a rule keeps the node in float whatever the layer specs say
  std::string reason;  // the rule that decided: "global", "specific_layer_config[1] pattern
                       // ^/head/.*", "layer_type_config[0] op type Conv", "exclude.node_names
                       // pattern ...", "op type Softmax not in
                       // OpTypesToQuantize", "shape/index op Shape", ...; plus "; weight
                       // left in float (input 1 is not an initializer)" when a spec was dropped

  bool operator==(const NodeAssignment&) const = default;
};

// One entry per node of the model: the main graph's in graph order, then the nodes of If/Loop/
// Scan bodies (breadth first), each named by its path "If_3.then_branch/Gemm_1" (its owner's
// path, the attribute, its own name); patterns match a body node by its path or its own name,
// and a body inherits an exclusion its owner got from exclude.*. Nodes without a name are
// matched by the name ensure_node_names would give them. The first rule that applies decides:
//   1. exclude.node_names (regex, full match), then exclude.subgraphs → excluded;
//   2. never quantized, even when listed in OpTypesToQuantize (excluded):
//      - shape and index ops (Shape, Size, Range, ConstantOfShape, NonZero) and any node whose
//        outputs are all integer or bool (declared, or inferred from initializers, Shape, Cast,
//        ... through type-preserving ops: Gather/Concat/Reshape on shapes);
//      - normalization arithmetic (Pow, Sqrt, Reciprocal, ReduceMean, ReduceSum, Exp, Erf, and
//        Div by a computed value; Div by a constant is plain scaling, as in hardswish's "/ 6"),
//        and Add/Sub/Mul reading one of their outputs (LayerNorm's "x - mean", "var + eps"
//        and "* gamma"): Q/DQ inside decomposed LayerNorm/Softmax ruins models;
//      - the Mul SmoothQuant puts in front of MatMuls (ir::kSmoothQuantScaleDoc);
//   3. op type not in OpTypesToQuantize (or the default table when empty) → excluded;
//   4. the LAST specific_layer_config entry with a matching pattern: its layer_config replaces
//      the global one as a whole (tensors it leaves out stay in float);
//   5. the LAST layer_type_config entry with a layer that lists the node's op type: the same;
//   6. global_config.
// A layer_type_config entry whose layer is null excludes its op types with rule 1 (Quark
// excludes them; nothing overrides that).
// Weight and bias specs are kept only where the op has that input as an initializer (Conv and
// ConvTranspose W/B, Gemm B/C, MatMul B); other nodes get input/output specs only. The reason
// notes a dropped spec when the input exists but is computed (or a Constant node's output).
// Warnings (log_warning, prefixed by `label`, which names the config): a pattern that matches
// no node; a target pattern starting with '^' without ".*" (treated as an exact name, though
// users usually meant a regex); an op type listed in OpTypesToQuantize that rule 2 never
// quantizes. Errors (kBadInput naming `label`): invalid regexes, exclude.subgraphs naming no
// node; a malformed graph (see ir::GraphView).
std::vector<NodeAssignment> assign_layers(const QuantConfig& config, const onnx::ModelProto& model,
                                          const std::string& label);

// The nodes of `prepared` (bodies included) whose float weights the assignment leaves float:
// a float initializer input of at least 64 values on a node that is excluded or whose layer
// config gives neither its inputs nor its weight a format (data movement such as Slice/Gather/Reshape is left out: its reader quantizes it). One line per op type, "2 x LayerNormalization (ln_1, ln_2) because normalization
// arithmetic LayerNormalization (never quantized)", with the first node's reason.
std::vector<std::string> describe_float_weights(const std::vector<NodeAssignment>& assignment,
                                                const onnx::ModelProto& prepared, const std::string& label);

// Gives every unnamed node of the model (subgraphs included) a unique stable name
// "<op_type>_<index>" (index = the node's position in its own graph) so configs, ledgers and
// reports can refer to it. Graphs are named main graph first, then subgraphs breadth-first in
// node and attribute order; a name already used anywhere in the model gets a "_<k>" suffix
// (k = 1, 2, ...) until it is unique. Existing names are never changed. Returns how many
// nodes were named.
size_t ensure_node_names(onnx::ModelProto& model);

}  // namespace mixprec
