// adaround: adaptive rounding (Nagel et al. 2020, "Up or Down? Adaptive Rounding for
// Post-Training Quantization") as the RoundingModel of layer_reconstruction.cpp.
//
//   Before:  prepared:  x → Conv/ConvT/Gemm/MatMul(W) → y;   the rewrite stores round(W / s) + z
//   After:   prepared:  x → Conv/ConvT/Gemm/MatMul(W') → y,  W' = s (floor(W / s) + z + b - z),
//            b in {0, 1} per weight learned to minimise ||W_q X - W X||^2 on the layer's
//            quantized input X, so every code is within one step of nearest rounding.
//
// Soft codes floor(W / s) + z + h(V), h(V) = clip(sigmoid(V) (zeta - gamma) + gamma, 0, 1)
// with zeta = 1.1, gamma = -0.1 (the rectified sigmoid: h reaches 0 and 1 exactly), V
// initialised so that h(V) = frac(W / s) (the soft codes start at W / s itself). After
// warm_start of the steps the loss adds reg_param * sum(1 - |2h - 1|^beta), beta falling
// linearly from beta_start to beta_end, which drives every h to 0 or 1. The final code is
// floor(W / s) + z + (h >= 0.5), clamped to the grid.
#include <algorithm>
#include <cmath>

#include "algorithms/layer_reconstruction.h"

namespace mixprec::algorithms {
namespace {

constexpr float kZeta = 1.1f;
constexpr float kGamma = -0.1f;

float sigmoid(float v) { return 1.0f / (1.0f + std::exp(-v)); }

float rectified(float v) { return std::clamp(sigmoid(v) * (kZeta - kGamma) + kGamma, 0.0f, 1.0f); }

// dh/dV: 0 where the clip is active.
float rectified_slope(float v) {
  const float s = sigmoid(v);
  const float h = s * (kZeta - kGamma) + kGamma;
  return h > 0.0f && h < 1.0f ? s * (1.0f - s) * (kZeta - kGamma) : 0.0f;
}

class AdaRound final : public RoundingModel {
 public:
  explicit AdaRound(const ReconstructionSettings& settings) : settings_(settings) {}

  Matrix initial(const GroupProblem& g) const override {
    Matrix v(g.weight.rows(), g.weight.cols());
    for (Eigen::Index r = 0; r < v.rows(); ++r) {
      for (Eigen::Index c = 0; c < v.cols(); ++c) {
        const float x = g.weight(r, c) / g.scale(r);
        const float frac = std::clamp(x - std::floor(x), 0.0f, 1.0f);
        // sigmoid(V) = (frac - gamma) / (zeta - gamma), strictly inside (0, 1).
        const float p = (frac - kGamma) / (kZeta - kGamma);
        v(r, c) = std::log(p / (1.0f - p));
      }
    }
    return v;
  }

  void codes(const GroupProblem& g, const Matrix& v, Matrix& codes, Matrix& slope) const override {
    codes.resize(v.rows(), v.cols());
    slope.resize(v.rows(), v.cols());
    for (Eigen::Index r = 0; r < v.rows(); ++r) {
      for (Eigen::Index c = 0; c < v.cols(); ++c) {
        if (g.fixed(r, c) != 0.0f) {
          codes(r, c) = g.nearest(r, c);
          slope(r, c) = 0.0f;
          continue;
        }
        const float code = g.floor_code(r, c) + rectified(v(r, c));
        const bool inside = code >= g.code_min(r) && code <= g.code_max(r);
        codes(r, c) = std::clamp(code, g.code_min(r), g.code_max(r));
        slope(r, c) = inside ? rectified_slope(v(r, c)) : 0.0f;
      }
    }
  }

  void regularize(const GroupProblem& g, const Matrix& v, int64_t step, Matrix& gradient) const override {
    const auto warm = static_cast<int64_t>(settings_.warm_start * static_cast<double>(settings_.iterations));
    if (step < warm || settings_.reg_param == 0) return;
    const double span = static_cast<double>(std::max<int64_t>(1, settings_.iterations - warm));
    const double progress = static_cast<double>(step - warm) / span;
    const auto beta = static_cast<float>(settings_.beta_end + (settings_.beta_start - settings_.beta_end) * (1 - progress));
    const auto lambda = static_cast<float>(settings_.reg_param);
    for (Eigen::Index r = 0; r < v.rows(); ++r) {
      for (Eigen::Index c = 0; c < v.cols(); ++c) {
        if (g.fixed(r, c) != 0.0f) continue;
        const float u = 2.0f * rectified(v(r, c)) - 1.0f;
        const float magnitude = std::fabs(u);
        if (magnitude == 0.0f) continue;
        // d/dh of lambda (1 - |2h - 1|^beta) = -2 lambda beta |u|^(beta - 1) sign(u).
        const float dh = -2.0f * lambda * beta * std::pow(magnitude, beta - 1.0f) * (u > 0 ? 1.0f : -1.0f);
        gradient(r, c) += dh * rectified_slope(v(r, c));
      }
    }
  }

  Matrix hard_codes(const GroupProblem& g, const Matrix& v) const override {
    Matrix out(v.rows(), v.cols());
    for (Eigen::Index r = 0; r < v.rows(); ++r) {
      for (Eigen::Index c = 0; c < v.cols(); ++c) {
        const float up = rectified(v(r, c)) >= 0.5f ? 1.0f : 0.0f;
        out(r, c) = g.fixed(r, c) != 0.0f ? g.nearest(r, c)
                                          : std::clamp(g.floor_code(r, c) + up, g.code_min(r), g.code_max(r));
      }
    }
    return out;
  }

 private:
  ReconstructionSettings settings_;
};

}  // namespace

std::unique_ptr<RoundingModel> adaround_model(const ReconstructionSettings& settings) {
  return std::make_unique<AdaRound>(settings);
}

}  // namespace mixprec::algorithms
