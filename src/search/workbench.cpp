#include "search/workbench.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <set>

#include "mixprec/error.h"
#include "mixprec/model_io.h"
#include "mixprec/rewrite.h"

namespace mixprec {
namespace {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

}  // namespace

Workbench::Workbench(const WorkbenchOptions& options) : options_(options) {
  const std::string& label = options_.model_path;
  const onnx::ModelProto model = load_model(label);
  task_ = analyze_model(model, label).task;
  prepared_ = prepare_model(model, options_.prepare, label);
  load_or_calibrate();
  cache_reference();
}

void Workbench::load_or_calibrate() {
  const std::string& label = options_.model_path;
  const std::string& path = options_.stats_path;
  const std::string fingerprint = model_fingerprint(prepared_);
  if (!path.empty() && fs::exists(path)) {
    stats_ = load_stats(path);
    if (stats_.model_fingerprint != fingerprint) {
      throw_bad_input(path, "statistics of another model: use a fresh --work-dir");
    }
    stats_reused_ = true;
  } else {
    const Session probe = Session::from_model(prepared_, label, options_.session);
    const auto source = open_samples(options_.calibration, probe.inputs(), label);
    const auto t0 = Clock::now();
    stats_ = calibrate_model(prepared_, label, *source,
                             {.session = options_.session,
                              .max_samples = options_.calibration_samples,
                              .progress = options_.progress});
    calibration_seconds_ = seconds_since(t0);
    if (!path.empty()) save_stats(stats_, path);
  }
  ranks_ = infer_tensor_ranks(prepared_, label);
  for (const auto& [name, rank] : stats_.ranks) ranks_[name] = rank;
}

// The FP32 reference runs once; every evaluation compares against these outputs.
void Workbench::cache_reference() {
  const std::string& label = options_.model_path;
  const Session reference = Session::from_file(label, options_.session);
  const auto source = open_samples(options_.evaluation, reference.inputs(), label);
  if (source->size() == 0) throw_bad_input(label, "no evaluation samples");
  data_description_ = source->describe();
  const auto t0 = Clock::now();
  for (size_t i = 0; i < source->size(); ++i) {
    inputs_.push_back(source->sample(i));
    references_.push_back(reference.run(inputs_.back()));
  }
  reference_seconds_ = seconds_since(t0);
}

std::vector<std::string> Workbench::integer_layers(const QuantConfig& config) const {
  std::vector<std::string> layers;
  for (const auto& a : assign_layers(config, prepared_, options_.model_path)) {
    if (!a.excluded && a.config.input_tensors && format_traits(a.config.input_tensors->format).is_integer) {
      layers.push_back(a.node_name);
    }
  }
  return layers;
}

const MacEstimate& Workbench::macs() {
  if (!macs_) {
    std::map<std::string, std::vector<int64_t>> shapes;
    for (const auto& [name, tensor] : inputs_.front()) shapes[name] = tensor.shape();
    macs_ = estimate_node_macs(prepared_, shapes, options_.model_path);
  }
  return *macs_;
}

std::map<std::string, FormatId> Workbench::node_formats(const QuantConfig& config, const DeviceProfile& device) const {
  std::map<std::string, FormatId> formats;
  for (const auto& a : assign_layers(config, prepared_, options_.model_path)) {
    if (a.excluded || !a.config.input_tensors) continue;
    FormatId format = a.config.input_tensors->format;
    if (a.config.weight && relative_speed(device, a.config.weight->format) < relative_speed(device, format)) {
      format = a.config.weight->format;
    }
    formats[a.node_name] = format;
  }
  return formats;
}

double Workbench::time_vs_full_bf16(const QuantConfig& config, const DeviceProfile& device) {
  const MacEstimate& estimate = macs();
  const double bf16 = estimated_time(estimate, node_formats(*preset_config("BF16"), device), device);
  return bf16 > 0 ? estimated_time(estimate, node_formats(config, device), device) / bf16 : 1.0;
}

std::map<std::string, double> Workbench::tensor_noise(const QuantConfig& config,
                                                     const std::vector<std::string>& tensors) {
  evaluations_ += 2;
  const std::string& label = options_.model_path;
  // Only tensors both graphs have (a rewrite may replace a tensor it quantizes in place).
  const onnx::ModelProto built = build(config);
  std::set<std::string> available;
  for (const auto& input : built.graph().input()) available.insert(input.name());
  for (const auto& node : built.graph().node()) available.insert(node.output().begin(), node.output().end());
  std::vector<std::string> names;
  for (const auto& name : tensors) {
    if (available.count(name)) names.push_back(name);
  }
  const Session reference = Session::from_model(expose_intermediates(prepared_, names, label), label, options_.session);
  const Session quantized = Session::from_model(expose_intermediates(built, names, label), label, options_.session);
  std::map<std::string, std::pair<double, double>> power;  // noise, signal
  for (const auto& sample : inputs_) {
    const NamedTensors want = reference.run(sample, names);
    const NamedTensors got = quantized.run(sample, names);
    for (size_t t = 0; t < want.size() && t < got.size(); ++t) {
      const auto& [name, ref] = want[t];
      const Tensor& out = got[t].second;
      if (got[t].first != name || ref.dtype() != DType::kFloat32 || out.dtype() != DType::kFloat32 ||
          out.shape() != ref.shape()) {
        continue;
      }
      const auto r = ref.as<float>();
      const auto q = out.as<float>();
      auto& [noise, signal] = power[name];
      for (size_t i = 0; i < r.size(); ++i) {
        const double d = static_cast<double>(q[i]) - r[i];
        noise += d * d;
        signal += static_cast<double>(r[i]) * r[i];
      }
    }
  }
  std::map<std::string, double> ratio;
  for (const auto& [name, p] : power) ratio[name] = p.second > 0 ? p.first / p.second : (p.first > 0 ? 1.0 : 0.0);
  return ratio;
}

onnx::ModelProto Workbench::build(const QuantConfig& config) const {
  const auto assignment = assign_layers(config, prepared_, options_.model_path);
  const QuantizeOptions options = quantize_options(config);
  const RankLookup rank_of = [this](const std::string& name) -> std::optional<int64_t> {
    auto it = ranks_.find(name);
    return it == ranks_.end() ? std::nullopt : std::optional<int64_t>(it->second);
  };
  return quantize_model(prepared_, assignment, stats_, options, options_.model_path, rank_of);
}

Evaluation Workbench::evaluate(const QuantConfig& config) {
  const auto t0 = Clock::now();
  Evaluation e = evaluate_model(build(config));
  e.seconds = seconds_since(t0);
  return e;
}

Evaluation Workbench::evaluate_model(const onnx::ModelProto& model) {
  ++evaluations_;
  const auto t0 = Clock::now();
  Evaluation e;
  e.model = std::make_shared<const onnx::ModelProto>(model);
  const Session session = Session::from_model(*e.model, options_.model_path, options_.session);
  ModelComparer comparer(options_.tolerance);
  for (size_t i = 0; i < inputs_.size(); ++i) comparer.add(references_[i], session.run(inputs_[i]));
  e.metrics = comparer.results();
  e.verdict = judge(task_.type, e.metrics, options_.target);
  for (const auto& m : e.metrics) {
    e.psnr_db = std::min(e.psnr_db, m.psnr_db);
    e.pass_rate = std::min(e.pass_rate, m.pass_rate);
  }
  e.seconds = seconds_since(t0);
  return e;
}

}  // namespace mixprec
