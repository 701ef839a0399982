// NodePattern: how a config string selects node names.
//
// Contract: target patterns (specific_layer_config target_node_names) follow SPEC.md's rule —
// a pattern that starts with '^' and contains ".*" is a regex, anything else an exact name;
// exclude.node_names are always regexes. Regexes use RE2's syntax (Python re's, without
// backreferences and lookaround) and must match the whole name. RE2 compiles and matches
// without recursion or backtracking, in time linear in the name, within a fixed memory budget,
// so a hostile config (a pattern nested 20,000 deep, "(a*)*b") cannot crash or stall a run.
// An invalid or too large regex throws mixprec::Error kBadInput naming `label`, the key path
// and the pattern, so a config fails when it is loaded, not halfway through a run.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "mixprec/config.h"

namespace re2 {
class RE2;
}

namespace mixprec::selection {

class NodePattern {
 public:
  enum class Rule { kTarget, kRegex };
  // `path` is the key path of the pattern in the config ("exclude.node_names[0]").
  NodePattern(const std::string& pattern, Rule rule, std::string path, const std::string& label);

  bool matches(const std::string& node_name) const;
  const std::string& text() const { return text_; }
  const std::string& path() const { return path_; }
  // A target pattern that starts with '^' but has no ".*": matched as an exact name although
  // the user most likely meant a regex.
  bool looks_like_regex() const { return !regex_ && text_.starts_with('^'); }

 private:
  std::string text_;
  std::string path_;
  std::shared_ptr<const re2::RE2> regex_;  // shared: patterns are copied, RE2 is not copyable
};

// Every pattern of a config, compiled.
struct ConfigPatterns {
  std::vector<std::vector<NodePattern>> targets;  // per specific_layer_config entry
  std::vector<NodePattern> excludes;              // exclude.node_names
};
ConfigPatterns compile_patterns(const QuantConfig& config, const std::string& label);

}  // namespace mixprec::selection
