// mixprec::Error — the one error type for everything that depends on input.
//
// Contract: every failure caused by a model, a data file, a config, the file system or the
// runtime is thrown as mixprec::Error with a kind, the file it concerns (may be empty) and a
// one-line message. what() gives "FILE: MESSAGE" (or just MESSAGE without a file). The CLI
// maps kind() to an exit code: bad input → 2, internal → 1, cancelled → 130. Programmer errors
// are assertions.
#pragma once

#include <stdexcept>
#include <string>

namespace mixprec {

enum class ErrorKind {
  kBadInput,     // malformed or inconsistent model/data/config, bad option value
  kUnsupported,  // valid input we do not handle (an op, a dtype, a graph shape)
  kIo,           // cannot read or write a file
  kRuntime,      // ONNX Runtime refused or failed (converted at the runtime/ boundary)
  kInternal,     // a bug: an invariant broke
  kCancelled,    // the user stopped the run (SIGINT/SIGTERM; see stop.h): not a failure of the input
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, std::string file, const std::string& message);

  ErrorKind kind() const { return kind_; }
  const std::string& file() const { return file_; }
  const std::string& message() const { return message_; }

 private:
  ErrorKind kind_;
  std::string file_;
  std::string message_;
};

// Shorthands for the common kinds.
[[noreturn]] void throw_bad_input(const std::string& file, const std::string& message);
[[noreturn]] void throw_unsupported(const std::string& file, const std::string& message);
[[noreturn]] void throw_io(const std::string& file, const std::string& message);

// Name of a kind for reports ("bad input", "unsupported", ...).
const char* to_string(ErrorKind kind);

}  // namespace mixprec
