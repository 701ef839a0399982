#include "mixprec/stop.h"

#include <atomic>
#include <csignal>

#include "mixprec/error.h"

namespace mixprec {
namespace {

std::atomic<int> requested{0};
static_assert(std::atomic<int>::is_always_lock_free, "request_stop runs in a signal handler");

std::string signal_name(int number) {
  switch (number) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    default: return "signal " + std::to_string(number);
  }
}

}  // namespace

void request_stop(int signal_number) noexcept { requested.store(signal_number == 0 ? -1 : signal_number); }

int stop_requested() noexcept { return requested.load(); }

void clear_stop_request() noexcept { requested.store(0); }

void throw_if_stopped(const std::string& file, const std::string& what) {
  const int number = stop_requested();
  if (number == 0) return;
  throw Error(ErrorKind::kCancelled, file, "stopped by " + signal_name(number) + " after the step in progress; " + what);
}

}  // namespace mixprec
