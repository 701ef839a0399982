// The ledger (one JSON line per step) and resuming from it.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mixprec/explore.h"
#include "search/search.h"

namespace mixprec::search {

// The compact view of one output's metrics the ledger and summary.json hold.
nlohmann::ordered_json output_to_json(const OutputMetrics& metrics);
// One ledger line: the step and a compact view of each output's metrics.
nlohmann::ordered_json step_to_json(const ExploreStep& step, const std::vector<OutputMetrics>& outputs);
// The step of a line step_to_json wrote (the outputs are not read back). Throws
// nlohmann::json::exception for a missing or mistyped field or an unknown decision.
ExploreStep step_from_json(const nlohmann::ordered_json& line);

// The complete steps of a ledger's text, in order; a last line cut by a crash is dropped with
// a warning. kBadInput naming `path` and the line for anything else.
std::vector<ExploreStep> parse_ledger(const std::string& text, const std::string& path, std::string& complete_lines);

// Resume as an evaluator: the first trials a search asks for are answered from the ledger
// (checked to be the same trials, in the same order), the rest by `live`. When the replay
// ends (at the first trial past it, or at finish()), `on_end` runs once, before any live
// evaluation, so the caller can rebuild what the ledger does not hold (the best model).
class LedgerReplay : public Evaluator {
 public:
  LedgerReplay(std::vector<ExploreStep> steps, Evaluator& live, std::string ledger_path, std::function<void()> on_end);

  Score evaluate(const std::set<std::string>& lifted, const std::string& label) override;
  Cost cost(const std::set<std::string>& lifted) const override { return live_.cost(lifted); }
  std::vector<std::set<std::string>> islands(const std::set<std::string>& lifted) const override {
    return live_.islands(lifted);
  }
  std::vector<std::vector<std::string>> chains() const override { return live_.chains(); }
  // Measured again, replay or not: it is not in the ledger, and the same state ranks the same.
  std::vector<std::string> rerank(const std::set<std::string>& lifted, const std::vector<std::string>& remaining) override {
    return live_.rerank(lifted, remaining);
  }
  void finish();
  // The ledger's step `index` (1-based), or nullptr past the replay.
  const ExploreStep* recorded(size_t index) const;
  size_t size() const { return steps_.size(); }

 private:
  std::vector<ExploreStep> steps_;
  Evaluator& live_;
  std::string ledger_path_;
  std::function<void()> on_end_;
  size_t next_ = 0;
  bool ended_ = false;
};

}  // namespace mixprec::search
