// The algorithms a config may name in algo_config: one row each (config_json.cpp checks entries
// against it, algorithm_recipe() turns a config into what the algorithms stage runs).
#pragma once

#include <span>
#include <string_view>

namespace mixprec::config {

struct AlgorithmRow {
  const char* name;
  bool implemented;                        // false: Quark has it, mixprec does not yet
  std::span<const char* const> parameters; // the keys an entry may carry beside "name"
};

std::span<const AlgorithmRow> algorithm_rows();
const AlgorithmRow* find_algorithm(std::string_view name);

}  // namespace mixprec::config
