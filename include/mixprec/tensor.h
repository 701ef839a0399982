// Tensor: a dtype, a shape and one contiguous row-major buffer. The currency between data
// files, the runtime and the metrics. Owning, copyable, movable.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mixprec {

// Element types we move around. Values match nothing external; use the helpers below to map
// to ONNX TensorProto data types and numpy descriptors.
enum class DType : uint8_t {
  kFloat32, kFloat16, kBFloat16, kInt8, kUInt8, kInt16, kUInt16, kInt32, kInt64, kBool,
  // Quantized-code types (QuantizeLinear outputs, stored weights): FP8 E4M3FN / E5M2 (ONNX 17, 19)
  // and 4-bit integers (ONNX 22, 21). A Tensor keeps one byte per 4-bit element; the two-per-byte
  // packing of ONNX (first element in the low nibble) happens only at the ONNX boundary.
  kFloat8E4M3FN, kFloat8E5M2, kInt4, kUInt4,
};

// One row per dtype (see dtype_traits()).
struct DTypeTraits {
  DType dtype;
  const char* name;         // "float32", "bfloat16", ...
  size_t size;              // bytes per element in a Tensor
  int bits;                 // bits per element in ONNX buffers (raw_data, ONNX Runtime values): 4 for int4
  int32_t onnx_type;        // onnx::TensorProto_DataType value
  const char* npy_descr;    // little-endian numpy descr ("<f4", "|i1", "<V2" for bfloat16 ...); "" when
                            // numpy has no type for it (fp8, int4: ml_dtypes writes them all as "|V1")
  bool is_float;
  // Row conversions of `count` elements (element buffers need no alignment), with the rules
  // of Tensor::to_floats and Tensor::from_floats.
  void (*to_float)(const std::byte* elements, float* out, size_t count);
  void (*from_float)(const float* values, std::byte* out, size_t count);
};

const DTypeTraits& dtype_traits(DType dtype);
// Every row, in DType order.
std::span<const DTypeTraits> all_dtype_traits();
size_t dtype_size(DType dtype);
const char* dtype_name(DType dtype);
// Throws mixprec::Error (kUnsupported) for ONNX types outside the table (strings, complex, ...).
DType dtype_from_onnx(int32_t onnx_type);
int32_t dtype_to_onnx(DType dtype);
// Returns false when `name` is not a known dtype name.
bool dtype_from_name(std::string_view name, DType* out);

using Shape = std::vector<int64_t>;

// Number of elements of a fully known shape (all dims >= 0). Scalar shape {} has 1 element;
// any 0 dim gives 0. Throws mixprec::Error kInternal for a dynamic dim (resolve shapes first)
// and kBadInput when the count does not fit in int64.
int64_t shape_numel(const Shape& shape);
// "1x3x48x192"; dynamic dims (< 0) print as "?". Scalar prints as "scalar".
std::string shape_to_string(const Shape& shape);

class Tensor {
 public:
  Tensor() = default;
  // Zero-initialised tensor. All dims must be >= 0 (errors as shape_numel; kBadInput too when
  // the byte size overflows).
  Tensor(DType dtype, Shape shape);
  // Copies `bytes`, which must be exactly numel * dtype_size bytes (kInternal otherwise).
  Tensor(DType dtype, Shape shape, std::span<const std::byte> bytes);

  // A float32 tensor holding `values`, which must be exactly numel (kInternal otherwise).
  static Tensor from_floats(Shape shape, std::span<const float> values);
  // The same, converted to `dtype`: float16/bfloat16 round to nearest even; integers round to
  // nearest even and saturate to the type's range, NaN becomes 0; bool is value != 0 (so NaN
  // is true).
  static Tensor from_floats(DType dtype, Shape shape, std::span<const float> values);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t numel() const { return shape_numel(shape_); }
  size_t byte_size() const { return data_.size(); }

  std::byte* data() { return data_.data(); }
  const std::byte* data() const { return data_.data(); }

  // Typed views; assert that T's size matches the dtype's element size.
  template <typename T> std::span<T> as() {
    assert(sizeof(T) == dtype_size(dtype_));
    return {reinterpret_cast<T*>(data_.data()), data_.size() / sizeof(T)};
  }
  template <typename T> std::span<const T> as() const {
    assert(sizeof(T) == dtype_size(dtype_));
    return {reinterpret_cast<const T*>(data_.data()), data_.size() / sizeof(T)};
  }

  // Every element converted to float (float16/bfloat16 exactly, integers as values, bool 0/1).
  std::vector<float> to_floats() const;

  // Same dtype, same shape, same bytes.
  bool operator==(const Tensor& other) const = default;

 private:
  DType dtype_ = DType::kFloat32;
  Shape shape_;
  std::vector<std::byte> data_;
};

// Tensors by name, in a meaningful order (model input order, npz member order).
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// A tensor's shape and element type as a run saw it (observe_tensors), without its data.
struct ObservedTensor {
  Shape shape;
  DType dtype = DType::kFloat32;
};

// IEEE half and bfloat16 conversions: round-to-nearest-even, NaN stays NaN, overflow → inf.
uint16_t float_to_half(float value);
float half_to_float(uint16_t bits);
uint16_t float_to_bfloat16(float value);
float bfloat16_to_float(uint16_t bits);

// x rounded to the nearest value of a minifloat with `ebits` exponent and `mbits` mantissa bits
// (bias 2^(ebits-1) - 1, subnormals kept), ties to even, finite magnitudes saturated at
// `max_norm` (the format's largest value: 448 for FP8 E4M3FN, 57344 for E5M2, 6 for FP4 E2M1).
// Inf/NaN pass through. The rule of ONNX's saturating casts to float8 and of the OCP MX elements.
float round_to_minifloat(float x, int ebits, int mbits, float max_norm);

// FP8 bit patterns (ONNX FLOAT8E4M3FN: no infinities, NaN 0x7F/0xFF; FLOAT8E5M2: IEEE-like),
// encoded as ONNX's Cast and QuantizeLinear with saturate=1 (their default): round to nearest
// even; out-of-range values and infinities saturate to the largest finite value (448, 57344);
// NaN stays NaN (0x7F / 0x7E with the sign).
uint8_t float_to_float8e4m3fn(float value);
float float8e4m3fn_to_float(uint8_t bits);
uint8_t float_to_float8e5m2(float value);
float float8e5m2_to_float(uint8_t bits);

// ONNX's 4-bit packing: element 2i in the low nibble of byte i, element 2i+1 in its high
// nibble; an odd count leaves the last high nibble 0. `codes` are one int4/uint4 per byte.
std::vector<std::byte> pack_4bit(std::span<const std::byte> codes);
// The inverse, for `count` elements; signed nibbles are sign-extended.
std::vector<std::byte> unpack_4bit(std::span<const std::byte> packed, size_t count, bool is_signed);
// Bytes `count` elements of `dtype` occupy in ONNX buffers (ceil(count / 2) for 4-bit types).
size_t onnx_byte_size(DType dtype, size_t count);

}  // namespace mixprec
