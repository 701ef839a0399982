// The VAIML compiler options derived from a model, vitisai_config.json, and the edge-quantization
// probe of --edge-quant-auto on ONNX Runtime CPU.
#include "mixprec/vitisai.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "mixprec/model_io.h"
#include "support/model_builder.h"
#include "support/temp_dir.h"

namespace mixprec {
namespace {
namespace fs = std::filesystem;

ModelAnalysis with_coverage(int64_t quantized, int64_t bf16, int64_t fp16, int64_t float32) {
  ModelAnalysis a;
  a.coverage = {.compute_nodes = quantized + bf16 + fp16 + float32, .quantized = quantized, .bf16 = bf16,
                .fp16 = fp16, .float32 = float32};
  return a;
}

TEST(CompilerOptions, FollowWhatTheModelComputesIn) {
  CompilerOptions o = derive_compiler_options(with_coverage(5, 0, 0, 0), {FormatId::kXInt8});
  EXPECT_EQ(o.model_kind, "integer only");
  EXPECT_FALSE(o.f32_to_bf16);
  EXPECT_FALSE(o.f32_to_f16);
  EXPECT_EQ(o.fe_args(), "");

  o = derive_compiler_options(with_coverage(3, 2, 0, 0), {FormatId::kXInt8, FormatId::kBFloat16});
  EXPECT_EQ(o.model_kind, "integer and float islands");
  EXPECT_TRUE(o.f32_to_bf16);
  EXPECT_FALSE(o.f32_to_f16);
  EXPECT_EQ(o.fe_args(), "match-power-of-two-quant-kernel=1");

  // ve2's FP16 lifts: the float part converts to FP16, not BF16.
  o = derive_compiler_options(with_coverage(3, 0, 2, 0), {FormatId::kXInt8, FormatId::kFloat16});
  EXPECT_FALSE(o.f32_to_bf16);
  EXPECT_TRUE(o.f32_to_f16);
  EXPECT_EQ(o.fe_args(), "match-power-of-two-quant-kernel=1");

  // A float32 compute node left by an INT8 config needs the conversion too (naked FP32 is not an NPU op).
  o = derive_compiler_options(with_coverage(4, 0, 0, 1), {FormatId::kXInt8});
  EXPECT_TRUE(o.f32_to_bf16);
  EXPECT_TRUE(o.match_power_of_two);

  o = derive_compiler_options(with_coverage(0, 5, 0, 0), {FormatId::kBFloat16});
  EXPECT_EQ(o.model_kind, "float only");
  EXPECT_TRUE(o.f32_to_bf16);
  EXPECT_EQ(o.fe_args(), "");

  o = derive_compiler_options(with_coverage(5, 0, 0, 0), {FormatId::kBfp16});  // analysis counts block nodes as quantized
  EXPECT_EQ(o.model_kind, "block formats");
  EXPECT_TRUE(o.f32_to_bf16);
  EXPECT_FALSE(o.match_power_of_two);
  EXPECT_EQ(derive_compiler_options(with_coverage(5, 0, 0, 0), {FormatId::kXInt8, FormatId::kMx9}).fe_args(),
            "match-power-of-two-quant-kernel=1");
  ASSERT_EQ(o.notes.size(), 1u);
  EXPECT_NE(o.notes[0].find("plugin"), std::string::npos) << o.notes[0];

  o = derive_compiler_options(with_coverage(3, 2, 0, 0), {FormatId::kXInt8, FormatId::kBFloat16});
  o.input_in_runtime = true;
  EXPECT_EQ(o.fe_args(), "match-power-of-two-quant-kernel=1 input-quantization-in-rt=1");
  o.output_in_runtime = true;
  EXPECT_EQ(o.fe_args(), "match-power-of-two-quant-kernel=1 edge-quantization-in-rt=1");
  EXPECT_EQ(edge_flag(false, true), "output-dequantization-in-rt=1");
  EXPECT_EQ(edge_flag(false, false), "");
}

TEST(CompilerOptions, VitisAiConfigIsOneVaimlPartitionPass) {
  CompilerOptions o = derive_compiler_options(with_coverage(3, 0, 2, 0), {FormatId::kXInt8, FormatId::kFloat16});
  const auto config = vitisai_config_json(o, "ve2");
  ASSERT_EQ(config["passes"].size(), 1u);
  EXPECT_EQ(config["passes"][0]["name"], "vaiml_partition");
  const auto& vaiml = config["passes"][0]["vaiml_config"];
  EXPECT_EQ(vaiml["enable_f32_to_bf16_conversion"], false);
  EXPECT_EQ(vaiml["enable_f32_to_f16_conversion"], true);
  EXPECT_EQ(vaiml["fe_args"], "match-power-of-two-quant-kernel=1");
  EXPECT_EQ(vaiml["device"], "ve2");
  EXPECT_EQ(config["target"], "VAIML");
  EXPECT_EQ(config["targets"][0]["pass"][0], "vaiml_partition");
  // BF16: the FP16 key is left out rather than written false.
  o = derive_compiler_options(with_coverage(3, 2, 0, 0), {FormatId::kXInt8, FormatId::kBFloat16});
  EXPECT_FALSE(vitisai_config_json(o, "stx")["passes"][0]["vaiml_config"].contains("enable_f32_to_f16_conversion"));
}

TEST(EdgeAdvice, AFallbackDisablesTheFlagWhateverTheKernelCount) {
  EdgeProbe p;
  p.builds.resize(2);
  p.builds[0].kernels = 10;
  p.builds[1].kernels = 9;
  p.builds[0].partition.float_nodes = {"head (Conv)"};
  p.builds[1].partition.float_nodes = {"head (Conv)", "stem (Conv)"};
  decide_edge_advice(p);
  EXPECT_EQ(p.advice, EdgeAdvice::kDisable);
  EXPECT_EQ(p.builds[1].fallbacks, std::vector<std::string>{"stem (Conv)"});
  EXPECT_EQ(p.reason, "1 compute node(s) fall back to float with the flag (stem (Conv))");
  p.builds[1].partition.float_nodes = {"head (Conv)"};
  decide_edge_advice(p);
  EXPECT_EQ(p.advice, EdgeAdvice::kEnable);
  p.builds[1].kernels = 10;
  decide_edge_advice(p);
  EXPECT_EQ(p.advice, EdgeAdvice::kNoChange);
  EXPECT_EQ(p.reason, "the kernel count does not fall (10 -> 10)");
}

class EdgeProbeTest : public testing::TempDirTest {
 protected:
  EdgeProbe probe(const onnx::ModelProto& model) {
    save_model(model, path("m.onnx"));
    macs_ = estimate_node_macs(model, {}, path("m.onnx"));
    EdgeProbeParams p{.model_path = path("m.onnx"), .macs = &macs_, .work_dir = path("")};
    return probe_edge_quantization(p);
  }
  MacEstimate macs_;
};

TEST_F(EdgeProbeTest, TheRuntimeTakingTheEdgesOverSavesTheirKernels) {
  const EdgeProbe p = probe(testing::edge_qdq_matmul().build());
  ASSERT_EQ(p.boundaries.size(), 2u);
  EXPECT_EQ(p.boundaries[0].codes, "uint8");
  EXPECT_EQ(p.boundaries[0].scale, std::vector<float>{0.5f});
  ASSERT_EQ(p.builds.size(), 2u);
  // ONNX Runtime fuses DQ, DQ -> MatMul -> Q into one QLinearMatMul: the edge Q and DQ are the
  // other two kernels, and they are what the flag saves.
  EXPECT_EQ(p.builds[0].kernels, 3);
  EXPECT_EQ(p.builds[0].edge_kernels, 2);
  EXPECT_EQ(p.builds[0].runtime_edges, 0);
  EXPECT_EQ(p.builds[1].kernels, 1);
  EXPECT_EQ(p.builds[1].edge_kernels, 0);
  EXPECT_EQ(p.builds[1].runtime_edges, 2);
  EXPECT_EQ(p.builds[0].partition.integer_kernels.at("QLinearMatMul"), 1u);
  EXPECT_EQ(p.builds[1].partition.integer_kernels.at("QLinearMatMul"), 1u);
  EXPECT_TRUE(p.builds[1].fallbacks.empty());
  EXPECT_EQ(p.advice, EdgeAdvice::kEnable);
  EXPECT_EQ(p.flag, "edge-quantization-in-rt=1");
  EXPECT_EQ(p.reason, "the kernel count falls by 2 (3 -> 1) and no compute node falls back to float");
  EXPECT_NE(p.counted_by.find("not the NPU compiler's"), std::string::npos);
  EXPECT_TRUE(fs::exists(path("edge_probe.onnx")));
  EXPECT_EQ(load_model(path("edge_probe.onnx")).graph().input(0).type().tensor_type().elem_type(),
            onnx::TensorProto::UINT8);
}

TEST_F(EdgeProbeTest, NoStandaloneEdgeMeansItDoesNotApplyAndNothingIsBuilt) {
  EdgeProbe p = probe(testing::matmul_chain(2));
  EXPECT_EQ(p.advice, EdgeAdvice::kNotApplicable);
  EXPECT_TRUE(p.builds.empty());
  EXPECT_NE(p.reason.find("no Q on a graph input"), std::string::npos) << p.reason;

  // Only the input Q; the integer model's x is also read in float, so it stays: input edge
  // quantization is out, the output's DQ is still a candidate.
  p = probe(testing::edge_qdq_matmul()
                .add_output("x_copy", onnx::TensorProto::FLOAT, {1, 4})
                .add_node("Identity", {"x"}, {"x_copy"}, {}, "copy")
                .build());
  EXPECT_FALSE(p.inputs);
  EXPECT_TRUE(p.outputs);
  EXPECT_EQ(p.flag, "output-dequantization-in-rt=1");
  ASSERT_EQ(p.builds.size(), 2u);
  EXPECT_EQ(p.builds[0].kernels - p.builds[1].kernels, 1);
  EXPECT_EQ(p.advice, EdgeAdvice::kEnable);
}

}  // namespace
}  // namespace mixprec
