// Writing a job's model: the output path checked before any work, and a quantized model and its
// effective config written together, both files or neither.
#pragma once

#include <string>

#include <onnx/onnx_pb.h>

#include "mixprec/config.h"

namespace mixprec {

// Before any work: kBadInput when `output` is empty or is the `input` model itself, kIo when its
// folder is missing, it is a folder, or the folder cannot be written into (probed by creating a
// file, since permissions alone do not say).
void refuse_overwriting_input(const std::string& input, const std::string& output);

// The config goes to a temporary name first, the model is saved (atomically; every large
// tensor to its external data file when the config asks for it), then the config is renamed
// into place; a failure at any point removes what this call wrote. `config_json` is the
// config's text (config_file_text), rendered before any work.
void save_model_and_config(const onnx::ModelProto& model, const QuantConfig& config, const std::string& model_path,
                           const std::string& config_path, const std::string& config_json);

}  // namespace mixprec
