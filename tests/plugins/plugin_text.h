// What the test plugins share: copying a message into a buffer the host hands over (the plugins
// link nothing of mixprec, so not even its text helpers).
#pragma once

#include <cstddef>
#include <cstring>
#include <string>

namespace mixprec_test_plugins {

// `text`, cut to fit, NUL-terminated, into `out` of `size` bytes; nothing when there is no room.
inline void set(char* out, size_t size, const std::string& text) {
  if (out == nullptr || size == 0) return;
  const size_t n = text.size() < size ? text.size() : size - 1;
  std::memcpy(out, text.data(), n);
  out[n] = '\0';
}

}  // namespace mixprec_test_plugins
