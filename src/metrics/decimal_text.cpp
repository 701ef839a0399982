#include "metrics/decimal_text.h"

#include <cassert>
#include <charconv>
#include <cmath>
#include <string_view>
#include <system_error>

namespace mixprec::metrics {
namespace {

// |value| * 10^shift as a digit string with the point after `point` digits.
struct Digits {
  bool negative = false;
  std::string digits;
  size_t point = 0;
};

Digits decompose(double value, int shift) {
  // The longest shortest-round-trip fixed form of a double is the smallest subnormal:
  // "0." followed by 323 zeros and one digit.
  char buffer[400];
  const auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::fixed);
  assert(error == std::errc());
  std::string_view text(buffer, static_cast<size_t>(end - buffer));

  Digits out;
  out.negative = text.starts_with('-');
  if (out.negative) text.remove_prefix(1);
  const size_t dot = text.find('.');
  const std::string_view whole = text.substr(0, dot);
  const std::string_view fraction = dot == std::string_view::npos ? std::string_view() : text.substr(dot + 1);
  out.digits.assign(whole).append(fraction);

  // Pad with zeros so that the shifted point falls inside the digits.
  const long point = static_cast<long>(whole.size()) + shift;
  if (point < 1) {
    out.digits.insert(0, static_cast<size_t>(1 - point), '0');
    out.point = 1;
  } else {
    out.point = static_cast<size_t>(point);
    if (out.digits.size() < out.point) out.digits.append(out.point - out.digits.size(), '0');
  }
  return out;
}

std::string compose(const Digits& number, std::string_view fraction) {
  std::string_view whole(number.digits.data(), number.point);
  while (whole.size() > 1 && whole.front() == '0') whole.remove_prefix(1);
  std::string text(whole);
  if (!fraction.empty()) text.append(".").append(fraction);
  const bool zero = text.find_first_not_of("0.") == std::string::npos;
  return number.negative && !zero ? "-" + text : text;
}

const char* nonfinite_text(double value) {
  if (std::isnan(value)) return "nan";
  return value < 0 ? "-inf" : "inf";
}

}  // namespace

std::string cut_decimal(double value, int decimals, int shift) {
  assert(decimals >= 0);
  if (!std::isfinite(value)) return nonfinite_text(value);
  Digits number = decompose(value, shift);
  const size_t wanted = number.point + static_cast<size_t>(decimals);
  if (number.digits.size() < wanted) number.digits.append(wanted - number.digits.size(), '0');
  return compose(number, std::string_view(number.digits).substr(number.point, static_cast<size_t>(decimals)));
}

std::string shortest_decimal(double value, int shift) {
  if (!std::isfinite(value)) return nonfinite_text(value);
  const Digits number = decompose(value, shift);
  std::string_view fraction = std::string_view(number.digits).substr(number.point);
  while (!fraction.empty() && fraction.back() == '0') fraction.remove_suffix(1);
  return compose(number, fraction);
}

}  // namespace mixprec::metrics
