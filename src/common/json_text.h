// JSON files read by the library (configs, statistics, plans, ledgers, run settings): one
// parser entry point with a nesting limit, and one mapping of nlohmann's exceptions to Error.
//
// Contract: parse_json() returns the document, or throws mixprec::Error kBadInput naming
// `file` for text that is not JSON, nests deeper than kMaxJsonDepth, or holds a number that
// does not fit a double ("1e999"). with_json_errors() runs a reader walking a parsed
// document and turns any nlohmann::json::exception it lets out (a wrong type, a missing key)
// into the same kind of Error, so no JSON problem reaches the CLI as an internal error.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "mixprec/error.h"

namespace mixprec::json_text {

// Deepest nesting of arrays and objects accepted. Our files nest at most ~8 levels (a plan
// holding a config); the limit keeps hostile input from exhausting the stack of the
// recursive code that copies, compares or prints a document.
inline constexpr size_t kMaxJsonDepth = 128;

// `what` says what the file should be, for the message ("a statistics file").
nlohmann::ordered_json parse_json(std::string_view text, const std::string& file, const std::string& what);

// "FILE: WHAT: PROBLEM" as kBadInput, for an nlohmann exception met while reading a document.
[[noreturn]] void throw_json_error(const std::string& file, const std::string& what, const std::exception& error);

template <class Read>
auto with_json_errors(const std::string& file, const std::string& what, Read&& read) -> decltype(read()) {
  try {
    return std::forward<Read>(read)();
  } catch (const nlohmann::json::exception& error) {
    throw_json_error(file, what, error);
  }
}

}  // namespace mixprec::json_text
