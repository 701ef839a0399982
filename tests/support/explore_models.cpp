#include "support/explore_models.h"

#include <string>
#include <vector>

#include "mixprec/metrics.h"
#include "mixprec/npy.h"
#include "mixprec/random_data.h"
#include "support/model_builder.h"

namespace mixprec::testing {

onnx::ModelProto one_sensitive_layer_model() {
  const std::vector<float> spread = {1000, 0, 0, 0};
  const std::vector<float> mix = {0, 0, 0, 0, 1, 2, 0, 1, 2, 1, 1, 0, 0, 1, 2, 1};
  const std::vector<float> head = {1, 0.5f, 0, 0, 0, 1, 0.5f, 0, 0, 0, 1, 0.5f, 0.5f, 0, 0, 1};
  return ModelBuilder()
      .add_input("x", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{4}})
      .add_output("y", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{4}})
      .add_initializer("c_spread", {4}, spread)
      .add_initializer("w_mix", {4, 4}, mix)
      .add_initializer("w_head", {4, 4}, head)
      .add_node("Add", {"x", "c_spread"}, {"wide"}, {}, "spread")
      .add_node("MatMul", {"wide", "w_mix"}, {"mixed"}, {}, "mix")
      .add_node("MatMul", {"mixed", "w_head"}, {"y"}, {}, "head")
      .build();
}

onnx::ModelProto two_sensitive_layers_model() {
  const std::vector<float> spread = {1000, 0, 0, 0};
  const std::vector<float> mix = {0, 0, 0, 0, 1, 2, 0, 1, 2, 1, 1, 0, 0, 1, 2, 1};
  ModelBuilder b;
  b.add_input("x", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{4}})
      .add_output("y", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{4}})
      .add_initializer("c_spread", {4}, spread)
      .add_initializer("w_mix", {4, 4}, mix);
  for (const char* k : {"1", "2"}) {
    const std::string s = k;
    b.add_node("Add", {"x", "c_spread"}, {"wide_" + s}, {}, "spread_" + s)
        .add_node("MatMul", {"wide_" + s, "w_mix"}, {"mixed_" + s}, {}, "mix_" + s);
  }
  b.add_node("Add", {"mixed_1", "mixed_2"}, {"y"}, {}, "sum");
  return b.build();
}

onnx::ModelProto dead_layer_first_model() {
  const std::vector<float> spread = {1000, 0, 0, 0};
  const std::vector<float> mix = {0, 0, 0, 0, 1, 2, 0, 1, 2, 1, 1, 0, 0, 1, 2, 1};
  const std::vector<float> zero(16, 0.0f);
  return ModelBuilder()
      .add_input("x", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{4}})
      .add_output("y", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{4}})
      .add_initializer("c_spread", {4}, spread)
      .add_initializer("w_mix", {4, 4}, mix)
      .add_initializer("w_zero", {4, 4}, zero)
      .add_node("Add", {"x", "c_spread"}, {"wide"}, {}, "spread")
      .add_node("MatMul", {"wide", "w_mix"}, {"echoed"}, {}, "echo")
      .add_node("MatMul", {"echoed", "w_zero"}, {"silenced"}, {}, "silence")
      .add_node("MatMul", {"wide", "w_mix"}, {"mixed"}, {}, "mix")
      .add_node("Add", {"mixed", "silenced"}, {"y"}, {}, "join")
      .build();
}

onnx::ModelProto rotation_chain_model(int stages) {
  const std::vector<float> dct = {0.5f,       0.5f,       0.5f,      0.5f,       0.653281f, 0.270598f,
                                  -0.270598f, -0.653281f, 0.5f,      -0.5f,      -0.5f,     0.5f,
                                  0.270598f,  -0.653281f, 0.653281f, -0.270598f};
  ModelBuilder b;
  b.add_input("x", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{4}})
      .add_output("y", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{4}})
      .add_initializer("dct", {4, 4}, dct);
  std::string previous = "x";
  for (int i = 1; i <= stages; ++i) {
    const std::string index = std::to_string(i);
    const std::string out = i == stages ? std::string("y") : std::string("t").append(index);
    b.add_node("MatMul", {previous, "dct"}, {out}, {}, std::string("rotate_").append(index));
    previous = out;
  }
  return b.build();
}

DataSpec test_calibration_data() {
  DataSpec spec;
  spec.data.random_samples = 16;
  spec.data.seed = 1;
  return spec;
}

DataSpec test_evaluation_data() {
  DataSpec spec;
  spec.data.random_samples = 32;
  spec.data.seed = 2;
  return spec;
}

EvaluationSetup test_setup(const std::string& model_path, const std::string& work_dir) {
  EvaluationSetup setup;
  setup.model_path = model_path;
  setup.work_dir = work_dir;
  setup.calibration = test_calibration_data();
  setup.evaluation = test_evaluation_data();
  setup.criterion.target = parse_target("psnr>30");
  return setup;
}

std::vector<std::string> write_test_calibration_files(const std::string& dir, int count) {
  std::vector<std::string> paths;
  for (int i = 0; i < count; ++i) {
    paths.push_back(dir + "/calib_" + std::to_string(i) + ".npy");
    write_npy(paths.back(), random_tensor(DType::kFloat32, {1, 4}, static_cast<uint64_t>(100 + i)));
  }
  return paths;
}

}  // namespace mixprec::testing
