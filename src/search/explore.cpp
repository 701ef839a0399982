#include "mixprec/explore.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

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
    const Session session = Session::from_model(build(config_for(lifted)), params_.model_path, params_.session);
    ModelComparer comparer(params_.tolerance);
    for (size_t i = 0; i < inputs_.size(); ++i) comparer.add(references_[i], session.run(inputs_[i]));
    Evaluation e;
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
    write_file_atomically((fs::path(params_.work_dir) / "sensitivity.json").string(),
                          Json{{"ranking", to_string(params_.ranking)},
                               {"score", params_.ranking == Ranking::kDynamicRange ? "max |activation| of the inputs"
                                                                                    : "objective gain when lifted alone"},
                               {"layers", j}}
                                  .dump(2));
    return order;
  }

  void save_best(const std::set<std::string>& lifted) {
    const QuantConfig config = config_for(lifted);
    save_model(build(config), result_.final_model_path);
    save_config(config, result_.final_config_path);
    result_.bf16_layers.assign(lifted.begin(), lifted.end());
  }

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
    result_.steps.push_back(step);
    if (on_step_) on_step_(step);
  }

  void search() {
    ledger_.open(result_.ledger_path, std::ios::trunc);
    if (!ledger_) throw_io(result_.ledger_path, "cannot write the ledger");
    const Evaluation int8 = evaluate({});
    result_.int8_metrics = int8.metrics;
    save_best({});
    Evaluation best = int8;
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
    result_.ranking = rank(int8);
    const size_t max_iterations =
        params_.max_iterations ? params_.max_iterations : std::min(kMaxIterationsCap, candidates_.size());
    const auto budget = std::max<size_t>(
        1, static_cast<size_t>(std::floor(params_.bf16_budget * static_cast<double>(candidates_.size()))));
    std::set<std::string> lifted;
    std::vector<double> gains;  // PSNR gain of each accepted promotion
    result_.stop_reason = "every ranked layer was tried";
    for (const auto& layer : result_.ranking) {
      if (result_.steps.size() >= max_iterations) {
        result_.stop_reason = "max iterations (" + std::to_string(max_iterations) + ")";
        break;
      }
      if (lifted.size() >= budget) {
        result_.stop_reason = "BF16 budget: " + std::to_string(lifted.size()) + " of " +
                              std::to_string(candidates_.size()) + " candidate layers";
        break;
      }
      const auto t0 = Clock::now();
      std::set<std::string> trial = lifted;
      trial.insert(layer);
      const Evaluation e = evaluate(trial);
      ExploreStep step;
      step.index = result_.steps.size() + 1;
      step.layer = layer;
      if (e.objective > best.objective) {
        step.decision = "accepted";
        gains.push_back(e.psnr_db - best.psnr_db);
        lifted = trial;
        best = e;
        save_best(lifted);
      } else {
        step.decision = e.objective < best.objective ? "rolled back" : "skipped";
      }
      step.objective = e.objective;
      step.psnr_db = e.psnr_db;
      step.pass_rate = e.pass_rate;
      step.meets_criterion = e.verdict.pass;
      step.bf16_layers = lifted.size();
      step.seconds = seconds_since(t0);
      record(step, e);
      if (best.verdict.pass) {
        result_.stop_reason = "criterion met";
        break;
      }
      if (step.decision == "accepted" && gains.size() >= kPlateauWindow) {
        double recent = 0;
        for (size_t i = gains.size() - kPlateauWindow; i < gains.size(); ++i) recent += gains[i];
        if (recent < kPlateauDb) {
          result_.stop_reason = "PSNR plateau (+" + std::to_string(recent) + " dB over the last " +
                                std::to_string(kPlateauWindow) + " promotions)";
          break;
        }
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

ExploreResult explore(const ExploreParams& params, const StepCallback& on_step) {
  return Explorer(params, on_step).run();
}

}  // namespace mixprec
