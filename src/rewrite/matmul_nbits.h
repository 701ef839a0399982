// MatMulNBits: 4-bit block-wise MatMul weights as ONNX Runtime's com.microsoft MatMulNBits, the
// form its CPU provider runs with a 4-bit GEMM kernel instead of dequantizing the weight first.
//
//   Before:  W_q (int4/uint4 [K, N]) → DequantizeLinear(axis 0, block_size B) → W' → MatMul(A, W') → Y
//   After:   MatMulNBits(A, B_packed [N, K/B, B/2], scales [N * K/B], zero_points) → Y
//            (attributes K, N, bits 4, block_size B; zero_points left out when every one is 8)
//
// The codes are unsigned in MatMulNBits: an int4 code q is stored as q + 8 with zero point
// zp + 8, so (q' - zp') x scale is the same value; a K that is not a multiple of B pads the last
// block with the zero point (value 0). Applies where the DequantizeLinear reads constant 2-D
// codes, a scale per block (and a zero point per block, if any) along axis 0, B is a power of two
// >= 16 (MatMulNBits' rule), and the MatMul is the weight's only reader. Bodies of If/Loop/Scan
// are rewritten the same way.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace mixprec::rewrite {

inline constexpr const char* kMicrosoftDomain = "com.microsoft";

struct MatMulNBitsSummary {
  int64_t replaced = 0;           // MatMul + DequantizeLinear pairs now one MatMulNBits
  std::vector<std::string> kept;  // "node: why" for 4-bit MatMul weights left as DequantizeLinear
};

// Rewrites `model` in place (adding the com.microsoft opset import when something changed).
MatMulNBitsSummary use_matmul_nbits(onnx::ModelProto& model, const std::string& label);

}  // namespace mixprec::rewrite
