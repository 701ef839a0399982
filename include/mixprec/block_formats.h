// Block formats: fake quantization of float32 values in blocks that share an exponent.
//
//  BFP (block floating point): each block of `block_size` values shares the largest biased
//    exponent of its elements; each element keeps a sign and bit_width - 9 mantissa bits
//    (BFP16: 7). "to_bfp" is plain BFP; "to_bfp_prime" (MX4/MX6/MX9 in Quark's naming) adds a
//    per-sub-block shift of up to 2^sub_block_shift_bits - 1 below the shared exponent.
//  MX (OCP Microscaling v1.0): each block shares an E8M0 scale 2^(E - emax_elem), E the largest
//    element exponent; elements are int8 (with the implicit 2^-6) or the minifloats FP8 E4M3,
//    FP8 E5M2, FP6 E3M2, FP6 E2M3, FP4 E2M1.
//
// The numerics are those of Quark's CPU kernels for its com.amd.quark BFPQuantizeDequantize and
// MXQuantizeDequantize operators, so a model quantized by either tool gives the same values:
//  - an exponent field of 0xFF (Inf/NaN) counts as 0 when the shared exponent is chosen, and
//    such elements pass through unchanged (to_bfp, MX); to_bfp_prime takes the raw maximum, so
//    a block holding Inf/NaN becomes all NaN, and flushes subnormal inputs to zero;
//  - rounding follows `BlockRounding` (Quark's rounding_mode), except the MX minifloats, which
//    always round half to even, and saturate at the element format's largest normal value;
//  - tensors are cut into lines along `axis`; each line's last block is zero-padded.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace mixprec {

// Quark's rounding_mode attribute: 0 std::round, 1 the DPU's rounding, 2 Python 3's round.
enum class BlockRounding : uint8_t {
  kHalfAwayFromZero = 0,
  kHalfUp = 1,      // ties toward +infinity
  kHalfToEven = 2,
};

enum class BfpMethod : uint8_t { kBfp, kBfpPrime };  // "to_bfp", "to_bfp_prime"

struct BfpSpec {
  BfpMethod method = BfpMethod::kBfp;
  int64_t bit_width = 16;            // sign + 8 shared exponent bits + mantissa bits
  int64_t block_size = 8;
  BlockRounding rounding = BlockRounding::kHalfAwayFromZero;
  int64_t sub_block_size = 2;        // to_bfp_prime only
  int64_t sub_block_shift_bits = 1;  // to_bfp_prime only
  // convert_to_bfloat_before_bfp: values are first rounded to bfloat16 (nearest even).
  bool round_to_bfloat16_first = false;
  // use_compiler_version_cpu_kernel (to_bfp only): the VAIML compiler's variant, which raises the
  // shared exponent by one when a largest-exponent element rounds out of the 8-bit code range.
  bool compiler_kernel = false;
};

enum class MxElement : uint8_t { kInt8, kFp8E4M3, kFp8E5M2, kFp6E3M2, kFp6E2M3, kFp4E2M1 };

// One row per element type (mx_element_traits()).
struct MxElementTraits {
  MxElement id;
  const char* name;  // element_dtype attribute value: "int8", "fp8_e4m3", ...
  int ebits;         // exponent bits (0 for int8)
  int mbits;         // mantissa bits (int8: 8, the code magnitude bits with sign)
  int emax;          // exponent of the largest normal value (int8: 0)
  float max_norm;    // largest magnitude (int8: 127 codes)
};

struct MxSpec {
  MxElement element = MxElement::kInt8;
  int64_t block_size = 32;
  BlockRounding rounding = BlockRounding::kHalfAwayFromZero;  // int8 elements only
};

const MxElementTraits& mx_element_traits(MxElement element);
std::span<const MxElementTraits> all_mx_elements();
// By element_dtype name; false when unknown.
bool mx_element_from_name(std::string_view name, MxElement* out);
// "int8, fp8_e4m3, ..." for messages.
std::string mx_element_names();

// What is wrong with a spec ("bit_width must be in [10, 16]", ...), or "" when it is valid.
std::string check_spec(const BfpSpec& spec);
std::string check_spec(const MxSpec& spec);

// One block: in.size() == out.size() == spec.block_size (in and out may alias). Valid specs only.
void bfp_block(std::span<const float> in, std::span<float> out, const BfpSpec& spec);
void mx_block(std::span<const float> in, std::span<float> out, const MxSpec& spec);

// The MX minifloat element rule is round_to_minifloat (mixprec/tensor.h), also FP8's.

// A whole tensor of `shape` (row-major, values.size() == product of shape), in blocks of
// consecutive elements along `axis` (negative counts from the end): every line along the axis
// is cut into blocks from its start, the last one zero-padded. A one-element tensor is returned
// unchanged (after the bfloat16 rounding when the spec asks for it); a rank-1 tensor is blocked
// along its only axis whatever `axis` says. The axis must be valid for rank >= 2 (asserted:
// callers check it). `out` may alias `values`.
void bfp_fake_quantize(std::span<const float> values, std::span<const int64_t> shape, int64_t axis,
                       const BfpSpec& spec, std::span<float> out);
void mx_fake_quantize(std::span<const float> values, std::span<const int64_t> shape, int64_t axis,
                      const MxSpec& spec, std::span<float> out);

// The same work in independent parts, for threads: block_work_units() units (a tensor of
// `count` elements), each done by one call with its index; together they write every element
// of `out` once, and no two units touch the same element.
size_t block_work_units(std::span<const int64_t> shape, int64_t axis, size_t count);
void bfp_fake_quantize_unit(std::span<const float> values, std::span<const int64_t> shape, int64_t axis,
                            const BfpSpec& spec, std::span<float> out, size_t unit);
void mx_fake_quantize_unit(std::span<const float> values, std::span<const int64_t> shape, int64_t axis,
                           const MxSpec& spec, std::span<float> out, size_t unit);

}  // namespace mixprec
