// ONNX models: the protobuf loader's checks, then the whole static analysis (graph view,
// shapes, op histogram, task type, islands, coverage, MACs) that `mixprec analyze` runs on
// any model a user hands it.
#include "fuzz_support.h"
#include "mixprec/analysis.h"
#include "mixprec/model_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mixprec;
  fuzz::silence_log();
  try {
    const onnx::ModelProto model = model_from_bytes(fuzz::text_of(data, size), "fuzz.onnx");
    (void)analyze_model(model, "fuzz.onnx");
  } catch (const Error&) {
  }
  return 0;
}
