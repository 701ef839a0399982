#include "rewrite/quant_ops.h"

#include <cmath>

#include "mixprec/error.h"
#include "mixprec/formats.h"
#include "mixprec/tensor_proto.h"

namespace mixprec::rewrite {

std::optional<Tensor> dequantize_constant(const ir::GraphView& view, const onnx::NodeProto& dq, const std::string& label) {
  const onnx::TensorProto* codes = dq.input_size() > 0 ? view.resolve_initializer(dq.input(0)) : nullptr;
  const onnx::TensorProto* scale = dq.input_size() > 1 ? view.resolve_initializer(dq.input(1)) : nullptr;
  if (!codes || !scale) return std::nullopt;
  std::optional<Tensor> zero_point;
  if (dq.input_size() > 2 && !dq.input(2).empty()) {
    const onnx::TensorProto* zp = view.resolve_initializer(dq.input(2));
    if (!zp) return std::nullopt;
    zero_point = tensor_from_proto(*zp, label);
  }
  const Tensor q = tensor_from_proto(*codes, label);
  QuantParams params;
  params.scale = tensor_from_proto(*scale, label).to_floats();
  if (zero_point) {
    for (float z : zero_point->to_floats()) {
      // An FP8 zero point can hold NaN or a value past int32 (a hostile file): not a zero point.
      if (!std::isfinite(z) || std::fabs(z) > 2147483520.0f) {
        throw_bad_input(label, dq.op_type() + " '" + dq.name() + "': zero point " + std::to_string(z) + " is not a finite code");
      }
      params.zero_point.push_back(static_cast<int32_t>(z));
    }
  }
  const int64_t block_size = ir::int_attribute(dq, "block_size").value_or(0);
  if (params.scale.size() != 1 || scale->dims_size() > 1 || block_size != 0) {  // else per tensor
    const auto rank = static_cast<int64_t>(q.shape().size());
    const int64_t axis = ir::int_attribute(dq, "axis").value_or(1);
    params.axis = axis < 0 ? axis + rank : axis;
    params.block_size = block_size;
    if (params.axis < 0 || params.axis >= rank) {
      throw_bad_input(label, dq.op_type() + " '" + dq.name() + "': axis " + std::to_string(axis) +
                                 " is outside its codes' shape " + shape_to_string(q.shape()));
    }
  }
  try {
    return dequantize_tensor(q, params);
  } catch (const Error& error) {
    throw_bad_input(label, dq.op_type() + " '" + dq.name() + "': " + error.message());
  }
}

}  // namespace mixprec::rewrite
