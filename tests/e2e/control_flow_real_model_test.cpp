// A real recurrent audio model with control flow: Silero VAD v5 (scripts/setup.sh), whose Convs
// and LSTMs all sit inside If branches, run on real speech (the alsa-utils recordings) with its
// three inputs (float audio, float state, int64 sample rate). Before bodies were handled,
// quantize counted its 4 main-graph nodes and left every Conv and LSTM float.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <string>

#include "mixprec/error.h"
#include "mixprec/jobs.h"
#include "mixprec/model_io.h"
#include "support/cli_runner.h"
#include "support/speech_frames.h"
#include "support/temp_dir.h"

namespace mixprec {
namespace {

const std::string kModel = std::string(MIXPREC_MODELS_DIR) + "/silero_vad_v5.onnx";
const std::string kSpeech = std::string(MIXPREC_DATA_DIR) + "/speech";

class ControlFlowRealModel : public testing::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    // 9 recordings x 4 frames: the first 3 frames of each calibrate, the last evaluates.
    const std::vector<std::string> frames = testing::write_speech_frames(kSpeech, path("frames"));
    for (const std::string& frame : frames) (frame.ends_with("_3.npz") ? eval_ : calib_).push_back(frame);
  }

  QuantizeReport quantize(const std::string& preset) {
    QuantizeParams params;
    params.setup.model_path = kModel;
    params.output_path = path(preset + ".onnx");
    params.config.preset = preset;
    params.setup.calibration.data.files = calib_;
    return quantize_job(params);
  }

  const OutputMetrics& speech_probability(const std::string& preset) {
    CompareParams params;
    params.setup.model_path = kModel;
    params.candidate_path = path(preset + ".onnx");
    params.setup.evaluation.data.files = eval_;
    reports_.push_back(compare_job(params));
    const auto& outputs = reports_.back().outputs;
    const auto it = std::ranges::find_if(outputs, [](const OutputMetrics& m) { return m.name == "output"; });
    EXPECT_NE(it, outputs.end());
    return *it;
  }

  std::vector<std::string> calib_, eval_;
  std::vector<CompareReport> reports_;
};

TEST_F(ControlFlowRealModel, Bf16LiftsEveryConvAndLstmInsideTheBranches) {
  const QuantizeReport q = quantize("BF16");
  EXPECT_EQ(q.nodes, 348u);       // every graph's nodes (the main graph has 4)
  EXPECT_EQ(q.nodes_bf16, 16u);   // 12 Conv and 4 LSTM, both sample-rate branches
  EXPECT_GE(q.rewrite.cast_pairs, 16);
  const OutputMetrics& m = speech_probability("BF16");
  EXPECT_GT(m.max_abs_error, 0.0);  // really lifted
  EXPECT_GT(m.psnr_db, 38.0);       // measured 43.7 dB on these frames
}

// Block formats inside the branches: MX9 nodes on the Convs' and LSTMs' inputs (no calibration).
// Their inputs there have dimensions neither known nor named; the first version of the nodes'
// shape inference passed those on as -1 and ONNX Runtime aborted in a later Slice.
TEST_F(ControlFlowRealModel, Mx9RoundsEveryConvAndLstmInsideTheBranches) {
  const QuantizeReport q = quantize("MX9");
  EXPECT_EQ(q.nodes_block, 16u);  // 12 Conv and 4 LSTM
  EXPECT_GE(q.rewrite.block_ops, 16);
  const OutputMetrics& m = speech_probability("MX9");
  EXPECT_GT(m.max_abs_error, 0.0);
  EXPECT_GT(m.psnr_db, 38.0);  // measured 46.0 dB on these frames (BF16: 43.7 dB)
}

// FP8 in the bodies: the branch calibration never took stays float, and its nodes move from the
// FP8 count (not the integer one) to float.
TEST_F(ControlFlowRealModel, Fp8NodesOfTheBranchThatNeverRanAreCountedFloat) {
  const QuantizeReport q = quantize("FP8E4M3");
  EXPECT_FALSE(q.rewrite.unobserved.empty());
  EXPECT_EQ(q.nodes_integer, 0u);
  EXPECT_GT(q.nodes_fp8, 0u);
  EXPECT_EQ(q.nodes_float + q.nodes_fp8 + q.nodes_bf16 + q.nodes_fp16 + q.nodes_block, q.nodes);
  EXPECT_GT(speech_probability("FP8E4M3").cosine, 0.99);
}

TEST_F(ControlFlowRealModel, Int8CalibratesTheTakenBranchAndSaysWhichBranchNeverRan) {
  const QuantizeReport q = quantize("U8S8");
  // The 16 kHz branch is calibrated inside its body; the 8 kHz branch never runs on 16 kHz audio.
  const auto never_ran = std::ranges::find_if(q.warnings, [](const std::string& w) {
    return w.find("If_0.else_branch never ran on the 27 calibration samples") != std::string::npos;
  });
  EXPECT_NE(never_ran, q.warnings.end());
  EXPECT_FALSE(q.rewrite.unobserved.empty());
  // Every node left float lies in a body a warning named (the 8 kHz branch, and the branch of
  // the LSTM's state check no single-frame sample takes).
  for (const std::string& node : q.rewrite.unobserved) {
    EXPECT_TRUE(std::ranges::any_of(q.warnings, [&](const std::string& w) {
      const size_t at = w.find("calibration: ");
      const size_t end = w.find(" never ran");
      return at != std::string::npos && end != std::string::npos && node.starts_with(w.substr(at + 13, end - at - 13) + "/");
    })) << node;
  }
  EXPECT_GE(q.nodes_integer, 6u);  // the taken branch's Convs (and its LSTM) at least
  // Every node is counted once: the unobserved ones moved from integer to float.
  EXPECT_EQ(q.nodes_float + q.nodes_integer + q.nodes_fp8 + q.nodes_bf16 + q.nodes_fp16 + q.nodes_block, q.nodes);
  EXPECT_GE(q.rewrite.qdq_pairs, 6);
  const OutputMetrics& m = speech_probability("U8S8");
  EXPECT_GT(m.max_abs_error, 0.0);
  EXPECT_GT(m.psnr_db, 25.0);  // measured 32 dB on 36 frames: int8 shifts the speech probability
  EXPECT_GT(m.cosine, 0.99);
}

TEST_F(ControlFlowRealModel, ExploreLiftsLayersInsideTheBranchesToMeetTheTarget) {
  // The three inputs (float audio, float state, int64 rate) go through every evaluation.
  const std::string frames = path("frames");
  const CliResult run = run_cli({"explore", kModel, "--preset", "XINT8", "--calibration-data", frames, "--data", frames,
                                 "--work-dir", path("work"), "--target-accuracy", "psnr>38", "--bf16-budget", "1"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("stopped     criterion met"), std::string::npos) << run.out;
  // Measured: 6 of 16 (5 Convs and the LSTM of the 16 kHz branch), 39.2 dB; full INT8 15.2 dB.
  const size_t lifted = run.out.find("lifted      ");
  ASSERT_NE(lifted, std::string::npos) << run.out;
  const int count = std::stoi(run.out.substr(lifted + 12));
  EXPECT_GE(count, 1);
  EXPECT_LT(count, 16);
  EXPECT_NE(run.out.find("If_0.then_branch/"), std::string::npos);
}

// --make-static on the VAD: with its inputs pinned, ONNX Runtime's shape inference of its If
// branch (the encoder and the LSTM) fails, so no static version of it loads: refused with the
// reason, nothing written. analyze lists the dims its bodies leave open.
TEST_F(ControlFlowRealModel, MakeStaticRefusesWhatOnnxRuntimeCannotInferStatic) {
  QuantizeParams params;
  params.setup.model_path = kModel;
  params.output_path = path("static.onnx");
  params.config.preset = "U8S8";
  params.setup.calibration.data.files = calib_;
  params.make_static = true;
  try {
    quantize_job(params);
    ADD_FAILURE() << "a static VAD was written";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
    EXPECT_NE(e.message().find("shape inference of the If/Loop/Scan bodies fails"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("LSTM"), std::string::npos) << e.message();
  }
  EXPECT_FALSE(std::filesystem::exists(path("static.onnx")));
  const std::vector<std::string> open = body_dynamic_dims(load_model(kModel));
  EXPECT_FALSE(open.empty());
  EXPECT_EQ(open.front().rfind("If_0.", 0), 0u) << open.front();
}

}  // namespace
}  // namespace mixprec
