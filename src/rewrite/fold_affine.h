#pragma once

#include <string>

#include <onnx/onnx_pb.h>

namespace mixprec::rewrite {

// Folds per-channel Mul/Div/Add/Sub by constants that directly follow a Conv into that Conv
// (the form many exporters give an inference-mode BatchNormalization). Returns the number of
// ops folded. See fold_affine.cpp for the pattern and preconditions.
size_t fold_affine(onnx::ModelProto& model, const std::string& label);

}  // namespace mixprec::rewrite
