// PNG (libpng), JPEG (TurboJPEG) and BMP (below) to 8-bit RGB; see image_decode.h for why
// these decoders.
#include "tensor/image_decode.h"

#include <png.h>
#include <turbojpeg.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string_view>

#include "mixprec/error.h"

namespace mixprec {
namespace {

constexpr size_t kRgb = 3;

enum class Mode { kHeader, kPixels };

[[noreturn]] void fail(const std::string& source, const std::string& format, const std::string& reason) {
  throw_bad_input(source, "cannot decode " + format + " picture: " + reason);
}

// Checks the size before anything is allocated for the pixels.
void check_dimensions(int64_t width, int64_t height, const std::string& source, const std::string& format) {
  if (width <= 0 || height <= 0) {
    fail(source, format, "size " + std::to_string(width) + "x" + std::to_string(height) + " is empty or negative");
  }
  if (static_cast<uint64_t>(width) > kMaxImagePixels / static_cast<uint64_t>(height)) {
    throw_unsupported(source, format + " picture of " + std::to_string(width) + "x" + std::to_string(height) +
                                  " pixels is over the limit of " + std::to_string(kMaxImagePixels >> 20) +
                                  " Mpx: resize it");
  }
}

// --- PNG ----------------------------------------------------------------------------------------
// libpng reports errors by longjmp. Everything the error path reads lives in PngState, outside
// the frame that calls setjmp, so no value modified after setjmp is read after longjmp, and
// no C++ object with a destructor is jumped over (the callbacks hold none).

struct PngState {
  std::span<const std::byte> bytes;
  size_t offset = 0;
  char reason[256] = {};
  uint32_t width = 0;
  uint32_t height = 0;
  std::vector<uint8_t>* pixels = nullptr;
  std::vector<png_bytep> rows;
};

void png_read_bytes(png_structp png, png_bytep out, size_t count) {
  auto* state = static_cast<PngState*>(png_get_io_ptr(png));
  if (count > state->bytes.size() - state->offset) png_error(png, "truncated file");
  std::memcpy(out, state->bytes.data() + state->offset, count);
  state->offset += count;
}

[[noreturn]] void png_fail(png_structp png, png_const_charp message) {
  auto* state = static_cast<PngState*>(png_get_error_ptr(png));
  std::snprintf(state->reason, sizeof(state->reason), "%s", message);
  std::longjmp(png_jmpbuf(png), 1);
}

// libpng warns about ancillary chunks it skips (an odd ICC profile, a bad text chunk); the
// pixels are unaffected, and a warning per picture would bury the ones that matter.
void png_ignore_warning(png_structp, png_const_charp) {}

// Returns false with state.reason set on failure.
bool png_decode(PngState& state, Mode mode) {
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &state, png_fail, png_ignore_warning);
  if (png == nullptr) throw std::bad_alloc();
  png_infop info = png_create_info_struct(png);
  if (info == nullptr) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    throw std::bad_alloc();
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  png_set_read_fn(png, &state, png_read_bytes);
  png_set_user_limits(png, 1u << 24, 1u << 24);  // the pixel count is checked below
  png_read_info(png, info);
  state.width = png_get_image_width(png, info);
  state.height = png_get_image_height(png, info);
  if (static_cast<uint64_t>(state.width) > kMaxImagePixels / std::max<uint64_t>(state.height, 1)) {
    png_error(png, "picture over the pixel limit");  // check_png_size saw another IHDR
  }
  if (mode == Mode::kPixels) {
    png_set_expand(png);       // palette and low-bit gray to 8 bits, tRNS to alpha
    png_set_strip_16(png);     // the high byte, as stb and cv2 do
    png_set_strip_alpha(png);  // dropped, not composited
    png_set_gray_to_rgb(png);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    if (png_get_rowbytes(png, info) != size_t{state.width} * kRgb) png_error(png, "unexpected row size after conversion");
    state.pixels->resize(size_t{state.width} * state.height * kRgb);
    state.rows.resize(state.height);
    for (size_t y = 0; y < state.height; ++y) state.rows[y] = state.pixels->data() + y * state.width * kRgb;
    png_read_image(png, state.rows.data());
    png_read_end(png, nullptr);
  }
  png_destroy_read_struct(&png, &info, nullptr);
  return true;
}

// IHDR comes first (PNG spec 5.2): its width and height, read before libpng (which would
// first look at the chunks after IHDR), so a huge size fails as such.
void check_png_size(std::span<const std::byte> bytes, const std::string& source) {
  constexpr size_t kWidthOffset = 16, kHeightOffset = 20;
  if (bytes.size() < kHeightOffset + 4) return;  // libpng reports the truncation
  const auto be32 = [&](size_t at) {
    uint32_t value = 0;
    for (size_t i = 0; i < 4; ++i) value = value << 8 | std::to_integer<uint32_t>(bytes[at + i]);
    return value;
  };
  check_dimensions(be32(kWidthOffset), be32(kHeightOffset), source, "PNG");
}

RgbImage decode_png(std::span<const std::byte> bytes, const std::string& source, Mode mode) {
  check_png_size(bytes, source);
  RgbImage image;
  PngState state;
  state.bytes = bytes;
  state.pixels = &image.pixels;
  if (!png_decode(state, mode)) fail(source, "PNG", state.reason);
  image.width = state.width;
  image.height = state.height;
  return image;
}

// --- JPEG ---------------------------------------------------------------------------------------

RgbImage decode_jpeg(std::span<const std::byte> bytes, const std::string& source, Mode mode) {
  const std::unique_ptr<void, decltype(&tjDestroy)> handle(tjInitDecompress(), &tjDestroy);
  if (!handle) throw std::bad_alloc();
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  const auto size = static_cast<unsigned long>(bytes.size());
  int width = 0, height = 0, subsampling = 0, colorspace = 0;
  if (tjDecompressHeader3(handle.get(), data, size, &width, &height, &subsampling, &colorspace) != 0) {
    fail(source, "JPEG", tjGetErrorStr2(handle.get()));
  }
  check_dimensions(width, height, source, "JPEG");
  RgbImage image{.height = height, .width = width};
  if (mode == Mode::kHeader) return image;
  image.pixels.resize(static_cast<size_t>(width) * static_cast<size_t>(height) * kRgb);
  // Warnings are errors (libjpeg pads a truncated picture with gray and carries on); at most
  // 500 progressive scans (a crafted file can otherwise make each picture take minutes).
  constexpr int kFlags = TJFLAG_STOPONWARNING | TJFLAG_LIMITSCANS;
  if (tjDecompress2(handle.get(), data, size, image.pixels.data(), width, 0, height, TJPF_RGB, kFlags) != 0) {
    fail(source, "JPEG", tjGetErrorStr2(handle.get()));
  }
  return image;
}

// --- BMP ----------------------------------------------------------------------------------------
// Layout (Microsoft's BITMAPFILEHEADER, BITMAPINFOHEADER and later versions): "BM", the file
// size, 4 reserved bytes, the pixel data offset; then the info header: its size, width,
// height (negative: rows top-down), planes, bits per pixel, compression, ..., colours used.
// Rows are padded to 4 bytes and stored bottom-up; pixels are B G R (X).

class BmpReader {
 public:
  BmpReader(std::span<const std::byte> bytes, const std::string& source) : bytes_(bytes), source_(source) {}

  RgbImage decode(Mode mode) {
    constexpr size_t kFileHeaderSize = 14;
    const uint32_t data_offset = u32(10);
    const uint32_t info_size = u32(kFileHeaderSize);
    constexpr uint32_t kCoreHeaderSize = 12;  // OS/2: 16-bit sizes, no compression field
    int64_t width = 0, height = 0;
    uint32_t compression = 0, colors_used = 0;
    size_t palette_entry = 4;
    if (info_size == kCoreHeaderSize) {
      width = u16(18);
      height = u16(20);
      bits_ = u16(24);
      palette_entry = 3;
    } else if (info_size >= 40) {
      width = static_cast<int32_t>(u32(18));
      height = static_cast<int32_t>(u32(22));
      bits_ = u16(28);
      compression = u32(30);
      colors_used = u32(46);
    } else {
      fail_bmp("info header of " + std::to_string(info_size) + " bytes");
    }
    const bool top_down = height < 0;
    height = top_down ? -height : height;
    check_dimensions(width, height, source_, "BMP");

    constexpr uint32_t kBiRgb = 0, kBiBitfields = 3;
    const bool bitfields = compression == kBiBitfields && bits_ == 32;
    if (compression != kBiRgb && !bitfields) {
      throw_unsupported(source_, "compressed BMP pictures (compression " + std::to_string(compression) +
                                     ") are not supported: save it uncompressed or as PNG");
    }
    if (bits_ != 1 && bits_ != 4 && bits_ != 8 && bits_ != 24 && bits_ != 32) {
      throw_unsupported(source_, "BMP pictures of " + std::to_string(bits_) + " bits per pixel are not supported");
    }
    if (bitfields) {
      // The masks follow a 40-byte header, or sit inside a larger one at the same place.
      if (u32(54) != 0x00FF0000 || u32(58) != 0x0000FF00 || u32(62) != 0x000000FF) {
        throw_unsupported(source_, "BMP bit fields other than 8-bit X8R8G8B8 are not supported");
      }
    }
    if (bits_ <= 8) {
      const uint64_t max_colors = uint64_t{1} << bits_;
      const uint64_t count = colors_used == 0 ? max_colors : colors_used;
      if (count > max_colors) fail_bmp(std::to_string(count) + " palette colours for " + std::to_string(bits_) + " bits");
      const uint64_t palette_offset = kFileHeaderSize + info_size + (bitfields ? 12 : 0);
      const auto table = slice(palette_offset, count * palette_entry, "palette");
      palette_.resize(count);
      for (size_t i = 0; i < count; ++i) {
        const auto* bgr = reinterpret_cast<const uint8_t*>(table.data()) + i * palette_entry;
        palette_[i] = {bgr[2], bgr[1], bgr[0]};
      }
    }

    RgbImage image{.height = height, .width = width};
    const uint64_t stride = (static_cast<uint64_t>(width) * bits_ + 31) / 32 * 4;
    const auto data = slice(data_offset, stride * static_cast<uint64_t>(height), "pixel data");
    if (mode == Mode::kHeader) return image;
    image.pixels.resize(static_cast<size_t>(width * height) * kRgb);
    for (int64_t y = 0; y < height; ++y) {
      const int64_t row = top_down ? y : height - 1 - y;
      const auto* src = reinterpret_cast<const uint8_t*>(data.data()) + static_cast<size_t>(row) * stride;
      uint8_t* dst = image.pixels.data() + static_cast<size_t>(y * width) * kRgb;
      for (int64_t x = 0; x < width; ++x, dst += kRgb) pixel(src, static_cast<size_t>(x), dst);
    }
    return image;
  }

 private:
  void pixel(const uint8_t* row, size_t x, uint8_t* dst) const {
    if (bits_ >= 24) {
      const uint8_t* bgr = row + x * (bits_ / 8);
      dst[0] = bgr[2];
      dst[1] = bgr[1];
      dst[2] = bgr[0];
      return;
    }
    const size_t per_byte = 8 / bits_;
    const unsigned shift = static_cast<unsigned>((per_byte - 1 - x % per_byte) * bits_);
    const size_t index = (row[x / per_byte] >> shift) & ((1u << bits_) - 1);
    if (index >= palette_.size()) fail_bmp("pixel uses colour " + std::to_string(index) + " outside the palette");
    std::memcpy(dst, palette_[index].data(), kRgb);
  }

  std::span<const std::byte> slice(uint64_t offset, uint64_t size, const char* what) const {
    if (offset > bytes_.size() || size > bytes_.size() - offset) fail_bmp(std::string("truncated ") + what);
    return bytes_.subspan(offset, size);
  }
  uint32_t u32(uint64_t offset) const {
    uint32_t value;
    std::memcpy(&value, slice(offset, 4, "header").data(), 4);
    return value;
  }
  uint16_t u16(uint64_t offset) const {
    uint16_t value;
    std::memcpy(&value, slice(offset, 2, "header").data(), 2);
    return value;
  }
  [[noreturn]] void fail_bmp(const std::string& reason) const { fail(source_, "BMP", reason); }

  std::span<const std::byte> bytes_;
  const std::string& source_;
  unsigned bits_ = 0;
  std::vector<std::array<uint8_t, 3>> palette_;
};

// --- Dispatch -----------------------------------------------------------------------------------

struct FormatRow {
  std::string_view magic;
  RgbImage (*decode)(std::span<const std::byte>, const std::string&, Mode);
};

RgbImage decode_bmp(std::span<const std::byte> bytes, const std::string& source, Mode mode) {
  return BmpReader(bytes, source).decode(mode);
}

constexpr FormatRow kFormats[] = {
    {std::string_view("\x89PNG\r\n\x1a\n", 8), decode_png},
    {std::string_view("\xFF\xD8\xFF", 3), decode_jpeg},
    {std::string_view("BM", 2), decode_bmp},
};

RgbImage decode(std::span<const std::byte> bytes, const std::string& source, Mode mode) {
  const std::string_view head(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  for (const FormatRow& row : kFormats) {
    if (head.starts_with(row.magic)) return row.decode(bytes, source, mode);
  }
  throw_bad_input(source, bytes.empty() ? "empty file, not a picture"
                                        : "not a PNG, JPEG or BMP picture (unknown leading bytes)");
}

std::vector<std::byte> read_picture(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw_io(path, std::string("cannot open picture: ") + std::strerror(errno));
  const std::streamoff size = in.tellg();
  if (size < 0) throw_io(path, "cannot read picture");
  if (static_cast<uint64_t>(size) > kMaxImageFileBytes) {
    throw_unsupported(path, "picture file of " + std::to_string(size >> 20) + " MiB is over the " +
                                std::to_string(kMaxImageFileBytes >> 20) + " MiB limit");
  }
  std::vector<std::byte> bytes(static_cast<size_t>(size));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(bytes.data()), size);
  if (!in) throw_io(path, "cannot read picture");
  return bytes;
}

}  // namespace

void check_image_header(std::span<const std::byte> bytes, const std::string& source) {
  decode(bytes, source, Mode::kHeader);
}

RgbImage decode_image_rgb(std::span<const std::byte> bytes, const std::string& source) {
  return decode(bytes, source, Mode::kPixels);
}

void check_image_header(const std::string& path) { check_image_header(read_picture(path), path); }

RgbImage decode_image_rgb(const std::string& path) { return decode_image_rgb(read_picture(path), path); }

}  // namespace mixprec
