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
#include <thread>

namespace mixprec::testing {
namespace {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Child {
  pid_t pid = -1;
  fs::path out, err;
  Clock::time_point start;
};

Child spawn(const std::string& exe, const std::vector<std::string>& args, const CliFaults& faults) {
  static int counter = 0;
  const fs::path base =
      fs::temp_directory_path() / ("mixprec_cli_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  Child child{.out = base.string() + ".out", .err = base.string() + ".err", .start = Clock::now()};
  std::fflush(stdout);  // or the child inherits and re-prints unflushed output
  std::fflush(stderr);
  child.pid = ::fork();
  if (child.pid < 0) throw std::runtime_error("fork failed");
  if (child.pid == 0) {
    if (!std::freopen(child.out.c_str(), "w", stdout) || !std::freopen(child.err.c_str(), "w", stderr)) _exit(127);
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
  return child;
}

CliResult collect(const Child& child, int status, const rusage& usage) {
  CliResult result;
  result.peak_rss_bytes = static_cast<uint64_t>(usage.ru_maxrss) * 1024;
  result.seconds = std::chrono::duration<double>(Clock::now() - child.start).count();
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.out = slurp(child.out);
  result.err = slurp(child.err);
  fs::remove(child.out);
  fs::remove(child.err);
  return result;
}
}  // namespace

CliResult run_cli_at(const std::string& exe, const std::vector<std::string>& args, const CliFaults& faults) {
  const Child child = spawn(exe, args, faults);
  int status = 0;
  rusage usage{};
  ::wait4(child.pid, &status, 0, &usage);
  return collect(child, status, usage);
}

CliResult run_cli_signalled(const std::string& exe, const std::vector<std::string>& args,
                            const std::function<bool()>& ready, int signal, bool& sent) {
  const Child child = spawn(exe, args, {});
  sent = false;
  int status = 0;
  rusage usage{};
  while (::wait4(child.pid, &status, WNOHANG, &usage) == 0) {
    if (!sent && ready()) {
      ::kill(child.pid, signal);
      sent = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return collect(child, status, usage);
}

}  // namespace mixprec::testing
