#include "mixprec/model_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <string_view>
#include <utility>
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

void check_parsed(const onnx::ModelProto& model, bool parsed, const std::string& path) {
  if (!parsed) throw_bad_input(path, "not an ONNX model (protobuf parse failed: truncated or corrupt file)");
  if (!model.has_graph() || model.ir_version() <= 0) {
    throw_bad_input(path, "not an ONNX model (no graph or no IR version)");
  }
}

std::string temp_name_for(const fs::path& path) {
  return path.string() + ".tmp-" + std::to_string(::getpid());
}

constexpr uint64_t kDataAlignment = 64;  // lets runtimes mmap tensors with aligned access

// The bytes of an external data file: pieces at 64-byte aligned offsets, zeros between them.
// Pieces point into the model being saved, or into `owned` (bytes moved out of the copy).
struct DataLayout {
  std::vector<std::pair<uint64_t, std::string_view>> pieces;
  std::deque<std::string> owned;
  uint64_t size = 0;

  uint64_t append(std::string_view bytes) {
    const uint64_t offset = (size + kDataAlignment - 1) / kDataAlignment * kDataAlignment;
    pieces.emplace_back(offset, bytes);
    size = offset + bytes.size();
    return offset;
  }
};

void point_to_external(onnx::TensorProto& tensor, const std::string& location, uint64_t offset, uint64_t length) {
  tensor.set_data_location(onnx::TensorProto::EXTERNAL);
  auto add = [&](const std::string& key, const std::string& value) {
    auto* entry = tensor.add_external_data();
    entry->set_key(key);
    entry->set_value(value);
  };
  add("location", location);
  add("offset", std::to_string(offset));
  add("length", std::to_string(length));
}

// The fields a light copy copies one by one; a protobuf with more (a newer ONNX) gets a full
// copy instead, correct but without the memory saving.
constexpr int kModelFields = 11, kGraphFields = 9;

// A copy of `model` whose main-graph initializers of at least `threshold` bytes are external
// references to `location`, made without copying their bytes: `layout` points at them. The
// remaining large tensors (node attributes, subgraphs: small in practice) are moved into
// layout.owned. The copy costs the graph's structure, not its weights.
onnx::ModelProto without_large_data(const onnx::ModelProto& model, uint64_t threshold, const std::string& location,
                                    DataLayout& layout) {
  onnx::ModelProto light;
  const onnx::GraphProto& graph = model.graph();
  if (onnx::ModelProto::descriptor()->field_count() == kModelFields &&
      onnx::GraphProto::descriptor()->field_count() == kGraphFields) {
    // proto2: copy a field only when set, or an empty value would be written where none was.
    if (model.has_ir_version()) light.set_ir_version(model.ir_version());
    *light.mutable_opset_import() = model.opset_import();
    if (model.has_producer_name()) light.set_producer_name(model.producer_name());
    if (model.has_producer_version()) light.set_producer_version(model.producer_version());
    if (model.has_domain()) light.set_domain(model.domain());
    if (model.has_model_version()) light.set_model_version(model.model_version());
    if (model.has_doc_string()) light.set_doc_string(model.doc_string());
    *light.mutable_metadata_props() = model.metadata_props();
    *light.mutable_training_info() = model.training_info();
    *light.mutable_functions() = model.functions();
    onnx::GraphProto& out = *light.mutable_graph();
    *out.mutable_node() = graph.node();
    if (graph.has_name()) out.set_name(graph.name());
    *out.mutable_sparse_initializer() = graph.sparse_initializer();
    if (graph.has_doc_string()) out.set_doc_string(graph.doc_string());
    *out.mutable_input() = graph.input();
    *out.mutable_output() = graph.output();
    *out.mutable_value_info() = graph.value_info();
    *out.mutable_quantization_annotation() = graph.quantization_annotation();
    for (const onnx::TensorProto& init : graph.initializer()) {
      onnx::TensorProto& copy = *out.add_initializer();
      if (!init.has_raw_data() || init.raw_data().size() < threshold) {
        copy = init;
        continue;
      }
      *copy.mutable_dims() = init.dims();
      if (init.has_data_type()) copy.set_data_type(init.data_type());
      if (init.has_segment()) *copy.mutable_segment() = init.segment();
      if (init.has_name()) copy.set_name(init.name());
      if (init.has_doc_string()) copy.set_doc_string(init.doc_string());
      point_to_external(copy, location, layout.append(init.raw_data()), init.raw_data().size());
    }
  } else {
    light = model;
  }
  for_each_tensor(*light.mutable_graph(), [&](onnx::TensorProto& tensor) {
    if (!tensor.has_raw_data() || tensor.raw_data().size() < threshold) return;
    std::string& bytes = layout.owned.emplace_back(std::move(*tensor.mutable_raw_data()));
    tensor.clear_raw_data();
    point_to_external(tensor, location, layout.append(bytes), bytes.size());
  });
  return light;
}

// Writes `layout` to "PATH.tmp-<pid>" piece by piece and renames it over `path`.
void write_layout_atomically(const std::string& path, const DataLayout& layout) {
  const std::string tmp = temp_name_for(path);
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  if (!out) throw_io(path, std::string("cannot create file: ") + std::strerror(errno));
  const std::string zeros(kDataAlignment, '\0');
  uint64_t written = 0;
  for (const auto& [offset, bytes] : layout.pieces) {
    out.write(zeros.data(), static_cast<std::streamsize>(offset - written));
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    written = offset + bytes.size();
  }
  out.flush();
  if (!out) {
    out.close();
    fs::remove(tmp);
    throw_io(path, "write failed (disk full?)");
  }
  out.close();
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp);
    throw_io(path, "cannot rename temporary file into place: " + ec.message());
  }
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
  check_parsed(model, parsed, path);
  if (options.load_external_data) load_external_tensors(model, path);
  return model;
}

onnx::ModelProto model_from_bytes(std::string_view bytes, const std::string& label) {
  if (bytes.empty()) throw_bad_input(label, "empty file, not an ONNX model");
  if (bytes.size() > kProtobufLimitBytes) throw_bad_input(label, "over protobuf's 2 GB limit");
  onnx::ModelProto model;
  check_parsed(model, model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())), label);
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
  DataLayout layout;
  onnx::ModelProto light = without_large_data(model, options.external_threshold_bytes, location, layout);
  if (options.edit_graph) options.edit_graph(light);
  const std::string model_bytes = serialize_model(light, path);  // checks the remainder fits
  const std::string data_path = (fs::path(path).parent_path() / location).string();
  write_layout_atomically(data_path, layout);
  try {
    write_file_atomically(path, model_bytes);
  } catch (...) {
    std::error_code ignored;
    fs::remove(data_path, ignored);  // no data file without its model
    throw;
  }
}

}  // namespace mixprec
