// WorkDirLock: one mixprec run at a time writes a work directory.
//
// Contract: the constructor creates `dir` (and its parents) when missing, then takes an
// exclusive advisory lock (flock) on DIR/.mixprec.lock and writes the owner's pid into it;
// the destructor empties the file and releases the lock. A second process asking for the
// same directory gets Error kBadInput naming the lock file and the owner's pid, at once (it
// never waits). The same process may lock a directory again (guide runs explore, dry-run and
// requantize in its own work dir): the lock is counted, and released with the last holder.
//
// Stale locks: the kernel drops a flock when its process dies, however it died, so a run
// killed with -9 never blocks the next one. The pid it left in the file tells the next run
// that the previous one stopped without finishing (a warning names it: its files may be
// incomplete, `explore --resume` continues from its ledger). The lock file itself stays: a
// file removed while another process opens it would let two runs hold "the" lock.
#pragma once

#include <string>

namespace mixprec {

class WorkDirLock {
 public:
  explicit WorkDirLock(const std::string& dir);
  ~WorkDirLock();
  WorkDirLock(const WorkDirLock&) = delete;
  WorkDirLock& operator=(const WorkDirLock&) = delete;

  static constexpr const char* kFileName = ".mixprec.lock";

 private:
  std::string key_;  // the directory's canonical path
};

}  // namespace mixprec
