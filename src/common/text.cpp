#include "common/text.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace mixprec::text {

std::string join(const std::vector<std::string>& items, std::string_view separator) {
  std::string joined;
  for (const std::string& item : items) {
    if (!joined.empty()) joined += separator;
    joined += item;
  }
  return joined;
}

bool equal_ignoring_case(std::string_view a, std::string_view b) {
  return std::ranges::equal(a, b, [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
  });
}

std::string fixed(double value, int digits) {
  char out[64];
  std::snprintf(out, sizeof out, "%.*f", digits, value);
  return out;
}

}  // namespace mixprec::text
