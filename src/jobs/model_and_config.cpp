#include "jobs/model_and_config.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

#include "mixprec/error.h"
#include "mixprec/model_io.h"

namespace mixprec {
namespace {
namespace fs = std::filesystem;
}  // namespace

void refuse_overwriting_input(const std::string& input, const std::string& output) {
  std::error_code ec;
  if (output.empty()) throw_bad_input("", "no output path given");
  if (fs::exists(output, ec) && fs::equivalent(input, output, ec)) {
    throw_bad_input(output, "the output would overwrite the input model");
  }
  // Before any work (calibration can take minutes): the folder the output goes into.
  const fs::path folder = fs::path(output).parent_path();
  if (!folder.empty() && !fs::is_directory(folder, ec)) {
    throw_io(output, "the output folder " + folder.string() + " does not exist");
  }
  if (fs::is_directory(output, ec)) throw_io(output, "is a folder, not a file name for the output model");
  // Permissions alone do not say (root writes anywhere, yet not into /proc or a read-only mount).
  const std::string probe = output + ".probe-" + std::to_string(::getpid());
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) {
    throw_io(output, "cannot write into the output folder " + (folder.empty() ? std::string(".") : folder.string()) +
                         ": " + std::strerror(errno));
  }
  ::close(fd);
  fs::remove(probe, ec);
}

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
