// How ONNX names things mixprec reports and matches: domains, qualified op types, element types.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <onnx/onnx_pb.h>

namespace mixprec::ir {

// "" and "ai.onnx" both name the default domain.
bool is_default_domain(std::string_view domain);

// "op_type" for the default domain, "domain:op_type" otherwise.
std::string qualified_op_type(const onnx::NodeProto& node);

// Lower-case name of an ONNX TensorProto element type ("float32", "bfloat16", "int4", ...);
// "undefined" for 0 and "onnx_type_<n>" for types newer than this table.
std::string onnx_type_name(int32_t elem_type);

}  // namespace mixprec::ir
