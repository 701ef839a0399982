// explore: the workbench, the ranking and the files around the two searches (search/search.h).
// The searches see an Evaluator: the workbench's, or on --resume the ledger's replay in front
// of it, so neither search knows about resuming.
#include "mixprec/explore.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <set>

#include <nlohmann/json.hpp>

#include "common/json_text.h"
#include "common/text.h"
#include "common/timing.h"
#include "config/node_sites.h"
#include "evaluation/work_dir_lock.h"
#include "evaluation/workbench.h"
#include "ir/graph_view.h"
#include "mixprec/error.h"
#include "mixprec/log.h"
#include "mixprec/model_io.h"
#include "mixprec/stop.h"
#include "search/ledger.h"
#include "search/search.h"

namespace mixprec {
namespace {
namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;
using search::Score;

constexpr EnumName<Ranking> kRankingRows[] = {
    {Ranking::kDynamicRange, "dynamic-range"},
    {Ranking::kMeasured, "measured"},
    {Ranking::kLayerError, "layer-error"},
    {Ranking::kInjectedNoise, "injected-noise"}};
constexpr EnumName<SearchMode> kSearchRows[] = {
    {SearchMode::kGreedy, "greedy"}, {SearchMode::kBisection, "bisection"}, {SearchMode::kCost, "cost"}};
constexpr EnumName<Decision> kDecisionRows[] = {{Decision::kAccepted, "accepted"},
                                                {Decision::kSkipped, "skipped"},
                                                {Decision::kRolledBack, "rolled back"},
                                                {Decision::kMeets, "meets"},
                                                {Decision::kMisses, "misses"},
                                                {Decision::kMeasured, "measured"}};

const char* ranking_score_meaning(Ranking ranking) {
  switch (ranking) {
    case Ranking::kDynamicRange: return "max |activation| of the inputs";
    case Ranking::kMeasured: return "objective gain when lifted alone";
    case Ranking::kLayerError: return "noise-to-signal ratio the layer adds in full INT8 (output minus worst input)";
    case Ranking::kInjectedNoise:
      return "noise-to-signal ratio the layer injects itself in full INT8 (its output vs itself in float on the same inputs)";
  }
  return "?";
}

// The rankings that score a layer from one exposed pass of a state: layer-error and
// injected-noise (adaptive ranking re-scores with them in the searches' mixed states).
bool scores_a_state(Ranking ranking) { return ranking == Ranking::kLayerError || ranking == Ranking::kInjectedNoise; }

using Objective = AccuracyObjective;  // the target's metric on the worst output, else the task's own

// Each lifted layer's rung (1-based, into the ladder); a layer absent is at the base.
using Assignment = std::map<std::string, size_t>;

// The base config with some layers lifted, evaluated on the workbench. A search sees one rung
// of the ladder: its start (an assignment) stays as it is and the layers it lifts go to the
// rung's format; a single lift is the ladder of one rung, started from the base.
class WorkbenchEvaluator : public search::Evaluator {
 public:
  WorkbenchEvaluator(Workbench& bench, const QuantConfig& base, const std::vector<LayerConfig>& rungs,
                     const Objective& objective, const DeviceProfile& device)
      : bench_(bench), base_(base), rungs_(rungs), objective_(objective), device_(device) {}

  void set_rung(size_t rung, Assignment start, const std::vector<std::string>& candidates) {
    rung_ = rung;
    start_ = std::move(start);
    candidates_ = {candidates.begin(), candidates.end()};
  }
  const Assignment& start() const { return start_; }

  Assignment assignment_for(const std::set<std::string>& lifted) const {
    Assignment assignment = start_;
    for (const auto& layer : lifted) assignment[layer] = rung_;
    return assignment;
  }

  // One override per rung, holding its layers (a layer in one override only).
  QuantConfig config_for(const Assignment& assignment) const {
    QuantConfig config = base_;
    for (size_t rung = 1; rung <= rungs_.size(); ++rung) {
      LayerOverride override_;
      for (const auto& [layer, at] : assignment) {
        if (at == rung) override_.target_node_names.push_back(layer);
      }
      if (override_.target_node_names.empty()) continue;
      override_.layer_config = rungs_[rung - 1];
      config.specific.push_back(std::move(override_));
    }
    return config;
  }
  QuantConfig config_for(const std::set<std::string>& lifted) const { return config_for(assignment_for(lifted)); }

  Score evaluate(const std::set<std::string>& lifted, const std::string&) override {
    return evaluate_assignment(assignment_for(lifted));
  }

  Score evaluate_assignment(const Assignment& assignment) {
    const QuantConfig config = config_for(assignment);
    Evaluation e = bench_.evaluate(config);
    const search::Cost c = cost_of(config);
    Score s{.metrics = std::move(e.metrics),
            .pass = e.verdict.pass,
            .verdict = e.verdict,
            .psnr_db = e.psnr_db,
            .pass_rate = e.pass_rate,
            .seconds = e.seconds,
            .time_vs_bf16 = c.time_vs_bf16,
            .transitions = c.transitions,
            .learned_layers = e.learned_layers,
            .reused_layers = e.reused_layers};
    s.objective = objective_(s.metrics);
    return s;
  }

  // Every layer priced at its own format's speed on the device (cost_model.h).
  search::Cost cost(const std::set<std::string>& lifted) const override { return cost_of(config_for(lifted)); }
  search::Cost cost_of(const QuantConfig& config) const {
    return {bench_.time_vs_full_bf16(config, device_), bench_.cost(config, device_).transitions};
  }

  std::vector<std::set<std::string>> islands(const std::set<std::string>& lifted) const override {
    return bench_.islands(config_for(lifted), device_, candidates_);
  }
  std::vector<std::vector<std::string>> chains() const override { return bench_.chains(device_, candidates_); }

  // Adaptive ranking: `remaining` scored by the explorer's ranking in the state `lifted` leaves
  // and sorted, highest score first (ties keep the given order).
  using Scorer = std::function<std::map<std::string, double>(const QuantConfig&, const std::vector<std::string>&)>;
  void set_scorer(Scorer scorer) { scorer_ = std::move(scorer); }
  std::vector<std::string> rerank(const std::set<std::string>& lifted, const std::vector<std::string>& remaining) override {
    if (!scorer_) return remaining;
    const size_t before = bench_.evaluations();
    std::map<std::string, double> score = scorer_(config_for(lifted), remaining);
    std::vector<std::string> order = remaining;
    std::stable_sort(order.begin(), order.end(), [&](const auto& a, const auto& b) { return score[a] > score[b]; });
    ++reranks_;
    rerank_evaluations_ += bench_.evaluations() - before;
    return order;
  }
  size_t reranks() const { return reranks_; }
  size_t rerank_evaluations() const { return rerank_evaluations_; }

 private:
  Scorer scorer_;
  size_t reranks_ = 0, rerank_evaluations_ = 0;
  Workbench& bench_;
  const QuantConfig& base_;
  const std::vector<LayerConfig>& rungs_;
  const Objective& objective_;
  const DeviceProfile& device_;
  size_t rung_ = 1;
  Assignment start_;
  std::set<std::string> candidates_;
};

// What a run stopped by SIGINT/SIGTERM leaves (the Error's message).
constexpr const char* kKeptOnStop =
    "the best assignment so far is final.onnx and final_config.json here; --resume continues the run";

class Explorer : public search::SearchObserver {
 public:
  Explorer(const ExploreParams& params, const StepCallback& on_step)
      : params_(params),
        options_(params.search),
        adaptive_(adaptive_ranking(params.search)),
        trim_(trim_tries(params.search)),
        on_step_(on_step),
        start_(Clock::now()) {}

  ExploreResult run() {
    WarningCollector warnings;
    const std::string& work_dir = params_.setup.work_dir;
    if (work_dir.empty()) throw_bad_input(params_.setup.model_path, "explore needs a work dir");
    const WorkDirLock lock(work_dir);  // creates it; one run at a time
    result_.final_model_path = work_file("final.onnx");
    result_.final_config_path = work_file("final_config.json");
    result_.ledger_path = work_file("ledger.jsonl");
    if (options_.resume && (!fs::exists(result_.ledger_path) || !fs::exists(work_file("run.json")))) {
      throw_bad_input(work_dir, "nothing to resume: no ledger.jsonl and run.json here");
    }
    prepare();
    try {
      explore();
    } catch (const Error& error) {
      if (error.kind() != ErrorKind::kCancelled || !have_best_) throw;
      // Stopped between steps: what is on disk is the best so far; the summary says so.
      result_.stop_reason = "interrupted: " + error.message();
      count_evaluations();
      finish();
      write_summary();
      throw;
    }
    count_evaluations();
    check_runtime();
    write_summary();
    result_.seconds = seconds_since(start_);
    result_.warnings = warnings.warnings();
    return result_;
  }

  // --- SearchObserver ----------------------------------------------------------------------
  // SPEC: the answer is the cheapest assignment that meets the criterion. A search proposes its
  // best as it goes; a proposal that meets it but is not cheaper than one kept that does (a
  // bisection's fewer layers with more INT8/float boundaries) does not replace it, unless it
  // costs the same (search::kSameTime) and is more accurate.
  void on_best(const std::set<std::string>& lifted, const Score& score) override {
    if (best_.pass && (!score.pass || !search::better_answer(score, best_, objective_->min_gain()))) return;
    const Assignment assignment = evaluator_->assignment_for(lifted);
    if (score.replayed) {  // the ledger holds no model: rebuilt when the replay ends
      pending_best_ = assignment;
      best_ = score;
      best_lifted_ = assignment;
      best_time_ = score.time_vs_bf16;
      return;
    }
    pending_best_.reset();
    save_best(assignment, score);
  }

  void on_step(const ExploreStep& decided, const Score& score, const std::set<std::string>& lifted) override {
    ExploreStep step = decided;
    step.index = result_.steps.size() + 1;  // a ladder's rungs number their steps on from the last
    step.lifted_layers = best_lifted_.size();  // the kept best (on_best), which may be cheaper than the search's
    step.seconds = score.seconds;
    step.time_vs_bf16 = score.time_vs_bf16;
    step.transitions = score.transitions;
    step.learned_layers = score.learned_layers;
    step.reused_layers = score.reused_layers;
    if (ladder_.size() > 1) {
      step.rung = rung_;
      step.lift = ladder_[rung_ - 1];
    }
    add_point(step.index, step.layer, evaluator_->assignment_for(lifted), score);
    if (!score.pass) misses_.insert(evaluator_->assignment_for(lifted));
    if (score.replayed) {
      const ExploreStep& recorded = *replay_->recorded(step.index);
      if (recorded.decision != step.decision) {
        throw_bad_input(result_.ledger_path, "step " + std::to_string(step.index) + " says '" +
                                                 to_string(recorded.decision) + "' where its numbers say '" +
                                                 to_string(step.decision) + "'");
      }
      if (recorded.rung != step.rung) {
        throw_bad_input(result_.ledger_path, "step " + std::to_string(step.index) + " raised layers at rung " +
                                                 std::to_string(recorded.rung) + " where this run is at rung " +
                                                 std::to_string(step.rung));
      }
      ++result_.resumed_steps;
      result_.steps.push_back(recorded);  // its line is already on disk
      return;
    }
    ledger_ << search::step_to_json(step, score.metrics).dump() << '\n';
    ledger_.flush();
    if (!ledger_) throw_io(result_.ledger_path, "cannot append to the ledger (disk full?)");
    result_.steps.push_back(step);
    if (on_step_) on_step_(step);
    throw_if_stopped(params_.setup.work_dir, kKeptOnStop);
  }

 private:
  std::string work_file(const std::string& name) const { return (fs::path(params_.setup.work_dir) / name).string(); }

  void prepare() {
    const std::string& label = params_.setup.model_path;
    if (options_.base_config) {
      base_ = *options_.base_config;
    } else {
      auto base = preset_config(options_.base_preset);
      if (!base) throw_bad_input("", "unknown base preset '" + options_.base_preset + "'");
      base_ = *base;
    }
    ladder_ = lift_ladder(options_.lift);
    for (const auto& name : ladder_) {
      rung_configs_.push_back(preset_config(name)->global);
      result_.rungs.push_back({.lift = name});
    }
    const DeviceProfile& device = params_.deployment.profile();
    if (const auto why = device_rejects(device, formats_used(base_))) throw_bad_input("", "the starting point: " + *why);
    // Every config written derives from the starting point: one the shape cannot hold fails now.
    config_file_text(base_, params_.config_shape, result_.final_config_path);
    result_.base_name = options_.base_config ? "the base config" : options_.base_preset;
    result_.base_calibrated = std::ranges::any_of(formats_used(base_), [](FormatId f) { return format_traits(f).is_qdq; });
    for (size_t i = 0; i < ladder_.size(); ++i) {
      if (const auto why = device_rejects(device, formats_used(*preset_config(ladder_[i])))) {
        throw_bad_input("", "lifting to " + ladder_[i] + rung_of(i) + ": " + *why);
      }
    }
    bench_ = std::make_unique<Workbench>(
        params_.setup, params_.deployment,
        WorkbenchOptions{.prepare = prepare_options(base_),
                         .calibration_samples = static_cast<size_t>(base_.extra.num_calib_samples)});
    result_.task = bench_->task();
    result_.calibration_seconds = bench_->calibration_seconds();
    objective_ = std::make_unique<Objective>(params_.setup.criterion.target, result_.task.type);
    result_.objective_name = objective_->name();
    evaluator_ = std::make_unique<WorkbenchEvaluator>(*bench_, base_, rung_configs_, *objective_, device);
    if (adaptive_) {
      if (!scores_a_state(options_.ranking) || options_.search == SearchMode::kCost) {
        throw_bad_input("", std::string("--adaptive re-scores with the layer-error or injected-noise ranking in a bisection or "
                                        "greedy search (not ") + to_string(options_.ranking) + " with " +
                                to_string(options_.search) + ")");
      }
      evaluator_->set_scorer([this](const QuantConfig& state, const std::vector<std::string>& layers) {
        throw_if_stopped(params_.setup.work_dir, kKeptOnStop);
        return state_scores(state, layers);
      });
    }
    // Every layer the base preset puts in integer formats is a candidate: compute layers and
    // the arithmetic (Add, Mul, pools) an int8 accelerator runs, whose error can dominate
    // (hard-swish and squeeze-excite blocks are Mul/Add chains).
    candidates_ = bench_->quantized_layers(base_);
    result_.compute_layers = candidates_.size();
    if (candidates_.empty()) throw_unsupported(label, "no compute layer to quantize with " + options_.base_preset);
    evaluator_->set_rung(1, {}, candidates_);
  }

  // " (rung 2 of MX9,BF16)" for a ladder's rung `index` (0-based); "" for a single lift.
  std::string rung_of(size_t index) const {
    return ladder_.size() > 1 ? " (rung " + std::to_string(index + 1) + " of " + text::join(ladder_, ",") + ")" : "";
  }

  // The starting point's calibration method: the one asked for; a config's own; or, for a
  // preset, every method the device allows tried on the same statistics, the best kept (one
  // evaluation each; the winner's is the full INT8 baseline).
  Score start() {
    if (options_.calib_method) override_calib_method(base_, *options_.calib_method);
    std::optional<Score> best;
    if (!options_.calib_method && !options_.base_config) {
      // Power-of-two methods where the device needs them and the preset's activations can take
      // them (symmetric, power-of-two scales: XINT8); an asymmetric preset (U8S8) keeps the others.
      const std::optional<TensorQuantSpec>& activations = base_.global.input_tensors;
      const bool pow2 = params_.deployment.profile().requires_power_of_two && activations &&
                        format_traits(activations->format).power_of_two_scale;
      CalibMethod chosen = base_.extra.calib_method;
      const QuantConfig preset = base_;
      for (const auto& method : all_calib_methods()) {
        if (method.power_of_two != pow2) continue;
        base_ = preset;
        base_.extra.calib_method = method.method;
        Score trial = evaluator_->evaluate({}, "full INT8");
        if (!best || (trial.pass != best->pass ? trial.pass
                                               : promotion_decision(best->objective, trial.objective, best->psnr_db,
                                                                    trial.psnr_db, objective_->min_gain()) ==
                                                     Decision::kAccepted)) {
          best = std::move(trial);
          chosen = method.method;
        }
      }
      base_ = preset;
      base_.extra.calib_method = chosen;
    }
    result_.calib_method = base_.extra.calib_method;
    return best ? *best : evaluator_->evaluate({}, "full INT8");
  }

  // What a resumed run must share with the run it continues: the same model, starting point,
  // ranking, criterion, limits and evaluation samples give the same remaining steps.
  Json settings() const {
    const DataSpec& data = params_.setup.evaluation;
    const Criterion& criterion = params_.setup.criterion;
    return {{"model_fingerprint", model_fingerprint(bench_->prepared())},
            {"base", options_.base_config ? config_to_json(*options_.base_config) : Json(options_.base_preset)},
            {"ranking", to_string(options_.ranking)},
            {"search", to_string(options_.search)},
            {"target", criterion.target ? criterion.target->text : ""},
            {"atol", criterion.tolerance.atol},
            {"rtol", criterion.tolerance.rtol},
            {"lift", text::join(ladder_, ",")},
            {"bf16_budget", options_.bf16_budget},
            {"time_budget", options_.time_budget},
            {"max_iterations", options_.max_iterations},
            {"calib_method", options_.calib_method ? calib_method_traits(*options_.calib_method).name : "auto"},
            {"pareto", options_.pareto},
            {"evaluation", {{"files", data.data.files},
                            {"random_samples", data.data.random_samples},
                            {"seed", data.data.seed},
                            {"preprocess", data.preprocess},
                            {"image_size", {data.image_height, data.image_width}}}},
            {"adaptive", adaptive_},
            {"trim", trim_}};
  }

  // The ledger's complete steps, after checking run.json against this run's settings.
  std::vector<ExploreStep> read_ledger_for_resume(const Json& current, std::string& complete_lines) const {
    const std::string run_path = work_file("run.json");
    Json previous = json_text::parse_json(read_file(run_path, "run settings"), run_path, "valid JSON");
    if (previous.is_object() && !previous.contains("adaptive")) previous["adaptive"] = false;  // written before it existed
    // Written before trimming existed, and so before a bisection trimmed by default.
    const bool before_trim = previous.is_object() && !previous.contains("trim");
    if (before_trim) previous["trim"] = 0;
    // Objects compare whatever their key order (a run.json rewritten by another tool reorders them).
    const auto differ = [](const Json& a, const Json& b) {
      return nlohmann::json::parse(a.dump()) != nlohmann::json::parse(b.dump());
    };
    for (const auto& [key, value] : current.items()) {
      if (key == "trim" && before_trim && differ(previous[key], value)) {
        throw_bad_input(run_path, "the run to resume was written before a bisection trimmed by default (trim 0 vs " +
                                      value.dump() + "): resume it with --trim 0, or use a fresh --work-dir");
      }
      if (!previous.contains(key) || differ(previous[key], value)) {
        throw_bad_input(run_path, "the run to resume used another " + key + " (" +
                                      (previous.contains(key) ? previous[key].dump() : "none") + " vs " + value.dump() +
                                      "): resume with the same settings or use a fresh --work-dir");
      }
    }
    return search::parse_ledger(read_file(result_.ledger_path, "ledger"), result_.ledger_path, complete_lines);
  }

  // A rung's ranking file: sensitivity.json for rung 1 (a single lift's), sensitivity_rung<k>.json after.
  std::string sensitivity_file() const {
    return work_file(rung_ == 1 ? "sensitivity.json" : "sensitivity_rung" + std::to_string(rung_) + ".json");
  }

  // The ranking a resumed run continues with: the one on disk, checked against the candidates.
  std::vector<std::string> load_ranking(const std::vector<std::string>& candidates) {
    const std::string path = sensitivity_file();
    std::vector<std::string> order;
    try {
      const Json j = json_text::parse_json(read_file(path, "sensitivity ranking"), path, "a sensitivity ranking");
      if (j.at("ranking").get<std::string>() != to_string(options_.ranking)) {
        throw_bad_input(path, "made with ranking '" + j.at("ranking").get<std::string>() + "', not '" +
                                  to_string(options_.ranking) + "'");
      }
      for (const auto& row : j.at("layers")) order.push_back(row.at("layer").get<std::string>());
      // What the ranking cost the run that made it (0 in files written before it was recorded).
      loaded_ranking_evaluations_ += j.contains("evaluations") ? j.at("evaluations").get<size_t>() : 0;
    } catch (const Json::exception& e) {
      throw_bad_input(path, std::string("not a sensitivity ranking: ") + e.what());
    }
    std::vector<std::string> sorted = order, expected = candidates;
    std::sort(sorted.begin(), sorted.end());
    std::sort(expected.begin(), expected.end());
    if (sorted != expected) throw_bad_input(path, "ranks other layers than this model's candidates");
    return order;
  }

  // The noise each candidate adds: its output's noise-to-signal ratio in full INT8 minus the
  // worst of its float inputs' (what reached it from upstream). The producer-side tensor names
  // survive quantization (Q/DQ go on the consumer side), so both graphs expose the same names.
  // Every node of the prepared model by the path its assignment names it by (bodies included).
  std::map<std::string, const onnx::NodeProto*> nodes_by_path() const {
    const ir::GraphView view(bench_->prepared().graph(), params_.setup.model_path);
    std::map<std::string, const onnx::NodeProto*> nodes;
    for (const selection::NodeSite& site : selection::node_sites(view)) nodes[site.path] = &site.ref.node();
    return nodes;
  }

  // Tensors inside If/Loop/Scan bodies cannot be fetched: a body node's error is not measured
  // (score 0: it ranks after the measured layers).
  std::map<std::string, double> layer_error_scores(const QuantConfig& start, const std::vector<std::string>& candidates) {
    const std::map<std::string, const onnx::NodeProto*> nodes = nodes_by_path();
    std::set<std::string> initializers;
    for (const auto& init : bench_->prepared().graph().initializer()) initializers.insert(init.name());
    std::set<std::string> wanted;
    for (const auto& name : candidates) {
      const onnx::NodeProto& node = *nodes.at(name);
      for (const auto& input : node.input()) {
        if (!input.empty() && !initializers.count(input)) wanted.insert(input);
      }
      if (node.output_size() > 0) wanted.insert(node.output(0));
    }
    const auto noise = bench_->tensor_noise(start, std::vector<std::string>(wanted.begin(), wanted.end()));
    const auto ratio = [&](const std::string& tensor) {
      auto it = noise.find(tensor);
      return it == noise.end() ? 0.0 : it->second;
    };
    std::map<std::string, double> score;
    for (const auto& name : candidates) {
      const onnx::NodeProto& node = *nodes.at(name);
      double upstream = 0;
      for (const auto& input : node.input()) upstream = std::max(upstream, ratio(input));
      score[name] = node.output_size() > 0 ? ratio(node.output(0)) - upstream : 0.0;
    }
    return score;
  }

  std::map<std::string, double> state_scores(const QuantConfig& state, const std::vector<std::string>& layers) {
    return options_.ranking == Ranking::kInjectedNoise ? bench_->injected_noise(state, layers)
                                                       : layer_error_scores(state, layers);
  }

  // The rung's candidates, most worth lifting first, measured from the rung's start (rung 1:
  // full INT8; a later rung: the assignment the previous one left, whose noise is what its
  // layers at the lower format add).
  std::vector<std::string> rank(const Score& start, const std::vector<std::string>& candidates) {
    const size_t evaluations_before = bench_->evaluations();
    const QuantConfig start_config = evaluator_->config_for(evaluator_->start());
    std::map<std::string, double> score;
    std::map<std::string, double> tiebreak;  // measured: PSNR gain, for coarse objectives' ties
    if (options_.ranking == Ranking::kDynamicRange) {
      const std::map<std::string, const onnx::NodeProto*> nodes = nodes_by_path();
      const auto& tensors = bench_->stats().tensors;
      for (const auto& name : candidates) {
        double range = 0;
        for (const auto& input : nodes.at(name)->input()) {
          auto it = tensors.find(input);
          if (it != tensors.end()) {
            range = std::max({range, std::fabs(double(it->second.min)), std::fabs(double(it->second.max))});
          }
        }
        score[name] = range;
      }
    } else if (options_.ranking == Ranking::kMeasured) {
      for (const auto& name : candidates) {
        throw_if_stopped(params_.setup.work_dir, kKeptOnStop);
        const Score alone = evaluator_->evaluate({name}, name);
        score[name] = alone.objective - start.objective;
        tiebreak[name] = alone.psnr_db - start.psnr_db;
      }
    } else {
      score = state_scores(start_config, candidates);
    }
    std::vector<std::string> order = candidates;
    std::stable_sort(order.begin(), order.end(), [&](const auto& a, const auto& b) {
      return score[a] != score[b] ? score[a] > score[b] : tiebreak[a] > tiebreak[b];
    });
    Json j = Json::array();
    for (const auto& name : order) j.push_back({{"layer", name}, {"score", score[name]}});
    Json file = {{"ranking", to_string(options_.ranking)},
                 {"score", ranking_score_meaning(options_.ranking)},
                 {"evaluations", bench_->evaluations() - evaluations_before},
                 {"layers", j}};
    if (rung_ > 1) file.update(rung_file_note());
    write_file_atomically(sensitivity_file(), file.dump(2));
    return order;
  }

  // What a later rung's sensitivity file adds: which rung, and that its scores are measured
  // from the previous rung's assignment, not from full INT8.
  Json rung_file_note() const {
    return {{"rung", rung_},
            {"lift", ladder_[rung_ - 1]},
            {"start", "the assignment rung " + std::to_string(rung_ - 1) + " (" + ladder_[rung_ - 2] +
                          ") left; the candidates are its layers at " + ladder_[rung_ - 2]}};
  }

  void save_best(const Assignment& lifted, const Score& score) {
    // Built again from its config (the same rewrite of the same statistics): no score holds a model.
    const QuantConfig config = evaluator_->config_for(lifted);
    save_model(bench_->for_writing(bench_->build(config), result_.final_model_path), result_.final_model_path);
    save_config(config, result_.final_config_path, params_.config_shape);
    best_ = score;
    have_best_ = true;
    best_lifted_ = lifted;
    best_time_ = score.time_vs_bf16;
  }

  // When BF16 is not enough and the device runs FP16 (3 more mantissa bits), one more
  // evaluation says whether lifting to FP16 would be.
  std::string fp16_hint() {
    const DeviceProfile& device = params_.deployment.profile();
    if (ladder_.back() != "BF16" || !device_allows(device, FormatId::kFloat16)) return "";
    QuantConfig all_fp16 = base_;
    LayerOverride override_;
    override_.target_node_names = candidates_;
    override_.layer_config = preset_config("FP16")->global;
    all_fp16.specific.push_back(std::move(override_));
    const Evaluation e = bench_->evaluate(all_fp16);
    const std::string numbers =
        "PSNR " + text::fixed(e.psnr_db) + " dB, pass rate " + text::fixed(100 * e.pass_rate, 3) + "%";
    if (!e.verdict.pass) return "; full FP16 misses too (" + numbers + ")";
    const size_t budget = static_cast<size_t>(std::floor(options_.bf16_budget * static_cast<double>(candidates_.size())));
    std::string advice = "; full FP16 passes (" + numbers + "): " + device.name + " runs FP16, rerun with --lift FP16";
    if (budget < candidates_.size()) {
      advice += " and a larger --bf16-budget if the search stops at it (full FP16 lifts all " +
                std::to_string(candidates_.size()) + " candidates; " + text::fixed(options_.bf16_budget) +
                " allows " + std::to_string(std::max<size_t>(budget, 1)) + ", 1 allows every one)";
    }
    return advice;
  }

  void explore() {
    const Json current = settings();
    std::vector<ExploreStep> replay;
    std::string ledger_text;  // a resumed ledger keeps its complete lines and is appended to
    if (options_.resume) {
      replay = read_ledger_for_resume(current, ledger_text);
    } else {
      write_file_atomically(work_file("run.json"), current.dump(2));
    }
    write_file_atomically(result_.ledger_path, ledger_text);
    ledger_.open(result_.ledger_path, std::ios::app);
    if (!ledger_) throw_io(result_.ledger_path, "cannot write the ledger");

    const Score int8 = start();
    result_.int8_metrics = int8.metrics;
    add_point(0, "full INT8", {}, int8);
    if (options_.resume) {  // final.onnx holds the interrupted run's best: rebuilt when the replay ends
      best_ = int8;
    } else {
      save_best({}, int8);
    }
    if (int8.pass) {
      result_.stop_reason = result_.task.type == TaskType::kClassification && !params_.setup.criterion.target
                                ? "pre-exploration gate: top-1 already agrees with full INT8"
                                : "full INT8 already meets the criterion";
      finish();
      return;
    }
    const size_t g = candidates_.size();
    const size_t log2_g = static_cast<size_t>(std::ceil(std::log2(static_cast<double>(std::max<size_t>(2, g)))));
    max_steps_ = options_.max_iterations                ? options_.max_iterations
                 : options_.search == SearchMode::kCost ? g + 2 * log2_g + 5
                                                        : std::min(kMaxIterationsCap, g);
    if (replay.size() > max_steps_) throw_bad_input(result_.ledger_path, "more steps than the search can take");
    replay_ = std::make_unique<search::LedgerReplay>(std::move(replay), *evaluator_, result_.ledger_path, [this] {
      if (pending_best_) {  // the best so far came from the ledger: rebuild its model
        const Assignment lifted = *pending_best_;
        pending_best_.reset();
        save_best(lifted, evaluator_->evaluate_assignment(lifted));
        ++rebuild_evaluations_;  // only a resumed run pays it
      }
    });
    // The ladder, rung by rung. Rung 1 is the single lift's search: from full INT8 (the base),
    // every candidate may go to the first format. A rung that meets the criterion ends the run
    // and its answer is the result, so a ladder whose rung 1 meets it is the single lift exactly
    // (same steps, same answer). Otherwise rung k+1 starts from the assignment rung k left: its
    // best, which final.onnx holds (a search runs only when the rung's full lift meets the
    // criterion, so this is where the budgets kept the full lift out), or, when its full lift
    // missed and no search ran, every rung-k candidate at rung k's format. Its candidates are
    // the layers at rung k's format there; each may be raised to rung k+1's, the rest stays.
    // Why, for the cheapest passing model under the cost model (time = MACs / speed plus the
    // INT8 <-> float boundaries):
    // - A layer a rung left at the base stays there: INT8 is the fastest format on every device
    //   (cpu: 2.0 against block 0.8 and BF16 0.5; the NPUs: 2.0 against BF16 1.0), so no rung
    //   pays for a layer the cheaper rungs showed it could do without.
    // - The previous rung's best, not its full lift, when it searched: the fewest layers at the
    //   lower format its search found, against every layer at it (on cpu 0.625x full BF16 per
    //   MAC at MX9 instead of 0.25x at INT8).
    // - A layer goes up from one float-side format to another, so raising it adds no boundary:
    //   a rung's cost grows only with the MACs raised (cpu: 1/0.5 - 1/0.8 = 0.75 BF16-MAC per
    //   MAC), so the search's fewest layers are also its cheapest, and a layer pays the
    //   higher rung only where the lower one is not enough (the rule).
    // - A full lift that misses leaves no subset of that rung able to meet the criterion (the
    //   searches' assumption: more precision does not hurt), so every candidate at it is the
    //   cheapest start from which the next rung can. The searches never demote below a rung's
    //   start: layers that start a rung at the lower format stay at least there.
    Assignment start_state;
    Score start_score = int8;
    std::vector<std::string> candidates = candidates_;
    for (rung_ = 1;; ++rung_) {
      evaluator_->set_rung(rung_, start_state, candidates);
      const RungEnd end = run_rung(candidates, start_score);
      result_.rungs[rung_ - 1].steps = result_.steps.size() + 1 - result_.rungs[rung_ - 1].first_step;
      if (best_.pass || rung_ == ladder_.size() || end == RungEnd::kOutOfSteps) break;
      // best_ is what the rung left (a full lift that missed was kept as the best by run_rung).
      start_state = best_lifted_;
      start_score = best_;
      candidates.clear();
      for (const auto& [layer, at] : start_state) {
        if (at == rung_) candidates.push_back(layer);
      }
      if (candidates.empty()) {
        result_.rungs[rung_ - 1].stop_reason += "; no layer at " + ladder_[rung_ - 1] + " for " + ladder_[rung_] + " to raise";
        break;
      }
    }
    replay_->finish();
    if (ladder_.size() == 1) {
      result_.stop_reason = result_.rungs[0].stop_reason;
    } else {
      std::vector<std::string> reasons;
      for (size_t i = 0; i < ladder_.size() && result_.rungs[i].ran; ++i) {
        reasons.push_back("rung " + std::to_string(i + 1) + " (" + ladder_[i] + "): " + result_.rungs[i].stop_reason);
      }
      result_.stop_reason = text::join(reasons, "; ");
    }
    finish();
  }

  enum class RungEnd { kFullLiftMisses, kSearched, kOutOfSteps };

  // One rung: its full lift (every candidate at the rung's format), then, when that meets the
  // criterion, the search from `start`. A full lift that misses is kept as the best for the
  // next rung to start from.
  RungEnd run_rung(const std::vector<std::string>& candidates, const Score& start) {
    LiftRung& info = result_.rungs[rung_ - 1];
    const std::string& lift = ladder_[rung_ - 1];
    const bool last = rung_ == ladder_.size();
    info.ran = true;
    info.candidates = candidates.size();
    info.first_step = result_.steps.size() + 1;
    const std::set<std::string> everything(candidates.begin(), candidates.end());
    const std::string full = rung_ == 1 || candidates.size() == candidates_.size()
                                 ? "full " + lift
                                 : lift + " on the " + std::to_string(candidates.size()) + " " + ladder_[rung_ - 2] +
                                       " layers";
    const Score all_lifted = evaluator_->evaluate(everything, full);
    if (rung_ == 1) result_.lifted_metrics = all_lifted.metrics;
    info.full_metrics = all_lifted.metrics;
    info.full_lift_passes = all_lifted.pass;
    info.full_time_vs_bf16 = all_lifted.time_vs_bf16;
    add_point(0, full, evaluator_->assignment_for(everything), all_lifted);
    if (!all_lifted.pass) {
      info.stop_reason = full + " misses the criterion too (" + all_lifted.verdict.reason + "): " +
                         (last ? "out of reach by precision alone" + fp16_hint()
                               : "its " + std::to_string(candidates.size()) + " layers are rung " +
                                     std::to_string(rung_ + 1) + "'s candidates");
      if (!last) on_best(everything, all_lifted);
      return RungEnd::kFullLiftMisses;
    }
    const bool cost = options_.search == SearchMode::kCost;
    std::vector<std::string> ranking;
    if (cost) {
      ranking = candidates;  // the cost search measures instead of ranking
    } else {
      ranking = options_.resume && fs::exists(sensitivity_file()) ? load_ranking(candidates) : rank(start, candidates);
    }
    if (rung_ == 1) result_.ranking = ranking;
    const size_t g = candidates_.size();
    const size_t spent = result_.steps.size();  // by the earlier rungs
    const search::SearchLimits limits{
        .budget = std::max<size_t>(1, static_cast<size_t>(std::floor(options_.bf16_budget * static_cast<double>(g)))),
        .max_iterations = max_steps_ - std::min(spent, max_steps_),
        .min_gain = objective_->min_gain(),
        .lift = lift,
        .time_budget = options_.time_budget,
        .adaptive = adaptive_};
    // The full lift is one of the assignments seen: a mixed answer slower than it loses to it.
    const bool full_within = everything.size() <= limits.budget &&
                             (limits.time_budget <= 0 || all_lifted.time_vs_bf16 <= limits.time_budget);
    if (limits.max_iterations == 0) {
      info.stop_reason = "max iterations (" + std::to_string(max_steps_) + ") spent by the earlier rungs";
      if (full_within) on_best(everything, all_lifted);
      return RungEnd::kOutOfSteps;
    }
    search::SearchOutcome outcome;
    switch (options_.search) {
      case SearchMode::kBisection:
        outcome = search::bisection(ranking, start, all_lifted, limits, *replay_, *this);
        break;
      case SearchMode::kCost:
        outcome = search::cost_search(candidates, start, all_lifted, limits, *replay_, *this);
        write_demotion_scores(outcome);
        if (rung_ == 1) result_.ranking = outcome.order;
        break;
      case SearchMode::kGreedy:
        outcome = search::greedy(ranking, start, limits, *replay_, *this);
        break;
    }
    if (!cost && trim_ > 0 && outcome.best.pass) {
      // One step stays for the island fill after it.
      const size_t left = max_steps_ - std::min(max_steps_, result_.steps.size());
      const size_t tries = std::min(trim_, left > 0 ? left - 1 : 0);
      const size_t before = outcome.lifted.size();
      outcome = search::trim(outcome, tries, [this](const std::set<std::string>& lifted) { return missed(lifted); },
                             *replay_, *this);
      result_.trimmed += before - outcome.lifted.size();
    }
    info.stop_reason = outcome.stop_reason;
    if (!cost) fill_islands_step(outcome, limits, full_within ? all_lifted.time_vs_bf16 : 0);
    // The run ends at this rung when it is the last or when something in it meets the criterion.
    if (options_.pareto && (last || best_.pass || full_within)) fill_curve(outcome.order, limits);
    if (full_within) on_best(everything, all_lifted);
    if (best_.pass && best_lifted_ != evaluator_->assignment_for(outcome.lifted)) {
      const std::string kept = std::to_string(best_lifted_.size()) + " lifted at " + text::fixed(best_time_, 3) +
                               "x full BF16, " + objective_->name() + " " + text::fixed(best_.objective);
      info.stop_reason += outcome.best.pass ? "; kept the cheapest assignment seen that meets the criterion (the "
                                              "most accurate of those within " + text::fixed(search::kSameTime, 3) +
                                              "x of its time) instead: " + kept + " (the search's: " +
                                                  std::to_string(outcome.lifted.size()) + " at " +
                                                  text::fixed(outcome.best.time_vs_bf16, 3) + "x, " +
                                                  text::fixed(outcome.best.objective) + ")"
                                            : "; the search's best misses the criterion: kept the cheapest "
                                              "assignment seen that meets it, " + kept;
    }
    return RungEnd::kSearched;
  }

  // The cost search's measurements as the sensitivity file: each layer's objective loss when
  // demoted alone from the full lift, most worth lifting first.
  void write_demotion_scores(const search::SearchOutcome& outcome) const {
    Json j = Json::array();
    for (const auto& name : outcome.order) {
      const auto it = outcome.scores.find(name);
      j.push_back({{"layer", name}, {"score", it == outcome.scores.end() ? 0.0 : it->second}});
    }
    Json file = {{"ranking", "demotion"},
                 {"score", "objective loss when the layer alone is demoted from the full lift"},
                 {"layers", j}};
    if (rung_ > 1) file.update(rung_file_note());
    write_file_atomically(sensitivity_file(), file.dump(2));
  }

  // After a bisection or greedy that meets the criterion: its fewest layers with the INT8 islands
  // between them lifted where the cost model says that saves time (search::fill_islands), one
  // evaluation, when that is expected cheaper than the answer kept so far and than the full lift
  // (`full_time`, 0 when the full lift is outside the budgets). A passing fill competes for the
  // answer like any assignment seen.
  void fill_islands_step(const search::SearchOutcome& outcome, const search::SearchLimits& limits, double full_time) {
    if (!outcome.best.pass || result_.steps.size() >= max_steps_) return;
    const std::set<std::string> filled = search::fill_islands(outcome.lifted, limits.budget, *replay_);
    if (filled == outcome.lifted) return;
    const double expected = replay_->cost(filled).time_vs_bf16;
    double to_beat = best_.pass ? best_time_ : 1.0;
    if (full_time > 0) to_beat = std::min(to_beat, full_time);
    if (expected >= to_beat - search::kSameTime) return;
    if (limits.time_budget > 0 && expected > limits.time_budget) return;
    const std::string label = std::to_string(outcome.lifted.size()) + " + " +
                              std::to_string(filled.size() - outcome.lifted.size()) + " filling INT8 islands";
    const Score score = replay_->evaluate(filled, label);
    if (score.pass) on_best(filled, score);  // kept when cheaper (on_best)
    on_step(search::scored_step(result_.steps.size() + 1, label, score.pass ? Decision::kMeets : Decision::kMisses,
                                score, best_lifted_.size()),
            score, filled);
  }

  // --pareto: what max_iterations leaves goes to prefixes of the final order (the top k lifted)
  // at evenly spaced k, each a point of the trade-off curve; a cheaper passing point within the
  // budgets becomes the answer.
  void fill_curve(const std::vector<std::string>& order, const search::SearchLimits& limits) {
    constexpr size_t kPoints = 8;
    const size_t g = order.size();
    std::set<Assignment> seen;
    for (const auto& [step, assignment] : point_sets_) seen.insert(assignment);
    for (size_t i = 1; i < kPoints && result_.steps.size() < max_steps_; ++i) {
      const size_t k = i * g / kPoints;
      const std::set<std::string> lifted(order.begin(), order.begin() + static_cast<long>(k));
      if (k == 0 || !seen.insert(evaluator_->assignment_for(lifted)).second) continue;
      const std::string label = "curve top " + std::to_string(k);
      const Score score = replay_->evaluate(lifted, label);
      const bool within = lifted.size() <= limits.budget && (limits.time_budget <= 0 || score.time_vs_bf16 <= limits.time_budget);
      if (score.pass && within) on_best(lifted, score);  // kept when cheaper (on_best)
      on_step(search::scored_step(result_.steps.size() + 1, label, Decision::kMeasured, score, best_lifted_.size()),
              score, lifted);
    }
  }

  // Whether `lifted` (at the current rung) was a step of this run that missed the criterion.
  bool missed(const std::set<std::string>& lifted) const { return misses_.count(evaluator_->assignment_for(lifted)) > 0; }

  // Every evaluated assignment is a point of the trade-off curve.
  void add_point(size_t step, const std::string& label, const Assignment& lifted, const Score& score) {
    points_.push_back({.step = step,
                       .label = label,
                       .lifted = lifted.size(),
                       .time_vs_bf16 = score.time_vs_bf16,
                       .objective = score.objective,
                       .psnr_db = score.psnr_db,
                       .pass_rate = score.pass_rate,
                       .meets = score.pass,
                       .transitions = score.transitions});
    point_sets_.emplace_back(points_.size() - 1, lifted);
  }

  // pareto.json: the non-dominated points, each with the config that reproduces it.
  void write_pareto() {
    std::vector<ParetoPoint> front = pareto_front(points_);
    fs::create_directories(work_file("pareto"));
    Json points = Json::array();
    for (ParetoPoint& point : front) {
      const auto it = std::find_if(point_sets_.begin(), point_sets_.end(), [&](const auto& entry) {
        const ParetoPoint& p = points_[entry.first];
        return p.step == point.step && p.label == point.label;
      });
      // A ladder's full lifts lift as many layers each: the baselines are named by their rungs too.
      const std::vector<size_t> by_rung = count_by_rung(it->second);
      std::string baseline = "_" + std::to_string(point.lifted);
      for (size_t i = 0; ladder_.size() > 1 && i < ladder_.size(); ++i) {
        if (by_rung[i] > 0) baseline += "_" + std::to_string(by_rung[i]) + ladder_[i];
      }
      point.config_path = "pareto/point_" + std::to_string(point.step) + (point.step == 0 ? baseline : "") + ".json";
      save_config(evaluator_->config_for(it->second), work_file(point.config_path), params_.config_shape);
      Json lifted_by_rung = Json::object();
      for (size_t i = 0; i < ladder_.size(); ++i) lifted_by_rung[ladder_[i]] = by_rung[i];
      points.push_back({{"step", point.step},
                        {"label", point.label},
                        {"lifted", point.lifted},
                        {"time_vs_bf16", point.time_vs_bf16},
                        {"objective", point.objective},
                        {"psnr_db", point.psnr_db},
                        {"pass_rate", point.pass_rate},
                        {"meets", point.meets},
                        {"transitions", point.transitions},
                        {"config", point.config_path}});
      if (ladder_.size() > 1) points.back()["lifted_by_rung"] = lifted_by_rung;
    }
    write_file_atomically(work_file("pareto.json"), Json{{"metric", result_.objective_name},
                                                         {"device", params_.deployment.device},
                                                         {"evaluated", points_.size()},
                                                         {"points", points}}
                                                        .dump(2));
    result_.pareto = std::move(front);
  }

  // A resumed run counts what the uninterrupted run would have: its own passes, less the
  // rebuild of the replayed best, plus the replayed steps and the ranking it read back.
  void count_evaluations() {
    result_.reranks = evaluator_->reranks();
    result_.rerank_evaluations = evaluator_->rerank_evaluations();
    result_.evaluations_this_run = bench_->evaluations();
    result_.evaluations = result_.evaluations_this_run - rebuild_evaluations_ + result_.resumed_steps +
                          loaded_ranking_evaluations_;
  }

  // How many layers of `assignment` each rung holds.
  std::vector<size_t> count_by_rung(const Assignment& assignment) const {
    std::vector<size_t> counts(ladder_.size(), 0);
    for (const auto& [layer, rung] : assignment) ++counts[rung - 1];
    return counts;
  }

  // The final assignment is the best saved (the search's best, its model rebuilt after a resume).
  void finish() {
    result_.lifted_layers.clear();
    result_.lifted_formats.clear();
    for (const auto& [layer, rung] : best_lifted_) {
      result_.lifted_layers.push_back(layer);
      result_.lifted_formats.push_back(ladder_[rung - 1]);
    }
    const std::vector<size_t> by_rung = count_by_rung(best_lifted_);
    for (size_t i = 0; i < ladder_.size(); ++i) result_.rungs[i].lifted = by_rung[i];
    result_.final_metrics = best_.metrics;
    result_.final_verdict = best_.verdict;
    const DeviceProfile& device = params_.deployment.profile();
    const QuantConfig final_config = evaluator_->config_for(best_lifted_);
    result_.final_time_vs_bf16 = bench_->time_vs_full_bf16(final_config, device);
    result_.final_transitions = bench_->cost(final_config, device).transitions;
    result_.int8_time_vs_bf16 = bench_->time_vs_full_bf16(base_, device);
    write_pareto();
    for (const auto& note : bench_->macs().notes) log_warning(params_.setup.model_path + ": MAC estimate: " + note);
  }

  // The final model on the deployment's provider, when that is not the CPU accuracy ran on.
  void check_runtime() {
    if (!params_.deployment.on_cpu()) result_.runtime_check = try_on_provider(params_.deployment, result_.final_model_path);
  }

  void write_summary() const {
    Json metrics = Json::array();
    for (const auto& m : result_.final_metrics) metrics.push_back(search::output_to_json(m));
    const Verdict& verdict = result_.final_verdict;
    Json summary = {{"model", params_.setup.model_path},
                    {"task", to_string(result_.task.type)},
                    {"base", options_.base_config ? config_to_json(*options_.base_config) : Json(options_.base_preset)},
                    {"ranking", to_string(options_.ranking)},
                    {"adaptive", adaptive_},
                    {"reranks", result_.reranks},
                    {"rerank_evaluations", result_.rerank_evaluations},
                    {"trim", trim_},
                    {"trimmed", result_.trimmed},
                    {"search", to_string(options_.search)},
                    {"stop_reason", result_.stop_reason},
                    {"compute_layers", result_.compute_layers},
                    {"lift", text::join(ladder_, ",")},
                    {"lifted_layer_count", result_.lifted_layers.size()},
                    {"lifted_layers", result_.lifted_layers},
                    {"verdict", {{"pass", verdict.pass}, {"criterion", verdict.criterion}, {"reason", verdict.reason}}},
                    {"final_metrics", metrics},
                    {"evaluations", result_.evaluations},
                    {"evaluations_this_run", result_.evaluations_this_run},
                    {"device", params_.deployment.device},
                    {"expected_time_vs_full_bf16", {{"final", result_.final_time_vs_bf16},
                                                    {"full_int8", result_.int8_time_vs_bf16},
                                                    {"time_budget", options_.time_budget},
                                                    {"basis", "MACs at the device profile's nominal speeds plus the "
                                                              "INT8/float boundaries (evaluation/cost_model.h)"}}},
                    {"transitions", result_.final_transitions},
                    {"calib_method", calib_method_traits(result_.calib_method).name},
                    {"pareto_points", result_.pareto.size()},
                    {"steps", result_.steps.size()}};
    if (ladder_.size() > 1) summary.update(ladder_summary());
    if (result_.runtime_check) {
      summary["runtime_check"] = {{"provider", result_.runtime_check->runtime},
                                  {"ok", result_.runtime_check->ok},
                                  {"detail", result_.runtime_check->detail}};
    }
    write_file_atomically(work_file("summary.json"), summary.dump(2));
  }

  // What a ladder's summary.json adds: its rungs, and each lifted layer's format.
  Json ladder_summary() const {
    Json formats = Json::object();
    for (size_t i = 0; i < result_.lifted_layers.size(); ++i) formats[result_.lifted_layers[i]] = result_.lifted_formats[i];
    Json rungs = Json::array();
    for (const LiftRung& rung : result_.rungs) {
      rungs.push_back({{"lift", rung.lift},
                       {"ran", rung.ran},
                       {"candidates", rung.candidates},
                       {"lifted", rung.lifted},
                       {"full_lift_passes", rung.full_lift_passes},
                       {"full_lift_time_vs_bf16", rung.full_time_vs_bf16},
                       {"first_step", rung.first_step},
                       {"steps", rung.steps},
                       {"stop_reason", rung.stop_reason}});
    }
    return {{"ladder", ladder_}, {"lifted_layer_formats", formats}, {"rungs", rungs}};
  }

  const ExploreParams& params_;
  const SearchOptions& options_;
  bool adaptive_;  // adaptive_ranking(options_)
  size_t trim_;    // trim_tries(options_)
  const StepCallback& on_step_;
  Clock::time_point start_;
  ExploreResult result_;
  QuantConfig base_;
  std::vector<std::string> ladder_;        // the lift's rungs (one for a single lift)
  std::vector<LayerConfig> rung_configs_;  // each rung's layer config (its preset's global)
  size_t rung_ = 1;                        // the rung being searched
  size_t max_steps_ = 0;                   // the whole ladder's
  std::unique_ptr<Workbench> bench_;
  std::unique_ptr<Objective> objective_;
  std::unique_ptr<WorkbenchEvaluator> evaluator_;
  std::unique_ptr<search::LedgerReplay> replay_;
  std::vector<std::string> candidates_;
  std::ofstream ledger_;
  Score best_;                                        // saved in final.onnx
  Assignment best_lifted_;
  double best_time_ = 1;
  std::vector<ParetoPoint> points_;                   // every evaluated assignment
  std::vector<std::pair<size_t, Assignment>> point_sets_;  // index into points_ -> its assignment
  std::set<Assignment> misses_;                            // the steps' assignments that missed
  bool have_best_ = false;  // final.onnx holds a best so far
  std::optional<Assignment> pending_best_;  // a replayed best whose model is not built yet
  size_t loaded_ranking_evaluations_ = 0, rebuild_evaluations_ = 0;
};

}  // namespace

bool adaptive_ranking(const SearchOptions& options) {
  return options.adaptive.value_or(options.search == SearchMode::kBisection && scores_a_state(options.ranking));
}

size_t trim_tries(const SearchOptions& options) {
  return options.trim.value_or(options.search == SearchMode::kBisection && !options.pareto ? kDefaultTrim : 0);
}

const EnumNames<Ranking>& ranking_names() {
  static constexpr EnumNames<Ranking> names{kRankingRows};
  return names;
}
const EnumNames<SearchMode>& search_mode_names() {
  static constexpr EnumNames<SearchMode> names{kSearchRows};
  return names;
}
const EnumNames<Decision>& decision_names() {
  static constexpr EnumNames<Decision> names{kDecisionRows};
  return names;
}

Decision promotion_decision(double best_objective, double trial_objective, double best_psnr_db, double trial_psnr_db,
                            double min_gain) {
  if (std::fabs(trial_objective - best_objective) > min_gain) {
    return trial_objective > best_objective ? Decision::kAccepted : Decision::kRolledBack;
  }
  const double psnr_gain = metric_traits(AccuracyTarget::kPsnr).min_gain;
  if (std::fabs(trial_psnr_db - best_psnr_db) > psnr_gain) {
    return trial_psnr_db > best_psnr_db ? Decision::kAccepted : Decision::kRolledBack;
  }
  return Decision::kSkipped;
}

std::vector<ParetoPoint> pareto_front(std::vector<ParetoPoint> points) {
  // Cheapest first; among equal times the higher objective, then the earlier step.
  std::stable_sort(points.begin(), points.end(), [](const ParetoPoint& a, const ParetoPoint& b) {
    if (a.time_vs_bf16 != b.time_vs_bf16) return a.time_vs_bf16 < b.time_vs_bf16;
    return a.objective > b.objective;
  });
  std::vector<ParetoPoint> front;
  for (ParetoPoint& point : points) {
    if (!front.empty() && point.objective <= front.back().objective) continue;  // dominated
    front.push_back(std::move(point));
  }
  return front;
}

bool psnr_plateau(const std::vector<double>& gains_db, size_t window, double min_gain_db) {
  if (window == 0 || gains_db.size() < window) return false;
  double recent = 0;
  for (size_t i = gains_db.size() - window; i < gains_db.size(); ++i) recent += gains_db[i];
  return recent < min_gain_db;
}

std::vector<std::string> lift_ladder(const std::string& lift) {
  std::vector<std::string> rungs;
  for (size_t from = 0;;) {
    const size_t comma = std::min(lift.find(',', from), lift.size());
    std::string name = lift.substr(from, comma - from);
    name.erase(0, name.find_first_not_of(' '));
    name.erase(name.find_last_not_of(' ') + 1);
    rungs.push_back(std::move(name));
    if (comma == lift.size()) break;
    from = comma + 1;
  }
  const auto where = [&](size_t i) {
    return rungs.size() > 1 ? ", rung " + std::to_string(i + 1) + " of the ladder '" + lift + "'" : std::string();
  };
  std::vector<FormatId> formats;
  for (size_t i = 0; i < rungs.size(); ++i) {
    if (rungs[i].empty()) throw_bad_input("", "the lift ladder '" + lift + "' has an empty rung " + std::to_string(i + 1));
    const auto preset = preset_config(rungs[i]);
    const std::optional<TensorQuantSpec> activations = preset ? preset->global.input_tensors : std::nullopt;
    // A rung is a float or block format, or 16-bit integer activations (A16W8, or S16S16 with
    // int16 weights too: from an INT8 base that is Quark's S16S16_MIXED_S8S8, INT8 where it is
    // enough and INT16 where it is not).
    const bool wide_integer = activations && has_integer_codes(activations->format) &&
                              dtype_size(format_traits(activations->format).storage) == 2;
    if (!activations || (format_traits(activations->format).is_qdq && !wide_integer)) {
      throw_bad_input("", "cannot lift layers to '" + rungs[i] + "'" + where(i) +
                              " (a float or block format: BF16, FP16, BFP16, MX4, MX6, MX9, MXINT8, MXFP8E4M3, ...; "
                              "or 16-bit integers: A16W8, S16S16)");
    }
    const auto same = std::find(formats.begin(), formats.end(), activations->format);
    if (same != formats.end()) {
      throw_bad_input("", "the lift ladder '" + lift + "' names " + rungs[i] + " twice (rungs " +
                              std::to_string(same - formats.begin() + 1) + " and " + std::to_string(i + 1) +
                              "): each rung is another format");
    }
    formats.push_back(activations->format);
  }
  return rungs;
}

ExploreResult explore(const ExploreParams& params, const StepCallback& on_step) {
  const auto search = params.search.base_config ? std::nullopt : search_preset(params.search.base_preset);
  if (!search) return Explorer(params, on_step).run();
  // A search preset is its starting preset and its lift (the default BF16 lift gives way).
  const std::string& lift = params.search.lift;
  if (!text::equal_ignoring_case(lift, "BF16") && !text::equal_ignoring_case(lift, search->lift)) {
    throw_bad_input("", search->name + " lifts to " + search->lift + ": drop --lift " + params.search.lift +
                            ", or start from --preset " + search->base + " with the lift you want");
  }
  ExploreParams resolved = params;
  resolved.search.base_preset = search->base;
  resolved.search.lift = search->lift;
  log_info(search->name + ": exploring from " + search->base + " with --lift " + search->lift);
  return Explorer(resolved, on_step).run();
}

}  // namespace mixprec
