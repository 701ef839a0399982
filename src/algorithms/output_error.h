// The model's output error against the float model's, on a fixed set of samples: the yardstick
// of the algorithms that judge a change by what the whole model computes (scale_search.cpp's
// coordinate descent, layer_reconstruction.cpp's selective_update).
//
// The loss: per float output of the model, the error power sum (q - f)^2 over the float output's
// power sum f^2 (1 / SQNR: outputs of any magnitude weigh alike), summed over the outputs; of
// all samples, and of each half (even and odd samples) alone. Outputs that are not float
// (indices, masks) are not compared. The samples and the float outputs are taken once.
#pragma once

#include <array>
#include <cstddef>
#include <functional>
#include <vector>

#include "mixprec/runtime.h"
#include "mixprec/sample_source.h"

namespace mixprec::algorithms {

struct OutputLoss {
  double total = 0;
  std::array<double, 2> half{};  // even samples, odd samples

  // Lower in total and higher on neither half: a change that only some samples like is not
  // better.
  bool better_than(const OutputLoss& other) const {
    return total < other.total && half[0] <= other.half[0] && half[1] <= other.half[1];
  }
};

class OutputReference {
 public:
  // `floats` runs the float model; `indices` of `source` are the samples.
  OutputReference(const Session& floats, const SampleSource& source, const std::vector<size_t>& indices);

  // `session`'s loss on the samples. `extend` may add inputs to each sample's feed first (the
  // session's extra graph inputs).
  OutputLoss loss(const Session& session, const std::function<void(NamedTensors& feed)>& extend = {}) const;

  size_t samples() const { return inputs_.size(); }
  // Whether the model has a float output to compare.
  bool comparable() const;

 private:
  std::vector<NamedTensors> inputs_;
  std::vector<NamedTensors> wanted_;
  std::array<std::vector<double>, 2> energy_;  // per half, per output
};

}  // namespace mixprec::algorithms
