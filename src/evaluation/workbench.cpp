#include "evaluation/workbench.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <set>

#include "common/timing.h"
#include "evaluation/stats_cache.h"
#include "mixprec/error.h"
#include "mixprec/model_io.h"
#include "mixprec/rewrite.h"

namespace mixprec {

Workbench::Workbench(const EvaluationSetup& setup, const DeploymentTarget& deployment, const WorkbenchOptions& options)
    : setup_(setup), options_(options), session_(accuracy_session(deployment)) {
  const std::string& label = setup_.model_path;
  onnx::ModelProto model = load_model(label);
  task_ = analyze_model(model, label).task;
  // The loaded model is kept only when calibration needs a graph of its own: a 2 GB model is
  // not held twice beside ONNX Runtime's copy.
  const bool own_calibration_graph = calibration_preparation(options_.prepare).fold_affine != options_.prepare.fold_affine;
  prepared_ = own_calibration_graph ? prepare_model(model, options_.prepare, label)
                                    : prepare_model(std::move(model), options_.prepare, label);
  load_or_calibrate(std::move(model));
  cache_reference();
}

void Workbench::load_or_calibrate(onnx::ModelProto model) {
  const std::string& label = setup_.model_path;
  if (!setup_.work_dir.empty() && !options_.stats_file.empty()) {
    std::filesystem::create_directories(setup_.work_dir);
    stats_path_ = (std::filesystem::path(setup_.work_dir) / options_.stats_file).string();
  }
  const PrepareOptions calibration = calibration_preparation(options_.prepare);
  std::optional<onnx::ModelProto> own_graph;
  if (calibration.fold_affine != options_.prepare.fold_affine) own_graph = prepare_model(std::move(model), calibration, label);
  model.Clear();
  const onnx::ModelProto& graph = own_graph ? *own_graph : prepared_;
  CachedStats cached = load_or_collect_stats(
      graph, setup_, {.path = stats_path_, .max_samples = options_.calibration_samples, .session = session_});
  stats_ = std::move(cached.stats);
  stats_reused_ = cached.reused;
  calibration_seconds_ = cached.seconds;
  ranks_ = rank_table(prepared_, label, stats_);
}

// The FP32 reference runs once; every evaluation compares against these outputs.
void Workbench::cache_reference() {
  const std::string& label = setup_.model_path;
  const Session reference = Session::from_file(label, session_);
  const auto source = open_samples(evaluation_data(setup_), reference.inputs(), label);
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
  for (const auto& a : assign_layers(config, prepared_, setup_.model_path)) {
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
    macs_ = estimate_node_macs(prepared_, shapes, setup_.model_path);
  }
  return *macs_;
}

std::map<std::string, FormatId> Workbench::node_formats(const QuantConfig& config, const DeviceProfile& device) const {
  std::map<std::string, FormatId> formats;
  for (const auto& a : assign_layers(config, prepared_, setup_.model_path)) {
    if (a.excluded || !a.config.input_tensors) continue;
    FormatId format = a.config.input_tensors->format;
    if (a.config.weight && relative_speed(device, a.config.weight->format) < relative_speed(device, format)) {
      format = a.config.weight->format;
    }
    formats[a.node_name] = format;
  }
  return formats;
}

const CostModel& Workbench::cost_model(const DeviceProfile& device) {
  auto& model = cost_models_[device.name];
  if (!model) model = std::make_unique<CostModel>(prepared_, macs(), stats_, device);
  return *model;
}

AssignmentCost Workbench::cost(const QuantConfig& config, const DeviceProfile& device) {
  for (const auto& [node, format] : node_formats(config, device)) {
    if (const auto why = device_rejects(device, format)) throw_bad_input("", "node '" + node + "': " + *why);
  }
  return cost_model(device).cost(node_formats(config, device));
}

double Workbench::time_vs_full_bf16(const QuantConfig& config, const DeviceProfile& device) {
  auto [it, fresh] = full_bf16_time_.try_emplace(device.name, 0.0);
  if (fresh) it->second = cost(*preset_config("BF16"), device).total();
  return it->second > 0 ? cost(config, device).total() / it->second : 1.0;
}

std::vector<std::set<std::string>> Workbench::islands(const QuantConfig& config, const DeviceProfile& device,
                                                      const std::set<std::string>& candidates) {
  return cost_model(device).islands(node_formats(config, device), candidates);
}

std::vector<std::vector<std::string>> Workbench::chains(const DeviceProfile& device,
                                                        const std::set<std::string>& candidates) {
  return cost_model(device).chains(candidates);
}

std::map<std::string, double> Workbench::tensor_noise(const QuantConfig& config,
                                                     const std::vector<std::string>& tensors) {
  evaluations_ += 2;
  const std::string& label = setup_.model_path;
  // Only tensors both graphs have (a rewrite may replace a tensor it quantizes in place).
  const onnx::ModelProto built = build(config);
  std::set<std::string> available;
  for (const auto& input : built.graph().input()) available.insert(input.name());
  for (const auto& node : built.graph().node()) available.insert(node.output().begin(), node.output().end());
  std::vector<std::string> names;
  for (const auto& name : tensors) {
    if (available.count(name)) names.push_back(name);
  }
  const Session reference = Session::from_model(prepared_, label, session_, names);
  const Session quantized = Session::from_model(built, label, session_, names);
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
  const auto assignment = assign_layers(config, prepared_, setup_.model_path);
  const QuantizeOptions options = quantize_options(config);
  return quantize_model(prepared_, assignment, stats_, options, setup_.model_path, rank_lookup(ranks_));
}

Evaluation Workbench::evaluate(const QuantConfig& config) {
  const auto t0 = Clock::now();
  Evaluation e = evaluate_model(build(config));
  e.seconds = seconds_since(t0);
  return e;
}

Evaluation Workbench::evaluate_model(onnx::ModelProto model) {
  ++evaluations_;
  const auto t0 = Clock::now();
  Evaluation e;
  e.model = std::make_shared<const onnx::ModelProto>(std::move(model));  // moved: a large model is not copied
  const Session session = Session::from_model(*e.model, setup_.model_path, session_);
  ModelComparer comparer(setup_.criterion.tolerance);
  for (size_t i = 0; i < inputs_.size(); ++i) comparer.add(references_[i], session.run(inputs_[i]));
  e.metrics = comparer.results();
  e.verdict = judge(task_.type, e.metrics, setup_.criterion.target);
  for (const auto& m : e.metrics) {
    e.psnr_db = std::min(e.psnr_db, m.psnr_db);
    e.pass_rate = std::min(e.pass_rate, m.pass_rate);
  }
  e.seconds = seconds_since(t0);
  return e;
}

}  // namespace mixprec
