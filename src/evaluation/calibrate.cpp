#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include <onnx/shape_inference/implementation.h>

#include "common/digest.h"
#include "ir/graph_view.h"
#include "mixprec/error.h"
#include "mixprec/evaluation.h"
#include "mixprec/log.h"

namespace mixprec {
namespace {

// Every tensor an If/Loop/Scan body defines (its inputs, its nodes' outputs), recursively, in
// body order, with the path of that body (ir::GraphView::scope_name: "If_0.else_branch").
std::vector<std::pair<std::string, std::string>> body_tensors(const onnx::ModelProto& model, const std::string& label) {
  const ir::GraphView view(model.graph(), label);
  std::vector<std::pair<std::string, std::string>> tensors;
  const std::function<void(const ir::GraphView&)> visit = [&](const ir::GraphView& graph) {
    for (size_t index = 0; index < graph.node_count(); ++index) {
      for (const ir::GraphView* body : graph.subgraphs(index)) {
        for (const auto& input : body->graph().input()) tensors.emplace_back(input.name(), body->scope_name());
        for (const auto& node : body->graph().node()) {
          for (const auto& out : node.output()) {
            if (!out.empty()) tensors.emplace_back(out, body->scope_name());
          }
        }
        visit(*body);
      }
    }
  };
  visit(view);
  return tensors;
}

// Bodies none of whose tapped tensors was computed on any sample (a branch no sample took, a
// loop that never iterated), outermost only: a warning each, naming the samples.
void warn_about_bodies_never_run(const std::map<std::string, std::string>& scope_of,
                                 const std::vector<std::string>& tensors, const std::vector<bool>& computed,
                                 const std::string& data, const std::string& label) {
  std::map<std::string, std::pair<size_t, bool>> bodies;  // path -> (tapped tensors, any computed)
  for (size_t t = 0; t < tensors.size(); ++t) {
    const auto it = scope_of.find(tensors[t]);
    if (it == scope_of.end()) continue;
    auto& [count, ran] = bodies[it->second];
    ++count;
    ran = ran || computed[t];
  }
  std::string reported;  // the last body warned about: its nested bodies are not repeated
  for (const auto& [path, entry] : bodies) {
    if (entry.second || (!reported.empty() && path.starts_with(reported + "/"))) continue;
    reported = path;
    log_warning(label + ": calibration: " + path + " never ran on " + data + " (" + std::to_string(entry.first) +
                " of its tensors have no statistics): its nodes stay float unless the config gives them a float "
                "format (BF16/FP16); give calibration data that takes this branch to quantize them");
  }
}

std::vector<std::string> main_graph_tensors(const onnx::ModelProto& model) {
  std::vector<std::string> names;
  for (const auto& node : model.graph().node()) {
    for (const auto& out : node.output()) {
      if (!out.empty()) names.push_back(out);
    }
  }
  return names;
}

}  // namespace

std::string model_fingerprint(const onnx::ModelProto& model) {
  Fnv1a digest;
  // Bodies follow their owner's attributes (a model without If/Loop/Scan digests as before).
  const std::function<void(const onnx::GraphProto&)> add_graph = [&](const onnx::GraphProto& graph) {
    for (const auto& node : graph.node()) {
      digest.add(node.op_type());
      digest.add(node.name());
      for (const auto& in : node.input()) digest.add(in);
      for (const auto& out : node.output()) digest.add(out);
      for (const auto& attribute : node.attribute()) {
        if (attribute.has_g()) add_graph(attribute.g());
        for (const auto& body : attribute.graphs()) add_graph(body);
      }
    }
  };
  add_graph(model.graph());
  for (const auto& init : model.graph().initializer()) {
    digest.add(init.name());
    for (int64_t d : init.dims()) digest.add(std::to_string(d));
  }
  // Marks the preparation leaves when it changes values but not structure (algorithms/: CLE).
  for (const auto& prop : model.metadata_props()) {
    if (prop.key().starts_with("mixprec.")) {
      digest.add(prop.key());
      digest.add(prop.value());
    }
  }
  return digest.hex();
}

std::vector<size_t> spread_subset(size_t total, size_t count, uint64_t seed) {
  std::vector<size_t> indices;
  if (count >= total) {
    for (size_t i = 0; i < total; ++i) indices.push_back(i);
    return indices;
  }
  // mt19937_64's output sequence is fixed by the standard, so the subset is the same on every
  // platform; the draw within a stratum uses the raw 64-bit output (distributions are not).
  std::mt19937_64 rng(seed);
  for (size_t k = 0; k < count; ++k) {
    const size_t begin = k * total / count;
    const size_t end = (k + 1) * total / count;  // > begin, since count < total
    indices.push_back(begin + static_cast<size_t>(rng() % (end - begin)));
  }
  return indices;
}

namespace {

// Receives the tapped tensors of the calibration session and bins them on worker threads while
// ONNX Runtime goes on with the run (and with the next sample's run): each float tensor is
// copied into a pooled buffer and queued. At most kQueueBytes of copies wait (more only when
// one tensor is larger); past that, the run's thread bins queued work itself until there is room.
// Binning is exact and independent of order and batching (mixprec/calibration.h), and each
// tensor's collector takes one sample at a time, so the statistics do not depend on the thread
// count or on which thread bins what.
class Binner : public TapSink {
 public:
  Binner(const std::vector<std::string>& tensors, size_t workers)
      : collectors_(tensors.size()), seen_(tensors.size(), false), ranks_(tensors.size(), -1),
        first_shapes_(tensors.size()),
        locks_(std::make_unique<std::mutex[]>(tensors.size())) {
    for (size_t w = 0; w < workers; ++w) threads_.emplace_back([this] { work(); });
  }
  ~Binner() override {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (auto& thread : threads_) thread.join();
  }

  void observe(size_t tap, const TensorView& tensor) override {
    ranks_[tap] = static_cast<int64_t>(tensor.shape.size());
    if (tensor.dtype != DType::kFloat32) return;  // shapes, indices, masks: nothing to calibrate
    if (!seen_[tap]) first_shapes_[tap] = tensor.shape;
    seen_[tap] = true;
    const size_t count = tensor.bytes / sizeof(float);
    {
      std::unique_lock lock(mutex_);
      if (!queue_.empty() && queued_bytes_ + tensor.bytes > kQueueBytes) {
        // The workers are behind: bin this one here, straight from ONNX Runtime's buffer.
        lock.unlock();
        std::lock_guard collector(locks_[tap]);
        collectors_[tap].update(tensor.floats());
        return;
      }
    }
    Job job{tap, take_buffer(count), count};
    std::memcpy(job.buffer.data.get(), tensor.data, tensor.bytes);
    {
      std::lock_guard lock(mutex_);
      queued_bytes_ += tensor.bytes;
      queue_.push_back(std::move(job));
    }
    wake_.notify_one();
  }

  // Waits until every queued tensor is binned.
  void drain() {
    std::unique_lock lock(mutex_);
    idle_.wait(lock, [&] { return queue_.empty() && busy_ == 0; });
  }

  bool seen(size_t tap) const { return seen_[tap]; }
  const std::vector<int64_t>& first_shape(size_t tap) const { return first_shapes_[tap]; }
  int64_t rank(size_t tap) const { return ranks_[tap]; }
  const TensorStats& stats(size_t tap) const { return collectors_[tap].stats(); }

 private:
  static constexpr size_t kQueueBytes = size_t{64} << 20;
  static constexpr int kWorkerNice = 5;

  struct Buffer {
    std::unique_ptr<float[]> data;
    size_t capacity = 0;
  };
  struct Job {
    size_t tap = 0;
    Buffer buffer;
    size_t count = 0;
  };

  Buffer take_buffer(size_t count) {
    {
      std::lock_guard lock(mutex_);
      // The smallest pooled buffer that holds `count` values.
      auto best = free_.end();
      for (auto it = free_.begin(); it != free_.end(); ++it) {
        if (it->capacity >= count && (best == free_.end() || it->capacity < best->capacity)) best = it;
      }
      if (best != free_.end()) {
        Buffer buffer = std::move(*best);
        free_.erase(best);
        return buffer;
      }
    }
    return {std::unique_ptr<float[]>(new float[std::max<size_t>(count, 1)]), std::max<size_t>(count, 1)};
  }

  void bin(Job& job) {
    {
      std::lock_guard lock(locks_[job.tap]);
      collectors_[job.tap].update({job.buffer.data.get(), job.count});
    }
    std::lock_guard lock(mutex_);
    // Pooled buffers stay within the queue's bound (plus the largest tensor).
    size_t pooled = 0;
    for (const auto& b : free_) pooled += b.capacity * sizeof(float);
    if (pooled + job.buffer.capacity * sizeof(float) <= 2 * kQueueBytes || free_.empty()) {
      free_.push_back(std::move(job.buffer));
    }
  }

  void work() {
    // Below the run's threads: binning takes the cores when ONNX Runtime leaves them idle.
    ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), kWorkerNice);
    std::unique_lock lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping
      Job job = std::move(queue_.front());
      queue_.pop_front();
      queued_bytes_ -= job.count * sizeof(float);
      ++busy_;
      lock.unlock();
      bin(job);
      lock.lock();
      --busy_;
      if (queue_.empty() && busy_ == 0) idle_.notify_all();
    }
  }

  std::vector<StatsCollector> collectors_;
  std::vector<bool> seen_;  // written by the run's thread only
  std::vector<int64_t> ranks_;
  std::vector<std::vector<int64_t>> first_shapes_;  // float tensors, the first sample's
  std::unique_ptr<std::mutex[]> locks_;  // one per collector
  std::mutex mutex_;
  std::condition_variable wake_, idle_;
  std::deque<Job> queue_;
  std::vector<Buffer> free_;
  size_t queued_bytes_ = 0;
  size_t busy_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace

CalibrationStats calibrate_model(const onnx::ModelProto& prepared, const std::string& label,
                                 const SampleSource& source, const CalibrateOptions& options) {
  // Every If/Loop/Scan body's tensors with the body defining each: tapped by default, and the
  // scopes of the never-ran warning and body_shapes.
  const std::vector<std::pair<std::string, std::string>> bodies = body_tensors(prepared, label);
  std::vector<std::string> tensors = options.tensors;
  if (tensors.empty()) {
    for (const auto& input : prepared.graph().input()) tensors.push_back(input.name());
    std::erase_if(tensors, [&](const std::string& name) {
      return std::any_of(prepared.graph().initializer().begin(), prepared.graph().initializer().end(),
                         [&](const auto& init) { return init.name() == name; });
    });
    const auto outputs = main_graph_tensors(prepared);
    tensors.insert(tensors.end(), outputs.begin(), outputs.end());
    for (const auto& [name, scope] : bodies) tensors.push_back(name);
  }
  const size_t available = source.size();
  const std::vector<size_t> used =
      spread_subset(available, options.max_samples ? options.max_samples : available, options.seed);
  const size_t total = used.size();
  if (total == 0) throw_bad_input(label, "no calibration samples");

  CalibrationStats stats;
  stats.model_fingerprint = model_fingerprint(prepared);
  stats.data_description = total == available ? source.describe()
                                               : std::to_string(total) + " of " + source.describe() +
                                                     " (seeded, evenly spread; NumCalibSamples " +
                                                     std::to_string(options.max_samples) + ")";
  // One binning thread per core beside the run's own (ONNX Runtime's threads wait for work
  // between kernels; the binning fills those gaps and the time after the last kernel).
  const size_t workers = options.binning_threads ? options.binning_threads
                                                 : std::max<size_t>(1, std::thread::hardware_concurrency());
  {
    Binner binner(tensors, workers);
    SessionOptions session_options = options.session;
    session_options.spin_wait = false;  // idle runtime threads leave the cores to the binning
    const Session session = Session::tapped(prepared, label, tensors, binner, session_options);
    for (size_t i = 0; i < total; ++i) {
      session.run_taps(source.sample(used[i]));
      if (options.progress) options.progress(i + 1, total);
    }
    binner.drain();
    std::vector<bool> computed(tensors.size());
    for (size_t t = 0; t < tensors.size(); ++t) {
      computed[t] = binner.rank(t) >= 0;
      if (binner.rank(t) >= 0) stats.ranks[tensors[t]] = binner.rank(t);
      if (binner.seen(t)) stats.tensors.emplace(tensors[t], binner.stats(t));
    }
    const std::map<std::string, std::string> scope_of(bodies.begin(), bodies.end());  // tensor -> its body
    for (size_t t = 0; t < tensors.size(); ++t) {
      if (binner.seen(t) && scope_of.contains(tensors[t])) stats.body_shapes[tensors[t]] = binner.first_shape(t);
    }
    warn_about_bodies_never_run(scope_of, tensors, computed, "the " + std::to_string(total) + " calibration samples (" +
                                stats.data_description + ")", label);
  }
  stats.samples = total;
  return stats;
}

std::map<std::string, int64_t> infer_tensor_ranks(const onnx::ModelProto& model, const std::string& label,
                                                  const NamedTensors* sample) {
  std::map<std::string, int64_t> ranks;
  // ONNX's own shape inference knows ranks through symbolic dims where ONNX Runtime's session
  // metadata does not; its schemas stop at opset 17, so node-level failures are tolerated
  // (error_mode 0) and whatever it could infer is used.
  try {
    onnx::ModelProto copy = model;
    onnx::shape_inference::InferShapes(copy, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(false, 0, true));
    for (const auto* infos : {&copy.graph().value_info(), &copy.graph().output(), &copy.graph().input()}) {
      for (const auto& vi : *infos) {
        if (vi.type().has_tensor_type() && vi.type().tensor_type().has_shape()) {
          ranks[vi.name()] = vi.type().tensor_type().shape().dim_size();
        }
      }
    }
  } catch (const std::exception&) {
    // Inference is a best effort here; ONNX Runtime's view below still applies.
  }
  const Session session =
      Session::from_model(model, label, {.optimization = GraphOptimization::kDisabled}, main_graph_tensors(model));
  // ONNX Runtime reports an unknown shape as rank 0, so rank 0 stays "unknown" here.
  for (const auto* specs : {&session.outputs(), &session.inputs()}) {
    for (const auto& spec : *specs) {
      if (!spec.shape.empty()) ranks[spec.name] = static_cast<int64_t>(spec.shape.size());
    }
  }
  if (sample) {
    // One run with every tensor tapped (nothing copied out): the ranks of what it computes.
    const auto seen = observe_tensors(model, label, main_graph_tensors(model), *sample,
                                      {.optimization = GraphOptimization::kDisabled});
    for (const auto& [name, tensor] : seen) ranks[name] = static_cast<int64_t>(tensor.shape.size());
  }
  return ranks;
}

}  // namespace mixprec
