// Picture files to 8-bit RGB pixels. Internal to src/tensor; see image_source.h for the
// conversions promised to users.
//
// Decoders, chosen for hostile input (any calibration picture reaches them): PNG through
// Debian's libpng and JPEG through libjpeg-turbo's TurboJPEG API — both continuously fuzzed
// upstream and patched by Debian's security team — and BMP through the bounds-checked reader
// in image_decode.cpp (uncompressed 1/4/8/24/32-bit). The format is told by the file's magic
// bytes, never by its extension, so a failure names the decoder that actually failed.
//
// Limits: a picture of more than kMaxImagePixels pixels, or a file over kMaxImageFileBytes,
// is refused before its pixels are allocated.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace mixprec {

// 64 Mpx: above the largest camera pictures, and 192 MiB of RGB at most per decode.
inline constexpr uint64_t kMaxImagePixels = uint64_t{1} << 26;
inline constexpr uint64_t kMaxImageFileBytes = uint64_t{256} << 20;

struct RgbImage {
  int64_t height = 0;
  int64_t width = 0;
  std::vector<uint8_t> pixels;  // height * width * 3, row-major, R G B interleaved
};

// Reads only the header. Throws kIo when `path` cannot be opened, kBadInput (with the decoder's
// reason) when it is not a PNG, JPEG or BMP picture, kUnsupported for a BMP variant we do not
// read (compressed, 16 bits per pixel).
void check_image_header(const std::string& path);

// Decodes the whole picture: grayscale and palettes expanded to RGB, alpha dropped (as
// cv2.imread's IMREAD_COLOR does), 16 bits reduced to 8 (the high byte), no gamma correction.
// Errors as check_image_header, plus kBadInput for corrupt or truncated pixel data (a JPEG
// decoder warning counts as corrupt: libjpeg would otherwise pad the picture with gray).
RgbImage decode_image_rgb(const std::string& path);

// The same on a picture already in memory; `source` names it in errors.
RgbImage decode_image_rgb(std::span<const std::byte> bytes, const std::string& source);
void check_image_header(std::span<const std::byte> bytes, const std::string& source);

}  // namespace mixprec
