// The names of an enum's values as one table: to-string, from-name and the list of names (for
// help texts, errors and CLI11's IsMember) all read the same rows, so they cannot disagree.
//
//   constexpr EnumName<Ranking> kRankingRows[] = {{Ranking::kMeasured, "measured"}, ...};
//   const EnumNames<Ranking>& ranking_names() { static constexpr EnumNames<Ranking> n{kRankingRows}; return n; }
#pragma once

#include <cctype>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mixprec {

template <typename E>
struct EnumName {
  E value;
  const char* name;
};

template <typename E>
class EnumNames {
 public:
  constexpr explicit EnumNames(std::span<const EnumName<E>> rows) : rows_(rows) {}

  // The row's name; "?" for a value without a row (a programming error, shown not thrown).
  constexpr const char* name(E value) const {
    for (const auto& row : rows_) {
      if (row.value == value) return row.name;
    }
    return "?";
  }
  // The value whose name is `name`, compared ASCII case-insensitively ("Bisection" works).
  std::optional<E> from_name(std::string_view name) const {
    for (const auto& row : rows_) {
      if (same_ignoring_case(row.name, name)) return row.value;
    }
    return std::nullopt;
  }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& row : rows_) out.emplace_back(row.name);
    return out;
  }
  // "a, b, c": for messages that list the choices.
  std::string list(std::string_view separator = ", ") const {
    std::string out;
    for (const auto& row : rows_) {
      if (!out.empty()) out += separator;
      out += row.name;
    }
    return out;
  }
  std::span<const EnumName<E>> rows() const { return rows_; }

 private:
  static bool same_ignoring_case(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
    }
    return true;
  }

  std::span<const EnumName<E>> rows_;
};

}  // namespace mixprec
