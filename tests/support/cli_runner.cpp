#include "support/cli_runner.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace mixprec::testing {
namespace {
std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}
}  // namespace

CliResult run_cli_at(const std::string& exe, const std::vector<std::string>& args, const CliFaults& faults) {
  namespace fs = std::filesystem;
  static int counter = 0;
  const fs::path base =
      fs::temp_directory_path() / ("mixprec_cli_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  const fs::path out_path = base.string() + ".out";
  const fs::path err_path = base.string() + ".err";
  std::fflush(stdout);  // or the child inherits and re-prints unflushed output
  std::fflush(stderr);
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    if (!std::freopen(out_path.c_str(), "w", stdout) || !std::freopen(err_path.c_str(), "w", stderr)) _exit(127);
    if (faults.file_size_limit > 0) {
      std::signal(SIGXFSZ, SIG_IGN);  // stays ignored across exec: writes fail with EFBIG instead
      const rlimit limit{faults.file_size_limit, faults.file_size_limit};
      if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) _exit(127);
    }
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(exe.c_str()));
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(exe.c_str(), argv.data());
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  ::wait4(pid, &status, 0, &usage);
  CliResult result;
  result.peak_rss_bytes = static_cast<uint64_t>(usage.ru_maxrss) * 1024;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.out = slurp(out_path);
  result.err = slurp(err_path);
  fs::remove(out_path);
  fs::remove(err_path);
  return result;
}

}  // namespace mixprec::testing
