#include "mixprec/image_source.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <iterator>

#include "common/text.h"
#include "mixprec/error.h"
#include "tensor/data_paths.h"
#include "tensor/image_decode.h"

namespace mixprec {
namespace fs = std::filesystem;
namespace {

using Layout = ImagePreprocess::Layout;
using ChannelOrder = ImagePreprocess::ChannelOrder;
using Resize = ImagePreprocess::Resize;

constexpr int64_t kChannels = 3;
constexpr std::array<float, 3> kImagenetMean{0.485f, 0.456f, 0.406f};
constexpr std::array<float, 3> kImagenetStd{0.229f, 0.224f, 0.225f};

struct PresetRow {
  std::string_view name;
  ImagePreprocess preprocess;
};

constexpr PresetRow kPresets[] = {
    {"imagenet", {.mean = kImagenetMean, .std = kImagenetStd}},
    {"ppocr_det", {.order = ChannelOrder::kBGR, .mean = kImagenetMean, .std = kImagenetStd}},
    {"ppocr_cls_rec",
     {.order = ChannelOrder::kBGR,
      .mean = {0.5f, 0.5f, 0.5f},
      .std = {0.5f, 0.5f, 0.5f},
      .resize = Resize::kKeepAspectPad}},
    {"raw", {.scale = 1.0f}},
};

// The enum tables below hold one row per enum value, in declaration order (checked by
// static_assert), so a value indexes its row.
template <typename Row, size_t N>
constexpr bool indexed_by_key(const Row (&table)[N]) {
  for (size_t i = 0; i < N; ++i) {
    if (static_cast<size_t>(table[i].key) != i) return false;
  }
  return true;
}
template <typename Row, size_t N, typename Key>
const Row& row_of(const Row (&table)[N], Key key) {
  return table[static_cast<size_t>(key)];
}

struct LayoutRow {
  Layout key;
  const char* name;
  // Axes of the rank-4 input; batch is axis 0 in both layouts.
  size_t channel_axis, height_axis, width_axis;
};
constexpr LayoutRow kLayouts[] = {
    {Layout::kNCHW, "NCHW", 1, 2, 3},
    {Layout::kNHWC, "NHWC", 3, 1, 2},
};
static_assert(indexed_by_key(kLayouts));

struct OrderRow {
  ChannelOrder key;
  const char* name;
  std::array<size_t, 3> source;  // output channel c takes RGB channel source[c]
};
constexpr OrderRow kOrders[] = {
    {ChannelOrder::kRGB, "RGB", {0, 1, 2}},
    {ChannelOrder::kBGR, "BGR", {2, 1, 0}},
};
static_assert(indexed_by_key(kOrders));

int64_t stretch_width(int64_t /*picture_height*/, int64_t /*picture_width*/, int64_t /*height*/, int64_t width) {
  return width;
}
// PaddleOCR's resize_norm_img: ceil(imgH * w / float(h)) in double precision, at most imgW.
int64_t keep_aspect_width(int64_t picture_height, int64_t picture_width, int64_t height, int64_t width) {
  const double ratio = static_cast<double>(picture_width) / static_cast<double>(picture_height);
  return std::min(width, static_cast<int64_t>(std::ceil(static_cast<double>(height) * ratio)));
}

struct ResizeRow {
  Resize key;
  const char* name;
  // Columns the resized picture fills in a height x width output; the rest is padding.
  int64_t (*content_width)(int64_t picture_height, int64_t picture_width, int64_t height, int64_t width);
};
constexpr ResizeRow kResizes[] = {
    {Resize::kStretch, "stretched", stretch_width},
    {Resize::kKeepAspectPad, "aspect kept, right-padded", keep_aspect_width},
};
static_assert(indexed_by_key(kResizes));

void check_preprocess(const ImagePreprocess& p) {
  if (p.height < 0 || p.width < 0) {
    throw_bad_input("", "image size " + std::to_string(p.height) + "x" + std::to_string(p.width) +
                            " is negative (0 takes the model's size)");
  }
  const auto finite = [](float v) { return std::isfinite(v); };
  if (!finite(p.scale) || !std::all_of(p.mean.begin(), p.mean.end(), finite) ||
      !std::all_of(p.std.begin(), p.std.end(), finite)) {
    throw_bad_input("", "image scale, mean and std must be finite numbers");
  }
  if (std::find(p.std.begin(), p.std.end(), 0.0f) != p.std.end()) throw_bad_input("", "image std has a 0 entry");
}

bool fits_layout(const Shape& shape, const LayoutRow& layout) {
  return shape.size() == 4 && (shape[layout.channel_axis] == kChannels || shape[layout.channel_axis] < 0);
}

// The shape the picture is fed with: batch 1, 3 channels, the preprocess size or the model's.
Shape image_input_shape(const std::vector<InputSpec>& inputs, const ImagePreprocess& preprocess) {
  if (inputs.size() != 1) {
    const std::string names = text::join_each(inputs, [](const InputSpec& in) { return in.name; });
    throw_unsupported("", "image folders feed single-image-input models; this model has " +
                              std::to_string(inputs.size()) + " inputs (" + names +
                              "): give .npz files keyed by input name");
  }
  const InputSpec& spec = inputs[0];
  const LayoutRow& layout = row_of(kLayouts, preprocess.layout);
  const std::string what = "input '" + spec.name + "' (" + dtype_name(spec.dtype) + " " +
                           shape_to_string(spec.shape) + ")";
  if (!fits_layout(spec.shape, layout) || !dtype_traits(spec.dtype).is_float) {
    std::string hint;
    if (!fits_layout(spec.shape, layout)) {
      for (const auto& other : kLayouts) {
        if (fits_layout(spec.shape, other)) hint = "; its shape fits the " + std::string(other.name) + " layout";
      }
    }
    throw_unsupported("", "image folders feed single-image-input models; " + what +
                              " is not a float image in " + layout.name + " layout with 3 channels" + hint);
  }
  if (spec.shape[0] >= 0 && spec.shape[0] != 1) {
    throw_unsupported("", "image folders feed one picture per sample; " + what + " has batch " +
                              std::to_string(spec.shape[0]));
  }
  Shape shape(4);
  shape[0] = 1;
  shape[layout.channel_axis] = kChannels;
  const struct {
    size_t axis;
    int64_t requested;
    const char* name;
  } sides[] = {{layout.height_axis, preprocess.height, "height"}, {layout.width_axis, preprocess.width, "width"}};
  for (const auto& side : sides) {
    const int64_t model = spec.shape[side.axis];
    if (side.requested == 0 && model < 0) {
      throw_bad_input("", what + " has a dynamic " + side.name + ": give the picture size with --image-size HxW");
    }
    if (side.requested > 0 && model > 0 && side.requested != model) {
      throw_bad_input("", what + " has " + side.name + " " + std::to_string(model) + ", the image size asks for " +
                              std::to_string(side.requested));
    }
    shape[side.axis] = side.requested > 0 ? side.requested : model;
  }
  return shape;
}

// One output pixel's source along an axis: in[lo] * (1 - frac) + in[hi] * frac.
struct Tap {
  size_t lo, hi;
  float frac;
};

// cv2 INTER_LINEAR's taps: half-pixel centres, position computed in float, clamped at edges.
std::vector<Tap> linear_taps(int64_t in_size, int64_t out_size) {
  const double step = static_cast<double>(in_size) / static_cast<double>(out_size);
  std::vector<Tap> taps(static_cast<size_t>(out_size));
  for (int64_t o = 0; o < out_size; ++o) {
    const float pos = static_cast<float>((static_cast<double>(o) + 0.5) * step - 0.5);
    const float floor_pos = std::floor(pos);
    int64_t lo = static_cast<int64_t>(floor_pos);
    float frac = pos - floor_pos;
    if (lo < 0) {
      lo = 0;
      frac = 0.0f;
    }
    if (lo >= in_size - 1) {
      lo = in_size - 1;
      frac = 0.0f;
    }
    taps[static_cast<size_t>(o)] = {static_cast<size_t>(lo), static_cast<size_t>(std::min(lo + 1, in_size - 1)), frac};
  }
  return taps;
}

RgbImage resize_bilinear(const RgbImage& in, int64_t height, int64_t width) {
  const std::vector<Tap> rows = linear_taps(in.height, height);
  const std::vector<Tap> cols = linear_taps(in.width, width);
  RgbImage out{.height = height, .width = width};
  out.pixels.resize(static_cast<size_t>(height * width * kChannels));
  const auto at = [&](size_t y, size_t x, size_t c) {
    return static_cast<float>(in.pixels[(y * static_cast<size_t>(in.width) + x) * kChannels + c]);
  };
  uint8_t* dst = out.pixels.data();
  for (const Tap& r : rows) {
    for (const Tap& q : cols) {
      for (size_t c = 0; c < kChannels; ++c) {
        const float top = at(r.lo, q.lo, c) * (1.0f - q.frac) + at(r.lo, q.hi, c) * q.frac;
        const float bottom = at(r.hi, q.lo, c) * (1.0f - q.frac) + at(r.hi, q.hi, c) * q.frac;
        // A convex combination of 0..255 values: the rounded result stays in 0..255.
        *dst++ = static_cast<uint8_t>(std::floor(top * (1.0f - r.frac) + bottom * r.frac + 0.5f));
      }
    }
  }
  return out;
}

class ImageSource : public SampleSource {
 public:
  ImageSource(std::vector<std::string> files, const InputSpec& spec, Shape shape, const ImagePreprocess& preprocess)
      : files_(std::move(files)), name_(spec.name), dtype_(spec.dtype), shape_(std::move(shape)),
        preprocess_(preprocess) {}

  size_t size() const override { return files_.size(); }

  NamedTensors sample(size_t index) const override {
    const LayoutRow& layout = row_of(kLayouts, preprocess_.layout);
    const int64_t height = shape_[layout.height_axis];
    const int64_t width = shape_[layout.width_axis];
    const RgbImage picture = decode_image_rgb(files_.at(index));
    const int64_t content_width =
        row_of(kResizes, preprocess_.resize).content_width(picture.height, picture.width, height, width);
    const RgbImage resized = resize_bilinear(picture, height, content_width);

    // Row-major strides of the rank-4 shape, picked by axis: one loop serves both layouts.
    std::array<size_t, 4> strides{};
    size_t numel = 1;
    for (size_t axis = 4; axis-- > 0;) {
      strides[axis] = numel;
      numel *= static_cast<size_t>(shape_[axis]);
    }
    const size_t y_stride = strides[layout.height_axis];
    const size_t x_stride = strides[layout.width_axis];
    const size_t c_stride = strides[layout.channel_axis];
    const std::array<size_t, 3>& source = row_of(kOrders, preprocess_.order).source;

    std::vector<float> values(numel, 0.0f);  // padding columns stay 0 after normalization
    const uint8_t* pixel = resized.pixels.data();
    for (size_t y = 0; y < static_cast<size_t>(height); ++y) {
      for (size_t x = 0; x < static_cast<size_t>(content_width); ++x, pixel += kChannels) {
        for (size_t c = 0; c < kChannels; ++c) {
          values[y * y_stride + x * x_stride + c * c_stride] =
              (static_cast<float>(pixel[source[c]]) * preprocess_.scale - preprocess_.mean[c]) / preprocess_.std[c];
        }
      }
    }
    NamedTensors out;
    out.emplace_back(name_, Tensor::from_floats(dtype_, shape_, values));
    return out;
  }

  std::string describe() const override {
    return std::to_string(files_.size()) + (files_.size() == 1 ? " image" : " images") + " as " +
           shape_to_string(shape_) + " " + row_of(kOrders, preprocess_.order).name + " (" +
           row_of(kResizes, preprocess_.resize).name + ")";
  }

 private:
  std::vector<std::string> files_;
  std::string name_;
  DType dtype_;
  Shape shape_;
  ImagePreprocess preprocess_;
};

}  // namespace

std::optional<ImagePreprocess> image_preprocess_preset(std::string_view name) {
  for (const auto& row : kPresets) {
    if (row.name == name) return row.preprocess;
  }
  return std::nullopt;
}

std::vector<std::string_view> image_preprocess_preset_names() {
  std::vector<std::string_view> names;
  for (const auto& row : kPresets) names.push_back(row.name);
  return names;
}

std::unique_ptr<SampleSource> make_image_source(const std::vector<std::string>& paths,
                                                const std::vector<InputSpec>& inputs,
                                                const ImagePreprocess& preprocess) {
  check_preprocess(preprocess);
  Shape shape = image_input_shape(inputs, preprocess);
  if (paths.empty()) throw_bad_input("", "no picture files or folders given");
  std::vector<std::string> files = data_paths::expand(paths, data_paths::kPictureExtensions, "pictures");
  for (const auto& file : files) check_image_header(file);
  return std::make_unique<ImageSource>(std::move(files), inputs[0], std::move(shape), preprocess);
}

}  // namespace mixprec
