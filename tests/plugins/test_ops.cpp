// A custom-op library for the plugin tests, loaded by ONNX Runtime through its RegisterCustomOps
// entry: test.mixprec Double (y = 2 x, float) and RoundToStep (y = step * round(x / step), halves
// away from zero, float attribute "step" > 0: the fake quantization of a plugin's format). It links no ONNX Runtime: the API table
// comes from the caller.
#define ORT_API_MANUAL_INIT
#include <onnxruntime_cxx_api.h>

#include <cmath>
#include <stdexcept>

namespace {

struct DoubleKernel {
  DoubleKernel(const OrtApi&, const OrtKernelInfo*) {}
  void Compute(OrtKernelContext* context) {
    Ort::KernelContext ctx(context);
    const Ort::ConstValue x = ctx.GetInput(0);
    const auto info = x.GetTensorTypeAndShapeInfo();
    const std::vector<int64_t> shape = info.GetShape();
    auto y = ctx.GetOutput(0, shape.data(), shape.size());
    const float* in = x.GetTensorData<float>();
    float* out = y.GetTensorMutableData<float>();
    for (size_t i = 0; i < info.GetElementCount(); ++i) out[i] = 2.0f * in[i];
  }
};

struct DoubleOp : Ort::CustomOpBase<DoubleOp, DoubleKernel> {
  void* CreateKernel(const OrtApi& api, const OrtKernelInfo* info) const { return new DoubleKernel(api, info); }
  const char* GetName() const { return "Double"; }
  size_t GetInputTypeCount() const { return 1; }
  ONNXTensorElementDataType GetInputType(size_t) const { return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT; }
  size_t GetOutputTypeCount() const { return 1; }
  ONNXTensorElementDataType GetOutputType(size_t) const { return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT; }
};

struct RoundToStepKernel {
  RoundToStepKernel(const OrtApi&, const OrtKernelInfo* info) : step(Ort::ConstKernelInfo(info).GetAttribute<float>("step")) {
    if (!(step > 0)) throw std::invalid_argument("RoundToStep needs step > 0");
  }
  void Compute(OrtKernelContext* context) const {
    Ort::KernelContext ctx(context);
    const Ort::ConstValue x = ctx.GetInput(0);
    const auto info = x.GetTensorTypeAndShapeInfo();
    const std::vector<int64_t> shape = info.GetShape();
    auto y = ctx.GetOutput(0, shape.data(), shape.size());
    const float* in = x.GetTensorData<float>();
    float* out = y.GetTensorMutableData<float>();
    for (size_t i = 0; i < info.GetElementCount(); ++i) out[i] = step * std::round(in[i] / step);
  }
  float step;
};

struct RoundToStepOp : Ort::CustomOpBase<RoundToStepOp, RoundToStepKernel> {
  void* CreateKernel(const OrtApi& api, const OrtKernelInfo* info) const { return new RoundToStepKernel(api, info); }
  const char* GetName() const { return "RoundToStep"; }
  size_t GetInputTypeCount() const { return 1; }
  ONNXTensorElementDataType GetInputType(size_t) const { return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT; }
  size_t GetOutputTypeCount() const { return 1; }
  ONNXTensorElementDataType GetOutputType(size_t) const { return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT; }
};

}  // namespace

extern "C" __attribute__((visibility("default"))) OrtStatus* ORT_API_CALL
RegisterCustomOps(OrtSessionOptions* options, const OrtApiBase* api_base) {
  const OrtApi* api = api_base->GetApi(ORT_API_VERSION);
  if (api == nullptr) return nullptr;
  Ort::InitApi(api);
  static DoubleOp op;
  static RoundToStepOp round_to_step;
  static OrtCustomOpDomain* domain = [] {
    OrtCustomOpDomain* d = nullptr;
    Ort::ThrowOnError(Ort::GetApi().CreateCustomOpDomain("test.mixprec", &d));
    Ort::ThrowOnError(Ort::GetApi().CustomOpDomain_Add(d, &op));
    Ort::ThrowOnError(Ort::GetApi().CustomOpDomain_Add(d, &round_to_step));
    return d;
  }();
  return api->AddCustomOpDomain(options, domain);
}
