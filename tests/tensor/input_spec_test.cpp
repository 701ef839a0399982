#include "mixprec/input_spec.h"

#include <gtest/gtest.h>

#include <string>

#include "mixprec/error.h"

namespace mixprec {
namespace {

// Runs `f` and returns the what() of the mixprec::Error kBadInput it must throw.
template <typename F>
std::string bad_input_message(F&& f) {
  try {
    f();
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::kBadInput) << error.what();
    return error.what();
  }
  ADD_FAILURE() << "no error thrown";
  return "";
}

const InputSpec kImage = {"x", DType::kFloat32, {1, 3, -1, -1}, {"", "", "height", ""}};

TEST(ShapeResolve, KeepsStaticShapes) {
  const InputSpec ids = {"ids", DType::kInt64, {1, 16}, {}};
  EXPECT_EQ(resolve_shape(ids, {}, "m.onnx"), (Shape{1, 16}));
  EXPECT_EQ(resolve_shape({"s", DType::kFloat32, {}, {}}, {}, "m.onnx"), Shape{});
}

TEST(ShapeResolve, DynamicShapeNeedsAnOverride) {
  EXPECT_EQ(bad_input_message([] { resolve_shape(kImage, {{"other", {1}}}, "models/det.onnx"); }),
            "models/det.onnx: input 'x' has dynamic dimension(s) height, dim3 in 1x3x?x?; "
            "give --input-shape x=1x3x<height>x<dim3>");
}

TEST(ShapeResolve, AppliesAMatchingOverride) {
  EXPECT_EQ(resolve_shape(kImage, {{"x", {1, 3, 48, 192}}}, "m.onnx"), (Shape{1, 3, 48, 192}));
}

TEST(ShapeResolve, RejectsOverridesThatContradictTheModel) {
  EXPECT_EQ(bad_input_message([] { resolve_shape(kImage, {{"x", {1, 3, 48}}}, "m.onnx"); }),
            "m.onnx: input 'x': --input-shape x=1x3x48 gives 3 dims, the model input has 4 (1x3x?x?)");
  EXPECT_EQ(bad_input_message([] { resolve_shape(kImage, {{"x", {1, 4, 48, 192}}}, "m.onnx"); }),
            "m.onnx: input 'x': --input-shape x=1x4x48x192 sets dim 1 (dim1) to 4, the model fixes it at 3 "
            "(1x3x?x?)");
  EXPECT_EQ(bad_input_message([] { resolve_shape(kImage, {{"x", {1, 3, 0, 192}}}, "m.onnx"); }),
            "m.onnx: input 'x': --input-shape x=1x3x0x192 must give dim 2 (height) a positive size");
}

TEST(ShapeParse, ParsesNamesAndDims) {
  const auto shapes = parse_input_shapes({"x=1x3x48x192", "a=b=7", "ids=2x16"});
  EXPECT_EQ(shapes, (std::map<std::string, Shape>{{"x", {1, 3, 48, 192}}, {"a=b", {7}}, {"ids", {2, 16}}}));
  EXPECT_TRUE(parse_input_shapes({}).empty());
}

TEST(ShapeParse, RejectsMalformedSpecsQuotingThem) {
  const std::pair<const char*, const char*> cases[] = {
      {"x", "--input-shape 'x': expected NAME=D1xD2x..., e.g. x=1x3x48x192"},
      {"=1x2", "--input-shape '=1x2': expected NAME=D1xD2x..., e.g. x=1x3x48x192"},
      {"x=", "--input-shape 'x=': no dimensions after '='"},
      {"x=1xx2", "--input-shape 'x=1xx2': '' is not a positive integer"},
      {"x=1x-2", "--input-shape 'x=1x-2': '-2' is not a positive integer"},
      {"x=0x2", "--input-shape 'x=0x2': '0' is not a positive integer"},
      {"x=1x2a", "--input-shape 'x=1x2a': '2a' is not a positive integer"},
      {"x=1x3X4", "--input-shape 'x=1x3X4': '3X4' is not a positive integer"},
      {"x=99999999999999999999", "--input-shape 'x=99999999999999999999': '99999999999999999999' is not a positive integer"},
  };
  for (const auto& [spec, message] : cases) {
    const std::string text = spec;  // a structured binding cannot be captured before clang 16
    EXPECT_EQ(bad_input_message([&] { parse_input_shapes({text}); }), message);
  }
  EXPECT_EQ(bad_input_message([] { parse_input_shapes({"x=1", "x=2"}); }),
            "--input-shape 'x=2': input 'x' is given twice");
}

}  // namespace
}  // namespace mixprec
