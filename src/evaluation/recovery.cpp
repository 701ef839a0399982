// recover_accuracy and the learned-weights stores (evaluation/recovery.h).
#include "evaluation/recovery.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "common/text.h"
#include "mixprec/log.h"

namespace mixprec {
namespace {

namespace fs = std::filesystem;

constexpr char kMagic[] = "mixprec-learned-weights-1";

// What names the samples in a store's key: the source's description, the files and how they
// are read.
std::string data_identity(const DataSpec& data, const SampleSource& source) {
  std::ostringstream out;
  out << source.describe() << "\n" << data.preprocess << " " << data.image_height << "x" << data.image_width << " seed "
      << data.data.seed << " random " << data.data.random_samples << "\n"
      << text::join(data.data.files, "\n");
  for (const auto& [name, shape] : data.data.input_shapes) {
    out << "\n" << name << ":" << text::join_each(shape, [](int64_t d) { return std::to_string(d); }, "x");
  }
  return out.str();
}

}  // namespace

RecoveryRun recover_accuracy(onnx::ModelProto& prepared, const RewriteFn& rewrite, const AlgorithmRecipe& recipe,
                             const std::vector<NodeAssignment>& assignment, const EvaluationSetup& setup,
                             size_t calibration_samples, const SessionOptions& session, LearnedWeightStore* store,
                             std::map<std::string, float>& range_factors, const std::string& label,
                             const onnx::ModelProto* untouched) {
  RecoveryRun run;
  if (!recipe.scale_search && !recipe.reconstruction && !recipe.bias_correction) return run;
  const DataSpec data = calibration_data(setup, calibration_samples);
  const auto source = [&] {
    const Session probe = Session::from_model(prepared, label, session);
    return open_samples(data, probe.inputs(), label);
  }();
  const std::vector<size_t> subset = spread_subset(source->size(), calibration_samples, data.data.seed);
  if (recipe.scale_search) {
    const size_t wanted = std::min(subset.size(), static_cast<size_t>(recipe.scale_search->samples));
    std::vector<size_t> chosen;
    std::vector<bool> taken(subset.size(), false);
    for (size_t i : spread_subset(subset.size(), wanted, data.data.seed)) {
      chosen.push_back(subset[i]);
      taken[i] = true;
    }
    // As many others of the calibration samples judge the shifts (fewer when there are not).
    std::vector<size_t> others;
    for (size_t i = 0; i < subset.size(); ++i) {
      if (!taken[i]) others.push_back(subset[i]);
    }
    std::vector<size_t> validation;
    for (size_t i : spread_subset(others.size(), std::min(others.size(), wanted), data.data.seed)) {
      validation.push_back(others[i]);
    }
    run.scale_search = search_activation_scales(rewrite(prepared), prepared, *source, *recipe.scale_search,
                                                {.session = session,
                                                 .samples = chosen,
                                                 .validation = validation,
                                                 .progress = setup.progress,
                                                 .rebuild =
                                                     [&](const std::map<std::string, int>& shifts) {
                                                       range_factors.clear();
                                                       for (const auto& [tensor, n] : shifts) {
                                                         range_factors[tensor] = std::ldexp(1.0f, n);
                                                       }
                                                       return rewrite(prepared);
                                                     }},
                                                label);
    range_factors.clear();  // what was kept, which a rejected search leaves empty
    for (const auto& [tensor, n] : run.scale_search->shifts) range_factors[tensor] = std::ldexp(1.0f, n);
    run.changed = !run.scale_search->shifts.empty();
  }
  // Bias correction (model) aims at the float model, not at AdaRound's learned weights
  // (BiasCorrectionOptions::reference): the caller's untouched copy, else one made here.
  std::optional<onnx::ModelProto> before_reconstruction;
  const bool needs_reference = recipe.reconstruction && recipe.bias_correction == BiasCorrectionMode::kModel;
  if (needs_reference && !untouched) before_reconstruction = prepared;
  const onnx::ModelProto* reference = !needs_reference ? nullptr : untouched ? untouched : &*before_reconstruction;
  if (recipe.reconstruction) {
    run.reconstruction = reconstruct_layers(prepared, rewrite, *source, *recipe.reconstruction,
                                            {.session = session,
                                             .samples = subset,
                                             .assignment = &assignment,
                                             .progress = setup.progress,
                                             .store = store,
                                             .data = store ? data_identity(data, *source) : std::string()},
                                            label);
    run.changed = run.changed || run.reconstruction->layers > 0;
  }
  if (recipe.bias_correction) {
    run.bias_correction =
        correct_bias(prepared, rewrite, *source,
                     {.mode = *recipe.bias_correction,
                      .session = session,
                      .samples = subset,
                      .store = store,
                      .data = store ? data_identity(data, *source) : std::string(),
                      .reference = reference},
                     label);
    run.changed = run.changed || run.bias_correction->layers > 0;
  }
  return run;
}

std::optional<LearnedLayer> LearnedWeightDir::find(const std::string& key) {
  const fs::path path = dir_ / (key + ".f32");
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string magic;
  size_t count = 0;
  LearnedLayer layer;
  in >> magic >> count >> layer.loss_nearest >> layer.loss_learned >> layer.changed;
  bool header = in && magic == kMagic && in.get() == '\n';
  if (header) {  // exactly `count` floats follow: the size is checked before anything is allocated
    const std::streampos body = in.tellg();
    in.seekg(0, std::ios::end);
    header = in && static_cast<uint64_t>(in.tellg() - body) == uint64_t{count} * sizeof(float);
    in.seekg(body);
  }
  if (header) {
    layer.weights.resize(count);
    in.read(reinterpret_cast<char*>(layer.weights.data()), static_cast<std::streamsize>(count * sizeof(float)));
  }
  if (!header || !in || in.peek() != std::char_traits<char>::eof()) {
    log_warning(path.string() + ": not a whole learned-weights file; the layer is learned again");
    return std::nullopt;
  }
  return layer;
}

void LearnedWeightDir::store(const std::string& key, const LearnedLayer& layer) {
  const fs::path path = dir_ / (key + ".f32");
  const fs::path partial = dir_ / (key + ".f32.partial");
  std::error_code error;
  fs::create_directories(dir_, error);
  {
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    out.precision(17);
    out << kMagic << " " << layer.weights.size() << " " << layer.loss_nearest << " " << layer.loss_learned << " "
        << layer.changed << "\n";
    out.write(reinterpret_cast<const char*>(layer.weights.data()),
              static_cast<std::streamsize>(layer.weights.size() * sizeof(float)));
    if (!out) error = std::make_error_code(std::errc::io_error);
  }
  if (!error) fs::rename(partial, path, error);  // whole or absent: a reader never sees half a file
  if (error) {
    fs::remove(partial, error);
    if (!warned_write_) log_warning(dir_.string() + ": cannot keep learned weights there; they are learned again next time");
    warned_write_ = true;
  }
}

std::optional<LearnedLayer> LearnedWeightMemory::find(const std::string& key) {
  const auto it = layers_.find(key);
  if (it == layers_.end()) return std::nullopt;
  return it->second;
}

}  // namespace mixprec
