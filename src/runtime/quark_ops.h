// The com.amd.quark operators on ONNX Runtime's CPU provider, so Quark-made models (and
// mixprec's own block-format models) run in a stock ONNX Runtime:
//   BFPQuantizeDequantize, MXQuantizeDequantize   fake quantization (mixprec/block_formats.h)
//   ExtendedQuantizeLinear, ExtendedDequantizeLinear   Q/DQ to int8/uint8/int16/uint16/int32
//       codes (round half to even, saturating), or to bfloat16/float16 "codes" x / scale + zp
//       when the zero point has that type
// and the same four under their older com.vai.quantize names (BFPFixNeuron, MXFixNeuron,
// VitisQuantizeLinear, VitisDequantizeLinear). Attributes and defaults are Quark's.
//
// Every session mixprec opens registers these domains (runtime.cpp); the standalone
// libmixprec_quark_ops.so (libs/quark_ops/) registers them into a user's own session.
#pragma once

#include <span>

struct OrtCustomOpDomain;
struct OrtApi;

namespace mixprec {

inline constexpr const char* kQuarkDomain = "com.amd.quark";
inline constexpr const char* kVitisQuantizeDomain = "com.vai.quantize";

// The two domains, created on first use; Ort::InitApi must have been called (the C++ API table
// is what the kernels use). They live as long as the process.
std::span<OrtCustomOpDomain* const> quark_op_domains();

}  // namespace mixprec
