#include "config/node_pattern.h"

#include <re2/re2.h>

#include "mixprec/error.h"

namespace mixprec::selection {

NodePattern::NodePattern(const std::string& pattern, Rule rule, std::string path, const std::string& label)
    : text_(pattern), path_(std::move(path)) {
  const bool is_regex = rule == Rule::kRegex || (pattern.starts_with('^') && pattern.find(".*") != std::string::npos);
  if (!is_regex) return;
  RE2::Options options;
  options.set_log_errors(false);  // the error goes into our message, not onto stderr
  auto regex = std::make_shared<const RE2>(pattern, options);
  if (!regex->ok()) throw_bad_input(label, path_ + ": invalid regex \"" + pattern + "\" (" + regex->error() + ")");
  regex_ = std::move(regex);
}

bool NodePattern::matches(const std::string& node_name) const {
  return regex_ ? RE2::FullMatch(node_name, *regex_) : node_name == text_;
}

ConfigPatterns compile_patterns(const QuantConfig& config, const std::string& label) {
  ConfigPatterns patterns;
  for (size_t i = 0; i < config.specific.size(); ++i) {
    const std::vector<std::string>& names = config.specific[i].target_node_names;
    std::vector<NodePattern>& targets = patterns.targets.emplace_back();
    for (size_t j = 0; j < names.size(); ++j) {
      targets.emplace_back(names[j], NodePattern::Rule::kTarget,
                           "specific_layer_config[" + std::to_string(i) + "].target_node_names[" + std::to_string(j) + "]",
                           label);
    }
  }
  const std::vector<std::string>& excludes = config.exclude.node_names;
  for (size_t i = 0; i < excludes.size(); ++i) {
    patterns.excludes.emplace_back(excludes[i], NodePattern::Rule::kRegex,
                                   "exclude.node_names[" + std::to_string(i) + "]", label);
  }
  return patterns;
}

}  // namespace mixprec::selection
