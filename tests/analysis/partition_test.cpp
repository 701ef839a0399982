// partition_report on a tiny model ONNX Runtime partly fuses: quantized with inputs only (U8S8
// with OrtCpuFusion off), "first" is followed by the Q of "second"'s input and becomes a
// QLinearConv; "second" ends the graph with no Q after it and stays a float Conv. With
// OrtCpuFusion (the U8S8 preset) both fuse.
#include <gtest/gtest.h>

#include <filesystem>
#include <vector>

#include "mixprec/config.h"
#include "mixprec/macs.h"
#include "mixprec/model_io.h"
#include "mixprec/jobs.h"
#include "mixprec/runtime.h"
#include "support/model_builder.h"
#include "support/temp_dir.h"

namespace mixprec {
namespace {
using onnx::TensorProto;
using testing::attr_ints;
using testing::ModelBuilder;

onnx::ModelProto two_convs() {
  std::vector<float> w1(8 * 3 * 9), w2(8 * 8 * 9);
  for (size_t i = 0; i < w1.size(); ++i) w1[i] = 0.01f * static_cast<float>(i % 17) - 0.08f;
  for (size_t i = 0; i < w2.size(); ++i) w2[i] = 0.01f * static_cast<float>(i % 13) - 0.06f;
  const auto conv_attrs = std::vector<onnx::AttributeProto>{attr_ints("kernel_shape", {3, 3}),
                                                             attr_ints("pads", {1, 1, 1, 1})};
  return ModelBuilder()
      .add_input("x", TensorProto::FLOAT, {int64_t{1}, int64_t{3}, int64_t{16}, int64_t{16}})
      .add_output("y", TensorProto::FLOAT, {int64_t{1}, int64_t{8}, int64_t{16}, int64_t{16}})
      .add_initializer("w1", {8, 3, 3, 3}, w1)
      .add_initializer("w2", {8, 8, 3, 3}, w2)
      .add_node("Conv", {"x", "w1"}, {"h"}, conv_attrs, "first")
      .add_node("Conv", {"h", "w2"}, {"y"}, conv_attrs, "second")
      .build();
}

class PartitionTest : public testing::TempDirTest {};

TEST_F(PartitionTest, FusedConvsCountAsIntegerAndTheRestAsFloat) {
  save_model(two_convs(), path("model.onnx"));
  QuantizeParams q;
  q.setup.model_path = path("model.onnx");
  q.output_path = path("u8s8.onnx");
  QuantConfig inputs_only = *preset_config("U8S8");
  inputs_only.extra.ort_cpu_fusion = false;
  save_config(inputs_only, path("inputs_only.json"));
  q.config.path = path("inputs_only.json");
  q.setup.calibration.data.random_samples = 8;
  q.setup.calibration.data.seed = 1;
  quantize_job(q);
  SessionOptions options{.optimization = GraphOptimization::kAll, .optimized_model_path = path("optimized.onnx")};
  Session::from_file(q.output_path, options);

  // first: 8*16*16 outputs x 3*9 = 55296 MACs; second: 8*16*16 x 8*9 = 147456.
  const MacEstimate macs = estimate_node_macs(two_convs());
  ASSERT_DOUBLE_EQ(macs.total, 55296.0 + 147456.0);
  const PartitionReport p = partition_report(macs, load_model(path("optimized.onnx")));
  EXPECT_DOUBLE_EQ(p.integer_macs, 55296.0);
  EXPECT_DOUBLE_EQ(p.float_macs, 147456.0);
  EXPECT_DOUBLE_EQ(p.unmatched_macs, 0.0);
  EXPECT_EQ(p.integer_kernels.at("QLinearConv"), 1u);
  EXPECT_EQ(p.float_nodes, std::vector<std::string>{"second (Conv)"});
  EXPECT_NEAR(p.integer_share(), 55296.0 / 202752.0, 1e-12);
  EXPECT_GT(p.dequantize_linear, 0);  // the float Conv still reads dequantized tensors
}

TEST_F(PartitionTest, WithOrtCpuFusionBothConvsRunInIntegerKernels) {
  save_model(two_convs(), path("model.onnx"));
  QuantizeParams q;
  q.setup.model_path = path("model.onnx");
  q.output_path = path("u8s8.onnx");
  q.config.preset = "U8S8";
  q.setup.calibration.data.random_samples = 8;
  q.setup.calibration.data.seed = 1;
  quantize_job(q);
  SessionOptions options{.optimization = GraphOptimization::kAll, .optimized_model_path = path("optimized.onnx")};
  Session::from_file(q.output_path, options);

  const PartitionReport p = partition_report(estimate_node_macs(two_convs()), load_model(path("optimized.onnx")));
  EXPECT_DOUBLE_EQ(p.integer_share(), 1.0);
  EXPECT_EQ(p.integer_kernels.at("QLinearConv"), 2u);
  EXPECT_TRUE(p.float_nodes.empty());
}

TEST(Partition, AnUnquantizedGraphRunsEverythingInFloat) {
  const MacEstimate macs = estimate_node_macs(two_convs());
  const PartitionReport p = partition_report(macs, two_convs());
  EXPECT_EQ(p.integer_share(), 0.0);
  EXPECT_EQ(p.float_nodes.size(), 2u);
  EXPECT_EQ(p.quantize_linear, 0);
}

}  // namespace
}  // namespace mixprec
