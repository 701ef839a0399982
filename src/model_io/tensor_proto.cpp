#include "mixprec/tensor_proto.h"

#include <cstring>

#include "mixprec/error.h"

namespace mixprec {
namespace {

// Typed fields store narrow integer types and 16-bit floats widened in int32_data.
template <typename Narrow>
void narrow_from_int32(const onnx::TensorProto& proto, Tensor& out) {
  auto dst = out.as<Narrow>();
  for (size_t i = 0; i < dst.size(); ++i) dst[i] = static_cast<Narrow>(proto.int32_data(static_cast<int>(i)));
}

}  // namespace

Tensor tensor_from_proto(const onnx::TensorProto& proto, const std::string& label) {
  if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
    throw_bad_input(label, "tensor '" + proto.name() + "' still references external data");
  }
  const DType dtype = dtype_from_onnx(proto.data_type());
  Shape shape(proto.dims().begin(), proto.dims().end());
  for (int64_t d : shape) {
    if (d < 0) throw_bad_input(label, "tensor '" + proto.name() + "' has a negative dimension");
  }
  const size_t numel = static_cast<size_t>(shape_numel(shape));
  const size_t bytes = numel * dtype_size(dtype);
  const bool four_bit = dtype_traits(dtype).bits == 4;
  const bool is_signed = dtype == DType::kInt4;
  if (proto.has_raw_data()) {
    const size_t stored = onnx_byte_size(dtype, numel);
    if (proto.raw_data().size() != stored) {
      throw_bad_input(label, "tensor '" + proto.name() + "' holds " + std::to_string(proto.raw_data().size()) +
                                 " bytes, its shape " + shape_to_string(shape) + " needs " + std::to_string(stored));
    }
    const std::span<const std::byte> raw(reinterpret_cast<const std::byte*>(proto.raw_data().data()), stored);
    if (four_bit) return Tensor(dtype, shape, unpack_4bit(raw, numel, is_signed));
    return Tensor(dtype, shape, raw);
  }
  Tensor out(dtype, shape);
  auto check_count = [&](int count) {
    if (static_cast<size_t>(count) != numel) {
      throw_bad_input(label, "tensor '" + proto.name() + "' holds " + std::to_string(count) + " values, its shape " +
                                 shape_to_string(shape) + " needs " + std::to_string(numel));
    }
  };
  switch (dtype) {
    case DType::kFloat32:
      check_count(proto.float_data_size());
      std::memcpy(out.data(), proto.float_data().data(), bytes);
      break;
    case DType::kInt64:
      check_count(proto.int64_data_size());
      std::memcpy(out.data(), proto.int64_data().data(), bytes);
      break;
    case DType::kInt32:
      check_count(proto.int32_data_size());
      std::memcpy(out.data(), proto.int32_data().data(), bytes);
      break;
    case DType::kInt8: check_count(proto.int32_data_size()); narrow_from_int32<int8_t>(proto, out); break;
    case DType::kUInt8: check_count(proto.int32_data_size()); narrow_from_int32<uint8_t>(proto, out); break;
    case DType::kBool: check_count(proto.int32_data_size()); narrow_from_int32<uint8_t>(proto, out); break;
    case DType::kInt16: check_count(proto.int32_data_size()); narrow_from_int32<int16_t>(proto, out); break;
    case DType::kUInt16:
    case DType::kFloat16:
    case DType::kBFloat16:
      check_count(proto.int32_data_size());
      narrow_from_int32<uint16_t>(proto, out);
      break;
    case DType::kFloat8E4M3FN:
    case DType::kFloat8E5M2:  // each int32 holds one bit pattern
      check_count(proto.int32_data_size());
      narrow_from_int32<uint8_t>(proto, out);
      break;
    case DType::kInt4:
    case DType::kUInt4: {  // each int32 holds one packed byte (two elements)
      const int packed_count = proto.int32_data_size();
      if (static_cast<size_t>(packed_count) != (numel + 1) / 2) {
        throw_bad_input(label, "tensor '" + proto.name() + "' holds " + std::to_string(packed_count) +
                                   " packed int32 values, its shape " + shape_to_string(shape) + " needs " +
                                   std::to_string((numel + 1) / 2));
      }
      std::vector<std::byte> packed(static_cast<size_t>(packed_count));
      for (int i = 0; i < packed_count; ++i) packed[static_cast<size_t>(i)] = static_cast<std::byte>(proto.int32_data(i));
      return Tensor(dtype, shape, unpack_4bit(packed, numel, is_signed));
    }
  }
  return out;
}

onnx::TensorProto tensor_to_proto(const Tensor& tensor, const std::string& name) {
  onnx::TensorProto proto;
  proto.set_name(name);
  proto.set_data_type(dtype_to_onnx(tensor.dtype()));
  for (int64_t d : tensor.shape()) proto.add_dims(d);
  if (dtype_traits(tensor.dtype()).bits == 4) {
    const std::vector<std::byte> packed = pack_4bit({tensor.data(), tensor.byte_size()});
    proto.set_raw_data(reinterpret_cast<const char*>(packed.data()), packed.size());
  } else {
    proto.set_raw_data(reinterpret_cast<const char*>(tensor.data()), tensor.byte_size());
  }
  return proto;
}

}  // namespace mixprec
