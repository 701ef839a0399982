// Layouts follow PKWARE's APPNOTE.TXT (sections 4.3.7 local header, 4.3.12 central
// directory header, 4.3.14-4.3.16 ZIP64 end records, 4.5.3 ZIP64 extra field).
#include "tensor/zip.h"

#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <optional>
#include <type_traits>

#include "mixprec/error.h"

namespace mixprec::zip {
namespace {

static_assert(std::endian::native == std::endian::little, "ZIP fields are read and written with memcpy");

constexpr uint32_t kLocalHeaderSignature = 0x04034b50;
constexpr uint32_t kCentralHeaderSignature = 0x02014b50;
constexpr uint32_t kEndSignature = 0x06054b50;
constexpr uint32_t kZip64EndSignature = 0x06064b50;
constexpr uint32_t kZip64LocatorSignature = 0x07064b50;
constexpr size_t kLocalHeaderSize = 30;
constexpr size_t kEndSize = 22;
constexpr size_t kZip64LocatorSize = 20;
constexpr uint64_t kZip64EndRemainingSize = 44;  // the fixed part after the size field
constexpr size_t kMaxCommentSize = 0xFFFF;
constexpr uint16_t kZip64ExtraId = 0x0001;
// A 32-bit size or offset field holding this value means "see the ZIP64 record".
constexpr uint32_t kMarker32 = 0xFFFFFFFF;
constexpr uint16_t kMarker16 = 0xFFFF;
constexpr uint16_t kVersionDefault = 20;  // 2.0: deflate
constexpr uint16_t kVersionZip64 = 45;    // 4.5: ZIP64
constexpr uint16_t kFlagEncrypted = 0x0001;
constexpr uint16_t kFlagUtf8Name = 0x0800;
constexpr uint16_t kDosDate1980 = (1 << 5) | 1;  // 1980-01-01, the DOS epoch
// zlib counts in 32-bit uInt; feed it at most this much per call.
constexpr size_t kMaxZlibChunk = size_t{1} << 30;
constexpr size_t kDeflateOutputChunk = size_t{1} << 20;
// Deflate expands at most 1032:1 (zlib technical details: a 258-byte match in 2 bits).
constexpr uint64_t kMaxDeflateRatio = 1032;

// zlib treats a null buffer as "return the initial CRC", which would reset the running value;
// empty spans (e.g. of a zero-size tensor) may well have a null data().
uLong update_crc(uLong crc, std::span<const std::byte> bytes) {
  return bytes.empty() ? crc : crc32_z(crc, reinterpret_cast<const Bytef*>(bytes.data()), bytes.size());
}

std::string hex32(uint32_t value) {
  char text[11];
  std::snprintf(text, sizeof(text), "0x%08x", value);
  return text;
}

// Bounds-checked little-endian reads; running past the end means the archive is truncated.
class Cursor {
 public:
  Cursor(std::span<const std::byte> bytes, const std::string& source, const char* what)
      : bytes_(bytes), source_(source), what_(what) {}

  template <typename T>
  T read() {
    T value;
    std::memcpy(&value, take(sizeof(T)).data(), sizeof(T));
    return value;
  }
  std::span<const std::byte> take(uint64_t count) {
    if (count > bytes_.size() - offset_) throw_bad_input(source_, std::string("truncated ") + what_);
    const auto piece = bytes_.subspan(offset_, count);
    offset_ += count;
    return piece;
  }
  void skip(uint64_t count) { take(count); }
  void expect_signature(uint32_t signature) {
    if (read<uint32_t>() != signature) throw_bad_input(source_, std::string("bad signature of ") + what_);
  }
  bool at_end() const { return offset_ == bytes_.size(); }

 private:
  std::span<const std::byte> bytes_;
  uint64_t offset_ = 0;
  const std::string& source_;
  const char* what_;
};

// `bytes[offset, offset + size)`, or a "truncated" error when the archive is shorter.
std::span<const std::byte> slice(std::span<const std::byte> bytes, uint64_t offset, uint64_t size,
                                 const std::string& source, const char* what) {
  if (offset > bytes.size() || size > bytes.size() - offset) {
    throw_bad_input(source, std::string("truncated ") + what);
  }
  return bytes.subspan(offset, size);
}

struct Directory {
  uint64_t count = 0;
  uint64_t size = 0;
  uint64_t offset = 0;
};

uint64_t find_end_record(std::span<const std::byte> archive, const std::string& source) {
  if (archive.size() >= kEndSize) {
    const uint64_t last = archive.size() - kEndSize;
    const uint64_t first = last > kMaxCommentSize ? last - kMaxCommentSize : 0;
    // Scan backwards: the record sits before a comment of at most 64 KiB.
    for (uint64_t position = last + 1; position-- > first;) {
      Cursor end(archive.subspan(position), source, "end of central directory");
      if (end.read<uint32_t>() != kEndSignature) continue;
      end.skip(16);
      if (end.read<uint16_t>() <= archive.size() - position - kEndSize) return position;
    }
  }
  throw_bad_input(source, "not a ZIP archive, or truncated: no end-of-central-directory record");
}

Directory read_directory(std::span<const std::byte> archive, const std::string& source) {
  const uint64_t end_position = find_end_record(archive, source);
  Cursor end(archive.subspan(end_position), source, "end of central directory");
  end.skip(4);
  uint32_t disk = end.read<uint16_t>();
  uint32_t directory_disk = end.read<uint16_t>();
  uint64_t disk_count = end.read<uint16_t>();
  Directory directory;
  directory.count = end.read<uint16_t>();
  directory.size = end.read<uint32_t>();
  directory.offset = end.read<uint32_t>();

  if (end_position >= kZip64LocatorSize) {
    Cursor locator(archive.subspan(end_position - kZip64LocatorSize), source, "ZIP64 end locator");
    if (locator.read<uint32_t>() == kZip64LocatorSignature) {
      locator.skip(4);
      const auto record_offset = locator.read<uint64_t>();
      Cursor record(slice(archive, record_offset, 12 + kZip64EndRemainingSize, source, "ZIP64 end record"), source,
                    "ZIP64 end record");
      record.expect_signature(kZip64EndSignature);
      record.skip(8 + 2 + 2);  // record size, versions
      disk = record.read<uint32_t>();
      directory_disk = record.read<uint32_t>();
      disk_count = record.read<uint64_t>();
      directory.count = record.read<uint64_t>();
      directory.size = record.read<uint64_t>();
      directory.offset = record.read<uint64_t>();
    }
  }
  if (disk != 0 || directory_disk != 0 || disk_count != directory.count) {
    throw_unsupported(source, "multi-disk ZIP archives are not supported");
  }
  return directory;
}

// Replaces the 32-bit fields that hold the marker with their ZIP64 extra-field values, which
// appear in this fixed order and only when marked.
void apply_zip64_extra(std::span<const std::byte> extra, Entry& entry, const std::string& source) {
  uint64_t* const fields[] = {&entry.uncompressed_size, &entry.compressed_size, &entry.local_header_offset};
  const bool marked = std::any_of(std::begin(fields), std::end(fields), [](const uint64_t* f) { return *f == kMarker32; });
  if (!marked) return;
  Cursor blocks(extra, source, "extra field");
  while (!blocks.at_end()) {
    const auto id = blocks.read<uint16_t>();
    const auto block = blocks.take(blocks.read<uint16_t>());
    if (id != kZip64ExtraId) continue;
    Cursor values(block, source, "ZIP64 extra field");
    for (uint64_t* field : fields) {
      if (*field == kMarker32) *field = values.read<uint64_t>();
    }
    return;
  }
  throw_bad_input(source, "member '" + entry.name + "' lacks its ZIP64 extra field");
}

// Raw deflate (no zlib header, as ZIP stores it) decoded on demand from an in-memory member.
class Inflater {
 public:
  Inflater(std::span<const std::byte> compressed, const std::string& source) : input_(compressed), source_(source) {
    if (inflateInit2(&stream_, -MAX_WBITS) != Z_OK) throw std::bad_alloc();
  }
  ~Inflater() { inflateEnd(&stream_); }
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;

  void read(std::span<std::byte> out) {
    if (inflate_into(out) < out.size()) {
      throw_bad_input(source_, finished_ ? "deflate data end before the declared size" : "truncated deflate data");
    }
  }
  // Throws unless the deflate stream ends exactly where the declared size does.
  void expect_end() {
    std::byte probe[1];
    if (inflate_into(probe) > 0) throw_bad_input(source_, "deflate data longer than the declared size");
    if (!finished_) throw_bad_input(source_, "truncated deflate data");
  }

 private:
  // Fills `out` until it is full, the stream ends or the input runs out; returns the count.
  size_t inflate_into(std::span<std::byte> out) {
    size_t produced = 0;
    while (produced < out.size() && !finished_) {
      if (stream_.avail_in == 0) {
        if (consumed_ == input_.size()) break;
        const size_t chunk = std::min(input_.size() - consumed_, kMaxZlibChunk);
        stream_.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(input_.data() + consumed_));
        stream_.avail_in = static_cast<uInt>(chunk);
        consumed_ += chunk;
      }
      const auto capacity = static_cast<uInt>(std::min(out.size() - produced, kMaxZlibChunk));
      stream_.next_out = reinterpret_cast<Bytef*>(out.data() + produced);
      stream_.avail_out = capacity;
      const int status = inflate(&stream_, Z_NO_FLUSH);
      produced += capacity - stream_.avail_out;
      if (status == Z_STREAM_END) {
        finished_ = true;
      } else if (status == Z_MEM_ERROR) {
        throw std::bad_alloc();
      } else if (status != Z_OK && status != Z_BUF_ERROR) {  // Z_BUF_ERROR: needs more input
        throw_bad_input(source_, std::string("corrupt deflate data (") + (stream_.msg ? stream_.msg : "zlib") + ")");
      }
    }
    return produced;
  }

  z_stream stream_{};
  std::span<const std::byte> input_;
  size_t consumed_ = 0;
  bool finished_ = false;
  const std::string& source_;
};

// The member's data: checks the local header agrees with the central directory.
std::span<const std::byte> member_data(std::span<const std::byte> archive, const Entry& entry,
                                       const std::string& source) {
  Cursor local(slice(archive, entry.local_header_offset, kLocalHeaderSize, source, "local header"), source,
               "local header");
  local.expect_signature(kLocalHeaderSignature);
  local.skip(22);
  const uint64_t name_size = local.read<uint16_t>();
  const uint64_t extra_size = local.read<uint16_t>();
  const auto name = slice(archive, entry.local_header_offset + kLocalHeaderSize, name_size, source, "local header");
  if (std::string_view(reinterpret_cast<const char*>(name.data()), name.size()) != entry.name) {
    throw_bad_input(source, "local header names a different member");
  }
  const uint64_t data_offset = entry.local_header_offset + kLocalHeaderSize + name_size + extra_size;
  return slice(archive, data_offset, entry.compressed_size, source, "member data");
}

void read_member_unwrapped(std::span<const std::byte> archive, const Entry& entry, const std::string& source,
                           const std::function<void(const ByteSource& read, uint64_t size)>& consume) {
  if ((entry.flags & kFlagEncrypted) != 0) throw_bad_input(source, "encrypted members are not supported");
  const auto data = member_data(archive, entry, source);
  std::optional<Inflater> inflater;
  switch (entry.method) {
    case static_cast<uint16_t>(Method::kStored):
      if (entry.compressed_size != entry.uncompressed_size) {
        throw_bad_input(source, "stored member has different compressed and uncompressed sizes");
      }
      break;
    case static_cast<uint16_t>(Method::kDeflated):
      // Checked before the consumer allocates the declared size: a few hundred bytes of
      // archive must not claim gigabytes.
      if (entry.uncompressed_size / kMaxDeflateRatio > entry.compressed_size) {
        throw_bad_input(source, "declares " + std::to_string(entry.uncompressed_size) + " bytes from " +
                                    std::to_string(entry.compressed_size) +
                                    " bytes of deflate data, more than deflate can produce");
      }
      inflater.emplace(data, source);
      break;
    default:
      throw_bad_input(source, "unknown compression method " + std::to_string(entry.method));
  }

  uint64_t delivered = 0;
  uLong crc = crc32_z(0, nullptr, 0);
  const ByteSource read = [&](std::span<std::byte> out) {
    if (out.size() > entry.uncompressed_size - delivered) throw_bad_input(source, "member data end early");
    if (inflater) {
      inflater->read(out);
    } else {
      std::copy_n(data.begin() + static_cast<ptrdiff_t>(delivered), out.size(), out.begin());
    }
    crc = update_crc(crc, out);
    delivered += out.size();
  };
  consume(read, entry.uncompressed_size);

  if (delivered != entry.uncompressed_size) throw_bad_input(source, "member data were not read to the end");
  if (inflater) inflater->expect_end();
  if (crc != entry.crc32) {
    throw_bad_input(source, "CRC-32 mismatch (archive says " + hex32(entry.crc32) + ", data give " +
                                hex32(static_cast<uint32_t>(crc)) + ")");
  }
}

// Little-endian field appends for the writer.
class Record {
 public:
  template <typename T>
    requires std::is_integral_v<T>
  Record& put(T value) {
    const auto* bytes = reinterpret_cast<const std::byte*>(&value);
    bytes_.insert(bytes_.end(), bytes, bytes + sizeof(T));
    return *this;
  }
  Record& put(std::span<const std::byte> bytes) {
    bytes_.insert(bytes_.end(), bytes.begin(), bytes.end());
    return *this;
  }
  Record& put(const std::string& text) { return put(std::as_bytes(std::span(text))); }
  std::span<const std::byte> bytes() const { return bytes_; }
  uint16_t size16() const { return static_cast<uint16_t>(bytes_.size()); }

 private:
  std::vector<std::byte> bytes_;
};

// Raw deflate into a growing buffer.
class Deflater {
 public:
  Deflater() {
    if (deflateInit2(&stream_, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
      throw std::bad_alloc();
    }
  }
  ~Deflater() { deflateEnd(&stream_); }
  Deflater(const Deflater&) = delete;
  Deflater& operator=(const Deflater&) = delete;

  // `flush` is Z_NO_FLUSH for more input to come, Z_FINISH to end the stream.
  void feed(std::span<const std::byte> input, int flush) {
    do {
      const size_t chunk = std::min(input.size(), kMaxZlibChunk);
      stream_.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(input.data()));
      stream_.avail_in = static_cast<uInt>(chunk);
      input = input.subspan(chunk);
      const int chunk_flush = input.empty() ? flush : Z_NO_FLUSH;
      do {  // zlib's documented loop: call again while it fills the whole output buffer
        output_.resize(used_ + kDeflateOutputChunk);
        stream_.next_out = reinterpret_cast<Bytef*>(output_.data() + used_);
        stream_.avail_out = static_cast<uInt>(kDeflateOutputChunk);
        deflate(&stream_, chunk_flush);
        used_ += kDeflateOutputChunk - stream_.avail_out;
      } while (stream_.avail_out == 0);
    } while (!input.empty());
  }
  std::vector<std::byte> take() {
    output_.erase(output_.begin() + static_cast<ptrdiff_t>(used_), output_.end());
    return std::move(output_);
  }

 private:
  z_stream stream_{};
  std::vector<std::byte> output_;
  size_t used_ = 0;  // bytes of output_ that hold compressed data
};

std::vector<std::byte> deflate_pieces(const std::vector<std::span<const std::byte>>& pieces) {
  Deflater deflater;
  for (const auto& piece : pieces) deflater.feed(piece, Z_NO_FLUSH);
  deflater.feed({}, Z_FINISH);
  return deflater.take();
}

struct WrittenMember {
  const MemberContent* content;
  uint32_t crc32;
  uint64_t compressed_size;
  uint64_t uncompressed_size;
  uint64_t local_header_offset;
};

// The 32-bit value of a field, or the marker when it goes to the ZIP64 extra field.
uint32_t field32(uint64_t value, bool zip64) { return zip64 ? kMarker32 : static_cast<uint32_t>(value); }

}  // namespace

std::vector<Entry> read_entries(std::span<const std::byte> archive, const std::string& source) {
  const Directory directory = read_directory(archive, source);
  Cursor records(slice(archive, directory.offset, directory.size, source, "central directory"), source,
                 "central directory");
  std::vector<Entry> entries;
  for (uint64_t index = 0; index < directory.count; ++index) {
    records.expect_signature(kCentralHeaderSignature);
    records.skip(4);  // versions
    Entry entry;
    entry.flags = records.read<uint16_t>();
    entry.method = records.read<uint16_t>();
    records.skip(4);  // time, date
    entry.crc32 = records.read<uint32_t>();
    entry.compressed_size = records.read<uint32_t>();
    entry.uncompressed_size = records.read<uint32_t>();
    const auto name_size = records.read<uint16_t>();
    const auto extra_size = records.read<uint16_t>();
    const auto comment_size = records.read<uint16_t>();
    records.skip(8);  // disk, attributes
    entry.local_header_offset = records.read<uint32_t>();
    const auto name = records.take(name_size);
    entry.name.assign(reinterpret_cast<const char*>(name.data()), name.size());
    apply_zip64_extra(records.take(extra_size), entry, source);
    records.skip(comment_size);
    entries.push_back(std::move(entry));
  }
  return entries;
}

void read_member(std::span<const std::byte> archive, const Entry& entry, const std::string& source,
                 const std::function<void(const ByteSource& read, uint64_t size)>& consume) {
  try {
    read_member_unwrapped(archive, entry, source, consume);
  } catch (const Error& error) {
    throw Error(error.kind(), source, "member '" + entry.name + "': " + error.message());
  }
}

void write_archive(const std::vector<MemberContent>& members, const WriteOptions& options, const ByteSink& sink) {
  uint64_t offset = 0;
  const auto emit = [&](std::span<const std::byte> bytes) {
    sink(bytes);
    offset += bytes.size();
  };
  const bool deflate = options.method == Method::kDeflated;

  std::vector<WrittenMember> written;
  for (const MemberContent& member : members) {
    WrittenMember entry{&member, 0, 0, 0, offset};
    uLong crc = crc32_z(0, nullptr, 0);
    for (const auto& piece : member.pieces) {
      crc = update_crc(crc, piece);
      entry.uncompressed_size += piece.size();
    }
    entry.crc32 = static_cast<uint32_t>(crc);
    const std::vector<std::byte> compressed = deflate ? deflate_pieces(member.pieces) : std::vector<std::byte>();
    entry.compressed_size = deflate ? compressed.size() : entry.uncompressed_size;

    // A local header carries both sizes in its ZIP64 field, or neither.
    const bool zip64 = options.force_zip64 || entry.uncompressed_size >= kMarker32 || entry.compressed_size >= kMarker32;
    Record extra;
    if (zip64) extra.put(kZip64ExtraId).put(uint16_t{16}).put(entry.uncompressed_size).put(entry.compressed_size);
    Record header;
    header.put(kLocalHeaderSignature)
        .put(zip64 ? kVersionZip64 : kVersionDefault)
        .put(kFlagUtf8Name)
        .put(static_cast<uint16_t>(options.method))
        .put(uint16_t{0})
        .put(kDosDate1980)
        .put(entry.crc32)
        .put(field32(entry.compressed_size, zip64))
        .put(field32(entry.uncompressed_size, zip64))
        .put(static_cast<uint16_t>(member.name.size()))
        .put(extra.size16())
        .put(member.name)
        .put(extra.bytes());
    emit(header.bytes());
    if (deflate) {
      emit(compressed);
    } else {
      for (const auto& piece : member.pieces) emit(piece);
    }
    written.push_back(entry);
  }

  const uint64_t directory_offset = offset;
  for (const WrittenMember& entry : written) {
    const auto needs_zip64 = [&](uint64_t value) { return options.force_zip64 || value >= kMarker32; };
    const bool uncompressed_zip64 = needs_zip64(entry.uncompressed_size);
    const bool compressed_zip64 = needs_zip64(entry.compressed_size);
    const bool offset_zip64 = needs_zip64(entry.local_header_offset);
    Record values;
    if (uncompressed_zip64) values.put(entry.uncompressed_size);
    if (compressed_zip64) values.put(entry.compressed_size);
    if (offset_zip64) values.put(entry.local_header_offset);
    Record extra;
    if (values.size16() > 0) extra.put(kZip64ExtraId).put(values.size16()).put(values.bytes());
    const uint16_t version = values.size16() > 0 ? kVersionZip64 : kVersionDefault;
    Record header;
    header.put(kCentralHeaderSignature)
        .put(version)
        .put(version)
        .put(kFlagUtf8Name)
        .put(static_cast<uint16_t>(options.method))
        .put(uint16_t{0})
        .put(kDosDate1980)
        .put(entry.crc32)
        .put(field32(entry.compressed_size, compressed_zip64))
        .put(field32(entry.uncompressed_size, uncompressed_zip64))
        .put(static_cast<uint16_t>(entry.content->name.size()))
        .put(extra.size16())
        .put(uint16_t{0})   // comment
        .put(uint16_t{0})   // disk
        .put(uint16_t{0})   // internal attributes
        .put(uint32_t{0})   // external attributes
        .put(field32(entry.local_header_offset, offset_zip64))
        .put(entry.content->name)
        .put(extra.bytes());
    emit(header.bytes());
  }
  const uint64_t directory_size = offset - directory_offset;
  const uint64_t count = written.size();

  const bool zip64_end = options.force_zip64 || count >= kMarker16 || directory_size >= kMarker32 ||
                         directory_offset >= kMarker32;
  if (zip64_end) {
    const uint64_t record_offset = offset;
    Record record;
    record.put(kZip64EndSignature)
        .put(kZip64EndRemainingSize)
        .put(kVersionZip64)
        .put(kVersionZip64)
        .put(uint32_t{0})  // disk
        .put(uint32_t{0})  // directory disk
        .put(count)
        .put(count)
        .put(directory_size)
        .put(directory_offset)
        .put(kZip64LocatorSignature)
        .put(uint32_t{0})  // disk of the ZIP64 end record
        .put(record_offset)
        .put(uint32_t{1});  // disk count
    emit(record.bytes());
  }
  const auto count16 = zip64_end ? kMarker16 : static_cast<uint16_t>(count);
  Record end;
  end.put(kEndSignature)
      .put(uint16_t{0})  // disk
      .put(uint16_t{0})  // directory disk
      .put(count16)
      .put(count16)
      .put(field32(directory_size, zip64_end))
      .put(field32(directory_offset, zip64_end))
      .put(uint16_t{0});  // comment
  emit(end.bytes());
}

}  // namespace mixprec::zip
