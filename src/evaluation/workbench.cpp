#include "evaluation/workbench.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "common/digest.h"
#include "common/text.h"
#include "common/timing.h"
#include "evaluation/exposure.h"
#include "evaluation/static_shapes.h"
#include "evaluation/stats_cache.h"
#include "mixprec/error.h"
#include "mixprec/log.h"
#include "mixprec/model_io.h"
#include "mixprec/rewrite.h"

namespace mixprec {

namespace {
// Graphs up to this size keep their bytes so that an evaluation of the same graph reuses the
// previous session.
constexpr size_t kReusableSessionBytes = size_t{256} << 20;
}  // namespace

Workbench::Workbench(const EvaluationSetup& setup, const DeploymentTarget& deployment, const WorkbenchOptions& options)
    : setup_(setup), options_(options), session_(accuracy_session(deployment)) {
  const std::string& label = setup_.model_path;
  const ChannelMaximaFn measure = smooth_quant_measurer(setup_, session_, options_.calibration_samples);
  onnx::ModelProto model = load_model(label);
  const ModelAnalysis analysis = analyze_model(model, label);
  task_ = analysis.task;
  static_model_ = analysis.dynamic_dims.empty();
  // The loaded model is kept only when calibration needs a graph of its own: a 2 GB model is
  // not held twice beside ONNX Runtime's copy.
  const bool own_calibration_graph = calibration_preparation(options_.prepare).fold_affine != options_.prepare.fold_affine;
  prepared_ = own_calibration_graph ? prepare_model(model, options_.prepare, label, nullptr, &measure)
                                    : prepare_model(std::move(model), options_.prepare, label, nullptr, &measure);
  load_or_calibrate(std::move(model));
  cache_reference();
}

void Workbench::load_or_calibrate(onnx::ModelProto model) {
  const std::string& label = setup_.model_path;
  if (!setup_.work_dir.empty() && !options_.stats_file.empty()) {
    std::filesystem::create_directories(setup_.work_dir);
    // An equalized or smoothed model has statistics of its own (stats_cache.h): its own file,
    // so one work dir serves runs with and without CLE and SmoothQuant.
    std::filesystem::path file = options_.stats_file;
    if (options_.prepare.cle) file = file.stem().string() + ".cle" + file.extension().string();
    if (const auto& sq = options_.prepare.smooth_quant) {
      file = file.stem().string() + ".sq" + std::to_string(std::lround(sq->alpha * 100)) + file.extension().string();
    }
    if (!options_.prepare.passes.empty()) {  // plugin passes: keyed by their names and parameters
      Fnv1a digest;
      for (const PassCall& pass : options_.prepare.passes) {
        digest.add(pass.name);
        digest.add(pass.params);
      }
      file = file.stem().string() + ".passes-" + digest.hex().substr(0, 8) + file.extension().string();
    }
    stats_path_ = (std::filesystem::path(setup_.work_dir) / file).string();
  }
  const PrepareOptions calibration = calibration_preparation(options_.prepare);
  // The calibration graph is kept for statistics a later config reads (add_missing_stats); it
  // is a second copy only when it differs from the prepared model.
  if (calibration.fold_affine != options_.prepare.fold_affine) {
    own_calibration_graph_ = prepare_model(std::move(model), calibration, label);
  }
  model.Clear();
  CachedStats cached = load_or_collect_stats(calibration_graph(), setup_, stats_request());
  stats_ = std::move(cached.stats);
  stats_reused_ = cached.reused;
  calibration_seconds_ = cached.seconds;
  ranks_ = rank_table(prepared_, label, stats_);
}

StatsRequest Workbench::stats_request() const {
  return {.path = stats_path_,
          .max_samples = options_.calibration_samples,
          .session = session_,
          .config = options_.config ? &*options_.config : nullptr};
}

// The FP32 reference runs once; every evaluation compares against these outputs.
void Workbench::cache_reference() {
  const std::string& label = setup_.model_path;
  const Session reference = Session::from_file(label, session_);
  const auto source = open_samples(evaluation_data(setup_), reference.inputs(), label);
  if (source->size() == 0) throw_bad_input(label, "no evaluation samples");
  data_description_ = source->describe();
  samples_ = std::make_unique<SampleStore>(setup_.eval_cache_bytes, setup_.work_dir);
  const auto t0 = Clock::now();
  for (size_t i = 0; i < source->size(); ++i) {
    NamedTensors inputs = source->sample(i);
    NamedTensors outputs = reference.run(inputs);
    samples_->add(std::move(inputs), std::move(outputs));
  }
  reference_seconds_ = seconds_since(t0);
}

std::vector<std::string> Workbench::quantized_layers(const QuantConfig& config) const {
  std::vector<std::string> layers;
  for (const auto& a : assign_layers(config, prepared_, setup_.model_path)) {
    const auto* spec = a.config.input_tensors ? &*a.config.input_tensors : nullptr;
    if (!a.excluded && spec && (format_traits(spec->format).is_qdq || format_traits(spec->format).is_block)) {
      layers.push_back(a.node_name);
    }
  }
  return layers;
}

onnx::ModelProto Workbench::for_writing(onnx::ModelProto model, const std::string& output) const {
  if (!static_model_) return model;
  std::vector<NamedTensors> samples;
  for (size_t i = 0; i < std::min<size_t>(2, samples_->size()); ++i) samples.push_back(samples_->inputs(i));
  declare_static_shapes(model, samples, false, session_, setup_.model_path, output);
  return model;
}

const MacEstimate& Workbench::macs() {
  if (!macs_) {
    std::map<std::string, std::vector<int64_t>> shapes;
    for (const auto& [name, tensor] : samples_->inputs(0)) shapes[name] = tensor.shape();
    macs_ = estimate_node_macs(prepared_, shapes, setup_.model_path, stats_.body_shapes);
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

namespace {

// The reference and the quantized session of tensor_noise run side by side, each tensor tapped
// in both (runtime.h): the first of the two to compute a tensor leaves a copy, the second adds
// the pair's noise and signal power and drops the copy. So only the tensors one session has
// computed ahead of the other are held, not every tapped tensor of a sample. A session whose
// copies exceed kAheadBytes waits for the other (unless the other waits or has finished, so
// the two never wait on each other). Each tensor's sums run over its values in order and over
// the samples in order: the figures do not depend on which session is ahead.
class NoisePairs {
 public:
  explicit NoisePairs(size_t tensors) : pending_(tensors), power_(tensors), paired_(tensors, false) {}

  class Side : public TapSink {
   public:
    Side(NoisePairs& pairs, int side) : pairs_(pairs), side_(side) {}
    void observe(size_t tap, const TensorView& tensor) override { pairs_.arrive(side_, tap, tensor); }

   private:
    NoisePairs& pairs_;
    int side_;
  };

  void start_sample() {
    std::lock_guard lock(mutex_);
    done_[0] = done_[1] = false;
  }
  void finish(int side) {
    {
      std::lock_guard lock(mutex_);
      done_[side] = true;
    }
    changed_.notify_all();
  }
  // Noise and signal power of each tensor that paired as two float tensors of one shape.
  bool paired(size_t tap) const { return paired_[tap]; }
  const std::pair<double, double>& power(size_t tap) const { return power_[tap]; }

 private:
  static constexpr size_t kAheadBytes = size_t{128} << 20;
  static constexpr int kReference = 0;

  struct Copy {
    bool present = false;
    int side = 0;
    DType dtype = DType::kFloat32;
    Shape shape;
    std::vector<std::byte> bytes;
    TensorView view() const { return {dtype, shape, bytes.data(), bytes.size()}; }
  };

  void arrive(int side, size_t tap, const TensorView& tensor) {
    std::unique_lock lock(mutex_);
    for (;;) {
      Copy& pending = pending_[tap];
      if (pending.present && pending.side != side) {
        Copy other = std::move(pending);
        pending.present = false;
        ahead_[other.side] -= other.bytes.size();
        lock.unlock();
        changed_.notify_all();
        accumulate(tap, side == kReference ? tensor : other.view(), side == kReference ? other.view() : tensor);
        return;
      }
      const int peer = 1 - side;
      if (ahead_[side] == 0 || ahead_[side] + tensor.bytes <= kAheadBytes || waiting_[peer] || done_[peer]) break;
      waiting_[side] = true;
      changed_.wait(lock);
      waiting_[side] = false;
    }
    Copy& copy = pending_[tap];
    copy.present = true;
    copy.side = side;
    copy.dtype = tensor.dtype;
    copy.shape = tensor.shape;
    if (tensor.dtype == DType::kFloat32) copy.bytes.assign(tensor.data, tensor.data + tensor.bytes);
    ahead_[side] += copy.bytes.size();
  }

  void accumulate(size_t tap, const TensorView& ref, const TensorView& out) {
    if (ref.dtype != DType::kFloat32 || out.dtype != DType::kFloat32 || ref.shape != out.shape) return;
    const auto r = ref.floats();
    const auto q = out.floats();
    auto& [noise, signal] = power_[tap];
    for (size_t i = 0; i < r.size(); ++i) {
      const double d = static_cast<double>(q[i]) - r[i];
      noise += d * d;
      signal += static_cast<double>(r[i]) * r[i];
    }
    paired_[tap] = true;
  }

  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<Copy> pending_;
  std::vector<std::pair<double, double>> power_;  // noise, signal
  std::vector<bool> paired_;
  size_t ahead_[2] = {0, 0};  // bytes of copies each side left
  bool waiting_[2] = {false, false};
  bool done_[2] = {false, false};
};

}  // namespace

std::map<std::string, double> Workbench::tensor_noise(const QuantConfig& config,
                                                     const std::vector<std::string>& tensors) {
  evaluations_ += 2;
  last_session_.reset();  // two other sessions run here: not a third one's memory beside them
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
  if (names.empty()) return {};
  NoisePairs pairs(names.size());
  NoisePairs::Side reference_side(pairs, 0), quantized_side(pairs, 1);
  SessionOptions side_by_side = session_;
  side_by_side.spin_wait = false;
  const Session reference = Session::tapped(prepared_, label, names, reference_side, side_by_side);
  const Session quantized = Session::tapped(built, label, names, quantized_side, side_by_side);
  samples_->for_each([&](size_t, const NamedTensors& sample, const NamedTensors&) {
    pairs.start_sample();
    std::exception_ptr failure;
    std::thread reference_run([&] {
      try {
        reference.run_taps(sample);
      } catch (...) {
        failure = std::current_exception();
      }
      pairs.finish(0);
    });
    try {
      quantized.run_taps(sample);
    } catch (...) {
      pairs.finish(1);
      reference_run.join();
      throw;
    }
    pairs.finish(1);
    reference_run.join();
    if (failure) std::rethrow_exception(failure);
  });
  std::map<std::string, double> ratio;
  for (size_t t = 0; t < names.size(); ++t) {
    if (!pairs.paired(t)) continue;
    const auto& [noise, signal] = pairs.power(t);
    ratio[names[t]] = signal > 0 ? noise / signal : (noise > 0 ? 1.0 : 0.0);
  }
  return ratio;
}

onnx::ModelProto Workbench::build(const QuantConfig& config) {
  const std::string& label = setup_.model_path;
  const std::set<std::string> read = tensors_read(config, prepared_, label);
  if (add_missing_stats(calibration_graph(), setup_, stats_request(), {read.begin(), read.end()}, stats_)) {
    ranks_ = rank_table(prepared_, label, stats_);
  }
  const auto assignment = assign_layers(config, prepared_, label);
  QuantizeOptions options = quantize_options(config);
  const RewriteFn rewrite = [&](const onnx::ModelProto& model) {
    return quantize_model(model, assignment, stats_, options, label, rank_lookup(ranks_));
  };
  AlgorithmRecipe recipe = algorithm_recipe(config);
  last_recovery_ = {};
  std::string factors_key;
  if (recipe.scale_search) {
    // What the search depends on: the formats, the statistics' options and the algorithms that
    // run before it; not the per-layer choices, nor AdaRound / AdaQuant and bias correction after it.
    QuantConfig global = config;
    global.specific.clear();
    global.layer_types.clear();
    global.exclude = {};
    std::erase_if(global.algorithms, [](const AlgorithmEntry& a) {
      return a.name == "bias_correction" || reconstruction_method_names().from_name(a.name).has_value();
    });
    global.extra.bias_correction = false;
    global.extra.include_fast_ft = false;
    global.extra.fast_finetune = {};
    factors_key = config_to_json(global).dump();
    if (const auto known = range_factors_.find(factors_key); known != range_factors_.end()) {
      options.activation_range_factors = known->second;
      recipe.scale_search.reset();
    }
  }
  if (!recipe.scale_search && !recipe.reconstruction && !recipe.bias_correction) return rewrite(prepared_);
  // AdaRound / AdaQuant and bias correction on a copy, the learned weights kept in the store.
  if (!learned_) {
    if (setup_.work_dir.empty()) {
      learned_ = std::make_unique<LearnedWeightMemory>();
    } else {
      learned_ = std::make_unique<LearnedWeightDir>(std::filesystem::path(setup_.work_dir) / "learned_weights");
    }
  }
  onnx::ModelProto improved = prepared_;
  last_recovery_ = recover_accuracy(improved, rewrite, recipe, assignment, setup_,
                                    static_cast<size_t>(config.extra.num_calib_samples), session_, learned_.get(),
                                    options.activation_range_factors, label, &prepared_);
  if (last_recovery_.scale_search) range_factors_[factors_key] = options.activation_range_factors;
  return rewrite(improved);
}

Evaluation Workbench::evaluate(const QuantConfig& config) {
  const auto t0 = Clock::now();
  Evaluation e = evaluate_model(build(config));
  e.seconds = seconds_since(t0);
  if (const auto& r = last_recovery_.reconstruction) {
    e.reused_layers = r->reused;
    e.learned_layers = r->layers - r->reused;
  }
  return e;
}

Evaluation Workbench::evaluate_model(onnx::ModelProto model) {
  ++evaluations_;
  const auto t0 = Clock::now();
  Evaluation e;
  e.model = std::make_shared<const onnx::ModelProto>(std::move(model));  // moved: a large model is not copied
  // The graph of the previous evaluation again (a search revisiting a set, a preset evaluated
  // twice): its session is reused rather than built again. Only graphs small enough to keep
  // their bytes for the comparison; a larger one always gets a session of its own.
  std::string bytes;
  if (e.model->ByteSizeLong() <= kReusableSessionBytes) bytes = serialize_model(*e.model, setup_.model_path);
  if (!last_session_ || bytes.empty() || bytes != last_model_) {
    last_session_.reset();
    last_model_.clear();
    last_session_.emplace(Session::from_model(*e.model, setup_.model_path, session_));
    last_model_ = std::move(bytes);
  }
  const Session& session = *last_session_;
  ModelComparer comparer(setup_.criterion.tolerance);
  samples_->for_each([&](size_t, const NamedTensors& inputs, const NamedTensors& reference) {
    comparer.add(reference, session.run(inputs));
  });
  if (last_model_.empty()) last_session_.reset();  // a large model's session is not held beside the next model
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
