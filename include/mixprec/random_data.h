// Seeded random inputs (UseRandomData, smoke runs): the same dtype, shape and seed give the
// same bytes on every platform and compiler.
#pragma once

#include <cstdint>

#include "mixprec/tensor.h"

namespace mixprec {

// Values drawn from std::mt19937_64(seed) with a fixed mapping (not the implementation-
// defined std:: distributions): float32/float16/bfloat16 uniform in [-1, 1) on a 2^-23 grid
// (then rounded to the 16-bit formats); integers uniform in [0, 16), safe as indices, ids and
// token values; bool 0/1. `shape` must be fully known (all dims >= 0).
Tensor random_tensor(DType dtype, const Shape& shape, uint64_t seed);

}  // namespace mixprec
