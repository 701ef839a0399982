// libmixprec_quark_ops.so: the com.amd.quark operators (src/runtime/quark_ops.h) for a user's
// own ONNX Runtime session. The one exported symbol is ONNX Runtime's custom-op library entry:
//   C++:    Ort::SessionOptions so; so.RegisterCustomOpsLibrary("libmixprec_quark_ops.so");
//   Python: so = ort.SessionOptions(); so.register_custom_ops_library("libmixprec_quark_ops.so")
// The library is built against ONNX Runtime's API version ORT_API_VERSION and needs a runtime
// that offers it (1.29 or newer).
#define ORT_API_MANUAL_INIT
#include <onnxruntime_cxx_api.h>

#include "runtime/quark_ops.h"

extern "C" __attribute__((visibility("default"))) OrtStatus* ORT_API_CALL
RegisterCustomOps(OrtSessionOptions* options, const OrtApiBase* api_base) {
  const OrtApi* api = api_base->GetApi(ORT_API_VERSION);
  if (api == nullptr) {
    // Every runtime offers version 1, enough to say why.
    const OrtApi* oldest = api_base->GetApi(1);
    const std::string message = std::string("libmixprec_quark_ops.so needs ONNX Runtime API version ") +
                                std::to_string(ORT_API_VERSION) + "; this ONNX Runtime is " +
                                api_base->GetVersionString();
    return oldest ? oldest->CreateStatus(ORT_FAIL, message.c_str()) : nullptr;
  }
  Ort::InitApi(api);
  try {
    for (OrtCustomOpDomain* domain : mixprec::quark_op_domains()) {
      if (OrtStatus* status = api->AddCustomOpDomain(options, domain)) return status;
    }
  } catch (const std::exception& e) {
    return api->CreateStatus(ORT_FAIL, e.what());
  }
  return nullptr;
}
