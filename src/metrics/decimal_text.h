// Decimal text of doubles for verdicts and reports. Shown digits are cut, not rounded, so a
// value just below a threshold never prints as the threshold: a pass rate of 0.9989999 shows as
// 99.899%, never 99.900%. (Cutting works on the shortest decimal that round-trips the double,
// so 0.999 shows as 0.999, not as the 0.99899999999999999911 it is stored as.)
#pragma once

#include <string>

namespace mixprec::metrics {

// `value` times 10^shift (shift 2 turns a fraction into a percent) with exactly `decimals`
// digits after the point (none and no point when 0), further digits cut. Non-finite values
// print as "nan", "inf", "-inf"; a result of only zeros prints without a sign.
std::string cut_decimal(double value, int decimals, int shift = 0);

// `value` times 10^shift, as the shortest decimal that round-trips, without trailing zeros:
// thresholds as people write them ("30", "99.9", "0.999").
std::string shortest_decimal(double value, int shift = 0);

}  // namespace mixprec::metrics
