// Image files as model input: a folder of pictures, decoded, resized and normalized one at a
// time, for calibration and evaluation on real data.
//
// Decoding: PNG, JPEG and BMP (stb_image). Every picture becomes 8-bit RGB: grayscale is
// replicated to three channels, alpha is dropped (as cv2.imread's IMREAD_COLOR does), 16-bit
// PNGs are reduced to 8 bits.
//
// Resizing: bilinear with half-pixel centres, as cv2.resize's INTER_LINEAR (edge pixels are
// clamped, no antialiasing when shrinking). The resized picture stays 8-bit, as with cv2 on a
// uint8 image: each interpolated value rounds to the nearest integer, halves up.
//
// Normalization, for output channel c (the model's channel axis, 0..2):
//
//     value[c] = (pixel[src(c)] * scale - mean[c]) / std[c]        (float32 arithmetic)
//
// where pixel is the resized 0..255 value and src(c) picks R,G,B (kRGB) or B,G,R (kBGR). mean
// and std are indexed by OUTPUT channel: with kBGR, mean[0] applies to blue, exactly as
// PaddleOCR's NormalizeImage applies its mean list to the BGR array cv2.imread returns.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mixprec/input_spec.h"
#include "mixprec/sample_source.h"

namespace mixprec {

struct ImagePreprocess {
  enum class Layout { kNCHW, kNHWC };
  enum class ChannelOrder { kRGB, kBGR };
  enum class Resize {
    kStretch,        // to height x width, ignoring the aspect ratio
    kKeepAspectPad,  // PaddleOCR rec/cls resize_norm_img: to `height` rows and
                     // min(width, ceil(height * picture_w / picture_h)) columns, then the
                     // columns on the right up to `width` are 0 in the normalized output
  };

  // Output size in pixels; 0 takes the model input's static dim (a dynamic dim needs a size).
  int64_t height = 0;
  int64_t width = 0;
  Layout layout = Layout::kNCHW;
  ChannelOrder order = ChannelOrder::kRGB;
  float scale = 1.0f / 255;
  std::array<float, 3> mean{0, 0, 0};
  std::array<float, 3> std{1, 1, 1};  // every entry nonzero
  Resize resize = Resize::kStretch;
};

// Named presets, NCHW, size from the model (or the caller) unless stated:
//   "imagenet"       RGB, x/255, mean 0.485 0.456 0.406, std 0.229 0.224 0.225, stretch
//   "ppocr_det"      BGR, the same mean/std on the 0..1 scale: PP-OCR det's NormalizeImage
//                    (PaddleOCR's DetResizeForTest picks a multiple-of-32 size; we stretch to
//                    the size given)
//   "ppocr_cls_rec"  BGR, (x/255 - 0.5) / 0.5 == (x - 127.5) / 127.5, keep aspect + right pad:
//                    PP-OCR rec/cls resize_norm_img
//   "raw"            RGB, x (0..255), stretch
// Returns nullopt for any other name.
std::optional<ImagePreprocess> image_preprocess_preset(std::string_view name);
// The preset names above, in table order (for help texts and "unknown preset" messages).
std::vector<std::string_view> image_preprocess_preset_names();

// Samples from pictures for a model with ONE image input: rank 4, a float dtype, 3 (or a
// dynamic number of) channels on the layout's channel axis, batch 1 or dynamic (fed as 1).
// Height and width come from `preprocess` when set, else from the model's static dims.
//
// `paths` are files or folders; a folder expands to its *.png, *.jpg, *.jpeg and *.bmp files
// (extension case ignored, not recursive) sorted by name; a file named directly is read
// whatever its extension. Each sample is one picture, decoded when sample(i) is called;
// nothing is kept between calls (thread-safe).
//
// Errors from make_image_source, which reads only the pictures' headers:
//   kUnsupported  the model has other or more inputs (image folders feed single-image-input
//                 models), a non-float, non-rank-4 or non-3-channel input, or a static batch
//                 other than 1;
//   kBadInput     a dynamic height/width without a size in `preprocess`, a size contradicting a
//                 static dim, a negative size, a zero or non-finite std (or non-finite mean or
//                 scale), no paths, an empty folder, a file whose header is not PNG/JPEG/BMP
//                 (naming the file and the decoder's reason);
//   kIo           a path that does not exist or cannot be opened.
// sample() throws kBadInput (naming the file) for a picture whose pixel data fails to decode,
// kIo when the file can no longer be opened.
std::unique_ptr<SampleSource> make_image_source(const std::vector<std::string>& paths,
                                                const std::vector<InputSpec>& inputs,
                                                const ImagePreprocess& preprocess);

}  // namespace mixprec
