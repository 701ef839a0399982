#include "evaluation/work_dir_lock.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "mixprec/error.h"
#include "mixprec/log.h"
#include "support/temp_dir.h"

namespace mixprec {
namespace {

namespace fs = std::filesystem;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string lock_file_text(const std::string& dir) {
  std::ifstream in(fs::path(dir) / WorkDirLock::kFileName);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class WorkDirLockTest : public testing::TempDirTest {
 protected:
  // A child process that takes the lock on `dir`, says so through a pipe, then waits to be
  // killed; returns its pid once the lock is held.
  pid_t child_holding(const std::string& dir) {
    int ready[2];
    EXPECT_EQ(::pipe(ready), 0);
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(ready[0]);
      const WorkDirLock lock(dir);
      const char byte = 1;
      [[maybe_unused]] const ssize_t n = ::write(ready[1], &byte, 1);
      for (;;) ::pause();
    }
    ::close(ready[1]);
    char byte = 0;
    EXPECT_EQ(::read(ready[0], &byte, 1), 1);
    ::close(ready[0]);
    return pid;
  }
  static void kill_and_wait(pid_t pid) {
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
  }
};

TEST_F(WorkDirLockTest, CreatesTheDirectoryAndRecordsTheOwner) {
  const std::string dir = path("a/b");
  {
    const WorkDirLock lock(dir);
    EXPECT_TRUE(fs::is_directory(dir));
    EXPECT_EQ(lock_file_text(dir), std::to_string(::getpid()) + "\n");
  }
  EXPECT_EQ(lock_file_text(dir), "");  // released cleanly
}

TEST_F(WorkDirLockTest, ASecondRunFailsAtOnceNamingTheLockFileAndTheOwner) {
  const std::string dir = path("work");
  const pid_t owner = child_holding(dir);
  try {
    const WorkDirLock lock(dir);
    ADD_FAILURE() << "two runs hold the same work dir";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::kBadInput);
    EXPECT_EQ(error.file(), (fs::canonical(dir) / WorkDirLock::kFileName).string());
    EXPECT_PRED2(contains, error.what(), "in use by another mixprec run (pid " + std::to_string(owner) + ")");
  }
  kill_and_wait(owner);
}

TEST_F(WorkDirLockTest, AKilledOwnerLeavesAStaleLockThatTheNextRunTakesWithAWarning) {
  const std::string dir = path("work");
  const pid_t owner = child_holding(dir);
  kill_and_wait(owner);  // -9: no destructor ran, the pid stays in the file
  std::vector<std::string> warnings;
  const LogSink previous = set_log_sink([&](LogLevel level, const std::string& message) {
    if (level == LogLevel::kWarning) warnings.push_back(message);
  });
  {
    const WorkDirLock lock(dir);
    EXPECT_EQ(lock_file_text(dir), std::to_string(::getpid()) + "\n");
  }
  set_log_sink(previous);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_PRED2(contains, warnings[0], "(pid " + std::to_string(owner) + ") stopped without releasing");
}

TEST_F(WorkDirLockTest, TheSameProcessMayLockADirectoryAgain) {
  // guide holds its work dir and runs explore in it.
  const std::string dir = path("work");
  const WorkDirLock outer(dir);
  {
    const WorkDirLock inner(path("work/../work"));
    EXPECT_EQ(lock_file_text(dir), std::to_string(::getpid()) + "\n");
  }
  EXPECT_EQ(lock_file_text(dir), std::to_string(::getpid()) + "\n");  // still held by outer
}

TEST_F(WorkDirLockTest, AFileWhereTheDirectoryShouldBeIsAnIoError) {
  std::ofstream(path("file")) << "x";
  try {
    const WorkDirLock lock(path("file"));
    ADD_FAILURE() << "locked a file";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::kIo);
  }
}

}  // namespace
}  // namespace mixprec
