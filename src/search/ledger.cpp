#include "search/ledger.h"

#include <sstream>

#include "common/json_text.h"
#include "mixprec/error.h"
#include "mixprec/log.h"

namespace mixprec::search {
using Json = nlohmann::ordered_json;

Json output_to_json(const OutputMetrics& m) {
  Json j = {{"name", m.name},         {"psnr_db", m.psnr_db},       {"sqnr_db", m.sqnr_db},
            {"pass_rate", m.pass_rate}, {"max_abs_error", m.max_abs_error}, {"cosine", m.cosine}};
  if (m.top1_agreement) j["top1"] = *m.top1_agreement;
  return j;
}

Json step_to_json(const ExploreStep& step, const std::vector<OutputMetrics>& outputs) {
  Json line = {{"step", step.index},
               {"layer", step.layer},
               {"decision", to_string(step.decision)},
               {"sweep", step.sweep},
               {"objective", step.objective},
               {"psnr_db", step.psnr_db},
               {"pass_rate", step.pass_rate},
               {"meets_criterion", step.meets_criterion},
               {"lifted_layers", step.lifted_layers},
               {"seconds", step.seconds},
               {"time_vs_bf16", step.time_vs_bf16},
               {"transitions", step.transitions}};
  if (step.learned_layers + step.reused_layers > 0) {  // AdaRound / AdaQuant in the config
    line["learned_layers"] = step.learned_layers;
    line["reused_layers"] = step.reused_layers;
  }
  if (!step.lift.empty()) {  // a ladder's rung (a single lift's lines stay as they were)
    line["rung"] = step.rung;
    line["lift"] = step.lift;
  }
  Json metrics = Json::array();
  for (const auto& m : outputs) metrics.push_back(output_to_json(m));
  line["outputs"] = metrics;
  return line;
}

ExploreStep step_from_json(const Json& j) {
  ExploreStep step;
  step.index = j.at("step").get<size_t>();
  step.layer = j.at("layer").get<std::string>();
  const std::string decision = j.at("decision").get<std::string>();
  const auto value = decision_names().from_name(decision);
  if (!value) {
    throw Json::other_error::create(501, "unknown decision '" + decision + "' (" + decision_names().list() + ")", &j);
  }
  step.decision = *value;
  step.sweep = j.contains("sweep") ? j.at("sweep").get<size_t>() : 1;  // ledgers before the retry sweep
  step.objective = j.at("objective").get<double>();
  step.psnr_db = j.at("psnr_db").get<double>();
  step.pass_rate = j.at("pass_rate").get<double>();
  step.meets_criterion = j.at("meets_criterion").get<bool>();
  step.lifted_layers = j.at("lifted_layers").get<size_t>();
  step.seconds = j.at("seconds").get<double>();
  // Ledgers before the cost model have neither.
  step.time_vs_bf16 = j.contains("time_vs_bf16") ? j.at("time_vs_bf16").get<double>() : 1.0;
  step.transitions = j.contains("transitions") ? j.at("transitions").get<size_t>() : 0;
  if (j.contains("learned_layers")) {
    step.learned_layers = j.at("learned_layers").get<size_t>();
    step.reused_layers = j.at("reused_layers").get<size_t>();
  }
  if (j.contains("lift")) {
    step.rung = j.at("rung").get<size_t>();
    step.lift = j.at("lift").get<std::string>();
  }
  return step;
}

std::vector<ExploreStep> parse_ledger(const std::string& text, const std::string& path, std::string& complete_lines) {
  std::vector<ExploreStep> steps;
  std::istringstream lines(text);
  std::string line;
  size_t number = 0;
  while (std::getline(lines, line)) {
    ++number;
    ExploreStep step;
    try {
      step = json_text::with_json_errors(path, "a ledger line",
                                         [&] { return step_from_json(json_text::parse_json(line, path, "a ledger line")); });
    } catch (const Error& e) {
      // A broken last line is what a run stopped while writing it leaves; anywhere else it is corruption.
      if (lines.peek() != std::char_traits<char>::eof()) throw_bad_input(path, "line " + std::to_string(number) + ": " + e.message());
      log_warning(path + ": dropped the incomplete last line (the run stopped while writing it)");
      continue;
    }
    if (step.index != steps.size() + 1) {
      throw_bad_input(path, "line " + std::to_string(number) + ": step " + std::to_string(step.index) + " out of order");
    }
    steps.push_back(std::move(step));
    complete_lines += line + '\n';
  }
  return steps;
}

LedgerReplay::LedgerReplay(std::vector<ExploreStep> steps, Evaluator& live, std::string ledger_path,
                           std::function<void()> on_end)
    : steps_(std::move(steps)), live_(live), ledger_path_(std::move(ledger_path)), on_end_(std::move(on_end)) {}

Score LedgerReplay::evaluate(const std::set<std::string>& lifted, const std::string& label) {
  if (next_ < steps_.size()) {
    const ExploreStep& step = steps_[next_++];
    if (step.layer != label) {
      throw_bad_input(ledger_path_, "step " + std::to_string(step.index) + " tried '" + step.layer +
                                        "' where this run tries '" + label + "'");
    }
    return Score{.pass = step.meets_criterion,
                 .objective = step.objective,
                 .psnr_db = step.psnr_db,
                 .pass_rate = step.pass_rate,
                 .seconds = step.seconds,
                 .time_vs_bf16 = step.time_vs_bf16,
                 .transitions = step.transitions,
                 .replayed = true};
  }
  finish();
  return live_.evaluate(lifted, label);
}

void LedgerReplay::finish() {
  if (ended_) return;
  ended_ = true;
  if (on_end_) on_end_();
}

const ExploreStep* LedgerReplay::recorded(size_t index) const {
  return index >= 1 && index <= steps_.size() ? &steps_[index - 1] : nullptr;
}

}  // namespace mixprec::search
