#include "support/html_check.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <string_view>

namespace mixprec::testing {
namespace {

const std::set<std::string> kVoidElements = {"area",  "base", "br",   "col",   "embed",  "hr",    "img",
                                             "input", "link", "meta", "param", "source", "track", "wbr"};
const std::set<std::string> kRawTextElements = {"script", "style"};

bool name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == ':' || c == '.';
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Length of the valid UTF-8 sequence at `i`, 0 when invalid.
size_t utf8_length(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  const size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  }
  return n;
}

// The entity at `i` (which is '&'), or 0 when it is not one we accept.
size_t entity_length(std::string_view s, size_t i) {
  for (std::string_view named : {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"}) {
    if (s.substr(i, named.size()) == named) return named.size();
  }
  size_t k = i + 1;
  if (k >= s.size() || s[k] != '#') return 0;
  ++k;
  const bool hex = k < s.size() && (s[k] == 'x' || s[k] == 'X');
  if (hex) ++k;
  const size_t digits = k;
  while (k < s.size() &&
         (hex ? std::isxdigit(static_cast<unsigned char>(s[k])) : std::isdigit(static_cast<unsigned char>(s[k]))))
    ++k;
  return k > digits && k < s.size() && s[k] == ';' ? k + 1 - i : 0;
}

struct Tag {
  std::string name;
  bool end = false, self_closing = false;
  std::vector<std::pair<std::string, std::string>> attributes;
};

class Checker {
 public:
  explicit Checker(const std::string& html) : s_(html) {}

  std::vector<std::string> run() {
    for (size_t i = 0; i < s_.size();) {
      const size_t n = utf8_length(s_, i);
      if (n == 0) {
        fail(i, "invalid UTF-8");
        return problems_;
      }
      i += n;
    }
    const std::string doctype = "<!DOCTYPE html>";
    if (s_.compare(0, doctype.size(), doctype) != 0) fail(0, "does not start with <!DOCTYPE html>");
    size_t i = s_.compare(0, doctype.size(), doctype) == 0 ? doctype.size() : 0;
    while (i < s_.size()) {
      if (s_[i] == '<') {
        i = markup(i);
      } else {
        i = text(i);
      }
    }
    if (!stack_.empty()) fail(s_.size(), "unclosed <" + stack_.back() + ">");
    for (const auto& target : hrefs_) {
      if (!ids_.count(target)) fail(0, "href=\"#" + target + "\" names no id");
    }
    for (const char* required : {"html", "head", "body", "title"}) {
      if (!seen_.count(required)) fail(0, std::string("no <") + required + ">");
    }
    if (!charset_) fail(0, "no <meta charset>");
    return problems_;
  }

  const std::map<std::string, size_t>& counts() const { return counts_; }

 private:
  void fail(size_t at, const std::string& what) {
    if (problems_.size() < 20) problems_.push_back("offset " + std::to_string(at) + ": " + what);
  }

  size_t text(size_t i) {
    while (i < s_.size() && s_[i] != '<') {
      if (s_[i] == '&') {
        const size_t n = entity_length(s_, i);
        if (n == 0) fail(i, "bare & in text");
        i += std::max<size_t>(n, 1);
      } else {
        ++i;
      }
    }
    return i;
  }

  size_t markup(size_t i) {
    if (s_.compare(i, 4, "<!--") == 0) {
      const size_t end = s_.find("-->", i + 4);
      if (end == std::string::npos) {
        fail(i, "unclosed comment");
        return s_.size();
      }
      return end + 3;
    }
    Tag tag;
    const size_t end = parse_tag(i, tag);
    if (end == std::string::npos) return s_.size();
    apply(i, tag);
    if (!tag.end && kRawTextElements.count(tag.name)) {
      const std::string closing = "</" + tag.name + ">";
      const size_t close = s_.find(closing, end);
      if (close == std::string::npos) {
        fail(i, "<" + tag.name + "> never ends");
        return s_.size();
      }
      stack_.pop_back();
      return close + closing.size();
    }
    return end;
  }

  // Parses the tag at `i` into `tag`; returns the offset after '>' (npos on a fatal problem).
  size_t parse_tag(size_t i, Tag& tag) {
    size_t k = i + 1;
    if (k < s_.size() && s_[k] == '/') {
      tag.end = true;
      ++k;
    }
    const size_t name_start = k;
    while (k < s_.size() && name_char(s_[k])) ++k;
    if (k == name_start || !std::isalpha(static_cast<unsigned char>(s_[name_start]))) {
      fail(i, "< that opens no tag");
      return i + 1;
    }
    tag.name = lower(s_.substr(name_start, k - name_start));
    std::set<std::string> names;
    while (k < s_.size()) {
      while (k < s_.size() && std::isspace(static_cast<unsigned char>(s_[k]))) ++k;
      if (k >= s_.size()) break;
      if (s_[k] == '>') return k + 1;
      if (s_.compare(k, 2, "/>") == 0) {
        tag.self_closing = true;
        return k + 2;
      }
      if (tag.end) {
        fail(k, "attributes on an end tag");
        return std::string::npos;
      }
      const size_t attr_start = k;
      while (k < s_.size() && name_char(s_[k])) ++k;
      if (k == attr_start) {
        fail(k, "unexpected character in <" + tag.name + ">");
        return std::string::npos;
      }
      const std::string attr = lower(s_.substr(attr_start, k - attr_start));
      if (!names.insert(attr).second) fail(attr_start, "attribute " + attr + " twice in <" + tag.name + ">");
      std::string value;
      if (k < s_.size() && s_[k] == '=') {
        ++k;
        if (k >= s_.size() || s_[k] != '"') {
          fail(k, "unquoted value of " + attr);
          return std::string::npos;
        }
        const size_t close = s_.find('"', k + 1);
        if (close == std::string::npos) {
          fail(k, "unclosed value of " + attr);
          return std::string::npos;
        }
        value = s_.substr(k + 1, close - k - 1);
        for (size_t v = 0; v < value.size(); ++v) {
          if (value[v] == '<') fail(k + 1 + v, "< in the value of " + attr);
          if (value[v] == '&' && entity_length(value, v) == 0) fail(k + 1 + v, "bare & in the value of " + attr);
        }
        k = close + 1;
      }
      tag.attributes.emplace_back(attr, value);
    }
    fail(i, "unclosed tag <" + tag.name);
    return std::string::npos;
  }

  void apply(size_t at, const Tag& tag) {
    if (tag.end) {
      if (stack_.empty() || stack_.back() != tag.name) {
        fail(at, "</" + tag.name + "> closes " + (stack_.empty() ? std::string("nothing") : "<" + stack_.back() + ">"));
        return;
      }
      if (tag.name == "svg") --svg_depth_;
      stack_.pop_back();
      return;
    }
    ++counts_[tag.name];
    seen_.insert(tag.name);
    if (tag.name == "html" && !stack_.empty()) fail(at, "<html> inside another element");
    if ((tag.name == "head" || tag.name == "body") && (stack_.size() != 1 || stack_[0] != "html")) {
      fail(at, "<" + tag.name + "> not directly in <html>");
    }
    if (tag.name == "body" && !seen_.count("head")) fail(at, "<body> before <head>");
    if (stack_.empty() && tag.name != "html") fail(at, "<" + tag.name + "> outside <html>");
    for (const auto& [name, value] : tag.attributes) {
      if (name == "id" && !ids_.insert(value).second) fail(at, "id \"" + value + "\" twice");
      if (name == "href" && !value.empty() && value[0] == '#') hrefs_.insert(value.substr(1));
      if (tag.name == "meta" && name == "charset") charset_ = true;
    }
    const bool is_void = kVoidElements.count(tag.name) > 0;
    if (tag.self_closing && !is_void && svg_depth_ == 0 && tag.name != "svg")
      fail(at, "<" + tag.name + "/> outside svg");
    if (is_void || tag.self_closing) return;
    if (tag.name == "svg") ++svg_depth_;
    stack_.push_back(tag.name);
  }

  const std::string& s_;
  std::vector<std::string> problems_;
  std::vector<std::string> stack_;
  std::set<std::string> ids_, hrefs_, seen_;
  std::map<std::string, size_t> counts_;
  int svg_depth_ = 0;
  bool charset_ = false;
};

}  // namespace

std::vector<std::string> html_problems(const std::string& html) { return Checker(html).run(); }

std::map<std::string, size_t> element_counts(const std::string& html) {
  Checker checker(html);
  checker.run();
  return checker.counts();
}

std::string element_by_id(const std::string& html, const std::string& id) {
  const size_t at = html.find(" id=\"" + id + "\"");
  if (at == std::string::npos) return "";
  const size_t start = html.rfind('<', at);
  size_t name_end = start + 1;
  while (name_end < html.size() && name_char(html[name_end])) ++name_end;
  const std::string name = html.substr(start + 1, name_end - start - 1);
  // The matching end tag, counting nested elements of the same name.
  int depth = 0;
  for (size_t k = start; k < html.size();) {
    if (html.compare(k, name.size() + 1, "<" + name) == 0 && !name_char(html[k + name.size() + 1])) {
      ++depth;
      k += name.size() + 1;
    } else if (html.compare(k, name.size() + 3, "</" + name + ">") == 0) {
      if (--depth == 0) return html.substr(start, k + name.size() + 3 - start);
      k += name.size() + 3;
    } else {
      ++k;
    }
  }
  return "";
}

}  // namespace mixprec::testing
