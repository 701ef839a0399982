#include "evaluation/stats_cache.h"

#include <filesystem>

#include "common/timing.h"
#include "mixprec/error.h"
#include "mixprec/log.h"

namespace mixprec {

PrepareOptions calibration_preparation(PrepareOptions prepare) {
  prepare.fold_affine = false;
  return prepare;
}

CachedStats load_or_collect_stats(const onnx::ModelProto& calibration_graph, const EvaluationSetup& setup,
                                  const StatsRequest& request) {
  constexpr size_t kRandomSamples = 100;  // SPEC's NumCalibSamples default, when a config sets none
  const std::string& label = setup.model_path;
  CachedStats cached;
  const std::string fingerprint = model_fingerprint(calibration_graph);
  std::error_code ec;
  if (!request.path.empty() && std::filesystem::exists(request.path, ec)) {
    cached.stats = load_stats(request.path);
    if (cached.stats.model_fingerprint != fingerprint) {
      throw_bad_input(request.path, "statistics were collected on another model (fingerprint " +
                                        cached.stats.model_fingerprint + ", this model " + fingerprint +
                                        "): give another --stats file or a fresh --work-dir");
    }
    cached.reused = true;
    return cached;
  }
  const DataSpec data = calibration_data(setup, request.max_samples ? request.max_samples : kRandomSamples);
  // The probe only tells the inputs: closed before calibrating, so two sessions never hold a
  // large model's weights at once.
  const auto source = [&] {
    const Session probe = Session::from_model(calibration_graph, label, request.session);
    return open_samples(data, probe.inputs(), label);
  }();
  if (source->size() < 4) log_warning(source->describe() + ": fewer than 4 calibration samples; ranges will be noisy");
  const auto start = Clock::now();
  cached.stats = calibrate_model(calibration_graph, label, *source,
                                 {.session = request.session,
                                  .max_samples = request.max_samples,
                                  .seed = data.data.seed,
                                  .progress = setup.progress});
  cached.seconds = seconds_since(start);
  if (!request.path.empty()) save_stats(cached.stats, request.path);
  return cached;
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
