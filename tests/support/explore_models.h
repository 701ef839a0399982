// Tiny models whose sensitive layers are known by construction, for exploration tests.
#pragma once

#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "mixprec/evaluation.h"

namespace mixprec::testing {

// x [1,4] -> Add "spread" (+1000 on channel 0) -> MatMul "mix" (ignores channel 0) -> MatMul
// "head" -> y [1,4]. "mix" reads a tensor whose channel 0 is ~1000 while the channels that
// matter are within [-1, 1], so its per-tensor power-of-two int8 scale (2^ceil(log2(1001/127))
// = 8) rounds them all to zero. Lifting "mix" alone to BF16 restores the output.
onnx::ModelProto one_sensitive_layer_model();

// Two branches like the model above ("spread_k" -> "mix_k"), summed by "sum": each "mix_k"
// alone is worth lifting, and a PSNR target of 30 dB needs both.
onnx::ModelProto two_sensitive_layers_model();

// Like one_sensitive_layer_model, plus "echo": it reads the same huge-range tensor (so the
// dynamic-range ranking puts it first, ahead of "mix") but reaches y only through zero weights
// ("silence"), so lifting it cannot change y.
onnx::ModelProto dead_layer_first_model();

// A chain of `stages` MatMuls "rotate_i" by the same 4x4 orthonormal DCT-II matrix: every stage
// adds quantization noise of about the same power, so lifting one gains little (about
// 10*log10(60/59) = 0.07 dB for 60 stages) and noise from different stages sometimes cancels,
// so a lift can also make the output worse.
onnx::ModelProto rotation_chain_model(int stages);

// The seeded random data the tests on these models use: 16 calibration samples (seed 1) and
// 32 evaluation samples (seed 2), disjoint by seed.
DataSpec test_calibration_data();
DataSpec test_evaluation_data();

// The setup of a run on one of these models: `model_path`, `work_dir`, the data above and the
// target PSNR > 30 dB.
EvaluationSetup test_setup(const std::string& model_path, const std::string& work_dir);

// `count` seeded random [1, 4] samples as dir/calib_<i>.npy (seeds 100, 101, ...), for the CLI's
// --calibration-data; returns their paths.
std::vector<std::string> write_test_calibration_files(const std::string& dir, int count = 8);

}  // namespace mixprec::testing
