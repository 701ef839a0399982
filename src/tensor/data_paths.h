// Data paths as users give them: files, or folders standing for the files inside them.
#pragma once

#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mixprec::data_paths {

inline constexpr std::string_view kArrayExtensions[] = {".npy", ".npz"};
inline constexpr std::string_view kPictureExtensions[] = {".png", ".jpg", ".jpeg", ".bmp"};

// True when the lower-cased extension of `path` is one of `extensions`.
bool has_extension(const std::filesystem::path& path, std::span<const std::string_view> extensions);

// Files as given, folders replaced by their files with one of `extensions` in name order.
// kIo for a path that does not exist; kBadInput for a named file of another type or a folder
// with no such file (`kind` names them in the message: "pictures", "arrays").
std::vector<std::string> expand(const std::vector<std::string>& paths, std::span<const std::string_view> extensions,
                                const std::string& kind);

}  // namespace mixprec::data_paths
