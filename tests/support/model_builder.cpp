#include "support/model_builder.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace mixprec::testing {
namespace {

using onnx::TensorProto;

onnx::ValueInfoProto make_value_info(const std::string& name, int32_t elem_type,
                                     const std::vector<DimSpec>* dims) {
  onnx::ValueInfoProto info;
  info.set_name(name);
  onnx::TypeProto::Tensor* tensor = info.mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(elem_type);
  if (dims != nullptr) {
    onnx::TensorShapeProto* shape = tensor->mutable_shape();
    for (const DimSpec& spec : *dims) {
      onnx::TensorShapeProto::Dimension* dim = shape->add_dim();
      if (const int64_t* value = std::get_if<int64_t>(&spec)) {
        dim->set_dim_value(*value);
      } else if (const std::string& param = std::get<std::string>(spec); param != "?") {
        dim->set_dim_param(param);
      }
    }
  }
  return info;
}

TensorProto make_tensor(const std::string& name, const std::vector<int64_t>& dims, int32_t elem_type) {
  TensorProto tensor;
  tensor.set_name(name);
  tensor.set_data_type(elem_type);
  for (int64_t dim : dims) tensor.add_dims(dim);
  return tensor;
}

onnx::AttributeProto make_attr(const std::string& name, onnx::AttributeProto::AttributeType type) {
  onnx::AttributeProto attribute;
  attribute.set_name(name);
  attribute.set_type(type);
  return attribute;
}

}  // namespace

onnx::AttributeProto attr_int(const std::string& name, int64_t value) {
  onnx::AttributeProto attribute = make_attr(name, onnx::AttributeProto::INT);
  attribute.set_i(value);
  return attribute;
}

onnx::AttributeProto attr_float(const std::string& name, float value) {
  onnx::AttributeProto attribute = make_attr(name, onnx::AttributeProto::FLOAT);
  attribute.set_f(value);
  return attribute;
}

onnx::AttributeProto attr_string(const std::string& name, const std::string& value) {
  onnx::AttributeProto attribute = make_attr(name, onnx::AttributeProto::STRING);
  attribute.set_s(value);
  return attribute;
}

onnx::AttributeProto attr_ints(const std::string& name, const std::vector<int64_t>& values) {
  onnx::AttributeProto attribute = make_attr(name, onnx::AttributeProto::INTS);
  for (int64_t value : values) attribute.add_ints(value);
  return attribute;
}

onnx::AttributeProto attr_floats(const std::string& name, const std::vector<float>& values) {
  onnx::AttributeProto attribute = make_attr(name, onnx::AttributeProto::FLOATS);
  for (float value : values) attribute.add_floats(value);
  return attribute;
}

onnx::AttributeProto attr_graph(const std::string& name, const onnx::GraphProto& graph) {
  onnx::AttributeProto attribute = make_attr(name, onnx::AttributeProto::GRAPH);
  *attribute.mutable_g() = graph;
  return attribute;
}

std::vector<float> deterministic_values(size_t count, uint32_t seed, float scale) {
  std::vector<float> values(count);
  uint32_t state = (seed * 2654435761u + 0x9e3779b9u) | 1u;  // xorshift must not start at 0
  for (float& value : values) {
    // xorshift32: exact integer arithmetic, so every platform gets the same values.
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    value = scale * (static_cast<float>(state % 2001u) / 1000.0f - 1.0f);
  }
  return values;
}

ModelBuilder& ModelBuilder::opset(int64_t version, const std::string& domain) {
  const auto it =
      std::find_if(opsets_.begin(), opsets_.end(), [&](const auto& entry) { return entry.first == domain; });
  if (it == opsets_.end()) {
    opsets_.emplace_back(domain, version);
  } else {
    it->second = version;
  }
  return *this;
}

ModelBuilder& ModelBuilder::ir_version(int64_t version) {
  ir_version_ = version;
  return *this;
}

ModelBuilder& ModelBuilder::graph_name(const std::string& name) {
  graph_.set_name(name);
  return *this;
}

ModelBuilder& ModelBuilder::add_input(const std::string& name, int32_t elem_type, const std::vector<DimSpec>& dims) {
  *graph_.add_input() = make_value_info(name, elem_type, &dims);
  return *this;
}

ModelBuilder& ModelBuilder::add_input(const std::string& name, int32_t elem_type) {
  *graph_.add_input() = make_value_info(name, elem_type, nullptr);
  return *this;
}

ModelBuilder& ModelBuilder::add_output(const std::string& name, int32_t elem_type, const std::vector<DimSpec>& dims) {
  *graph_.add_output() = make_value_info(name, elem_type, &dims);
  return *this;
}

ModelBuilder& ModelBuilder::add_output(const std::string& name, int32_t elem_type) {
  *graph_.add_output() = make_value_info(name, elem_type, nullptr);
  return *this;
}

ModelBuilder& ModelBuilder::add_value_info(const std::string& name, int32_t elem_type,
                                           const std::vector<DimSpec>& dims) {
  *graph_.add_value_info() = make_value_info(name, elem_type, &dims);
  return *this;
}

ModelBuilder& ModelBuilder::add_initializer(const std::string& name, const std::vector<int64_t>& dims,
                                            const std::vector<float>& values) {
  TensorProto tensor = make_tensor(name, dims, TensorProto::FLOAT);
  tensor.mutable_float_data()->Add(values.begin(), values.end());
  return add_initializer(tensor);
}

ModelBuilder& ModelBuilder::add_initializer_i64(const std::string& name, const std::vector<int64_t>& dims,
                                                const std::vector<int64_t>& values) {
  TensorProto tensor = make_tensor(name, dims, TensorProto::INT64);
  tensor.mutable_int64_data()->Add(values.begin(), values.end());
  return add_initializer(tensor);
}

ModelBuilder& ModelBuilder::add_initializer_i32(const std::string& name, const std::vector<int64_t>& dims,
                                                const std::vector<int32_t>& values) {
  TensorProto tensor = make_tensor(name, dims, TensorProto::INT32);
  tensor.mutable_int32_data()->Add(values.begin(), values.end());
  return add_initializer(tensor);
}

// ONNX stores 8-bit integers widened in int32_data.
ModelBuilder& ModelBuilder::add_initializer_i8(const std::string& name, const std::vector<int64_t>& dims,
                                               const std::vector<int8_t>& values) {
  TensorProto tensor = make_tensor(name, dims, TensorProto::INT8);
  for (int8_t value : values) tensor.add_int32_data(value);
  return add_initializer(tensor);
}

ModelBuilder& ModelBuilder::add_initializer_u8(const std::string& name, const std::vector<int64_t>& dims,
                                               const std::vector<uint8_t>& values) {
  TensorProto tensor = make_tensor(name, dims, TensorProto::UINT8);
  for (uint8_t value : values) tensor.add_int32_data(value);
  return add_initializer(tensor);
}

ModelBuilder& ModelBuilder::add_initializer(const onnx::TensorProto& tensor) {
  *graph_.add_initializer() = tensor;
  return *this;
}

ModelBuilder& ModelBuilder::add_node(const std::string& op_type, const std::vector<std::string>& inputs,
                                     const std::vector<std::string>& outputs,
                                     const std::vector<onnx::AttributeProto>& attributes, const std::string& name,
                                     const std::string& domain) {
  onnx::NodeProto* node = graph_.add_node();
  node->set_op_type(op_type);
  node->set_name(name.empty() ? op_type + "_" + std::to_string(graph_.node_size() - 1) : name);
  node->set_domain(domain);
  for (const std::string& input : inputs) node->add_input(input);
  for (const std::string& output : outputs) node->add_output(output);
  for (const onnx::AttributeProto& attribute : attributes) *node->add_attribute() = attribute;
  return *this;
}

onnx::GraphProto ModelBuilder::build_graph() const {
  onnx::GraphProto graph = graph_;
  if (graph.name().empty()) graph.set_name("test_graph");
  return graph;
}

onnx::ModelProto ModelBuilder::build() const {
  onnx::ModelProto model;
  model.set_ir_version(ir_version_);
  model.set_producer_name("mixprec-tests");
  *model.mutable_graph() = build_graph();

  std::set<std::string> declared;
  for (const auto& [domain, version] : opsets_) {
    onnx::OperatorSetIdProto* opset = model.add_opset_import();
    opset->set_domain(domain);
    opset->set_version(version);
    declared.insert(domain);
  }
  // Domains used by main-graph nodes; a domain used only inside subgraphs needs opset().
  for (const onnx::NodeProto& node : graph_.node()) {
    if (declared.insert(node.domain()).second) {
      onnx::OperatorSetIdProto* opset = model.add_opset_import();
      opset->set_domain(node.domain());
      opset->set_version(1);
    }
  }
  return model;
}

// --- Canned models --------------------------------------------------------------------------
namespace {

constexpr int64_t kConvChannels = 4;
constexpr int64_t kImageSize = 8;
// Activation quantization for QDQ layers: uint8 with zero point 128 and scale 1/32 covers
// [-4, 4], comfortably more than the activations these weights produce from inputs in [-1, 1].
constexpr float kActivationScale = 1.0f / 32.0f;
constexpr uint8_t kActivationZeroPoint = 128;
// Float weights lie in [-kWeightRange, kWeightRange]; int8 weights use the symmetric scale
// that maps that range onto [-127, 127].
constexpr float kWeightRange = 0.25f;
constexpr float kWeightScale = kWeightRange / 127.0f;

// Adds Cast-to-`low` and Cast-to-float nodes in front of `value`; returns the restored value.
std::string add_cast_pair(ModelBuilder& builder, const std::string& value, const std::string& prefix,
                          int32_t low) {
  builder.add_node("Cast", {value}, {value + "_low"}, {attr_int("to", low)}, prefix + "_cast");
  builder.add_node("Cast", {value + "_low"}, {value + "_restored"}, {attr_int("to", TensorProto::FLOAT)},
                   prefix + "_uncast");
  return value + "_restored";
}

void add_conv_layer(ModelBuilder& builder, size_t index, LayerPrecision precision, int64_t in_channels) {
  const std::string conv = "conv_" + std::to_string(index);
  const std::string x = "x_" + std::to_string(index);
  const std::string input = index == 0 ? "input" : x;
  const std::vector<int64_t> weight_dims = {kConvChannels, in_channels, 3, 3};
  const size_t weight_count = static_cast<size_t>(kConvChannels * in_channels * 9);
  const auto seed = static_cast<uint32_t>(index + 1);
  builder.add_initializer(conv + ".bias", {kConvChannels}, deterministic_values(kConvChannels, seed + 100, 0.1f));

  std::string activation = input;
  std::string weight = conv + ".weight";
  switch (precision) {
    case LayerPrecision::kFloat:
      builder.add_initializer(weight, weight_dims, deterministic_values(weight_count, seed, kWeightRange));
      break;
    case LayerPrecision::kQdqInt8: {
      std::vector<int8_t> weight_q;
      for (float value : deterministic_values(weight_count, seed, kWeightRange)) {
        weight_q.push_back(static_cast<int8_t>(std::lround(value / kWeightScale)));
      }
      builder.add_initializer_i8(weight + "_q", weight_dims, weight_q)
          .add_initializer(conv + ".weight_scale", {}, {kWeightScale})
          .add_initializer_i8(conv + ".weight_zp", {}, {0})
          .add_initializer(conv + ".input_scale", {}, {kActivationScale})
          .add_initializer_u8(conv + ".input_zp", {}, {kActivationZeroPoint})
          .add_node("QuantizeLinear", {input, conv + ".input_scale", conv + ".input_zp"}, {input + "_q"}, {},
                    conv + "/input_q")
          .add_node("DequantizeLinear", {input + "_q", conv + ".input_scale", conv + ".input_zp"}, {input + "_dq"},
                    {}, conv + "/input_dq")
          .add_node("DequantizeLinear", {weight + "_q", conv + ".weight_scale", conv + ".weight_zp"},
                    {weight + "_dq"}, {}, conv + "/weight_dq");
      activation = input + "_dq";
      weight += "_dq";
      break;
    }
    case LayerPrecision::kCastBf16:
    case LayerPrecision::kCastFp16: {
      const int32_t low = precision == LayerPrecision::kCastBf16 ? TensorProto::BFLOAT16 : TensorProto::FLOAT16;
      builder.add_initializer(weight, weight_dims, deterministic_values(weight_count, seed, kWeightRange));
      activation = add_cast_pair(builder, input, conv + "/input", low);
      weight = add_cast_pair(builder, weight, conv + "/weight", low);
      break;
    }
  }
  builder.add_node("Conv", {activation, weight, conv + ".bias"}, {conv + "_out"},
                   {attr_ints("kernel_shape", {3, 3}), attr_ints("pads", {1, 1, 1, 1})}, conv);
}

}  // namespace

onnx::ModelProto conv_chain(const std::vector<LayerPrecision>& layers) {
  ModelBuilder builder;
  builder.graph_name("conv_chain").add_input("input", TensorProto::FLOAT, {1, 3, kImageSize, kImageSize});
  for (size_t i = 0; i < layers.size(); ++i) {
    add_conv_layer(builder, i, layers[i], i == 0 ? 3 : kConvChannels);
    const bool last = i + 1 == layers.size();
    builder.add_node("Relu", {"conv_" + std::to_string(i) + "_out"}, {last ? "output" : "x_" + std::to_string(i + 1)},
                     {}, "relu_" + std::to_string(i));
  }
  builder.add_output("output", TensorProto::FLOAT, {1, kConvChannels, kImageSize, kImageSize});
  return builder.build();
}

onnx::ModelProto conv_chain(int layers) {
  return conv_chain(std::vector<LayerPrecision>(static_cast<size_t>(layers), LayerPrecision::kFloat));
}

onnx::ModelProto qdq_conv_chain(int layers) {
  return conv_chain(std::vector<LayerPrecision>(static_cast<size_t>(layers), LayerPrecision::kQdqInt8));
}

onnx::ModelProto bf16_conv_chain(int layers) {
  return conv_chain(std::vector<LayerPrecision>(static_cast<size_t>(layers), LayerPrecision::kCastBf16));
}

onnx::ModelProto gemm_classifier(int64_t classes) {
  constexpr int64_t kFeatures = 16;
  return ModelBuilder()
      .graph_name("gemm_classifier")
      .add_input("input", TensorProto::FLOAT, {1, kFeatures})
      .add_initializer("fc.weight", {classes, kFeatures},
                       deterministic_values(static_cast<size_t>(classes * kFeatures), 1, kWeightRange))
      .add_initializer("fc.bias", {classes}, deterministic_values(static_cast<size_t>(classes), 2, 0.1f))
      .add_node("Gemm", {"input", "fc.weight", "fc.bias"}, {"logits"}, {attr_int("transB", 1)}, "fc")
      .add_node("Softmax", {"logits"}, {"probs"}, {attr_int("axis", -1)}, "softmax")
      .add_output("probs", TensorProto::FLOAT, {1, classes})
      .build();
}

onnx::ModelProto matmul_chain(int layers) {
  constexpr int64_t kWidth = 8;
  ModelBuilder builder;
  builder.graph_name("matmul_chain").add_input("input", TensorProto::FLOAT, {1, kWidth});
  std::string x = "input";
  for (int i = 0; i < layers; ++i) {
    const std::string index = std::to_string(i);
    const std::string next = i + 1 == layers ? "output" : "x_" + std::to_string(i + 1);
    builder.add_initializer("matmul_" + index + ".weight", {kWidth, kWidth},
                            deterministic_values(kWidth * kWidth, static_cast<uint32_t>(i + 1), 0.5f))
        .add_node("MatMul", {x, "matmul_" + index + ".weight"}, {"matmul_" + index + "_out"}, {}, "matmul_" + index)
        .add_node("Relu", {"matmul_" + index + "_out"}, {next}, {}, "relu_" + index);
    x = next;
  }
  builder.add_output("output", TensorProto::FLOAT, {1, kWidth});
  return builder.build();
}

onnx::ModelProto attention_model(int conv_layers) {
  constexpr int64_t kTokens = 4, kWidth = 8;
  ModelBuilder builder;
  builder.graph_name("attention").add_input("input", TensorProto::FLOAT, {1, kTokens, kWidth});
  std::string x = "input";
  for (int i = 0; i < conv_layers; ++i) {
    const std::string index = std::to_string(i);
    builder.add_initializer("conv_" + index + ".weight", {kTokens, kTokens, 1},
                            deterministic_values(kTokens * kTokens, static_cast<uint32_t>(40 + i), 0.5f))
        .add_node("Conv", {x, "conv_" + index + ".weight"}, {"conv_" + index + "_out"}, {}, "conv_" + index);
    x = "conv_" + index + "_out";
  }
  uint32_t seed = 50;
  for (const char* head : {"q", "k", "v"}) {
    const std::string name(head);
    builder.add_initializer(name + ".weight", {kWidth, kWidth}, deterministic_values(kWidth * kWidth, seed++, 0.5f))
        .add_node("MatMul", {x, name + ".weight"}, {name}, {}, "proj_" + name);
  }
  builder.add_node("Transpose", {"k"}, {"k_t"}, {testing::attr_ints("perm", {0, 2, 1})}, "k_transpose")
      .add_node("MatMul", {"q", "k_t"}, {"scores"}, {}, "qk")
      .add_node("Softmax", {"scores"}, {"probs"}, {attr_int("axis", -1)}, "softmax")
      .add_node("MatMul", {"probs", "v"}, {"context"}, {}, "pv")
      .add_node("ReduceMean", {"context"}, {"mean"}, {testing::attr_ints("axes", {-1})}, "norm_mean")
      .add_node("Sub", {"context", "mean"}, {"output"}, {}, "norm_sub")
      .add_output("output", TensorProto::FLOAT, {1, kTokens, kWidth});
  return builder.build();
}

ModelBuilder edge_qdq_matmul() {
  ModelBuilder b;
  b.add_input("x", TensorProto::FLOAT, {1, 4})
      .add_output("y", TensorProto::FLOAT, {1, 2})
      .add_initializer("sx", {}, {0.5f})
      .add_initializer_u8("zx", {}, {128})
      .add_initializer_i8("wq", {4, 2}, {4, -4, 8, 0, 0, 4, -4, 8})
      .add_initializer("sw", {}, {0.25f})
      .add_initializer_i8("zw", {}, {0})
      .add_initializer("sm", {}, {1.0f})
      .add_initializer_u8("zm", {}, {128})
      .add_node("QuantizeLinear", {"x", "sx", "zx"}, {"xq"}, {}, "q_in")
      .add_node("DequantizeLinear", {"xq", "sx", "zx"}, {"xd"}, {}, "dq_in")
      .add_node("DequantizeLinear", {"wq", "sw", "zw"}, {"wd"}, {}, "dq_w")
      .add_node("MatMul", {"xd", "wd"}, {"m"}, {}, "mm")
      .add_node("QuantizeLinear", {"m", "sm", "zm"}, {"mq"}, {}, "q_out")
      .add_node("DequantizeLinear", {"mq", "sm", "zm"}, {"y"}, {}, "dq_out");
  return b;
}

onnx::ModelProto multi_output_model() {
  auto conv_weight = [](int64_t out, int64_t in, uint32_t seed) {
    return deterministic_values(static_cast<size_t>(out * in), seed, kWeightRange);
  };
  return ModelBuilder()
      .graph_name("multi_output")
      .add_input("input", TensorProto::FLOAT, {1, 3, kImageSize, kImageSize})
      .add_initializer("trunk.weight", {kConvChannels, 3, 1, 1}, conv_weight(kConvChannels, 3, 1))
      .add_initializer("head_a.weight", {2, kConvChannels, 1, 1}, conv_weight(2, kConvChannels, 2))
      .add_initializer("head_b.weight", {1, kConvChannels, 1, 1}, conv_weight(1, kConvChannels, 3))
      .add_node("Conv", {"input", "trunk.weight"}, {"trunk_out"}, {}, "trunk")
      .add_node("Relu", {"trunk_out"}, {"features"}, {}, "trunk_relu")
      .add_node("Conv", {"features", "head_a.weight"}, {"out_a"}, {}, "head_a")
      .add_node("Conv", {"features", "head_b.weight"}, {"head_b_out"}, {}, "head_b")
      .add_node("Sigmoid", {"head_b_out"}, {"out_b"}, {}, "head_b_sigmoid")
      .add_output("out_a", TensorProto::FLOAT, {1, 2, kImageSize, kImageSize})
      .add_output("out_b", TensorProto::FLOAT, {1, 1, kImageSize, kImageSize})
      .build();
}

onnx::ModelProto nms_detection_model() {
  constexpr int64_t kBoxes = 8;
  return ModelBuilder()
      .graph_name("nms_detection")
      .add_input("boxes", TensorProto::FLOAT, {1, kBoxes, 4})
      .add_input("scores", TensorProto::FLOAT, {1, 1, kBoxes})
      .add_initializer_i64("max_boxes", {1}, {3})
      .add_initializer("iou_threshold", {1}, {0.5f})
      .add_initializer_i64("box_column", {}, {2})
      .add_initializer_i64("batch_axis", {1}, {0})
      .add_node("NonMaxSuppression", {"boxes", "scores", "max_boxes", "iou_threshold"}, {"selected"}, {}, "nms")
      .add_node("Gather", {"selected", "box_column"}, {"box_index"}, {attr_int("axis", 1)}, "gather_index")
      .add_node("Squeeze", {"boxes", "batch_axis"}, {"boxes_2d"}, {}, "squeeze_boxes")
      .add_node("Gather", {"boxes_2d", "box_index"}, {"det_boxes"}, {attr_int("axis", 0)}, "gather_boxes")
      .add_output("det_boxes", TensorProto::FLOAT, {"K", 4})
      .add_output("selected", TensorProto::INT64, {"K", 3})
      .build();
}

onnx::ModelProto hardswish_block() {
  constexpr int64_t kSide = 16;
  const auto conv3x3 = std::vector<onnx::AttributeProto>{attr_ints("kernel_shape", {3, 3}), attr_ints("pads", {1, 1, 1, 1})};
  return ModelBuilder()
      .add_input("x", TensorProto::FLOAT, {int64_t{1}, int64_t{3}, kSide, kSide})
      .add_output("y", TensorProto::FLOAT, {int64_t{1}, int64_t{4}, kSide / 2, kSide / 2})
      .add_initializer("w1", {8, 3, 3, 3}, deterministic_values(8 * 3 * 9, 1, 0.3f))
      .add_initializer("b1", {8}, deterministic_values(8, 2, 0.1f))
      .add_initializer("w2", {8, 8, 3, 3}, deterministic_values(8 * 8 * 9, 3, 0.2f))
      .add_initializer("b2", {8}, deterministic_values(8, 4, 0.1f))
      .add_initializer("w3", {4, 8, 1, 1}, deterministic_values(4 * 8, 5, 0.5f))
      .add_initializer("three", {}, {3.0f})
      .add_initializer("zero", {}, {0.0f})
      .add_initializer("six", {}, {6.0f})
      .add_node("Conv", {"x", "w1", "b1"}, {"c1"}, conv3x3, "c1")
      .add_node("Relu", {"c1"}, {"r1"}, {}, "relu")
      .add_node("Conv", {"r1", "w2", "b2"}, {"c2"}, conv3x3, "c2")
      .add_node("Add", {"c2", "three"}, {"a"}, {}, "hs/add")
      .add_node("Clip", {"a", "zero", "six"}, {"clipped"}, {}, "hs/clip")
      .add_node("Mul", {"c2", "clipped"}, {"m"}, {}, "hs/mul")
      .add_node("Div", {"m", "six"}, {"hs"}, {}, "hs/div")
      .add_node("MaxPool", {"hs"}, {"p"}, {attr_ints("kernel_shape", {2, 2}), attr_ints("strides", {2, 2})}, "pool")
      .add_node("Conv", {"p", "w3"}, {"y"}, {attr_ints("kernel_shape", {1, 1})}, "c3")
      .build();
}

}  // namespace mixprec::testing
