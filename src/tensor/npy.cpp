// npy layout (numpy/lib/format.py): magic "\x93NUMPY", major and minor version bytes, the
// header length (uint16 in 1.0, uint32 in 2.0/3.0), a Python dict literal padded with spaces
// and ended by '\n', then the raw array data.
#include "mixprec/npy.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cassert>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <string_view>
#include <unordered_set>
#include <utility>

#include "common/text.h"
#include "mixprec/error.h"
#include "tensor/zip.h"

namespace mixprec {
namespace {

static_assert(std::endian::native == std::endian::little, "npy data and lengths are copied as little-endian bytes");

constexpr std::string_view kMagic("\x93NUMPY", 6);
constexpr size_t kPrefixSizeV1 = 10;     // magic, version, uint16 header length
constexpr size_t kPrefixSizeV2 = 12;     // magic, version, uint32 header length (2.0 and 3.0)
constexpr size_t kHeaderAlignment = 64;  // numpy's ARRAY_ALIGN
constexpr std::string_view kMlDtypesBFloat16 = "bfloat16";
constexpr std::string_view kNpySuffix = ".npy";
constexpr size_t kMaxZipNameSize = 0xFFFF;

struct NpyHeader {
  DType dtype;
  Shape shape;
};

std::string supported_dtype_names() {
  std::vector<std::string> names;
  for (const DTypeTraits& traits : all_dtype_traits()) {
    if (*traits.npy_descr != '\0') names.emplace_back(traits.name);
  }
  return text::join(names);
}

// descr is a byte order ('<' little, '>' big, '|' not applicable, '=' native) and a type code.
DType dtype_from_descr(const std::string& descr, const std::string& source) {
  if (descr == kMlDtypesBFloat16) return DType::kBFloat16;
  if (descr.size() >= 2 && std::string_view("<>|=").find(descr[0]) != std::string_view::npos) {
    const std::string_view code = std::string_view(descr).substr(1);
    for (const DTypeTraits& traits : all_dtype_traits()) {
      if (*traits.npy_descr == '\0' || code != std::string_view(traits.npy_descr).substr(1)) continue;
      if (descr[0] == '>' && traits.size > 1) {
        throw_unsupported(source, "big-endian npy data ('" + descr + "') are not supported; save them little-endian");
      }
      return traits.dtype;
    }
  }
  throw_unsupported(source, "npy dtype '" + descr + "' is not supported (supported: " + supported_dtype_names() + ")");
}

// Parses the Python dict literal numpy writes, e.g.
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& source) : text_(text), source_(source) {}

  NpyHeader parse() {
    std::optional<std::string> descr;
    std::optional<bool> fortran_order;
    std::optional<Shape> shape;
    expect('{');
    while (!consume('}')) {
      const std::string key = parse_string();
      expect(':');
      if (key == "descr" && !descr) {
        descr = parse_descr();
      } else if (key == "fortran_order" && !fortran_order) {
        fortran_order = parse_bool();
      } else if (key == "shape" && !shape) {
        shape = parse_shape();
      } else {
        fail("unexpected or repeated key '" + key + "'");
      }
      if (!consume(',')) {
        expect('}');
        break;
      }
    }
    skip_space();
    if (pos_ != text_.size()) fail("unexpected text after the dict at offset " + std::to_string(pos_));
    if (!descr || !fortran_order || !shape) fail("it needs 'descr', 'fortran_order' and 'shape'");
    if (*fortran_order) {
      throw_unsupported(source_, "Fortran-order npy data are not supported; save a C-order array");
    }
    return {dtype_from_descr(*descr, source_), std::move(*shape)};
  }

 private:
  [[noreturn]] void fail(const std::string& problem) const {
    throw_bad_input(source_, "bad npy header: " + problem);
  }
  [[noreturn]] void fail_expected(const std::string& what) const {
    fail("expected " + what + " at offset " + std::to_string(pos_));
  }
  bool at(char c) const { return pos_ < text_.size() && text_[pos_] == c; }
  void skip_space() {
    while (pos_ < text_.size() && std::string_view(" \t\r\n").find(text_[pos_]) != std::string_view::npos) ++pos_;
  }
  bool consume(char c) {
    skip_space();
    if (!at(c)) return false;
    ++pos_;
    return true;
  }
  void expect(char c) {
    if (!consume(c)) fail_expected(std::string("'") + c + "'");
  }

  std::string parse_string() {
    skip_space();
    if (!at('\'') && !at('"')) fail_expected("a quoted string");
    const char quote = text_[pos_++];
    const size_t end = text_.find(quote, pos_);
    if (end == std::string_view::npos) fail("unterminated string");
    std::string value(text_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return value;
  }
  std::string parse_descr() {
    skip_space();
    if (at('[')) throw_unsupported(source_, "structured npy dtypes are not supported");
    return parse_string();
  }
  bool parse_bool() {
    skip_space();
    for (const bool value : {true, false}) {
      const std::string_view word = value ? "True" : "False";
      if (text_.substr(pos_).starts_with(word)) {
        pos_ += word.size();
        return value;
      }
    }
    fail_expected("True or False");
  }
  Shape parse_shape() {
    expect('(');
    Shape shape;
    bool trailing_comma = false;
    while (!consume(')')) {
      shape.push_back(parse_dim());
      trailing_comma = consume(',');
      if (!trailing_comma) {
        expect(')');
        break;
      }
    }
    // Python reads "(3)" as the int 3, not a tuple, and numpy rejects it.
    if (shape.size() == 1 && !trailing_comma) fail("shape (" + std::to_string(shape[0]) + ") is not a tuple");
    return shape;
  }
  int64_t parse_dim() {
    skip_space();
    const size_t start = pos_;
    int64_t value = 0;
    for (; pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9'; ++pos_) {
      const int digit = text_[pos_] - '0';
      if (value > (std::numeric_limits<int64_t>::max() - digit) / 10) fail("dimension too large");
      value = value * 10 + digit;
    }
    if (pos_ == start) fail_expected("a non-negative dimension");
    if (at('L')) ++pos_;  // numpy under Python 2 wrote dims as longs: "(3L, 4L)"
    return value;
  }

  std::string_view text_;
  size_t pos_ = 0;
  const std::string& source_;
};

// Bytes of data the header promises; nullopt when that does not fit in 64 bits.
std::optional<uint64_t> data_size(const NpyHeader& header) {
  if (std::find(header.shape.begin(), header.shape.end(), 0) != header.shape.end()) return 0;
  uint64_t bytes = dtype_size(header.dtype);
  for (int64_t dim : header.shape) {
    const auto factor = static_cast<uint64_t>(dim);
    if (bytes > std::numeric_limits<uint64_t>::max() / factor) return std::nullopt;
    bytes *= factor;
  }
  return bytes;
}

// Decodes an npy image of `size` bytes that `read` yields in order (a file, a buffer, or an
// npz member being inflated), reading the data straight into the tensor.
Tensor decode_npy(const zip::ByteSource& read, uint64_t size, const std::string& source) {
  std::array<std::byte, kPrefixSizeV2> prefix{};
  if (size < kPrefixSizeV1) throw_bad_input(source, "not an npy file: only " + std::to_string(size) + " bytes");
  read(std::span(prefix).first(kPrefixSizeV1));
  if (std::memcmp(prefix.data(), kMagic.data(), kMagic.size()) != 0) {
    throw_bad_input(source, "not an npy file (bad magic)");
  }
  const auto major = std::to_integer<unsigned>(prefix[kMagic.size()]);
  const auto minor = std::to_integer<unsigned>(prefix[kMagic.size() + 1]);
  if (major < 1 || major > 3 || minor != 0) {
    throw_unsupported(source, "npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                                  " is not supported (1.0, 2.0 and 3.0 are)");
  }
  size_t prefix_size = kPrefixSizeV1;
  uint64_t header_size = 0;
  if (major == 1) {
    uint16_t length;
    std::memcpy(&length, prefix.data() + kMagic.size() + 2, sizeof(length));
    header_size = length;
  } else {
    prefix_size = kPrefixSizeV2;
    if (size < prefix_size) throw_bad_input(source, "truncated npy header");
    read(std::span(prefix).subspan(kPrefixSizeV1));
    uint32_t length;
    std::memcpy(&length, prefix.data() + kMagic.size() + 2, sizeof(length));
    header_size = length;
  }
  if (header_size > size - prefix_size) {
    throw_bad_input(source, "truncated npy header (" + std::to_string(header_size) + " bytes declared, " +
                                std::to_string(size - prefix_size) + " present)");
  }
  std::string text(header_size, '\0');
  read(std::as_writable_bytes(std::span(text)));
  NpyHeader header = HeaderParser(text, source).parse();

  const uint64_t present = size - prefix_size - header_size;
  const std::optional<uint64_t> expected = data_size(header);
  if (expected != present) {
    throw_bad_input(source, "data size mismatch: header says " + shape_to_string(header.shape) + " " +
                                dtype_name(header.dtype) + " (" +
                                (expected ? std::to_string(*expected) + " bytes" : "over 2^64 bytes") +
                                "), file has " + std::to_string(present) + " bytes of data");
  }
  if (present > kMaxArrayBytes) {
    throw_unsupported(source, "array of " + std::to_string(present >> 20) + " MiB is over the " +
                                  std::to_string(kMaxArrayBytes >> 30) + " GiB limit of one array: split the samples into files");
  }
  Tensor tensor(header.dtype, std::move(header.shape));
  read(std::span(tensor.data(), tensor.byte_size()));
  return tensor;
}

// Python's repr of a shape tuple: "()", "(3,)", "(2, 3)".
std::string python_tuple(const Shape& shape) {
  std::string text = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    text += (i > 0 ? ", " : "") + std::to_string(shape[i]);
  }
  return text + (shape.size() == 1 ? ",)" : ")");
}

// Magic, version, length and the padded header dict: everything before the data.
std::vector<std::byte> encode_npy_header(const Tensor& tensor) {
  if (*dtype_traits(tensor.dtype()).npy_descr == '\0') {
    throw_unsupported("", std::string("numpy has no ") + dtype_name(tensor.dtype()) + " type to save a tensor in");
  }
  const std::string dict = std::string("{'descr': '") + dtype_traits(tensor.dtype()).npy_descr +
                           "', 'fortran_order': False, 'shape': " + python_tuple(tensor.shape()) + ", }";
  // Spaces and a final '\n' pad the header so the data start 64-byte aligned.
  const auto padded_header_size = [&](size_t prefix_size) {
    const size_t unpadded = prefix_size + dict.size() + 1;
    return (unpadded + kHeaderAlignment - 1) / kHeaderAlignment * kHeaderAlignment - prefix_size;
  };
  const bool version1 = padded_header_size(kPrefixSizeV1) <= std::numeric_limits<uint16_t>::max();
  const size_t prefix_size = version1 ? kPrefixSizeV1 : kPrefixSizeV2;
  const size_t header_size = padded_header_size(prefix_size);

  std::vector<std::byte> bytes(prefix_size + header_size, std::byte{' '});
  std::memcpy(bytes.data(), kMagic.data(), kMagic.size());
  bytes[kMagic.size()] = std::byte{static_cast<unsigned char>(version1 ? 1 : 2)};
  bytes[kMagic.size() + 1] = std::byte{0};
  if (version1) {
    const auto length = static_cast<uint16_t>(header_size);
    std::memcpy(bytes.data() + kMagic.size() + 2, &length, sizeof(length));
  } else {
    const auto length = static_cast<uint32_t>(header_size);
    std::memcpy(bytes.data() + kMagic.size() + 2, &length, sizeof(length));
  }
  std::memcpy(bytes.data() + prefix_size, dict.data(), dict.size());
  bytes.back() = std::byte{'\n'};
  return bytes;
}

std::span<const std::byte> tensor_bytes(const Tensor& tensor) { return {tensor.data(), tensor.byte_size()}; }

void encode_npy(const Tensor& tensor, const zip::ByteSink& sink) {
  sink(encode_npy_header(tensor));
  sink(tensor_bytes(tensor));
}

// `destination` names the output in errors.
void encode_npz(const NamedTensors& members, NpzOptions options, const std::string& destination,
                const zip::ByteSink& sink) {
  std::vector<std::vector<std::byte>> headers;
  headers.reserve(members.size());  // the member pieces below point into these
  std::vector<zip::MemberContent> contents;
  std::unordered_set<std::string_view> keys;
  for (const auto& [key, tensor] : members) {
    if (key.empty()) throw_bad_input(destination, "npz member key is empty");
    if (!keys.insert(key).second) throw_bad_input(destination, "npz member key '" + key + "' given twice");
    std::string name = key + std::string(kNpySuffix);
    if (name.size() > kMaxZipNameSize) throw_bad_input(destination, "npz member key '" + key.substr(0, 40) + "...' is too long");
    headers.push_back(encode_npy_header(tensor));
    contents.push_back({std::move(name), {headers.back(), tensor_bytes(tensor)}});
  }
  const zip::Method method = options.compress ? zip::Method::kDeflated : zip::Method::kStored;
  zip::write_archive(contents, {.method = method}, sink);
}

class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }
  // Closes now; close() can report a deferred write error, so writers must check it.
  bool close() { return ::close(std::exchange(fd_, -1)) == 0; }

 private:
  int fd_;
};

std::string errno_text() { return std::strerror(errno); }

// Read-only map of a whole file, so decoding copies each byte once, straight into its tensor.
class MappedFile {
 public:
  explicit MappedFile(const std::string& path) {
    FileDescriptor file(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (file.get() < 0) throw_io(path, "cannot open: " + errno_text());
    struct stat info {};
    if (::fstat(file.get(), &info) != 0) throw_io(path, "cannot stat: " + errno_text());
    if (!S_ISREG(info.st_mode)) throw_io(path, "not a regular file");
    size_ = static_cast<size_t>(info.st_size);
    if (size_ == 0) return;  // mmap rejects empty ranges
    void* data = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, file.get(), 0);
    if (data == MAP_FAILED) throw_io(path, "cannot map: " + errno_text());
    data_ = static_cast<const std::byte*>(data);
  }
  ~MappedFile() {
    if (data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const std::byte> bytes() const { return {data_, size_}; }

 private:
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
};

void write_all(int fd, std::span<const std::byte> bytes, const std::string& path) {
  while (!bytes.empty()) {
    const ssize_t written = ::write(fd, bytes.data(), bytes.size());
    if (written < 0 && errno == EINTR) continue;
    if (written < 0) throw_io(path, "write failed: " + errno_text());
    bytes = bytes.subspan(static_cast<size_t>(written));
  }
}

// Runs `produce` into "PATH.tmp-<pid>", syncs it and renames it over `path`; on any failure
// removes the temporary file and leaves `path` as it was.
void write_atomically(const std::string& path, const std::function<void(const zip::ByteSink&)>& produce) {
  const std::string temp = path + ".tmp-" + std::to_string(::getpid());
  try {
    FileDescriptor file(::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666));
    if (file.get() < 0) throw_io(path, "cannot create " + temp + ": " + errno_text());
    produce([&](std::span<const std::byte> bytes) { write_all(file.get(), bytes, path); });
    if (::fsync(file.get()) != 0) throw_io(path, "cannot sync " + temp + ": " + errno_text());
    if (!file.close()) throw_io(path, "cannot close " + temp + ": " + errno_text());
    std::error_code error;
    std::filesystem::rename(temp, path, error);
    if (error) throw_io(path, "cannot rename " + temp + " to it: " + error.message());
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove(temp, ignored);
    throw;
  }
}

zip::ByteSink append_to(std::vector<std::byte>& out) {
  return [&out](std::span<const std::byte> bytes) { out.insert(out.end(), bytes.begin(), bytes.end()); };
}

}  // namespace

Tensor npy_from_bytes(std::span<const std::byte> bytes, const std::string& source) {
  size_t offset = 0;
  const zip::ByteSource read = [&](std::span<std::byte> out) {
    assert(out.size() <= bytes.size() - offset && "decode_npy checks sizes before reading");
    std::copy_n(bytes.begin() + static_cast<ptrdiff_t>(offset), out.size(), out.begin());
    offset += out.size();
  };
  return decode_npy(read, bytes.size(), source);
}

std::vector<std::byte> npy_to_bytes(const Tensor& tensor) {
  std::vector<std::byte> bytes;
  encode_npy(tensor, append_to(bytes));
  return bytes;
}

NamedTensors npz_from_bytes(std::span<const std::byte> archive, const std::string& source) {
  NamedTensors members;
  std::unordered_set<std::string> keys;
  for (const zip::Entry& entry : zip::read_entries(archive, source)) {
    if (!entry.name.ends_with(kNpySuffix)) throw_bad_input(source, "member '" + entry.name + "' is not an .npy file");
    std::string key = entry.name.substr(0, entry.name.size() - kNpySuffix.size());
    if (!keys.insert(key).second) throw_bad_input(source, "member '" + entry.name + "' appears twice");
    Tensor tensor;
    zip::read_member(archive, entry, source, [&](const zip::ByteSource& read, uint64_t size) {
      tensor = decode_npy(read, size, source);
    });
    members.emplace_back(std::move(key), std::move(tensor));
  }
  return members;
}

std::vector<std::byte> npz_to_bytes(const NamedTensors& members, NpzOptions options) {
  std::vector<std::byte> bytes;
  encode_npz(members, options, "", append_to(bytes));
  return bytes;
}

Tensor read_npy(const std::string& path) {
  const MappedFile file(path);
  return npy_from_bytes(file.bytes(), path);
}

void write_npy(const std::string& path, const Tensor& tensor) {
  write_atomically(path, [&](const zip::ByteSink& sink) { encode_npy(tensor, sink); });
}

NamedTensors read_npz(const std::string& path) {
  const MappedFile file(path);
  return npz_from_bytes(file.bytes(), path);
}

void write_npz(const std::string& path, const NamedTensors& members, NpzOptions options) {
  write_atomically(path, [&](const zip::ByteSink& sink) { encode_npz(members, options, path, sink); });
}

}  // namespace mixprec
