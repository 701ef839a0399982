#pragma once

#include <string>

#include <onnx/onnx_pb.h>

namespace mixprec::rewrite {

// Folds each inference-mode BatchNormalization that directly follows a Conv into that Conv.
// Returns the number of folds. See fold_batchnorm.cpp for the pattern and preconditions.
size_t fold_batchnorm(onnx::ModelProto& model, const std::string& label);

}  // namespace mixprec::rewrite
