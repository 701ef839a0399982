#include "evaluation/stats_cache.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "common/timing.h"
#include "evaluation/exposure.h"
#include "mixprec/error.h"
#include "mixprec/log.h"

namespace mixprec {

PrepareOptions calibration_preparation(PrepareOptions prepare) {
  // CLE's scales depend on what was folded before it, so an equalized model is calibrated as
  // prepared (its own statistics file, which its fingerprint tells apart); so is a smoothed one,
  // whose activations are not the float model's.
  // So is one a plugin's float pass edited.
  if (!prepare.cle && !prepare.smooth_quant && prepare.passes.empty()) prepare.fold_affine = false;
  return prepare;
}

namespace {

constexpr size_t kRandomSamples = 100;  // SPEC's NumCalibSamples default, when a config sets none

// One calibration pass over `tensors` of the graph, on the setup's calibration data.
CalibrationStats collect(const onnx::ModelProto& graph, const EvaluationSetup& setup, const StatsRequest& request,
                         std::vector<std::string> tensors) {
  const std::string& label = setup.model_path;
  const DataSpec data = calibration_data(setup, request.max_samples ? request.max_samples : kRandomSamples);
  // The probe only tells the inputs: closed before calibrating, so two sessions never hold a
  // large model's weights at once.
  const auto source = [&] {
    const Session probe = Session::from_model(graph, label, request.session);
    return open_samples(data, probe.inputs(), label);
  }();
  if (source->size() < 4) log_warning(source->describe() + ": fewer than 4 calibration samples; ranges will be noisy");
  return calibrate_model(graph, label, *source,
                         {.session = request.session,
                          .max_samples = request.max_samples,
                          .seed = data.data.seed,
                          .progress = setup.progress,
                          .tensors = std::move(tensors)});
}

std::string first_names(const std::vector<std::string>& names, size_t count = 3) {
  std::string text;
  for (size_t i = 0; i < std::min(count, names.size()); ++i) text += (i ? ", " : "") + names[i];
  return names.size() > count ? text + ", ..." : text;
}

}  // namespace

ChannelMaximaFn smooth_quant_measurer(const EvaluationSetup& setup, const SessionOptions& session, size_t max_samples) {
  return [setup, session, max_samples](const onnx::ModelProto& model, const std::vector<std::string>& tensors, size_t& samples) {
    const std::string& label = setup.model_path;
    const DataSpec data = calibration_data(setup, max_samples ? max_samples : kRandomSamples);
    const auto source = [&] {
      const Session probe = Session::from_model(model, label, session);
      return open_samples(data, probe.inputs(), label);
    }();
    const std::vector<size_t> subset =
        max_samples ? spread_subset(source->size(), max_samples, data.data.seed) : std::vector<size_t>{};
    samples = max_samples ? subset.size() : source->size();
    return measure_channel_maxima(model, tensors, *source, subset, session, label);
  };
}

CachedStats load_or_collect_stats(const onnx::ModelProto& calibration_graph, const EvaluationSetup& setup,
                                  const StatsRequest& request) {
  const std::string& label = setup.model_path;
  CachedStats cached;
  const std::string fingerprint = model_fingerprint(calibration_graph);
  const Exposure exposure = calibration_exposure(calibration_graph, request.config, label);
  std::error_code ec;
  if (!request.path.empty() && std::filesystem::exists(request.path, ec)) {
    cached.stats = load_stats(request.path);
    if (cached.stats.model_fingerprint != fingerprint) {
      throw_bad_input(request.path, "statistics were collected on another model (fingerprint " +
                                        cached.stats.model_fingerprint + ", this model " + fingerprint +
                                        "): give another --stats file or a fresh --work-dir");
    }
    cached.reused = true;
    const auto start = Clock::now();
    if (add_missing_stats(calibration_graph, setup, request, exposure.tensors, cached.stats)) {
      cached.seconds = seconds_since(start);
    }
    return cached;
  }
  if (!exposure.pre_activations.empty()) {
    log_info(label + ": calibration observes " + std::to_string(exposure.pre_activations.size()) +
             " pre-activation tensors ONNX Runtime would fuse into the op before their activation (" +
             first_names(exposure.pre_activations) + "): a config reads them");
  }
  const auto start = Clock::now();
  cached.stats = collect(calibration_graph, setup, request, exposure.tensors);
  cached.seconds = seconds_since(start);
  if (!request.path.empty()) save_stats(cached.stats, request.path);
  return cached;
}

bool add_missing_stats(const onnx::ModelProto& calibration_graph, const EvaluationSetup& setup,
                       const StatsRequest& request, const std::vector<std::string>& tensors, CalibrationStats& stats) {
  std::set<std::string> known;
  for (const auto& input : calibration_graph.graph().input()) known.insert(input.name());
  for (const auto& node : calibration_graph.graph().node()) known.insert(node.output().begin(), node.output().end());
  for (const auto& init : calibration_graph.graph().initializer()) known.erase(init.name());
  std::vector<std::string> missing;
  for (const auto& name : tensors) {
    if (known.count(name) && !stats.ranks.count(name)) missing.push_back(name);
  }
  if (missing.empty()) return false;
  const std::string where = request.path.empty() ? setup.model_path : request.path;
  CalibrationStats more = collect(calibration_graph, setup, request, missing);
  if (more.data_description != stats.data_description || more.samples != stats.samples) {
    throw_bad_input(where, "the statistics lack " + std::to_string(missing.size()) + " tensors the config reads (" +
                               first_names(missing) + ") and were collected on other data (" + stats.data_description +
                               "; this run's: " + more.data_description +
                               "): give the same calibration data or a fresh --work-dir");
  }
  log_info(where + ": collected the statistics of " + std::to_string(missing.size()) +
           " more tensors the config reads (" + first_names(missing) + ")");
  stats.tensors.merge(more.tensors);
  stats.ranks.merge(more.ranks);
  if (!request.path.empty()) save_stats(stats, request.path);
  return true;
}

std::map<std::string, int64_t> rank_table(const onnx::ModelProto& prepared, const std::string& label,
                                          const CalibrationStats& stats, const NamedTensors* sample) {
  std::map<std::string, int64_t> ranks = infer_tensor_ranks(prepared, label, sample);
  for (const auto& [name, rank] : stats.ranks) ranks[name] = rank;
  return ranks;
}

RankLookup rank_lookup(const std::map<std::string, int64_t>& ranks) {
  return [&ranks](const std::string& name) -> std::optional<int64_t> {
    auto it = ranks.find(name);
    return it == ranks.end() ? std::nullopt : std::optional<int64_t>(it->second);
  };
}

}  // namespace mixprec
