#include "ir/onnx_names.h"

#include <array>

namespace mixprec::ir {
namespace {

// Index = ONNX TensorProto.DataType value (onnx.proto3). Names follow mixprec's dtype names.
constexpr std::array<std::string_view, 24> kElementTypeNames = {
    "undefined",     "float32",     "uint8",          "int8",       "uint16",  "int16",
    "int32",         "int64",       "string",         "bool",       "float16", "float64",
    "uint32",        "uint64",      "complex64",      "complex128", "bfloat16", "float8e4m3fn",
    "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz", "uint4",      "int4",    "float4e2m1",
};

}  // namespace

bool is_default_domain(std::string_view domain) { return domain.empty() || domain == "ai.onnx"; }

std::string qualified_op_type(const onnx::NodeProto& node) {
  return is_default_domain(node.domain()) ? node.op_type() : node.domain() + ":" + node.op_type();
}

std::string onnx_type_name(int32_t elem_type) {
  if (elem_type >= 0 && static_cast<size_t>(elem_type) < kElementTypeNames.size()) {
    return std::string(kElementTypeNames[static_cast<size_t>(elem_type)]);
  }
  return "onnx_type_" + std::to_string(elem_type);
}

}  // namespace mixprec::ir
