#pragma once

#include <onnx/onnx_pb.h>

namespace mixprec::rewrite {

// Turns the main graph's Constant nodes into initializers; returns how many. See the .cpp.
size_t constants_to_initializers(onnx::ModelProto& model);

}  // namespace mixprec::rewrite
