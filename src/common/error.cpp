#include "mixprec/error.h"

namespace mixprec {
namespace {
std::string compose(const std::string& file, const std::string& message) {
  return file.empty() ? message : file + ": " + message;
}
}  // namespace

Error::Error(ErrorKind kind, std::string file, const std::string& message)
    : std::runtime_error(compose(file, message)), kind_(kind), file_(std::move(file)), message_(message) {}

void throw_bad_input(const std::string& file, const std::string& message) {
  throw Error(ErrorKind::kBadInput, file, message);
}
void throw_unsupported(const std::string& file, const std::string& message) {
  throw Error(ErrorKind::kUnsupported, file, message);
}
void throw_io(const std::string& file, const std::string& message) {
  throw Error(ErrorKind::kIo, file, message);
}

const char* to_string(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kBadInput: return "bad input";
    case ErrorKind::kUnsupported: return "unsupported";
    case ErrorKind::kIo: return "i/o error";
    case ErrorKind::kRuntime: return "runtime error";
    case ErrorKind::kInternal: return "internal error";
    case ErrorKind::kCancelled: return "interrupted";
  }
  return "error";
}

}  // namespace mixprec
