// guide: the one entry point (SPEC "The workflow"). Runs the phases in order — analyze,
// config, calibrate, baseline, quantize, validate, explore (optional), compile/exec — and
// reports each as it ends, then the outcome. Modes dry-run and requantize hand over to
// mixprec/workflow.h; --strategy ladder replaces config..explore with the shallow ladder.
// Headless: it never waits for input.
//
// Each phase's result is a typed struct (below); mixprec/guide_report.h renders them as text.
// The library builds no report lines.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "mixprec/enum_names.h"
#include "mixprec/explore.h"
#include "mixprec/macs.h"
#include "mixprec/plan.h"
#include "mixprec/plugins.h"
#include "mixprec/run.h"
#include "mixprec/vitisai.h"
#include "mixprec/workflow.h"

namespace mixprec {

enum class GuideMode { kFull, kDryRun, kRequantize };
enum class GuideStage { kCompile, kExec };
const EnumNames<GuideMode>& guide_mode_names();    // "full", "dry-run", "requantize"
const EnumNames<GuideStage>& guide_stage_names();  // "compile", "exec"
inline const char* to_string(GuideMode mode) { return guide_mode_names().name(mode); }
inline const char* to_string(GuideStage stage) { return guide_stage_names().name(stage); }

// Where quantization happens at the model's edges on the device (recorded in the provider
// config; compile checks the model against it): `input` = the device takes float inputs and
// quantizes them itself (a Q at each float input), `output` = it returns float (a DQ at each
// output), `both`, or `none` (the host quantizes inputs and dequantizes outputs). `auto`
// records what the final model does without checking it.
enum class EdgeQuant { kAuto, kNone, kInput, kOutput, kBoth };
const EnumNames<EdgeQuant>& edge_quant_names();  // "auto", "none", "input", "output", "both"
inline const char* to_string(EdgeQuant edge) { return edge_quant_names().name(edge); }

struct GuideParams {
  EvaluationSetup setup;        // work_dir is required (the CLI defaults it to MODEL_STEM.mixprec)
  // device: formats allowed, the proposed config, nominal speeds; provider: compile/exec and the
  // VitisAI config. Accuracy is measured on CPU (accuracy_session) whatever the provider.
  DeploymentTarget deployment;
  std::string config_path;      // empty: make_plan()'s config for the deployment and the architecture
  GuideMode mode = GuideMode::kFull;
  GuideStage stage = GuideStage::kCompile;
  bool explore = false;
  bool ladder = false;          // --strategy ladder: w8a8 -> w8a16 -> float instead of quantize/validate/explore
  // A proposed config that misses its criterion tries the plan's recovery ladder (bias
  // correction, AdaRound, ...) before validate and explore; false (--no-recover): it does not.
  bool recover = true;
  // explore: ranking, search, lift, budget, max iterations (its starting point is the phase's config)
  SearchOptions search;
  size_t latency_runs = 20;     // exec: timed runs per model (after one warm-up)
  EdgeQuant edge_quant = EdgeQuant::kAuto;
  // --edge-quant-auto: compile builds the final model twice, with its edge Q/DQ as kernels and
  // taken over by the runtime (vitisai.h's probe), and writes the flag into the compiler options
  // when it pays (the kernel count falls and nothing falls back to float). Needs edge_quant kAuto.
  bool edge_quant_auto = false;
  // --plugin NAME [ARGS...] (mixprec/plugins.h): the plugin quantizes instead of config..explore,
  // with its arguments passed through untouched; its model is validated and goes through
  // compile with the compiler flags its manifest names. The formats it adds are allowed on its
  // devices for the run. A manifest with a consent banner runs only with plugin_consent (--yes).
  std::string plugin;
  std::vector<std::string> plugin_args;
  std::vector<std::string> plugin_dirs;  // --plugin-dir, searched before MIXPREC_PLUGIN_PATH and the default
  bool plugin_consent = false;
  // The shape of the configs the work dir holds (quantized.config.json, explore's, the ladder's).
  ConfigShape config_shape = ConfigShape::kMixprec;
};

// --- phase results -------------------------------------------------------------------------

struct AnalyzeResult {
  ModelAnalysis analysis;
};

struct ConfigResult {
  std::string given_path;          // the user's config; empty when proposed
  std::optional<QuantPlan> plan;   // the proposal: make_plan() for the deployment, accuracy goal
  std::vector<FormatId> formats;   // every format the config uses
};

struct CalibrateResult {
  bool reused = false;             // read from stats_path
  std::string stats_path;
  std::string data_description;
  size_t tensors = 0;
};

struct BaselineResult {
  std::string data_description;
  size_t samples = 0;
  double seconds = 0;              // the FP32 pass over every sample
};

struct MethodTrial {
  CalibMethod method;
  double psnr_db = 0;              // worst output
  bool pass = false;
};

struct QuantizeResult {
  std::vector<MethodTrial> methods;  // a proposed config: every method the device allows, on the same statistics
  CalibMethod kept = CalibMethod::kMinMax;
  size_t layers = 0;               // nodes the config quantizes or lifts
  size_t integer_layers = 0;
  std::vector<FormatId> formats;
  std::string model_path, config_path;
};

// One rung of the recovery ladder: the config's algorithms plus the rung's, on the same
// statistics and calibration method.
struct RecoveryTrial {
  std::vector<std::string> algorithms;  // everything the rung's config runs (algorithm_labels: "cle", "adaround")
  std::vector<OutputMetrics> metrics;
  Verdict verdict;
  double psnr_db = 0;                   // worst output
  std::optional<double> top1;           // worst top-1 agreement, where outputs have classes
  double seconds = 0;                   // the rung: its algorithms, rewrite and evaluation
  double reconstruction_seconds = 0;    // AdaRound / AdaQuant
  size_t learned_layers = 0, reused_layers = 0;
  double bias_correction_seconds = 0;
  size_t corrected_biases = 0, reused_biases = 0;  // reused: shifts from the work dir's store
};

struct RecoverResult {
  bool needed = false;                  // the quantize phase's config missed the criterion
  std::string skipped;                  // why no rung ran (empty when they did)
  std::vector<RecoveryTrial> trials;    // [0]: the quantize phase's config, then each rung tried
  size_t kept = 0;                      // index into trials
  std::string model_path, config_path;  // rewritten when a rung was kept
};

struct ValidateResult {
  TaskType task = TaskType::kUnknown;
  std::vector<OutputMetrics> metrics;
  Verdict verdict;
};

struct ExplorePhaseResult {
  bool requested = false;          // --explore
  bool needed = false;             // the config missed the criterion
  SearchOptions search;            // what the search was asked to do
  std::optional<ExploreResult> result;
};

struct PluginResult {
  PluginManifest manifest;
  std::vector<std::string> args;
  PluginRun run;
  size_t host_quantizations = 0;   // quantize calls the plugin made through the host
};

struct EdgeCheck {
  EdgeQuant requested = EdgeQuant::kAuto;  // auto: recorded as what the model does
  bool checked = false;                    // an explicit request, compared with the model
  int64_t float_inputs = 0, quantized_inputs = 0, outputs = 0, dequantized_outputs = 0;
  bool matches = true;
};

struct CompileResult {
  std::string provider;
  std::string device;
  double session_ms = 0;           // session build with every graph optimization
  std::string optimized_model_path;
  PartitionReport partition;       // which share of the MACs the provider runs in integer kernels
  Coverage coverage;               // of the final model
  IslandSummary islands;
  double time_vs_bf16 = 1;         // expected compute time of the final model on the device
  double start_time_vs_bf16 = 1;   // of the starting config
  double macs = 0;
  EdgeCheck edges;
  std::optional<EdgeProbe> edge_probe;  // --edge-quant-auto
  CompilerOptions compiler;             // written into vitisai_config.json
  std::string provider_config_path;  // vitisai_config.json, for NPU devices and the VitisAI provider
  std::string deployment_path;       // deployment.json: provider options, device, formats, edges, compiler options
  std::string provider_cache_dir;
};

struct ExecResult {
  std::string provider;
  LatencyStats fp32, final_model, full_bf16;
  std::optional<LatencyStats> full_int8;  // when the starting config is all integer and differs from the final model
  // --edge-quant-auto on a provider other than VitisAI: the probe's model with the runtime's part
  // done on the host in each timed run (inputs quantized, outputs dequantized with the edges'
  // parameters), against final_model with its edge Q/DQ as kernels.
  std::optional<LatencyStats> edges_on_host;
  bool integer_start = false;             // the starting config is all integer
  bool mixed_final = false;               // the final model mixes integer and float formats
  double speedup() const { return final_model.median_ms > 0 ? fp32.median_ms / final_model.median_ms : 0; }
};

using PhaseResult = std::variant<std::monostate, AnalyzeResult, ConfigResult, CalibrateResult, BaselineResult,
                                 QuantizeResult, RecoverResult, ValidateResult, ExplorePhaseResult, CompileResult, ExecResult,
                                 PluginResult,
                                 LadderReport, DryRunReport, RequantizeReport>;

enum class PhaseStatus { kDone, kPass, kFail, kSkipped, kNotRun };
const EnumNames<PhaseStatus>& phase_status_names();  // "done", "pass", "fail", "skipped", "not run"
inline const char* to_string(PhaseStatus status) { return phase_status_names().name(status); }

struct GuidePhase {
  std::string name;             // "analyze", "config", "calibrate", "baseline", "quantize", ...
  PhaseStatus status = PhaseStatus::kDone;
  double seconds = 0;
  PhaseResult result;
};

struct GuideReport {
  GuideMode mode = GuideMode::kFull;
  std::vector<GuidePhase> phases;
  std::string final_model_path, final_config_path;
  std::string provider_config_path;  // vitisai_config.json, for NPU devices and the VitisAI provider
  bool pass = false;            // the final model meets the criterion (dry-run: always false)
  std::string criterion;        // what the final model was judged against
  std::string device;
  double time_vs_bf16 = 1;      // expected compute time of the final model on the device
  std::vector<std::string> warnings;

  // The result a phase left, by type (nullptr when no phase did): r.result<LadderReport>().
  template <typename T>
  const T* result() const {
    for (const auto& phase : phases) {
      if (const T* found = std::get_if<T>(&phase.result)) return found;
    }
    return nullptr;
  }
  const ExploreResult* explore() const {
    const auto* phase = result<ExplorePhaseResult>();
    return phase && phase->result ? &*phase->result : nullptr;
  }
};

// Called as each phase ends.
using PhaseCallback = std::function<void(const GuidePhase&)>;

GuideReport guide(const GuideParams& params, const PhaseCallback& on_phase = {});

// An environment script (-t): `NAME=VALUE` and `export NAME=VALUE` lines, values optionally
// quoted; blank lines and # comments are skipped. Anything else (a command, a `source`) is
// kBadInput naming the line, since it cannot be applied without a shell.
std::vector<std::pair<std::string, std::string>> read_env_script(const std::string& path);

}  // namespace mixprec
