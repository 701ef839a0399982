#include "common/json_text.h"

#include <algorithm>

namespace mixprec::json_text {
namespace {

// The deepest nesting of `text`, counting '[' and '{' outside strings; stops counting once
// past the limit. Malformed text is left to the parser, which reports it with a position.
size_t nesting_depth(std::string_view text) {
  size_t depth = 0, deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size() && deepest <= kMaxJsonDepth; ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character cannot end the string
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

}  // namespace

void throw_json_error(const std::string& file, const std::string& what, const std::exception& error) {
  // nlohmann's text is "[json.exception.out_of_range.406] number overflow parsing '1e999'":
  // the bracketed id means nothing to a user.
  std::string message = error.what();
  if (message.starts_with("[json.exception.")) {
    if (const size_t end = message.find("] "); end != std::string::npos) message.erase(0, end + 2);
  }
  throw_bad_input(file, "not " + what + ": " + message);
}

nlohmann::ordered_json parse_json(std::string_view text, const std::string& file, const std::string& what) {
  if (nesting_depth(text) > kMaxJsonDepth) {
    throw_bad_input(file, "not " + what + ": JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  }
  return with_json_errors(file, what, [&] { return nlohmann::ordered_json::parse(text); });
}

}  // namespace mixprec::json_text
