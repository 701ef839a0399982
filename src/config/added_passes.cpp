// The table of passes added at run time (mixprec/config.h's add_pass).
#include <algorithm>
#include <deque>

#include "config/algorithm_table.h"
#include "mixprec/config.h"
#include "mixprec/error.h"

namespace mixprec {
namespace {

std::deque<AddedPass>& added_passes() {
  static std::deque<AddedPass> passes;
  return passes;
}

}  // namespace

const EnumNames<PassStage>& pass_stage_names() {
  static constexpr EnumName<PassStage> kRows[] = {{PassStage::kFloat, "float"}, {PassStage::kQuantized, "quantized"}};
  static constexpr EnumNames<PassStage> kNames{kRows};
  return kNames;
}

void add_pass(AddedPass pass) {
  if (pass.name.empty()) throw_bad_input("", pass.origin + ": a pass needs a name");
  if (config::find_algorithm(pass.name) || find_added_pass(pass.name)) {
    throw_bad_input("", pass.origin + ": algorithm " + pass.name + " is already defined");
  }
  if (!pass.run) throw_bad_input("", pass.origin + ": pass " + pass.name + " has no function");
  added_passes().push_back(std::move(pass));
}

const AddedPass* find_added_pass(std::string_view name) {
  const auto& passes = added_passes();
  const auto it = std::ranges::find(passes, name, &AddedPass::name);
  return it == passes.end() ? nullptr : &*it;
}

std::vector<std::string> added_pass_names() {
  std::vector<std::string> names;
  for (const AddedPass& pass : added_passes()) names.push_back(pass.name);
  return names;
}

}  // namespace mixprec
