// numpy .npy and .npz files: calibration data, reference outputs, dumps.
//
// Reading accepts npy format versions 1.0, 2.0 and 3.0, C order, little-endian data of the
// dtypes in tensor.h (numpy descr "<f4", "<f2", "|i1", "|u1", "<i2", "<u2", "<i4", "<i8",
// "|b1"; bfloat16 as "<V2" or ml_dtypes' "bfloat16"). npz archives may hold stored or
// deflated members, with or without ZIP64 records; every member must be a "KEY.npy".
//
// Errors: every malformed input (bad magic, bad header, truncation, data size mismatch, CRC
// mismatch, unknown compression) throws mixprec::Error kBadInput naming the file and, for an
// npz, the member. Valid files we do not handle (big-endian or Fortran-order data, other
// dtypes such as float64, npy versions above 3.0) throw kUnsupported; a file that cannot be
// opened or written throws kIo.
//
// Sizes: nothing is allocated before the header's size is checked against the bytes present
// (an npy file's length, an npz member's stored size, or 1032 times its deflated size, the
// most deflate can give) and against kMaxArrayBytes; an array over that limit is kUnsupported.
//
// Writing produces npy 1.0 (2.0 when the header outgrows 64 KiB), C order, headers padded so
// data start on a 64-byte boundary, as numpy does. numpy has no bfloat16: bfloat16 tensors
// are written with descr "<V2", which numpy loads as raw 2-byte void and ml_dtypes users can
// .view(bfloat16); mixprec reads them back as bfloat16. npz output is deterministic (fixed
// timestamps). Files are written atomically: to "PATH.tmp-<pid>" beside PATH, then renamed
// over PATH; on failure the temporary file is removed and PATH is untouched.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "mixprec/tensor.h"

namespace mixprec {

// The largest array read: calibration and evaluation data are batches of samples, which
// belong in several files long before this.
inline constexpr uint64_t kMaxArrayBytes = uint64_t{8} << 30;

struct NpzOptions {
  bool compress = false;  // deflate members (np.savez_compressed) instead of storing them
};

Tensor read_npy(const std::string& path);
void write_npy(const std::string& path, const Tensor& tensor);

// npz members in archive order, keyed by member name without ".npy".
NamedTensors read_npz(const std::string& path);
// Keys must be non-empty and unique (kBadInput otherwise).
void write_npz(const std::string& path, const NamedTensors& members, NpzOptions options = {});

// In-memory images with the same formats and errors; `source` names the image in errors.
Tensor npy_from_bytes(std::span<const std::byte> bytes, const std::string& source);
std::vector<std::byte> npy_to_bytes(const Tensor& tensor);
NamedTensors npz_from_bytes(std::span<const std::byte> bytes, const std::string& source);
std::vector<std::byte> npz_to_bytes(const NamedTensors& members, NpzOptions options = {});

}  // namespace mixprec
