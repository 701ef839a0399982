// Conversions between onnx::TensorProto (initializers, Constant values) and Tensor.
#pragma once

#include <string>

#include <onnx/onnx_pb.h>

#include "mixprec/tensor.h"

namespace mixprec {

// Reads raw_data or the typed fields (float_data, int32_data, int64_data) of a self-contained
// tensor. kUnsupported for element types outside DType, kBadInput when the data size does not
// match the dims or the tensor still references external data. `label` names the model.
Tensor tensor_from_proto(const onnx::TensorProto& proto, const std::string& label);

// A TensorProto named `name` holding `tensor` in raw_data.
onnx::TensorProto tensor_to_proto(const Tensor& tensor, const std::string& name);

}  // namespace mixprec
