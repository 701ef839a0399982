// adaquant: AdaQuant (Hubara et al. 2021, "Accurate Post Training Quantization With Small
// Calibration Sets") as the RoundingModel of layer_reconstruction.cpp.
//
//   Before:  prepared:  x → Conv/ConvT/Gemm/MatMul(W) → y;   the rewrite stores round(W / s) + z
//   After:   prepared:  x → Conv/ConvT/Gemm/MatMul(W') → y,  W' = s (round(P / s) + z - z) with P
//            the weights optimised to minimise ||W_q X - W X||^2 on the layer's quantized
//            input X; the scale s stays the original weight's (its range elements are pinned).
//
// P starts at W; each step's codes are round(P / s) + z clamped to the grid, and the gradient
// passes the rounding as if it were the identity (straight-through estimator), so
// dL/dP = dL/dW_q inside the grid and 0 where the code is clamped. Codes can move by more than
// one step. The codes of the step with the lowest loss are kept.
#include <algorithm>
#include <cmath>

#include "algorithms/layer_reconstruction.h"

namespace mixprec::algorithms {
namespace {

class AdaQuant final : public RoundingModel {
 public:
  Matrix initial(const GroupProblem& g) const override { return g.weight; }

  void codes(const GroupProblem& g, const Matrix& p, Matrix& codes, Matrix& slope) const override {
    codes.resize(p.rows(), p.cols());
    slope.resize(p.rows(), p.cols());
    for (Eigen::Index r = 0; r < p.rows(); ++r) {
      for (Eigen::Index c = 0; c < p.cols(); ++c) {
        if (g.fixed(r, c) != 0.0f) {
          codes(r, c) = g.nearest(r, c);
          slope(r, c) = 0.0f;
          continue;
        }
        const float code = std::nearbyint(p(r, c) / g.scale(r)) + g.zero_point(r);
        const bool inside = code >= g.code_min(r) && code <= g.code_max(r);
        codes(r, c) = std::clamp(code, g.code_min(r), g.code_max(r));
        // dW_q / dP through the straight-through rounding: s * (1 / s).
        slope(r, c) = inside ? 1.0f / g.scale(r) : 0.0f;
      }
    }
  }

  Matrix hard_codes(const GroupProblem& g, const Matrix& p) const override {
    Matrix out, slope;
    codes(g, p, out, slope);
    return out;
  }

  bool tracks_best() const override { return true; }
};

}  // namespace

std::unique_ptr<RoundingModel> adaquant_model(const ReconstructionSettings&) { return std::make_unique<AdaQuant>(); }

}  // namespace mixprec::algorithms
