#include "support/hostile_inputs.h"

#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace mixprec::testing {
namespace {

template <typename T>
void put(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof(T));
}
template <typename... T>
void put_all(std::string& out, T... values) {
  (put(out, values), ...);
}

std::string raw_deflate(const std::string& data) {
  z_stream stream{};
  if (deflateInit2(&stream, Z_BEST_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw std::runtime_error("deflateInit2");
  }
  std::string out(deflateBound(&stream, data.size()), '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  stream.avail_in = static_cast<uInt>(data.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  deflate(&stream, Z_FINISH);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

// An npy 1.0 header (padded to 64 bytes) for `shape_text` float32 data.
std::string npy_header(const std::string& shape_text) {
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape_text + ", }";
  std::string header("\x93NUMPY\x01\x00", 8);
  const size_t padded = (10 + dict.size() + 1 + 63) / 64 * 64 - 10;
  dict.resize(padded - 1, ' ');
  dict += '\n';
  put(header, static_cast<uint16_t>(padded));
  return header + dict;
}

// A PNG chunk with its CRC.
std::string png_chunk(const std::string& type, const std::string& data) {
  std::string chunk;
  const uint32_t length = static_cast<uint32_t>(data.size());
  chunk += static_cast<char>(length >> 24);
  chunk += static_cast<char>(length >> 16);
  chunk += static_cast<char>(length >> 8);
  chunk += static_cast<char>(length);
  const std::string body = type + data;
  chunk += body;
  const uLong crc = crc32(0, reinterpret_cast<const Bytef*>(body.data()), static_cast<uInt>(body.size()));
  for (int shift = 24; shift >= 0; shift -= 8) chunk += static_cast<char>(crc >> shift);
  return chunk;
}

std::string big_endian32(uint32_t value) {
  std::string out;
  for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>(value >> shift);
  return out;
}

const std::string kPngSignature("\x89PNG\r\n\x1a\n", 8);

std::string png_ihdr(uint32_t width, uint32_t height) {
  // 8-bit RGB, deflate, adaptive filtering, no interlace.
  return png_chunk("IHDR", big_endian32(width) + big_endian32(height) + std::string("\x08\x02\x00\x00\x00", 5));
}

}  // namespace

std::string zip_with_declared_size(const std::string& name, const std::string& deflated, uint64_t declared_size) {
  constexpr uint32_t kMarker = 0xFFFFFFFF;
  std::string extra;
  put(extra, uint16_t{1});   // ZIP64 extra field
  put(extra, uint16_t{16});
  put(extra, declared_size);
  put(extra, static_cast<uint64_t>(deflated.size()));

  // The fields both headers carry, in this order (APPNOTE 4.3.7 and 4.3.12): flags, method
  // (deflated), time, date, CRC (never reached), sizes (in the ZIP64 field), name and extra sizes.
  const auto shared_fields = [&](std::string& out) {
    put_all(out, uint16_t{0}, uint16_t{8}, uint16_t{0}, uint16_t{0x21}, uint32_t{0}, kMarker, kMarker,
            static_cast<uint16_t>(name.size()), static_cast<uint16_t>(extra.size()));
  };
  std::string zip;
  put_all(zip, uint32_t{0x04034b50}, uint16_t{45});
  shared_fields(zip);
  zip += name + extra + deflated;

  const auto directory_offset = static_cast<uint32_t>(zip.size());
  put_all(zip, uint32_t{0x02014b50}, uint16_t{45}, uint16_t{45});
  shared_fields(zip);
  // Comment size, disk, internal and external attributes, local header offset.
  put_all(zip, uint16_t{0}, uint16_t{0}, uint16_t{0}, uint32_t{0}, uint32_t{0});
  zip += name + extra;
  const auto directory_size = static_cast<uint32_t>(zip.size() - directory_offset);
  put_all(zip, uint32_t{0x06054b50}, uint16_t{0}, uint16_t{0}, uint16_t{1}, uint16_t{1}, directory_size,
          directory_offset, uint16_t{0});
  return zip;
}

NamedBytes hostile_pictures() {
  NamedBytes pictures;
  // SOI, DHT of length 0xFFFF, class/id 0, code counts 255 and 255, then the file ends.
  pictures.emplace_back("jpeg_huffman_510_codes.jpg", std::string("\xFF\xD8\xFF\xC4\xFF\xFF\x00\xFF\xFF", 9));
  // A PNG whose IHDR CRC is wrong.
  std::string bad_crc = kPngSignature + png_ihdr(4, 4);
  bad_crc[bad_crc.size() - 1] ^= 0x55;
  pictures.emplace_back("png_bad_ihdr_crc.png", bad_crc);
  // A valid start, then the file ends inside the image data.
  std::string truncated = kPngSignature + png_ihdr(64, 64) + png_chunk("IDAT", std::string("\x78\x9c\x63\x60", 4));
  pictures.emplace_back("png_truncated.png", truncated.substr(0, truncated.size() - 2));
  pictures.emplace_back("png_100000x100000.png", kPngSignature + png_ihdr(100000, 100000) + png_chunk("IEND", ""));
  // BMP claiming 30000 x 30000 at 24 bits in a 54-byte file.
  std::string bmp = "BM";
  put_all(bmp, uint32_t{54}, uint32_t{0}, uint32_t{54}, uint32_t{40}, int32_t{30000}, int32_t{30000}, uint16_t{1},
          uint16_t{24});
  bmp.resize(54, '\0');
  pictures.emplace_back("bmp_30000x30000_no_pixels.bmp", bmp);
  // A JPEG frame header (SOF0) of 65000 x 65000 pixels.
  pictures.emplace_back("jpeg_65000x65000.jpg",
                        std::string("\xFF\xD8\xFF\xC0\x00\x11\x08\xFD\xE8\xFD\xE8\x03\x01\x22\x00\x02\x11\x01\x03\x11\x01"
                                    "\xFF\xD9", 23));
  return pictures;
}

NamedBytes hostile_arrays() {
  NamedBytes arrays;
  const uint64_t six_gib = uint64_t{6} << 30;
  std::string shape = "(";  // built in steps: GCC 12 warns falsely (-Wrestrict) on "(" + std::string
  shape += std::to_string(six_gib / 4);
  shape += ",)";
  const std::string header = npy_header(shape);
  arrays.emplace_back("npz_declares_6gib.npz", zip_with_declared_size("x.npy", raw_deflate(header), header.size() + six_gib));
  arrays.emplace_back("npy_short_data.npy", npy_header("(1000000,)") + std::string(16, '\0'));
  return arrays;
}

NamedBytes hostile_configs() {
  NamedBytes configs;
  constexpr size_t kRegexDepth = 20000;
  configs.emplace_back("regex_nested_20000.json", R"({"exclude": {"node_names": [")" + std::string(kRegexDepth, '(') +
                                                      "a" + std::string(kRegexDepth, ')') + R"("]}})");
  constexpr size_t kJsonDepth = 300000;
  configs.emplace_back("json_nested_300000.json",
                       R"({"unknown_key": )" + std::string(kJsonDepth, '[') + std::string(kJsonDepth, ']') + "}");
  configs.emplace_back("number_1e999.json", R"({"extra_options": {"NumCalibSamples": 1e999}})");
  configs.emplace_back("regex_backtracking.json",
                       R"({"specific_layer_config": [{"target_node_names": ["^(a*)*.*b$"], "layer_config": {}}]})");
  return configs;
}

}  // namespace mixprec::testing
