#include "mixprec/sample_source.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>

#include "common/text.h"
#include "mixprec/error.h"
#include "mixprec/npy.h"
#include "mixprec/random_data.h"
#include "tensor/data_paths.h"

namespace mixprec {
namespace fs = std::filesystem;
namespace {

std::string input_names(const std::vector<InputSpec>& inputs) {
  return text::join_each(inputs, [](const InputSpec& in) { return in.name; });
}

// Reads one file and orders its arrays as the model inputs.
NamedTensors read_file(const std::string& file, const std::vector<InputSpec>& inputs) {
  NamedTensors members;
  if (fs::path(file).extension() == ".npy") {
    if (inputs.size() != 1) {
      throw_bad_input(file, "a bare .npy feeds one input, the model has " + std::to_string(inputs.size()) + " (" +
                                input_names(inputs) + "): use an .npz keyed by input name");
    }
    members.emplace_back(inputs[0].name, read_npy(file));
    return members;
  }
  NamedTensors stored = read_npz(file);
  for (const auto& spec : inputs) {
    auto it = std::find_if(stored.begin(), stored.end(), [&](const auto& m) { return m.first == spec.name; });
    if (it == stored.end()) throw_bad_input(file, "no array for model input '" + spec.name + "'");
    members.emplace_back(spec.name, std::move(it->second));
  }
  for (const auto& [key, _] : stored) {
    if (std::none_of(inputs.begin(), inputs.end(), [&](const auto& s) { return s.name == key; })) {
      throw_bad_input(file, "array '" + key + "' is not a model input (inputs: " + input_names(inputs) + ")");
    }
  }
  return members;
}

void check_finite(const std::string& file, const std::string& name, const Tensor& tensor) {
  if (!dtype_traits(tensor.dtype()).is_float) return;
  const std::vector<float> values = tensor.to_floats();
  for (size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) {
      throw_bad_input(file, "input '" + name + "' has " + (std::isnan(values[i]) ? "NaN" : "Inf") + " at element " +
                                std::to_string(i));
    }
  }
}

// Number of samples the file holds for the model (1, or k when it is a batch of k).
size_t validate(const std::string& file, const NamedTensors& members, const std::vector<InputSpec>& inputs) {
  std::optional<size_t> batches;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const InputSpec& spec = inputs[i];
    const Tensor& tensor = members[i].second;
    if (tensor.dtype() != spec.dtype) {
      throw_bad_input(file, "input '" + spec.name + "' is " + dtype_name(tensor.dtype()) + ", the model wants " +
                                dtype_name(spec.dtype));
    }
    const Shape& got = tensor.shape();
    const auto mismatch = [&] {
      throw_bad_input(file, "input '" + spec.name + "' has shape " + shape_to_string(got) + ", the model wants " +
                                shape_to_string(spec.shape));
    };
    if (got.size() != spec.shape.size()) mismatch();
    // A batch of none is the file's fault, not the model's: say so before anything runs.
    if (!got.empty() && got[0] == 0) {
      throw_bad_input(file, "input '" + spec.name + "' holds no samples (shape " + shape_to_string(got) + ")");
    }
    size_t k = 1;
    for (size_t d = 0; d < got.size(); ++d) {
      if (spec.shape[d] < 0 || spec.shape[d] == got[d]) continue;
      const bool batch_of_k = d == 0 && spec.shape[0] > 0 && got[0] % spec.shape[0] == 0;
      if (!batch_of_k) mismatch();
      k = static_cast<size_t>(got[0] / spec.shape[0]);
    }
    if (batches && *batches != k) {
      throw_bad_input(file, "inputs disagree on the number of samples along axis 0");
    }
    batches = k;
    check_finite(file, spec.name, tensor);
  }
  return batches.value_or(1);
}

Tensor slice_rows(const Tensor& tensor, int64_t first, int64_t rows) {
  Shape shape = tensor.shape();
  const size_t row_bytes = tensor.byte_size() / static_cast<size_t>(shape[0]);
  shape[0] = rows;
  return Tensor(tensor.dtype(), shape,
                std::span<const std::byte>(tensor.data() + static_cast<size_t>(first) * row_bytes,
                                           static_cast<size_t>(rows) * row_bytes));
}

class FileSource : public SampleSource {
 public:
  FileSource(const std::vector<std::string>& paths, std::vector<InputSpec> inputs) : inputs_(std::move(inputs)) {
    files_ = data_paths::expand(paths, data_paths::kArrayExtensions, "arrays");
    for (size_t f = 0; f < files_.size(); ++f) {
      const size_t k = validate(files_[f], read_file(files_[f], inputs_), inputs_);
      for (size_t part = 0; part < k; ++part) index_.push_back({f, part, k});
    }
  }

  size_t size() const override { return index_.size(); }

  NamedTensors sample(size_t index) const override {
    const Entry& entry = index_.at(index);
    if (cached_file_ != entry.file) {
      cached_ = read_file(files_[entry.file], inputs_);
      cached_file_ = entry.file;
    }
    if (entry.parts == 1) return cached_;
    NamedTensors out;
    for (size_t i = 0; i < inputs_.size(); ++i) {
      const int64_t rows = inputs_[i].shape[0];
      out.emplace_back(inputs_[i].name, slice_rows(cached_[i].second, static_cast<int64_t>(entry.part) * rows, rows));
    }
    return out;
  }

  std::string describe() const override {
    return std::to_string(index_.size()) + " samples from " + std::to_string(files_.size()) + " file" +
           (files_.size() == 1 ? "" : "s");
  }

 private:
  struct Entry {
    size_t file;
    size_t part;
    size_t parts;
  };
  std::vector<InputSpec> inputs_;
  std::vector<std::string> files_;
  std::vector<Entry> index_;
  // The last file read: consecutive samples of one batch file are read once. Not thread-safe.
  mutable NamedTensors cached_;
  mutable size_t cached_file_ = SIZE_MAX;
};

// splitmix64 finaliser: independent seeds for (seed, sample, input) triples.
uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

class RandomSource : public SampleSource {
 public:
  RandomSource(std::vector<InputSpec> inputs, size_t count, uint64_t seed)
      : inputs_(std::move(inputs)), count_(count), seed_(seed) {
    for (const auto& spec : inputs_) {
      for (int64_t d : spec.shape) {
        if (d < 0) {
          throw Error(ErrorKind::kInternal, "", "random source for '" + spec.name + "' needs a resolved shape");
        }
      }
    }
  }
  size_t size() const override { return count_; }
  NamedTensors sample(size_t index) const override {
    NamedTensors out;
    for (size_t i = 0; i < inputs_.size(); ++i) {
      const uint64_t seed = mix(mix(seed_ ^ mix(index)) ^ i);
      out.emplace_back(inputs_[i].name, random_tensor(inputs_[i].dtype, inputs_[i].shape, seed));
    }
    return out;
  }
  std::string describe() const override {
    return std::to_string(count_) + " random samples (seed " + std::to_string(seed_) + ")";
  }
  bool is_random() const override { return true; }

 private:
  std::vector<InputSpec> inputs_;
  size_t count_;
  uint64_t seed_;
};

}  // namespace

std::unique_ptr<SampleSource> make_file_source(const std::vector<std::string>& paths,
                                               const std::vector<InputSpec>& inputs) {
  if (paths.empty()) throw_bad_input("", "no data files given");
  return std::make_unique<FileSource>(paths, inputs);
}

std::unique_ptr<SampleSource> make_random_source(const std::vector<InputSpec>& inputs, size_t count, uint64_t seed) {
  return std::make_unique<RandomSource>(inputs, count, seed);
}

}  // namespace mixprec

namespace mixprec {

std::unique_ptr<SampleSource> make_sample_source(const DataOptions& data, const std::vector<InputSpec>& inputs,
                                                 const std::string& model_path) {
  for (const auto& [name, _] : data.input_shapes) {
    if (std::none_of(inputs.begin(), inputs.end(), [&](const auto& s) { return s.name == name; })) {
      throw_bad_input(model_path, "--input-shape names '" + name + "', which is not a model input");
    }
  }
  std::vector<InputSpec> resolved = inputs;
  if (!data.files.empty()) {
    // Overrides narrow what files may hold; remaining dynamic dims are taken from the data.
    for (auto& spec : resolved) {
      if (data.input_shapes.count(spec.name)) spec.shape = resolve_shape(spec, data.input_shapes, model_path);
    }
    return make_file_source(data.files, resolved);
  }
  if (data.random_samples == 0) {
    throw_bad_input(model_path, "no input data: give data files or a number of random samples");
  }
  for (auto& spec : resolved) spec.shape = resolve_shape(spec, data.input_shapes, model_path);
  return make_random_source(resolved, data.random_samples, data.seed);
}

}  // namespace mixprec
