// Element-wise comparisons of float outputs for numerics tests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace mixprec::testing {

// max |a[i] - b[i]|; a size mismatch fails the test.
inline float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  float worst = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) worst = std::max(worst, std::fabs(a[i] - b[i]));
  return worst;
}

inline float max_abs(const std::vector<float>& a) {
  float worst = 0;
  for (float v : a) worst = std::max(worst, std::fabs(v));
  return worst;
}

}  // namespace mixprec::testing
