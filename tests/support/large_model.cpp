#include "support/large_model.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <vector>

#include <onnx/onnx_pb.h>

namespace mixprec::testing {

uint64_t write_large_matmul_model(const std::string& path, const LargeModelShape& shape) {
  const std::string data_name = std::filesystem::path(path).filename().string() + ".data";
  const std::string data_path = (std::filesystem::path(path).parent_path() / data_name).string();
  std::ofstream data(data_path, std::ios::binary | std::ios::trunc);
  if (!data) throw std::runtime_error("cannot write " + data_path);

  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  onnx::GraphProto& graph = *model.mutable_graph();
  graph.set_name("large_matmul_chain");
  const auto add_value = [&](onnx::ValueInfoProto* value, const std::string& name) {
    value->set_name(name);
    auto* tensor = value->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(onnx::TensorProto::FLOAT);
    tensor->mutable_shape()->add_dim()->set_dim_value(1);
    tensor->mutable_shape()->add_dim()->set_dim_value(shape.width);
  };
  add_value(graph.add_input(), "input");
  add_value(graph.add_output(), "output");

  // Uniform in [-a, a] with a = sqrt(3 / width): each output has unit variance for unit inputs.
  const float amplitude = std::sqrt(3.0f / static_cast<float>(shape.width));
  const size_t row = static_cast<size_t>(shape.width);
  std::vector<float> values(row);
  uint32_t state = 0x9E3779B9u;
  uint64_t offset = 0;
  std::string previous = "input";
  for (int layer = 0; layer < shape.layers; ++layer) {
    const std::string weight = "w_" + std::to_string(layer);
    onnx::TensorProto& init = *graph.add_initializer();
    init.set_name(weight);
    init.set_data_type(onnx::TensorProto::FLOAT);
    init.add_dims(shape.width);
    init.add_dims(shape.width);
    init.set_data_location(onnx::TensorProto::EXTERNAL);
    const uint64_t length = row * row * sizeof(float);
    for (const auto& [key, value] : {std::pair<std::string, std::string>{"location", data_name},
                                     {"offset", std::to_string(offset)},
                                     {"length", std::to_string(length)}}) {
      auto* entry = init.add_external_data();
      entry->set_key(key);
      entry->set_value(value);
    }
    for (size_t r = 0; r < row; ++r) {
      for (float& v : values) {
        state ^= state << 13;  // xorshift32: the same bytes on every platform
        state ^= state >> 17;
        state ^= state << 5;
        v = amplitude * (static_cast<float>(state) / 2147483648.0f - 1.0f);
      }
      data.write(reinterpret_cast<const char*>(values.data()), static_cast<std::streamsize>(row * sizeof(float)));
    }
    offset += length;  // a multiple of 64 already
    const bool last = layer + 1 == shape.layers;
    const std::string product = last ? "output" : "mm_" + std::to_string(layer);
    auto* matmul = graph.add_node();
    matmul->set_op_type("MatMul");
    matmul->set_name("matmul_" + std::to_string(layer));
    matmul->add_input(previous);
    matmul->add_input(weight);
    matmul->add_output(product);
    previous = product;
    if (!last) {
      auto* relu = graph.add_node();
      relu->set_op_type("Relu");
      relu->set_name("relu_" + std::to_string(layer));
      relu->add_input(product);
      relu->add_output("x_" + std::to_string(layer + 1));
      previous = relu->output(0);
    }
  }
  data.close();
  if (!data) throw std::runtime_error("cannot write " + data_path + " (disk full?)");
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!model.SerializeToOstream(&out)) throw std::runtime_error("cannot write " + path);
  return offset;
}

}  // namespace mixprec::testing
