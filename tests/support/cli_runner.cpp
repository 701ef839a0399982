#include "support/cli_runner.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

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

struct Child {
  pid_t pid = -1;
  std::filesystem::path out, err;
};

Child spawn(const std::string& exe, const std::vector<std::string>& args) {
  namespace fs = std::filesystem;
  static int counter = 0;
  const fs::path base =
      fs::temp_directory_path() / ("mixprec_cli_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  Child child{.out = base.string() + ".out", .err = base.string() + ".err"};
  std::fflush(stdout);  // or the child inherits and re-prints unflushed output
  std::fflush(stderr);
  child.pid = ::fork();
  if (child.pid < 0) throw std::runtime_error("fork failed");
  if (child.pid == 0) {
    if (!std::freopen(child.out.c_str(), "w", stdout) || !std::freopen(child.err.c_str(), "w", stderr)) _exit(127);
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(exe.c_str()));
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(exe.c_str(), argv.data());
    _exit(127);
  }
  return child;
}

CliResult collect(const Child& child, int status) {
  CliResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.out = slurp(child.out);
  result.err = slurp(child.err);
  std::filesystem::remove(child.out);
  std::filesystem::remove(child.err);
  return result;
}
}  // namespace

CliResult run_cli_at(const std::string& exe, const std::vector<std::string>& args) {
  const Child child = spawn(exe, args);
  int status = 0;
  ::waitpid(child.pid, &status, 0);
  return collect(child, status);
}

CliResult run_cli_signalled(const std::string& exe, const std::vector<std::string>& args,
                            const std::function<bool()>& ready, int signal, bool& sent) {
  const Child child = spawn(exe, args);
  sent = false;
  int status = 0;
  while (::waitpid(child.pid, &status, WNOHANG) == 0) {
    if (!sent && ready()) {
      ::kill(child.pid, signal);
      sent = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return collect(child, status);
}

}  // namespace mixprec::testing
