// WarningCollector: what a job reports as its warnings.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "mixprec/log.h"

namespace mixprec {
namespace {

// An exploration quantizes the model at every step; a warning about the same node must reach
// the user (and the job's report) once, a different one still does.
TEST(WarningCollector, ForwardsAndCollectsEachDistinctWarningOnce) {
  std::vector<std::string> printed;
  const LogSink previous = set_log_sink([&](LogLevel level, const std::string& message) {
    if (level == LogLevel::kWarning) printed.push_back(message);
  });
  {
    const WarningCollector outer;
    {
      const WarningCollector job;
      for (int step = 0; step < 3; ++step) log_warning("node 'conv': bias raised");
      log_warning("node 'gemm': bias raised");
      log_info("not a warning");
      EXPECT_EQ(job.warnings(), (std::vector<std::string>{"node 'conv': bias raised", "node 'gemm': bias raised"}));
    }
    // A later job in the same process says it again (its own collector has not seen it).
    const WarningCollector next;
    log_warning("node 'conv': bias raised");
    EXPECT_EQ(next.warnings(), std::vector<std::string>{"node 'conv': bias raised"});
    EXPECT_EQ(outer.warnings().size(), 2u);  // the enclosing job's report lists it once
  }
  set_log_sink(previous);
  EXPECT_EQ(printed, (std::vector<std::string>{"node 'conv': bias raised", "node 'gemm': bias raised"}));
}

}  // namespace
}  // namespace mixprec
