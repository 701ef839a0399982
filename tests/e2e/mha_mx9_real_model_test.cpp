// mixprec mha-mx9 on the recognizer (SVTR neck: two attention blocks whose fused QKV projections
// split through Reshape -> Transpose -> Slice -> Squeeze), float and XINT8-quantized.
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>

#include "mixprec/model_io.h"
#include "support/cli_runner.h"
#include "support/temp_dir.h"

namespace mixprec {
namespace {
namespace fs = std::filesystem;

const std::string kModels = MIXPREC_MODELS_DIR;
const std::string kCalib = std::string(MIXPREC_DATA_DIR) + "/calib";
const std::string kEval = std::string(MIXPREC_DATA_DIR) + "/eval";

class MhaMx9RealModel : public testing::TempDirTest {
 protected:
  CliResult pipeline(const std::string& model, const std::string& output) {
    return run_cli({"mha-mx9", model, "-o", output, "--input-shape", "x=1x3x48x320", "--data", kEval, "--preprocess",
                    "ppocr_cls_rec", "--image-size", "48x320"});
  }
  static std::string step_line(const std::string& out, const std::string& step) {
    const size_t at = out.find(step);
    return at == std::string::npos ? "" : out.substr(at, out.find('\n', at) - at);
  }
};

TEST_F(MhaMx9RealModel, TheRecognizersAttentionGoesToMx9) {
  const CliResult r = pipeline(kModels + "/ppocr_rec.onnx", path("rec_mx9.onnx"));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::cout << r.out;
  EXPECT_NE(r.out.find("opset    9 -> 13"), std::string::npos);
  EXPECT_NE(r.out.find("attention blocks 2"), std::string::npos);
  // Both q+k+v projections split, both operands of the 4 attention MatMuls wrapped, the 4
  // residual Adds of the two blocks in BF16.
  EXPECT_NE(step_line(r.out, "split fused QKV").find(" 2  (p2o.MatMul.0"), std::string::npos) << r.out;
  EXPECT_NE(step_line(r.out, "wrap attention MatMuls with MX9").find(" 8  "), std::string::npos) << r.out;
  EXPECT_NE(step_line(r.out, "residual adds to bf16 casts").find(" 4  "), std::string::npos) << r.out;
  // Against the float model: per-step top-1 unchanged on every picture (64.1 dB SQNR measured).
  EXPECT_NE(r.out.find("100.000%  100.000%"), std::string::npos) << r.out;
  const onnx::ModelProto out = load_model(path("rec_mx9.onnx"));
  size_t block_ops = 0;
  for (const auto& node : out.graph().node()) block_ops += node.op_type() == "BFPQuantizeDequantize" ? 1 : 0;
  EXPECT_EQ(block_ops, 8u);
}

TEST_F(MhaMx9RealModel, AQuantizedRecognizerLosesItsAttentionQdq) {
  const CliResult q = run_cli({"quantize", kModels + "/ppocr_rec.onnx", "--preset", "XINT8", "-o", path("rec_x.onnx"),
                               "--calibration-data", kCalib, "--preprocess", "ppocr_cls_rec", "--image-size", "48x320"});
  ASSERT_EQ(q.exit_code, 0) << q.out << q.err;
  const CliResult r = pipeline(path("rec_x.onnx"), path("rec_x_mx9.onnx"));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::cout << r.out;
  // The quantized projections stay fused (their Q/DQ covers all three parts), and say so.
  EXPECT_NE(r.out.find("p2o.MatMul.0: a fused projection with quantized output"), std::string::npos) << r.out;
  EXPECT_NE(step_line(r.out, "strip Q/DQ on the attention path").find(" 8  "), std::string::npos) << r.out;
  EXPECT_NE(step_line(r.out, "residual adds to bf16 casts").find(" 4  "), std::string::npos) << r.out;
  const onnx::ModelProto out = load_model(path("rec_x_mx9.onnx"));
  size_t block_ops = 0;
  for (const auto& node : out.graph().node()) block_ops += node.op_type() == "BFPQuantizeDequantize" ? 1 : 0;
  EXPECT_EQ(block_ops, 8u);
}

}  // namespace
}  // namespace mixprec
