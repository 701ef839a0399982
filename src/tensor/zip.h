// ZIP container code behind npz files (internal to src/tensor). Reads archives written by
// numpy (Python's zipfile) and by write_archive: stored and deflated members, ZIP64 sizes,
// offsets and end records. No encryption, no multi-disk archives.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace mixprec::zip {

// Fills `out` with the next out.size() bytes of a stream, or throws mixprec::Error.
using ByteSource = std::function<void(std::span<std::byte> out)>;
// Receives the next bytes of a stream; throws mixprec::Error when it cannot take them.
using ByteSink = std::function<void(std::span<const std::byte> bytes)>;

enum class Method : uint16_t { kStored = 0, kDeflated = 8 };

// One central directory record, with ZIP64 values already applied.
struct Entry {
  std::string name;
  uint16_t flags = 0;
  uint16_t method = 0;  // raw ZIP method number; read_member accepts only Method values
  uint32_t crc32 = 0;
  uint64_t compressed_size = 0;
  uint64_t uncompressed_size = 0;
  uint64_t local_header_offset = 0;
};

// The central directory of `archive`, in archive order. Throws mixprec::Error kBadInput,
// naming `source`, when the archive is malformed or truncated (kUnsupported for multi-disk).
std::vector<Entry> read_entries(std::span<const std::byte> archive, const std::string& source);

// Calls consume(read, size) where `read` yields the member's `size` uncompressed bytes in
// order; `size` is never more than the member's data can give (stored: its bytes in the archive;
// deflated: 1032 times them, deflate's largest ratio), so consume may allocate it up front.
// Afterwards checks that consume read all of them and that their CRC-32 matches. Every
// Error thrown meanwhile, by the member or by consume, is rethrown as
// "source: member 'NAME': message" with its kind kept. Unknown methods and encrypted members
// are kBadInput.
void read_member(std::span<const std::byte> archive, const Entry& entry, const std::string& source,
                 const std::function<void(const ByteSource& read, uint64_t size)>& consume);

struct MemberContent {
  std::string name;
  std::vector<std::span<const std::byte>> pieces;  // the member's bytes are their concatenation
};

struct WriteOptions {
  Method method = Method::kStored;
  // Use the ZIP64 layout for every size, offset and end record, not only those past the
  // 32-bit limits, so tests can cover the large-archive format with small data.
  bool force_zip64 = false;
};

// Writes a complete archive holding `members` in order. Member names must be unique and at
// most 65535 bytes (checked by the caller). Output is deterministic: every timestamp is
// 1980-01-01 00:00.
void write_archive(const std::vector<MemberContent>& members, const WriteOptions& options, const ByteSink& sink);

}  // namespace mixprec::zip
