#include "rewrite/matmul_nbits.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "ir/graph_view.h"
#include "ir/node_builder.h"
#include "ir/onnx_names.h"
#include "mixprec/tensor.h"
#include "mixprec/tensor_proto.h"
#include "rewrite/graph_edit.h"

namespace mixprec::rewrite {
namespace {

constexpr int64_t kMinBlock = 16;  // MatMulNBits' smallest block_size
constexpr int32_t kZeroCode = 8;   // MatMulNBits' default zero point for 4 bits

// How many times each name is read by the nodes of `graph` and of the bodies inside them.
void count_reads(const onnx::GraphProto& graph, std::unordered_map<std::string, int>& reads) {
  for_each_graph(graph, [&](const onnx::GraphProto& g) {
    for (const auto& node : g.node()) {
      for (const std::string& input : node.input()) {
        if (!input.empty()) ++reads[input];
      }
    }
  });
}

class Replacer {
 public:
  Replacer(onnx::GraphProto& graph, const std::string& label, MatMulNBitsSummary& summary)
      : graph_(graph), label_(label), summary_(summary) {
    for (const auto& init : graph_.initializer()) initializers_[init.name()] = &init;
    count_reads(graph_, reads_);
    for (const auto& output : graph_.output()) outputs_.insert(output.name());
    for (int i = 0; i < graph_.node_size(); ++i) {
      for (const std::string& output : graph_.node(i).output()) producers_[output] = i;
    }
  }

  void run() {
    std::unordered_set<int> dropped;
    for (int i = 0; i < graph_.node_size(); ++i) {
      onnx::NodeProto& node = *graph_.mutable_node(i);
      for (auto& attribute : *node.mutable_attribute()) {
        if (attribute.has_g()) Replacer(*attribute.mutable_g(), label_, summary_).run();
        for (auto& body : *attribute.mutable_graphs()) Replacer(body, label_, summary_).run();
      }
      if (node.op_type() != "MatMul" || !ir::is_default_domain(node.domain()) || node.input_size() != 2) continue;
      const auto producer = producers_.find(node.input(1));
      if (producer == producers_.end()) continue;
      const onnx::NodeProto& dq = graph_.node(producer->second);
      if (dq.op_type() != "DequantizeLinear" || !ir::is_default_domain(dq.domain())) continue;
      const onnx::TensorProto* codes = initializer(dq.input(0));
      if (codes == nullptr || (codes->data_type() != dtype_to_onnx(DType::kInt4) &&
                               codes->data_type() != dtype_to_onnx(DType::kUInt4))) {
        continue;  // not a 4-bit weight: nothing to say
      }
      if (const std::string why = replace(node, dq, *codes); !why.empty()) {
        summary_.kept.push_back(node.name() + ": " + why);
        continue;
      }
      dropped.insert(producer->second);
      ++summary_.replaced;
    }
    if (dropped.empty()) return;
    google::protobuf::RepeatedPtrField<onnx::NodeProto> kept;
    for (int i = 0; i < graph_.node_size(); ++i) {
      if (!dropped.contains(i)) *kept.Add() = std::move(*graph_.mutable_node(i));
    }
    graph_.mutable_node()->Swap(&kept);
    for (auto& init : added_) *graph_.add_initializer() = std::move(init);
    remove_unused(graph_);
  }

 private:
  const onnx::TensorProto* initializer(const std::string& name) const {
    const auto it = initializers_.find(name);
    return it == initializers_.end() ? nullptr : it->second;
  }

  // Rewrites `matmul` in place, or says why it cannot.
  std::string replace(onnx::NodeProto& matmul, const onnx::NodeProto& dq, const onnx::TensorProto& codes_proto) {
    if (reads_[dq.output(0)] != 1 || outputs_.contains(dq.output(0))) return "its weight has other readers";
    const int64_t block = ir::int_attribute(dq, "block_size").value_or(0);
    const int64_t axis = ir::int_attribute(dq, "axis").value_or(1);
    if (codes_proto.dims_size() != 2) return "its weight is not 2-D";
    if (block < kMinBlock || (block & (block - 1)) != 0) {
      return "its block size " + std::to_string(block) + " is not a power of two >= 16 (MatMulNBits' rule)";
    }
    if (axis != 0) return "its blocks do not run along K (axis " + std::to_string(axis) + ")";
    const onnx::TensorProto* scale_proto = dq.input_size() > 1 ? initializer(dq.input(1)) : nullptr;
    const onnx::TensorProto* zero_proto =
        dq.input_size() > 2 && !dq.input(2).empty() ? initializer(dq.input(2)) : nullptr;
    if (scale_proto == nullptr || scale_proto->data_type() != onnx::TensorProto::FLOAT) return "its scale is not a float constant";
    if (dq.input_size() > 2 && !dq.input(2).empty() && zero_proto == nullptr) return "its zero point is not a constant";

    const Tensor codes = tensor_from_proto(codes_proto, label_);
    const int64_t k = codes.shape()[0], n = codes.shape()[1];
    const int64_t blocks = (k + block - 1) / block;
    const std::vector<float> scale = tensor_from_proto(*scale_proto, label_).to_floats();
    if (static_cast<int64_t>(scale.size()) != blocks * n) return "its scale does not hold one value per block";
    const bool is_signed = codes.dtype() == DType::kInt4;
    std::vector<float> zero(scale.size(), 0.0f);
    if (zero_proto != nullptr) {
      zero = tensor_from_proto(*zero_proto, label_).to_floats();
      if (zero.size() != scale.size()) return "its zero point does not hold one value per block";
    }
    // Unsigned codes and zero points: int4 shifted by 8.
    const std::vector<float> q = codes.to_floats();
    const int32_t shift = is_signed ? kZeroCode : 0;
    const auto zero_code = [&](int64_t b, int64_t col) {
      return static_cast<int32_t>(zero[static_cast<size_t>(b * n + col)]) + shift;
    };
    const int64_t blob = block / 2;
    Tensor packed(DType::kUInt8, {n, blocks, blob});
    auto bytes = packed.as<uint8_t>();
    Tensor scales(DType::kFloat32, {n * blocks});
    auto scale_out = scales.as<float>();
    bool default_zeros = true;
    for (int64_t col = 0; col < n; ++col) {
      for (int64_t b = 0; b < blocks; ++b) {
        const int32_t zp = zero_code(b, col);
        default_zeros = default_zeros && zp == kZeroCode;
        scale_out[static_cast<size_t>(col * blocks + b)] = scale[static_cast<size_t>(b * n + col)];
        for (int64_t j = 0; j < block; ++j) {
          const int64_t row = b * block + j;
          const int32_t code =
              row < k ? static_cast<int32_t>(q[static_cast<size_t>(row * n + col)]) + shift : zp;  // padding: value 0
          uint8_t& byte = bytes[static_cast<size_t>((col * blocks + b) * blob + j / 2)];
          byte = static_cast<uint8_t>(byte | ((code & 0x0F) << (4 * (j % 2))));
        }
      }
    }
    const std::string base = codes_proto.name();
    std::vector<std::string> inputs = {matmul.input(0), base + "_nbits", base + "_nbits_scales"};
    added_.push_back(tensor_to_proto(packed, inputs[1]));
    added_.push_back(tensor_to_proto(scales, inputs[2]));
    if (!default_zeros) {  // two zero points per byte, a row of ceil(blocks / 2) bytes per column
      const int64_t row_bytes = (blocks + 1) / 2;
      Tensor zeros(DType::kUInt8, {n * row_bytes});
      auto zb = zeros.as<uint8_t>();
      for (int64_t col = 0; col < n; ++col) {
        for (int64_t b = 0; b < blocks; ++b) {
          uint8_t& byte = zb[static_cast<size_t>(col * row_bytes + b / 2)];
          byte = static_cast<uint8_t>(byte | ((zero_code(b, col) & 0x0F) << (4 * (b % 2))));
        }
      }
      inputs.push_back(base + "_nbits_zero_points");
      added_.push_back(tensor_to_proto(zeros, inputs.back()));
    }
    onnx::NodeProto replaced = ir::make_node({.op_type = "MatMulNBits",
                                              .domain = kMicrosoftDomain,
                                              .name = matmul.name(),
                                              .inputs = inputs,
                                              .outputs = {matmul.output(0)},
                                              .attributes = {ir::make_int_attribute("K", k), ir::make_int_attribute("N", n),
                                                             ir::make_int_attribute("bits", 4),
                                                             ir::make_int_attribute("block_size", block)}});
    matmul = std::move(replaced);
    return "";
  }

  onnx::GraphProto& graph_;
  const std::string& label_;
  MatMulNBitsSummary& summary_;
  std::unordered_map<std::string, const onnx::TensorProto*> initializers_;
  std::unordered_map<std::string, int> reads_;
  std::unordered_set<std::string> outputs_;
  std::unordered_map<std::string, int> producers_;
  std::vector<onnx::TensorProto> added_;
};

}  // namespace

MatMulNBitsSummary use_matmul_nbits(onnx::ModelProto& model, const std::string& label) {
  MatMulNBitsSummary summary;
  Replacer(*model.mutable_graph(), label, summary).run();
  if (summary.replaced > 0) {
    const auto& imports = model.opset_import();
    if (std::none_of(imports.begin(), imports.end(), [](const auto& o) { return o.domain() == kMicrosoftDomain; })) {
      auto& opset = *model.add_opset_import();
      opset.set_domain(kMicrosoftDomain);
      opset.set_version(1);
    }
  }
  return summary;
}

}  // namespace mixprec::rewrite
