// A quantized model and its effective config, written together: both files or neither.
#pragma once

#include <string>

#include <onnx/onnx_pb.h>

#include "mixprec/config.h"

namespace mixprec {

// The config goes to a temporary name first, the model is saved (atomically; every large
// tensor to its external data file when the config asks for it), then the config is renamed
// into place; a failure at any point removes what this call wrote. `config_json` is the
// config's text (config_file_text), rendered before any work.
void save_model_and_config(const onnx::ModelProto& model, const QuantConfig& config, const std::string& model_path,
                           const std::string& config_path, const std::string& config_json);

}  // namespace mixprec
