// Kernels of the com.amd.quark operators (see quark_ops.h). Errors never cross ONNX Runtime's C
// boundary as exceptions: kernels are created and run through the status-returning entry points,
// and a bad attribute or input becomes a failed status naming the node.
#include "runtime/quark_ops.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#define ORT_API_MANUAL_INIT
#include <onnxruntime_cxx_api.h>

#include "mixprec/block_formats.h"
#include "mixprec/tensor.h"

namespace mixprec {
namespace {

// A failed kernel step: the message becomes the status ONNX Runtime reports.
struct KernelFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

template <class Fn>
OrtStatusPtr guarded(const std::string& label, const Fn& fn) {
  try {
    fn();
    return nullptr;
  } catch (const std::exception& e) {
    return Ort::GetApi().CreateStatus(ORT_INVALID_ARGUMENT, (label + ": " + e.what()).c_str());
  }
}

// Quark's kernels read every attribute with a default; absent (or mistyped) means the default.
int64_t attribute_int(const OrtKernelInfo* info, const char* name, int64_t fallback) {
  int64_t value = 0;
  if (OrtStatus* status = Ort::GetApi().KernelInfoGetAttribute_int64(info, name, &value)) {
    Ort::GetApi().ReleaseStatus(status);
    return fallback;
  }
  return value;
}

std::string attribute_string(const OrtKernelInfo* info, const char* name, const std::string& fallback) {
  size_t size = 0;
  if (OrtStatus* status = Ort::GetApi().KernelInfoGetAttribute_string(info, name, nullptr, &size)) {
    Ort::GetApi().ReleaseStatus(status);
    return fallback;
  }
  std::string value(size, '\0');
  Ort::ThrowOnError(Ort::GetApi().KernelInfoGetAttribute_string(info, name, value.data(), &size));
  value.resize(size > 0 ? size - 1 : 0);
  return value;
}

std::string node_label(const char* op, const OrtKernelInfo* info) {
  return std::string(op) + " node '" + Ort::ConstKernelInfo(info).GetNodeName() + "'";
}

DType dtype_of(ONNXTensorElementDataType type) { return dtype_from_onnx(static_cast<int32_t>(type)); }

int64_t checked_axis(int64_t axis, size_t rank) {
  const int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) {
    throw KernelFailure("axis " + std::to_string(axis) + " is outside the input's rank " + std::to_string(r));
  }
  return axis < 0 ? axis + r : axis;
}

BlockRounding rounding_of(int64_t mode) {
  if (mode < 0 || mode > 2) throw KernelFailure("rounding_mode " + std::to_string(mode) + " must be 0, 1 or 2");
  return static_cast<BlockRounding>(mode);
}

// --- Block fake quantization --------------------------------------------------------------

// Runs a block format's units (block_formats.h) on ONNX Runtime's intra-op threads: float32
// straight from the input into the output, float16/bfloat16 through float32 copies.
// `quantize_unit(values, shape, axis, out, unit)`.
template <class UnitFn>
void run_blocks(OrtKernelContext* context, int64_t axis_attribute, const UnitFn& quantize_unit) {
  Ort::KernelContext ctx(context);
  const Ort::ConstValue input = ctx.GetInput(0);
  const auto info = input.GetTensorTypeAndShapeInfo();
  const DType dtype = dtype_of(info.GetElementType());
  if (!dtype_traits(dtype).is_float) {
    throw KernelFailure(std::string("the input must be float, float16 or bfloat16, not ") + dtype_name(dtype));
  }
  const std::vector<int64_t> shape = info.GetShape();
  const int64_t axis = shape.size() >= 2 ? checked_axis(axis_attribute, shape.size()) : 0;
  const size_t count = info.GetElementCount();
  auto output = ctx.GetOutput(0, shape.data(), shape.size());
  std::vector<float> in_copy, out_copy;
  std::span<const float> values;
  std::span<float> out;
  if (dtype == DType::kFloat32) {
    values = {input.GetTensorData<float>(), count};
    out = {output.GetTensorMutableData<float>(), count};
  } else {
    in_copy.resize(count);
    out_copy.resize(count);
    dtype_traits(dtype).to_float(static_cast<const std::byte*>(input.GetTensorRawData()), in_copy.data(), count);
    values = in_copy;
    out = out_copy;
  }
  struct Job {
    const UnitFn& fn;
    std::span<const float> values;
    const std::vector<int64_t>& shape;
    int64_t axis;
    std::span<float> out;
  } job{quantize_unit, values, shape, axis, out};
  const size_t units = block_work_units(shape, axis, count);
  ctx.ParallelFor([](void* data, size_t unit) {
        const Job& j = *static_cast<const Job*>(data);
        j.fn(j.values, j.shape, j.axis, j.out, unit);
      },
      units, 0, &job);
  if (dtype != DType::kFloat32) {
    dtype_traits(dtype).from_float(out_copy.data(), static_cast<std::byte*>(output.GetTensorMutableRawData()), count);
  }
}

BfpSpec read_bfp_spec(const OrtKernelInfo* info) {
  BfpSpec spec;
  const std::string method = attribute_string(info, "bfp_method", "to_bfp");
  // "to_bfp_prime_shared" is the method's former name.
  if (method == "to_bfp") {
    spec.method = BfpMethod::kBfp;
  } else if (method == "to_bfp_prime" || method == "to_bfp_prime_shared") {
    spec.method = BfpMethod::kBfpPrime;
  } else {
    throw KernelFailure("bfp_method '" + method + "' is not to_bfp or to_bfp_prime");
  }
  spec.bit_width = attribute_int(info, "bit_width", 16);
  spec.block_size = attribute_int(info, "block_size", 8);
  spec.rounding = rounding_of(attribute_int(info, "rounding_mode", 0));
  spec.sub_block_size = attribute_int(info, "sub_block_size", 2);
  spec.sub_block_shift_bits = attribute_int(info, "sub_block_shift_bits", 1);
  spec.round_to_bfloat16_first = attribute_int(info, "convert_to_bfloat_before_bfp", 0) != 0;
  spec.compiler_kernel = attribute_int(info, "use_compiler_version_cpu_kernel", 0) != 0;
  return spec;
}

MxSpec read_mx_spec(const OrtKernelInfo* info) {
  MxSpec spec;
  const std::string element = attribute_string(info, "element_dtype", "int8");
  if (!mx_element_from_name(element, &spec.element)) {
    throw KernelFailure("element_dtype '" + element + "' is not one of " + mx_element_names());
  }
  spec.block_size = attribute_int(info, "block_size", 32);
  spec.rounding = rounding_of(attribute_int(info, "rounding_mode", 0));
  return spec;
}

void fake_quantize_unit(std::span<const float> values, std::span<const int64_t> shape, int64_t axis,
                        const BfpSpec& spec, std::span<float> out, size_t unit) {
  bfp_fake_quantize_unit(values, shape, axis, spec, out, unit);
}
void fake_quantize_unit(std::span<const float> values, std::span<const int64_t> shape, int64_t axis,
                        const MxSpec& spec, std::span<float> out, size_t unit) {
  mx_fake_quantize_unit(values, shape, axis, spec, out, unit);
}

// BFPQuantizeDequantize (Spec = BfpSpec) and MXQuantizeDequantize (MxSpec): the attributes
// read and checked once, when ONNX Runtime creates the kernel.
template <class Spec, Spec (*read_spec)(const OrtKernelInfo*)>
struct BlockKernel {
  BlockKernel(const char* op, const OrtKernelInfo* info)
      : label_(node_label(op, info)), spec_(read_spec(info)), axis_(attribute_int(info, "axis", 1)) {
    if (const std::string problem = check_spec(spec_); !problem.empty()) throw KernelFailure(problem);
  }

  OrtStatusPtr ComputeV2(OrtKernelContext* context) {
    return guarded(label_, [&] {
      run_blocks(context, axis_, [this](std::span<const float> values, std::span<const int64_t> shape, int64_t axis,
                                        std::span<float> out, size_t unit) {
        fake_quantize_unit(values, shape, axis, spec_, out, unit);
      });
    });
  }

 private:
  std::string label_;
  Spec spec_;
  int64_t axis_;
};
using BfpKernel = BlockKernel<BfpSpec, read_bfp_spec>;
using MxKernel = BlockKernel<MxSpec, read_mx_spec>;

// --- Extended Q/DQ -----------------------------------------------------------------------

// Which scale/zero point applies to element i: per tensor (one scale), or per slice along the
// axis (a 1-D scale of shape[axis] values), as ONNX's QuantizeLinear.
struct Channels {
  int64_t count = 1;  // 1: per tensor
  int64_t inner = 1;  // elements per step along the axis

  size_t of(size_t i) const {
    return count == 1 ? 0 : static_cast<size_t>((static_cast<int64_t>(i) / inner) % count);
  }
};

Channels channels_of(const std::vector<int64_t>& shape, int64_t axis_attribute, const Ort::ConstValue& scale,
                     const Ort::ConstValue& zero_point) {
  const auto scale_info = scale.GetTensorTypeAndShapeInfo();
  const size_t scales = scale_info.GetElementCount();
  if (zero_point.GetTensorTypeAndShapeInfo().GetElementCount() != scales) {
    throw KernelFailure("the zero point must have as many values as the scale (" + std::to_string(scales) + ")");
  }
  Channels channels;
  if (scales == 1) return channels;
  const int64_t axis = checked_axis(axis_attribute, shape.size());
  if (scale_info.GetShape().size() != 1 || static_cast<int64_t>(scales) != shape[axis]) {
    throw KernelFailure("a per-axis scale must be 1-D with " + std::to_string(shape[axis]) +
                        " values (the input's dimension along axis " + std::to_string(axis) + ")");
  }
  channels.count = shape[axis];
  for (size_t d = static_cast<size_t>(axis) + 1; d < shape.size(); ++d) channels.inner *= shape[d];
  return channels;
}

// Calls fn(T{}) with the C++ type of an integer code type (int8, uint8, int16, uint16, int32);
// false for the other types.
template <class Fn>
bool visit_code_type(DType type, const Fn& fn) {
  switch (type) {
    case DType::kInt8: fn(int8_t{}); return true;
    case DType::kUInt8: fn(uint8_t{}); return true;
    case DType::kInt16: fn(int16_t{}); return true;
    case DType::kUInt16: fn(uint16_t{}); return true;
    case DType::kInt32: fn(int32_t{}); return true;
    default: return false;
  }
}

// Integer codes: saturate(round_half_even(x / scale) + zero_point); NaN gives the zero point.
template <class T>
void quantize_ints(const float* x, size_t n, const float* scale, const T* zero_point, const Channels& ch, T* out) {
  constexpr double kLowest = static_cast<double>(std::numeric_limits<T>::lowest());
  constexpr double kMax = static_cast<double>(std::numeric_limits<T>::max());
  for (size_t i = 0; i < n; ++i) {
    const size_t c = ch.of(i);
    const float r = std::nearbyint(x[i] / scale[c]);
    const double code = std::isnan(r) ? static_cast<double>(zero_point[c])
                                      : std::clamp(static_cast<double>(r) + zero_point[c], kLowest, kMax);
    out[i] = static_cast<T>(code);
  }
}

template <class T>
void dequantize_ints(const T* q, size_t n, const float* scale, const T* zero_point, const Channels& ch, float* out) {
  for (size_t i = 0; i < n; ++i) {
    const size_t c = ch.of(i);
    out[i] = static_cast<float>(static_cast<int64_t>(q[i]) - static_cast<int64_t>(zero_point[c])) * scale[c];
  }
}

// The zero point's type picks the code type; a float16/bfloat16 zero point makes the codes
// x / scale + zp in that type (rounded to nearest even).
struct QuantizeKernel {
  QuantizeKernel(const char* op, const OrtKernelInfo* info)
      : label_(node_label(op, info)), axis_(attribute_int(info, "axis", 1)) {}

  OrtStatusPtr ComputeV2(OrtKernelContext* context) {
    return guarded(label_, [&] {
      Ort::KernelContext ctx(context);
      const Ort::ConstValue x = ctx.GetInput(0), scale = ctx.GetInput(1), zero_point = ctx.GetInput(2);
      if (x.GetTensorTypeAndShapeInfo().GetElementType() != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT) {
        throw KernelFailure("the input must be float");
      }
      const std::vector<int64_t> shape = x.GetTensorTypeAndShapeInfo().GetShape();
      const Channels ch = channels_of(shape, axis_, scale, zero_point);
      const size_t n = x.GetTensorTypeAndShapeInfo().GetElementCount();
      const float* xs = x.GetTensorData<float>();
      const float* scales = scale.GetTensorData<float>();
      auto out = ctx.GetOutput(0, shape.data(), shape.size());
      const DType type = dtype_of(zero_point.GetTensorTypeAndShapeInfo().GetElementType());
      void* raw = out.GetTensorMutableRawData();
      const void* zp = zero_point.GetTensorRawData();
      const bool integer = visit_code_type(type, [&](auto code) {
        using T = decltype(code);
        quantize_ints(xs, n, scales, static_cast<const T*>(zp), ch, static_cast<T*>(raw));
      });
      if (integer) return;
      if (type != DType::kFloat16 && type != DType::kBFloat16) {
        throw KernelFailure(std::string("zero point type ") + dtype_name(type) + " is not supported");
      }
      const DTypeTraits& traits = dtype_traits(type);
      std::vector<float> zps(static_cast<size_t>(ch.count)), codes(n);
      traits.to_float(static_cast<const std::byte*>(zp), zps.data(), zps.size());
      for (size_t i = 0; i < n; ++i) codes[i] = xs[i] / scales[ch.of(i)] + zps[ch.of(i)];
      traits.from_float(codes.data(), static_cast<std::byte*>(raw), n);
    });
  }

 private:
  std::string label_;
  int64_t axis_;
};

struct DequantizeKernel {
  DequantizeKernel(const char* op, const OrtKernelInfo* info)
      : label_(node_label(op, info)), axis_(attribute_int(info, "axis", 1)) {}

  OrtStatusPtr ComputeV2(OrtKernelContext* context) {
    return guarded(label_, [&] {
      Ort::KernelContext ctx(context);
      const Ort::ConstValue x = ctx.GetInput(0), scale = ctx.GetInput(1), zero_point = ctx.GetInput(2);
      const auto x_type = x.GetTensorTypeAndShapeInfo().GetElementType();
      if (x_type != zero_point.GetTensorTypeAndShapeInfo().GetElementType()) {
        throw KernelFailure("the input and the zero point must have the same type");
      }
      const std::vector<int64_t> shape = x.GetTensorTypeAndShapeInfo().GetShape();
      const Channels ch = channels_of(shape, axis_, scale, zero_point);
      const size_t n = x.GetTensorTypeAndShapeInfo().GetElementCount();
      const float* scales = scale.GetTensorData<float>();
      auto out = ctx.GetOutput(0, shape.data(), shape.size());
      float* ys = out.GetTensorMutableData<float>();
      const void* xs = x.GetTensorRawData();
      const void* zp = zero_point.GetTensorRawData();
      const DType type = dtype_of(x_type);
      const bool integer = visit_code_type(type, [&](auto code) {
        using T = decltype(code);
        dequantize_ints(static_cast<const T*>(xs), n, scales, static_cast<const T*>(zp), ch, ys);
      });
      if (integer) return;
      if (type != DType::kFloat16 && type != DType::kBFloat16) {
        throw KernelFailure(std::string("input type ") + dtype_name(type) + " is not supported");
      }
      const DTypeTraits& traits = dtype_traits(type);
      std::vector<float> zps(static_cast<size_t>(ch.count)), codes(n);
      traits.to_float(static_cast<const std::byte*>(zp), zps.data(), zps.size());
      traits.to_float(static_cast<const std::byte*>(xs), codes.data(), n);
      for (size_t i = 0; i < n; ++i) ys[i] = (codes[i] - zps[ch.of(i)]) * scales[ch.of(i)];
    });
  }

 private:
  std::string label_;
  int64_t axis_;
};

// --- Registration ------------------------------------------------------------------------

// Output 0 gets input 0's shape (symbolic dims kept) and `type`, or input `type_from`'s type
// when `type` is UNDEFINED.
OrtStatusPtr infer_output(OrtShapeInferContext* ctx, size_t type_from, ONNXTensorElementDataType type) {
  const OrtApi& api = Ort::GetApi();
  OrtTensorTypeAndShapeInfo* raw = nullptr;
  if (OrtStatus* status = api.ShapeInferContext_GetInputTypeShape(ctx, 0, &raw)) return status;
  // The context owns the inputs' infos; the output's is ours, and the context copies it.
  const Ort::ConstTensorTypeAndShapeInfo input(raw);
  if (type == ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED) {
    if (OrtStatus* status = api.ShapeInferContext_GetInputTypeShape(ctx, type_from, &raw)) return status;
    type = Ort::ConstTensorTypeAndShapeInfo(raw).GetElementType();
  }
  const std::vector<int64_t> dims = input.GetShape();
  // No dimensions: an unknown shape as often as a scalar; the output keeps the type ONNX
  // Runtime's own inference gave it and no shape.
  if (dims.empty()) return nullptr;
  std::vector<const char*> symbols(dims.size(), nullptr);
  input.GetSymbolicDimensions(symbols.data(), symbols.size());
  // A dimension neither known nor named cannot be passed on: the API would write it as the
  // value -1, which later shape inference takes as a size (Slice clamps to it and aborts).
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] < 0 && (symbols[d] == nullptr || *symbols[d] == '\0')) return nullptr;
  }
  if (OrtStatus* status = api.CreateTensorTypeAndShapeInfo(&raw)) return status;
  const Ort::TensorTypeAndShapeInfo output(raw);
  if (OrtStatus* status = api.SetTensorElementType(raw, type)) return status;
  if (OrtStatus* status = api.SetDimensions(raw, dims.data(), dims.size())) return status;
  if (OrtStatus* status = api.SetSymbolicDimensions(raw, symbols.data(), symbols.size())) return status;
  return api.ShapeInferContext_SetOutputTypeShape(ctx, 0, raw);
}

// One operator: `Kernel` under `name`, with `inputs` input types (UNDEFINED: any, the kernel
// checks) and its output's type taken from input `type_from` (or fixed to `output_type`).
template <class Kernel>
struct QuarkOp : Ort::CustomOpBase<QuarkOp<Kernel>, Kernel, true> {
  QuarkOp(const char* name, std::vector<ONNXTensorElementDataType> inputs, size_t type_from,
          ONNXTensorElementDataType output_type)
      : name_(name), inputs_(std::move(inputs)), type_from_(type_from), output_type_(output_type) {
    OrtCustomOp::InferOutputShapeFn = [](const OrtCustomOp* op, OrtShapeInferContext* ctx) -> OrtStatusPtr {
      const auto* self = static_cast<const QuarkOp*>(op);
      return infer_output(ctx, self->type_from_, self->output_type_);
    };
  }

  OrtStatusPtr CreateKernelV2(const OrtApi&, const OrtKernelInfo* info, void** kernel) const {
    try {
      *kernel = new Kernel(name_, info);
      return nullptr;
    } catch (const std::exception& e) {
      return Ort::GetApi().CreateStatus(ORT_INVALID_ARGUMENT, (node_label(name_, info) + ": " + e.what()).c_str());
    }
  }
  const char* GetName() const { return name_; }
  const char* GetExecutionProviderType() const { return "CPUExecutionProvider"; }
  size_t GetInputTypeCount() const { return inputs_.size(); }
  ONNXTensorElementDataType GetInputType(size_t index) const { return inputs_[index]; }
  size_t GetOutputTypeCount() const { return 1; }
  ONNXTensorElementDataType GetOutputType(size_t) const { return output_type_; }

 private:
  const char* name_;
  std::vector<ONNXTensorElementDataType> inputs_;
  size_t type_from_;
  ONNXTensorElementDataType output_type_;
};

constexpr auto kAny = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
constexpr auto kFloat = ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;

// The four operators under one set of names.
struct OpSet {
  QuarkOp<BfpKernel> bfp;
  QuarkOp<MxKernel> mx;
  QuarkOp<QuantizeKernel> quantize;
  QuarkOp<DequantizeKernel> dequantize;

  OpSet(const char* bfp_name, const char* mx_name, const char* q_name, const char* dq_name)
      : bfp(bfp_name, {kAny}, 0, kAny),
        mx(mx_name, {kAny}, 0, kAny),
        quantize(q_name, {kFloat, kFloat, kAny}, 2, kAny),
        dequantize(dq_name, {kAny, kFloat, kAny}, 0, kFloat) {}

  Ort::CustomOpDomain domain(const char* name) {
    Ort::CustomOpDomain d(name);
    d.Add(&bfp);
    d.Add(&mx);
    d.Add(&quantize);
    d.Add(&dequantize);
    return d;
  }
};

}  // namespace

std::span<OrtCustomOpDomain* const> quark_op_domains() {
  static OpSet quark("BFPQuantizeDequantize", "MXQuantizeDequantize", "ExtendedQuantizeLinear",
                     "ExtendedDequantizeLinear");
  static OpSet vitis("BFPFixNeuron", "MXFixNeuron", "VitisQuantizeLinear", "VitisDequantizeLinear");
  static Ort::CustomOpDomain quark_domain = quark.domain(kQuarkDomain);
  static Ort::CustomOpDomain vitis_domain = vitis.domain(kVitisQuantizeDomain);
  static OrtCustomOpDomain* const domains[] = {quark_domain, vitis_domain};
  return domains;
}

}  // namespace mixprec
