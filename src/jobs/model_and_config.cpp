#include "jobs/model_and_config.h"

#include <unistd.h>

#include <filesystem>
#include <string>

#include "mixprec/error.h"
#include "mixprec/model_io.h"

namespace mixprec {
namespace {
namespace fs = std::filesystem;
}  // namespace

void save_model_and_config(const onnx::ModelProto& model, const QuantConfig& config, const std::string& model_path,
                           const std::string& config_path, const std::string& config_json) {
  const std::string config_temp = config_path + ".pending-" + std::to_string(::getpid());
  try {
    write_file_atomically(config_temp, config_json);
  } catch (const Error& error) {
    throw Error(error.kind(), config_path, error.message());  // the file the user knows
  }
  const bool external = config.use_external_data_format || model.ByteSizeLong() > kProtobufLimitBytes;
  try {
    save_model(model, model_path, {.external_data = config.use_external_data_format ? ExternalData::kAlways : ExternalData::kAuto});
  } catch (...) {
    fs::remove(config_temp);
    throw;
  }
  std::error_code error;
  fs::rename(config_temp, config_path, error);
  if (error) {
    fs::remove(config_temp);
    fs::remove(model_path);
    if (external) fs::remove(model_path + ".data");  // save_model's external data
    throw_io(config_path, "cannot write the config beside the model: " + error.message() + " (the model was removed)");
  }
}


}  // namespace mixprec
