#include "mixprec/run.h"

#include <algorithm>
#include <cmath>

#include "common/timing.h"
#include "mixprec/error.h"
#include "mixprec/log.h"
#include "mixprec/npy.h"

namespace mixprec {
namespace {

// Joins per-sample outputs into arrays to save (see RunParams::save_outputs_path).
NamedTensors stack_outputs(const std::vector<NamedTensors>& per_sample) {
  NamedTensors out;
  if (per_sample.empty()) return out;
  const size_t n_outputs = per_sample.front().size();
  for (size_t o = 0; o < n_outputs; ++o) {
    const std::string& name = per_sample.front()[o].first;
    const Tensor& first = per_sample.front()[o].second;
    bool same_tail = first.shape().size() > 0;
    int64_t rows = 0;
    for (const auto& sample : per_sample) {
      const Tensor& t = sample[o].second;
      same_tail = same_tail && t.dtype() == first.dtype() && t.shape().size() == first.shape().size() &&
                  std::equal(t.shape().begin() + 1, t.shape().end(), first.shape().begin() + 1);
      if (!t.shape().empty()) rows += t.shape()[0];
    }
    if (per_sample.size() == 1) {
      out.emplace_back(name, first);
    } else if (same_tail) {
      Shape shape = first.shape();
      shape[0] = rows;
      Tensor joined(first.dtype(), shape);
      std::byte* dst = joined.data();
      for (const auto& sample : per_sample) {
        const Tensor& t = sample[o].second;
        dst = std::copy(t.data(), t.data() + t.byte_size(), dst);
      }
      out.emplace_back(name, std::move(joined));
    } else {
      for (size_t s = 0; s < per_sample.size(); ++s) {
        out.emplace_back(name + "#" + std::to_string(s), per_sample[s][o].second);
      }
    }
  }
  return out;
}

std::vector<InputSpec> specs_of(const NamedTensors& tensors) {
  std::vector<InputSpec> specs;
  for (const auto& [name, t] : tensors) {
    specs.push_back({name, t.dtype(), t.shape(), std::vector<std::string>(t.shape().size())});
  }
  return specs;
}

}  // namespace

LatencyStats summarize_latency(std::vector<double> times_ms) {
  LatencyStats stats;
  stats.runs = times_ms.size();
  if (times_ms.empty()) return stats;
  std::sort(times_ms.begin(), times_ms.end());
  const size_t n = times_ms.size();
  stats.min_ms = times_ms.front();
  stats.max_ms = times_ms.back();
  stats.median_ms = n % 2 ? times_ms[n / 2] : 0.5 * (times_ms[n / 2 - 1] + times_ms[n / 2]);
  double sum = 0;
  for (double t : times_ms) sum += t;
  stats.mean_ms = sum / static_cast<double>(n);
  // Nearest-rank 90th percentile.
  const size_t rank = static_cast<size_t>(std::ceil(0.9 * static_cast<double>(n)));
  stats.p90_ms = times_ms[std::max<size_t>(rank, 1) - 1];
  return stats;
}

RunReport run_model(const RunParams& params) {
  WarningCollector warnings;
  RunReport report;
  const std::string& model_path = params.setup.model_path;
  report.model_path = model_path;
  report.provider = params.deployment.provider;
  report.runtime_version = runtime_version();

  const auto start = Clock::now();
  Session session = Session::from_file(model_path, params.deployment.session());
  report.session_create_ms = milliseconds_since(start);

  auto source = open_samples(evaluation_data(params.setup), session.inputs(), model_path);
  report.data_description = source->describe();
  report.samples = source->size();
  if (report.samples == 0) throw_bad_input(model_path, "no samples to run");

  const NamedTensors first = source->sample(0);
  report.inputs = specs_of(first);
  for (size_t i = 0; i < params.warmup_runs; ++i) session.run(first);

  const bool keep = !params.save_outputs_path.empty();
  std::vector<NamedTensors> kept;
  std::vector<double> times;
  const size_t runs = std::max(report.samples, params.min_timed_runs);
  for (size_t r = 0; r < runs; ++r) {
    const size_t index = r % report.samples;
    const NamedTensors inputs = index == 0 ? first : source->sample(index);
    const auto t0 = Clock::now();
    NamedTensors outputs = session.run(inputs);
    times.push_back(milliseconds_since(t0));
    if (r == 0) report.outputs = specs_of(outputs);
    if (keep && r < report.samples) kept.push_back(std::move(outputs));
  }
  report.latency = summarize_latency(times);
  if (report.latency.mean_ms > 0) {
    report.inferences_per_second = 1000.0 / report.latency.mean_ms;
    const int64_t batch = first.front().second.shape().empty() ? 1 : first.front().second.shape()[0];
    report.items_per_second = report.inferences_per_second * static_cast<double>(std::max<int64_t>(batch, 1));
  }
  if (keep) {
    write_npz(params.save_outputs_path, stack_outputs(kept));
    report.saved_outputs_path = params.save_outputs_path;
  }
  report.warnings = warnings.warnings();
  return report;
}

}  // namespace mixprec
