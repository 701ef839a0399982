// The layer-reconstruction machinery AdaRound (adaround.cpp) and AdaQuant (adaquant.cpp)
// share: one layer's problem as matrices, the loss and its gradient, and the Adam loop. The two
// methods differ only in what is optimised and how it gives codes (RoundingModel).
//
// A layer's weight is viewed as one [rows x cols] matrix W per group (Conv: rows = output
// channels of the group, cols = input channels of the group x kernel positions, the weight's
// own row-major order; Gemm/MatMul: rows = outputs, cols = inputs, one group). With X the
// layer's input columns (im2col for Conv), the loss of codes C is
//     L(C) = ||(s (C - z) - W) X||^2 / columns = tr(D G D^T),   D = s (C - z) - W,
// where s, z are the per-row scale and zero point and G = X X^T / columns is accumulated once
// from the calibration samples: a step costs rows x cols^2, whatever the number of samples.
// dL/dD = 2 D G. With the float model's input X beside the quantized model's X^ (target
// kFloatOutput) the loss is ||W_q X^ - W X||^2 / columns = tr(D G D^T) + 2 <D, R> + L0, with
// G = X^ X^T / columns, R = W (X^ - X) X^T... precisely R = W (G - C^T), C = X^ X^T / columns,
// and L0 the loss of W itself; dL/dD = 2 (D G + R).
//
// drop_ratio q < 1 (Quark's, after QDrop, Wei et al. 2022): the layer sees M = B o X^ + (1 - B) o X,
// each element of B drawn 1 with chance q, and the loss is its expectation over B:
// ||W_q M - W X||^2 / columns, so G and C above become
//     E[M M^T] / columns = q^2 G + (1-q)^2 F + q(1-q) (C + C^T) + q(1-q) diag(G - C - C^T + F),
//     E[M X^T] / columns = q C + (1-q) F,                                  F = X X^T / columns
// (off the diagonal two elements are drawn apart; on it an element meets itself, E[m^2] =
// q x^^2 + (1-q) x^2, which the first three terms miss by q(1-q) (x^ - x)^2). An element is an
// entry of im2col's X: a tap that reads the same input pixel as another is drawn on its own.
// Nothing is drawn, so the result is as reproducible as with q = 1.
//
// update_bias: with a bias shift e added, the loss ||W_q M - W X + e 1^T||^2 / columns is least at
// e = -(D m + W (m - x)), m and x the mean columns of M and X, and is there the loss above with
// every Gram matrix centred: G - m m^T, C - m x^T, F - x x^T. So the codes are learned on the
// centred matrices and the bias then takes e (bias_shift).
#pragma once

#include <cstdint>
#include <memory>

#include <Eigen/Core>

#include "mixprec/config.h"

namespace mixprec::algorithms {

using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Column = Eigen::VectorXf;

struct GroupProblem {
  Matrix weight;     // W, float
  Matrix gram;       // G = X X^T / columns (cols x cols)
  Matrix residual;   // R (rows x cols); empty for kQuantizedInput, where it is 0
  double offset = 0; // L0
  Column scale;      // per row
  Column zero_point; // per row
  Column code_min;   // per row: the codes the grid covers (symmetric: z -/+ the symmetric qmax)
  Column code_max;
  Matrix floor_code; // floor(W / s) + z
  Matrix nearest;    // the rewrite's codes (round half to even, saturated)
  Matrix fixed;      // 1 where the code is pinned to nearest: the elements that set the grid's range
  // update_bias: the mean input column the layer sees (E[M], or X^'s) and the float model's
  // (X's; X^'s without a float target); empty otherwise.
  Column mean;
  Column reference_mean;
};

// Fills G, R and L0 of `group` (its weight already set) for kFloatOutput at drop_ratio q
// (above; q = 1: the plain problem) from, each divided by the columns, `gram` = X^ X^^T,
// `cross` C_ij = sum x^_i x_j (the float input on the right) and `reference` F = X X^T.
// With `means` (X^'s and X's mean columns) the matrices are centred for update_bias (above) and
// group.mean / reference_mean set.
struct InputMeans {
  Eigen::VectorXd quantized, floats;
};
void set_inputs(GroupProblem& group, const Eigen::MatrixXd& gram, const Eigen::MatrixXd& cross,
                const Eigen::MatrixXd& reference, double drop_ratio, const InputMeans* means = nullptr);

// update_bias: the bias shift that is best for `codes`, -(D m + W (m - x)) per row.
Column bias_shift(const GroupProblem& group, const Matrix& codes);

// L(C) (see above).
double reconstruction_loss(const GroupProblem& group, const Matrix& codes);

// What the loop optimises: parameters P (one per weight) and the codes they give.
class RoundingModel {
 public:
  virtual ~RoundingModel() = default;
  virtual Matrix initial(const GroupProblem& group) const = 0;
  // Codes from P (code units, clamped to the grid, pinned elements at nearest) and dC/dP
  // (0 where clamped or pinned).
  virtual void codes(const GroupProblem& group, const Matrix& params, Matrix& codes, Matrix& slope) const = 0;
  // Adds the regulariser's gradient at `step` to `gradient` (nothing by default).
  virtual void regularize(const GroupProblem& group, const Matrix& params, int64_t step, Matrix& gradient) const;
  // The final integer codes.
  virtual Matrix hard_codes(const GroupProblem& group, const Matrix& params) const = 0;
  // Whether the loop keeps the best hard codes seen (the codes are the hard ones at every
  // step: AdaQuant's straight-through estimator) rather than the last step's.
  virtual bool tracks_best() const { return false; }
};

std::unique_ptr<RoundingModel> adaround_model(const ReconstructionSettings& settings);
std::unique_ptr<RoundingModel> adaquant_model(const ReconstructionSettings& settings);

// `settings.iterations` Adam steps on one group; returns the learned integer codes (nearest
// when they measure worse than nearest on G).
Matrix optimize_group(const GroupProblem& group, const RoundingModel& model, const ReconstructionSettings& settings);

}  // namespace mixprec::algorithms
