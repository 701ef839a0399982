// What tests check in the messages a call leaves: warnings collected, the error it throws.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "mixprec/error.h"

namespace mixprec::testing {

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

inline size_t count_containing(const std::vector<std::string>& messages, const std::string& part) {
  return static_cast<size_t>(std::ranges::count_if(messages, [&](const std::string& m) { return contains(m, part); }));
}

// The message of the kBadInput error `action` throws, which must name `file`; a test failure
// (and "") when it throws none. `what` says what was tried, for that failure.
inline std::string bad_input_message(const std::function<void()>& action, const std::string& file,
                                     const std::string& what) {
  try {
    action();
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::kBadInput) << error.what();
    EXPECT_EQ(error.file(), file);
    return error.what();
  }
  ADD_FAILURE() << "expected a bad-input error for " << what;
  return "";
}

}  // namespace mixprec::testing
