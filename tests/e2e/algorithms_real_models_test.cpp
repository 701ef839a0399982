// The algorithms stage on the real PP-OCR models: CLE keeps every model's FP32 outputs, and
// SmoothQuant the recognizer's (both are exact up to float rounding), and CLE + bias correction through the CLI recover accuracy on
// the classifier.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <regex>

#include "mixprec/algorithms.h"
#include "mixprec/evaluation.h"
#include "mixprec/jobs.h"
#include "mixprec/model_io.h"
#include "mixprec/rewrite.h"
#include "mixprec/tensor_proto.h"
#include "support/cli_runner.h"
#include "support/temp_dir.h"

namespace mixprec {
namespace {

const std::string kModels = MIXPREC_MODELS_DIR;
const std::string kCalib = std::string(MIXPREC_DATA_DIR) + "/calib";
const std::string kEval = std::string(MIXPREC_DATA_DIR) + "/eval";

// Equalization rescales weights by non-power-of-two factors: each layer's result moves by a
// few float roundings, which a deep network carries to its outputs. Measured at most 2.4e-5
// of each output's peak on these models (det 320x320 with Mul tails; cls and rec ~1e-6); 1e-4
// leaves room for other CPUs' kernels and is still far below any quantization error (int8: ~1e-2).
constexpr double kRelativeRounding = 1e-4;

struct ModelCase {
  const char* file;
  const char* preprocess;
  int64_t height;
  int64_t width;
  size_t min_pairs;  // equalizable pairs found today (plain preparation / with FoldConvAffine)
  size_t mul_tails = 0;  // layers read only by a constant Mul (CLEMulTails), without FoldConvAffine
};

DataSpec pictures(const std::string& folder, const ModelCase& c) {
  DataSpec spec;
  spec.data.files = {folder};
  spec.preprocess = c.preprocess;
  spec.image_height = c.height;
  spec.image_width = c.width;
  return spec;
}

// The largest |change| of any output between two sessions on the first `count` samples of
// `source`, relative to that output's peak over those samples. A detector's map is ~0 on a
// picture without text, so the peak is taken over all of them and must not be 0: a comparison
// of zeros would say nothing.
double largest_relative_change(const Session& before, const Session& after, const SampleSource& source, size_t count) {
  std::vector<double> peak, diff;
  for (size_t i = 0; i < std::min(count, source.size()); ++i) {
    const NamedTensors want = before.run(source.sample(i));
    const NamedTensors got = after.run(source.sample(i));
    EXPECT_EQ(want.size(), got.size());
    peak.resize(want.size(), 0.0);
    diff.resize(want.size(), 0.0);
    for (size_t o = 0; o < std::min(want.size(), got.size()); ++o) {
      const auto w = want[o].second.as<float>();
      const auto g = got[o].second.as<float>();
      EXPECT_EQ(w.size(), g.size());
      if (w.size() != g.size()) continue;
      for (size_t k = 0; k < w.size(); ++k) {
        peak[o] = std::max(peak[o], std::fabs(static_cast<double>(w[k])));
        diff[o] = std::max(diff[o], std::fabs(static_cast<double>(w[k]) - g[k]));
      }
    }
  }
  double worst = 0;
  for (size_t o = 0; o < peak.size(); ++o) {
    EXPECT_GT(peak[o], 0.0) << "output " << o << " is 0 on every sample: the comparison would say nothing";
    worst = std::max(worst, peak[o] > 0 ? diff[o] / peak[o] : diff[o]);
  }
  return worst;
}

TEST(AlgorithmsRealModel, CleKeepsFp32OutputsToFloatRounding) {
  // PP-LCNet's learnable affine (a scalar Mul after each Conv) gives det and rec their Mul tails.
  const ModelCase cases[] = {{"ppocr_det.onnx", "ppocr_det", 320, 320, 15, 28},
                             {"ppocr_cls.onnx", "ppocr_cls_rec", 48, 192, 15, 0},
                             {"ppocr_rec.onnx", "ppocr_cls_rec", 48, 320, 1, 28}};
  for (const ModelCase& c : cases) {
    for (const bool fold_affine : {false, true}) {
      for (const bool mul_tails : {false, true}) {
        SCOPED_TRACE(std::string(c.file) + (fold_affine ? " with FoldConvAffine" : "") + (mul_tails ? " with Mul tails" : ""));
        const std::string path = kModels + "/" + c.file;
        const onnx::ModelProto model = load_model(path);
        const onnx::ModelProto folded = prepare_model(model, {.fold_affine = fold_affine}, path);
        PrepareSummary summary;
        const onnx::ModelProto equalized = prepare_model(
            model, {.fold_affine = fold_affine, .cle = CleSettings{.steps = -1, .mul_tails = mul_tails}}, path, &summary);
        ASSERT_TRUE(summary.cle);
        EXPECT_GE(summary.cle->pairs, c.min_pairs);
        if (!mul_tails) {
          EXPECT_EQ(summary.cle->mul_tails, 0u);
        } else if (!fold_affine) {
          EXPECT_EQ(summary.cle->mul_tails, c.mul_tails);
        }
        const Session before = Session::from_model(folded, path);
        const Session after = Session::from_model(equalized, path);
        const auto source = open_samples(pictures(kEval, c), before.inputs(), path);
        const double worst = largest_relative_change(before, after, *source, 8);
        std::cout << "[ measured ] " << c.file << (fold_affine ? " (FoldConvAffine)" : "") << ": CLE " << summary.cle->pairs
                  << " pairs, " << summary.cle->mul_tails << " Mul tails, " << summary.cle->steps
                  << " steps, largest output change " << worst << " of the peak\n";
        EXPECT_LT(worst, kRelativeRounding);
      }
    }
  }
}

TEST(AlgorithmsRealModel, SmoothQuantKeepsTheRecognizersFp32Outputs) {
  // The recognizer's SVTR neck: LayerNorm -> qkv / fc1 MatMuls (folded), attention output ->
  // proj and activation -> fc2 (through a float Mul).
  const ModelCase rec{"ppocr_rec.onnx", "ppocr_cls_rec", 48, 320, 0};
  const std::string path = kModels + "/" + rec.file;
  const onnx::ModelProto prepared = prepare_model(load_model(path), {}, path);
  const Session before = Session::from_model(prepared, path);
  const auto calibration = open_samples(pictures(kCalib, rec), before.inputs(), path);
  const ChannelMaximaFn measure = [&](const onnx::ModelProto& model, const std::vector<std::string>& tensors, size_t& samples) {
    samples = 4;
    return measure_channel_maxima(model, tensors, *calibration, {0, 1, 2, 3}, {}, path);
  };
  PrepareSummary summary;
  const onnx::ModelProto smoothed = prepare_model(prepared, {.smooth_quant = SmoothQuantSettings{}}, path, &summary, &measure);
  ASSERT_TRUE(summary.smooth_quant);
  const SmoothQuantSummary& sq = *summary.smooth_quant;
  EXPECT_GE(sq.groups, 4u);
  EXPECT_GE(sq.folded, 2u);
  EXPECT_EQ(sq.groups, sq.folded + sq.muls);
  const Session after = Session::from_model(smoothed, path);
  const auto evaluation = open_samples(pictures(kEval, rec), before.inputs(), path);
  const double worst = largest_relative_change(before, after, *evaluation, 2);
  std::cout << "[ measured ] " << rec.file << ": SmoothQuant " << sq.groups << " activations (" << sq.folded << " folded, "
            << sq.muls << " Muls) for " << sq.layers << " layers, scales up to " << sq.max_scale_ratio
            << "x apart; largest output change " << worst << " of the peak\n";
  for (const std::string& note : sq.notes) std::cout << "[ measured ]   " << note << "\n";
  EXPECT_LT(worst, kRelativeRounding);
}

class AlgorithmsCli : public testing::TempDirTest {
 protected:
  // `mixprec quantize` of the classifier with `head` (preset or config, output), on the
  // calibration pictures.
  testing::CliResult quantize_cls(std::vector<std::string> head) {
    for (const char* arg : {"--preprocess", "ppocr_cls_rec", "--image-size", "48x192", "--calibration-data"}) head.emplace_back(arg);
    head.push_back(kCalib);
    head.insert(head.begin(), {"quantize", kModels + "/ppocr_cls.onnx"});
    return run_cli(head);
  }
};

double psnr_of(const std::string& model, const std::string& reference) {
  CompareParams params;
  params.setup.model_path = reference;
  params.candidate_path = model;
  params.setup.evaluation = pictures(kEval, {"", "ppocr_cls_rec", 48, 192, 0});
  return compare_job(params).outputs.at(0).psnr_db;
}

TEST_F(AlgorithmsCli, CleAndBiasCorrectionRecoverTheClassifier) {
  const std::string cls = kModels + "/ppocr_cls.onnx";
  const testing::CliResult plain = quantize_cls({"--preset", "XINT8", "-o", path("plain.onnx")});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  nlohmann::ordered_json config = nlohmann::ordered_json::parse(std::ifstream(path("plain.config.json")));
  config["extra_options"]["NumCalibSamples"] = 16;
  // The classifier's shifts come mostly from its quantized SE gates (Mul) and pooling, which
  // only the model mode takes back (the layer mode loses 1.5 dB here).
  config["algo_config"] = nlohmann::ordered_json::parse(R"([{"name": "cle"}, {"name": "bias_correction", "mode": "model"}])");
  std::ofstream(path("algo.json")) << config.dump(2);
  const testing::CliResult recovered = quantize_cls({"--config", path("algo.json"), "-o", path("algo.onnx")});
  ASSERT_EQ(recovered.exit_code, 0) << recovered.err;
  EXPECT_NE(recovered.out.find("cle          15 layer pairs equalized"), std::string::npos) << recovered.out;
  EXPECT_NE(recovered.out.find("biases corrected (mode model)"), std::string::npos) << recovered.out;
  // The effective config beside the model asks for the same algorithms.
  EXPECT_EQ(nlohmann::ordered_json::parse(std::ifstream(path("algo.config.json")))["algo_config"], config["algo_config"]);

  const double before = psnr_of(path("plain.onnx"), cls);
  const double after = psnr_of(path("algo.onnx"), cls);
  std::cout << "[ measured ] XINT8 cls PSNR " << before << " dB, with CLE + bias correction " << after << " dB\n";
  // Measured 13.5 -> 20.0 dB with 32 calibration pictures (16 here); a gain under 3 dB means
  // the correction is not reaching the model.
  EXPECT_GT(after, before + 3.0);
}

// UseUnsignedReLU: the classifier's 33 quantized Relu and Clip(0, x) outputs get all 256 codes (zero point
// -128, half the power-of-two step), the rest stays symmetric. Measured with 32 calibration
// pictures: 13.51 -> 14.35 dB (with AdaRound 18.77 -> 22.17 dB).
TEST_F(AlgorithmsCli, UseUnsignedReluGivesTheClassifiersReluOutputsEveryCode) {
  const std::string cls = kModels + "/ppocr_cls.onnx";
  const testing::CliResult plain = quantize_cls({"--preset", "XINT8", "-o", path("plain.onnx")});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  nlohmann::ordered_json config = nlohmann::ordered_json::parse(std::ifstream(path("plain.config.json")));
  config["extra_options"]["UseUnsignedReLU"] = true;
  std::ofstream(path("unsigned.json")) << config.dump(2);
  const testing::CliResult relu = quantize_cls({"--config", path("unsigned.json"), "-o", path("unsigned.onnx")});
  ASSERT_EQ(relu.exit_code, 0) << relu.err;
  EXPECT_NE(relu.out.find("Q/DQ pairs (33 on ReLU outputs unsigned: UseUnsignedReLU)"), std::string::npos) << relu.out;
  EXPECT_EQ(plain.out.find("UseUnsignedReLU"), std::string::npos) << plain.out;
  EXPECT_EQ(nlohmann::ordered_json::parse(std::ifstream(path("unsigned.config.json")))["extra_options"]["UseUnsignedReLU"],
            true);
  // Every Relu output's QuantizeLinear has zero point -128, and so do the Clip(0, x) ones that
  // Paddle writes for hard_sigmoid/relu6; every other one 0.
  const onnx::ModelProto model = load_model(path("unsigned.onnx"));
  std::map<std::string, std::string> producer;
  std::map<std::string, const onnx::TensorProto*> inits;
  for (const auto& node : model.graph().node()) {
    for (const auto& out : node.output()) producer[out] = node.op_type();
  }
  for (const auto& init : model.graph().initializer()) inits[init.name()] = &init;
  size_t unsigned_pairs = 0, relu_pairs = 0;
  for (const auto& node : model.graph().node()) {
    if (node.op_type() != "QuantizeLinear") continue;
    const float zero = tensor_from_proto(*inits.at(node.input(2)), "test").to_floats().at(0);
    const std::string& op = producer[node.input(0)];
    if (op == "Relu") {
      EXPECT_EQ(zero, -128.0f) << node.input(0);
    } else if (op != "Clip") {
      EXPECT_EQ(zero, 0.0f) << node.input(0) << " (" << op << ")";
    }
    unsigned_pairs += zero == -128.0f;
    relu_pairs += op == "Relu";
  }
  EXPECT_EQ(unsigned_pairs, 33u);
  EXPECT_GT(relu_pairs, 0u);
  const double before = psnr_of(path("plain.onnx"), cls);
  const double after = psnr_of(path("unsigned.onnx"), cls);
  std::cout << "[ measured ] XINT8 cls PSNR " << before << " dB, with UseUnsignedReLU " << after << " dB\n";
  EXPECT_GT(after, before + 0.4);
}

// XINT8 weights are per tensor: det's pointwise Convs, each followed by a scalar Mul (PP-LCNet's
// learnable affine), have rows up to 27x apart, which CLE's pairs cannot reach. CLEMulTails
// evens them into the Mul. Measured at 320x320 with 32 calibration pictures: CLE 19.2 dB, CLE +
// Mul tails 24.1 dB (16 pictures here).
TEST_F(AlgorithmsCli, CleMulTailsRecoverTheDetectorInXint8) {
  const std::string det = kModels + "/ppocr_det.onnx";
  const auto quantize_det = [&](const std::string& out, bool mul_tails) {
    nlohmann::ordered_json config = nlohmann::ordered_json::parse(R"({"extra_options": {"NumCalibSamples": 16}})");
    config["extra_options"]["CLEMulTails"] = mul_tails;
    config["algo_config"] = nlohmann::ordered_json::parse(R"([{"name": "cle"}])");
    const nlohmann::ordered_json xint8 = nlohmann::ordered_json::parse(std::ifstream(path("xint8.config.json")));
    config["global_config"] = xint8["global_config"];
    for (const auto& item : xint8["extra_options"].items()) {
      if (!config["extra_options"].contains(item.key())) config["extra_options"][item.key()] = item.value();
    }
    std::ofstream(path(out + ".json")) << config.dump(2);
    return run_cli({"quantize", det, "--config", path(out + ".json"), "-o", path(out + ".onnx"), "--preprocess",
                    "ppocr_det", "--image-size", "320x320", "--calibration-data", kCalib});
  };
  const testing::CliResult preset = run_cli({"quantize", det, "--preset", "XINT8", "-o", path("xint8.onnx"), "--preprocess",
                                             "ppocr_det", "--image-size", "320x320", "--calibration-data", kCalib});
  ASSERT_EQ(preset.exit_code, 0) << preset.err;
  const testing::CliResult plain = quantize_det("cle", false);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  const testing::CliResult tails = quantize_det("tails", true);
  ASSERT_EQ(tails.exit_code, 0) << tails.err;
  EXPECT_NE(tails.out.find("cle          15 layer pairs equalized, 28 layers into the constant Mul after them"),
            std::string::npos)
      << tails.out;
  EXPECT_EQ(nlohmann::ordered_json::parse(std::ifstream(path("tails.config.json")))["extra_options"]["CLEMulTails"], true);
  const auto psnr = [&](const std::string& model) {
    CompareParams params;
    params.setup.model_path = det;
    params.candidate_path = model;
    params.setup.evaluation = pictures(kEval, {"", "ppocr_det", 320, 320, 0});
    return compare_job(params).outputs.at(0).psnr_db;
  };
  const double before = psnr(path("cle.onnx"));
  const double after = psnr(path("tails.onnx"));
  std::cout << "[ measured ] XINT8 det 320x320 PSNR: CLE " << before << " dB, CLE + Mul tails " << after << " dB\n";
  EXPECT_GT(after, before + 3.0);
}

// The worst output's PSNR against the FP32 model on the evaluation pictures.
double worst_psnr_of(const std::string& model, const std::string& reference) {
  CompareParams params;
  params.setup.model_path = reference;
  params.candidate_path = model;
  params.setup.evaluation = pictures(kEval, {"", "ppocr_cls_rec", 48, 192, 0});
  double worst = std::numeric_limits<double>::infinity();
  for (const OutputMetrics& output : compare_job(params).outputs) worst = std::min(worst, output.psnr_db);
  return worst;
}

TEST_F(AlgorithmsCli, AdaRoundPresetImprovesTheClassifierOverPlainXint8) {
  const std::string cls = kModels + "/ppocr_cls.onnx";
  const testing::CliResult plain = quantize_cls({"--preset", "XINT8", "-o", path("plain.onnx")});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  const testing::CliResult learned = quantize_cls({"--preset", "XINT8_ADAROUND", "-o", path("adaround.onnx")});
  ASSERT_EQ(learned.exit_code, 0) << learned.err;
  EXPECT_NE(learned.out.find("adaround     "), std::string::npos) << learned.out;
  EXPECT_NE(learned.out.find("layers learned (1000 steps each)"), std::string::npos) << learned.out;
  const nlohmann::ordered_json saved = nlohmann::ordered_json::parse(std::ifstream(path("adaround.config.json")));
  EXPECT_EQ(saved["algo_config"], nlohmann::ordered_json::parse(R"([{"name": "cle"}, {"name": "adaround"}])"));
  const double before = worst_psnr_of(path("plain.onnx"), cls);
  const double after = worst_psnr_of(path("adaround.onnx"), cls);
  std::cout << "[ measured ] XINT8 cls worst-output PSNR " << before << " dB, XINT8_ADAROUND " << after << " dB\n";
  EXPECT_GT(after, before + 1.0);
}

TEST_F(AlgorithmsCli, AnAlgorithmMixprecLacksIsAnError) {
  std::ofstream(path("bad.json")) << R"({"global_config": {}, "algo_config": [{"name": "gptq"}]})";
  const testing::CliResult bad = run_cli({"quantize", kModels + "/ppocr_cls.onnx", "--config", path("bad.json"), "-o",
                                          path("bad.onnx")});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("does not implement yet"), std::string::npos) << bad.err;
  EXPECT_FALSE(std::filesystem::exists(path("bad.onnx")));
}

TEST_F(AlgorithmsCli, ScaleSearchImprovesTheClassifierAndItsRewriteGivesWhatItMeasured) {
  const std::string cls = kModels + "/ppocr_cls.onnx";
  const testing::CliResult plain = quantize_cls({"--preset", "XINT8", "-o", path("plain.onnx")});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  nlohmann::ordered_json config = nlohmann::ordered_json::parse(std::ifstream(path("plain.config.json")));
  config["algo_config"] = nlohmann::ordered_json::parse(R"([{"name": "scale_search"}])");
  std::ofstream(path("ss.json")) << config.dump(2);
  const testing::CliResult searched = quantize_cls({"--config", path("ss.json"), "-o", path("ss.onnx")});
  ASSERT_EQ(searched.exit_code, 0) << searched.err;
  // "scale search N of M activation scales moved (F finer, C coarser) on 8 samples in T trials,
  // output SQNR A dB -> B dB (summed over outputs), R dB rewritten, S s"
  const std::regex line(R"(scale search (\d+) of (\d+) activation scales moved .* on 8 samples in (\d+) trials, )"
                        R"(output SQNR (-?[0-9.]+) dB -> (-?[0-9.]+) dB \(summed over outputs\), (-?[0-9.]+) dB rewritten)");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(searched.out, m, line)) << searched.out;
  EXPECT_GT(std::stoi(m[1]), 0);
  EXPECT_GT(std::stoi(m[2]), 50);  // the classifier's activations, each searched
  EXPECT_GT(std::stod(m[5]), std::stod(m[4]));
  EXPECT_EQ(m[6].str(), m[5].str()) << "the rewrite with the shifts must give the loss the search measured";
  const double before = worst_psnr_of(path("plain.onnx"), cls);
  const double after = worst_psnr_of(path("ss.onnx"), cls);
  std::cout << "[ measured ] XINT8 cls worst-output PSNR " << before << " dB, with scale search " << after << " dB; "
            << m[1] << " of " << m[2] << " scales moved\n";
  // Measured 13.5 -> 14.7 dB on the evaluation pictures, which the search never saw.
  EXPECT_GT(after, before + 0.5);
}

}  // namespace
}  // namespace mixprec
