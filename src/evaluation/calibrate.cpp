#include <algorithm>
#include <atomic>
#include <functional>
#include <random>
#include <set>
#include <thread>

#include <onnx/shape_inference/implementation.h>

#include "mixprec/error.h"
#include "mixprec/evaluation.h"

namespace mixprec {
namespace {

// FNV-1a, 64 bit: a stable digest (std::hash is not stable across builds).
class Fnv1a {
 public:
  void add(const std::string& text) {
    for (unsigned char c : text) {
      hash_ ^= c;
      hash_ *= 0x100000001b3ull;
    }
    hash_ ^= 0xff;  // separator, so ("ab","c") and ("a","bc") differ
    hash_ *= 0x100000001b3ull;
  }
  std::string hex() const {
    static const char* digits = "0123456789abcdef";
    std::string out(16, '0');
    for (int i = 0; i < 16; ++i) out[static_cast<size_t>(15 - i)] = digits[(hash_ >> (4 * i)) & 0xf];
    return out;
  }

 private:
  uint64_t hash_ = 0xcbf29ce484222325ull;
};

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
  for (const auto& node : model.graph().node()) {
    digest.add(node.op_type());
    digest.add(node.name());
    for (const auto& in : node.input()) digest.add(in);
    for (const auto& out : node.output()) digest.add(out);
  }
  for (const auto& init : model.graph().initializer()) {
    digest.add(init.name());
    for (int64_t d : init.dims()) digest.add(std::to_string(d));
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

CalibrationStats calibrate_model(const onnx::ModelProto& prepared, const std::string& label,
                                 const SampleSource& source, const CalibrateOptions& options) {
  const Session session = Session::from_model(prepared, label, options.session, main_graph_tensors(prepared));
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
  std::map<std::string, StatsCollector> collectors;
  // Binning runs while ONNX Runtime is idle, spread over the cores: each tensor's collector is
  // updated by one thread per sample, in sample order, so the statistics do not depend on the
  // thread count.
  const size_t workers = std::max<size_t>(1, std::thread::hardware_concurrency());
  std::vector<std::pair<StatsCollector*, const Tensor*>> jobs;
  auto queue = [&](const NamedTensors& tensors) {
    for (const auto& [name, tensor] : tensors) {
      stats.ranks[name] = static_cast<int64_t>(tensor.shape().size());
      if (tensor.dtype() != DType::kFloat32) continue;  // shapes, indices, masks: nothing to calibrate
      jobs.emplace_back(&collectors[name], &tensor);
    }
  };
  for (size_t i = 0; i < total; ++i) {
    const NamedTensors inputs = source.sample(used[i]);
    const NamedTensors outputs = session.run(inputs);
    jobs.clear();
    queue(inputs);
    queue(outputs);
    std::atomic<size_t> next{0};
    const auto work = [&] {
      for (size_t j = next++; j < jobs.size(); j = next++) jobs[j].first->update(jobs[j].second->as<float>());
    };
    std::vector<std::thread> helpers;
    for (size_t w = 1; w < std::min(workers, jobs.size()); ++w) helpers.emplace_back(work);
    work();
    for (auto& helper : helpers) helper.join();
    if (options.progress) options.progress(i + 1, total);
  }
  stats.samples = total;
  for (auto& [name, collector] : collectors) stats.tensors.emplace(name, collector.stats());
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
    for (const auto& [name, tensor] : session.run(*sample)) ranks[name] = static_cast<int64_t>(tensor.shape().size());
  }
  return ranks;
}

}  // namespace mixprec
