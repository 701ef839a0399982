#include "tensor/data_paths.h"

#include <algorithm>
#include <cctype>

#include "common/text.h"
#include "mixprec/error.h"

namespace mixprec::data_paths {
namespace fs = std::filesystem;
namespace {

std::string listed(std::span<const std::string_view> extensions) {
  return text::join_each(extensions, [](std::string_view ext) { return ext; });
}

}  // namespace

bool has_extension(const fs::path& path, std::span<const std::string_view> extensions) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return std::find(extensions.begin(), extensions.end(), ext) != extensions.end();
}

std::vector<std::string> expand(const std::vector<std::string>& paths, std::span<const std::string_view> extensions,
                                const std::string& kind) {
  std::vector<std::string> files;
  for (const auto& path : paths) {
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
      std::vector<std::string> found;
      for (const auto& entry : fs::directory_iterator(path)) {
        if (entry.is_regular_file() && has_extension(entry.path(), extensions)) found.push_back(entry.path().string());
      }
      if (found.empty()) throw_bad_input(path, "folder has no " + kind + " (" + listed(extensions) + ")");
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::is_regular_file(path, ec)) {
      if (!has_extension(path, extensions)) {
        throw_bad_input(path, "not one of the " + kind + " this option takes (" + listed(extensions) + ")");
      }
      files.push_back(path);
    } else {
      throw_io(path, "no such file or folder");
    }
  }
  return files;
}

}  // namespace mixprec::data_paths
