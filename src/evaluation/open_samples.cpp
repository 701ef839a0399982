#include <algorithm>
#include <filesystem>

#include "mixprec/error.h"
#include "common/text.h"
#include "mixprec/image_source.h"
#include "mixprec/log.h"
#include "mixprec/evaluation.h"
#include "tensor/data_paths.h"

namespace mixprec {
namespace {
namespace fs = std::filesystem;

std::string listed(std::span<const std::string_view> extensions) {
  return text::join_each(extensions, [](std::string_view ext) { return ext; });
}

// Images when any named file is a picture, or a named folder holds pictures and no arrays. A
// folder with neither is an error here, where both kinds can be named.
bool names_images(const std::vector<std::string>& paths) {
  for (const auto& path : paths) {
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
      bool images = false, arrays = false;
      for (const auto& entry : fs::directory_iterator(path, ec)) {
        images = images || data_paths::has_extension(entry.path(), data_paths::kPictureExtensions);
        arrays = arrays || data_paths::has_extension(entry.path(), data_paths::kArrayExtensions);
      }
      if (!images && !arrays) {
        throw_bad_input(path, "folder has no pictures (" + listed(data_paths::kPictureExtensions) + ") and no arrays (" +
                                  listed(data_paths::kArrayExtensions) + ")");
      }
      if (images && !arrays) return true;
    } else if (data_paths::has_extension(path, data_paths::kPictureExtensions)) {
      return true;
    }
  }
  return false;
}

}  // namespace

std::unique_ptr<SampleSource> open_samples(const DataSpec& spec, const std::vector<InputSpec>& inputs,
                                           const std::string& model_path) {
  if (spec.data.files.empty() || !names_images(spec.data.files)) {
    auto source = make_sample_source(spec.data, inputs, model_path);
    if (source->is_random()) {
      log_warning(source->describe() + ": ranges and accuracy measured on random data can mislead; give real data");
    }
    return source;
  }
  std::string preset_name = spec.preprocess;
  if (preset_name.empty()) {
    preset_name = "imagenet";
    log_warning("images are preprocessed with the 'imagenet' preset (RGB, ImageNet mean/std); pick the model's own "
                "with --preprocess");
  }
  auto preprocess = image_preprocess_preset(preset_name);
  if (!preprocess) {
    const std::string known = text::join_each(image_preprocess_preset_names(), [](std::string_view name) { return name; });
    throw_bad_input("", "unknown --preprocess '" + preset_name + "' (known: " + known + ")");
  }
  std::vector<InputSpec> resolved = inputs;
  for (auto& input : resolved) {
    if (auto it = spec.data.input_shapes.find(input.name); it != spec.data.input_shapes.end()) {
      input.shape = resolve_shape(input, spec.data.input_shapes, model_path);
    }
  }
  if (spec.image_height > 0) preprocess->height = spec.image_height;
  if (spec.image_width > 0) preprocess->width = spec.image_width;
  return make_image_source(spec.data.files, resolved, *preprocess);
}

}  // namespace mixprec
