#include "mixprec/model_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <vector>

#include <google/protobuf/io/zero_copy_stream_impl.h>

#include "mixprec/error.h"

namespace mixprec {
namespace fs = std::filesystem;
namespace {

// Visits every TensorProto stored in the model: initializers and tensor-valued attributes,
// recursively through subgraphs (If/Loop/Scan bodies).
void for_each_tensor(onnx::GraphProto& graph, const std::function<void(onnx::TensorProto&)>& visit) {
  for (auto& init : *graph.mutable_initializer()) visit(init);
  for (auto& node : *graph.mutable_node()) {
    for (auto& attr : *node.mutable_attribute()) {
      if (attr.has_t()) visit(*attr.mutable_t());
      for (auto& t : *attr.mutable_tensors()) visit(t);
      if (attr.has_g()) for_each_tensor(*attr.mutable_g(), visit);
      for (auto& g : *attr.mutable_graphs()) for_each_tensor(g, visit);
    }
  }
}

std::string external_field(const onnx::TensorProto& tensor, const std::string& key) {
  for (const auto& entry : tensor.external_data()) {
    if (entry.key() == key) return entry.value();
  }
  return {};
}

uint64_t parse_u64(const std::string& text, const std::string& file, const std::string& what) {
  if (text.empty()) return 0;
  try {
    size_t used = 0;
    unsigned long long v = std::stoull(text, &used);
    if (used != text.size()) throw std::invalid_argument(text);
    return v;
  } catch (const std::exception&) {
    throw_bad_input(file, "external data " + what + " '" + text + "' is not a number");
  }
}

// A location must stay inside the model's folder (as ONNX Runtime requires).
fs::path external_path(const fs::path& model_dir, const std::string& location, const std::string& model_path,
                       const std::string& tensor_name) {
  fs::path rel(location);
  if (location.empty() || rel.is_absolute()) {
    throw_bad_input(model_path, "tensor '" + tensor_name + "' has external data location '" + location +
                                    "' that is empty or absolute");
  }
  for (const auto& part : rel) {
    if (part == "..") {
      throw_bad_input(model_path, "tensor '" + tensor_name + "' has external data location '" + location +
                                      "' outside the model folder");
    }
  }
  return model_dir / rel;
}

void load_external_tensors(onnx::ModelProto& model, const std::string& path) {
  const fs::path model_dir = fs::path(path).parent_path();
  std::map<fs::path, std::ifstream> open_files;
  for_each_tensor(*model.mutable_graph(), [&](onnx::TensorProto& tensor) {
    if (tensor.data_location() != onnx::TensorProto::EXTERNAL) return;
    const fs::path data_path = external_path(model_dir, external_field(tensor, "location"), path, tensor.name());
    const uint64_t offset = parse_u64(external_field(tensor, "offset"), path, "offset");
    const std::string length_text = external_field(tensor, "length");
    std::error_code ec;
    const uint64_t file_size = fs::file_size(data_path, ec);
    if (ec) throw_bad_input(path, "tensor '" + tensor.name() + "': cannot read external data file " + data_path.string());
    const uint64_t length = length_text.empty() ? file_size - std::min(offset, file_size)
                                                : parse_u64(length_text, path, "length");
    if (offset > file_size || length > file_size - offset) {
      throw_bad_input(path, "tensor '" + tensor.name() + "': external data " + data_path.string() + " is " +
                                std::to_string(file_size) + " bytes, tensor needs bytes " + std::to_string(offset) +
                                ".." + std::to_string(offset + length));
    }
    auto [it, inserted] = open_files.try_emplace(data_path);
    if (inserted) it->second.open(data_path, std::ios::binary);
    std::string bytes(length, '\0');
    it->second.seekg(static_cast<std::streamoff>(offset));
    it->second.read(bytes.data(), static_cast<std::streamsize>(length));
    if (!it->second) throw_io(data_path.string(), "read failed for tensor '" + tensor.name() + "'");
    tensor.set_raw_data(std::move(bytes));
    tensor.clear_external_data();
    tensor.clear_data_location();
  });
}

std::string temp_name_for(const fs::path& path) {
  return path.string() + ".tmp-" + std::to_string(::getpid());
}

// Moves tensors of at least `threshold` bytes into one data blob; returns the blob.
std::string externalize(onnx::ModelProto& model, uint64_t threshold, const std::string& location) {
  constexpr uint64_t kAlign = 64;  // lets runtimes mmap tensors with aligned access
  std::string blob;
  for_each_tensor(*model.mutable_graph(), [&](onnx::TensorProto& tensor) {
    if (!tensor.has_raw_data() || tensor.raw_data().size() < threshold) return;
    const uint64_t offset = (blob.size() + kAlign - 1) / kAlign * kAlign;
    blob.resize(offset, '\0');
    blob += tensor.raw_data();
    const uint64_t length = tensor.raw_data().size();
    tensor.clear_raw_data();
    tensor.set_data_location(onnx::TensorProto::EXTERNAL);
    auto add = [&](const std::string& key, const std::string& value) {
      auto* entry = tensor.add_external_data();
      entry->set_key(key);
      entry->set_value(value);
    };
    add("location", location);
    add("offset", std::to_string(offset));
    add("length", std::to_string(length));
  });
  return blob;
}

}  // namespace

void write_file_atomically(const std::string& path, const std::string& bytes) {
  const std::string tmp = temp_name_for(path);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw_io(path, std::string("cannot create file: ") + std::strerror(errno));
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) {
      out.close();
      fs::remove(tmp);
      throw_io(path, "write failed (disk full?)");
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp);
    throw_io(path, "cannot rename temporary file into place: " + ec.message());
  }
}

std::string read_file(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_io(path, "cannot open the " + what + ": " + std::strerror(errno));
  std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (in.bad()) throw_io(path, "read failed");
  return text;
}

onnx::ModelProto load_model(const std::string& path, const LoadOptions& options) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw_io(path, "no such file");
  if (fs::is_directory(path, ec)) throw_io(path, "is a directory, expected an .onnx file");
  const uint64_t size = fs::file_size(path, ec);
  if (ec) throw_io(path, "cannot stat: " + ec.message());
  if (size == 0) throw_bad_input(path, "empty file, not an ONNX model");
  if (size > kProtobufLimitBytes) {
    throw_bad_input(path, "model file is " + std::to_string(size >> 20) +
                              " MiB; protobuf cannot parse over 2 GB: save the model with external data");
  }
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw_io(path, std::string("cannot open: ") + std::strerror(errno));
  onnx::ModelProto model;
  bool parsed = false;
  {
    google::protobuf::io::FileInputStream stream(fd);
    parsed = model.ParseFromZeroCopyStream(&stream);
  }
  ::close(fd);
  if (!parsed) throw_bad_input(path, "not an ONNX model (protobuf parse failed: truncated or corrupt file)");
  if (!model.has_graph() || model.ir_version() <= 0) {
    throw_bad_input(path, "not an ONNX model (no graph or no IR version)");
  }
  if (options.load_external_data) load_external_tensors(model, path);
  return model;
}

std::string serialize_model(const onnx::ModelProto& model, const std::string& label) {
  const uint64_t size = model.ByteSizeLong();
  if (size > kProtobufLimitBytes) {
    throw_bad_input(label, "model is " + std::to_string(size >> 20) +
                               " MiB, over protobuf's 2 GB limit: it needs external data");
  }
  std::string bytes;
  if (!model.SerializeToString(&bytes)) throw Error(ErrorKind::kInternal, label, "model serialization failed");
  return bytes;
}

void save_model(const onnx::ModelProto& model, const std::string& path, const SaveOptions& options) {
  const bool over_limit = model.ByteSizeLong() > kProtobufLimitBytes;
  const bool external = options.external_data == ExternalData::kAlways ||
                        (options.external_data == ExternalData::kAuto && over_limit);
  if (!external) {
    write_file_atomically(path, serialize_model(model, path));
    return;
  }
  const std::string location =
      options.external_location.empty() ? fs::path(path).filename().string() + ".data" : options.external_location;
  onnx::ModelProto copy = model;
  const std::string blob = externalize(copy, options.external_threshold_bytes, location);
  const std::string model_bytes = serialize_model(copy, path);  // checks the remainder fits
  write_file_atomically((fs::path(path).parent_path() / location).string(), blob);
  write_file_atomically(path, model_bytes);
}

}  // namespace mixprec
