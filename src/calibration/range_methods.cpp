// The calibration method table and compute_range. What each method computes is in
// mixprec/calibration.h; this file explains how.
//
// The searches (Entropy, MinMSE) share one list of candidate clipping windows over the
// histogram, widest first, and one argmin (cheapest) whose ties go to the wider range: the
// result depends on nothing but the histogram.
#include <algorithm>
#include <cmath>
#include <deque>
#include <iterator>
#include <limits>
#include <sstream>
#include <type_traits>
#include <vector>

#include "mixprec/calibration.h"
#include "mixprec/error.h"

namespace mixprec {
namespace {

constexpr CalibMethodTraits kMethodTable[] = {
    // method                             name                      power_of_two needs_histogram keeps_bounded_range
    {CalibMethod::kMinMax,                "MinMax",                 false,       false,          false},
    {CalibMethod::kPercentile,            "Percentile",             false,       true,           true},
    {CalibMethod::kEntropy,               "Entropy",                false,       true,           true},
    {CalibMethod::kMinMse,                "MinMSE",                 false,       true,           false},
    {CalibMethod::kPowerOfTwoNonOverflow, "PowerOfTwo_NonOverflow", true,        false,          false},
    {CalibMethod::kPowerOfTwoMinMse,      "PowerOfTwo_MinMSE",      true,        true,           false},
};

constexpr bool table_is_indexed_by_method() {
  for (size_t i = 0; i < std::size(kMethodTable); ++i) {
    if (static_cast<size_t>(kMethodTable[i].method) != i) return false;
  }
  return std::size(kMethodTable) == static_cast<size_t>(CalibMethod::kPowerOfTwoMinMse) + 1;
}
static_assert(table_is_indexed_by_method(), "kMethodTable rows must follow the CalibMethod order");

// PowerOfTwo_MinMSE tries 2^(k0 - kPowerOfTwoSearchDepth) .. 2^k0. Each step halves the
// scale, so the narrowest candidate clips at 1/16 of the MinMax range: well past where the
// clipping error outweighs the rounding gain for any real activation.
constexpr size_t kPowerOfTwoSearchDepth = 4;

// The smoothing of TensorRT/MXNet's KL search (eps = 1e-4 counts): a quantized bin with no
// mass where the reference has some gets this instead of 0, so clipping outliers into an empty
// edge bin costs a large but finite divergence.
constexpr double kKlEmptyBinCount = 1e-4;

constexpr size_t kCentreBin = kHistogramBins / 2;

// The histogram of a tensor with its geometry (see TensorStats).
struct Histogram {
  std::span<const uint64_t> counts;
  double width = 0;
  double total = 0;
  // The bins that hold values, widened to include the edge at 0 (bin kCentreBin's lower
  // edge), since every range contains 0: counts outside [first, end) are 0.
  size_t first = kCentreBin, end = kCentreBin;

  explicit Histogram(const TensorStats& stats)
      : counts(stats.hist),
        width(2.0 * stats.hist_range / static_cast<double>(kHistogramBins)),
        total(static_cast<double>(stats.count)) {
    for (size_t bin = 0; bin < counts.size(); ++bin) {
      if (counts[bin] == 0) continue;
      first = std::min(first, bin);
      end = std::max(end, bin + 1);
    }
  }
  double edge(size_t bin) const { return (static_cast<double>(bin) - static_cast<double>(kCentreBin)) * width; }
};

// A candidate clipping window: bins [lo, hi).
struct Window {
  size_t lo, hi;
  bool operator==(const Window&) const = default;
};

// Widest first. Symmetric: [-i*w, i*w) for every i that keeps it inside the histogram.
// Asymmetric: both sides of [first, end) shrunk in proportion towards 0, one step per bin of
// the full width, so the window keeps the data's shape; rounding makes neighbours repeat, and
// repeats are dropped.
std::vector<Window> candidate_windows(const Histogram& hist, bool symmetric) {
  std::vector<Window> windows;
  const size_t below = kCentreBin - hist.first;
  const size_t above = hist.end - kCentreBin;
  if (symmetric) {
    for (size_t i = std::max(below, above); i > 0; --i) windows.push_back({kCentreBin - i, kCentreBin + i});
    return windows;
  }
  const size_t steps = hist.end - hist.first;
  for (size_t k = steps; k > 0; --k) {
    const Window window{kCentreBin - (below * k + steps / 2) / steps, kCentreBin + (above * k + steps / 2) / steps};
    if (window.hi > window.lo && (windows.empty() || windows.back() != window)) windows.push_back(window);
  }
  return windows;
}

Range min_max_range(const TensorStats& stats) { return {std::min(stats.min, 0.0f), std::max(stats.max, 0.0f)}; }

// [lo, hi] kept inside the data, then widened to include 0.
Range clip_to_data(double lo, double hi, const TensorStats& stats) {
  return {static_cast<float>(std::min(std::max(lo, static_cast<double>(stats.min)), 0.0)),
          static_cast<float>(std::max(std::min(hi, static_cast<double>(stats.max)), 0.0))};
}

Range window_range(const Histogram& hist, Window window, const TensorStats& stats) {
  return clip_to_data(hist.edge(window.lo), hist.edge(window.hi), stats);
}

// The value below which `fraction` of the total lies, interpolating linearly inside the bin
// where the running count crosses it; `origin` is the lower edge of bin 0.
double quantile(std::span<const uint64_t> counts, double origin, double width, double total, double fraction) {
  const double needed = fraction * total;
  double running = 0;
  for (size_t bin = 0; bin < counts.size(); ++bin) {
    const auto count = static_cast<double>(counts[bin]);
    if (count == 0) continue;
    if (running + count >= needed) return origin + width * (static_cast<double>(bin) + (needed - running) / count);
    running += count;
  }
  return origin + width * static_cast<double>(counts.size());
}

Range percentile_range(const TensorStats& stats, const Histogram& hist, const RangeOptions& options) {
  const double fraction = options.percentile / 100.0;
  if (!options.symmetric) {
    const double origin = -static_cast<double>(stats.hist_range);
    return clip_to_data(quantile(hist.counts, origin, hist.width, hist.total, 1.0 - fraction),
                        quantile(hist.counts, origin, hist.width, hist.total, fraction), stats);
  }
  // |x|: bin kCentreBin + j holds [j*w, (j+1)*w) and its mirror kCentreBin - 1 - j holds
  // [-(j+1)*w, -j*w), so folding them is exact.
  std::vector<uint64_t> magnitudes(kCentreBin);
  for (size_t j = 0; j < kCentreBin; ++j) magnitudes[j] = hist.counts[kCentreBin + j] + hist.counts[kCentreBin - 1 - j];
  const double threshold = quantile(magnitudes, 0.0, hist.width, hist.total, fraction);
  return clip_to_data(-threshold, threshold, stats);
}

double x_log_x(double x) { return x > 0 ? x * std::log(x) : 0.0; }

// TensorRT's KL divergence for one window, in closed form over prefix sums so that a
// candidate costs O(levels), not O(bins):
//   P: the window's counts with the mass outside piled onto its edge bins (the clipped data);
//   Q: the window's own counts merged into `levels` groups of consecutive bins (one per
//      code), each group's mass spread evenly over the group's bins where P is non-zero.
// With p = P / total and q = Q / slice (each normalised to 1, as TensorRT does),
//   total * KL(p || q) = sum P ln P - sum P ln Q + total * ln(slice / total),
// and sum P ln Q is, group by group, (P's mass in the group) * ln(Q of one of its bins).
class KlDivergence {
 public:
  explicit KlDivergence(const Histogram& hist) : hist_(hist) {
    const size_t bins = hist.counts.size();
    mass_.assign(bins + 1, 0.0);
    mass_log_mass_.assign(bins + 1, 0.0);
    non_empty_.assign(bins + 1, 0.0);
    for (size_t bin = 0; bin < bins; ++bin) {
      const auto count = static_cast<double>(hist.counts[bin]);
      mass_[bin + 1] = mass_[bin] + count;
      mass_log_mass_[bin + 1] = mass_log_mass_[bin] + x_log_x(count);
      non_empty_[bin + 1] = non_empty_[bin] + (count > 0 ? 1.0 : 0.0);
    }
  }

  // total * KL, comparable across windows of one histogram; +inf for an empty window.
  double scaled(Window window, size_t levels) const {
    const double slice = mass_[window.hi] - mass_[window.lo];
    if (slice == 0) return std::numeric_limits<double>::infinity();
    const double outside_below = mass_[window.lo];
    const double outside_above = hist_.total - mass_[window.hi];
    // The bins where P differs from the window's counts: one or two edges.
    struct Edge {
      size_t bin;
      double count, extra;
    };
    Edge edges[2] = {{window.lo, bin_count(window.lo), outside_below},
                     {window.hi - 1, bin_count(window.hi - 1), outside_above}};
    size_t edge_count = 2;
    if (window.hi - window.lo == 1) {
      edges[0].extra += outside_above;
      edge_count = 1;
    }

    double p_log_p = mass_log_mass_[window.hi] - mass_log_mass_[window.lo];
    for (size_t e = 0; e < edge_count; ++e) {
      p_log_p += x_log_x(edges[e].count + edges[e].extra) - x_log_x(edges[e].count);
    }

    double p_log_q = 0;
    const size_t bins = window.hi - window.lo;
    for (size_t group = 0; group < levels; ++group) {
      const size_t a = window.lo + group * bins / levels;
      const size_t b = window.lo + (group + 1) * bins / levels;
      const double q_mass = mass_[b] - mass_[a];
      double p_mass = q_mass;
      double p_non_empty = non_empty_[b] - non_empty_[a];
      for (size_t e = 0; e < edge_count; ++e) {
        if (edges[e].bin < a || edges[e].bin >= b) continue;
        p_mass += edges[e].extra;
        if (edges[e].count == 0 && edges[e].extra > 0) p_non_empty += 1;
      }
      if (p_mass == 0) continue;
      p_log_q += p_mass * std::log(q_mass > 0 ? q_mass / p_non_empty : kKlEmptyBinCount);
    }
    return p_log_p - p_log_q + hist_.total * std::log(slice / hist_.total);
  }

 private:
  double bin_count(size_t bin) const { return static_cast<double>(hist_.counts[bin]); }

  const Histogram& hist_;
  std::vector<double> mass_;           // prefix sums: counts of the bins before i
  std::vector<double> mass_log_mass_;  // ... of count * ln(count)
  std::vector<double> non_empty_;      // ... of (count > 0)
};

// Quantization levels across a window: every code for asymmetric ranges; for symmetric ones
// the codes -q .. q (q = symmetric_qmax) the range maps onto.
size_t code_levels(FormatId format, bool symmetric) {
  const FormatTraits& traits = format_traits(format);
  return static_cast<size_t>(symmetric ? 2 * symmetric_qmax(format) + 1 : traits.qmax - traits.qmin + 1);
}

// The index of the cheapest of `count` candidates (ties: the earlier, i.e. wider, one).
// With stride > 1, every stride-th candidate is tried first, then every candidate within a
// stride of the best of those: enough when the cost has one basin at the stride's scale.
template <typename Cost>
size_t cheapest(size_t count, size_t stride, const Cost& cost) {
  size_t best = 0;
  double best_cost = std::numeric_limits<double>::infinity();
  const auto consider = [&](size_t i) {
    const double c = cost(i);
    if (c < best_cost || (c == best_cost && i < best)) {
      best_cost = c;
      best = i;
    }
  };
  for (size_t i = 0; i < count; i += stride) consider(i);
  const size_t coarse = best;
  for (size_t i = coarse >= stride ? coarse - stride + 1 : 0; i < std::min(count, coarse + stride); ++i) {
    if (i % stride != 0) consider(i);
  }
  return best;
}

Range entropy_range(const TensorStats& stats, const Histogram& hist, FormatId format, const RangeOptions& options) {
  const size_t levels = code_levels(format, options.symmetric);
  std::vector<Window> windows = candidate_windows(hist, options.symmetric);
  // Narrower windows would quantize losslessly at this resolution: KL could not see the
  // rounding error that clipping trades against. Widths only shrink along the list.
  windows.erase(std::find_if(windows.begin(), windows.end(), [&](Window w) { return w.hi - w.lo < levels; }),
                windows.end());
  if (windows.empty()) return min_max_range(stats);
  // Every window, as TensorRT: the divergence is too ragged for a coarse pass to be safe, and
  // a window costs only O(levels).
  const KlDivergence divergence(hist);
  const size_t best = cheapest(windows.size(), 1, [&](size_t i) { return divergence.scaled(windows[i], levels); });
  return window_range(hist, windows[best], stats);
}

// The histogram as (bin centre, count) for the bins that hold values: what the squared-error
// searches sum over.
struct BinMass {
  float centre;
  double count;
};

std::vector<BinMass> occupied_bins(const Histogram& hist) {
  std::vector<BinMass> bins;
  for (size_t bin = hist.first; bin < hist.end; ++bin) {
    if (hist.counts[bin] == 0) continue;
    bins.push_back({static_cast<float>(hist.edge(bin) + hist.width / 2), static_cast<double>(hist.counts[bin])});
  }
  return bins;
}

// Sum of count * (centre - fake_quantize(centre))^2 with the parameters choose_params gives
// for `range`: rounding error inside the range, clipping error outside.
double squared_error(std::span<const BinMass> bins, FormatId format, Range range, const ParamOptions& options) {
  const QuantParams params = choose_params(format, range.min, range.max, options);
  const Quantizer quantizer(format, params.scale[0], params.zero_point[0]);
  double sum = 0;
  for (const BinMass& bin : bins) {
    const double error = bin.centre - quantizer.fake_quantize(bin.centre);
    sum += bin.count * error * error;
  }
  return sum;
}

// The squared error of a window is a rounding term growing like T^2 plus a clipping term
// that is convex and falling, so it has one basin with small ripples where the code grid
// meets the bins: a coarse pass over kMseCoarseCandidates windows finds the basin, a fine
// pass the best window in it. About 100 windows instead of up to 2048.
constexpr size_t kMseCoarseCandidates = 64;

Range min_mse_range(const TensorStats& stats, const Histogram& hist, FormatId format, const RangeOptions& options) {
  const std::vector<BinMass> bins = occupied_bins(hist);
  const std::vector<Window> windows = candidate_windows(hist, options.symmetric);
  if (windows.empty()) return min_max_range(stats);
  const size_t stride = (windows.size() + kMseCoarseCandidates - 1) / kMseCoarseCandidates;
  const size_t best = cheapest(windows.size(), stride, [&](size_t i) {
    return squared_error(bins, format, window_range(hist, windows[i], stats), {.symmetric = options.symmetric});
  });
  return window_range(hist, windows[best], stats);
}

// The range a power-of-two scale covers. Symmetric: [-q s, q s] (q = symmetric_qmax).
// Asymmetric: the code grid at `scale` with the zero point that puts `rmin` (<= 0) on qmin as
// closely as it can, [(qmin - zp) s, (qmax - zp) s]: choose_params gives that scale and zero
// point back (the width is (qmax - qmin) s exactly, and s is a power of two).
Range power_of_two_range(FormatId format, float scale, bool symmetric, float rmin) {
  if (symmetric) {
    const auto limit = static_cast<float>(symmetric_qmax(format)) * scale;
    return {-limit, limit};
  }
  const FormatTraits& traits = format_traits(format);
  const auto qmin = static_cast<double>(traits.qmin);
  const auto qmax = static_cast<double>(traits.qmax);
  const double zero = std::clamp(std::nearbyint(qmin - std::min(static_cast<double>(rmin), 0.0) / scale), qmin, qmax);
  return {static_cast<float>((qmin - zero) * scale), static_cast<float>((qmax - zero) * scale)};
}

// 2^k0: the MinMax range's scale rounded up.
float non_overflow_scale(const TensorStats& stats, FormatId format, bool symmetric) {
  return choose_params(format, stats.min, stats.max, {.symmetric = symmetric, .power_of_two = true}).scale[0];
}

Range power_of_two_min_mse_range(const TensorStats& stats, const Histogram& hist, FormatId format, bool symmetric) {
  const std::vector<BinMass> bins = occupied_bins(hist);
  const float widest = non_overflow_scale(stats, format, symmetric);
  const auto scale_at = [&](size_t step) { return std::ldexp(widest, -static_cast<int>(step)); };
  const size_t best = cheapest(kPowerOfTwoSearchDepth + 1, 1, [&](size_t step) {
    // choose_params would not give a scale below kMinScale back.
    if (scale_at(step) < kMinScale) return std::numeric_limits<double>::infinity();
    return squared_error(bins, format, power_of_two_range(format, scale_at(step), symmetric, stats.min),
                         {.symmetric = symmetric, .power_of_two = true});
  });
  return power_of_two_range(format, scale_at(best), symmetric, stats.min);
}

void check_options(CalibMethod method, const RangeOptions& options) {
  if (method == CalibMethod::kPercentile && !(options.percentile > 50 && options.percentile <= 100)) {
    std::ostringstream message;
    message << "percentile " << options.percentile << " is outside (50, 100]";
    throw_bad_input("", message.str());
  }
}

// The added methods (add_calib_method): a deque, so a row's name stays where it is.
struct AddedRow {
  AddedCalibMethod method;
  CalibMethodTraits traits;
};
std::deque<AddedRow>& added_methods() {
  static std::deque<AddedRow> rows;
  return rows;
}
constexpr size_t kBuiltIn = std::size(kMethodTable);

const AddedRow* added_row(CalibMethod method) {
  const auto index = static_cast<size_t>(method);
  return index >= kBuiltIn && index - kBuiltIn < added_methods().size() ? &added_methods()[index - kBuiltIn] : nullptr;
}

// What an added method returned, checked as compute_range promises: finite, ordered, with 0.
Range checked_added_range(const AddedRow& row, const TensorStats& stats, FormatId format, const RangeOptions& options) {
  Range r = row.method.range(stats, format, options);
  if (!std::isfinite(r.min) || !std::isfinite(r.max) || r.min > r.max) {
    std::ostringstream message;
    message << row.method.origin << ": calibration method " << row.method.name << " returned the range [" << r.min << ", "
            << r.max << "] for " << format_traits(format).name << ", not a finite [min, max]";
    throw Error(ErrorKind::kBadInput, "", message.str());
  }
  r.min = std::min(r.min, 0.0f);
  r.max = std::max(r.max, 0.0f);
  return r;
}

}  // namespace

const CalibMethodTraits& calib_method_traits(CalibMethod method) {
  if (static_cast<size_t>(method) < kBuiltIn) return kMethodTable[static_cast<size_t>(method)];
  const AddedRow* row = added_row(method);
  if (row == nullptr) throw Error(ErrorKind::kInternal, "", "calibration method " + std::to_string(static_cast<int>(method)) + " was never added");
  return row->traits;
}

std::vector<CalibMethodTraits> all_calib_methods() {
  std::vector<CalibMethodTraits> out(std::begin(kMethodTable), std::end(kMethodTable));
  for (const AddedRow& row : added_methods()) out.push_back(row.traits);
  return out;
}

bool is_added_calib_method(CalibMethod method) { return static_cast<size_t>(method) >= kBuiltIn; }

std::optional<CalibMethod> calib_method_from_name(std::string_view name) {
  for (const CalibMethodTraits& traits : kMethodTable) {
    if (name == traits.name) return traits.method;
  }
  for (const AddedRow& row : added_methods()) {
    if (name == row.traits.name) return row.traits.method;
  }
  return std::nullopt;
}

CalibMethod add_calib_method(AddedCalibMethod method) {
  if (method.name.empty()) throw_bad_input("", method.origin + ": a calibration method needs a name");
  if (calib_method_from_name(method.name)) {
    throw_bad_input("", method.origin + ": calibration method " + method.name + " is already defined");
  }
  if (!method.range) throw_bad_input("", method.origin + ": calibration method " + method.name + " has no range function");
  const size_t index = kBuiltIn + added_methods().size();
  if (index > std::numeric_limits<std::underlying_type_t<CalibMethod>>::max()) {
    throw_bad_input("", method.origin + ": too many calibration methods added");
  }
  AddedRow& row = added_methods().emplace_back(AddedRow{.method = std::move(method), .traits = {}});
  row.traits = {.method = static_cast<CalibMethod>(index),
                .name = row.method.name.c_str(),
                .power_of_two = row.method.power_of_two,
                .needs_histogram = row.method.needs_histogram,
                .keeps_bounded_range = row.method.keeps_bounded_range};
  return row.traits.method;
}

Range compute_range(const TensorStats& stats, CalibMethod method, FormatId format, const RangeOptions& options) {
  check_options(method, options);
  if (stats.hist.empty()) return {};
  if (!format_traits(format).is_qdq) return min_max_range(stats);
  if (const AddedRow* row = added_row(method)) return checked_added_range(*row, stats, format, options);
  const Histogram hist(stats);
  switch (method) {
    case CalibMethod::kMinMax: return min_max_range(stats);
    case CalibMethod::kPercentile: return percentile_range(stats, hist, options);
    case CalibMethod::kEntropy: return entropy_range(stats, hist, format, options);
    case CalibMethod::kMinMse: return min_mse_range(stats, hist, format, options);
    case CalibMethod::kPowerOfTwoNonOverflow:
      return power_of_two_range(format, non_overflow_scale(stats, format, options.symmetric), options.symmetric, stats.min);
    case CalibMethod::kPowerOfTwoMinMse: return power_of_two_min_mse_range(stats, hist, format, options.symmetric);
  }
  return min_max_range(stats);  // not reached: the switch covers every method (-Wswitch)
}

}  // namespace mixprec
