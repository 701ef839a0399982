// FNV-1a, 64 bit: a stable digest of texts (std::hash is not stable across builds), for keys
// that outlive a run (statistics' model fingerprint, the learned-weights store).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace mixprec {

class Fnv1a {
 public:
  // Each text ends with a separator, so ("ab", "c") and ("a", "bc") differ.
  void add(std::string_view text) {
    for (unsigned char c : text) {
      hash_ ^= c;
      hash_ *= 0x100000001b3ull;
    }
    hash_ ^= 0xff;
    hash_ *= 0x100000001b3ull;
  }
  uint64_t value() const { return hash_; }
  std::string hex() const {
    static const char* digits = "0123456789abcdef";
    std::string out(16, '0');
    for (int i = 0; i < 16; ++i) out[static_cast<size_t>(15 - i)] = digits[(hash_ >> (4 * i)) & 0xf];
    return out;
  }

 private:
  uint64_t hash_ = 0xcbf29ce484222325ull;
};

}  // namespace mixprec
