// Shared pieces of the subcommands: exit codes, data and runtime flags.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "mixprec/plugins.h"
#include "mixprec/error.h"

#include "mixprec/config.h"
#include "mixprec/enum_names.h"
#include "mixprec/log.h"
#include "mixprec/evaluation.h"
#include "mixprec/explore.h"
#include "mixprec/metrics.h"
#include "mixprec/runtime.h"
#include "mixprec/sample_source.h"

namespace mixprec::cli {

// Documented in `mixprec --help` and the README.
inline constexpr int kExitOk = 0;
inline constexpr int kExitInternal = 1;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitAccuracyFailure = 3;  // compare, explore, requantize, guide: the criterion is missed
inline constexpr int kExitInterrupted = 130;    // SIGINT/SIGTERM: stopped between two steps (128 + SIGINT)

inline constexpr const char* kExitCodesHelp =
    "Exit codes: 0 ok; 1 internal or runtime failure; 2 bad usage or bad input (the message names the file); "
    "3 the accuracy criterion is missed; 130 stopped by Ctrl-C or SIGTERM (explore, guide, dry-run and ladder finish "
    "the step in progress first and keep their best state).";

// Flags that say where samples come from: --data, --random, --seed, --input-shape.
struct DataFlags {
  std::vector<std::string> files;
  size_t random = 0;
  uint64_t seed = 0;
  std::vector<std::string> input_shapes;

  // `files_flag` names the file option ("--data", "--calibration-data").
  void add_to(CLI::App& cmd, size_t default_random, const std::string& files_flag = "--data");
  DataOptions resolve() const;
};

// Where the model is meant to run: --device (when the command has one) and the runtime flags
// --ep, --ep-option, --threads.
struct DeploymentFlags {
  std::string device = "ve2";
  std::string provider = "CPU";
  std::vector<std::string> provider_options;
  int threads = 0;

  // `device_help` empty: the command takes no --device.
  void add_to(CLI::App& cmd, const std::string& provider_help, const std::string& device_help = "");
  DeploymentTarget resolve() const;  // an unknown device fails here, before any work
};

// --calib-method NAME; an unknown name is an error listing the known ones.
CalibMethod parse_calib_method(const std::string& name);

// The presets' names, comma separated, for --preset help texts.
std::string preset_list();

// --config-format mixprec|quark: the shape of the config files the command writes.
struct ConfigFormatFlag {
  std::string format = "mixprec";

  void add_to(CLI::App& cmd, const std::string& written);  // `written`: which files
  ConfigShape resolve() const;
};

// Each subcommand registers itself on the app and returns the action to run once parsed;
// the action returns the exit code.
struct Command {
  CLI::App* app;
  std::function<int()> action;
};
Command add_analyze(CLI::App& app);
Command add_run(CLI::App& app);
Command add_quantize(CLI::App& app);
Command add_dequantize(CLI::App& app);
Command add_patch(CLI::App& app);
Command add_compare(CLI::App& app);
Command add_explore(CLI::App& app);
Command add_dry_run(CLI::App& app);
Command add_requantize(CLI::App& app);
Command add_guide(CLI::App& app);
Command add_ladder(CLI::App& app);
Command add_plan(CLI::App& app);
Command add_report(CLI::App& app);
Command add_plugins(CLI::App& app);
Command add_mha_mx9(CLI::App& app);

// `--plugin NAME ARGS...`: everything after NAME belongs to the plugin, untouched (cli/plugins.cpp).
// main() takes it off the command line before parsing; guide reads it back.
std::vector<std::string> take_plugin_arguments(std::vector<std::string>& args);
const std::vector<std::string>& plugin_arguments();

// --use-plugin NAME (repeatable), --plugin-dir DIR, --yes: plugins whose calibration methods and
// passes the command's config and --calib-method may name (cli/plugins.cpp).
struct PluginFlags {
  std::vector<std::string> use, dirs;
  bool yes = false;

  void add_to(CLI::App& cmd);
  // Each --use-plugin, once, for `device`: its banner consented to (--yes, or y on a terminal;
  // elsewhere an error quoting it), then loaded, with a line saying what it adds. Call it
  // before anything reads a config or a method name.
  void load(const std::string& device) const;
};
// A plugin's banner: true when it has none, --yes was given, or the user answers y on a terminal.
bool plugin_consent(const PluginManifest& plugin, bool yes);

// The report a run command leaves in its work dir however it ends (cli/report.cpp). While alive
// it records the command's warnings and keeps WORK_DIR/command.json (the command, the model,
// how it ended, the warnings; the HTML report reads it) up to date, and it writes
// WORK_DIR/report.html: when it goes out of scope after the command's work; from
// report_failure() when an error ended the command (main() calls it with the message), which
// includes Ctrl-C or SIGTERM: the command stops after the step in progress (exit 130 or 143)
// and the report shows the run so far. One at a time.
class WorkDirReport {
 public:
  WorkDirReport(const std::string& command, const std::string& work_dir, const std::string& model);
  ~WorkDirReport();
  WorkDirReport(const WorkDirReport&) = delete;
  WorkDirReport& operator=(const WorkDirReport&) = delete;

 private:
  int exceptions_;
  LogSink previous_sink_;
};
// The error that ended the command, for the report of the run so far (no-op without one);
// `stopped`: the command stopped on Ctrl-C / SIGTERM (a kCancelled error).
void report_failure(const std::string& message, bool stopped = false);

// Flags for sample data that may be pictures: DataFlags plus --preprocess and --image-size.
struct SampleFlags {
  DataFlags data;
  std::string preprocess;
  std::string image_size;  // HxW

  void add_to(CLI::App& cmd, const std::string& files_flag, size_t default_random);
  DataSpec resolve() const;
};

// The accuracy criterion flags: --target-accuracy, --atol, --rtol.
struct CriterionFlags {
  std::string target;
  Tolerance tolerance;
  const CLI::Option* target_option = nullptr;  // given on the command line, even as ""

  void add_to(CLI::App& cmd);
  std::optional<AccuracyTarget> resolve_target() const;  // nullopt: the task's own criterion
};

// The evaluation setup of a command: --calibration-data, the sample flags (--data, --random,
// --seed, --input-shape, --preprocess, --image-size; calibration files share the preprocessing),
// the criterion flags and --eval-cache-mb.
struct SetupFlags {
  std::vector<std::string> calibration;
  SampleFlags data;
  CriterionFlags criterion;
  size_t eval_cache_mb = EvaluationSetup{}.eval_cache_bytes >> 20;

  // `default_random`: --random's default when no --data is given.
  void add_to(CLI::App& cmd, size_t default_random, const std::string& calibration_help);
  EvaluationSetup resolve(const std::string& model, const std::string& work_dir, const std::string& progress_label) const;
};

// explore's and guide's search flags: --ranking, --search, --lift, --bf16-budget, --time-budget,
// --max-iters, --calib-method, --pareto, --adaptive / --no-adaptive, --trim.
struct SearchFlags {
  std::string ranking = "layer-error", search = "greedy", lift = "BF16", calib_method;
  double budget = 0.3;
  double time_budget = 0;
  size_t max_iterations = 0;
  bool pareto = false;
  bool adaptive = false, no_adaptive = false;
  size_t trim = kDefaultTrim;
  CLI::Option* trim_option = nullptr;  // given: trim as said; else SearchOptions' default

  void add_to(CLI::App& cmd);
  SearchOptions resolve() const;
};

// A value of `names` (case-insensitive); kBadInput naming the flag and the choices otherwise.
template <typename E>
E parse_choice(const EnumNames<E>& names, const std::string& flag, const std::string& value) {
  if (const auto parsed = names.from_name(value)) return *parsed;
  throw_bad_input("", "unknown " + flag + " '" + value + "' (" + names.list() + ")");
}

// `given`, or MODEL_STEM + suffix in the current directory ("det.mixprec").
std::string work_dir_or_default(const std::string& given, const std::string& model, const std::string& suffix);

// A progress callback drawing "label  done/total  rate/s" on stderr when it is a terminal,
// and nothing otherwise (logs and CI stay clean).
ProgressFn progress_bar(const std::string& label);

}  // namespace mixprec::cli
