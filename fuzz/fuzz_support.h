// What every fuzz target shares: the input as bytes or text, a quiet log, and the one rule —
// mixprec::Error is the expected answer to bad input; anything else escaping (another
// exception, a crash, a sanitizer report, running out of the memory limit) is a defect.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "mixprec/error.h"
#include "mixprec/log.h"

namespace mixprec::fuzz {

inline std::span<const std::byte> bytes_of(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const std::byte*>(data), size};
}
inline std::string_view text_of(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Warnings about unknown keys are part of normal operation; printing them for every input
// would slow the run ten-fold.
inline void silence_log() {
  static const bool once = [] {
    set_log_sink([](LogLevel, const std::string&) {});
    return true;
  }();
  (void)once;
}

// A broken invariant found by a round trip: abort so libFuzzer saves the input.
#define MIXPREC_FUZZ_CHECK(condition) \
  do {                                \
    if (!(condition)) __builtin_trap(); \
  } while (false)

}  // namespace mixprec::fuzz
