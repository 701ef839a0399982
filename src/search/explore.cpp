#include "mixprec/explore.h"

#include <algorithm>
#include <chrono>
#include <cmath>
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
constexpr RankingRow kRankings[] = {{Ranking::kDynamicRange, "dynamic-range"}, {Ranking::kMeasured, "measured"}};

struct Evaluation {
  std::shared_ptr<const onnx::ModelProto> model;  // the evaluated graph (saved when it is the best)
  std::vector<OutputMetrics> metrics;             // empty for a step replayed from the ledger
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
    write_summary();
    result_.seconds = seconds_since(start_);
    result_.warnings = warnings.warnings();
    return result_;
  }

 private:
  void prepare() {
    const std::string& label = params_.model_path;
    const onnx::ModelProto model = load_model(label);
    result_.task = analyze_model(model, label).task;
    auto base = preset_config(params_.base_preset);
    if (!base) throw_bad_input("", "unknown base preset '" + params_.base_preset + "'");
    base_ = *base;
    lifted_config_ = preset_config("BF16")->global;
    prepared_ = prepare_model(model, {.fold_batchnorm = base_.extra.convert_bn_to_conv}, label);

    // Every layer the base preset puts in integer formats is a candidate: compute layers and
    // the arithmetic (Add, Mul, pools) an int8 accelerator runs, whose error can dominate
    // (hard-swish and squeeze-excite blocks are Mul/Add chains).
    for (const auto& a : assign_layers(base_, prepared_, label)) {
      const bool integer = !a.excluded && a.config.input_tensors && format_traits(a.config.input_tensors->format).is_integer;
      if (integer) candidates_.push_back(a.node_name);
    }
    result_.compute_layers = candidates_.size();
    if (candidates_.empty()) throw_unsupported(label, "no compute layer to quantize with " + params_.base_preset);

    load_or_calibrate(label);
    cache_reference(label);
  }

  void load_or_calibrate(const std::string& label) {
    const std::string path = (fs::path(params_.work_dir) / "stats.json").string();
    const std::string fingerprint = model_fingerprint(prepared_);
    if (fs::exists(path)) {
      stats_ = load_stats(path);
      if (stats_.model_fingerprint != fingerprint) {
        throw_bad_input(path, "statistics of another model: use a fresh --work-dir");
      }
    } else {
      const Session probe = Session::from_model(prepared_, label, params_.session);
      const auto source = open_samples(params_.calibration, probe.inputs(), label);
      const auto t0 = Clock::now();
      stats_ = calibrate_model(prepared_, label, *source,
                               {.session = params_.session,
                                .max_samples = static_cast<size_t>(base_.extra.num_calib_samples),
                                .progress = params_.progress});
      result_.calibration_seconds = seconds_since(t0);
      save_stats(stats_, path);
    }
    std::map<std::string, int64_t> ranks = infer_tensor_ranks(prepared_, label);
    for (const auto& [name, rank] : stats_.ranks) ranks[name] = rank;
    ranks_ = std::move(ranks);
  }

  // The FP32 reference runs once; every step compares against these outputs.
  void cache_reference(const std::string& label) {
    const Session reference = Session::from_file(label, params_.session);
    const auto source = open_samples(params_.evaluation, reference.inputs(), label);
    if (source->size() == 0) throw_bad_input(label, "no evaluation samples");
    for (size_t i = 0; i < source->size(); ++i) {
      inputs_.push_back(source->sample(i));
      references_.push_back(reference.run(inputs_.back()));
    }
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

  onnx::ModelProto build(const QuantConfig& config) const {
    const auto assignment = assign_layers(config, prepared_, params_.model_path);
    QuantizeOptions options;
    options.calib_method = config.extra.calib_method;
    options.activation_symmetric = config.extra.activation_symmetric;
    options.int32_bias = config.extra.int32_bias;
    const RankLookup rank_of = [this](const std::string& name) -> std::optional<int64_t> {
      auto it = ranks_.find(name);
      return it == ranks_.end() ? std::nullopt : std::optional<int64_t>(it->second);
    };
    return quantize_model(prepared_, assignment, stats_, options, params_.model_path, rank_of);
  }

  Evaluation evaluate(const std::set<std::string>& lifted) {
    ++result_.evaluations;
    Evaluation e;
    e.model = std::make_shared<const onnx::ModelProto>(build(config_for(lifted)));
    const Session session = Session::from_model(*e.model, params_.model_path, params_.session);
    ModelComparer comparer(params_.tolerance);
    for (size_t i = 0; i < inputs_.size(); ++i) comparer.add(references_[i], session.run(inputs_[i]));
    e.metrics = comparer.results();
    e.verdict = judge(result_.task.type, e.metrics, params_.target);
    e.psnr_db = kMaxDb;
    e.pass_rate = 1;
    for (const auto& m : e.metrics) {
      e.psnr_db = std::min(e.psnr_db, m.psnr_db);
      e.pass_rate = std::min(e.pass_rate, m.pass_rate);
    }
    e.objective = objective(e.metrics);
    return e;
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

  std::vector<std::string> rank(const Evaluation& int8) {
    std::map<std::string, double> score;
    if (params_.ranking == Ranking::kDynamicRange) {
      std::map<std::string, const onnx::NodeProto*> nodes;
      for (const auto& node : prepared_.graph().node()) nodes[node.name()] = &node;
      for (const auto& name : candidates_) {
        double range = 0;
        for (const auto& input : nodes.at(name)->input()) {
          auto it = stats_.tensors.find(input);
          if (it != stats_.tensors.end()) range = std::max({range, std::fabs(double(it->second.min)), std::fabs(double(it->second.max))});
        }
        score[name] = range;
      }
    } else {
      for (const auto& name : candidates_) score[name] = evaluate({name}).objective - int8.objective;
    }
    std::vector<std::string> order = candidates_;
    std::stable_sort(order.begin(), order.end(), [&](const auto& a, const auto& b) { return score[a] > score[b]; });
    Json j = Json::array();
    for (const auto& name : order) j.push_back({{"layer", name}, {"score", score[name]}});
    write_file_atomically(sensitivity_path(),
                          Json{{"ranking", to_string(params_.ranking)},
                               {"score", params_.ranking == Ranking::kDynamicRange ? "max |activation| of the inputs"
                                                                                    : "objective gain when lifted alone"},
                               {"layers", j}}
                                  .dump(2));
    return order;
  }

  void save_best(const std::set<std::string>& lifted, const Evaluation& e) {
    save_model(*e.model, result_.final_model_path);
    save_config(config_for(lifted), result_.final_config_path);
    result_.bf16_layers.assign(lifted.begin(), lifted.end());
  }

  // Appends the step to the ledger (flushed) and the result, then reports it.
  void record(const ExploreStep& step, const Evaluation& e) {
    Json line = {{"step", step.index},       {"layer", step.layer},         {"decision", step.decision},
                 {"objective", step.objective}, {"psnr_db", step.psnr_db},  {"pass_rate", step.pass_rate},
                 {"meets_criterion", step.meets_criterion}, {"bf16_layers", step.bf16_layers},
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
    return {{"model_fingerprint", model_fingerprint(prepared_)},
            {"base_preset", params_.base_preset},
            {"ranking", to_string(params_.ranking)},
            {"target", params_.target ? params_.target->text : ""},
            {"atol", params_.tolerance.atol},
            {"rtol", params_.tolerance.rtol},
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
        step.bf16_layers = j.at("bf16_layers").get<size_t>();
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

    const Evaluation int8 = evaluate({});
    result_.int8_metrics = int8.metrics;
    Evaluation best = int8;
    if (replay.empty()) save_best({}, best);
    if (int8.verdict.pass) {
      result_.stop_reason = result_.task.type == TaskType::kClassification && !params_.target
                                ? "pre-exploration gate: top-1 already agrees with full INT8"
                                : "full INT8 already meets the criterion";
      finish(best);
      return;
    }
    const Evaluation bf16 = evaluate(std::set<std::string>(candidates_.begin(), candidates_.end()));
    result_.bf16_metrics = bf16.metrics;
    if (!bf16.verdict.pass) {
      result_.stop_reason = "full BF16 misses the criterion too (" + bf16.verdict.reason +
                            "): out of reach by precision alone";
      finish(best);
      return;
    }
    result_.ranking = params_.resume && fs::exists(sensitivity_path()) ? load_ranking() : rank(int8);
    if (replay.size() > result_.ranking.size()) throw_bad_input(result_.ledger_path, "more steps than ranked layers");
    const size_t max_iterations =
        params_.max_iterations ? params_.max_iterations : std::min(kMaxIterationsCap, candidates_.size());
    const auto budget = std::max<size_t>(
        1, static_cast<size_t>(std::floor(params_.bf16_budget * static_cast<double>(candidates_.size()))));
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
        result_.stop_reason = "BF16 budget: " + std::to_string(lifted.size()) + " of " +
                              std::to_string(candidates_.size()) + " candidate layers";
        break;
      }
      std::set<std::string> trial = lifted;
      trial.insert(layer);
      const bool replaying = i < replay.size();
      const auto t0 = Clock::now();
      ExploreStep step;
      Evaluation e;
      if (replaying) {
        step = replay[i];
        if (step.layer != layer) {
          throw_bad_input(result_.ledger_path, "step " + std::to_string(step.index) + " promoted '" + step.layer +
                                                   "' where the ranking has '" + layer + "'");
        }
        e.objective = step.objective;
        e.psnr_db = step.psnr_db;
        e.pass_rate = step.pass_rate;
        e.verdict.pass = step.meets_criterion;
      } else {
        e = evaluate(trial);
        step.index = result_.steps.size() + 1;
        step.layer = layer;
        step.objective = e.objective;
        step.psnr_db = e.psnr_db;
        step.pass_rate = e.pass_rate;
        step.meets_criterion = e.verdict.pass;
      }
      const std::string decision = promotion_decision(best.objective, e.objective);
      if (replaying && decision != step.decision) {
        throw_bad_input(result_.ledger_path, "step " + std::to_string(step.index) + " says '" + step.decision +
                                                 "' where its numbers say '" + decision + "'");
      }
      step.decision = decision;
      if (decision == std::string("accepted")) {
        gains.push_back(e.psnr_db - best.psnr_db);
        lifted = trial;
        best = e;
        if (!replaying) save_best(lifted, best);
      }
      step.bf16_layers = lifted.size();
      if (replaying) {
        ++result_.resumed_steps;
        result_.steps.push_back(step);  // its ledger line is already on disk
      } else {
        step.seconds = seconds_since(t0);
        record(step, e);
      }
      if (replaying && i + 1 == replay.size() && best.metrics.empty()) {
        // The ledger holds the numbers of the best so far, not its model: rebuild it once.
        best = evaluate(lifted);
        save_best(lifted, best);
      }
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
    finish(best);
  }

  void finish(const Evaluation& best) {
    result_.final_metrics = best.metrics;
    result_.final_verdict = best.verdict;
  }

  void write_summary() const {
    Json metrics = Json::array();
    for (const auto& m : result_.final_metrics) metrics.push_back(output_json(m));
    const Json summary = {{"model", params_.model_path},
                          {"task", to_string(result_.task.type)},
                          {"base_preset", params_.base_preset},
                          {"ranking", to_string(params_.ranking)},
                          {"stop_reason", result_.stop_reason},
                          {"compute_layers", result_.compute_layers},
                          {"bf16_layer_count", result_.bf16_layers.size()},
                          {"bf16_layers", result_.bf16_layers},
                          {"verdict", {{"pass", result_.final_verdict.pass},
                                       {"criterion", result_.final_verdict.criterion},
                                       {"reason", result_.final_verdict.reason}}},
                          {"final_metrics", metrics},
                          {"evaluations", result_.evaluations},
                          {"steps", result_.steps.size()}};
    write_file_atomically((fs::path(params_.work_dir) / "summary.json").string(), summary.dump(2));
  }

  const ExploreParams& params_;
  const StepCallback& on_step_;
  Clock::time_point start_;
  ExploreResult result_;
  QuantConfig base_;
  LayerConfig lifted_config_;
  onnx::ModelProto prepared_;
  std::vector<std::string> candidates_;
  CalibrationStats stats_;
  std::map<std::string, int64_t> ranks_;
  std::vector<NamedTensors> inputs_;
  std::vector<NamedTensors> references_;
  std::ofstream ledger_;
};

}  // namespace

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

const char* promotion_decision(double best_objective, double trial_objective) {
  if (trial_objective > best_objective) return "accepted";
  return trial_objective < best_objective ? "rolled back" : "skipped";
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
