// Formats: the table of numeric formats a tensor can be put in, and the scale / zero-point /
// rounding math that turns a float range into quantization parameters and values into codes.
//
// Integer and FP8 formats are emulated in the graph as QuantizeLinear/DequantizeLinear pairs
// (FP8's codes are float8 values, scale x code as for integers); BF16 and
// FP16 as Cast-to-low/Cast-to-float pairs; the block formats (BFP16, MX*) as one com.amd.quark
// BFPQuantizeDequantize / MXQuantizeDequantize node per activation, with weights rounded
// offline (mixprec/block_formats.h). Everything here is exact, deterministic arithmetic:
// rounding is round-half-to-even everywhere (as QuantizeLinear does), codes saturate at the
// format's limits, and a degenerate range (all zeros, an all-zero weight channel) gives a
// finite positive scale, never 0, Inf or NaN.
#pragma once

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mixprec/block_formats.h"
#include "mixprec/tensor.h"

namespace mixprec {

enum class FormatId : uint8_t {
  kFloat32,   // left as is
  kXInt8,     // int8, symmetric, power-of-two scale, per tensor (NPU style; Quark XInt8Spec)
  kInt8,
  kUInt8,
  kInt16,
  kUInt16,
  kBFloat16,  // exact emulation by casts
  kFloat16,   // exact emulation by casts
  // Block formats (shared exponent per block), with Quark's parameters (block_format()).
  kBfp16,      // BFP, 8 values share an exponent, 8-bit sign+mantissa
  kMx4,        // Microexponents (to_bfp_prime) with 11, 13, 16 bits: blocks of 16,
  kMx6,        //   sub-blocks of 2 with a 1-bit shift
  kMx9,
  kMxInt8,     // OCP MX: blocks of 32 with an E8M0 scale
  kMxFp8E4M3,
  kMxFp8E5M2,
  kMxFp6E3M2,
  kMxFp6E2M3,
  kMxFp4E2M1,
  // Scaled Q/DQ with FP8 codes (ONNX Runtime's float8 QuantizeLinear, opset 21 for its
  // output_dtype; symmetric, zero point 0 and left out), and 4-bit integer codes (opset 21; per channel or in blocks along the
  // reduction axis, as weights usually are).
  kFp8E4M3,    // FLOAT8E4M3FN, largest 448
  kFp8E5M2,    // FLOAT8E5M2, largest 57344
  kInt4,
  kUInt4,
};

// One row per format (see format_traits()); adding a format is one row plus its tests.
struct FormatTraits {
  FormatId id;
  const char* name;            // "xint8", "int8", ..., "bf16", "fp16", "fp32"
  const char* spec_name;       // Quark spec name: "XInt8Spec", "Int8Spec", ..., "BFloat16Spec"
  bool is_qdq;                 // emulated by a QuantizeLinear/DequantizeLinear pair with a scale
                               // (integer codes, or FP8 codes when storage is a float8 type)
  bool is_block;               // a BFP/MX block format: fake quantized by a com.amd.quark node
  DType storage;               // element type of quantized codes / cast target
  int64_t qmin, qmax;          // code range (FP8: +-the largest finite value; 0, 0 for float formats)
  bool power_of_two_scale;     // scale must be 2^k
  bool symmetric_default;      // default when the config does not say
  bool per_channel_allowed;    // per-channel weights make sense
  int64_t min_opset;           // QuantizeLinear opset the format needs per tensor (int16: 21;
                               // an axis needs at least 13), 0 for casts
};

const FormatTraits& format_traits(FormatId id);
// Q/DQ formats whose codes are integers (not FP8): what int32 bias codes, AdaRound's rounding
// choice and integer kernels need.
bool has_integer_codes(FormatId id);

// A block format's fake quantization: BFP (bfp_method to_bfp / to_bfp_prime) or MX. The axis
// is the consumer's (insert_qdq blocks along the dot product's reduction axis).
struct BlockFormat {
  bool mx = false;  // MXQuantizeDequantize (mx) or BFPQuantizeDequantize (bfp)
  BfpSpec bfp;
  MxSpec mx_spec;
};
// nullptr for the formats that are not block formats.
const BlockFormat* block_format(FormatId id);
// `values` of `shape` through `block`'s fake quantization (bfp_fake_quantize or
// mx_fake_quantize), blocked along `axis`; `out` may alias `values`.
void fake_quantize_blocks(const BlockFormat& block, std::span<const float> values, std::span<const int64_t> shape,
                          int64_t axis, std::span<float> out);
// The formats' names, comma separated, in the given order ("xint8, bf16").
std::string format_names(std::span<const FormatId> formats);
// The built-in formats in FormatId order, then the added ones (add_format).
std::vector<FormatTraits> all_formats();
// By spec name ("Int8Spec") or short name ("int8"), case-sensitive. nullopt when unknown.
// fp32 is "Float32Spec": Quark has no such spec; it names "leave this tensor in float".
std::optional<FormatId> format_from_name(std::string_view name);

// Formats added at run time (a plugin's, mixprec/plugins.h): fake quantization by one custom
// ONNX op, domain:op_type with the given attributes, that the plugin's custom-op library
// computes (float in, float out, the input's shape). The rewrite puts it on every activation a
// config gives the format (x -> op -> x') and, with `weights`, on the weight (w -> op -> w', the
// weight kept float), with no statistics: the op sees the values themselves. Otherwise such a
// format is a float format to mixprec (no scale, no codes; format_traits gives is_qdq and
// is_block false and float32 storage), allowed on every device (the plugin's manifest says
// where it runs), and as fast as `speed_as` in the cost model. Their FormatId values follow the
// built-in ones, in the order added; files name formats, never their numbers. Add them before
// any run starts: the table is read without a lock.
struct AddedFormatAttribute {
  std::string name;
  enum class Kind : uint8_t { kInt, kFloat, kString } kind = Kind::kInt;
  int64_t i = 0;
  float f = 0;
  std::string s;

  bool operator==(const AddedFormatAttribute&) const = default;
};
struct AddedFormat {
  std::string name;       // short name ("step-half"), unique among all formats
  std::string spec_name;  // config spelling ("StepHalfSpec"), unique too
  std::string origin;     // who added it ("plugin passes"): named in its errors
  std::string domain, op_type;
  std::vector<AddedFormatAttribute> attributes;
  bool weights = true;
  FormatId speed_as = FormatId::kBFloat16;  // a built-in format
};
// kBadInput (no file, naming format.origin) for an empty or taken name or spec name, a missing
// domain or op type, or speed_as not built in: what add_format refuses, checked before adding.
void check_added_format(const AddedFormat& format);
// check_added_format, then kBadInput for too many formats; the new format's id.
FormatId add_format(AddedFormat format);
const AddedFormat* added_format(FormatId id);  // nullptr for the built-in ones

// Parameters of one quantized tensor: one scale/zero point per tensor (axis -1), one per
// channel along `axis` (axis >= 0, block_size 0), or one per block of `block_size` consecutive
// elements along `axis` (ONNX's blocked DequantizeLinear, opset 21): then the parameters form a
// tensor of the weight's shape with dimension `axis` shrunk to ceil(dim / block_size), stored
// row-major (block_shape()). Float formats have no parameters (both vectors empty).
struct QuantParams {
  std::vector<float> scale;
  std::vector<int32_t> zero_point;
  int64_t axis = -1;
  int64_t block_size = 0;
};
// The shape of the scale/zero-point tensor of `params` for a tensor of `shape`: {} per tensor,
// {channels} per channel, the blocked shape for block-wise parameters.
Shape param_shape(const QuantParams& params, const Shape& shape);

struct ParamOptions {
  bool symmetric = true;
  // Formats whose traits require it always use power-of-two scales; this forces it for others.
  bool power_of_two = false;
  // Weights only: parameters per block of this many elements along the axis (0: per channel).
  int64_t block_size = 0;
};

// The largest code magnitude of symmetric quantization: qmax for signed formats (127 for
// int8), (qmax - qmin) / 2 for unsigned ones (127 for uint8, around zero point 128).
// 0 for float formats.
int64_t symmetric_qmax(FormatId format);

// The smallest scale ever produced: ranges narrower than this (e.g. all-zero channels) use it,
// so dequantized values stay exact zeros and no scale is 0, Inf or NaN.
inline constexpr float kMinScale = 1.0f / (1 << 24);

// Per-tensor scale and zero point covering [rmin, rmax] (the range is first widened to
// include 0):
//  symmetric:  scale = max(|rmin|, |rmax|) / symmetric_qmax, zero point 0 for signed formats
//              and (qmin + qmax + 1) / 2 for unsigned ones (128, 32768). For signed formats the
//              codes are [qmin, qmax] = [-128, 127] but the range maps onto [-127, 127]: -128
//              is reachable only by saturation, so the grid is the same on both sides of 0;
//  asymmetric: scale = (rmax - rmin) / (qmax - qmin), zero point = round(qmin - rmin / scale)
//              clamped to [qmin, qmax];
//  power of two (format rule or option): the scale above rounded UP to the next 2^k, so the
//              range never overflows (PowerOfTwo_NonOverflow semantics).
// Arithmetic is in double, rounded to float once (rmax - rmin neither overflows nor loses
// bits).
// Degenerate input never yields a scale of 0, Inf or NaN: a range so narrow that the scale
// would fall below kMinScale (all zeros) uses kMinScale, and a NaN or infinite bound is taken
// as the finite extreme on its side (rmin -> lowest float, rmax -> largest float): the one
// choice that still covers whatever the bound stood for.
// Float formats: empty parameters.
QuantParams choose_params(FormatId format, float rmin, float rmax, const ParamOptions& options = {});

// (q - zero_point) * scale, as DequantizeLinear.
inline float dequantize_value(int32_t q, float scale, int32_t zero_point) {
  return static_cast<float>(q - zero_point) * scale;
}

// One channel's quantization with the format's code range looked up once: the single home of
// the rounding arithmetic, inline so that loops over many values (quantize_tensor, the range
// searches) pay no call per value. Q/DQ formats only (asserted).
//  quantize: round-half-to-even of x / scale (float division, as QuantizeLinear) plus the
//            zero point, saturated to [qmin, qmax]; +-Inf saturate, NaN gives the zero point
//            (so it dequantizes to 0). Uses the current rounding mode, which must be the
//            default round-to-nearest: nothing here changes the floating-point environment.
//            Integer codes only (asserted);
//  code:     the code as a float: the integer code, or for FP8 x / scale rounded to the FP8
//            grid as ONNX's saturating float8 QuantizeLinear does (NaN stays NaN);
//  fake_quantize: (code - zero point) x scale.
class Quantizer {
 public:
  Quantizer(FormatId format, float scale, int32_t zero_point);

  int32_t quantize(float x) const {
    assert(fp8_ebits_ == 0);
    if (std::isnan(x)) return zero_point_;
    // Rounding before adding the zero point, as QuantizeLinear; codes up to 65535 are exact in float.
    const float code = std::nearbyint(x / scale_) + static_cast<float>(zero_point_);
    return static_cast<int32_t>(std::clamp(code, qmin_, qmax_));
  }
  float code(float x) const {
    if (fp8_ebits_ == 0) return static_cast<float>(quantize(x));
    // Infinities saturate (ONNX's saturate=1); NaN stays NaN, as the float8 value does.
    const float scaled = std::clamp(x / scale_, qmin_, qmax_);
    return round_to_minifloat(scaled, fp8_ebits_, fp8_mbits_, qmax_);
  }
  float dequantize(int32_t q) const { return dequantize_value(q, scale_, zero_point_); }
  float fake_quantize(float x) const {
    return fp8_ebits_ == 0 ? dequantize(quantize(x)) : code(x) * scale_;
  }

 private:
  float scale_;
  int32_t zero_point_;
  float qmin_, qmax_;
  int fp8_ebits_ = 0, fp8_mbits_ = 0;  // FP8 codes: the float8 layout; 0 for integer codes
};

// Quantizer(format, scale, zero_point).quantize(x).
int32_t quantize_value(float x, float scale, int32_t zero_point, FormatId format);
// x through the format and back: fake quantization with the parameters of `channel` (0 for
// per-tensor parameters) for integer formats; bf16/fp16 rounding (round-to-nearest-even) for
// float formats, whose `params` are ignored; identity for fp32; for a block format, x alone in
// a block of zeros.
float fake_quantize_value(float x, const QuantParams& params, size_t channel, FormatId format);

// Quantizes a float tensor (any float dtype) to a tensor of the format's storage type with the
// same shape: integer codes (per channel when params.axis >= 0, which needs
// params.scale.size() == shape[axis]), or for float formats the values cast to bf16/fp16/fp32.
// Parameters that do not fit the tensor, or a block format (rounded along an axis by
// bfp_fake_quantize/mx_fake_quantize), are a programmer error (kInternal).
Tensor quantize_tensor(const Tensor& values, const QuantParams& params, FormatId format);

// The inverse: (code - zero point) x scale for every element of `codes` (integer or FP8 codes),
// with `params` laid out as quantize_tensor takes them (zero points may be empty: 0). A float32
// tensor of the same shape. kBadInput when the parameters do not fit the codes' shape (the
// message says how many they hold and need).
Tensor dequantize_tensor(const Tensor& codes, const QuantParams& params);

// Parameters for a weight from its values (NaN elements are ignored, infinities are taken as
// the finite extremes): one scale/zero point per slice along `axis` (each channel's own
// min/max; an all-zero channel gets kMinScale), or per tensor when axis is -1. kBadInput when
// the axis is outside [-1, rank) or the format does not allow per-channel parameters.
QuantParams choose_weight_params(const Tensor& weight, FormatId format, int64_t axis, const ParamOptions& options);

// Bias codes for Int32Bias: int32 round-half-to-even of bias / scale, where `scales` are the
// bias scales the caller also writes into the graph: input scale x weight scale, one entry, or
// one per element of the 1-D bias (per output channel when the weight is per channel). The
// division is done in double (int32 codes need more than float's 24-bit significand), codes
// saturate to the int32 range, and a NaN bias element gives 0. Scales must be finite and > 0
// (kInternal otherwise).
Tensor quantize_bias(const Tensor& bias, std::span<const float> scales);

// The first bias element whose code at `scales` (as quantize_bias takes them) falls outside
// the int32 range, where quantize_bias would saturate: a weight channel of zeros (or nearly)
// gets a scale near kMinScale, and bias / (input scale x kMinScale) overflows. nullopt when
// every element fits.
std::optional<size_t> saturating_bias_element(const Tensor& bias, std::span<const float> scales);

// What raise_weight_scales_for_bias changed.
struct BiasFit {
  size_t raised = 0;     // weight scales raised (channels, or 1 for a per-tensor scale)
  double factor = 1.0;   // the largest raise, new scale / old
};

// Raises weight scales just enough that every element of the 1-D `bias` has an int32 code at
// input_scale x weight scale (as quantize_bias takes them): one scale per bias element, or one
// for the whole weight. ONNX Runtime turns a float bias next to dequantized input and weight
// into int32 codes at that scale itself (its WeightBiasQuantization, at every optimization
// level above none) and an overflowing code wraps to INT32_MIN, so a bias cannot be left float
// there; a larger weight scale only coarsens that channel's weight grid (it never clips, the
// zero point stays). A power-of-two format's scale is raised to the next 2^k. NaN bias elements
// and scales that already fit are left alone.
BiasFit raise_weight_scales_for_bias(const Tensor& bias, float input_scale, std::vector<float>& weight_scales,
                                     bool power_of_two);

}  // namespace mixprec
