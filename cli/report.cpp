// `mixprec report WORK_DIR`, and the report the run commands (explore, guide, dry-run) leave in
// their work dir however they end: WorkDirReport (common.h).
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <mutex>

#include <nlohmann/json.hpp>

#include "common.h"
#include "mixprec/error.h"
#include "mixprec/html_report.h"
#include "mixprec/log.h"
#include "mixprec/model_io.h"
#include "mixprec/stop.h"

namespace mixprec::cli {
namespace {
namespace fs = std::filesystem;

// The one run a process reports on; main() reaches it through report_failure.
struct ActiveRun {
  std::mutex warnings_mutex;  // guards `warnings` (the log sink runs on any thread)
  std::vector<std::string> warnings;
  std::mutex write_mutex;  // one writer of command.json / report.html at a time
  std::string command, work_dir, model;
  bool pending_error = false;  // the guard ended with an exception: report_failure() writes
};

ActiveRun& active_run() {
  static ActiveRun run;
  return run;
}

// command.json with `status`, then report.html. Never throws: the report must not change how the
// command ends. Returns the report's path, or "" when it could not be written.
std::string write_report(const std::string& status, const std::string& error) {
  ActiveRun& run = active_run();
  const std::lock_guard<std::mutex> lock(run.write_mutex);
  std::vector<std::string> warnings;
  {
    const std::lock_guard<std::mutex> w(run.warnings_mutex);
    warnings = run.warnings;
  }
  try {
    fs::create_directories(run.work_dir);
    const nlohmann::ordered_json record = {{"command", run.command}, {"model", run.model}, {"work_dir", run.work_dir},
                                           {"status", status},       {"error", error},     {"warnings", warnings}};
    write_file_atomically((fs::path(run.work_dir) / "command.json").string(), record.dump(2) + "\n");
    if (status == "running") return "";
    return write_html_report(run.work_dir);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "warning: %s: cannot write the report: %s\n", run.work_dir.c_str(), e.what());
  }
  return "";
}

void say_where(const std::string& path, const char* what) {
  if (!path.empty()) std::fprintf(stderr, "note: %s %s\n", what, path.c_str());
}

}  // namespace

WorkDirReport::WorkDirReport(const std::string& command, const std::string& work_dir, const std::string& model)
    : exceptions_(std::uncaught_exceptions()) {
  ActiveRun& run = active_run();
  run.command = command;
  run.work_dir = fs::absolute(work_dir).lexically_normal().string();
  run.model = model.empty() ? "" : fs::absolute(model).lexically_normal().string();
  run.warnings.clear();
  run.pending_error = false;
  previous_sink_ = set_log_sink(nullptr);
  set_log_sink([forward = previous_sink_](LogLevel level, const std::string& message) {
    if (level == LogLevel::kWarning) {
      ActiveRun& r = active_run();
      const std::lock_guard<std::mutex> lock(r.warnings_mutex);
      r.warnings.push_back(message);
    }
    if (forward) {
      forward(level, message);
    } else if (level == LogLevel::kWarning) {
      std::cerr << "warning: " << message << '\n';
    }
  });
  // Ctrl-C and SIGTERM stop the command after the step in progress (mixprec/stop.h): it ends
  // with a kCancelled error, and report_failure() writes the report of the run so far.
  write_report("running", "");
}

WorkDirReport::~WorkDirReport() {
  const bool failed = std::uncaught_exceptions() > exceptions_;
  if (failed) {
    active_run().pending_error = true;  // main() knows the message: report_failure()
  } else {
    say_where(write_report("done", ""), "report");
  }
  set_log_sink(previous_sink_);
}

void report_failure(const std::string& message, bool stopped) {
  ActiveRun& run = active_run();
  if (!run.pending_error) return;
  run.pending_error = false;
  if (stopped) {
    const char* how = stop_requested() == SIGTERM ? "SIGTERM" : "Ctrl-C";
    say_where(write_report("interrupted", how),
              stop_requested() == SIGTERM ? "terminated (SIGTERM): report of the run so far:"
                                          : "interrupted (Ctrl-C): report of the run so far:");
    return;
  }
  say_where(write_report("error", message), "report of the run so far:");
}

Command add_report(CLI::App& app) {
  struct Flags {
    std::string work_dir, output, model;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "report", "Write the HTML report of a work dir (explore, guide or dry-run; also a stopped run's)");
  cmd->add_option("WORK_DIR", flags->work_dir, "the work dir of a run")->required();
  cmd->add_option("-o,--output", flags->output, "where to write it (default: WORK_DIR/report.html)");
  cmd->add_option("--model", flags->model, "the input model, when the work dir does not name it or it moved");
  cmd->footer(kExitCodesHelp);
  return {cmd, [flags] {
            const std::string path = write_html_report(flags->work_dir, flags->output, {.model_path = flags->model});
            std::cout << "wrote " << path << " (" << fs::file_size(path) / 1000 << " kB)\n";
            return kExitOk;
          }};
}

}  // namespace mixprec::cli
