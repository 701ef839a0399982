// npz archives (the ZIP reader, inflate, every member's npy): parse, and what parses writes
// back, stored and deflated, to archives holding the same members.
#include "fuzz_support.h"
#include "mixprec/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mixprec;
  NamedTensors members;
  try {
    members = npz_from_bytes(fuzz::bytes_of(data, size), "fuzz.npz");
  } catch (const Error&) {
    return 0;
  }
  for (const bool compress : {false, true}) {
    const NamedTensors again = npz_from_bytes(npz_to_bytes(members, {.compress = compress}), "rewritten.npz");
    MIXPREC_FUZZ_CHECK(again.size() == members.size());
    for (size_t i = 0; i < members.size(); ++i) {
      MIXPREC_FUZZ_CHECK(again[i].first == members[i].first);
      MIXPREC_FUZZ_CHECK(again[i].second.shape() == members[i].second.shape());
    }
  }
  return 0;
}
