// mixprec: quantize ONNX models and find the smallest set of layers that must stay at higher
// precision. This file wires subcommands and maps errors to exit codes; every subcommand is a
// thin layer over one library call.
#include <unistd.h>

#include <csignal>
#include <iostream>
#include <string_view>

#include "common.h"
#include "mixprec/error.h"
#include "mixprec/log.h"
#include "mixprec/runtime.h"
#include "mixprec/stop.h"

namespace {

int exit_code_for(mixprec::ErrorKind kind) {
  switch (kind) {
    case mixprec::ErrorKind::kBadInput:
    case mixprec::ErrorKind::kUnsupported:
    case mixprec::ErrorKind::kIo:
      return mixprec::cli::kExitBadInput;
    case mixprec::ErrorKind::kRuntime:
    case mixprec::ErrorKind::kInternal:
      return mixprec::cli::kExitInternal;
    case mixprec::ErrorKind::kCancelled:
      return mixprec::cli::kExitInterrupted;
  }
  return mixprec::cli::kExitInternal;
}

// ONNX Runtime's own log lines are info (shown with -v); without -v say how many there were.
void note_runtime_messages(bool verbose) {
  const size_t count = mixprec::runtime_log_messages();
  if (!verbose && count > 0) {
    std::cerr << "note: " << count << " ONNX Runtime log message" << (count == 1 ? "" : "s")
              << " (optimizer notes) not shown; -v shows them\n";
  }
}

// The commands made of steps, which stop cleanly between two of them (stop.h). The others
// keep the default signal action: their outputs are written atomically, so a kill leaves no
// half-written file.
constexpr std::string_view kStepwiseCommands[] = {"explore", "guide", "dry-run", "ladder"};

extern "C" void on_stop_signal(int number) {
  mixprec::request_stop(number);
  constexpr std::string_view kNote =
      "\nmixprec: stopping after the step in progress (again to stop at once)\n";
  [[maybe_unused]] const ssize_t written = ::write(STDERR_FILENO, kNote.data(), kNote.size());
}

// The first SIGINT/SIGTERM asks for a stop; SA_RESETHAND gives the second its default action.
void handle_stop_signals() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  action.sa_flags = SA_RESETHAND;
  sigemptyset(&action.sa_mask);
  for (const int number : {SIGINT, SIGTERM}) sigaction(number, &action, nullptr);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace mixprec::cli;
  CLI::App app{"mixprec: quantize ONNX models and search mixed precision (INT8 / BF16 / FP16)", "mixprec"};
  app.footer(kExitCodesHelp);
  app.require_subcommand(0, 1);
  bool verbose = false, version = false;
  app.add_flag("-v,--verbose", verbose, "print progress and info messages on stderr");
  app.add_flag("--version", version,
               "print mixprec's version and the ONNX Runtime in use (MIXPREC_ORT_LIB=PATH loads another build)");

  const std::vector<Command> commands = {add_guide(app), add_analyze(app), add_run(app), add_quantize(app),
                                         add_dequantize(app), add_patch(app), add_compare(app), add_explore(app), add_dry_run(app),
                                         add_requantize(app), add_ladder(app), add_plan(app),
                                         add_report(app), add_plugins(app), add_mha_mx9(app)};

  // `--plugin NAME ARGS...`: the plugin's arguments never reach the parser.
  std::vector<std::string> args(argv, argv + argc);
  take_plugin_arguments(args);
  std::vector<char*> parsed_argv;
  for (auto& arg : args) parsed_argv.push_back(arg.data());

  try {
    app.parse(static_cast<int>(parsed_argv.size()), parsed_argv.data());
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitBadInput;
  }

  mixprec::set_log_sink([verbose](mixprec::LogLevel level, const std::string& message) {
    if (level == mixprec::LogLevel::kWarning) {
      std::cerr << "warning: " << message << '\n';
    } else if (verbose) {
      std::cerr << message << '\n';
    }
  });

  try {
    if (version) {
      std::cout << "mixprec " << MIXPREC_VERSION << "\n"
                << "ONNX Runtime " << mixprec::runtime_version() << " (" << mixprec::runtime_library() << ")\n"
                << "providers";
      for (const auto& provider : mixprec::available_providers()) std::cout << " " << provider;
      std::cout << "\n";
      return kExitOk;
    }
    if (app.get_subcommands().empty()) {
      std::cerr << app.help();
      return kExitBadInput;
    }
    for (const auto& command : commands) {
      if (!command.app->parsed()) continue;
      for (const std::string_view name : kStepwiseCommands) {
        if (command.app->get_name() == name) handle_stop_signals();
      }
      const int code = command.action();
      note_runtime_messages(verbose);
      return code;
    }
    return kExitBadInput;
  } catch (const mixprec::Error& e) {
    note_runtime_messages(verbose);
    std::cerr << (e.kind() == mixprec::ErrorKind::kCancelled ? "mixprec: " : "mixprec: error: ") << e.what() << '\n';
    report_failure(e.what(), e.kind() == mixprec::ErrorKind::kCancelled);
    return exit_code_for(e.kind());
  } catch (const std::exception& e) {
    std::cerr << "mixprec: internal error: " << e.what() << '\n';
    report_failure(std::string("internal error: ") + e.what());
    return kExitInternal;
  }
}
