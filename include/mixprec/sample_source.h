// Sample sources: model inputs produced one sample at a time, so that every pass over the data
// (baseline, calibration, evaluation) streams and memory holds one sample, never the set.
//
// A source is validated when it is made (files exist, every model input present with the
// model's dtype and rank and matching static dims, no NaN/Inf), so bad data fails before any
// work starts, with the file and the problem in the message. sample(i) is deterministic.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "mixprec/input_spec.h"
#include "mixprec/tensor.h"

namespace mixprec {

class SampleSource {
 public:
  virtual ~SampleSource() = default;
  virtual size_t size() const = 0;
  virtual NamedTensors sample(size_t index) const = 0;
  // One line for reports: "12 samples from 3 files", "100 random samples (seed 7)".
  virtual std::string describe() const = 0;
  // True when the data is random (ranges from it can mislead calibration).
  virtual bool is_random() const { return false; }
};

// Files and folders of .npy/.npz. An .npz holds one array per model input (keys = input
// names); a bare .npy is accepted for single-input models. Folders expand to their .npy/.npz
// files in name order. When a model input has a static leading dim b and a file's array has
// k*b rows (k > 1), the file holds a batch and yields k samples.
std::unique_ptr<SampleSource> make_file_source(const std::vector<std::string>& paths,
                                               const std::vector<InputSpec>& inputs);

// `count` seeded random samples. Every input shape must be fully resolved (see resolve_shape).
std::unique_ptr<SampleSource> make_random_source(const std::vector<InputSpec>& inputs, size_t count, uint64_t seed);

}  // namespace mixprec

namespace mixprec {

// Where samples come from, as a user states it: files/folders, or `random_samples` seeded
// random samples. `input_shapes` pins dynamic dims ("x" → 1x3x48x192).
struct DataOptions {
  std::vector<std::string> files;
  size_t random_samples = 0;
  uint64_t seed = 0;
  std::map<std::string, Shape> input_shapes;
};

// The source for a model with `inputs`: files when given, else random (with a warning that
// random data is no substitute for real data where ranges matter). kBadInput when neither is
// given or a dynamic dim cannot be resolved.
std::unique_ptr<SampleSource> make_sample_source(const DataOptions& data, const std::vector<InputSpec>& inputs,
                                                 const std::string& model_path);

}  // namespace mixprec
