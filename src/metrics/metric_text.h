// Metric values and thresholds as verdicts show them, from the metric table (metrics.h).
#pragma once

#include <string>

#include "mixprec/metrics.h"

namespace mixprec::metrics {

// A measured value in its unit with the metric's digits, cut: "27.41 dB", "99.899%", "0.999871".
std::string measured_text(AccuracyTarget::Metric metric, double value);

// A threshold as people write it: "30 dB", "99.9%", "0.999".
std::string threshold_text(AccuracyTarget::Metric metric, double value);

// The relation that holds when `op` does not: "<" for ">=".
const char* negated(AccuracyTarget::Op op);

}  // namespace mixprec::metrics
