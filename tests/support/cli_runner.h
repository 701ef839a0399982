// Runs the mixprec executable as a user would and captures exit code, stdout and stderr.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace mixprec::testing {

struct CliResult {
  int exit_code = -1;
  std::string out;
  std::string err;
  uint64_t peak_rss_bytes = 0;  // the child's largest resident set (getrusage's ru_maxrss)
  double seconds = 0;           // wall time
};

// Faults injected into the child process.
struct CliFaults {
  // RLIMIT_FSIZE in bytes (0: none), with SIGXFSZ ignored, so a write past it fails with EFBIG
  // as on a full disk.
  uint64_t file_size_limit = 0;
};

// `exe` defaults to the MIXPREC_EXE path compiled into the test; arguments are passed as-is
// (no shell).
CliResult run_cli_at(const std::string& exe, const std::vector<std::string>& args, const CliFaults& faults = {});

// As run_cli_at, and sends `signal` to the process once `ready()` holds (polled every 10 ms
// while it runs). `sent` says whether the signal went out before the process ended by itself.
CliResult run_cli_signalled(const std::string& exe, const std::vector<std::string>& args,
                            const std::function<bool()>& ready, int signal, bool& sent);

}  // namespace mixprec::testing

#ifdef MIXPREC_EXE
namespace mixprec {
inline testing::CliResult run_cli(const std::vector<std::string>& args, const testing::CliFaults& faults = {}) {
  return testing::run_cli_at(MIXPREC_EXE, args, faults);
}
using testing::CliResult;
}  // namespace mixprec
#endif
