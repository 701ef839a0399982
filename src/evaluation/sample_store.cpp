#include "evaluation/sample_store.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <utility>

#include "mixprec/error.h"

namespace mixprec {
namespace {
namespace fs = std::filesystem;

constexpr char kMagic[8] = {'M', 'X', 'E', 'V', 'A', 'L', '0', '1'};
constexpr uint32_t kMaxRank = 64;
constexpr uint32_t kMaxName = 1 << 16;

size_t bytes_of(const NamedTensors& tensors) {
  size_t bytes = 0;
  for (const auto& [name, tensor] : tensors) bytes += name.size() + tensor.byte_size() + 8 * tensor.shape().size();
  return bytes;
}

template <typename T>
void put(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof value);
}

void encode(std::string& out, const NamedTensors& tensors) {
  put(out, static_cast<uint32_t>(tensors.size()));
  for (const auto& [name, tensor] : tensors) {
    put(out, static_cast<uint32_t>(name.size()));
    out += name;
    put(out, dtype_to_onnx(tensor.dtype()));
    put(out, static_cast<uint32_t>(tensor.shape().size()));
    for (int64_t d : tensor.shape()) put(out, d);
    put(out, static_cast<uint64_t>(tensor.byte_size()));
    out.append(reinterpret_cast<const char*>(tensor.data()), tensor.byte_size());
  }
}

// Reads a record back from its bytes; every count and size is checked against what is left.
class Decoder {
 public:
  Decoder(const std::string& bytes, const std::string& path) : bytes_(bytes), path_(path) {}

  NamedTensors tensors() {
    const auto count = get<uint32_t>();
    NamedTensors out;
    for (uint32_t t = 0; t < count; ++t) {
      const auto name_size = get<uint32_t>();
      if (name_size > kMaxName) fail("a tensor name longer than " + std::to_string(kMaxName) + " bytes");
      std::string name(take(name_size), name_size);
      const DType dtype = dtype_from_onnx(get<int32_t>());
      const auto rank = get<uint32_t>();
      if (rank > kMaxRank) fail("tensor '" + name + "' of rank " + std::to_string(rank));
      Shape shape(rank);
      for (auto& d : shape) {
        d = get<int64_t>();
        if (d < 0) fail("tensor '" + name + "' with a negative dimension");
      }
      const auto size = get<uint64_t>();
      const auto expected = static_cast<uint64_t>(shape_numel(shape)) * dtype_size(dtype);
      if (size != expected) {
        fail("tensor '" + name + "' holds " + std::to_string(size) + " bytes, its shape " + shape_to_string(shape) +
             " needs " + std::to_string(expected));
      }
      const char* data = take(size);
      out.emplace_back(std::move(name),
                       Tensor(dtype, std::move(shape), {reinterpret_cast<const std::byte*>(data), size}));
    }
    return out;
  }

  void finish() const {
    if (at_ != bytes_.size()) fail(std::to_string(bytes_.size() - at_) + " bytes left over after a sample");
  }

 private:
  [[noreturn]] void fail(const std::string& problem) const {
    throw_io(path_, "evaluation spill file is corrupt: " + problem);
  }
  const char* take(uint64_t n) {
    if (n > bytes_.size() - at_) fail("a sample record ends early");
    const char* p = bytes_.data() + at_;
    at_ += n;
    return p;
  }
  template <typename T>
  T get() {
    T value;
    std::memcpy(&value, take(sizeof value), sizeof value);
    return value;
  }

  const std::string& bytes_;
  const std::string& path_;
  size_t at_ = 0;
};

std::string unique_name() {
  static std::atomic<unsigned> counter{0};
  return "mixprec-eval-cache-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + ".bin";
}

}  // namespace

struct SampleStore::File {
  std::FILE* handle = nullptr;
  ~File() {
    if (handle) std::fclose(handle);
  }
};

SampleStore::SampleStore(size_t budget_bytes, std::string spill_dir) : budget_(budget_bytes), dir_(std::move(spill_dir)) {}

SampleStore::~SampleStore() {
  file_.reset();
  if (!path_.empty()) {
    std::error_code ec;
    fs::remove(path_, ec);
  }
}

void SampleStore::open_spill_file() {
  const fs::path dir = dir_.empty() ? fs::temp_directory_path() : fs::path(dir_);
  std::error_code ec;
  fs::create_directories(dir, ec);
  path_ = (dir / unique_name()).string();
  file_ = std::make_unique<File>();
  file_->handle = std::fopen(path_.c_str(), "w+b");
  if (!file_->handle) throw_io(path_, std::string("cannot create the evaluation spill file: ") + std::strerror(errno));
  if (std::fwrite(kMagic, 1, sizeof kMagic, file_->handle) != sizeof kMagic) {
    throw_io(path_, "cannot write the evaluation spill file (disk full?)");
  }
}

void SampleStore::add(NamedTensors inputs, NamedTensors reference) {
  const size_t bytes = bytes_of(inputs) + bytes_of(reference);
  if (!spilling_ && held_bytes_ + bytes <= budget_) {
    held_bytes_ += bytes;
    held_.push_back({std::move(inputs), std::move(reference)});
    return;
  }
  spilling_ = true;
  if (!file_) open_spill_file();
  std::string record;
  record.reserve(bytes + 64);
  encode(record, inputs);
  encode(record, reference);
  if (::fseeko(file_->handle, 0, SEEK_END) != 0) throw_io(path_, "cannot seek in the evaluation spill file");
  const off_t offset = ::ftello(file_->handle);
  if (std::fwrite(record.data(), 1, record.size(), file_->handle) != record.size() || std::fflush(file_->handle) != 0) {
    throw_io(path_, "cannot write the evaluation spill file (disk full?)");
  }
  spilled_.push_back({static_cast<uint64_t>(offset), record.size()});
}

SampleStore::Sample SampleStore::read(const Record& record) const {
  std::string bytes(record.bytes, '\0');
  if (::fseeko(file_->handle, static_cast<off_t>(record.offset), SEEK_SET) != 0 ||
      std::fread(bytes.data(), 1, bytes.size(), file_->handle) != bytes.size()) {
    throw_io(path_, "evaluation spill file is corrupt: a sample record ends early (file truncated?)");
  }
  Decoder decoder(bytes, path_);
  Sample sample;
  sample.inputs = decoder.tensors();
  sample.reference = decoder.tensors();
  decoder.finish();
  return sample;
}

SampleStore::Sample SampleStore::sample(size_t index) const {
  if (index < held_.size()) return held_[index];
  return read(spilled_.at(index - held_.size()));
}

void SampleStore::for_each(const std::function<void(size_t, const NamedTensors&, const NamedTensors&)>& visit) const {
  for (size_t i = 0; i < held_.size(); ++i) visit(i, held_[i].inputs, held_[i].reference);
  for (size_t i = 0; i < spilled_.size(); ++i) {
    const Sample sample = read(spilled_[i]);
    visit(held_.size() + i, sample.inputs, sample.reference);
  }
}

}  // namespace mixprec
