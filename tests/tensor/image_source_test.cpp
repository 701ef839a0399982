#include "mixprec/image_source.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>

#include "mixprec/error.h"

// Test pictures are written here, never stored in the repository. /usr/include is a system
// include directory, so the writer's own warnings stay out of our -Werror build.
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image_write.h>
#include "support/temp_dir.h"

namespace mixprec {
namespace {
namespace fs = std::filesystem;

using Layout = ImagePreprocess::Layout;
using ChannelOrder = ImagePreprocess::ChannelOrder;
using Resize = ImagePreprocess::Resize;

// Pixel values 0..255 without scaling: results are exact small integers or halves.
constexpr ImagePreprocess kRaw{.scale = 1.0f};

InputSpec image_input(Shape shape, DType dtype = DType::kFloat32) {
  return InputSpec{.name = "x", .dtype = dtype, .shape = std::move(shape)};
}

Error error_from(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no mixprec::Error thrown";
  return Error(ErrorKind::kInternal, "", "");
}

// The only tensor of sample `index` as floats, after checking its name and shape.
std::vector<float> values(const SampleSource& source, size_t index, const Shape& shape) {
  const NamedTensors sample = source.sample(index);
  EXPECT_EQ(sample.size(), 1u);
  EXPECT_EQ(sample.at(0).first, "x");
  EXPECT_EQ(sample.at(0).second.shape(), shape);
  return sample.at(0).second.to_floats();
}

class ImageSourceTest : public testing::TempDirTest {
 protected:


  // `pixels`: height * width * channels bytes, row-major, channels interleaved.
  std::string write_png(const std::string& name, int width, int height, int channels,
                        const std::vector<uint8_t>& pixels) const {
    const std::string file = path(name);
    EXPECT_TRUE(stbi_write_png(file.c_str(), width, height, channels, pixels.data(), width * channels));
    return file;
  }
  std::string write_bmp(const std::string& name, int width, int height, const std::vector<uint8_t>& rgb) const {
    const std::string file = path(name);
    EXPECT_TRUE(stbi_write_bmp(file.c_str(), width, height, 3, rgb.data()));
    return file;
  }
  std::string write_text(const std::string& name, const std::string& text) const {
    const std::string file = path(name);
    std::ofstream(file, std::ios::binary) << text;
    return file;
  }

};

// A 2x2 RGB picture: (50,100,150) (10,20,30) / (0,0,0) (255,255,255).
const std::vector<uint8_t> kTwoByTwo = {50, 100, 150, 10, 20, 30, 0, 0, 0, 255, 255, 255};

TEST(PreprocessPresetTest, TableHoldsTheDocumentedPresets) {
  const std::vector<std::string_view> names = image_preprocess_preset_names();
  EXPECT_EQ(names, (std::vector<std::string_view>{"imagenet", "ppocr_det", "ppocr_cls_rec", "raw"}));

  const auto imagenet = image_preprocess_preset("imagenet");
  ASSERT_TRUE(imagenet);
  EXPECT_EQ(imagenet->order, ChannelOrder::kRGB);
  EXPECT_EQ(imagenet->layout, Layout::kNCHW);
  EXPECT_EQ(imagenet->resize, Resize::kStretch);
  EXPECT_EQ(imagenet->scale, 1.0f / 255);
  EXPECT_EQ(imagenet->mean, (std::array<float, 3>{0.485f, 0.456f, 0.406f}));
  EXPECT_EQ(imagenet->std, (std::array<float, 3>{0.229f, 0.224f, 0.225f}));
  EXPECT_EQ(imagenet->height, 0);
  EXPECT_EQ(imagenet->width, 0);

  const auto det = image_preprocess_preset("ppocr_det");
  ASSERT_TRUE(det);
  EXPECT_EQ(det->order, ChannelOrder::kBGR);
  EXPECT_EQ(det->resize, Resize::kStretch);
  EXPECT_EQ(det->scale, imagenet->scale);
  EXPECT_EQ(det->mean, imagenet->mean);
  EXPECT_EQ(det->std, imagenet->std);

  const auto rec = image_preprocess_preset("ppocr_cls_rec");
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->order, ChannelOrder::kBGR);
  EXPECT_EQ(rec->resize, Resize::kKeepAspectPad);
  EXPECT_EQ(rec->mean, (std::array<float, 3>{0.5f, 0.5f, 0.5f}));
  EXPECT_EQ(rec->std, (std::array<float, 3>{0.5f, 0.5f, 0.5f}));

  const auto raw = image_preprocess_preset("raw");
  ASSERT_TRUE(raw);
  EXPECT_EQ(raw->order, ChannelOrder::kRGB);
  EXPECT_EQ(raw->scale, 1.0f);
  EXPECT_EQ(raw->mean, (std::array<float, 3>{0, 0, 0}));
  EXPECT_EQ(raw->std, (std::array<float, 3>{1, 1, 1}));
}

TEST(PreprocessPresetTest, UnknownNameHasNoPreset) {
  EXPECT_FALSE(image_preprocess_preset("ppocr"));
  EXPECT_FALSE(image_preprocess_preset(""));
  EXPECT_FALSE(image_preprocess_preset("ImageNet"));
}

TEST_F(ImageSourceTest, NormalizesPerOutputChannelInBgrNchw) {
  const std::string file = write_png("a.png", 2, 2, 3, kTwoByTwo);
  const ImagePreprocess bgr{.order = ChannelOrder::kBGR, .scale = 1.0f, .mean = {10, 20, 30}, .std = {2, 4, 5}};
  const auto source = make_image_source({file}, {image_input({1, 3, 2, 2})}, bgr);
  ASSERT_EQ(source->size(), 1u);
  // Channel 0 is blue: (B - 10) / 2; channel 1 green: (G - 20) / 4; channel 2 red: (R - 30) / 5.
  EXPECT_EQ(values(*source, 0, {1, 3, 2, 2}), (std::vector<float>{70, 10, -5, 122.5f,  //
                                                                  20, 0, -5, 58.75f,   //
                                                                  4, -4, -6, 45}));
}

TEST_F(ImageSourceTest, NhwcInterleavesChannels) {
  const std::string file = write_png("a.png", 2, 2, 3, kTwoByTwo);
  ImagePreprocess nhwc = kRaw;
  nhwc.layout = Layout::kNHWC;
  const auto source = make_image_source({file}, {image_input({1, 2, 2, 3})}, nhwc);
  EXPECT_EQ(values(*source, 0, {1, 2, 2, 3}), (std::vector<float>{50, 100, 150, 10, 20, 30, 0, 0, 0, 255, 255, 255}));
}

TEST_F(ImageSourceTest, ScaleMeanStdOfPpocrClsRec) {
  // 1x1 picture (R,G,B) = (0,51,255) into 1x4: keep aspect gives 1 column, 3 columns of padding.
  const std::string file = write_png("a.png", 1, 1, 3, {0, 51, 255});
  const auto source = make_image_source({file}, {image_input({1, 3, 1, 4})}, *image_preprocess_preset("ppocr_cls_rec"));
  const std::vector<float> got = values(*source, 0, {1, 3, 1, 4});
  // (x/255 - 0.5) / 0.5 in float32: within an ulp or two of the exact value.
  constexpr float kFloatTolerance = 1e-6f;
  const std::vector<float> want{1.0f, 0, 0, 0, -0.6f, 0, 0, 0, -1.0f, 0, 0, 0};
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], kFloatTolerance) << "element " << i;
}

TEST_F(ImageSourceTest, BilinearUpscaleMatchesHandComputedValues) {
  // Red 0 160 / 80 240; green = 255 - red; blue = red.
  const std::string file = write_png("a.png", 2, 2, 3, {0, 255, 0, 160, 95, 160, 80, 175, 80, 240, 15, 240});
  const auto source = make_image_source({file}, {image_input({1, 3, 4, 4})}, kRaw);
  const std::vector<float> got = values(*source, 0, {1, 3, 4, 4});
  // Half-pixel centres: output 0..3 samples input 0 (clamped), 0.25, 0.75, 1 (clamped), so a
  // row a b becomes a, .75a+.25b, .25a+.75b, b; the same down the columns.
  const std::vector<float> red{0,  40,  120, 160,  //
                               20, 60,  140, 180,  //
                               60, 100, 180, 220,  //
                               80, 120, 200, 240};
  for (size_t i = 0; i < 16; ++i) {
    EXPECT_EQ(got[i], red[i]) << "red " << i;
    EXPECT_EQ(got[16 + i], 255 - red[i]) << "green " << i;
    EXPECT_EQ(got[32 + i], red[i]) << "blue " << i;
  }
}

TEST_F(ImageSourceTest, BilinearDownscaleAveragesAndRoundsHalfUp) {
  // 4x1 red 10 15 100 201 to 2x1: outputs sample 0.5 and 2.5 -> 12.5 and 150.5, kept 8-bit.
  const std::string file = write_png("a.png", 4, 1, 3, {10, 0, 0, 15, 0, 0, 100, 0, 0, 201, 0, 0});
  const auto source = make_image_source({file}, {image_input({1, 3, 1, 2})}, kRaw);
  EXPECT_EQ(values(*source, 0, {1, 3, 1, 2}), (std::vector<float>{13, 151, 0, 0, 0, 0}));
}

TEST_F(ImageSourceTest, KeepAspectPadFillsRightColumnsWithZero) {
  // 5 wide, 3 high into 4 x 16: ceil(4 * 5 / 3) = 7 columns of picture, 9 of padding.
  std::vector<uint8_t> rgb;
  for (int i = 0; i < 15; ++i) rgb.insert(rgb.end(), {200, 100, 50});
  const std::string file = write_png("a.png", 5, 3, 3, rgb);
  const ImagePreprocess pad{.scale = 1.0f, .mean = {10, 10, 10}, .resize = Resize::kKeepAspectPad};
  const auto source = make_image_source({file}, {image_input({1, 3, 4, 16})}, pad);
  const std::vector<float> got = values(*source, 0, {1, 3, 4, 16});
  const float content[] = {190, 90, 40};
  for (size_t c = 0; c < 3; ++c) {
    for (size_t y = 0; y < 4; ++y) {
      for (size_t x = 0; x < 16; ++x) {
        EXPECT_EQ(got[(c * 4 + y) * 16 + x], x < 7 ? content[c] : 0.0f) << "c " << c << " y " << y << " x " << x;
      }
    }
  }
}

TEST_F(ImageSourceTest, KeepAspectPadSqueezesWidePictures) {
  // 8 wide, 1 high into 2 x 4: ceil(2 * 8) = 16 > 4 columns, so the picture fills all 4.
  std::vector<uint8_t> rgb;
  for (int i = 0; i < 8; ++i) rgb.insert(rgb.end(), {200, 200, 200});
  const std::string file = write_png("a.png", 8, 1, 3, rgb);
  ImagePreprocess pad = kRaw;
  pad.resize = Resize::kKeepAspectPad;
  const auto source = make_image_source({file}, {image_input({1, 3, 2, 4})}, pad);
  EXPECT_EQ(values(*source, 0, {1, 3, 2, 4}), std::vector<float>(24, 200.0f));
}

TEST_F(ImageSourceTest, GrayAlphaAndBmpPicturesBecomeRgb) {
  ImagePreprocess nhwc = kRaw;
  nhwc.layout = Layout::kNHWC;
  const InputSpec pixel = image_input({1, 1, 1, 3});
  const auto gray = make_image_source({write_png("gray.png", 1, 1, 1, {77})}, {pixel}, nhwc);
  EXPECT_EQ(values(*gray, 0, {1, 1, 1, 3}), (std::vector<float>{77, 77, 77}));
  const auto gray_alpha = make_image_source({write_png("ga.png", 1, 1, 2, {77, 0})}, {pixel}, nhwc);
  EXPECT_EQ(values(*gray_alpha, 0, {1, 1, 1, 3}), (std::vector<float>{77, 77, 77}));
  const auto rgba = make_image_source({write_png("rgba.png", 1, 1, 4, {10, 20, 30, 0})}, {pixel}, nhwc);
  EXPECT_EQ(values(*rgba, 0, {1, 1, 1, 3}), (std::vector<float>{10, 20, 30}));
  const auto bmp = make_image_source({write_bmp("rgb.bmp", 1, 1, {1, 2, 3})}, {pixel}, nhwc);
  EXPECT_EQ(values(*bmp, 0, {1, 1, 1, 3}), (std::vector<float>{1, 2, 3}));
}

TEST_F(ImageSourceTest, FolderExpandsToItsPicturesSortedByName) {
  write_png("b.png", 1, 1, 3, {2, 2, 2});
  write_bmp("a.BMP", 1, 1, {1, 1, 1});
  const std::string jpeg = path("c.jpeg");
  const std::vector<uint8_t> gray_8x8(8 * 8 * 3, 128);
  ASSERT_TRUE(stbi_write_jpg(jpeg.c_str(), 8, 8, 3, gray_8x8.data(), 100));
  write_text("notes.txt", "not a picture");
  fs::create_directories(dir_ / "nested");
  write_png("nested/d.png", 1, 1, 3, {4, 4, 4});

  const auto source = make_image_source({dir_.string()}, {image_input({1, 3, 1, 1})}, kRaw);
  ASSERT_EQ(source->size(), 3u);
  EXPECT_EQ(values(*source, 0, {1, 3, 1, 1}), (std::vector<float>{1, 1, 1}));
  EXPECT_EQ(values(*source, 1, {1, 3, 1, 1}), (std::vector<float>{2, 2, 2}));
  // A flat JPEG block decodes to its value up to rounding in the DCT.
  constexpr float kJpegTolerance = 1.0f;
  for (float v : values(*source, 2, {1, 3, 1, 1})) EXPECT_NEAR(v, 128.0f, kJpegTolerance);
  EXPECT_EQ(source->describe(), "3 images as 1x3x1x1 RGB (stretched)");
  EXPECT_FALSE(source->is_random());
}

TEST_F(ImageSourceTest, SamplesAreDecodedOnDemandNotCached) {
  const std::string file = write_png("a.png", 1, 1, 3, {1, 2, 3});
  const auto source = make_image_source({file}, {image_input({1, 3, 1, 1})}, kRaw);
  EXPECT_EQ(source->sample(0), source->sample(0));
  write_png("a.png", 1, 1, 3, {4, 5, 6});
  EXPECT_EQ(values(*source, 0, {1, 3, 1, 1}), (std::vector<float>{4, 5, 6}));
}

TEST_F(ImageSourceTest, DynamicDimsTakeTheGivenSizeAndBatchOne) {
  const std::string file = write_png("a.png", 2, 2, 3, kTwoByTwo);
  ImagePreprocess sized = kRaw;
  sized.height = 6;
  sized.width = 8;
  const auto source = make_image_source({file}, {image_input({-1, -1, -1, -1}, DType::kFloat16)}, sized);
  const NamedTensors sample = source->sample(0);
  EXPECT_EQ(sample.at(0).second.dtype(), DType::kFloat16);
  EXPECT_EQ(sample.at(0).second.shape(), (Shape{1, 3, 6, 8}));
  // A size equal to the model's static dims is fine too.
  EXPECT_EQ(make_image_source({file}, {image_input({1, 3, 6, 8})}, sized)->size(), 1u);
}

TEST_F(ImageSourceTest, DynamicSizeWithoutImageSizeIsBadInput) {
  const std::string file = write_png("a.png", 2, 2, 3, kTwoByTwo);
  const Error e = error_from([&] { make_image_source({file}, {image_input({1, 3, 48, -1})}, kRaw); });
  EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
  EXPECT_NE(e.message().find("dynamic width"), std::string::npos) << e.what();
  EXPECT_NE(e.message().find("--image-size HxW"), std::string::npos) << e.what();
}

TEST_F(ImageSourceTest, SizeContradictingStaticDimsIsBadInput) {
  const std::string file = write_png("a.png", 2, 2, 3, kTwoByTwo);
  ImagePreprocess sized = kRaw;
  sized.height = 32;
  const Error e = error_from([&] { make_image_source({file}, {image_input({1, 3, 48, 192})}, sized); });
  EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
  EXPECT_NE(e.message().find("height 48"), std::string::npos) << e.what();
}

TEST_F(ImageSourceTest, ModelsWithoutOneImageInputAreUnsupported) {
  const std::string file = write_png("a.png", 2, 2, 3, kTwoByTwo);
  const auto kind_and_message = [&](const std::vector<InputSpec>& inputs, const ImagePreprocess& p) {
    const Error e = error_from([&] { make_image_source({file}, inputs, p); });
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported) << e.what();
    EXPECT_NE(e.message().find("single-image-input"), std::string::npos) << e.what();
    return e.message();
  };
  InputSpec second = image_input({1, 3, 2, 2});
  second.name = "y";
  EXPECT_NE(kind_and_message({image_input({1, 3, 2, 2}), second}, kRaw).find("2 inputs (x, y)"), std::string::npos);
  kind_and_message({image_input({1, 10})}, kRaw);
  kind_and_message({image_input({1, 1, 2, 2})}, kRaw);
  kind_and_message({image_input({1, 3, 2, 2}, DType::kInt64)}, kRaw);
  EXPECT_NE(kind_and_message({image_input({1, 2, 2, 3})}, kRaw).find("fits the NHWC layout"), std::string::npos);

  const Error batch = error_from([&] { make_image_source({file}, {image_input({2, 3, 2, 2})}, kRaw); });
  EXPECT_EQ(batch.kind(), ErrorKind::kUnsupported);
  EXPECT_NE(batch.message().find("batch 2"), std::string::npos) << batch.what();
}

TEST_F(ImageSourceTest, FileThatIsNotAPictureIsBadInputNamingIt) {
  const std::string file = write_text("fake.png", "this is text, not a PNG");
  const Error e = error_from([&] { make_image_source({file}, {image_input({1, 3, 2, 2})}, kRaw); });
  EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
  EXPECT_EQ(e.file(), file);
  EXPECT_NE(e.message().find("not a PNG, JPEG or BMP picture"), std::string::npos) << e.what();
}

TEST_F(ImageSourceTest, CorruptPixelDataFailsWhenSampled) {
  // A valid header with the pixel data cut off passes the up-front check, then fails to decode.
  std::vector<uint8_t> noise(64 * 64 * 3);
  for (size_t i = 0; i < noise.size(); ++i) noise[i] = static_cast<uint8_t>(i * 7919 % 251);
  const std::string file = write_png("cut.png", 64, 64, 3, noise);
  fs::resize_file(file, fs::file_size(file) / 2);
  const auto source = make_image_source({file}, {image_input({1, 3, 2, 2})}, kRaw);
  const Error e = error_from([&] { source->sample(0); });
  EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
  EXPECT_EQ(e.file(), file);
}

TEST_F(ImageSourceTest, MissingPathsAndEmptyFoldersAreRejected) {
  const InputSpec input = image_input({1, 3, 2, 2});
  EXPECT_EQ(error_from([&] { make_image_source({path("missing.png")}, {input}, kRaw); }).kind(), ErrorKind::kIo);
  EXPECT_EQ(error_from([&] { make_image_source({dir_.string()}, {input}, kRaw); }).kind(), ErrorKind::kBadInput);
  EXPECT_EQ(error_from([&] { make_image_source({}, {input}, kRaw); }).kind(), ErrorKind::kBadInput);
}

TEST_F(ImageSourceTest, InvalidPreprocessIsBadInput) {
  const std::string file = write_png("a.png", 2, 2, 3, kTwoByTwo);
  const InputSpec input = image_input({1, 3, 2, 2});
  ImagePreprocess zero_std = kRaw;
  zero_std.std[1] = 0;
  EXPECT_EQ(error_from([&] { make_image_source({file}, {input}, zero_std); }).kind(), ErrorKind::kBadInput);
  ImagePreprocess nan_mean = kRaw;
  nan_mean.mean[0] = std::nanf("");
  EXPECT_EQ(error_from([&] { make_image_source({file}, {input}, nan_mean); }).kind(), ErrorKind::kBadInput);
  ImagePreprocess negative = kRaw;
  negative.width = -1;
  EXPECT_EQ(error_from([&] { make_image_source({file}, {input}, negative); }).kind(), ErrorKind::kBadInput);
}

// The pictures scripts/setup.sh puts in third_party/data/calib, as PP-OCR det sees them.
TEST(ImageRealData, CalibrationPicturesThroughPpocrDetPreset) {
  const fs::path calib = fs::path(__FILE__).parent_path() / ".." / ".." / "third_party" / "data" / "calib";
  if (!fs::is_directory(calib)) GTEST_SKIP() << calib << " is missing: run scripts/setup.sh";
  ImagePreprocess det = *image_preprocess_preset("ppocr_det");
  det.height = 320;
  det.width = 320;
  const auto source = make_image_source({calib.string()}, {image_input({-1, 3, -1, -1})}, det);
  ASSERT_GE(source->size(), 4u) << "calibration wants at least 4 samples";
  for (size_t i = 0; i < source->size(); ++i) {
    const std::vector<float> got = values(*source, i, {1, 3, 320, 320});
    for (size_t c = 0; c < 3; ++c) {
      // Pixels 0..255 map to [-mean/std, (1 - mean)/std]; a tiny margin for float rounding.
      constexpr float kMargin = 1e-5f;
      const float low = -det.mean[c] / det.std[c] - kMargin;
      const float high = (1.0f - det.mean[c]) / det.std[c] + kMargin;
      float seen_min = high, seen_max = low;
      for (size_t k = c * 320 * 320; k < (c + 1) * 320 * 320; ++k) {
        ASSERT_TRUE(std::isfinite(got[k])) << "sample " << i << " element " << k;
        ASSERT_GE(got[k], low) << "sample " << i << " element " << k;
        ASSERT_LE(got[k], high) << "sample " << i << " element " << k;
        seen_min = std::min(seen_min, got[k]);
        seen_max = std::max(seen_max, got[k]);
      }
      // Real pictures have contrast: at least a quarter of the 0..255 range in every channel.
      EXPECT_GT(seen_max - seen_min, 0.25f / det.std[c]) << "sample " << i << " channel " << c;
    }
  }
}

}  // namespace
}  // namespace mixprec
