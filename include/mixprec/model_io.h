// Model I/O: load and save ONNX ModelProto with external data, atomically.
//
// Loading reads every external-data tensor into memory (raw_data), so the returned model is
// self-contained and can be rewritten freely; the files on disk are never touched. Saving
// writes to a temporary name in the destination folder and renames when complete, so a
// failure never leaves a half-written model (or data file) behind, and never modifies the
// input model even when saving over a different path.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include <onnx/onnx_pb.h>

namespace mixprec {

// Protobuf cannot serialize or parse a message of 2 GiB or more.
inline constexpr uint64_t kProtobufLimitBytes = (uint64_t{1} << 31) - 1;

struct LoadOptions {
  // false keeps external-data references as they are (metadata-only analysis of huge models).
  bool load_external_data = true;
};

// Throws mixprec::Error: kIo when the file cannot be read, kBadInput when it is not an ONNX
// model, is over 2 GB without external data, or references missing/short external data.
onnx::ModelProto load_model(const std::string& path, const LoadOptions& options = {});
// A serialized self-contained model in memory, with load_model's checks (external data stay
// as references); `label` names it in errors.
onnx::ModelProto model_from_bytes(std::string_view bytes, const std::string& label);

enum class ExternalData {
  kAuto,    // external only when the serialized model would exceed the protobuf limit
  kAlways,  // every tensor of at least `external_threshold_bytes` goes external
  kNever,   // inline; a model over the limit is an error
};

struct SaveOptions {
  ExternalData external_data = ExternalData::kAuto;
  uint64_t external_threshold_bytes = 1024;
  // Data file name beside the model; empty means "<model file name>.data".
  std::string external_location;
  // With external data: applied to the graph written, after its large tensors became
  // references (the runtime adds outputs there without copying the weights).
  std::function<void(onnx::ModelProto&)> edit_graph;
};

// Writes `model` to `path` atomically (the in-memory model is not changed). With external
// data, tensors are appended to one data file (64-byte aligned offsets) written atomically
// before the model file, straight from the model's buffers: saving a 2 GB model costs its
// graph's structure in memory, not another 2 GB.
void save_model(const onnx::ModelProto& model, const std::string& path, const SaveOptions& options = {});

// Serialized bytes of a self-contained model; kBadInput when over the protobuf limit.
std::string serialize_model(const onnx::ModelProto& model, const std::string& label);

// Writes `bytes` to `path` through a temporary file and a rename.
void write_file_atomically(const std::string& path, const std::string& bytes);

// The whole file; kIo naming the file and `what` it was expected to be when it cannot be read.
std::string read_file(const std::string& path, const std::string& what);

}  // namespace mixprec
