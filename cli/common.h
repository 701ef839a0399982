// Shared pieces of the subcommands: exit codes, data and runtime flags.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "mixprec/metrics.h"
#include "mixprec/pipeline.h"
#include "mixprec/runtime.h"
#include "mixprec/sample_source.h"

namespace mixprec::cli {

// Documented in `mixprec --help` and the README.
inline constexpr int kExitOk = 0;
inline constexpr int kExitInternal = 1;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitAccuracyFailure = 3;  // compare, explore, requantize, guide: the criterion is missed

inline constexpr const char* kExitCodesHelp =
    "Exit codes: 0 ok; 1 internal or runtime failure; 2 bad usage or bad input (the message names the file).";

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

// Flags that pick the runtime: --ep, --ep-option, --threads.
struct RuntimeFlags {
  std::string provider = "CPU";
  std::vector<std::string> provider_options;
  int threads = 0;

  void add_to(CLI::App& cmd);
  SessionOptions resolve() const;
};

// --calib-method NAME; an unknown name is an error listing the known ones.
CalibMethod parse_calib_method(const std::string& name);

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
Command add_compare(CLI::App& app);
Command add_explore(CLI::App& app);
Command add_dry_run(CLI::App& app);
Command add_requantize(CLI::App& app);
Command add_guide(CLI::App& app);
Command add_ladder(CLI::App& app);
Command add_plan(CLI::App& app);

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

  void add_to(CLI::App& cmd);
  std::optional<AccuracyTarget> resolve_target() const;  // nullopt: the task's own criterion
};

// Calibration data given as files beside evaluation data: the evaluation spec's preprocessing
// and sizes, with `files` as the samples.
DataSpec calibration_spec(const DataSpec& evaluation, const std::vector<std::string>& files);

// `given`, or MODEL_STEM + suffix in the current directory ("det.mixprec").
std::string work_dir_or_default(const std::string& given, const std::string& model, const std::string& suffix);

// A progress callback drawing "label  done/total  rate/s" on stderr when it is a terminal,
// and nothing otherwise (logs and CI stay clean).
ProgressFn progress_bar(const std::string& label);

}  // namespace mixprec::cli
