// output_error: the model-level loss of output_error.h.
#include "algorithms/output_error.h"

#include <algorithm>

namespace mixprec::algorithms {

OutputReference::OutputReference(const Session& floats, const SampleSource& source, const std::vector<size_t>& indices) {
  for (size_t index : indices) {
    inputs_.push_back(source.sample(index));
    wanted_.push_back(floats.run(inputs_.back()));
  }
  for (size_t s = 0; s < wanted_.size(); ++s) {
    std::vector<double>& half = energy_[s % 2];
    half.resize(wanted_[s].size(), 0.0);
    for (size_t o = 0; o < wanted_[s].size(); ++o) {
      if (wanted_[s][o].second.dtype() != DType::kFloat32) continue;
      for (float v : wanted_[s][o].second.as<float>()) half[o] += static_cast<double>(v) * v;
    }
  }
  energy_[1].resize(energy_[0].size(), 0.0);
}

bool OutputReference::comparable() const {
  return !wanted_.empty() && std::ranges::any_of(wanted_.front(), [](const auto& output) {
    return output.second.dtype() == DType::kFloat32;
  });
}

OutputLoss OutputReference::loss(const Session& session, const std::function<void(NamedTensors& feed)>& extend) const {
  const size_t outputs = energy_[0].size();
  std::array<std::vector<double>, 2> error{std::vector<double>(outputs, 0.0), std::vector<double>(outputs, 0.0)};
  for (size_t s = 0; s < inputs_.size(); ++s) {
    NamedTensors feed = inputs_[s];
    if (extend) extend(feed);
    const NamedTensors got = session.run(feed);
    const NamedTensors& wanted = wanted_[s];
    for (size_t o = 0; o < got.size() && o < wanted.size(); ++o) {
      if (wanted[o].second.dtype() != DType::kFloat32 || got[o].second.dtype() != DType::kFloat32) continue;
      const auto a = got[o].second.as<float>();
      const auto b = wanted[o].second.as<float>();
      for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
        const double d = static_cast<double>(a[i]) - b[i];
        error[s % 2][o] += d * d;
      }
    }
  }
  const auto ratio = [](double e, double p) { return p > 0 ? e / p : e; };
  OutputLoss out;
  for (size_t o = 0; o < outputs; ++o) {
    out.total += ratio(error[0][o] + error[1][o], energy_[0][o] + energy_[1][o]);
    for (size_t h = 0; h < 2; ++h) out.half[h] += ratio(error[h][o], energy_[h][o]);
  }
  return out;
}

}  // namespace mixprec::algorithms
