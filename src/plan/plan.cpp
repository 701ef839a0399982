// plan: the decision table of SPEC "Plan". Each decision is one function below that appends
// its row (and any risk) to the plan; the tables they read (targets, presets per target and
// goal, algorithms) are at the top.
#include "common/json_text.h"
#include "mixprec/plan.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <functional>
#include <set>
#include <span>
#include <string_view>

#include "common/text.h"
#include "mixprec/algorithms.h"
#include "mixprec/devices.h"
#include "mixprec/error.h"
#include "mixprec/json_schema.h"
#include "mixprec/metrics.h"
#include "mixprec/model_io.h"
#include "mixprec/jobs.h"
#include "mixprec/runtime.h"

namespace mixprec {

// Defined in the source CMake generates from schemas/quant_plan.schema.json.
extern const char* const kQuantPlanSchemaText;

namespace {
namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;
using enum PlanTarget;
using enum PlanGoal;

using enum CalibMethod;

constexpr AlgorithmTraits kAlgorithms[] = {
    {"fold_batchnorm", true, "fold BatchNormalization into the preceding Conv/Gemm (ConvertBNToConv)"},
    {"cle", true, "cross-layer equalization: rescale consecutive layers' channels to even out weight ranges"},
    {"bias_correction", true, "correct the mean shift quantization adds to each layer's output"},
    {"adaround", true, "learn each weight's rounding direction on calibration data (AdaRound)"},
    {"adaquant", true, "learn each layer's quantized weights on calibration data (AdaQuant)"},
    {"smoothquant", true, "move activation outliers into the weights of the following MatMul (SmoothQuant, alpha 0.5)"},
    {"scale_search", true, "move each activation's scale by powers of two where the model's output error on calibration data falls"},
    {"gptq", false, "quantize weights column by column, compensating the error with second-order information"},
};

// Measured on 2 cores, nothing else running (guide on det 320x320, 2026-12-05): the plan's cost
// figure for AdaRound/AdaQuant.
constexpr const char* kReconstructionCostExample = "measured: AdaRound on the PP-OCR detector at 320x320 with 32 "
                                                   "calibration pictures, 64 layers in 2.6 to 2.8 min on 2 cores";
constexpr int64_t kEvaluationSamples = 100;  // SPEC: evaluate on >= 100 samples by default
constexpr uint64_t kTwoGigabytes = uint64_t{2} << 30;



std::string method_name(CalibMethod method) { return calib_method_traits(method).name; }

std::string megabytes(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MB", static_cast<double>(bytes) / 1e6);
  return text;
}

// The model file plus every distinct external data file it references.
uint64_t model_bytes(const onnx::ModelProto& model, const std::string& path) {
  std::error_code ec;
  uint64_t bytes = fs::file_size(path, ec);
  std::set<std::string> locations;
  for (const auto& tensor : model.graph().initializer()) {
    for (const auto& entry : tensor.external_data()) {
      if (entry.key() == "location") locations.insert(entry.value());
    }
  }
  for (const auto& location : locations) {
    const uint64_t size = fs::file_size(fs::path(path).parent_path() / location, ec);
    if (!ec) bytes += size;
  }
  return bytes;
}

// A node name as a regex matching exactly that name (exclude.node_names are regexes).
std::string exact_regex(const std::string& name) {
  std::string out;
  for (char c : name) {
    if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

class Planner {
 public:
  explicit Planner(const PlanParams& params) : params_(params) {}

  QuantPlan run() {
    const onnx::ModelProto model = load_model(params_.setup.model_path, {.load_external_data = false});
    analysis_ = analyze_model(model, params_.setup.model_path);
    refuse_quantized();
    plan_.model_path = params_.setup.model_path;
    plan_.model_fingerprint = model_fingerprint(model);
    plan_.model_bytes = model_bytes(model, params_.setup.model_path);
    plan_.architecture = analysis_.architecture.type;
    plan_.task = analysis_.task.type;
    plan_.target = params_.target;
    plan_.goal = params_.goal;

    decide_backend();
    decide_architecture();
    decide_preset();
    decide_calibration();
    decide_algorithms();
    decide_recovery_ladder();
    decide_lists();
    decide_scope();
    decide_external_data();
    decide_evaluation();
    build_config();
    return plan_;
  }

 private:
  void decide(const std::string& decision, const std::string& value, const std::string& reason) {
    plan_.decisions.push_back({decision, value, reason});
  }
  void risk(const std::string& severity, const std::string& text) { plan_.risks.push_back({severity, text}); }

  void refuse_quantized() {
    const QuantizationSummary& q = analysis_.quantization;
    if (q.state == QuantState::kFloat) return;
    throw_bad_input(params_.setup.model_path,
                    std::string("the model is already quantized (") + to_string(q.state) + ": " +
                        std::to_string(q.quantize_linear) + " QuantizeLinear, " + std::to_string(q.dequantize_linear) +
                        " DequantizeLinear, " + std::to_string(q.cast_pairs_bf16 + q.cast_pairs_fp16) +
                        " cast pairs, " + std::to_string(q.qoperator_nodes) +
                        " quantized kernels): no plan; run `mixprec requantize` to strip it and quantize it again");
  }

  // A request a hard gate rejects: an error naming the nearest viable choice, or with --force
  // a high risk.
  void gate(const std::string& request, const std::string& why, const std::string& nearest) {
    if (!params_.force) {
      throw_bad_input(params_.setup.model_path, request + " is rejected for --target " +
                                              to_string(params_.target) + ": " + why + "; nearest viable: " + nearest +
                                              " (--force keeps the request, recorded as a high risk)");
    }
    risk("high", "forced: " + request + " although " + why + " (nearest viable: " + nearest + ")");
  }

  void decide_backend() {
    const PlanTargetTraits& row = plan_target_traits(params_.target);
    const DeploymentTarget deployment = deployment_for(params_.target, params_.device, params_.setup.model_path);
    plan_.device = deployment.device;
    plan_.backend = row.provider;
    const std::vector<std::string> available = available_providers();
    const bool present = std::ranges::find(available, plan_.backend) != available.end();
    decide("backend", std::string("ONNX Runtime ") + plan_.backend,
           std::string("--target ") + to_string(params_.target) + (row.npu ? " on device " + plan_.device : "") +
               (present ? "; in the loaded ONNX Runtime " + runtime_version()
                        : "; not in the loaded ONNX Runtime " + runtime_version() + " (it has " + text::join(available) + ")"));
    if (!present && params_.backend_risk) {
      risk("medium", plan_.backend + " is not in the loaded ONNX Runtime (" + text::join(available) +
                         "): accuracy is measured on CPU emulation; compile and exec need an ONNX Runtime build with it "
                         "(MIXPREC_ORT_LIB)");
    }
  }

  void decide_architecture() {
    const ArchitectureInference& arch = analysis_.architecture;
    std::string reason = arch.reason;
    if (arch.type == Architecture::kUnknown) {
      plan_.requires_confirmation = !params_.confirmed;
      reason += params_.confirmed ? "; draft confirmed by --yes" : "; the plan is a draft: confirm it (--yes) or edit it";
    }
    decide("architecture", to_string(arch.type), reason);
    decide("task", to_string(analysis_.task.type), analysis_.task.reason);
    const bool transformer_like = arch.type == Architecture::kTransformer || arch.type == Architecture::kHybrid;
    if (params_.target == kNpuCnn && transformer_like) {
      risk("medium", std::string("--target npu_cnn for a ") + to_string(arch.type) + " (" +
                         std::to_string(arch.attention_blocks) +
                         " attention blocks): attention in power-of-two int8 loses accuracy; npu_transformer keeps "
                         "the attention MatMuls in BF16");
    }
    if (params_.target == kNpuTransformer && arch.type == Architecture::kCnn) {
      risk("low", "--target npu_transformer for a CNN: there is no attention to keep in BF16; npu_cnn is the usual target");
    }
    if (arch.type == Architecture::kRecurrent) {
      risk("medium", "recurrent or loop nodes (" + std::to_string(arch.recurrent_nodes) +
                         "): LSTM/GRU/RNN stay float, and so do the nodes inside If/Loop/Scan bodies (only the "
                         "main graph is quantized today); errors accumulate over iterations: evaluate on "
                         "full-length sequences");
    }
  }

  void decide_preset() {
    const PresetChoice& choice = recommended_preset(params_.target, params_.goal);
    choice_ = &choice;
    std::string reason = choice.why;
    plan_.preset = choice.preset;
    if (!params_.preset.empty()) {
      const std::vector<std::string> names = preset_names();
      const auto known = std::ranges::find_if(names, [&](const std::string& n) { return text::equal_ignoring_case(n, params_.preset); });
      if (known == names.end()) {
        throw_bad_input(params_.setup.model_path, "unknown --preset '" + params_.preset + "' (known: " + text::join(names) + ")");
      }
      plan_.preset = *known;
      reason = "--preset " + *known + (*known == choice.preset ? "; also the plan's choice: " + reason
                                                               : "; the plan would choose " + std::string(choice.preset));
    }
    preset_ = *preset_config(plan_.preset);
    formats_ = formats_used(preset_);
    const std::vector<FormatId>& formats = formats_;
    if (params_.target == kNpuCnn) {
      const bool pow2_int8 =
          std::ranges::any_of(formats, [](FormatId f) { return format_traits(f).power_of_two_scale; }) &&
          std::ranges::all_of(formats, [](FormatId f) { return format_traits(f).is_qdq; });
      if (!pow2_int8) {
        gate("--preset " + plan_.preset, "npu_cnn runs int8 with power-of-two scales only (formats of " + plan_.preset +
                                             ": " + format_names(formats) + ")",
             "XINT8");
      }
    }
    const DeviceProfile& device = device_profile(plan_.device);
    if (const auto why = device_rejects(device, formats)) gate("--preset " + plan_.preset, *why, choice.preset);
    if (params_.target == kNpuTransformer) {
      for (FormatId f : formats) {
        if (format_traits(f).is_qdq && !format_traits(f).power_of_two_scale && device_needs_power_of_two(device, f)) {
          risk("medium", plan_.preset + " uses " + format_traits(f).name + " scales that are not powers of two; " +
                             device.name + " needs power-of-two int8 scales (XINT8)");
          break;
        }
      }
    }
    if (params_.goal == kSpeed && plan_.device == "cpu" &&
        std::ranges::any_of(formats, [](FormatId f) { return !format_traits(f).is_qdq && f != FormatId::kFloat32; })) {
      risk("medium", plan_.preset + " on ONNX Runtime CPU runs as cast emulation around float kernels: slower than FP32");
    }
    decide("preset", plan_.preset + " (" + format_names(formats) + ")", reason);
  }

  void decide_calibration() {
    plan_.calib_method = choice_->method;
    std::string reason = calib_method_reason(choice_->method);
    if (params_.calib_method) {
      plan_.calib_method = *params_.calib_method;
      reason = "--calib-method " + method_name(*params_.calib_method) +
               (*params_.calib_method == choice_->method ? "; also the plan's choice"
                                                         : "; the plan would choose " + method_name(choice_->method));
    }
    const bool quantizes = std::ranges::any_of(formats_, [](FormatId f) { return format_traits(f).is_qdq; });
    if (params_.target == kNpuCnn && !calib_method_traits(plan_.calib_method).power_of_two) {
      const CalibMethod nearest = plan_.calib_method == kMinMax ? kPowerOfTwoNonOverflow : kPowerOfTwoMinMse;
      gate("--calib-method " + method_name(plan_.calib_method), "npu_cnn needs power-of-two scales from a PowerOfTwo_* method",
           method_name(nearest));
    }
    const bool pow2_formats =
        std::ranges::any_of(formats_, [](FormatId f) { return format_traits(f).power_of_two_scale; });
    if (!pow2_formats && calib_method_traits(plan_.calib_method).power_of_two) {
      risk("low", method_name(plan_.calib_method) + " rounds scales to powers of two, which " + plan_.preset +
                      " does not need: it costs resolution for nothing");
    }
    decide("calibration method", quantizes ? method_name(plan_.calib_method) : "none",
           quantizes ? reason : plan_.preset + " has no integer tensors: no calibration");

    plan_.calibration_samples = params_.calibration_samples > 0 ? static_cast<int64_t>(params_.calibration_samples)
                                                                : (params_.goal == kAccuracy ? 256 : 100);
    plan_.calibration_batch = 1;
    std::string batch_reason = "statistics stream one batch at a time, so memory does not grow with the sample count";
    if (!analysis_.inputs.empty() && analysis_.inputs[0].shape && !analysis_.inputs[0].shape->empty() &&
        analysis_.inputs[0].shape->front().value && *analysis_.inputs[0].shape->front().value > 1) {
      plan_.calibration_batch = *analysis_.inputs[0].shape->front().value;
      batch_reason = "the model's first input has a fixed batch of " + std::to_string(plan_.calibration_batch);
    }
    decide("calibration size",
           std::to_string(plan_.calibration_samples) + " samples, batch " + std::to_string(plan_.calibration_batch),
           (params_.calibration_samples > 0 ? std::string("as requested")
                                            : params_.goal == kAccuracy ? "more samples settle the range tails the accuracy goal depends on"
                                                                        : "SPEC's default of 100 samples") +
               std::string("; ") + batch_reason);
    std::vector<std::string> inputs;
    for (const auto& input : analysis_.inputs) inputs.push_back(input.name + " " + dims_to_string(input.shape));
    decide("calibration data",
           inputs.size() > 1 ? ".npz per sample with keys " + text::join(inputs) : "images, .npy or .npz for " + text::join(inputs),
           inputs.size() > 1 ? "a multi-input model: every input needs real data, none is left to random values"
                             : "real samples from the deployment distribution; random data gives poor ranges");
  }

  void decide_algorithms() {
    std::vector<std::string> reasons;
    const bool has_batchnorm = std::ranges::any_of(analysis_.op_histogram, [](const OpCount& op) {
      return op.op_type == "BatchNormalization";
    });
    if (has_batchnorm) {
      plan_.algorithms.emplace_back("fold_batchnorm");
      reasons.emplace_back("the model has BatchNormalization nodes: folded into their Conv before quantizing");
    }
    if (plans_cle()) {
      plan_.algorithms.emplace_back("cle");
      reasons.emplace_back("npu_cnn quantizes weights per tensor: cross-layer equalization evens the channel ranges "
                           "first, also of the layers read by a constant Mul (CLEMulTails: XINT8 on the PP-OCR detector "
                           "at 320x320 18.6 -> 24.1 dB PSNR, where CLE's pairs alone give 19.2)");
    }
    for (const std::string& requested : params_.algorithms) {
      const auto row = std::ranges::find_if(kAlgorithms, [&](const AlgorithmTraits& a) { return requested == a.name; });
      if (row == std::end(kAlgorithms)) {
        std::vector<std::string> names;
        for (const auto& a : kAlgorithms) names.emplace_back(a.name);
        throw_bad_input(params_.setup.model_path, "unknown --algorithm '" + requested + "' (known: " + text::join(names) + ")");
      }
      if (listed(requested)) continue;
      plan_.algorithms.push_back(requested);
      reasons.push_back("--algorithm " + requested);
      if (!row->implemented) {
        risk("high", requested + " is not implemented by mixprec: quantize --plan refuses this plan until it is removed "
                                 "(another tool may run it)");
      }
    }
    if (listed("adaround") && listed("adaquant")) {
      throw_bad_input(params_.setup.model_path,
                      "--algorithm adaround and adaquant both learn the weights' codes: request one of them");
    }
    for (const char* name : {"adaround", "adaquant"}) {
      if (!listed(name)) continue;
      const int64_t layers = op_count(reconstructed_op_types());
      const ReconstructionSettings settings = default_reconstruction(*reconstruction_method_names().from_name(name));
      reasons.push_back(std::string(name) + " cost: up to " + std::to_string(layers) + " " +
                        text::join_each(reconstructed_op_types(), std::identity{}, "/") + " layers x " +
                        std::to_string(settings.iterations) + " Adam steps, plus one rewrite and one calibration pass per "
                        "level of layers (" + kReconstructionCostExample + ")");
    }
    if (listed("smoothquant")) {
      constexpr const char* kMatMuls[] = {"Gemm", "MatMul"};
      const int64_t matmuls = op_count(kMatMuls);
      reasons.push_back("smoothquant cost: one float pass over the calibration samples for the activation ranges of up to " +
                        std::to_string(matmuls) + " MatMul/Gemm layers, then exact weight rescaling" +
                        (matmuls == 0 ? " (the model has none: it will be a note, not a change)" : ""));
    }
    if (listed("scale_search")) {
      reasons.push_back("scale_search cost: about two runs of the model on 8 calibration samples per activation "
                        "(measured: the PP-OCR detector at 320x320, 249 activations, 511 runs in 140 s on 2 cores)");
    }
    const bool transformer_like = plan_.architecture == Architecture::kTransformer || plan_.architecture == Architecture::kHybrid;
    if (transformer_like && listed("cle")) {
      risk("high", std::string("cle on a ") + to_string(plan_.architecture) +
                       ": equalization assumes piecewise-linear activations between layers; LayerNorm, Softmax and "
                       "GELU break that and the rescaling can hurt accuracy");
    }
    if (plan_.algorithms.size() >= 3) {
      risk("medium", std::to_string(plan_.algorithms.size()) + " algorithms (" + text::join(plan_.algorithms) +
                         "): their effects interact and are hard to attribute; add them one at a time and measure each");
    }
    decide("algorithms", plan_.algorithms.empty() ? "none" : text::join(plan_.algorithms),
           reasons.empty() ? "nothing to fold, nothing requested" : text::join(reasons, "; "));
  }

  // The rungs guide tries when the config misses: bias correction of Conv/ConvTranspose/Gemm biases layer by
  // layer, then of the whole model at once (neither wins everywhere: XINT8 + CLE, cls 11.9 vs
  // 20.0 dB, det 320x320 22.3 vs 18.8 dB), then AdaRound of Conv/ConvTranspose/Gemm/MatMul weights; each on
  // top of the plan's algorithms, only where the preset quantizes to integer codes and the
  // algorithm is not already listed.
  void decide_recovery_ladder() {
    const bool integer = std::ranges::any_of(formats_, [](FormatId f) { return format_traits(f).is_qdq; });
    std::vector<std::string> reasons;
    if (integer && op_count(bias_corrected_op_types()) > 0 && !listed("bias_correction")) {
      for (BiasCorrectionMode mode : {BiasCorrectionMode::kLayer, BiasCorrectionMode::kModel}) {
        plan_.recovery_ladder.push_back({{.name = "bias_correction", .mode = mode}});
      }
      reasons.emplace_back("bias correction: a few passes over the calibration samples per rung");
    }
    const int64_t layers = op_count(reconstructed_op_types());
    if (integer && layers > 0 && !listed("adaround") && !listed("adaquant")) {
      plan_.recovery_ladder.push_back({{.name = "adaround"}});
      reasons.push_back("adaround: up to " + std::to_string(layers) + " layers x " +
                        std::to_string(default_reconstruction(ReconstructionMethod::kAdaRound).iterations) +
                        " Adam steps (" + kReconstructionCostExample + "), and again in explore for the layers below "
                        "each lifted one");
      // CLE evens per-tensor weight ranges but moves the activations' ranges too, and which
      // wins under AdaRound depends on the model (plan.h): measure both.
      if (listed("cle")) {
        plan_.recovery_ladder_without_cle.push_back({{.name = "adaround"}});
        reasons.emplace_back("adaround without cle: a second calibration pass for its own statistics, then the same "
                             "learning");
      }
    }
    if (plan_.recovery_ladder.empty()) return;
    std::vector<std::string> rungs;
    const auto label_rungs = [&](const std::vector<std::vector<AlgorithmEntry>>& ladder, bool with_cle) {
      for (const auto& rung : ladder) {
        QuantConfig with = plan_config_algorithms();
        if (!with_cle) std::erase_if(with.algorithms, [](const AlgorithmEntry& a) { return a.name == "cle"; });
        with.algorithms.insert(with.algorithms.end(), rung.begin(), rung.end());
        rungs.push_back(text::join(algorithm_labels(with), " + "));
      }
    };
    label_rungs(plan_.recovery_ladder, true);
    label_rungs(plan_.recovery_ladder_without_cle, false);
    decide("recovery ladder", text::join(rungs, ", then "),
           "when the config misses its criterion, guide measures each rung on the config's statistics (one rewrite and "
           "one evaluation each, after the algorithm itself; a rung without cle on statistics of its own), keeps the "
           "best and explores from it; cost: " +
           text::join(reasons, "; "));
  }
  bool listed(std::string_view algorithm) const {
    return std::ranges::find(plan_.algorithms, algorithm) != plan_.algorithms.end();
  }
  // Nodes of the model of these op types.
  int64_t op_count(std::span<const char* const> op_types) const {
    int64_t n = 0;
    for (const OpCount& op : analysis_.op_histogram) {
      if (std::ranges::find(op_types, op.op_type) != op_types.end()) n += op.count;
    }
    return n;
  }
  // The plan equalizes a CNN on npu_cnn itself (per-tensor int8 weights), with Mul tails.
  bool plans_cle() const { return params_.target == kNpuCnn && plan_.architecture == Architecture::kCnn; }
  // A config holding only the plan's algo_config entries (build_config's order).
  QuantConfig plan_config_algorithms() const {
    QuantConfig config;
    for (const std::string& name : algorithm_names()) {
      if (listed(name)) config.algorithms.push_back({.name = name});
    }
    return config;
  }

  void decide_lists() {
    std::set<std::string> present;
    for (const auto& op : analysis_.op_histogram) present.insert(op.op_type);
    const std::vector<std::string> quantizable =
        preset_.extra.op_types_to_quantize.empty() ? default_op_types_to_quantize() : preset_.extra.op_types_to_quantize;
    for (const std::string& op : quantizable) {
      if (present.contains(op)) plan_.include_op_types.push_back(op);
    }
    decide("include", plan_.include_op_types.empty() ? "none" : text::join(plan_.include_op_types),
           "the op types " + plan_.preset + " quantizes that the model contains (normalization arithmetic and "
           "shape/index ops are never quantized)");
    const std::vector<std::string>& attention = analysis_.architecture.attention_matmuls;
    // npu_cnn is int8 only (its gate), so the attention MatMuls stay int8 there (and a risk says so).
    const bool keep_attention = params_.goal == kAccuracy && !attention.empty() && params_.target != kNpuCnn;
    if (keep_attention && plan_target_traits(params_.target).attention_in_bf16) {
      plan_.higher_precision_nodes = attention;
      plan_.higher_precision_format = "BF16";
    } else if (keep_attention) {
      plan_.exclude_node_names = attention;
    }
    decide("exclude", plan_.exclude_node_names.empty() ? "none" : text::join(plan_.exclude_node_names),
           !plan_.exclude_node_names.empty()
               ? "the attention blocks' activation-by-activation MatMuls (Q.K^T, P.V) stay float: both operands are "
                 "activations with outliers, the usual int8 accuracy loss"
               : keep_attention      ? "nothing stays float: the attention MatMuls go to BF16 instead (below)"
               : attention.empty()   ? "no attention MatMuls; exploration decides any further layers"
               : params_.target == kNpuCnn ? "npu_cnn runs int8 only: the attention MatMuls are quantized too"
                                     : "the goal is " + std::string(to_string(params_.goal)) +
                                           ": the attention MatMuls are quantized too; explore if accuracy misses");
    if (!plan_.higher_precision_nodes.empty()) {
      decide("higher precision", "BF16: " + text::join(plan_.higher_precision_nodes),
             "the attention blocks' activation-by-activation MatMuls run in BF16, which " + plan_.device +
                 " runs natively; exploration may lift more");
    }
  }

  // --ffn-only: which nodes the preset's layer reaches.
  void decide_scope() {
    if (!params_.ffn_only) return;
    const ArchitectureInference& a = analysis_.architecture;
    ffn_nodes_ = feed_forward_nodes(a);
    if (ffn_nodes_.empty()) {
      throw_bad_input(params_.setup.model_path, "--ffn-only: the model has no MLP block or attention projection with a "
                                                "constant weight (mixprec analyze lists them)");
    }
    decide("scope", "feed-forward only: " + std::to_string(ffn_nodes_.size()) + " weight MatMul/Gemm",
           std::to_string(a.mlp_blocks.size()) + " MLP blocks and " + std::to_string(a.attention_projections.size()) +
               " attention projections get " + plan_.preset + "'s layer; Softmax, LayerNorm arithmetic and every other "
               "node stay float (--ffn-only)");
  }

  void decide_external_data() {
    plan_.external_data = plan_.model_bytes > kTwoGigabytes;
    decide("external data", plan_.external_data ? "yes" : "no",
           megabytes(plan_.model_bytes) + (plan_.external_data ? ", over protobuf's 2 GB limit: weights go to a .data file"
                                                               : ", under protobuf's 2 GB limit"));
  }

  void decide_evaluation() {
    switch (plan_.task) {
      case TaskType::kClassification: plan_.evaluation_metric = "top-1 agreement"; break;
      case TaskType::kSequence: plan_.evaluation_metric = "per-time-step top-1 agreement"; break;
      default: plan_.evaluation_metric = "PSNR and element-wise pass rate"; break;
    }
    for (const AccuracyTarget& target : default_targets(plan_.task)) plan_.evaluation_criteria.push_back(target.text);
    plan_.evaluation_samples = kEvaluationSamples;
    decide("evaluation", plan_.evaluation_metric + ": " + text::join(plan_.evaluation_criteria, " and ") + " on every output, " +
                             std::to_string(plan_.evaluation_samples) + " samples",
           std::string("task ") + to_string(plan_.task) + "; then explore mixed precision if the preset misses");
    if (plan_.task == TaskType::kUnknown) {
      risk("medium", "task type unknown: the regression criterion may not suit the outputs; state one with "
                     "--target-accuracy");
    }
  }

  void build_config() {
    QuantConfig config = preset_;
    config.extra.calib_method = plan_.calib_method;
    config.extra.num_calib_samples = plan_.calibration_samples;
    config.extra.convert_bn_to_conv = listed("fold_batchnorm");
    config.extra.cle_mul_tails = plans_cle();
    config.extra.op_types_to_quantize = plan_.include_op_types;
    for (const auto& name : plan_.exclude_node_names) config.exclude.node_names.push_back(exact_regex(name));
    // The algorithms stage's entries, in the order they run (fold_batchnorm is ConvertBNToConv above).
    config.algorithms = plan_config_algorithms().algorithms;
    if (!plan_.higher_precision_nodes.empty()) {
      LayerOverride bf16;
      bf16.target_node_names = plan_.higher_precision_nodes;
      bf16.layer_config = preset_config("BF16")->global;
      config.specific.push_back(bf16);
    }
    if (params_.ffn_only) quantize_only_nodes(config, ffn_nodes_, params_.setup.model_path);
    plan_.config = config;
  }

  const PlanParams& params_;
  ModelAnalysis analysis_;
  QuantPlan plan_;
  const PresetChoice* choice_ = nullptr;  // the table's row for the target and goal
  QuantConfig preset_;                 // the chosen preset's config
  std::vector<FormatId> formats_;      // and the formats it uses
  std::vector<std::string> ffn_nodes_;  // --ffn-only: the nodes the preset's layer reaches
};

}  // namespace

std::vector<AlgorithmTraits> all_algorithms() { return {std::begin(kAlgorithms), std::end(kAlgorithms)}; }

QuantPlan make_plan(const PlanParams& params) { return Planner(params).run(); }

const Json& plan_schema() {
  static const Json schema = Json::parse(kQuantPlanSchemaText);
  return schema;
}

Json plan_to_json(const QuantPlan& plan, ConfigShape shape) {
  Json decisions = Json::array();
  for (const auto& d : plan.decisions) decisions.push_back({{"decision", d.decision}, {"value", d.value}, {"reason", d.reason}});
  Json risks = Json::array();
  for (const auto& r : plan.risks) risks.push_back({{"severity", r.severity}, {"risk", r.risk}});
  const auto ladder_json = [](const std::vector<std::vector<AlgorithmEntry>>& ladder) {
    Json rungs = Json::array();  // each rung as the algo_config list it adds
    for (const auto& rung : ladder) {
      QuantConfig entries;
      entries.algorithms = rung;
      rungs.push_back(config_to_json(entries)["algo_config"]);
    }
    return rungs;
  };
  Json json = {
      {"schema_version", 1},
      {"model", {{"path", plan.model_path}, {"fingerprint", plan.model_fingerprint}, {"bytes", plan.model_bytes},
                 {"architecture", to_string(plan.architecture)}, {"task", to_string(plan.task)}}},
      {"intent", {{"target", to_string(plan.target)}, {"goal", to_string(plan.goal)}, {"device", plan.device},
                  {"backend", plan.backend}}},
      {"requires_confirmation", plan.requires_confirmation},
      {"preset", plan.preset},
      {"calibration", {{"method", method_name(plan.calib_method)}, {"samples", plan.calibration_samples},
                       {"batch", plan.calibration_batch}}},
      {"algorithms", plan.algorithms},
      {"recovery_ladder", ladder_json(plan.recovery_ladder)},
      {"recovery_ladder_without_cle", ladder_json(plan.recovery_ladder_without_cle)},
      {"include", {{"op_types", plan.include_op_types}}},
      {"exclude", {{"node_names", plan.exclude_node_names}}},
      {"higher_precision", {{"format", plan.higher_precision_format}, {"node_names", plan.higher_precision_nodes}}},
      {"external_data", plan.external_data},
      {"evaluation", {{"metric", plan.evaluation_metric}, {"criteria", plan.evaluation_criteria},
                      {"samples", plan.evaluation_samples}}},
      {"decisions", decisions},
      {"risks", risks},
      {"config", config_to_json(plan.config, shape)},
  };
  return json;
}

QuantPlan plan_from_json(const Json& json, const std::string& label) {
  const std::vector<std::string> errors = validate_json(plan_schema(), json);
  if (!errors.empty()) {
    throw_bad_input(label, "not a valid plan: " + errors.front() +
                               (errors.size() > 1 ? " (and " + std::to_string(errors.size() - 1) + " more)" : ""));
  }
  QuantPlan plan;
  const Json& model = json["model"];
  plan.model_path = model["path"].get<std::string>();
  plan.model_fingerprint = model["fingerprint"].get<std::string>();
  plan.model_bytes = model["bytes"].get<uint64_t>();
  for (Architecture a : {Architecture::kCnn, Architecture::kTransformer, Architecture::kHybrid, Architecture::kRecurrent,
                         Architecture::kUnknown}) {
    if (model["architecture"] == to_string(a)) plan.architecture = a;
  }
  for (TaskType t : {TaskType::kClassification, TaskType::kDetection, TaskType::kRegression, TaskType::kSequence,
                     TaskType::kUnknown}) {
    if (model["task"] == to_string(t)) plan.task = t;
  }
  const Json& intent = json["intent"];
  plan.target = *plan_target_names().from_name(intent["target"].get<std::string>());  // the schema lists the names
  plan.goal = *plan_goal_names().from_name(intent["goal"].get<std::string>());
  plan.device = intent["device"].get<std::string>();
  plan.backend = intent["backend"].get<std::string>();
  plan.requires_confirmation = json["requires_confirmation"].get<bool>();
  plan.preset = json["preset"].get<std::string>();
  if (!preset_config(plan.preset)) {
    throw_bad_input(label, "not a valid plan: /preset: unknown preset '" + plan.preset + "' (known: " +
                               text::join(preset_names()) + ")");
  }
  const std::string method = json["calibration"]["method"].get<std::string>();
  const std::optional<CalibMethod> calib_method = calib_method_from_name(method);
  if (!calib_method) {
    throw_bad_input(label, "the plan calibrates with " + method +
                               ", which is no calibration method of this run (a plugin's? name it with --use-plugin)");
  }
  plan.calib_method = *calib_method;
  plan.calibration_samples = json["calibration"]["samples"].get<int64_t>();
  plan.calibration_batch = json["calibration"]["batch"].get<int64_t>();
  plan.algorithms = json["algorithms"].get<std::vector<std::string>>();
  // Plans written before a ladder existed have none.
  const auto read_ladder = [&](const char* key, std::vector<std::vector<AlgorithmEntry>>& ladder) {
    if (!json.contains(key)) return;
    const Json& rungs = json[key];
    for (size_t i = 0; i < rungs.size(); ++i) {
      const std::string where = label + " (" + key + "/" + std::to_string(i) + ")";
      ladder.push_back(parse_config(Json{{"algo_config", rungs[i]}}, where).algorithms);
    }
  };
  read_ladder("recovery_ladder", plan.recovery_ladder);
  read_ladder("recovery_ladder_without_cle", plan.recovery_ladder_without_cle);
  plan.include_op_types = json["include"]["op_types"].get<std::vector<std::string>>();
  plan.exclude_node_names = json["exclude"]["node_names"].get<std::vector<std::string>>();
  plan.higher_precision_format = json["higher_precision"]["format"].get<std::string>();
  plan.higher_precision_nodes = json["higher_precision"]["node_names"].get<std::vector<std::string>>();
  plan.external_data = json["external_data"].get<bool>();
  plan.evaluation_metric = json["evaluation"]["metric"].get<std::string>();
  plan.evaluation_criteria = json["evaluation"]["criteria"].get<std::vector<std::string>>();
  plan.evaluation_samples = json["evaluation"]["samples"].get<int64_t>();
  for (const auto& d : json["decisions"]) {
    plan.decisions.push_back({d["decision"].get<std::string>(), d["value"].get<std::string>(), d["reason"].get<std::string>()});
  }
  for (const auto& r : json["risks"]) plan.risks.push_back({r["severity"].get<std::string>(), r["risk"].get<std::string>()});
  plan.config = parse_config(json["config"], label + " (config)");
  return plan;
}

void save_plan(const QuantPlan& plan, const std::string& path, ConfigShape shape) {
  Json json;
  try {
    json = plan_to_json(plan, shape);
  } catch (const Error& error) {
    throw Error(error.kind(), path, error.message());
  }
  const std::vector<std::string> errors = validate_json(plan_schema(), json);
  if (!errors.empty()) throw Error(ErrorKind::kInternal, path, "the plan does not follow its schema: " + errors.front());
  write_file_atomically(path, json.dump(2) + "\n");
}

QuantPlan load_plan(const std::string& path) {
  const Json json = json_text::parse_json(read_file(path, "a quantization plan"), path, "JSON");
  return json_text::with_json_errors(path, "a quantization plan", [&] { return plan_from_json(json, path); });
}

std::optional<std::string> plan_blocker(const QuantPlan& plan) {
  if (plan.requires_confirmation) {
    return "the plan is a draft (requires_confirmation: true): review it, then rerun `mixprec plan` with --yes or set it "
           "to false";
  }
  for (const std::string& name : plan.algorithms) {
    const auto row = std::ranges::find_if(kAlgorithms, [&](const AlgorithmTraits& a) { return name == a.name; });
    if (row == std::end(kAlgorithms) || !row->implemented) {
      return "the plan lists algorithm '" + name + "', which mixprec does not implement: remove it from \"algorithms\"";
    }
  }
  return std::nullopt;
}

QuantizeReport quantize_with_plan(const std::string& plan_path, QuantizeParams params) {
  const QuantPlan plan = load_plan(plan_path);
  if (const auto why = plan_blocker(plan)) throw_bad_input(plan_path, *why);
  if (params.config.given() > 0 || params.calib_method) {
    throw_bad_input(plan_path, "a plan carries its own config: give no --config, --preset or --calib-method with it");
  }
  std::string& model_path = params.setup.model_path;
  if (model_path.empty()) model_path = plan.model_path;
  const std::string fingerprint = model_fingerprint(load_model(model_path, {.load_external_data = false}));
  if (fingerprint != plan.model_fingerprint) {
    throw_bad_input(plan_path, "the plan was made for another model (" + plan.model_path + ", fingerprint " +
                                   plan.model_fingerprint + "); " + model_path + " has fingerprint " + fingerprint +
                                   ": run `mixprec plan` on it");
  }
  params.config.config = plan.config;
  return quantize_job(params);
}

}  // namespace mixprec
