// Logging: the library never prints. It reports warnings, info and progress through a
// sink the caller installs (the CLI prints warnings to stderr; tests capture them).
// With no sink installed, warnings go to stderr so they are never lost.
#pragma once

#include <functional>
#include <string>
#include <unordered_set>
#include <vector>

namespace mixprec {

enum class LogLevel { kDebug, kInfo, kWarning };

using LogSink = std::function<void(LogLevel, const std::string&)>;

// Installs the sink for this process; returns the previous one. Not thread-safe to swap
// while other threads log.
LogSink set_log_sink(LogSink sink);

void log_debug(const std::string& message);
void log_info(const std::string& message);
void log_warning(const std::string& message);

// Collects every warning logged while alive (and forwards to the previous sink), so a report
// can list the warnings of the job that produced it. A warning identical to one already
// collected is neither collected nor forwarded again (a search rewrites the model at each step).
class WarningCollector {
 public:
  WarningCollector();
  ~WarningCollector();
  WarningCollector(const WarningCollector&) = delete;
  WarningCollector& operator=(const WarningCollector&) = delete;
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  std::vector<std::string> warnings_;
  std::unordered_set<std::string> seen_;
  LogSink previous_;
};

}  // namespace mixprec
