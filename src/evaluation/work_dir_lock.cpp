#include "evaluation/work_dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>

#include "mixprec/error.h"
#include "mixprec/log.h"

namespace mixprec {
namespace fs = std::filesystem;
namespace {

struct Held {
  int fd = -1;
  int count = 0;
};

// The locks this process holds, by canonical directory: flock() is per open file, so a
// second open of the same file in this process would find it locked by ourselves.
std::mutex held_mutex;
std::map<std::string, Held>& held_locks() {
  static std::map<std::string, Held> held;
  return held;
}

std::string read_owner(int fd) {
  char text[64] = {};
  const ssize_t n = ::pread(fd, text, sizeof(text) - 1, 0);
  std::string owner(text, n > 0 ? static_cast<size_t>(n) : 0);
  while (!owner.empty() && (owner.back() == '\n' || owner.back() == ' ')) owner.pop_back();
  return owner;
}

void write_owner(int fd, const std::string& path) {
  const std::string text = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
    throw_io(path, std::string("cannot write the lock file: ") + std::strerror(errno));
  }
}

}  // namespace

WorkDirLock::WorkDirLock(const std::string& dir) {
  std::error_code error;
  fs::create_directories(dir, error);
  if (error) throw_io(dir, "cannot create the work dir: " + error.message());
  if (!fs::is_directory(dir, error)) throw_io(dir, "the work dir is not a directory");
  key_ = fs::canonical(dir, error).string();
  if (error) throw_io(dir, "cannot resolve the work dir: " + error.message());

  const std::lock_guard guard(held_mutex);
  Held& held = held_locks()[key_];
  if (held.count > 0) {
    ++held.count;
    return;
  }
  const std::string path = (fs::path(key_) / kFileName).string();
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) {
    held_locks().erase(key_);
    throw_io(path, std::string("cannot create the work dir's lock file: ") + std::strerror(errno));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int why = errno;
    const std::string owner = read_owner(fd);
    ::close(fd);
    held_locks().erase(key_);
    if (why == EWOULDBLOCK) {
      throw_bad_input(path, "the work dir " + dir + " is in use by another mixprec run (pid " +
                                (owner.empty() ? "unknown" : owner) +
                                "): wait for it to finish, or give another --work-dir");
    }
    throw_io(path, std::string("cannot lock the work dir: ") + std::strerror(why));
  }
  if (const std::string owner = read_owner(fd); !owner.empty()) {
    log_warning(path + ": the previous run in " + dir + " (pid " + owner +
                ") stopped without releasing the work dir; its files may be incomplete");
  }
  try {
    write_owner(fd, path);
  } catch (...) {
    ::close(fd);
    held_locks().erase(key_);
    throw;
  }
  held = {.fd = fd, .count = 1};
}

WorkDirLock::~WorkDirLock() {
  const std::lock_guard guard(held_mutex);
  const auto it = held_locks().find(key_);
  if (it == held_locks().end() || --it->second.count > 0) return;
  // An empty file says "released cleanly"; failing to empty it only costs a warning next time.
  [[maybe_unused]] const int truncated = ::ftruncate(it->second.fd, 0);
  ::close(it->second.fd);  // drops the flock
  held_locks().erase(it);
}

}  // namespace mixprec
