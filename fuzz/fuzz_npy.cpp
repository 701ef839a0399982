// npy images: parse, and every array that parses writes back to bytes that parse to it.
#include "fuzz_support.h"
#include "mixprec/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mixprec;
  try {
    const Tensor tensor = npy_from_bytes(fuzz::bytes_of(data, size), "fuzz.npy");
    const std::vector<std::byte> written = npy_to_bytes(tensor);
    const Tensor again = npy_from_bytes(written, "rewritten.npy");
    MIXPREC_FUZZ_CHECK(again.dtype() == tensor.dtype() && again.shape() == tensor.shape());
    MIXPREC_FUZZ_CHECK(std::equal(again.data(), again.data() + again.byte_size(), tensor.data()));
  } catch (const Error&) {
  }
  return 0;
}
