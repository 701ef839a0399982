#include "mixprec/explore.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "mixprec/error.h"
#include "mixprec/log.h"
#include "mixprec/model_io.h"
#include "mixprec/rewrite.h"
#include "search/workbench.h"

namespace mixprec {
namespace {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using Json = nlohmann::ordered_json;

// SPEC guardrail: stop when PSNR gains less than this over the last kPlateauWindow promotions.
constexpr double kPlateauDb = 0.5;
constexpr size_t kPlateauWindow = 3;
constexpr size_t kMaxIterationsCap = 50;

// The ledger's compact view of one output (report/ renders the full one; search sits below it).
Json output_json(const OutputMetrics& m) {
  Json j = {{"name", m.name},         {"psnr_db", m.psnr_db},       {"sqnr_db", m.sqnr_db},
            {"pass_rate", m.pass_rate}, {"max_abs_error", m.max_abs_error}, {"cosine", m.cosine}};
  if (m.top1_agreement) j["top1"] = *m.top1_agreement;
  return j;
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

struct RankingRow {
  Ranking ranking;
  const char* name;
};
constexpr RankingRow kRankings[] = {
    {Ranking::kDynamicRange, "dynamic-range"}, {Ranking::kMeasured, "measured"}, {Ranking::kLayerError, "layer-error"}};

struct SearchRow {
  SearchMode mode;
  const char* name;
};
constexpr SearchRow kSearchModes[] = {{SearchMode::kGreedy, "greedy"}, {SearchMode::kBisection, "bisection"}};

// An evaluation with the search's objective; a step replayed from the ledger has numbers only.
struct Score {
  std::shared_ptr<const onnx::ModelProto> model;
  std::vector<OutputMetrics> metrics;
  Verdict verdict;
  double objective = 0;
  double psnr_db = 0;
  double pass_rate = 0;
};

class Explorer {
 public:
  explicit Explorer(const ExploreParams& params, const StepCallback& on_step)
      : params_(params), on_step_(on_step), start_(Clock::now()) {}

  ExploreResult run() {
    WarningCollector warnings;
    fs::create_directories(params_.work_dir);
    result_.final_model_path = (fs::path(params_.work_dir) / "final.onnx").string();
    result_.final_config_path = (fs::path(params_.work_dir) / "final_config.json").string();
    result_.ledger_path = (fs::path(params_.work_dir) / "ledger.jsonl").string();
    if (params_.resume && (!fs::exists(result_.ledger_path) || !fs::exists(run_settings_path()))) {
      throw_bad_input(params_.work_dir, "nothing to resume: no ledger.jsonl and run.json here");
    }
    prepare();
    search();
    result_.evaluations = bench_->evaluations();
    write_summary();
    result_.seconds = seconds_since(start_);
    result_.warnings = warnings.warnings();
    return result_;
  }

 private:
  void prepare() {
    const std::string& label = params_.model_path;
    if (params_.base_config) {
      base_ = *params_.base_config;
    } else {
      auto base = preset_config(params_.base_preset);
      if (!base) throw_bad_input("", "unknown base preset '" + params_.base_preset + "'");
      base_ = *base;
    }
    const auto lift = preset_config(params_.lift);
    const bool float_lift = lift && lift->global.input_tensors && !format_traits(lift->global.input_tensors->format).is_integer;
    if (!float_lift) throw_bad_input("", "cannot lift layers to '" + params_.lift + "' (BF16 or FP16)");
    lifted_config_ = lift->global;
    lift_name_ = params_.lift;
    const DeviceProfile& device = device_profile(params_.device);
    if (const auto why = device_rejects(device, formats_used(base_))) throw_bad_input("", "the starting point: " + *why);
    if (const auto why = device_rejects(device, formats_used(*lift))) throw_bad_input("", "lifting to " + params_.lift + ": " + *why);
    bench_ = std::make_unique<Workbench>(WorkbenchOptions{
        .model_path = label,
        .stats_path = (fs::path(params_.work_dir) / "stats.json").string(),
        .calibration = params_.calibration,
        .evaluation = params_.evaluation,
        .calibration_samples = static_cast<size_t>(base_.extra.num_calib_samples),
        .prepare = prepare_options(base_),
        .tolerance = params_.tolerance,
        .target = params_.target,
        .session = params_.session,
        .progress = params_.progress});
    result_.task = bench_->task();
    result_.calibration_seconds = bench_->calibration_seconds();
    // Every layer the base preset puts in integer formats is a candidate: compute layers and
    // the arithmetic (Add, Mul, pools) an int8 accelerator runs, whose error can dominate
    // (hard-swish and squeeze-excite blocks are Mul/Add chains).
    candidates_ = bench_->integer_layers(base_);
    result_.compute_layers = candidates_.size();
    if (candidates_.empty()) throw_unsupported(label, "no compute layer to quantize with " + params_.base_preset);
  }

  QuantConfig config_for(const std::set<std::string>& lifted) const {
    QuantConfig config = base_;
    if (!lifted.empty()) {
      LayerOverride override_;
      override_.target_node_names.assign(lifted.begin(), lifted.end());
      override_.layer_config = lifted_config_;
      config.specific.push_back(std::move(override_));
    }
    return config;
  }

  Score evaluate(const std::set<std::string>& lifted) {
    Evaluation e = bench_->evaluate(config_for(lifted));
    Score score;
    score.model = std::move(e.model);
    score.metrics = std::move(e.metrics);
    score.verdict = std::move(e.verdict);
    score.psnr_db = e.psnr_db;
    score.pass_rate = e.pass_rate;
    score.objective = objective(score.metrics);
    return score;
  }

  // Higher is better: the target's metric on the worst output, else the task's own measure.
  double objective(const std::vector<OutputMetrics>& metrics) {
    AccuracyTarget::Metric metric = AccuracyTarget::kPsnr;
    bool lower_is_better = false;
    if (params_.target) {
      metric = params_.target->metric;
      lower_is_better = params_.target->op == AccuracyTarget::kLess;
    } else if (result_.task.type == TaskType::kClassification || result_.task.type == TaskType::kSequence) {
      metric = AccuracyTarget::kTop1;
    }
    const MetricTraits& traits = metric_traits(metric);
    result_.objective_name = std::string("worst-output ") + traits.label;
    double worst = lower_is_better ? -1e300 : 1e300;
    for (const auto& m : metrics) {
      const double value = traits.value(m).value_or(lower_is_better ? 1e300 : -1e300);
      worst = lower_is_better ? std::max(worst, value) : std::min(worst, value);
    }
    return lower_is_better ? -worst : worst;
  }

  std::string sensitivity_path() const { return (fs::path(params_.work_dir) / "sensitivity.json").string(); }

  // The ranking a resumed run continues with: the one on disk, checked against the candidates.
  std::vector<std::string> load_ranking() const {
    const std::string path = sensitivity_path();
    std::vector<std::string> order;
    try {
      const Json j = Json::parse(read_file(path, "sensitivity ranking"));
      if (j.at("ranking").get<std::string>() != to_string(params_.ranking)) {
        throw_bad_input(path, "made with ranking '" + j.at("ranking").get<std::string>() + "', not '" +
                                  to_string(params_.ranking) + "'");
      }
      for (const auto& row : j.at("layers")) order.push_back(row.at("layer").get<std::string>());
    } catch (const Json::exception& e) {
      throw_bad_input(path, std::string("not a sensitivity ranking: ") + e.what());
    }
    std::vector<std::string> sorted = order, expected = candidates_;
    std::sort(sorted.begin(), sorted.end());
    std::sort(expected.begin(), expected.end());
    if (sorted != expected) throw_bad_input(path, "ranks other layers than this model's candidates");
    return order;
  }

  static const char* ranking_score_meaning(Ranking ranking) {
    switch (ranking) {
      case Ranking::kDynamicRange: return "max |activation| of the inputs";
      case Ranking::kMeasured: return "objective gain when lifted alone";
      case Ranking::kLayerError: return "noise-to-signal ratio the layer adds in full INT8 (output minus worst input)";
    }
    return "?";
  }

  // The noise each candidate adds: its output's noise-to-signal ratio in full INT8 minus the
  // worst of its float inputs' (what reached it from upstream). The producer-side tensor names
  // survive quantization (Q/DQ go on the consumer side), so both graphs expose the same names.
  std::map<std::string, double> layer_error_scores() {
    std::map<std::string, const onnx::NodeProto*> nodes;
    for (const auto& node : bench_->prepared().graph().node()) nodes[node.name()] = &node;
    std::set<std::string> initializers;
    for (const auto& init : bench_->prepared().graph().initializer()) initializers.insert(init.name());
    std::set<std::string> wanted;
    for (const auto& name : candidates_) {
      const onnx::NodeProto& node = *nodes.at(name);
      for (const auto& input : node.input()) {
        if (!input.empty() && !initializers.count(input)) wanted.insert(input);
      }
      if (node.output_size() > 0) wanted.insert(node.output(0));
    }
    const auto noise = bench_->tensor_noise(base_, std::vector<std::string>(wanted.begin(), wanted.end()));
    const auto ratio = [&](const std::string& tensor) {
      auto it = noise.find(tensor);
      return it == noise.end() ? 0.0 : it->second;
    };
    std::map<std::string, double> score;
    for (const auto& name : candidates_) {
      const onnx::NodeProto& node = *nodes.at(name);
      double upstream = 0;
      for (const auto& input : node.input()) upstream = std::max(upstream, ratio(input));
      score[name] = node.output_size() > 0 ? ratio(node.output(0)) - upstream : 0.0;
    }
    return score;
  }

  std::vector<std::string> rank(const Score& int8) {
    std::map<std::string, double> score;
    std::map<std::string, double> tiebreak;  // measured: PSNR gain, for coarse objectives' ties
    if (params_.ranking == Ranking::kDynamicRange) {
      std::map<std::string, const onnx::NodeProto*> nodes;
      for (const auto& node : bench_->prepared().graph().node()) nodes[node.name()] = &node;
      for (const auto& name : candidates_) {
        double range = 0;
        for (const auto& input : nodes.at(name)->input()) {
          auto it = bench_->stats().tensors.find(input);
          if (it != bench_->stats().tensors.end()) range = std::max({range, std::fabs(double(it->second.min)), std::fabs(double(it->second.max))});
        }
        score[name] = range;
      }
    } else if (params_.ranking == Ranking::kMeasured) {
      for (const auto& name : candidates_) {
        const Score alone = evaluate({name});
        score[name] = alone.objective - int8.objective;
        tiebreak[name] = alone.psnr_db - int8.psnr_db;
      }
    } else {
      score = layer_error_scores();
    }
    std::vector<std::string> order = candidates_;
    std::stable_sort(order.begin(), order.end(), [&](const auto& a, const auto& b) {
      return score[a] != score[b] ? score[a] > score[b] : tiebreak[a] > tiebreak[b];
    });
    Json j = Json::array();
    for (const auto& name : order) j.push_back({{"layer", name}, {"score", score[name]}});
    write_file_atomically(sensitivity_path(),
                          Json{{"ranking", to_string(params_.ranking)},
                               {"score", ranking_score_meaning(params_.ranking)},
                               {"layers", j}}
                                  .dump(2));
    return order;
  }

  void save_best(const std::set<std::string>& lifted, const Score& e) {
    save_model(*e.model, result_.final_model_path);
    save_config(config_for(lifted), result_.final_config_path);
    result_.lifted_layers.assign(lifted.begin(), lifted.end());
  }

  // Appends the step to the ledger (flushed) and the result, then reports it.
  void record(const ExploreStep& step, const Score& e) {
    Json line = {{"step", step.index},       {"layer", step.layer},         {"decision", step.decision},
                 {"objective", step.objective}, {"psnr_db", step.psnr_db},  {"pass_rate", step.pass_rate},
                 {"meets_criterion", step.meets_criterion}, {"lifted_layers", step.lifted_layers},
                 {"seconds", step.seconds}};
    Json outputs = Json::array();
    for (const auto& m : e.metrics) outputs.push_back(output_json(m));
    line["outputs"] = outputs;
    ledger_ << line.dump() << '\n';
    ledger_.flush();
    if (!ledger_) throw_io(result_.ledger_path, "cannot append to the ledger (disk full?)");
    result_.steps.push_back(step);
    if (on_step_) on_step_(step);
  }

  std::string run_settings_path() const { return (fs::path(params_.work_dir) / "run.json").string(); }

  // What a resumed run must share with the run it continues: the same model, starting point,
  // ranking, criterion, limits and evaluation samples give the same remaining steps.
  Json settings() const {
    const DataSpec& data = params_.evaluation;
    return {{"model_fingerprint", model_fingerprint(bench_->prepared())},
            {"base", params_.base_config ? config_to_json(*params_.base_config) : Json(params_.base_preset)},
            {"ranking", to_string(params_.ranking)},
            {"search", to_string(params_.search)},
            {"target", params_.target ? params_.target->text : ""},
            {"atol", params_.tolerance.atol},
            {"rtol", params_.tolerance.rtol},
            {"lift", params_.lift},
            {"bf16_budget", params_.bf16_budget},
            {"max_iterations", params_.max_iterations},
            {"evaluation", {{"files", data.data.files},
                            {"random_samples", data.data.random_samples},
                            {"seed", data.data.seed},
                            {"preprocess", data.preprocess},
                            {"image_size", {data.image_height, data.image_width}}}}};
  }

  // The ledger's complete lines (a line cut by a crash is dropped), checked against run.json.
  std::vector<ExploreStep> read_ledger_for_resume(const Json& current, std::string& complete_lines) {
    const std::string run_path = run_settings_path();
    Json previous;
    try {
      previous = Json::parse(read_file(run_path, "run settings"));
    } catch (const Json::exception& e) {
      throw_bad_input(run_path, std::string("not valid JSON: ") + e.what());
    }
    for (const auto& [key, value] : current.items()) {
      if (!previous.contains(key) || previous[key] != value) {
        throw_bad_input(run_path, "the run to resume used another " + key + " (" +
                                      (previous.contains(key) ? previous[key].dump() : "none") + " vs " + value.dump() +
                                      "): resume with the same settings or use a fresh --work-dir");
      }
    }
    std::vector<ExploreStep> steps;
    std::istringstream lines(read_file(result_.ledger_path, "ledger"));
    std::string text;
    size_t line_number = 0;
    while (std::getline(lines, text)) {
      ++line_number;
      try {
        const Json j = Json::parse(text);
        ExploreStep step;
        step.index = j.at("step").get<size_t>();
        step.layer = j.at("layer").get<std::string>();
        step.decision = j.at("decision").get<std::string>();
        step.objective = j.at("objective").get<double>();
        step.psnr_db = j.at("psnr_db").get<double>();
        step.pass_rate = j.at("pass_rate").get<double>();
        step.meets_criterion = j.at("meets_criterion").get<bool>();
        step.lifted_layers = j.at("lifted_layers").get<size_t>();
        step.seconds = j.at("seconds").get<double>();
        if (step.index != steps.size() + 1) throw_bad_input(result_.ledger_path, "line " + std::to_string(line_number) + ": step " + std::to_string(step.index) + " out of order");
        steps.push_back(std::move(step));
        complete_lines += text + '\n';
      } catch (const Json::exception& e) {
        if (lines.peek() != std::char_traits<char>::eof()) {
          throw_bad_input(result_.ledger_path, "line " + std::to_string(line_number) + ": " + e.what());
        }
        log_warning(result_.ledger_path + ": dropped the incomplete last line (the run stopped while writing it)");
      }
    }
    return steps;
  }

  void search() {
    const Json current_settings = settings();
    std::vector<ExploreStep> replay;
    std::string ledger_text;  // a resumed ledger keeps its complete lines and is appended to
    if (params_.resume) {
      replay = read_ledger_for_resume(current_settings, ledger_text);
    } else {
      write_file_atomically(run_settings_path(), current_settings.dump(2));
    }
    write_file_atomically(result_.ledger_path, ledger_text);
    ledger_.open(result_.ledger_path, std::ios::app);
    if (!ledger_) throw_io(result_.ledger_path, "cannot write the ledger");

    const Score int8 = evaluate({});
    result_.int8_metrics = int8.metrics;
    if (replay.empty()) save_best({}, int8);
    if (int8.verdict.pass) {
      result_.stop_reason = result_.task.type == TaskType::kClassification && !params_.target
                                ? "pre-exploration gate: top-1 already agrees with full INT8"
                                : "full INT8 already meets the criterion";
      finish(int8);
      return;
    }
    const Score all_lifted = evaluate(std::set<std::string>(candidates_.begin(), candidates_.end()));
    result_.lifted_metrics = all_lifted.metrics;
    if (!all_lifted.verdict.pass) {
      result_.stop_reason = "full " + lift_name_ + " misses the criterion too (" + all_lifted.verdict.reason +
                            "): out of reach by precision alone" + fp16_hint();
      finish(int8);
      return;
    }
    result_.ranking = params_.resume && fs::exists(sensitivity_path()) ? load_ranking() : rank(int8);
    if (replay.size() > result_.ranking.size()) throw_bad_input(result_.ledger_path, "more steps than ranked layers");
    const size_t max_iterations =
        params_.max_iterations ? params_.max_iterations : std::min(kMaxIterationsCap, candidates_.size());
    const auto budget = std::max<size_t>(
        1, static_cast<size_t>(std::floor(params_.bf16_budget * static_cast<double>(candidates_.size()))));
    Score best = int8;
    if (params_.search == SearchMode::kBisection) {
      bisect(replay, best, budget, max_iterations, all_lifted);
    } else {
      greedy(replay, best, budget, max_iterations);
    }
    finish(best);
  }

  // Step `i`: replayed from the ledger when it is there (checked to be the same trial), else
  // one evaluation of `trial`. Fills the step's label and numbers; the caller decides.
  Score trial_step(size_t i, const std::vector<ExploreStep>& replay, const std::set<std::string>& trial,
                   const std::string& label, ExploreStep& step) {
    if (i < replay.size()) {
      step = replay[i];
      if (step.layer != label) {
        throw_bad_input(result_.ledger_path, "step " + std::to_string(step.index) + " tried '" + step.layer +
                                                 "' where this run tries '" + label + "'");
      }
      Score e;
      e.objective = step.objective;
      e.psnr_db = step.psnr_db;
      e.pass_rate = step.pass_rate;
      e.verdict.pass = step.meets_criterion;
      return e;
    }
    Score e = evaluate(trial);
    step.index = result_.steps.size() + 1;
    step.layer = label;
    step.objective = e.objective;
    step.psnr_db = e.psnr_db;
    step.pass_rate = e.pass_rate;
    step.meets_criterion = e.verdict.pass;
    return e;
  }

  // When BF16 is not enough and the device runs FP16 (3 more mantissa bits), one more
  // evaluation says whether lifting to FP16 would be.
  std::string fp16_hint() {
    if (lift_name_ != "BF16" || !device_allows(device_profile(params_.device), FormatId::kFloat16)) return "";
    QuantConfig all_fp16 = base_;
    LayerOverride override_;
    override_.target_node_names = candidates_;
    override_.layer_config = preset_config("FP16")->global;
    all_fp16.specific.push_back(std::move(override_));
    const Evaluation e = bench_->evaluate(all_fp16);
    char numbers[96];
    std::snprintf(numbers, sizeof numbers, "PSNR %.2f dB, pass rate %.3f%%", e.psnr_db, 100 * e.pass_rate);
    return e.verdict.pass ? std::string("; full FP16 passes (") + numbers + "): " + params_.device +
                                " runs FP16, rerun with --lift FP16"
                          : std::string("; full FP16 misses too (") + numbers + ")";
  }

  // Writes a new step (or counts a replayed one), and after the last replayed step rebuilds the
  // best so far, whose model the ledger does not hold.
  void conclude_step(size_t i, const std::vector<ExploreStep>& replay, ExploreStep& step, const Score& e,
                     Clock::time_point t0, Score& best, const std::set<std::string>& best_lifted) {
    if (i < replay.size()) {
      ++result_.resumed_steps;
      result_.steps.push_back(step);  // its ledger line is already on disk
      if (i + 1 == replay.size() && best.metrics.empty()) {
        best = evaluate(best_lifted);
        save_best(best_lifted, best);
      }
      return;
    }
    step.seconds = seconds_since(t0);
    record(step, e);
  }

  // SPEC's search: promote layers one at a time in ranking order under the guardrails.
  void greedy(const std::vector<ExploreStep>& replay, Score& best, size_t budget, size_t max_iterations) {
    std::set<std::string> lifted;
    std::vector<double> gains;  // PSNR gain of each accepted promotion
    result_.stop_reason = "every ranked layer was tried";
    for (size_t i = 0; i < result_.ranking.size(); ++i) {
      const std::string& layer = result_.ranking[i];
      if (result_.steps.size() >= max_iterations) {
        result_.stop_reason = "max iterations (" + std::to_string(max_iterations) + ")";
        break;
      }
      if (lifted.size() >= budget) {
        result_.stop_reason = lift_name_ + " budget: " + std::to_string(lifted.size()) + " of " +
                              std::to_string(candidates_.size()) + " candidate layers";
        break;
      }
      std::set<std::string> trial = lifted;
      trial.insert(layer);
      const auto t0 = Clock::now();
      ExploreStep step;
      const Score e = trial_step(i, replay, trial, layer, step);
      const std::string decision = promotion_decision(best.objective, e.objective, best.psnr_db, e.psnr_db);
      if (i < replay.size() && decision != step.decision) {
        throw_bad_input(result_.ledger_path, "step " + std::to_string(step.index) + " says '" + step.decision +
                                                 "' where its numbers say '" + decision + "'");
      }
      step.decision = decision;
      if (decision == std::string("accepted")) {
        gains.push_back(e.psnr_db - best.psnr_db);
        lifted = trial;
        best = e;
        if (i >= replay.size()) save_best(lifted, best);
      }
      step.lifted_layers = lifted.size();
      conclude_step(i, replay, step, e, t0, best, lifted);
      if (best.verdict.pass) {
        result_.stop_reason = "criterion met";
        break;
      }
      if (decision == std::string("accepted") && psnr_plateau(gains, kPlateauWindow, kPlateauDb)) {
        double recent = 0;
        for (size_t k = gains.size() - kPlateauWindow; k < gains.size(); ++k) recent += gains[k];
        result_.stop_reason = "PSNR plateau (+" + std::to_string(recent) + " dB over the last " +
                              std::to_string(kPlateauWindow) + " promotions)";
        break;
      }
    }
  }

  // Bisection over the ranked list (AIMET AMP's idea): find the smallest k such that lifting
  // the top k ranked layers meets the criterion, in about log2(budget) evaluations. Tries the
  // budget first: when even that misses, the target is out of reach within the budget.
  void bisect(const std::vector<ExploreStep>& replay, Score& best, size_t budget, size_t max_iterations,
              const Score& all_lifted) {
    size_t lo = 0;  // the top lo layers miss (full INT8 does)
    size_t hi = std::min(budget, result_.ranking.size());
    size_t k = hi;
    std::set<std::string> best_lifted;
    bool found = false;
    if (hi == result_.ranking.size()) {
      // The budget allows every candidate: that is the full-lift baseline, already measured.
      found = true;
      best = all_lifted;
      best_lifted.insert(result_.ranking.begin(), result_.ranking.end());
      if (replay.empty()) save_best(best_lifted, best);
      k = lo + (hi - lo) / 2;
      if (hi - lo <= 1) {
        result_.stop_reason = "bisection: the top " + std::to_string(hi) + " ranked layers are the fewest that meet the criterion";
        return;
      }
    }
    for (size_t i = 0;; ++i) {
      if (result_.steps.size() >= max_iterations) {
        result_.stop_reason = "max iterations (" + std::to_string(max_iterations) + ")";
        break;
      }
      const std::set<std::string> trial(result_.ranking.begin(), result_.ranking.begin() + static_cast<long>(k));
      const auto t0 = Clock::now();
      ExploreStep step;
      const Score e = trial_step(i, replay, trial, "top " + std::to_string(k), step);
      const std::string decision = e.verdict.pass ? "meets" : "misses";
      if (i < replay.size() && decision != step.decision) {
        throw_bad_input(result_.ledger_path, "step " + std::to_string(step.index) + " says '" + step.decision +
                                                 "' where its numbers say '" + decision + "'");
      }
      step.decision = decision;
      // The best so far: the smallest passing set, else the highest objective.
      const bool better = e.verdict.pass ? (!found || k < best_lifted.size())
                                         : (!found && promotion_decision(best.objective, e.objective, best.psnr_db,
                                                                         e.psnr_db) == std::string("accepted"));
      if (better) {
        best = e;
        best_lifted = trial;
        found = found || e.verdict.pass;
        if (i >= replay.size()) save_best(best_lifted, best);
      }
      (e.verdict.pass ? hi : lo) = k;
      step.lifted_layers = best_lifted.size();
      conclude_step(i, replay, step, e, t0, best, best_lifted);
      if (!found && k == std::min(budget, result_.ranking.size())) {
        result_.stop_reason = lift_name_ + " budget: the top " + std::to_string(k) + " of " +
                              std::to_string(candidates_.size()) + " candidate layers still miss the criterion";
        break;
      }
      if (hi - lo <= 1) {
        result_.stop_reason = "bisection: the top " + std::to_string(hi) + " ranked layers are the fewest that meet the criterion";
        break;
      }
      k = lo + (hi - lo) / 2;
    }
  }

  void finish(const Score& best) {
    result_.final_metrics = best.metrics;
    result_.final_verdict = best.verdict;
    const DeviceProfile& device = device_profile(params_.device);
    const std::set<std::string> lifted(result_.lifted_layers.begin(), result_.lifted_layers.end());
    result_.final_time_vs_bf16 = bench_->time_vs_full_bf16(config_for(lifted), device);
    result_.int8_time_vs_bf16 = bench_->time_vs_full_bf16(base_, device);
    for (const auto& note : bench_->macs().notes) log_warning(params_.model_path + ": MAC estimate: " + note);
  }

  void write_summary() const {
    Json metrics = Json::array();
    for (const auto& m : result_.final_metrics) metrics.push_back(output_json(m));
    const Json summary = {{"model", params_.model_path},
                          {"task", to_string(result_.task.type)},
                          {"base", params_.base_config ? config_to_json(*params_.base_config) : Json(params_.base_preset)},
                          {"ranking", to_string(params_.ranking)},
                          {"search", to_string(params_.search)},
                          {"stop_reason", result_.stop_reason},
                          {"compute_layers", result_.compute_layers},
                          {"lift", lift_name_},
                          {"lifted_layer_count", result_.lifted_layers.size()},
                          {"lifted_layers", result_.lifted_layers},
                          {"verdict", {{"pass", result_.final_verdict.pass},
                                       {"criterion", result_.final_verdict.criterion},
                                       {"reason", result_.final_verdict.reason}}},
                          {"final_metrics", metrics},
                          {"evaluations", result_.evaluations},
                          {"device", params_.device},
                          {"expected_time_vs_full_bf16", {{"final", result_.final_time_vs_bf16},
                                                          {"full_int8", result_.int8_time_vs_bf16},
                                                          {"basis", "MAC-weighted nominal speeds of the device profile"}}},
                          {"steps", result_.steps.size()}};
    write_file_atomically((fs::path(params_.work_dir) / "summary.json").string(), summary.dump(2));
  }

  const ExploreParams& params_;
  const StepCallback& on_step_;
  Clock::time_point start_;
  ExploreResult result_;
  QuantConfig base_;
  LayerConfig lifted_config_;
  std::string lift_name_;
  std::unique_ptr<Workbench> bench_;
  std::vector<std::string> candidates_;
  std::ofstream ledger_;
};

}  // namespace

const char* to_string(SearchMode mode) {
  for (const auto& row : kSearchModes) {
    if (row.mode == mode) return row.name;
  }
  return "?";
}

std::optional<SearchMode> search_mode_from_name(const std::string& name) {
  for (const auto& row : kSearchModes) {
    if (name == row.name) return row.mode;
  }
  return std::nullopt;
}

const char* to_string(Ranking ranking) {
  for (const auto& row : kRankings) {
    if (row.ranking == ranking) return row.name;
  }
  return "?";
}

std::optional<Ranking> ranking_from_name(const std::string& name) {
  for (const auto& row : kRankings) {
    if (name == row.name) return row.ranking;
  }
  return std::nullopt;
}

const char* promotion_decision(double best_objective, double trial_objective, double best_psnr_db,
                               double trial_psnr_db) {
  if (trial_objective != best_objective) return trial_objective > best_objective ? "accepted" : "rolled back";
  if (trial_psnr_db != best_psnr_db) return trial_psnr_db > best_psnr_db ? "accepted" : "rolled back";
  return "skipped";
}

bool psnr_plateau(const std::vector<double>& gains_db, size_t window, double min_gain_db) {
  if (window == 0 || gains_db.size() < window) return false;
  double recent = 0;
  for (size_t i = gains_db.size() - window; i < gains_db.size(); ++i) recent += gains_db[i];
  return recent < min_gain_db;
}

ExploreResult explore(const ExploreParams& params, const StepCallback& on_step) {
  return Explorer(params, on_step).run();
}

}  // namespace mixprec
