// guide: the one entry point (SPEC "The workflow"). Runs the phases in order — analyze,
// config, calibrate, baseline, quantize, validate, explore (optional), compile/exec — and
// reports each as it ends, then the outcome. Modes dry-run and requantize hand over to
// mixprec/workflow.h. Headless: it never waits for input.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mixprec/explore.h"
#include "mixprec/workflow.h"

namespace mixprec {

enum class GuideMode { kFull, kDryRun, kRequantize };
enum class GuideStage { kCompile, kExec };
const char* to_string(GuideMode mode);
const char* to_string(GuideStage stage);
std::optional<GuideMode> guide_mode_from_name(const std::string& name);    // full, dry-run, requantize
std::optional<GuideStage> guide_stage_from_name(const std::string& name);  // compile, exec

// Where quantization happens at the model's edges on the device (recorded in the provider
// config; compile checks the model against it): `input` = the device takes float inputs and
// quantizes them itself (a Q at each float input), `output` = it returns float (a DQ at each
// output), `both`, or `none` (the host quantizes inputs and dequantizes outputs). `auto`
// records what the final model does without checking it.
enum class EdgeQuant { kAuto, kNone, kInput, kOutput, kBoth };
const char* to_string(EdgeQuant edge);
std::optional<EdgeQuant> edge_quant_from_name(std::string_view name);

struct GuideParams {
  EvaluationSetup setup;        // work_dir is required (the CLI defaults it to MODEL_STEM.mixprec)
  // device: formats allowed, the proposed config, nominal speeds; provider: compile/exec and the
  // VitisAI config. Accuracy is measured on CPU (accuracy_session) whatever the provider.
  DeploymentTarget deployment;
  std::string config_path;      // empty: propose one from the analysis and the device
  GuideMode mode = GuideMode::kFull;
  GuideStage stage = GuideStage::kCompile;
  bool explore = false;
  bool ladder = false;          // --strategy ladder: w8a8 -> w8a16 -> float instead of quantize/validate/explore
  // explore: ranking, search, lift, budget, max iterations (its starting point is the phase's config)
  SearchOptions search;
  size_t latency_runs = 20;     // exec: timed runs per model (after one warm-up)
  EdgeQuant edge_quant = EdgeQuant::kAuto;
};

struct GuidePhase {
  std::string name;             // "analyze", "config", "calibrate", "baseline", "quantize", ...
  std::string status;           // "done", "pass", "fail", "skipped", "not run"
  std::vector<std::string> lines;  // what it found, one fact per line
  double seconds = 0;
};

struct GuideReport {
  GuideMode mode = GuideMode::kFull;
  std::vector<GuidePhase> phases;
  std::string final_model_path, final_config_path;
  std::string provider_config_path;  // vitisai_config.json, for NPU devices and the VitisAI provider
  bool pass = false;            // the final model meets the criterion (dry-run: always false)
  std::string outcome;          // one paragraph: what to use and why
  std::optional<DryRunReport> dry_run;
  std::optional<RequantizeReport> requantize;
  std::optional<ExploreResult> explore;
  std::optional<LadderReport> ladder;
  std::vector<std::string> warnings;
};

// Called as each phase ends.
using PhaseCallback = std::function<void(const GuidePhase&)>;

GuideReport guide(const GuideParams& params, const PhaseCallback& on_phase = {});

// An environment script (-t): `NAME=VALUE` and `export NAME=VALUE` lines, values optionally
// quoted; blank lines and # comments are skipped. Anything else (a command, a `source`) is
// kBadInput naming the line, since it cannot be applied without a shell.
std::vector<std::pair<std::string, std::string>> read_env_script(const std::string& path);

}  // namespace mixprec
