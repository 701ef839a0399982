// A config in Quark's QConfig shape quantizes the PP-OCR direction classifier exactly as the
// same config in mixprec's shape does, through the CLI, and --config-format quark writes the
// effective config back in Quark's shape.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "mixprec/config.h"
#include "mixprec/model_io.h"
#include "support/cli_runner.h"
#include "support/temp_dir.h"

namespace mixprec {
namespace {

using Json = nlohmann::ordered_json;

const std::string kModel = std::string(MIXPREC_MODELS_DIR) + "/ppocr_cls.onnx";
const std::string kCalib = std::string(MIXPREC_DATA_DIR) + "/calib";

// XINT8 as Quark writes it; Int16 on the stem, the tail of the backbone kept float, every
// MatMul excluded and the global pools in BF16 by op type, one Conv and a subgraph excluded,
// CLE once; 4 calibration pictures keep it quick.
constexpr char kQuarkShape[] = R"({
  "global_config": {
    "input_tensors": {"symmetric": true, "scale_type": "ScaleType.PowerOf2", "calibration_method": "CalibMethod.MinMSE",
                      "quant_granularity": "QuantGranularity.Tensor", "data_type": "Int8"},
    "weight": {"symmetric": true, "scale_type": "ScaleType.PowerOf2", "calibration_method": "CalibMethod.MinMSE",
               "quant_granularity": "QuantGranularity.Tensor", "data_type": "Int8"}},
  "specific_layer_config": [
    [{"input_tensors": {"symmetric": true, "scale_type": "ScaleType.Float32", "calibration_method": "CalibMethod.Percentile",
                        "quant_granularity": "QuantGranularity.Tensor", "data_type": "Int16"},
      "weight": {"symmetric": true, "scale_type": "ScaleType.Float32", "calibration_method": "CalibMethod.Percentile",
                 "quant_granularity": "QuantGranularity.Tensor", "data_type": "Int16"}},
     ["p2o.Conv.0", "p2o.Conv.1"]],
    [null, ["^p2o.Conv.5.*"]]],
  "layer_type_config": [
    [null, ["MatMul"]],
    [{"input_tensors": {"symmetric": true, "scale_type": "ScaleType.Float32", "calibration_method": "CalibMethod.MinMax",
                        "quant_granularity": "QuantGranularity.Tensor", "data_type": "BFloat16"}},
     ["GlobalAveragePool"]]],
  "exclude": ["p2o.Conv.10", [["p2o.Conv.20"], ["p2o.Conv.21"]]],
  "algo_config": [{"name": "cle", "cle_steps": 1}],
  "use_external_data_format": false,
  "extra_options": {"NumCalibSamples": 4}})";

// The same in mixprec's shape.
constexpr char kMixprecShape[] = R"({
  "global_config": {"input_tensors": {"spec": "XInt8Spec", "params": {"calib_method": "PowerOfTwo_MinMSE"}},
                    "weight": {"spec": "XInt8Spec", "params": {"calib_method": "PowerOfTwo_MinMSE"}}},
  "specific_layer_config": [
    {"target_node_names": ["p2o.Conv.0", "p2o.Conv.1"],
     "layer_config": {"input_tensors": {"spec": "Int16Spec", "params": {"calib_method": "Percentile"}},
                      "weight": {"spec": "Int16Spec", "params": {"calib_method": "Percentile"}}}},
    {"target_node_names": ["^p2o.Conv.5.*"], "layer_config": {}}],
  "layer_type_config": [{"op_types": ["MatMul"], "layer_config": null},
                        {"op_types": ["GlobalAveragePool"], "layer_config": {"input_tensors": {"spec": "BFloat16Spec", "params": {}}}}],
  "exclude": {"node_names": ["p2o\\.Conv\\.10"], "subgraphs": [["p2o.Conv.20", "p2o.Conv.21"]]},
  "algo_config": [{"name": "cle", "cle_steps": 1}],
  "extra_options": {"NumCalibSamples": 4}})";

class QuarkConfigRealModel : public testing::TempDirTest {
 protected:
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path(name)) << text;
    return path(name);
  }
};

TEST_F(QuarkConfigRealModel, QuarkShapeQuantizesTheClassifierAsMixprecsShapeDoes) {
  const std::string quark = write("quark.json", kQuarkShape), ours = write("ours.json", kMixprecShape);
  const onnx::ModelProto model = load_model(kModel);
  const std::vector<NodeAssignment> assignment = assign_layers(load_config(ours), model, ours);
  ASSERT_EQ(assign_layers(load_config(quark), model, ours), assignment);
  const auto find = [&](const std::string& name) { return *std::ranges::find(assignment, name, &NodeAssignment::node_name); };
  EXPECT_EQ(find("p2o.Conv.0").config.input_tensors->format, FormatId::kInt16);
  EXPECT_EQ(find("p2o.Conv.2").config.input_tensors->format, FormatId::kXInt8);
  EXPECT_EQ(find("p2o.MatMul.0").reason, "layer_type_config[0] op type MatMul: null layer (kept in float)");
  EXPECT_EQ(find("p2o.GlobalAveragePool.0").config.input_tensors->format, FormatId::kBFloat16);
  EXPECT_EQ(find("p2o.Conv.10").reason, "exclude.node_names pattern p2o\\.Conv\\.10");

  const std::vector<std::string> common = {"--calibration-data", kCalib, "--preprocess", "ppocr_cls_rec", "--image-size",
                                           "48x192", "--stats", path("cls.stats.json")};
  std::vector<std::string> from_quark = {"quantize", kModel, "--config", quark, "--config-format", "quark", "-o",
                                         path("from_quark.onnx")};
  std::vector<std::string> from_ours = {"quantize", kModel, "--config", ours, "-o", path("from_ours.onnx")};
  from_quark.insert(from_quark.end(), common.begin(), common.end());
  from_ours.insert(from_ours.end(), common.begin(), common.end());
  const CliResult a = run_cli(from_quark);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  const CliResult b = run_cli(from_ours);  // the statistics of the first run
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_NE(b.out.find("calibration  reused"), std::string::npos) << b.out;

  // The same model, byte for byte, from either shape.
  EXPECT_EQ(read_file(path("from_quark.onnx"), "model"), read_file(path("from_ours.onnx"), "model"));
  // Each run wrote its effective config in the shape asked for; both read back as the input.
  const Json written_quark = Json::parse(read_file(path("from_quark.config.json"), "config"));
  EXPECT_EQ(detect_config_shape(written_quark, "from_quark.config.json"), ConfigShape::kQuark);
  EXPECT_EQ(written_quark["layer_type_config"][0], Json::parse(R"([null, ["MatMul"]])"));
  EXPECT_EQ(written_quark["exclude"], Json::parse(R"(["p2o.Conv.10", [["p2o.Conv.20"], ["p2o.Conv.21"]]])"));
  EXPECT_EQ(load_config(path("from_quark.config.json")), load_config(ours));
  EXPECT_EQ(load_config(path("from_ours.config.json")), load_config(quark));
}

TEST_F(QuarkConfigRealModel, ShapeQuarksCannotHoldFailsBeforeAnyWork) {
  // A weight channel axis has no Quark spelling: the run fails at once and writes nothing.
  const std::string config = write("axis.json", R"({"global_config": {
      "input_tensors": {"spec": "Int8Spec", "params": {}},
      "weight": {"spec": "Int8Spec", "params": {"per_channel": true, "ch_axis": 0}}}})");
  const CliResult r = run_cli({"quantize", kModel, "--config", config, "--config-format", "quark", "-o", path("cls.onnx"),
                               "--calibration-data", kCalib, "--preprocess", "ppocr_cls_rec", "--image-size", "48x192"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(path("cls.config.json") + ": global_config.weight.params.ch_axis has no equivalent in Quark's"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(path("cls.onnx")));
  const CliResult bad = run_cli({"quantize", kModel, "--preset", "XINT8", "--config-format", "onnx", "-o", path("x.onnx")});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("unknown --config-format 'onnx' (mixprec, quark)"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace mixprec
