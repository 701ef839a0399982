// libmixprec_quark_ops.so in a user's own ONNX Runtime session: a model mixprec quantized to
// BFP16 (com.amd.quark BFPQuantizeDequantize nodes) is opened through ONNX Runtime's own API,
// not mixprec's session code. Without the library the stock runtime refuses the model; with it
// the outputs are mixprec's, bit for bit.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#define ORT_API_MANUAL_INIT
#include <onnxruntime_cxx_api.h>

#include "mixprec/runtime.h"
#include "support/cli_runner.h"
#include "support/model_builder.h"
#include "support/temp_dir.h"

namespace mixprec {
namespace {

const std::string kClassifier = std::string(MIXPREC_MODELS_DIR) + "/ppocr_cls.onnx";

class QuarkOpsLibrary : public testing::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    // mixprec's runtime sets the same table; the test's own calls need it set here too.
    Ort::InitApi(OrtGetApiBase()->GetApi(ORT_API_VERSION));
  }
};

std::vector<float> run_stock(Ort::Session& session, std::vector<float> input, const std::vector<int64_t>& shape) {
  Ort::MemoryInfo memory = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
  Ort::Value x = Ort::Value::CreateTensor<float>(memory, input.data(), input.size(), shape.data(), shape.size());
  Ort::AllocatorWithDefaultOptions allocator;
  const Ort::AllocatedStringPtr in_name = session.GetInputNameAllocated(0, allocator);
  const Ort::AllocatedStringPtr out_name = session.GetOutputNameAllocated(0, allocator);
  const char* in_names[] = {in_name.get()};
  const char* out_names[] = {out_name.get()};
  std::vector<Ort::Value> out = session.Run(Ort::RunOptions{nullptr}, in_names, &x, 1, out_names, 1);
  const float* data = out[0].GetTensorData<float>();
  return {data, data + out[0].GetTensorTypeAndShapeInfo().GetElementCount()};
}

TEST_F(QuarkOpsLibrary, StockRuntimeRunsAMixprecBfp16ModelAfterLoadingTheLibrary) {
  const std::string model = path("cls_bfp16.onnx");
  const testing::CliResult quantized = run_cli({"quantize", kClassifier, "--preset", "BFP16", "-o", model});
  ASSERT_EQ(quantized.exit_code, 0) << quantized.err;
  ASSERT_NE(quantized.out.find("BFP/MX nodes"), std::string::npos) << quantized.out;

  const std::vector<int64_t> shape = {1, 3, 48, 192};
  const std::vector<float> input = testing::deterministic_values(3 * 48 * 192, 5, 1.0f);
  Ort::Env env(ORT_LOGGING_LEVEL_ERROR, "quark_ops_library_test");

  {
    Ort::SessionOptions plain;
    EXPECT_THROW(Ort::Session(env, model.c_str(), plain), Ort::Exception) << "a stock runtime has no com.amd.quark ops";
  }

  Ort::SessionOptions options;
  options.RegisterCustomOpsLibrary(MIXPREC_QUARK_OPS_LIB);
  Ort::Session session(env, model.c_str(), options);
  const std::vector<float> stock = run_stock(session, input, shape);

  const Session ours = Session::from_file(model);
  const NamedTensors expected = ours.run({{ours.inputs()[0].name, Tensor::from_floats(shape, input)}});
  EXPECT_EQ(stock, expected.at(0).second.to_floats());

  // Quantized, not passed through: the FP32 model's scores differ.
  Ort::SessionOptions fp32_options;
  Ort::Session fp32(env, kClassifier.c_str(), fp32_options);
  EXPECT_NE(stock, run_stock(fp32, input, shape));
}

}  // namespace
}  // namespace mixprec
