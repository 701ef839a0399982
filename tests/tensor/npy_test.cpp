#include "mixprec/npy.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "mixprec/error.h"
#include "mixprec/random_data.h"
#include "tensor/zip.h"

namespace mixprec {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<std::byte>;

Bytes bytes_of(std::string_view text) {
  const auto view = std::as_bytes(std::span(text));
  return {view.begin(), view.end()};
}

// Appends little-endian fields, as the npy and ZIP formats store them.
class Builder {
 public:
  template <typename T>
    requires std::is_integral_v<T>
  Builder& le(T value) {
    for (size_t i = 0; i < sizeof(T); ++i) bytes_.push_back(static_cast<std::byte>(static_cast<uint64_t>(value) >> (8 * i)));
    return *this;
  }
  Builder& raw(std::span<const std::byte> bytes) {
    bytes_.insert(bytes_.end(), bytes.begin(), bytes.end());
    return *this;
  }
  Builder& raw(std::string_view text) { return raw(std::as_bytes(std::span(text))); }
  size_t size() const { return bytes_.size(); }
  const Bytes& bytes() const { return bytes_; }

 private:
  Bytes bytes_;
};

// An npy image: magic, version, header length (2 bytes in 1.0, 4 in 2.0/3.0), header, data.
Bytes npy_image(uint8_t major, std::string_view header, const Bytes& data = {}) {
  Builder image;
  image.raw(std::string_view("\x93NUMPY", 6)).le(major).le(uint8_t{0});
  if (major == 1) {
    image.le(static_cast<uint16_t>(header.size()));
  } else {
    image.le(static_cast<uint32_t>(header.size()));
  }
  return image.raw(header).raw(data).bytes();
}

// Runs `f` and checks it throws mixprec::Error of `kind` whose what() contains each fragment.
template <typename F>
void expect_error(F&& f, ErrorKind kind, std::initializer_list<std::string_view> fragments) {
  try {
    f();
    ADD_FAILURE() << "no error thrown";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), kind) << error.what();
    for (std::string_view fragment : fragments) {
      EXPECT_NE(std::string_view(error.what()).find(fragment), std::string_view::npos)
          << "'" << error.what() << "' lacks '" << fragment << "'";
    }
  }
}

// Offset of the first occurrence of a 4-byte ZIP signature.
size_t find_signature(const Bytes& image, uint32_t signature) {
  for (size_t offset = 0; offset + 4 <= image.size(); ++offset) {
    uint32_t value;
    std::memcpy(&value, image.data() + offset, 4);
    if (value == signature) return offset;
  }
  ADD_FAILURE() << "signature not found";
  return 0;
}

// Bitwise CRC-32 (the ZIP polynomial), independent of the zlib the library uses.
uint32_t reference_crc32(std::span<const std::byte> bytes) {
  uint32_t crc = 0xFFFFFFFF;
  for (std::byte byte : bytes) {
    crc ^= std::to_integer<uint32_t>(byte);
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

const std::vector<Shape> kShapes = {{}, {0}, {5}, {2, 0, 3}, {2, 3, 4}};

NamedTensors sample_members() {
  return {
      {"x", random_tensor(DType::kFloat32, {2, 3}, 1)},
      {"input.ids", random_tensor(DType::kInt64, {4}, 2)},
      {"mask", random_tensor(DType::kBool, {}, 3)},
      {"empty", Tensor(DType::kFloat16, {0, 2})},
      {"scope/bf16", random_tensor(DType::kBFloat16, {3}, 4)},
      {"zeros", Tensor(DType::kFloat32, {1000})},
  };
}

// Gives each test an empty directory under the system temp folder and removes it afterwards.
class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           (std::string("mixprec_") + info->test_suite_name() + "_" + info->name() + "_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::vector<std::string> listing() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir_)) names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }
  void write_raw(const std::string& file, const Bytes& bytes) const {
    std::ofstream out(path(file), std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    ASSERT_TRUE(out.good());
  }

  fs::path dir_;
};

class NpyFiles : public TempDirTest {};
class NpzFiles : public TempDirTest {};

TEST(NpyBytes, RoundTripsEveryDTypeAndShape) {
  for (const DTypeTraits& traits : all_dtype_traits()) {
    if (*traits.npy_descr == '\0') {  // fp8 and int4 have no numpy dtype: saving one is refused
      try {
        npy_to_bytes(Tensor(traits.dtype, {2}));
        ADD_FAILURE() << traits.name << " saved";
      } catch (const Error& error) {
        EXPECT_EQ(error.kind(), ErrorKind::kUnsupported);
        EXPECT_NE(error.message().find(std::string("numpy has no ") + traits.name), std::string::npos) << error.what();
      }
      continue;
    }
    for (const Shape& shape : kShapes) {
      const Tensor tensor = random_tensor(traits.dtype, shape, 7);
      EXPECT_EQ(npy_from_bytes(npy_to_bytes(tensor), "memory"), tensor)
          << traits.name << " " << shape_to_string(shape);
    }
  }
}

TEST(NpyBytes, WritesNumpysLayout) {
  const Tensor tensor = Tensor::from_floats({2, 3}, std::vector<float>{0, 1, 2, 3, 4, 5});
  const Bytes image = npy_to_bytes(tensor);
  // 10 prefix bytes + 60-byte dict + '\n' = 71, padded with spaces to 128; header length 118.
  const std::string_view dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  ASSERT_EQ(image.size(), 128u + 24u);
  EXPECT_EQ(std::memcmp(image.data(), "\x93NUMPY\x01\x00\x76\x00", 10), 0);
  const std::string text(reinterpret_cast<const char*>(image.data()) + 10, 118);
  EXPECT_EQ(text, std::string(dict) + std::string(118 - dict.size() - 1, ' ') + "\n");
  EXPECT_EQ(std::memcmp(image.data() + 128, tensor.data(), 24), 0);

  const auto header_of = [](const Tensor& t) {
    const Bytes bytes = npy_to_bytes(t);
    uint16_t length;
    std::memcpy(&length, bytes.data() + 8, 2);
    EXPECT_EQ((10 + length) % 64, 0);
    return std::string(reinterpret_cast<const char*>(bytes.data()) + 10, length);
  };
  EXPECT_EQ(header_of(Tensor(DType::kBFloat16, {5})).find("{'descr': '<V2', 'fortran_order': False, 'shape': (5,), }"), 0u);
  EXPECT_EQ(header_of(Tensor(DType::kBool, {})).find("{'descr': '|b1', 'fortran_order': False, 'shape': (), }"), 0u);
}

TEST(NpyBytes, WritesVersion2WhenTheHeaderOutgrowsVersion1) {
  // Each dim of 1 prints as "1, ": 22000 of them make a dict longer than 65535 bytes.
  const Tensor tensor(DType::kUInt8, Shape(22000, 1));
  const Bytes image = npy_to_bytes(tensor);
  EXPECT_EQ(image[6], std::byte{2});
  uint32_t length;
  std::memcpy(&length, image.data() + 8, 4);
  EXPECT_GT(length, 65535u);
  EXPECT_EQ((12 + length) % 64, 0u);
  EXPECT_EQ(npy_from_bytes(image, "long.npy"), tensor);
}

TEST(NpyBytes, ParsesHandBuiltHeaders) {
  struct Case {
    uint8_t major;
    std::string_view header;
    Bytes data;
    DType dtype;
    Shape shape;
  };
  const Bytes int16_data = {std::byte{1}, std::byte{0}, std::byte{0xFE}, std::byte{0xFF}, std::byte{0x2C}, std::byte{1}};
  const std::vector<Case> cases = {
      // Keys in another order, no trailing comma, no padding.
      {1, "{'shape': (3,), 'fortran_order': False, 'descr': '<i2'}\n", int16_data, DType::kInt16, {3}},
      {2, "{\"descr\": \"|u1\", \"fortran_order\": False, \"shape\": (2, 3)}", Bytes(6), DType::kUInt8, {2, 3}},
      {3, "{'descr':'bfloat16','fortran_order':False,'shape':()}", Bytes(2), DType::kBFloat16, {}},
      {1, "{'descr': '<V2', 'fortran_order': False, 'shape': (1,), }", Bytes(2), DType::kBFloat16, {1}},
      {1, "{'descr': '|V2', 'fortran_order': False, 'shape': (0,), }", Bytes(), DType::kBFloat16, {0}},
      {1, "{'descr': '<f2', 'fortran_order': False, 'shape': (1L, 2L), }", Bytes(4), DType::kFloat16, {1, 2}},
      {1, "{'descr': '=i4', 'fortran_order': False, 'shape': (1,), }", Bytes(4), DType::kInt32, {1}},
  };
  for (const Case& c : cases) {
    const Tensor tensor = npy_from_bytes(npy_image(c.major, c.header, c.data), "hand.npy");
    EXPECT_EQ(tensor.dtype(), c.dtype) << c.header;
    EXPECT_EQ(tensor.shape(), c.shape) << c.header;
  }
  const Tensor int16 = npy_from_bytes(npy_image(1, cases[0].header, int16_data), "hand.npy");
  EXPECT_EQ(int16.to_floats(), (std::vector<float>{1, -2, 300}));
  // Byte order does not apply to single bytes, so '>' is as good as '|'.
  const Tensor int8 = npy_from_bytes(
      npy_image(1, "{'descr': '>i1', 'fortran_order': False, 'shape': (1,), }", {std::byte{0xFF}}), "hand.npy");
  EXPECT_EQ(int8.to_floats(), (std::vector<float>{-1}));
}

TEST(NpyBytes, RejectsMalformedAndUnsupportedImages) {
  const auto header = [](std::string_view descr, std::string_view fortran, std::string_view shape) {
    return "{'descr': '" + std::string(descr) + "', 'fortran_order': " + std::string(fortran) +
           ", 'shape': " + std::string(shape) + ", }";
  };
  struct Case {
    const char* label;
    Bytes image;
    ErrorKind kind;
    std::string_view fragment;
  };
  Bytes bad_magic = npy_image(1, header("<f4", "False", "()"), Bytes(4));
  bad_magic[5] = std::byte{'X'};
  Bytes long_header_length = npy_image(1, header("<f4", "False", "()"), Bytes(4));
  long_header_length[8] = std::byte{0xFF};
  const std::vector<Case> cases = {
      {"bad magic", bad_magic, ErrorKind::kBadInput, "bad magic"},
      {"short", bytes_of("\x93NUM"), ErrorKind::kBadInput, "not an npy file"},
      {"version", npy_image(4, header("<f4", "False", "()"), Bytes(4)), ErrorKind::kUnsupported, "version 4.0"},
      {"header length", long_header_length, ErrorKind::kBadInput, "truncated npy header"},
      {"missing key", npy_image(1, "{'descr': '<f4', 'shape': (1,)}", Bytes(4)), ErrorKind::kBadInput, "needs 'descr'"},
      {"unknown key", npy_image(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (), 'x': 1}"),
       ErrorKind::kBadInput, "unexpected or repeated key 'x'"},
      {"repeated key", npy_image(1, "{'descr': '<f4', 'descr': '<f4'}"), ErrorKind::kBadInput, "repeated key 'descr'"},
      {"negative dim", npy_image(1, header("<f4", "False", "(2, -3)")), ErrorKind::kBadInput, "non-negative dimension"},
      {"not a tuple", npy_image(1, header("<f4", "False", "(3)"), Bytes(12)), ErrorKind::kBadInput, "not a tuple"},
      {"bad bool", npy_image(1, header("<f4", "false", "()"), Bytes(4)), ErrorKind::kBadInput, "True or False"},
      {"trailing text", npy_image(1, header("<f4", "False", "()") + " x", Bytes(4)), ErrorKind::kBadInput,
       "after the dict"},
      {"unterminated", npy_image(1, "{'descr: '<f4"), ErrorKind::kBadInput, "bad npy header"},
      {"short data", npy_image(1, header("<f4", "False", "(2, 3)"), Bytes(23)), ErrorKind::kBadInput,
       "data size mismatch: header says 2x3 float32 (24 bytes), file has 23 bytes"},
      {"long data", npy_image(1, header("<f4", "False", "(2, 3)"), Bytes(25)), ErrorKind::kBadInput,
       "data size mismatch"},
      {"huge shape", npy_image(1, header("<f4", "False", "(4611686018427387904, 4611686018427387904)")),
       ErrorKind::kBadInput, "over 2^64 bytes"},
      {"big-endian", npy_image(1, header(">f4", "False", "()"), Bytes(4)), ErrorKind::kUnsupported, "big-endian"},
      {"fortran", npy_image(1, header("<f4", "True", "(2, 2)"), Bytes(16)), ErrorKind::kUnsupported, "Fortran"},
      {"float64", npy_image(1, header("<f8", "False", "()"), Bytes(8)), ErrorKind::kUnsupported, "'<f8'"},
      {"structured", npy_image(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': ()}", Bytes(4)),
       ErrorKind::kUnsupported, "structured"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.label);
    expect_error([&] { npy_from_bytes(c.image, "case.npy"); }, c.kind, {"case.npy: ", c.fragment});
  }
}

TEST(NpyBytes, RejectsEveryTruncation) {
  const Bytes image = npy_to_bytes(random_tensor(DType::kInt16, {2, 3}, 1));
  for (size_t size = 0; size < image.size(); ++size) {
    SCOPED_TRACE(size);
    expect_error([&] { npy_from_bytes(std::span(image).first(size), "cut.npy"); }, ErrorKind::kBadInput, {"cut.npy"});
  }
}

TEST_F(NpyFiles, RoundTripsEveryDTypeWithoutLeavingTemporaries) {
  std::vector<std::string> expected;
  for (const DTypeTraits& traits : all_dtype_traits()) {
    if (*traits.npy_descr == '\0') continue;
    const std::string name = std::string(traits.name) + ".npy";
    const Tensor tensor = random_tensor(traits.dtype, {3, 4}, 11);
    write_npy(path(name), tensor);
    EXPECT_EQ(read_npy(path(name)), tensor) << traits.name;
    expected.push_back(name);
  }
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(listing(), expected);
}

TEST_F(NpyFiles, OverwritesAnExistingFile) {
  write_npy(path("a.npy"), Tensor(DType::kInt8, {4}));
  const Tensor second = random_tensor(DType::kFloat32, {2}, 3);
  write_npy(path("a.npy"), second);
  EXPECT_EQ(read_npy(path("a.npy")), second);
  EXPECT_EQ(listing(), std::vector<std::string>{"a.npy"});
}

TEST_F(NpyFiles, ReportsTruncatedAndMissingFilesByName) {
  write_npy(path("cut.npy"), random_tensor(DType::kFloat32, {2, 3}, 1));
  fs::resize_file(path("cut.npy"), fs::file_size(path("cut.npy")) - 3);
  expect_error([&] { read_npy(path("cut.npy")); }, ErrorKind::kBadInput, {path("cut.npy") + ": data size mismatch"});

  write_raw("empty.npy", {});
  expect_error([&] { read_npy(path("empty.npy")); }, ErrorKind::kBadInput, {path("empty.npy"), "not an npy file"});
  expect_error([&] { read_npy(path("missing.npy")); }, ErrorKind::kIo, {path("missing.npy"), "cannot open"});
  expect_error([&] { read_npy(dir_.string()); }, ErrorKind::kIo, {"not a regular file"});
}

TEST_F(NpyFiles, FailedWriteLeavesNothingBehind) {
  const std::string target = path("no_such_dir/a.npy");
  expect_error([&] { write_npy(target, Tensor(DType::kInt8, {1})); }, ErrorKind::kIo, {target, "cannot create"});
  EXPECT_TRUE(listing().empty());

  // A bad npz key fails after the temporary file was created: it must be removed.
  const NamedTensors duplicate = {{"k", Tensor(DType::kInt8, {1})}, {"k", Tensor(DType::kInt8, {1})}};
  expect_error([&] { write_npz(path("d.npz"), duplicate); }, ErrorKind::kBadInput, {path("d.npz"), "'k' given twice"});
  EXPECT_TRUE(listing().empty());
}

TEST_F(NpzFiles, RoundTripsStoredAndDeflatedMembersInOrder) {
  const NamedTensors members = sample_members();
  write_npz(path("stored.npz"), members);
  write_npz(path("deflated.npz"), members, {.compress = true});
  EXPECT_EQ(read_npz(path("stored.npz")), members);
  EXPECT_EQ(read_npz(path("deflated.npz")), members);
  // The 4000 zero bytes of "zeros" deflate to almost nothing.
  EXPECT_LT(fs::file_size(path("deflated.npz")) + 3000, fs::file_size(path("stored.npz")));
  EXPECT_EQ(listing(), (std::vector<std::string>{"deflated.npz", "stored.npz"}));
}

TEST(NpzBytes, RoundTripsEmptyArchivesAndIsDeterministic) {
  EXPECT_TRUE(npz_from_bytes(npz_to_bytes({}), "empty.npz").empty());
  for (const bool compress : {false, true}) {
    const Bytes image = npz_to_bytes(sample_members(), {.compress = compress});
    EXPECT_EQ(npz_to_bytes(sample_members(), {.compress = compress}), image);
    EXPECT_EQ(npz_from_bytes(image, "sample.npz"), sample_members());
  }
}

TEST_F(NpzFiles, RejectsACorruptedCrcNamingTheFileAndMember) {
  Bytes image = npz_to_bytes({{"x", random_tensor(DType::kFloat32, {4}, 5)}});
  const size_t central = find_signature(image, 0x02014b50);
  image[central + 16] ^= std::byte{0x01};  // the CRC-32 field of the central directory record
  write_raw("bad_crc.npz", image);
  expect_error([&] { read_npz(path("bad_crc.npz")); }, ErrorKind::kBadInput,
               {path("bad_crc.npz") + ": member 'x.npy': CRC-32 mismatch"});
}

TEST(NpzBytes, RejectsCorruptedMemberData) {
  for (const bool compress : {false, true}) {
    SCOPED_TRACE(compress);
    Bytes image = npz_to_bytes({{"x", random_tensor(DType::kFloat32, {64}, 5)}}, {.compress = compress});
    const size_t central = find_signature(image, 0x02014b50);
    image[central - 8] ^= std::byte{0x10};  // a byte near the end of the member's data
    expect_error([&] { npz_from_bytes(image, "flip.npz"); }, ErrorKind::kBadInput, {"flip.npz: member 'x.npy': "});
  }
}

TEST(NpzBytes, RejectsEveryTruncation) {
  for (const bool compress : {false, true}) {
    const Bytes image = npz_to_bytes({{"a", random_tensor(DType::kInt8, {3}, 1)}, {"b", Tensor(DType::kBool, {2})}},
                                     {.compress = compress});
    for (size_t size = 0; size < image.size(); ++size) {
      SCOPED_TRACE(size);
      expect_error([&] { npz_from_bytes(std::span(image).first(size), "cut.npz"); }, ErrorKind::kBadInput,
                   {"cut.npz: "});
    }
  }
}

TEST(NpzBytes, RejectsUnknownCompressionMethods) {
  Bytes image = npz_to_bytes({{"x", Tensor(DType::kInt8, {2})}});
  const uint8_t bzip2 = 12;
  image[find_signature(image, 0x04034b50) + 8] = std::byte{bzip2};   // local header method
  image[find_signature(image, 0x02014b50) + 10] = std::byte{bzip2};  // central directory method
  expect_error([&] { npz_from_bytes(image, "m.npz"); }, ErrorKind::kBadInput, {"m.npz: ", "unknown compression method 12"});
}

TEST(NpzBytes, RejectsNonNpyMembersAndBadKeys) {
  const Bytes text = bytes_of("hello");
  Bytes archive;
  zip::write_archive({{"notes.txt", {text}}}, {}, [&](std::span<const std::byte> b) {
    archive.insert(archive.end(), b.begin(), b.end());
  });
  expect_error([&] { npz_from_bytes(archive, "n.npz"); }, ErrorKind::kBadInput, {"n.npz: ", "'notes.txt' is not an .npy file"});
  expect_error([] { npz_to_bytes({{"", Tensor(DType::kInt8, {1})}}); }, ErrorKind::kBadInput, {"key is empty"});
  expect_error([] { npz_from_bytes(bytes_of("PK, but not really"), "z.npz"); }, ErrorKind::kBadInput,
               {"z.npz: not a ZIP archive"});
}

TEST(NpzBytes, WritesAndReadsTheZip64Layout) {
  const NamedTensors members = sample_members();
  for (const zip::Method method : {zip::Method::kStored, zip::Method::kDeflated}) {
    std::vector<Bytes> images;
    images.reserve(members.size());  // the contents point into these
    std::vector<zip::MemberContent> contents;
    for (const auto& [key, tensor] : members) {
      images.push_back(npy_to_bytes(tensor));
      contents.push_back({key + ".npy", {images.back()}});
    }
    Bytes archive;
    zip::write_archive(contents, {.method = method, .force_zip64 = true}, [&](std::span<const std::byte> b) {
      archive.insert(archive.end(), b.begin(), b.end());
    });
    find_signature(archive, 0x06064b50);  // ZIP64 end of central directory record
    find_signature(archive, 0x07064b50);  // and its locator
    EXPECT_EQ(npz_from_bytes(archive, "zip64.npz"), members);
  }
}

// A ZIP64 archive assembled field by field from APPNOTE.TXT 4.3.7, 4.3.12, 4.3.14-16 and
// 4.5.3, so the reader is checked against the specification and not only against our writer.
TEST(NpzBytes, ReadsAHandBuiltZip64Archive) {
  const Tensor tensor = random_tensor(DType::kInt32, {2, 2}, 9);
  const Bytes npy = npy_to_bytes(tensor);
  const std::string_view name = "t.npy";
  const uint32_t crc = reference_crc32(npy);
  const auto size = static_cast<uint64_t>(npy.size());

  Builder zip;
  zip.le(uint32_t{0x04034b50}).le(uint16_t{45}).le(uint16_t{0}).le(uint16_t{0})  // version, flags, stored
      .le(uint16_t{0}).le(uint16_t{0x21}).le(crc).le(uint32_t{0xFFFFFFFF}).le(uint32_t{0xFFFFFFFF})
      .le(static_cast<uint16_t>(name.size())).le(uint16_t{20}).raw(name)
      .le(uint16_t{1}).le(uint16_t{16}).le(size).le(size)  // ZIP64 extra: uncompressed, compressed
      .raw(npy);
  const uint64_t directory_offset = zip.size();
  zip.le(uint32_t{0x02014b50}).le(uint16_t{45}).le(uint16_t{45}).le(uint16_t{0}).le(uint16_t{0})
      .le(uint16_t{0}).le(uint16_t{0x21}).le(crc).le(uint32_t{0xFFFFFFFF}).le(uint32_t{0xFFFFFFFF})
      .le(static_cast<uint16_t>(name.size())).le(uint16_t{4 + 4 + 24}).le(uint16_t{0})  // name, extra, comment
      .le(uint16_t{0}).le(uint16_t{0}).le(uint32_t{0}).le(uint32_t{0xFFFFFFFF})       // disk, attrs, offset
      .raw(name)
      .le(uint16_t{0x5455}).le(uint16_t{0})  // an unrelated empty extra block first
      .le(uint16_t{1}).le(uint16_t{24}).le(size).le(size).le(uint64_t{0});
  const uint64_t directory_size = zip.size() - directory_offset;
  const uint64_t record_offset = zip.size();
  zip.le(uint32_t{0x06064b50}).le(uint64_t{44}).le(uint16_t{45}).le(uint16_t{45}).le(uint32_t{0}).le(uint32_t{0})
      .le(uint64_t{1}).le(uint64_t{1}).le(directory_size).le(directory_offset);
  zip.le(uint32_t{0x07064b50}).le(uint32_t{0}).le(record_offset).le(uint32_t{1});
  zip.le(uint32_t{0x06054b50}).le(uint16_t{0}).le(uint16_t{0}).le(uint16_t{0xFFFF}).le(uint16_t{0xFFFF})
      .le(uint32_t{0xFFFFFFFF}).le(uint32_t{0xFFFFFFFF}).le(uint16_t{4}).raw("note");  // with a comment

  const NamedTensors read = npz_from_bytes(zip.bytes(), "hand.npz");
  ASSERT_EQ(read.size(), 1u);
  EXPECT_EQ(read[0].first, "t");
  EXPECT_EQ(read[0].second, tensor);
}

}  // namespace
}  // namespace mixprec
