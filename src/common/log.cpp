#include "mixprec/log.h"

#include <iostream>
#include <mutex>

namespace mixprec {
namespace {
std::mutex& sink_mutex() {
  static std::mutex m;
  return m;
}
LogSink& current_sink() {
  static LogSink sink;
  return sink;
}
void emit(LogLevel level, const std::string& message) {
  LogSink sink;
  {
    std::lock_guard<std::mutex> lock(sink_mutex());
    sink = current_sink();
  }
  if (sink) {
    sink(level, message);
  } else if (level == LogLevel::kWarning) {
    std::cerr << "warning: " << message << '\n';
  }
}
}  // namespace

LogSink set_log_sink(LogSink sink) {
  std::lock_guard<std::mutex> lock(sink_mutex());
  LogSink previous = std::move(current_sink());
  current_sink() = std::move(sink);
  return previous;
}

void log_debug(const std::string& message) { emit(LogLevel::kDebug, message); }
void log_info(const std::string& message) { emit(LogLevel::kInfo, message); }
void log_warning(const std::string& message) { emit(LogLevel::kWarning, message); }

WarningCollector::WarningCollector() {
  previous_ = set_log_sink(nullptr);
  LogSink forward = previous_;
  set_log_sink([this, forward](LogLevel level, const std::string& message) {
    if (level == LogLevel::kWarning) {
      // Once per job: an exploration rewrites the model at every step, and the same warning
      // about the same node would otherwise repeat at each one.
      if (!seen_.insert(message).second) return;
      warnings_.push_back(message);
    }
    if (forward) {
      forward(level, message);
    } else if (level == LogLevel::kWarning) {
      std::cerr << "warning: " << message << '\n';
    }
  });
}

WarningCollector::~WarningCollector() { set_log_sink(previous_); }

}  // namespace mixprec
