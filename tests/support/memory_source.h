// Samples given in memory, for tests that need particular inputs (a branch condition, ...).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "mixprec/sample_source.h"

namespace mixprec::testing {

class MemorySamples : public SampleSource {
 public:
  explicit MemorySamples(std::vector<NamedTensors> samples) : samples_(std::move(samples)) {}
  size_t size() const override { return samples_.size(); }
  NamedTensors sample(size_t index) const override { return samples_.at(index); }
  std::string describe() const override { return std::to_string(samples_.size()) + " samples in memory"; }

 private:
  std::vector<NamedTensors> samples_;
};

}  // namespace mixprec::testing
