#include "mixprec/random_data.h"

#include <random>
#include <vector>

namespace mixprec {
namespace {

// Each maps one 64-bit engine output to a value using its top bits, the best-mixed ones.
// The top 24 bits give a signed integer k in [-2^23, 2^23); k * 2^-23 is exact in float.
float uniform_signed_unit(uint64_t bits) {
  return static_cast<float>(static_cast<int32_t>(bits >> 40) - (int32_t{1} << 23)) * 0x1p-23f;
}
float small_count(uint64_t bits) { return static_cast<float>(bits >> 60); }  // [0, 16)
float coin(uint64_t bits) { return static_cast<float>(bits >> 63); }

}  // namespace

Tensor random_tensor(DType dtype, const Shape& shape, uint64_t seed) {
  float (*const draw)(uint64_t) = dtype_traits(dtype).is_float ? uniform_signed_unit
                                  : dtype == DType::kBool      ? coin
                                                               : small_count;
  std::mt19937_64 engine(seed);
  std::vector<float> values(static_cast<size_t>(shape_numel(shape)));
  for (float& value : values) value = draw(engine());
  return Tensor::from_floats(dtype, shape, values);
}

}  // namespace mixprec
