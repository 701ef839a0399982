// The com.amd.quark operators run inside ONNX Runtime sessions that mixprec opens: tiny models
// carrying them, checked against hand-worked values and the block numerics.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "mixprec/block_formats.h"
#include "mixprec/tensor.h"
#include "mixprec/error.h"
#include "mixprec/formats.h"
#include "mixprec/runtime.h"
#include "mixprec/tensor_proto.h"
#include "support/model_builder.h"

namespace mixprec {
namespace {

using testing::attr_int;
using testing::attr_string;
using testing::ModelBuilder;

constexpr const char* kQuark = "com.amd.quark";

Tensor floats(Shape shape, const std::vector<float>& values) { return Tensor::from_floats(std::move(shape), values); }

std::vector<float> run_one(const onnx::ModelProto& model, const Tensor& x) {
  const Session session = Session::from_model(model, "quark_ops");
  const NamedTensors out = session.run({{"x", x}});
  return out.at(0).second.to_floats();
}

onnx::ModelProto block_model(const std::string& op, std::vector<onnx::AttributeProto> attributes,
                             const std::vector<int64_t>& dims, int32_t type = onnx::TensorProto::FLOAT) {
  std::vector<testing::DimSpec> spec(dims.begin(), dims.end());
  return ModelBuilder()
      .add_input("x", type, spec)
      .add_output("y", type, spec)
      .add_node(op, {"x"}, {"y"}, std::move(attributes), "fq", kQuark)
      .build();
}

TEST(QuarkOps, BfpNodeMatchesTheBlockNumericsAlongItsAxis) {
  // NCHW [1, 12, 2, 2]: blocks of 8 along the channels, the second block of each line padded.
  const std::vector<int64_t> dims = {1, 12, 2, 2};
  const std::vector<float> values = testing::deterministic_values(48, 7, 3.0f);
  const onnx::ModelProto model = block_model("BFPQuantizeDequantize", {}, dims);
  const std::vector<float> got = run_one(model, Tensor::from_floats(dims, values));
  std::vector<float> want(values.size());
  bfp_fake_quantize(values, dims, 1, BfpSpec{}, want);
  EXPECT_EQ(got, want);
  EXPECT_NE(got, values);  // it did quantize
}

TEST(QuarkOps, BfpPrimeAndAttributesReachTheKernel) {
  const std::vector<int64_t> dims = {4, 16};
  const std::vector<float> values = testing::deterministic_values(64, 3, 2.0f);
  const onnx::ModelProto model =
      block_model("BFPQuantizeDequantize",
                  {attr_string("bfp_method", "to_bfp_prime"), attr_int("bit_width", 13), attr_int("block_size", 16),
                   attr_int("axis", -1), attr_int("rounding_mode", 2)},
                  dims);
  std::vector<float> want(values.size());
  const BfpSpec spec{.method = BfpMethod::kBfpPrime, .bit_width = 13, .block_size = 16,
                     .rounding = BlockRounding::kHalfToEven};
  bfp_fake_quantize(values, dims, 1, spec, want);
  EXPECT_EQ(run_one(model, Tensor::from_floats(dims, values)), want);
}

TEST(QuarkOps, MxNodeOnFloat16KeepsTheType) {
  const std::vector<int64_t> dims = {2, 32};
  const std::vector<float> values = testing::deterministic_values(64, 11, 4.0f);
  const Tensor x = Tensor::from_floats(DType::kFloat16, dims, values);
  const onnx::ModelProto model = block_model("MXQuantizeDequantize", {attr_string("element_dtype", "fp8_e4m3"),
                                                                      attr_int("axis", 1)},
                                             dims, onnx::TensorProto::FLOAT16);
  const Session session = Session::from_model(model, "mx_fp16");
  const NamedTensors out = session.run({{"x", x}});
  ASSERT_EQ(out.at(0).second.dtype(), DType::kFloat16);
  const std::vector<float> in = x.to_floats();
  std::vector<float> want(in.size());
  mx_fake_quantize(in, dims, 1, {.element = MxElement::kFp8E4M3}, want);
  EXPECT_EQ(out.at(0).second.to_floats(), Tensor::from_floats(DType::kFloat16, dims, want).to_floats());
}

TEST(QuarkOps, BadAttributesFailNamingTheNode) {
  const onnx::ModelProto model = block_model("MXQuantizeDequantize", {attr_string("element_dtype", "fp7")}, {1, 4});
  try {
    run_one(model, floats({1, 4}, {1, 2, 3, 4}));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("MXQuantizeDequantize node 'fq'"), std::string::npos) << what;
    EXPECT_NE(what.find("element_dtype 'fp7'"), std::string::npos) << what;
  }
  const onnx::ModelProto bad_axis = block_model("BFPQuantizeDequantize", {attr_int("axis", 3)}, {2, 4});
  EXPECT_THROW(run_one(bad_axis, floats({2, 4}, std::vector<float>(8, 1.0f))), Error);
}

// x / 0.5 rounded half to even plus 3, saturated: 1.0 -> 5, 0.75 -> 1.5 -> 2 -> 5, -100 -> -197
// -> -128, 0.25 -> 0.5 -> 0 -> 3; back: (q - 3) * 0.5.
TEST(QuarkOps, ExtendedQdqInt8PerTensor) {
  const onnx::ModelProto model = ModelBuilder()
                                     .add_input("x", onnx::TensorProto::FLOAT, {4})
                                     .add_output("q", onnx::TensorProto::INT8, {4})
                                     .add_output("y", onnx::TensorProto::FLOAT, {4})
                                     .add_initializer("s", {}, {0.5f})
                                     .add_initializer_i8("zp", {}, {3})
                                     .add_node("ExtendedQuantizeLinear", {"x", "s", "zp"}, {"q"}, {}, "q", kQuark)
                                     .add_node("ExtendedDequantizeLinear", {"q", "s", "zp"}, {"y"}, {}, "dq", kQuark)
                                     .build();
  const Session session = Session::from_model(model, "extended_qdq");
  const NamedTensors out = session.run({{"x", floats({4}, {1.0f, 0.75f, -100.0f, 0.25f})}});
  EXPECT_EQ(out.at(0).second.to_floats(), (std::vector<float>{5, 5, -128, 3}));
  EXPECT_EQ(out.at(1).second.to_floats(), (std::vector<float>{1.0f, 1.0f, -65.5f, 0.0f}));
}

// Per axis 1 with int16 codes: column 0 scale 0.5 zp 0, column 1 scale 0.25 zp 10.
TEST(QuarkOps, ExtendedQuantizeInt16PerAxis) {
  onnx::TensorProto zp;
  zp.set_name("zp");
  zp.set_data_type(onnx::TensorProto::INT16);
  zp.add_dims(2);
  zp.add_int32_data(0);
  zp.add_int32_data(10);
  const onnx::ModelProto model = ModelBuilder()
                                     .add_input("x", onnx::TensorProto::FLOAT, {2, 2})
                                     .add_output("q", onnx::TensorProto::INT16, {2, 2})
                                     .add_initializer("s", {2}, {0.5f, 0.25f})
                                     .add_initializer(zp)
                                     .add_node("ExtendedQuantizeLinear", {"x", "s", "zp"}, {"q"}, {attr_int("axis", 1)},
                                               "q", kQuark)
                                     .build();
  EXPECT_EQ(run_one(model, floats({2, 2}, {1.0f, 1.0f, -1.0f, 0.3f})),
            (std::vector<float>{2, 14, -2, 11}));
}

// A bfloat16 zero point makes the codes x / scale + zp in bfloat16: 3 / 2 = 1.5 exactly;
// 1.0001 / 2 = 0.50005 rounds to bfloat16's 0.5.
TEST(QuarkOps, ExtendedQdqBfloat16Codes) {
  onnx::TensorProto zp;
  zp.set_name("zp");
  zp.set_data_type(onnx::TensorProto::BFLOAT16);
  zp.add_int32_data(0);
  const onnx::ModelProto model = ModelBuilder()
                                     .add_input("x", onnx::TensorProto::FLOAT, {2})
                                     .add_output("y", onnx::TensorProto::FLOAT, {2})
                                     .add_initializer("s", {}, {2.0f})
                                     .add_initializer(zp)
                                     .add_node("ExtendedQuantizeLinear", {"x", "s", "zp"}, {"q"}, {}, "q", kQuark)
                                     .add_node("ExtendedDequantizeLinear", {"q", "s", "zp"}, {"y"}, {}, "dq", kQuark)
                                     .build();
  EXPECT_EQ(run_one(model, floats({2}, {3.0f, 1.0001f})), (std::vector<float>{3.0f, 1.0f}));
}

TEST(QuarkOps, OldVitisDomainNamesRunToo) {
  const onnx::ModelProto model = ModelBuilder()
                                     .add_input("x", onnx::TensorProto::FLOAT, {1, 8})
                                     .add_output("y", onnx::TensorProto::FLOAT, {1, 8})
                                     .add_node("BFPFixNeuron", {"x"}, {"y"}, {}, "fq", "com.vai.quantize")
                                     .build();
  const std::vector<float> values = {1.0f, 0.3f, -0.5f, 3.99f, 0.078125f, -0.078125f, 1e-9f, 0.0f};
  EXPECT_EQ(run_one(model, floats({1, 8}, values)),
            (std::vector<float>{1.0f, 0.3125f, -0.5f, 3.96875f, 0.09375f, -0.09375f, 0.0f, 0.0f}));
}

}  // namespace
}  // namespace mixprec

namespace mixprec {
namespace {

// The MX minifloat rule against ONNX Runtime's own float8 casts (saturating, round to nearest
// even): FP8 E4M3FN and E5M2 on values across their normal and subnormal ranges.
TEST(Minifloat, MatchesOnnxRuntimesFloat8Casts) {
  struct Case {
    int32_t type;
    int ebits, mbits;
    float max_norm;
  };
  // TensorProto data types 17 (FLOAT8E4M3FN) and 19 (FLOAT8E5M2): Debian's onnx headers predate them.
  constexpr int32_t kFloat8E4M3FN = 17, kFloat8E5M2 = 19;
  for (const Case& c : {Case{kFloat8E4M3FN, 4, 3, 448.0f}, Case{kFloat8E5M2, 5, 2, 57344.0f}}) {
    std::vector<float> values;
    for (int e = -20; e <= 17; ++e) {
      for (float m : {1.0f, 1.03f, 1.0625f, 1.1f, 1.125f, 1.3f, 1.5625f, 1.7f, 1.875f, 1.96f}) {
        values.push_back(std::ldexp(m, e));
        values.push_back(-std::ldexp(m, e));
      }
    }
    const int64_t n = static_cast<int64_t>(values.size());
    const onnx::ModelProto model = ModelBuilder()
                                       .opset(19)
                                       .add_input("x", onnx::TensorProto::FLOAT, {n})
                                       .add_output("y", onnx::TensorProto::FLOAT, {n})
                                       .add_node("Cast", {"x"}, {"low"}, {attr_int("to", c.type)})
                                       .add_node("Cast", {"low"}, {"y"}, {attr_int("to", onnx::TensorProto::FLOAT)})
                                       .build();
    const std::vector<float> cast = run_one(model, floats({n}, values));
    for (size_t i = 0; i < values.size(); ++i) {
      EXPECT_EQ(round_to_minifloat(values[i], c.ebits, c.mbits, c.max_norm), cast[i]) << values[i] << " e" << c.ebits;
    }
  }
}

}  // namespace
}  // namespace mixprec

namespace mixprec {
namespace {

// Our FP8 and 4-bit codecs against ONNX Runtime bit for bit: a Cast to FP8 and a QuantizeLinear
// to int4/uint4 as model outputs (the session unpacks 4-bit outputs), on values that cover
// rounding ties, subnormals, saturation, infinities and NaN.
TEST(LowBitCodecs, MatchOnnxRuntimeBitForBit) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> values = {0.0f, -0.0f, inf, -inf, 1e6f, -1e6f, 470.0f, 464.0f, 0x1p-10f, 0x3p-10f, 0x1p-17f};
  for (int e = -18; e <= 16; ++e) {
    for (float m : {1.0f, 1.0625f, 1.125f, 1.1875f, 1.3f, 1.625f, 1.75f, 1.9375f}) {
      values.push_back(std::ldexp(m, e));
      values.push_back(-std::ldexp(m, e));
    }
  }
  const int64_t n = static_cast<int64_t>(values.size());
  const Tensor x = Tensor::from_floats({n}, values);
  for (DType fp8 : {DType::kFloat8E4M3FN, DType::kFloat8E5M2}) {
    const onnx::ModelProto model = ModelBuilder()
                                       .opset(19)
                                       .add_input("x", onnx::TensorProto::FLOAT, {n})
                                       .add_output("y", dtype_to_onnx(fp8), {n})
                                       .add_node("Cast", {"x"}, {"y"}, {attr_int("to", dtype_to_onnx(fp8))})
                                       .build();
    const Tensor got = Session::from_model(model, "cast_fp8").run({{"x", x}}).at(0).second;
    const Tensor want = Tensor::from_floats(fp8, {n}, values);
    ASSERT_EQ(got.dtype(), fp8);
    for (size_t i = 0; i < values.size(); ++i) {
      EXPECT_EQ(got.as<uint8_t>()[i], want.as<uint8_t>()[i]) << dtype_name(fp8) << " " << values[i];
    }
  }
  std::vector<float> codes;  // x / 0.25 spans ties and both saturation ends of 4 bits
  for (int i = -80; i <= 80; ++i) codes.push_back(static_cast<float>(i) * 0.0625f);
  const int64_t m = static_cast<int64_t>(codes.size());
  for (DType int4 : {DType::kInt4, DType::kUInt4}) {
    const Tensor zero = Tensor::from_floats(int4, {}, std::vector<float>{int4 == DType::kUInt4 ? 8.0f : 0.0f});
    const onnx::ModelProto model = ModelBuilder()
                                       .opset(21)
                                       .add_input("x", onnx::TensorProto::FLOAT, {m})
                                       .add_output("q", dtype_to_onnx(int4), {m})
                                       .add_initializer("scale", {}, {0.25f})
                                       .add_initializer(tensor_to_proto(zero, "zero"))
                                       .add_node("QuantizeLinear", {"x", "scale", "zero"}, {"q"})
                                       .build();
    const Tensor got = Session::from_model(model, "q_int4").run({{"x", Tensor::from_floats({m}, codes)}}).at(0).second;
    std::vector<float> want;
    for (float c : codes) want.push_back(std::nearbyint(c / 0.25f) + zero.to_floats()[0]);
    EXPECT_EQ(got.to_floats(), Tensor::from_floats(int4, {m}, want).to_floats()) << dtype_name(int4);
  }
}

}  // namespace
}  // namespace mixprec

namespace mixprec {
namespace {

// Our FP8 fake quantization against ONNX Runtime's float8 QuantizeLinear -> DequantizeLinear
// pair (opset 19), at a scale that puts values across the normal and subnormal codes.
TEST(LowBitCodecs, Fp8FakeQuantizationMatchesOnnxRuntimesQdq) {
  std::vector<float> values;
  for (int i = -300; i <= 300; ++i) values.push_back(static_cast<float>(i) * 0.0137f);
  values.push_back(1e9f);
  values.push_back(-1e9f);
  const int64_t n = static_cast<int64_t>(values.size());
  for (FormatId format : {FormatId::kFp8E4M3, FormatId::kFp8E5M2}) {
    const float scale = 4.1f / static_cast<float>(format_traits(format).qmax);
    const DType storage = format_traits(format).storage;
    const onnx::ModelProto model = ModelBuilder()
                                       .opset(19)
                                       .add_input("x", onnx::TensorProto::FLOAT, {n})
                                       .add_output("y", onnx::TensorProto::FLOAT, {n})
                                       .add_initializer("scale", {}, {scale})
                                       .add_initializer(tensor_to_proto(Tensor(storage, {}), "zero"))
                                       .add_node("QuantizeLinear", {"x", "scale", "zero"}, {"q"})
                                       .add_node("DequantizeLinear", {"q", "scale", "zero"}, {"y"})
                                       .build();
    const std::vector<float> got = run_one(model, Tensor::from_floats({n}, values));
    const Quantizer quantizer(format, scale, 0);
    for (size_t i = 0; i < values.size(); ++i) {
      EXPECT_EQ(got[i], quantizer.fake_quantize(values[i])) << format_traits(format).name << " " << values[i];
    }
  }
}

}  // namespace
}  // namespace mixprec

