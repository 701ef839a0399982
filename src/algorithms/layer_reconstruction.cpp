// layer_reconstruction: the driver of AdaRound and AdaQuant (reconstruct_layers) and the loop
// they share (optimize_group). See layer_reconstruction.h for the loss.
//
//   Before:  prepared:  x → Conv/ConvTranspose/Gemm/MatMul(W) → y   quantized = rewrite(prepared) stores codes of W
//   After:   prepared:  x → Conv/ConvTranspose/Gemm/MatMul(W') → y  W' = s (C - z), C the learned codes
//            (update_bias, AdaQuant: and a layer's own bias b → b + e, the best shift for C)
//
// Layers go level by level in data-flow order (algorithms/layer_sites.h): one rewrite of
// `prepared` with every upstream layer's learned weights already in place and one pass over the
// samples per level, cut to the part of the model above it, so a layer learns on the input it
// will see in the quantized model (its quantized upstream, activation Q/DQ included) and the
// upstream's errors are not compounded. With the target kFloatOutput (default) the float model
// as it was before any write-back runs beside it, and its input of the layer at the same
// positions is the reference (config.h). The pass feeds the layer's input through the same
// im2col as the Conv (groups, strides, pads, auto_pad, dilations; 1-D, 2-D and 3-D) into the Gram
// matrices G = X X^T / columns, one per group, accumulated in double. A ConvTranspose is the
// same problem with its weight read as [C_out / groups, C_in / groups x taps] per group and its
// im2col gathering, for each output position, the input each tap scatters there (explicit pads
// and output_padding; output_shape and auto_pad SAME_* are skipped with a note).
//
// Subsampling: a sample contributes at most max(kMinColumnsPerSample, kMaxColumns / samples)
// columns (output positions x batch for Conv, rows for Gemm/MatMul); above that it contributes
// a uniform subset without replacement, drawn by std::mt19937_64 seeded with kSubsetSeed, the
// layer's position in the site list and the sample index (so a run is reproducible and the same
// positions are drawn for the same layer and sample). G is an average, so the subset only
// thins its estimate.
//
// The grid: the scales and zero points the rewrite gives the weight (config::weight_grid, the
// function insert_qdq calls), codes limited to what the grid covers (symmetric: z -/+ the
// symmetric qmax, so a code never lands on -128 and widens the range). The elements that set
// the grid's range (symmetric: the largest |W| of each channel, or of the tensor; asymmetric:
// the smallest and largest W) keep their nearest codes, so the rewrite, which takes the range
// from W', finds the same scale. Written back as W' = (C - z) * s (DequantizeLinear's
// arithmetic), the rewrite's grid and codes are recomputed from W' and compared with C: a
// layer where any code differs keeps its original weights (a note says so).
//
// The store (ReconstructionOptions::store): before a level's pass each member's key is looked
// up (layer_key: the settings, the samples, and digests of the layer's input and weight in the
// quantized model, so the key changes exactly when the layer's upstream or its own format does);
// a level whose members are all known writes their weights back without a pass, and each layer
// learned is stored. A search that lifts a few layers re-learns only the layers below them.
//
// selective_update (Quark's): the float model's outputs on the samples are taken once
// (algorithms/output_error.h); after each layer's weights are written back (learned or from the
// store) the quantized model is rewritten and run over the samples, and the layer keeps them only
// when the output error falls below the error with the layers kept before it, else it gets its
// weight (and bias) back. Layers go in the order above, so a later layer learns on the upstream
// as decided. The store keeps what was learned, not the decision, which each run makes again.
//
// Threads: groups are independent problems, run in parallel (OpenMP) when there are several;
// one group's products use Eigen's own threads. Results do not depend on the thread count.
#include "algorithms/layer_reconstruction.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <iomanip>
#include <map>
#include <numeric>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <sstream>

#include "algorithms/layer_sites.h"
#include "algorithms/output_error.h"
#include "common/digest.h"
#include "common/text.h"
#include "common/timing.h"
#include "config/weight_grid.h"
#include "ir/graph_view.h"
#include "ir/op_traits.h"
#include "mixprec/algorithms.h"
#include "mixprec/error.h"
#include "mixprec/log.h"
#include "mixprec/tensor_proto.h"

namespace mixprec {
namespace algorithms {

void RoundingModel::regularize(const GroupProblem&, const Matrix&, int64_t, Matrix&) const {}

namespace {

// Adam (Kingma & Ba 2015) with its usual constants.
constexpr float kAdamBeta1 = 0.9f;
constexpr float kAdamBeta2 = 0.999f;
constexpr float kAdamEpsilon = 1e-8f;

Matrix weight_error(const GroupProblem& g, const Matrix& codes) {
  Matrix d = codes;
  for (Eigen::Index r = 0; r < d.rows(); ++r) d.row(r) = (d.row(r).array() - g.zero_point(r)) * g.scale(r);
  return d - g.weight;
}

}  // namespace

double reconstruction_loss(const GroupProblem& g, const Matrix& codes) {
  const Matrix d = weight_error(g, codes);
  const Matrix dg = d * g.gram;
  double loss = (d.array() * dg.array()).cast<double>().sum() + g.offset;
  if (g.residual.size() > 0) loss += 2 * (d.array() * g.residual.array()).cast<double>().sum();
  return loss;
}

void set_inputs(GroupProblem& g, const Eigen::MatrixXd& gram, const Eigen::MatrixXd& cross,
                const Eigen::MatrixXd& reference, double drop_ratio, const InputMeans* means) {
  const double q = drop_ratio;
  // E[M M^T] and E[M X^T] for M = B o X^ + (1 - B) o X, B_ij ~ Bernoulli(q) independent.
  Eigen::MatrixXd mixed = q * q * gram + (1 - q) * (1 - q) * reference + q * (1 - q) * (cross + cross.transpose());
  mixed.diagonal() += q * (1 - q) * (gram - cross - cross.transpose() + reference).diagonal();
  Eigen::MatrixXd mixed_cross = q * cross + (1 - q) * reference;
  Eigen::MatrixXd floats = reference;
  if (means) {  // centred: the loss of the best bias shift
    const Eigen::VectorXd m = q * means->quantized + (1 - q) * means->floats;
    mixed -= m * m.transpose();
    mixed_cross -= m * means->floats.transpose();
    floats -= means->floats * means->floats.transpose();
    g.mean = m.cast<float>();
    g.reference_mean = means->floats.cast<float>();
  }
  const Eigen::MatrixXd w = g.weight.cast<double>();
  g.gram = mixed.cast<float>();
  g.residual = (w * (mixed - mixed_cross.transpose())).cast<float>();
  g.offset = (w.array() * (w * (mixed - mixed_cross - mixed_cross.transpose() + floats)).array()).sum();
}

Column bias_shift(const GroupProblem& g, const Matrix& codes) {
  const Matrix d = weight_error(g, codes);
  return -(d * g.mean + g.weight * (g.mean - g.reference_mean));
}

Matrix optimize_group(const GroupProblem& g, const RoundingModel& model, const ReconstructionSettings& settings) {
  Matrix params = model.initial(g);
  Matrix m = Matrix::Zero(params.rows(), params.cols());
  Matrix v = Matrix::Zero(params.rows(), params.cols());
  Matrix codes, slope, gradient;
  const double nearest_loss = reconstruction_loss(g, g.nearest);
  Matrix best = g.nearest;
  double best_loss = nearest_loss;
  float beta1_power = 1.0f;
  float beta2_power = 1.0f;
  const auto lr = static_cast<float>(settings.learning_rate);
  for (int64_t step = 0; step < settings.iterations; ++step) {
    model.codes(g, params, codes, slope);
    const Matrix d = weight_error(g, codes);
    Matrix dg = d * g.gram;
    if (model.tracks_best()) {
      double loss = (d.array() * dg.array()).cast<double>().sum() + g.offset;
      if (g.residual.size() > 0) loss += 2 * (d.array() * g.residual.array()).cast<double>().sum();
      if (loss < best_loss) {
        best_loss = loss;
        best = codes;
      }
    }
    // dL/dP = 2 (D G + R) (dD/dC = s per row) (dC/dP).
    if (g.residual.size() > 0) dg += g.residual;
    gradient = 2.0f * dg;
    for (Eigen::Index r = 0; r < gradient.rows(); ++r) gradient.row(r) *= g.scale(r);
    gradient.array() *= slope.array();
    model.regularize(g, params, step, gradient);
    beta1_power *= kAdamBeta1;
    beta2_power *= kAdamBeta2;
    m = kAdamBeta1 * m + (1 - kAdamBeta1) * gradient;
    v = kAdamBeta2 * v + (1 - kAdamBeta2) * gradient.cwiseProduct(gradient);
    params.array() -= lr * (m.array() / (1 - beta1_power)) / ((v.array() / (1 - beta2_power)).sqrt() + kAdamEpsilon);
  }
  Matrix learned = model.tracks_best() ? best : model.hard_codes(g, params);
  if (model.tracks_best()) {
    const Matrix last = model.hard_codes(g, params);
    if (reconstruction_loss(g, last) < best_loss) learned = last;
  }
  // A rounding that measures worse than nearest on the same G is not kept.
  return reconstruction_loss(g, learned) <= nearest_loss ? learned : g.nearest;
}

}  // namespace algorithms

namespace {

using algorithms::find_initializer;
using algorithms::GroupProblem;
using algorithms::Matrix;
using algorithms::replace_values;

constexpr size_t kMaxColumns = size_t{1} << 17;
constexpr size_t kMinColumnsPerSample = 256;
constexpr uint64_t kSubsetSeed = 0x5eed'ada0'0000'0012ull;

// Spatial slots of a convolution: depth, height, width.
constexpr size_t kSlots = 3;
// A convolution's output positions: batch, depth, height, width.
using ConvOutput = std::array<int64_t, 1 + kSlots>;

enum class LayerKind { kConv, kConvTranspose, kGemm, kMatMul };

// How a layer's weight maps onto [rows x cols] per group, and its input onto columns.
struct LayerShape {
  LayerKind kind = LayerKind::kConv;
  int64_t groups = 1;
  int64_t outputs = 0;  // rows over all groups
  int64_t cols = 0;     // per group
  bool trans_a = false, trans_b = false;
  // Conv and ConvTranspose, as 3-D over (depth, height, width): a 2-D one has depth 1, a 1-D
  // one depth and height 1 (its axes fill the last slots). channels_per_group counts input
  // channels.
  int64_t channels_per_group = 0;
  int64_t kernel[kSlots] = {1, 1, 1}, strides[kSlots] = {1, 1, 1}, dilations[kSlots] = {1, 1, 1};
  int64_t pads[2 * kSlots] = {0, 0, 0, 0, 0, 0};  // begin d, h, w, then end d, h, w
  int64_t output_padding[kSlots] = {0, 0, 0};     // ConvTranspose
  std::string auto_pad = "NOTSET";
  size_t spatial = 2;  // 1, 2 or 3

  int64_t taps() const { return kernel[0] * kernel[1] * kernel[2]; }

  bool convolution() const { return kind == LayerKind::kConv || kind == LayerKind::kConvTranspose; }
  int64_t rows() const { return outputs / groups; }
  // The flat index in the weight tensor of (group, row, col). A ConvTranspose weight is
  // [C_in, C_out / groups, k...]: row r of group g is output channel g * rows + r, column c is
  // (input channel of the group, kernel position).
  size_t weight_index(int64_t g, int64_t r, int64_t c) const {
    if (kind == LayerKind::kConvTranspose) {
      const int64_t taps = this->taps();
      return static_cast<size_t>(((g * channels_per_group + c / taps) * rows() + r) * taps + c % taps);
    }
    const int64_t o = g * rows() + r;
    if (kind == LayerKind::kConv || (kind == LayerKind::kGemm && trans_b)) return static_cast<size_t>(o * cols + c);
    return static_cast<size_t>(c * outputs + o);  // B [K, N]
  }
  // The channel of the weight's per-channel grid that (group, row) is on: a ConvTranspose's
  // axis 1 has C_out / groups channels, shared by the groups.
  size_t grid_channel(int64_t g, int64_t r) const {
    return static_cast<size_t>(kind == LayerKind::kConvTranspose ? r : g * rows() + r);
  }
  size_t grid_channels() const { return static_cast<size_t>(kind == LayerKind::kConvTranspose ? rows() : outputs); }
};

// The layer's shape, or why it is not handled.
std::optional<LayerShape> layer_shape(const onnx::NodeProto& node, const onnx::TensorProto& weight, std::string& why) {
  LayerShape shape;
  const std::vector<int64_t> dims(weight.dims().begin(), weight.dims().end());
  for (int64_t d : dims) {
    if (d <= 0) {
      why = "its weight has an empty dimension";
      return std::nullopt;
    }
  }
  if (node.op_type() == "Conv" || node.op_type() == "ConvTranspose") {
    const bool transposed = node.op_type() == "ConvTranspose";
    shape.kind = transposed ? LayerKind::kConvTranspose : LayerKind::kConv;
    if (dims.size() < 3 || dims.size() > 2 + kSlots) {
      why = "a " + node.op_type() + " with " + std::to_string(static_cast<int64_t>(dims.size()) - 2) +
            " spatial dimensions (1, 2 and 3 are handled)";
      return std::nullopt;
    }
    shape.groups = ir::int_attribute(node, "group").value_or(1);
    if (shape.groups < 1 || dims[0] % shape.groups != 0) {
      why = transposed ? "its group count does not divide its input channels"
                       : "its group count does not divide its output channels";
      return std::nullopt;
    }
    shape.outputs = transposed ? dims[1] * shape.groups : dims[0];
    shape.channels_per_group = transposed ? dims[0] / shape.groups : dims[1];
    shape.spatial = dims.size() - 2;
    const size_t first = kSlots - shape.spatial;  // fewer axes fill the last slots
    for (size_t i = 0; i < shape.spatial; ++i) shape.kernel[first + i] = dims[2 + i];
    shape.cols = shape.channels_per_group * shape.taps();
    const auto fill = [&](const std::string& name, int64_t* out, size_t count_per_side, bool two_sided) {
      const std::vector<int64_t> v = ir::ints_attribute(node, name).value_or(std::vector<int64_t>{});
      if (v.empty()) return true;
      if (v.size() != count_per_side * (two_sided ? 2 : 1)) return false;
      for (size_t i = 0; i < count_per_side; ++i) {
        out[first + i] = v[i];
        if (two_sided) out[kSlots + first + i] = v[count_per_side + i];
      }
      return true;
    };
    if (!fill("strides", shape.strides, shape.spatial, false) || !fill("dilations", shape.dilations, shape.spatial, false) ||
        !fill("pads", shape.pads, shape.spatial, true) ||
        !fill("output_padding", shape.output_padding, shape.spatial, false)) {
      why = "its strides, dilations, pads or output_padding do not match its kernel's rank";
      return std::nullopt;
    }
    for (size_t d = 0; d < kSlots; ++d) {
      if (shape.strides[d] < 1 || shape.dilations[d] < 1) {
        why = "its strides and dilations must be positive";
        return std::nullopt;
      }
    }
    shape.auto_pad = ir::string_attribute(node, "auto_pad").value_or("NOTSET");
    if (transposed && (!ir::ints_attribute(node, "output_shape").value_or(std::vector<int64_t>{}).empty() ||
                       (shape.auto_pad != "NOTSET" && shape.auto_pad != "VALID"))) {
      why = "a ConvTranspose with output_shape or auto_pad " + shape.auto_pad +
            " (explicit pads and output_padding are handled)";
      return std::nullopt;
    }
    return shape;
  }
  if (dims.size() != 2) {
    why = "its weight is not a matrix";
    return std::nullopt;
  }
  if (node.op_type() == "Gemm") {
    shape.kind = LayerKind::kGemm;
    shape.trans_a = ir::int_attribute(node, "transA").value_or(0) != 0;
    shape.trans_b = ir::int_attribute(node, "transB").value_or(0) != 0;
  } else {
    shape.kind = LayerKind::kMatMul;
  }
  shape.outputs = shape.trans_b ? dims[0] : dims[1];
  shape.cols = shape.trans_b ? dims[1] : dims[0];
  return shape;
}

// The positions of a sample that contribute columns: all of them, or the seeded subset.
std::vector<int64_t> chosen_positions(int64_t total, size_t cap, uint64_t seed) {
  std::vector<int64_t> all(static_cast<size_t>(total));
  std::iota(all.begin(), all.end(), 0);
  if (all.size() <= cap) return all;
  std::mt19937_64 random(seed);
  for (size_t i = 0; i < cap; ++i) {
    std::uniform_int_distribution<size_t> pick(i, all.size() - 1);
    std::swap(all[i], all[pick(random)]);
  }
  all.resize(cap);
  std::sort(all.begin(), all.end());
  return all;
}

// Gram matrices of one layer, accumulated over samples, per group: of the quantized model's
// input X^ (gram) and, with ReconstructionTarget::kFloatOutput, of the float model's input X at
// the same positions (cross = X^ X^T, reference = X X^T).
struct GramSums {
  std::vector<Eigen::MatrixXd> gram, cross, reference;
  std::vector<Eigen::VectorXd> sum, reference_sum;  // the columns summed (update_bias's means)
  size_t columns = 0;
};

void add_product(const Eigen::MatrixXf& a, const Eigen::MatrixXf& b, Eigen::MatrixXd& sum) {
  const Eigen::MatrixXf product = a * b.transpose();
  sum += product.cast<double>();
}

// The input extents of a Conv input of `dims` in the three slots (depth, height, width).
std::array<int64_t, kSlots> input_extents(const LayerShape& shape, const Shape& dims) {
  std::array<int64_t, kSlots> in = {1, 1, 1};
  for (size_t i = 0; i < shape.spatial; ++i) in[kSlots - shape.spatial + i] = dims[2 + i];
  return in;
}

// The output positions of a Conv input of `dims` (batch x depth x rows x cols), or nothing
// when the shape does not fit; `begin` gets the leading pads.
std::optional<ConvOutput> conv_positions(const LayerShape& shape, const Shape& dims, int64_t begin[kSlots]) {
  if (dims.size() != shape.spatial + 2 || dims[1] != shape.channels_per_group * shape.groups) return std::nullopt;
  const std::array<int64_t, kSlots> in = input_extents(shape, dims);
  ConvOutput out = {dims[0], 0, 0, 0};
  for (size_t d = 0; d < kSlots; ++d) {
    const int64_t reach = shape.dilations[d] * (shape.kernel[d] - 1) + 1;
    if (shape.kind == LayerKind::kConvTranspose) {  // NOTSET or VALID (layer_shape)
      const bool valid = shape.auto_pad == "VALID";
      begin[d] = valid ? 0 : shape.pads[d];
      out[1 + d] = shape.strides[d] * (in[d] - 1) + shape.output_padding[d] + reach -
                   (valid ? 0 : shape.pads[d] + shape.pads[kSlots + d]);
    } else if (shape.auto_pad == "SAME_UPPER" || shape.auto_pad == "SAME_LOWER") {
      out[1 + d] = (in[d] + shape.strides[d] - 1) / shape.strides[d];
      const int64_t total = std::max<int64_t>(0, (out[1 + d] - 1) * shape.strides[d] + reach - in[d]);
      begin[d] = shape.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    } else {
      const bool valid = shape.auto_pad == "VALID";
      begin[d] = valid ? 0 : shape.pads[d];
      const int64_t padded = in[d] + (valid ? 0 : shape.pads[d] + shape.pads[kSlots + d]);
      out[1 + d] = padded >= reach ? (padded - reach) / shape.strides[d] + 1 : 0;
    }
  }
  if (std::ranges::any_of(out, [](int64_t n) { return n <= 0; })) return std::nullopt;
  return out;
}

// The input position that kernel tap `k` of output position `o` reads along axis `d`, or -1
// (padding). Conv: o s - begin + k dil. ConvTranspose scatters input i to i s - begin + k dil,
// so output o reads i = (o + begin - k dil) / s where that divides.
int64_t input_index(const LayerShape& shape, size_t d, int64_t o, int64_t begin, int64_t k, int64_t extent) {
  int64_t i = 0;
  if (shape.kind == LayerKind::kConvTranspose) {
    const int64_t scattered = o + begin - k * shape.dilations[d];
    if (scattered < 0 || scattered % shape.strides[d] != 0) return -1;
    i = scattered / shape.strides[d];
  } else {
    i = o * shape.strides[d] - begin + k * shape.dilations[d];
  }
  return i >= 0 && i < extent ? i : -1;
}

// The columns of group `g` at `chosen` positions of the Conv (or ConvTranspose) input `values`
// (im2col: row (input channel, kernel tap) of column p is what that tap multiplies at output
// position p).
Eigen::MatrixXf conv_columns(const LayerShape& shape, const Shape& dims, std::span<const float> values,
                             const ConvOutput& out, const int64_t begin[kSlots], const std::vector<int64_t>& chosen,
                             int64_t g) {
  const int64_t channels = dims[1];
  const auto [in_d, in_h, in_w] = input_extents(shape, dims);
  const int64_t cg = shape.channels_per_group;
  Eigen::MatrixXf columns(shape.cols, static_cast<Eigen::Index>(chosen.size()));
  for (size_t j = 0; j < chosen.size(); ++j) {
    const int64_t p = chosen[j];
    const int64_t n = p / (out[1] * out[2] * out[3]);
    const int64_t od = (p / (out[2] * out[3])) % out[1];
    const int64_t oh = (p / out[3]) % out[2];
    const int64_t ow = p % out[3];
    Eigen::Index row = 0;
    for (int64_t c = 0; c < cg; ++c) {
      const float* volume = values.data() + (n * channels + g * cg + c) * in_d * in_h * in_w;
      for (int64_t kd = 0; kd < shape.kernel[0]; ++kd) {
        const int64_t id = input_index(shape, 0, od, begin[0], kd, in_d);
        for (int64_t kh = 0; kh < shape.kernel[1]; ++kh) {
          const int64_t ih = input_index(shape, 1, oh, begin[1], kh, in_h);
          for (int64_t kw = 0; kw < shape.kernel[2]; ++kw, ++row) {
            const int64_t iw = input_index(shape, 2, ow, begin[2], kw, in_w);
            columns(row, static_cast<Eigen::Index>(j)) =
                id >= 0 && ih >= 0 && iw >= 0 ? volume[(id * in_h + ih) * in_w + iw] : 0.0f;
          }
        }
      }
    }
  }
  return columns;
}

// Gemm/MatMul: the rows of the input `values` at `chosen` as columns.
Eigen::MatrixXf matrix_columns(const LayerShape& shape, std::span<const float> values, int64_t rows,
                               const std::vector<int64_t>& chosen) {
  const int64_t k = shape.cols;
  Eigen::MatrixXf columns(k, static_cast<Eigen::Index>(chosen.size()));
  for (size_t j = 0; j < chosen.size(); ++j) {
    for (int64_t i = 0; i < k; ++i) {
      const int64_t at = shape.trans_a ? i * rows + chosen[j] : chosen[j] * k + i;
      columns(i, static_cast<Eigen::Index>(j)) = values[static_cast<size_t>(at)];
    }
  }
  return columns;
}

// Adds the columns of one sample's input tensor `x` (and of the float model's input
// `reference` at the same positions, when given); false when a shape does not fit.
bool add_sample(const LayerShape& shape, const Tensor& x, const Tensor* reference, size_t cap, uint64_t seed,
                GramSums& sums) {
  if (x.dtype() != DType::kFloat32) return false;
  if (reference && (reference->dtype() != DType::kFloat32 || reference->shape() != x.shape())) return false;
  const Shape& dims = x.shape();
  const auto groups = static_cast<size_t>(shape.groups);
  if (sums.gram.empty()) {
    sums.gram.assign(groups, Eigen::MatrixXd::Zero(shape.cols, shape.cols));
    if (reference) sums.cross = sums.reference = sums.gram;
    sums.sum.assign(groups, Eigen::VectorXd::Zero(shape.cols));
    if (reference) sums.reference_sum = sums.sum;
  }
  const auto add = [&](size_t g, const Eigen::MatrixXf& quantized, const Eigen::MatrixXf* floats) {
    add_product(quantized, quantized, sums.gram[g]);
    sums.sum[g] += quantized.rowwise().sum().cast<double>();
    if (!floats) return;
    add_product(quantized, *floats, sums.cross[g]);
    add_product(*floats, *floats, sums.reference[g]);
    sums.reference_sum[g] += floats->rowwise().sum().cast<double>();
  };
  if (!shape.convolution()) {
    if (dims.empty()) return false;
    int64_t rows = 0;
    if (shape.kind == LayerKind::kGemm && shape.trans_a) {
      if (dims.size() != 2 || dims[0] != shape.cols) return false;
      rows = dims[1];
    } else {
      if (dims.back() != shape.cols || (shape.kind == LayerKind::kGemm && dims.size() != 2)) return false;
      rows = x.numel() / shape.cols;
    }
    const std::vector<int64_t> chosen = chosen_positions(rows, cap, seed);
    const Eigen::MatrixXf quantized = matrix_columns(shape, x.as<float>(), rows, chosen);
    if (reference) {
      const Eigen::MatrixXf floats = matrix_columns(shape, reference->as<float>(), rows, chosen);
      add(0, quantized, &floats);
    } else {
      add(0, quantized, nullptr);
    }
    sums.columns += chosen.size();
    return true;
  }
  int64_t begin[kSlots] = {0, 0, 0};
  const auto out = conv_positions(shape, dims, begin);
  if (!out) return false;
  const std::vector<int64_t> chosen = chosen_positions((*out)[0] * (*out)[1] * (*out)[2] * (*out)[3], cap, seed);
  for (int64_t g = 0; g < shape.groups; ++g) {
    const Eigen::MatrixXf quantized = conv_columns(shape, dims, x.as<float>(), *out, begin, chosen, g);
    if (reference) {
      const Eigen::MatrixXf floats = conv_columns(shape, dims, reference->as<float>(), *out, begin, chosen, g);
      add(static_cast<size_t>(g), quantized, &floats);
    } else {
      add(static_cast<size_t>(g), quantized, nullptr);
    }
  }
  sums.columns += chosen.size();
  return true;
}

// The problem of every group: weights, grid, pinned range elements, G (centred when `centre`: update_bias).
std::vector<GroupProblem> build_problems(const LayerShape& shape, const std::vector<float>& weight,
                                         const config::WeightGrid& grid, FormatId format, const GramSums& sums,
                                         double drop_ratio, bool centre) {
  const FormatTraits& traits = format_traits(format);
  const auto sq = static_cast<float>(symmetric_qmax(format));
  const bool per_channel = grid.params.axis >= 0;
  // The pinned elements: per grid channel (output row, or the whole tensor).
  std::vector<float> fixed(weight.size(), 0.0f);
  {
    const size_t channels = per_channel ? shape.grid_channels() : 1;
    std::vector<size_t> low(channels, SIZE_MAX), high(channels, SIZE_MAX);
    for (int64_t g = 0; g < shape.groups; ++g) {
      for (int64_t r = 0; r < shape.rows(); ++r) {
        const size_t channel = per_channel ? shape.grid_channel(g, r) : 0;
        for (int64_t c = 0; c < shape.cols; ++c) {
          const size_t i = shape.weight_index(g, r, c);
          const float key = grid.symmetric ? std::fabs(weight[i]) : weight[i];
          if (high[channel] == SIZE_MAX || key > (grid.symmetric ? std::fabs(weight[high[channel]]) : weight[high[channel]])) {
            high[channel] = i;
          }
          if (low[channel] == SIZE_MAX || weight[i] < weight[low[channel]]) low[channel] = i;
        }
      }
    }
    for (size_t c = 0; c < channels; ++c) {
      if (high[c] != SIZE_MAX) fixed[high[c]] = 1.0f;
      if (!grid.symmetric && low[c] != SIZE_MAX) fixed[low[c]] = 1.0f;
    }
  }
  std::vector<GroupProblem> problems(static_cast<size_t>(shape.groups));
  const Eigen::Index rows = shape.rows();
  const Eigen::Index cols = shape.cols;
  for (int64_t g = 0; g < shape.groups; ++g) {
    GroupProblem& p = problems[static_cast<size_t>(g)];
    p.weight.resize(rows, cols);
    p.floor_code.resize(rows, cols);
    p.nearest.resize(rows, cols);
    p.fixed.resize(rows, cols);
    p.scale.resize(rows);
    p.zero_point.resize(rows);
    p.code_min.resize(rows);
    p.code_max.resize(rows);
    for (Eigen::Index r = 0; r < rows; ++r) {
      const size_t channel = per_channel ? shape.grid_channel(g, r) : 0;
      const float s = grid.params.scale[channel];
      const int32_t z = grid.params.zero_point[channel];
      p.scale(r) = s;
      p.zero_point(r) = static_cast<float>(z);
      const auto qmin = static_cast<float>(traits.qmin);
      const auto qmax = static_cast<float>(traits.qmax);
      p.code_min(r) = grid.symmetric ? std::max(qmin, static_cast<float>(z) - sq) : qmin;
      p.code_max(r) = grid.symmetric ? std::min(qmax, static_cast<float>(z) + sq) : qmax;
      const Quantizer quantizer(format, s, z);
      for (Eigen::Index c = 0; c < cols; ++c) {
        const size_t i = shape.weight_index(g, r, c);
        p.weight(r, c) = weight[i];
        p.floor_code(r, c) = std::floor(weight[i] / s) + static_cast<float>(z);
        p.nearest(r, c) = static_cast<float>(quantizer.quantize(weight[i]));
        p.fixed(r, c) = fixed[i];
      }
    }
    const double columns = static_cast<double>(std::max<size_t>(1, sums.columns));
    const auto k = static_cast<size_t>(g);
    const Eigen::MatrixXd gram = sums.gram[k] / columns;
    std::optional<algorithms::InputMeans> means;
    if (centre) {
      means.emplace();
      means->quantized = sums.sum[k] / columns;
      means->floats = sums.reference_sum.empty() ? means->quantized : Eigen::VectorXd(sums.reference_sum[k] / columns);
    }
    if (!sums.cross.empty()) {
      algorithms::set_inputs(p, gram, sums.cross[k] / columns, sums.reference[k] / columns, drop_ratio,
                             means ? &*means : nullptr);
    } else if (means) {  // X^ is its own reference: residual and offset come out 0
      algorithms::set_inputs(p, gram, gram, gram, 1.0, &*means);
    } else {
      p.gram = gram.cast<float>();
    }
  }
  return problems;
}

// Eigen's products on the calling thread while alive.
class SingleThreadedProducts {
 public:
  SingleThreadedProducts() : threads_(Eigen::nbThreads()) { Eigen::setNbThreads(1); }
  ~SingleThreadedProducts() { Eigen::setNbThreads(threads_); }
  SingleThreadedProducts(const SingleThreadedProducts&) = delete;
  SingleThreadedProducts& operator=(const SingleThreadedProducts&) = delete;

 private:
  int threads_;
};

struct Candidate {
  algorithms::LayerSite site;
  LayerShape shape;
  const NodeAssignment* assignment = nullptr;
  std::string bias;  // update_bias: the layer's own float bias initializer, [outputs]; else empty
  size_t position = 0;  // in the site list (the subset seed)
};

int64_t element_count(const onnx::TensorProto& proto) {
  int64_t count = 1;
  for (int64_t d : proto.dims()) count *= d;
  return count;
}

// update_bias: the layer's own bias initializer, float, one value per output (Conv/ConvTranspose
// B; Gemm C as [N] or [1, N] with alpha = beta = 1), or "" (MatMul has none).
std::string learnable_bias(const ir::GraphView& view, const onnx::NodeProto& node, const LayerShape& shape) {
  if (node.op_type() == "MatMul" || node.input_size() < 3 || node.input(2).empty()) return "";
  const onnx::TensorProto* bias = view.initializer(node.input(2));
  if (!bias || bias->data_type() != onnx::TensorProto::FLOAT || view.consumers(node.input(2)).size() != 1 ||
      element_count(*bias) != shape.outputs || (bias->dims_size() == 2 && bias->dims(0) != 1) || bias->dims_size() > 2) {
    return "";
  }
  if (node.op_type() == "Gemm" &&
      (ir::float_attribute(node, "alpha").value_or(1.0f) != 1.0f ||
       ir::float_attribute(node, "beta").value_or(1.0f) != 1.0f)) {
    return "";
  }
  return node.input(2);
}

// The store's key of a layer: everything its learned weights depend on. The method and its
// settings; the samples (their source and the indices drawn); the layer's position (its
// subset seed); the digests (algorithms::tensor_digests) of its input and of its dequantized
// weight in the quantized model (the upstream as it is quantized, with the upstream's learned
// weights, and the weight's grid and codes); the float weight; with kFloatOutput, the float
// model's input of the layer; with update_bias, the float bias the shift is added to. The layer's
// own assignment shows in its weight's digest.
std::string layer_key(const onnx::NodeProto& layer, const onnx::TensorProto& float_weight,
                      const onnx::TensorProto* float_bias, const std::string& float_input,
                      const std::map<std::string, uint64_t>& digests, const std::map<std::string, uint64_t>& float_digests,
                      const Candidate& c, const ReconstructionSettings& settings, const ReconstructionOptions& options,
                      const std::vector<size_t>& indices) {
  Fnv1a key;
  key.add(reconstruction_method_names().name(settings.method));
  key.add(std::to_string(static_cast<int>(settings.target)));
  for (double v : {static_cast<double>(settings.iterations), settings.learning_rate, settings.reg_param, settings.warm_start,
                   settings.beta_start, settings.beta_end, settings.drop_ratio,
                   static_cast<double>(settings.update_bias)}) {
    key.add(std::to_string(v));
  }
  key.add(options.data);
  key.add(text::join_each(indices, [](size_t i) { return std::to_string(i); }));
  key.add(std::to_string(c.position));
  key.add(c.site.node);
  for (int i = 0; i < 2; ++i) key.add(std::to_string(digests.at(layer.input(i))));
  onnx::TensorProto weight = float_weight;
  weight.clear_name();
  key.add(weight.SerializeAsString());
  if (float_bias) {
    onnx::TensorProto bias = *float_bias;
    bias.clear_name();
    key.add(bias.SerializeAsString());
  }
  if (!float_digests.empty()) key.add(std::to_string(float_digests.at(float_input)));
  if (settings.lr_adjust) {  // unset adds nothing: keys learned before lr_adjust existed stay valid
    key.add("lr_adjust " + std::to_string(settings.lr_adjust->threshold) + " " + std::to_string(settings.lr_adjust->learning_rate));
  }
  return key.hex();
}

// lr_adjust: whether a layer learns at lr_adjust's rate, from its loss before learning (with the
// rewrite's codes) per output row: the mean squared error of one output element.
bool above_lr_threshold(const ReconstructionSettings& settings, double loss_nearest, const LayerShape& shape) {
  return settings.lr_adjust && shape.outputs > 0 &&
         loss_nearest / static_cast<double>(shape.outputs) > settings.lr_adjust->threshold;
}

// A learned layer's line at -v (a layer from the store has had its line when it was learned):
// what lr_adjust's threshold is compared with, and what came of it.
void log_layer(const std::string& method, const LayerReconstruction& record, const LayerShape& shape, bool written) {
  const double outputs = static_cast<double>(std::max<int64_t>(1, shape.outputs));
  std::ostringstream line;
  line << std::setprecision(3) << method << " " << record.node << ": output MSE " << record.loss_nearest / outputs << " -> "
       << record.loss_learned / outputs << " (nearest -> learned codes), " << record.changed
       << " codes changed, learning rate " << record.learning_rate
       << (!written          ? ", not written back (see the note)"
           : record.rejected ? ", given its weights back (selective_update)"
                             : "")
       << ", " << std::fixed << record.seconds << " s";
  log_info(line.str());
}

}  // namespace

ReconstructionSummary reconstruct_layers(onnx::ModelProto& prepared, const RewriteFn& rewrite, const SampleSource& source,
                                         const ReconstructionSettings& settings, const ReconstructionOptions& options,
                                         const std::string& label) {
  const auto start = Clock::now();
  ReconstructionSummary summary;
  summary.method = settings.method;
  summary.iterations = settings.iterations;
  summary.drop_ratio = settings.drop_ratio;
  summary.update_bias = settings.update_bias;
  summary.selective_update = settings.selective_update;
  summary.lr_adjust = settings.lr_adjust;
  std::vector<std::string> fixed_biases;  // update_bias: layers whose bias stays as it is
  const std::string name = reconstruction_method_names().name(settings.method);
  std::vector<size_t> indices = options.samples;
  if (indices.empty()) {
    for (size_t i = 0; i < source.size(); ++i) indices.push_back(i);
  }
  summary.samples = indices.size();
  std::map<std::string, const NodeAssignment*> assigned;
  if (options.assignment) {
    for (const NodeAssignment& a : *options.assignment) assigned.emplace(a.node_name, &a);
  }
  std::map<std::string, Candidate> candidates;
  const algorithms::SiteRule rule{
      .op_types = reconstructed_op_types(), .integer_weight = true, .accept = [&](const ir::GraphView& view, const onnx::NodeProto& node) {
        if (!settings.op_types.empty() && std::ranges::find(settings.op_types, node.op_type()) == settings.op_types.end()) {
          return false;  // target_op_type leaves it out
        }
        const auto a = assigned.find(node.name());
        if (a == assigned.end() || a->second->excluded || !a->second->config.weight ||
            !format_traits(a->second->config.weight->format).is_qdq || view.initializer(node.input(0))) {
          return false;
        }
        // Rounding choices exist on an integer grid with one scale per output channel.
        if (!has_integer_codes(a->second->config.weight->format) || a->second->config.weight->group_size) {
          summary.notes.push_back(name + ": " + node.name() + " skipped (its weight format " +
                                  format_traits(a->second->config.weight->format).spec_name +
                                  (a->second->config.weight->group_size ? " is block-wise" : " has FP8 codes") +
                                  "; " + name + " rounds integer codes with one scale per channel)");
          return false;
        }
        if (view.consumers(node.input(1)).size() != 1) {
          summary.notes.push_back(name + ": " + node.name() + " skipped (its weight is shared with another node)");
          return false;
        }
        std::string why;
        const auto shape = layer_shape(node, *view.initializer(node.input(1)), why);
        if (!shape) {
          summary.notes.push_back(name + ": " + node.name() + " skipped (" + why + ")");
          return false;
        }
        candidates[node.name()] = {.shape = *shape, .assignment = a->second};
        if (settings.update_bias) {
          candidates[node.name()].bias = learnable_bias(view, node, *shape);
          if (candidates[node.name()].bias.empty()) fixed_biases.push_back(node.name());
        }
        return true;
      }};
  onnx::ModelProto quantized = rewrite(prepared);
  const std::vector<algorithms::LayerSite> sites = algorithms::layer_sites(prepared, quantized, rule, label);
  if (sites.empty()) {
    const std::span<const char* const> all = reconstructed_op_types();
    const std::vector<std::string> op_types = settings.op_types.empty() ? std::vector<std::string>(all.begin(), all.end())
                                                                        : settings.op_types;
    summary.notes.push_back(name + ": no " + text::join(op_types, "/") +
                            " with a float weight the config stores as integer codes: nothing learned");
    summary.seconds = seconds_since(start);
    return summary;
  }
  for (size_t k = 0; k < sites.size(); ++k) {
    candidates[sites[k].node].site = sites[k];
    candidates[sites[k].node].position = k;
  }
  const std::unique_ptr<algorithms::RoundingModel> model = settings.method == ReconstructionMethod::kAdaRound
                                                               ? algorithms::adaround_model(settings)
                                                               : algorithms::adaquant_model(settings);
  const size_t cap = std::max(kMinColumnsPerSample, kMaxColumns / std::max<size_t>(1, indices.size()));
  // kFloatOutput: the float model as it was, whose layer inputs are the reference.
  const bool float_target = settings.target == ReconstructionTarget::kFloatOutput;
  const onnx::ModelProto original = float_target ? prepared : onnx::ModelProto();
  const std::map<std::string, uint64_t> float_digests =
      options.store && float_target ? algorithms::tensor_digests(original, label) : std::map<std::string, uint64_t>{};
  // selective_update: the float model's outputs on the samples, taken once, and the quantized
  // model's output error with the layers kept so far.
  std::optional<algorithms::OutputReference> yardstick;
  double kept_loss = 0;
  if (settings.selective_update) {
    yardstick.emplace(Session::from_model(prepared, label, options.session), source, indices);
    if (!yardstick->comparable()) {
      summary.notes.push_back(name + ": selective_update has no float model output to compare: every update is kept");
      summary.selective_update = false;
      yardstick.reset();
    } else {
      kept_loss = yardstick->loss(Session::from_model(quantized, label, options.session)).total;
      summary.output_loss_before = kept_loss;
    }
  }
  // selective_update: a layer just written back stays when the model's output error falls below
  // kept_loss; otherwise its weight (and bias) go back to `old_weight` (and `old_bias`).
  const auto judge = [&](const Candidate& c, const std::vector<float>& old_weight, const std::vector<float>& old_bias,
                         LayerReconstruction& record) {
    if (!yardstick) return;
    const onnx::NodeProto& node = prepared.graph().node(static_cast<int>(c.site.index));
    record.output_loss = yardstick->loss(Session::from_model(rewrite(prepared), label, options.session)).total;
    if (record.output_loss < kept_loss) {
      kept_loss = record.output_loss;
      return;
    }
    replace_values(*find_initializer(prepared, node.input(1)), old_weight);
    if (!c.bias.empty()) replace_values(*find_initializer(prepared, c.bias), old_bias);
    record.rejected = true;
    ++summary.rejected;
  };
  size_t levels = 0;
  for (const auto& s : sites) levels = std::max(levels, s.level + 1);
  size_t done = 0;
  for (size_t level = 0; level < levels; ++level) {
    std::vector<const Candidate*> members;
    for (const auto& s : sites) {
      if (s.level == level) members.push_back(&candidates.at(s.node));
    }
    if (members.empty()) continue;
    const auto level_start = Clock::now();
    if (level > 0) quantized = rewrite(prepared);
    // Each member's node in the quantized model (named as in the prepared one).
    std::map<std::string, const onnx::NodeProto*> quantized_node;
    for (const auto& n : quantized.graph().node()) quantized_node[n.name()] = &n;
    std::vector<const onnx::NodeProto*> member_nodes(members.size());
    for (size_t m = 0; m < members.size(); ++m) {
      const auto it = quantized_node.find(members[m]->site.node);
      if (it == quantized_node.end() || it->second->input_size() < 2) {
        throw Error(ErrorKind::kInternal, label, members[m]->site.node + " is missing from its rewrite");
      }
      member_nodes[m] = it->second;
    }
    // A member whose key the store knows takes its weights from there; the pass runs only when
    // one is missing.
    std::vector<std::optional<LearnedLayer>> stored(members.size());
    std::vector<std::string> keys(members.size());
    if (options.store) {
      const std::map<std::string, uint64_t> digests = algorithms::tensor_digests(quantized, label);
      for (size_t m = 0; m < members.size(); ++m) {
        const onnx::NodeProto& node = prepared.graph().node(static_cast<int>(members[m]->site.index));
        const onnx::TensorProto& weight = *find_initializer(prepared, node.input(1));
        const onnx::TensorProto* bias = members[m]->bias.empty() ? nullptr : find_initializer(prepared, members[m]->bias);
        keys[m] = layer_key(*member_nodes[m], weight, bias, node.input(0), digests, float_digests, *members[m], settings,
                            options, indices);
        stored[m] = options.store->find(keys[m]);
        const int64_t expected = element_count(weight) + (bias ? element_count(*bias) : 0);
        if (stored[m] && stored[m]->weights.size() != static_cast<size_t>(expected)) stored[m].reset();
      }
    }
    const bool need_pass = std::ranges::any_of(stored, [](const auto& s) { return !s.has_value(); });
    std::vector<std::string> outputs;
    std::vector<size_t> output_of(members.size());
    for (size_t m = 0; m < members.size(); ++m) {
      const std::string& tensor = member_nodes[m]->input(0);  // its input in the quantized model
      const auto at = std::ranges::find(outputs, tensor);
      output_of[m] = static_cast<size_t>(at - outputs.begin());
      if (at == outputs.end()) outputs.push_back(tensor);
    }
    std::vector<std::string> float_outputs;
    std::vector<size_t> float_output_of(members.size());
    if (float_target) {
      for (size_t m = 0; m < members.size(); ++m) {
        const std::string& tensor = original.graph().node(static_cast<int>(members[m]->site.index)).input(0);
        const auto at = std::ranges::find(float_outputs, tensor);
        float_output_of[m] = static_cast<size_t>(at - float_outputs.begin());
        if (at == float_outputs.end()) float_outputs.push_back(tensor);
      }
    }
    std::vector<GramSums> sums(members.size());
    std::vector<bool> fits(members.size(), true);
    if (need_pass) {
      ++summary.passes;
      // ONNX Runtime's threads run between the products here: Eigen's threads would only wait
      // for them (and they for Eigen's), so the products of the pass run on this thread.
      const SingleThreadedProducts single;
      const Session session =
          Session::from_model(algorithms::upstream_of(quantized, outputs, label), label, options.session, outputs);
      std::optional<Session> reference;
      if (float_target) {
        reference.emplace(Session::from_model(algorithms::upstream_of(original, float_outputs, label), label,
                                              options.session, float_outputs));
      }
      for (size_t index : indices) {
        const NamedTensors sample = source.sample(index);
        const NamedTensors got = session.run(sample, outputs);
        const NamedTensors want = reference ? reference->run(sample, float_outputs) : NamedTensors{};
        for (size_t m = 0; m < members.size(); ++m) {
          if (!fits[m] || stored[m]) continue;
          const uint64_t seed = kSubsetSeed ^ (members[m]->position * 0x9e3779b97f4a7c15ull) ^ index;
          const Tensor* floats = reference ? &want.at(float_output_of[m]).second : nullptr;
          fits[m] = add_sample(members[m]->shape, got.at(output_of[m]).second, floats, cap, seed, sums[m]);
        }
      }
    }
    const double pass_seconds = seconds_since(level_start) / static_cast<double>(members.size());
    for (size_t m = 0; m < members.size(); ++m) {
      const auto layer_start = Clock::now();
      const Candidate& c = *members[m];
      ++done;
      if (stored[m]) {
        onnx::NodeProto& node = *prepared.mutable_graph()->mutable_node(static_cast<int>(c.site.index));
        onnx::TensorProto& proto = *find_initializer(prepared, node.input(1));
        const auto count = static_cast<std::ptrdiff_t>(element_count(proto));
        const std::vector<float>& kept = stored[m]->weights;
        const std::vector<float> old_weight =
            yardstick ? tensor_from_proto(proto, label).to_floats() : std::vector<float>{};
        std::vector<float> old_bias;
        replace_values(proto, {kept.begin(), kept.begin() + count});
        if (!c.bias.empty()) {
          onnx::TensorProto& bias_proto = *find_initializer(prepared, c.bias);
          if (yardstick) old_bias = tensor_from_proto(bias_proto, label).to_floats();
          replace_values(bias_proto, {kept.begin() + count, kept.end()});
          ++summary.biases;
        }
        LayerReconstruction record{.node = c.site.node,
                                   .loss_nearest = stored[m]->loss_nearest,
                                   .loss_learned = stored[m]->loss_learned,
                                   .changed = stored[m]->changed,
                                   .reused = true};
        const bool adjusted = above_lr_threshold(settings, record.loss_nearest, c.shape);
        record.learning_rate = adjusted ? settings.lr_adjust->learning_rate : settings.learning_rate;
        summary.lr_adjusted += adjusted ? 1 : 0;
        judge(c, old_weight, old_bias, record);
        record.seconds = seconds_since(layer_start);
        summary.per_layer.push_back(record);
        ++summary.layers;
        ++summary.reused;
        if (options.progress) options.progress(done, sites.size());
        continue;
      }
      if (!fits[m] || sums[m].columns == 0) {
        summary.notes.push_back(name + ": " + c.site.node + " skipped (its input's shape does not fit its weight)");
        if (options.progress) options.progress(done, sites.size());
        continue;
      }
      onnx::NodeProto& node = *prepared.mutable_graph()->mutable_node(static_cast<int>(c.site.index));
      onnx::TensorProto& proto = *find_initializer(prepared, node.input(1));
      const Tensor weight = tensor_from_proto(proto, label);
      const TensorQuantSpec& spec = *c.assignment->config.weight;
      const config::WeightGrid grid = config::weight_grid(node, spec, weight, label);
      const int64_t output_axis = ir::weight_channel_axis(ir::op_traits(node), node, proto.dims_size());
      if (grid.params.axis >= 0 && grid.params.axis != output_axis) {
        summary.notes.push_back(name + ": " + c.site.node + " skipped (its per-channel axis " +
                                std::to_string(grid.params.axis) + " is not the output-channel axis)");
        if (options.progress) options.progress(done, sites.size());
        continue;
      }
      const std::vector<float> values = weight.to_floats();
      const std::vector<GroupProblem> problems =
          build_problems(c.shape, values, grid, spec.format, sums[m], settings.drop_ratio, !c.bias.empty());
      LayerReconstruction record{.node = c.site.node, .columns = sums[m].columns};
      for (const GroupProblem& p : problems) record.loss_nearest += algorithms::reconstruction_loss(p, p.nearest);
      ReconstructionSettings layer_settings = settings;
      if (above_lr_threshold(settings, record.loss_nearest, c.shape)) {
        layer_settings.learning_rate = settings.lr_adjust->learning_rate;
        ++summary.lr_adjusted;
      }
      record.learning_rate = layer_settings.learning_rate;
      std::vector<Matrix> learned(problems.size());
#pragma omp parallel for schedule(dynamic) if (problems.size() > 1)
      for (size_t g = 0; g < problems.size(); ++g) learned[g] = algorithms::optimize_group(problems[g], *model, layer_settings);
      std::vector<float> written = values;
      std::vector<float> codes(values.size());
      for (size_t g = 0; g < problems.size(); ++g) {
        const GroupProblem& p = problems[g];
        record.loss_learned += algorithms::reconstruction_loss(p, learned[g]);
        record.changed += static_cast<size_t>((learned[g].array() != p.nearest.array()).count());
        record.weights += static_cast<size_t>((p.fixed.array() == 0.0f).count());
        for (Eigen::Index r = 0; r < p.weight.rows(); ++r) {
          for (Eigen::Index col = 0; col < p.weight.cols(); ++col) {
            const size_t i = c.shape.weight_index(static_cast<int64_t>(g), r, col);
            codes[i] = learned[g](r, col);
            written[i] = dequantize_value(static_cast<int32_t>(codes[i]), p.scale(r), static_cast<int32_t>(p.zero_point(r)));
          }
        }
      }
      // The rewrite takes the grid from W' again: it must find these very codes.
      const Tensor candidate = Tensor::from_floats(weight.shape(), written);
      const config::WeightGrid again = config::weight_grid(node, spec, candidate, label);
      const bool written_back = quantize_tensor(candidate, again.params, spec.format).to_floats() == codes;
      if (!written_back) {
        summary.notes.push_back(name + ": " + c.site.node + " keeps its weights (the rewrite would not find the learned codes "
                                "on the grid of the written weights)");
      } else {
        replace_values(proto, written);
        ++summary.layers;
        std::vector<float> kept = written;
        std::vector<float> old_bias;
        if (!c.bias.empty()) {  // the best shift for the learned codes (layer_reconstruction.h)
          onnx::TensorProto& bias_proto = *find_initializer(prepared, c.bias);
          std::vector<float> bias = tensor_from_proto(bias_proto, label).to_floats();
          old_bias = bias;
          for (size_t g = 0; g < problems.size(); ++g) {
            const algorithms::Column shift = algorithms::bias_shift(problems[g], learned[g]);
            for (Eigen::Index r = 0; r < shift.size(); ++r) {
              bias[static_cast<size_t>(static_cast<int64_t>(g) * c.shape.rows() + r)] += shift(r);
            }
          }
          replace_values(bias_proto, bias);
          kept.insert(kept.end(), bias.begin(), bias.end());
          ++summary.biases;
        }
        if (options.store) {
          options.store->store(keys[m], {.weights = kept,
                                         .loss_nearest = record.loss_nearest,
                                         .loss_learned = record.loss_learned,
                                         .changed = record.changed});
        }
        judge(c, values, old_bias, record);
      }
      record.seconds = seconds_since(layer_start) + pass_seconds;
      log_layer(name, record, c.shape, written_back);
      summary.per_layer.push_back(record);
      if (options.progress) options.progress(done, sites.size());
    }
  }
  if (!fixed_biases.empty()) {
    summary.notes.push_back(name + ": update_bias: " + std::to_string(fixed_biases.size()) +
                            " layers keep their bias (no float bias initializer of their own with one value per output; "
                            "MatMul has none): " + fixed_biases.front() +
                            (fixed_biases.size() > 1 ? ", ..." : ""));
  }
  summary.output_loss_after = kept_loss;
  summary.levels = levels;
  summary.seconds = seconds_since(start);
  return summary;
}


}  // namespace mixprec
