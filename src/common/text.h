// Small text helpers the stages share (internal to the library).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace mixprec::text {

// The items with `separator` between them ("a, b, c" by default); no separator is written
// while the text so far is empty.
std::string join(const std::vector<std::string>& items, std::string_view separator = ", ");

// join() of `text_of(item)` for each item of `items` (names of table rows, of inputs, ...).
template <class Items, class TextOf>
std::string join_each(const Items& items, TextOf text_of, std::string_view separator = ", ") {
  std::string joined;
  for (const auto& item : items) {
    if (!joined.empty()) joined += separator;
    joined += text_of(item);
  }
  return joined;
}

// ASCII case-insensitive equality ("xint8" == "XINT8").
bool equal_ignoring_case(std::string_view a, std::string_view b);

// `value` with `digits` digits after the point ("%.*f"): 12.345 -> "12.35".
std::string fixed(double value, int digits = 2);

}  // namespace mixprec::text
