// Runs the mixprec executable as a user would and captures exit code, stdout and stderr.
#pragma once

#include <string>
#include <vector>

namespace mixprec::testing {

struct CliResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// `exe` defaults to the MIXPREC_EXE path compiled into the test; arguments are passed as-is
// (no shell).
CliResult run_cli_at(const std::string& exe, const std::vector<std::string>& args);

}  // namespace mixprec::testing

#ifdef MIXPREC_EXE
namespace mixprec {
inline testing::CliResult run_cli(const std::vector<std::string>& args) {
  return testing::run_cli_at(MIXPREC_EXE, args);
}
using testing::CliResult;
}  // namespace mixprec
#endif
