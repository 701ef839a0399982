// Picture files to 8-bit RGB pixels (stb_image). Internal to src/tensor; see image_source.h for
// the conversions promised to users.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mixprec {

struct RgbImage {
  int64_t height = 0;
  int64_t width = 0;
  std::vector<uint8_t> pixels;  // height * width * 3, row-major, R G B interleaved
};

// Reads only the header. Throws kIo when `path` cannot be opened, kBadInput (with the decoder's
// reason) when it is not a PNG, JPEG or BMP picture.
void check_image_header(const std::string& path);

// Decodes the whole picture: grayscale replicated to RGB, alpha dropped, 16 bits reduced to 8.
// Errors as check_image_header, plus kBadInput for corrupt pixel data.
RgbImage decode_image_rgb(const std::string& path);

}  // namespace mixprec
