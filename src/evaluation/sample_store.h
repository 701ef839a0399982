// The evaluation samples and their FP32 reference outputs, held in memory up to a budget and
// spilled to a file beyond it, so a workbench's memory does not grow with the number of
// evaluation samples.
//
// The first samples stay in memory while their bytes (inputs and references) fit the budget;
// every later one is appended to the spill file and read back, one sample at a time, by each
// pass. Reading gives back exactly the tensors that were added (same dtype, shape and bytes),
// so a pass over spilled samples computes what the same pass over held samples does.
//
// Spill file (ours, never read by another program): an 8-byte magic, then one record per
// spilled sample, its inputs then its references, each group as
//   u32 tensor count, then per tensor: u32 name length, name, i32 ONNX element type,
//   u32 rank, i64 dims[rank], u64 byte size, bytes
// (host byte order). The index (offset and size of each record) stays in memory; reading a
// record back checks it against the index and every tensor's byte size against its shape, and
// anything else is kIo naming the file. The file is removed when the store is destroyed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "mixprec/tensor.h"

namespace mixprec {

class SampleStore {
 public:
  // `budget_bytes`: bytes of samples held in memory (0: every sample is spilled). `spill_dir`:
  // where the spill file goes (created when needed); empty: the system's temp directory.
  SampleStore(size_t budget_bytes, std::string spill_dir);
  ~SampleStore();
  SampleStore(const SampleStore&) = delete;
  SampleStore& operator=(const SampleStore&) = delete;

  void add(NamedTensors inputs, NamedTensors reference);

  size_t size() const { return held_.size() + spilled_.size(); }
  size_t held() const { return held_.size(); }
  size_t spilled() const { return spilled_.size(); }
  size_t held_bytes() const { return held_bytes_; }
  const std::string& spill_path() const { return path_; }  // empty until a sample is spilled

  struct Sample {
    NamedTensors inputs;
    NamedTensors reference;
  };
  Sample sample(size_t index) const;
  NamedTensors inputs(size_t index) const { return sample(index).inputs; }

  // Calls `visit(index, inputs, reference)` for every sample in order, one sample in memory at
  // a time beyond the held ones.
  void for_each(const std::function<void(size_t, const NamedTensors&, const NamedTensors&)>& visit) const;

 private:
  struct Record {
    uint64_t offset = 0;
    uint64_t bytes = 0;
  };
  struct File;

  void open_spill_file();
  Sample read(const Record& record) const;

  size_t budget_;
  std::string dir_;
  std::string path_;
  std::vector<Sample> held_;
  size_t held_bytes_ = 0;
  bool spilling_ = false;  // once one sample spilled, every later one does (order is kept)
  std::vector<Record> spilled_;
  std::unique_ptr<File> file_;
};

}  // namespace mixprec
