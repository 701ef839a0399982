// The one translation unit that compiles stb_image.
#include "tensor/image_decode.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "mixprec/error.h"

// Only the formats image_source.h documents; user-facing failure reasons ("Image not of any
// known type, or corrupt") rather than terse codes.
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#define STBI_ONLY_JPEG
#define STBI_ONLY_BMP
#define STBI_FAILURE_USERMSG
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wconversion"
#pragma GCC diagnostic ignored "-Wsign-conversion"
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wdouble-promotion"
#include <stb_image.h>
#pragma GCC diagnostic pop

namespace mixprec {
namespace {

using File = std::unique_ptr<std::FILE, decltype(&std::fclose)>;

File open_image(const std::string& path) {
  File file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) throw_io(path, std::string("cannot open picture: ") + std::strerror(errno));
  return file;
}

[[noreturn]] void throw_undecodable(const std::string& path) {
  // stb keeps the reason per thread (STBI_THREAD_LOCAL), so concurrent decodes do not mix.
  throw_bad_input(path, std::string("cannot decode picture: ") + stbi_failure_reason());
}

}  // namespace

void check_image_header(const std::string& path) {
  int width = 0, height = 0, channels = 0;
  if (!stbi_info_from_file(open_image(path).get(), &width, &height, &channels)) throw_undecodable(path);
}

RgbImage decode_image_rgb(const std::string& path) {
  constexpr int kRgb = 3;
  int width = 0, height = 0, channels_in_file = 0;
  const std::unique_ptr<stbi_uc, decltype(&stbi_image_free)> pixels(
      stbi_load_from_file(open_image(path).get(), &width, &height, &channels_in_file, kRgb), &stbi_image_free);
  if (!pixels) throw_undecodable(path);
  RgbImage image{.height = height, .width = width};
  image.pixels.assign(pixels.get(), pixels.get() + static_cast<size_t>(width) * static_cast<size_t>(height) * kRgb);
  return image;
}

}  // namespace mixprec
