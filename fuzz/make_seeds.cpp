// Writes the seed corpus of every fuzz target, at build time, from real files (the PP-OCR
// models and pictures scripts/setup.sh fetched) and from small inputs made here with the
// library's own writers, plus the reproducers of the defects the fuzzers found
// (tests/support/hostile_inputs.h). Nothing binary is committed.
//
// Usage: make_seeds OUT_DIR MODELS_DIR DATA_DIR
// Creates OUT_DIR/<target>/<name> for the targets npy, npz, config, stats, plan, model, image.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "mixprec/calibration.h"
#include "mixprec/config.h"
#include "mixprec/error.h"
#include "mixprec/log.h"
#include "mixprec/model_io.h"
#include "mixprec/npy.h"
#include "mixprec/plan.h"
#include "support/hostile_inputs.h"
#include "support/model_builder.h"
#include "support/spec_example.h"
#include "tensor/image_decode.h"

#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image_write.h>

namespace fs = std::filesystem;
using namespace mixprec;

namespace {

fs::path out_root;

void write_seed(const std::string& target, const std::string& name, std::string_view bytes) {
  const fs::path dir = out_root / target;
  fs::create_directories(dir);
  std::ofstream(dir / name, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}
void write_seed(const std::string& target, const std::string& name, std::span<const std::byte> bytes) {
  write_seed(target, name, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}
void copy_seed(const std::string& target, const fs::path& file) {
  fs::create_directories(out_root / target);
  fs::copy_file(file, out_root / target / file.filename(), fs::copy_options::overwrite_existing);
}

// The smallest real pictures of a folder (fuzzing favours short inputs).
std::vector<fs::path> smallest_pictures(const fs::path& dir, size_t count) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_regular_file() && entry.path().filename().string()[0] != '.') files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end(), [](const fs::path& a, const fs::path& b) {
    return std::pair(fs::file_size(a), a) < std::pair(fs::file_size(b), b);
  });
  files.resize(std::min(files.size(), count));
  return files;
}

Tensor float_tensor(const Shape& shape, float start) {
  Tensor tensor(DType::kFloat32, shape);
  float* values = reinterpret_cast<float*>(tensor.data());
  for (int64_t i = 0; i < shape_numel(shape); ++i) values[i] = start + 0.25f * static_cast<float>(i);
  return tensor;
}

// A real picture as a small NCHW float tensor (its top-left 8x8 pixels).
Tensor picture_tensor(const RgbImage& image) {
  const int64_t h = std::min<int64_t>(image.height, 8), w = std::min<int64_t>(image.width, 8);
  Tensor tensor(DType::kFloat32, {1, 3, h, w});
  float* values = reinterpret_cast<float*>(tensor.data());
  for (int64_t c = 0; c < 3; ++c) {
    for (int64_t y = 0; y < h; ++y) {
      for (int64_t x = 0; x < w; ++x) {
        values[(c * h + y) * w + x] = image.pixels[static_cast<size_t>((y * image.width + x) * 3 + c)] / 255.0f;
      }
    }
  }
  return tensor;
}

void write_stb(const std::string& name, const std::function<int(stbi_write_func*, void*)>& encode) {
  std::string bytes;
  encode([](void* context, void* data, int size) { static_cast<std::string*>(context)->append(static_cast<char*>(data), static_cast<size_t>(size)); },
         &bytes);
  write_seed("image", name, bytes);
}

void image_seeds(const fs::path& data_dir) {
  for (const auto& file : smallest_pictures(data_dir / "calib", 4)) copy_seed("image", file);
  std::vector<uint8_t> pixels(16 * 16 * 4);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 37);
  for (int channels = 1; channels <= 4; ++channels) {
    write_stb("small_" + std::to_string(channels) + ".png", [&](stbi_write_func* f, void* c) {
      return stbi_write_png_to_func(f, c, 16, 16, channels, pixels.data(), 16 * channels);
    });
  }
  write_stb("small.jpg", [&](stbi_write_func* f, void* c) { return stbi_write_jpg_to_func(f, c, 16, 16, 3, pixels.data(), 90); });
  write_stb("small_gray.jpg", [&](stbi_write_func* f, void* c) { return stbi_write_jpg_to_func(f, c, 16, 16, 1, pixels.data(), 90); });
  write_stb("small.bmp", [&](stbi_write_func* f, void* c) { return stbi_write_bmp_to_func(f, c, 5, 3, 3, pixels.data()); });
  write_stb("small_rgba.bmp", [&](stbi_write_func* f, void* c) { return stbi_write_bmp_to_func(f, c, 5, 3, 4, pixels.data()); });
  for (const auto& [name, bytes] : testing::hostile_pictures()) write_seed("image", name, bytes);
}

void tensor_seeds(const fs::path& data_dir) {
  NamedTensors members = {{"input", float_tensor({1, 3, 2, 2}, -1.0f)}, {"scalar", float_tensor({}, 2.0f)}};
  members.emplace_back("empty", Tensor(DType::kFloat32, {0, 3}));
  Tensor ints(DType::kInt64, {3});
  members.emplace_back("ids", ints);
  members.emplace_back("half", Tensor(DType::kFloat16, {2, 2}));
  members.emplace_back("flags", Tensor(DType::kBool, {4}));
  const auto pictures = smallest_pictures(data_dir / "calib", 2);
  for (size_t i = 0; i < pictures.size(); ++i) {
    members.emplace_back("picture" + std::to_string(i), picture_tensor(decode_image_rgb(pictures[i].string())));
  }
  for (const auto& [key, tensor] : members) write_seed("npy", key + ".npy", npy_to_bytes(tensor));
  write_seed("npz", "stored.npz", npz_to_bytes(members));
  write_seed("npz", "deflated.npz", npz_to_bytes(members, {.compress = true}));
  write_seed("npz", "one.npz", npz_to_bytes({members.front()}, {.compress = true}));
  for (const auto& [name, bytes] : testing::hostile_arrays()) write_seed(name.ends_with(".npz") ? "npz" : "npy", name, bytes);
}

void config_seeds() {
  for (const std::string& name : preset_names()) {
    write_seed("config", name + ".json", config_to_json(*preset_config(name)).dump(2));
    // Quark's shape cannot say every preset (it has no FP8 data type): those get no Quark seed.
    try {
      write_seed("config", name + ".quark.json", config_to_json(*preset_config(name), ConfigShape::kQuark).dump(2));
    } catch (const Error& error) {
      if (error.kind() != ErrorKind::kBadInput) throw;
    }
  }
  // SPEC.md's example, which must load as written.
  write_seed("config", "spec_example.json", testing::kSpecExample);
  for (const auto& [name, text] : testing::hostile_configs()) write_seed("config", name, text);
}

void stats_seeds(const fs::path& data_dir) {
  CalibrationStats stats;
  stats.model_fingerprint = "0123456789abcdef";
  stats.samples = 2;
  stats.data_description = "seed pictures";
  size_t index = 0;
  for (const auto& file : smallest_pictures(data_dir / "calib", 3)) {
    const Tensor tensor = picture_tensor(decode_image_rgb(file.string()));
    StatsCollector collector;
    collector.update(std::span(reinterpret_cast<const float*>(tensor.data()), static_cast<size_t>(tensor.numel())));
    const std::string name = "x_" + std::to_string(index++);
    stats.tensors.emplace(name, collector.stats());
    stats.ranks.emplace(name, 4);
  }
  const fs::path path = out_root / "stats" / "pictures.stats.json";
  fs::create_directories(path.parent_path());
  save_stats(stats, path.string());
  stats.tensors.clear();
  save_stats(stats, (out_root / "stats" / "empty.stats.json").string());
}

void model_and_plan_seeds(const fs::path& models_dir) {
  copy_seed("model", models_dir / "ppocr_cls.onnx");
  const std::vector<std::pair<std::string, onnx::ModelProto>> models = {
      {"conv_chain", testing::conv_chain(2)},       {"qdq_conv_chain", testing::qdq_conv_chain(2)},
      {"bf16_conv_chain", testing::bf16_conv_chain(1)}, {"gemm_classifier", testing::gemm_classifier(10)},
      {"attention", testing::attention_model(1)},   {"multi_output", testing::multi_output_model()},
      {"nms", testing::nms_detection_model()}};
  for (const auto& [name, model] : models) write_seed("model", name + ".onnx", serialize_model(model, name));

  fs::create_directories(out_root / "plan");
  for (const auto& [target, goal] : {std::pair(PlanTarget::kCpu, PlanGoal::kAccuracy),
                                     std::pair(PlanTarget::kNpuCnn, PlanGoal::kSpeed)}) {
    PlanParams params;
    params.setup.model_path = (models_dir / "ppocr_cls.onnx").string();
    params.target = target;
    params.goal = goal;
    params.confirmed = true;
    save_plan(make_plan(params), (out_root / "plan" / (std::string(to_string(target)) + ".plan.json")).string());
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: make_seeds OUT_DIR MODELS_DIR DATA_DIR\n";
    return 2;
  }
  set_log_sink([](LogLevel, const std::string&) {});
  out_root = argv[1];
  try {
    fs::remove_all(out_root);
    image_seeds(argv[3]);
    tensor_seeds(argv[3]);
    config_seeds();
    stats_seeds(argv[3]);
    model_and_plan_seeds(argv[2]);
  } catch (const std::exception& e) {
    std::cerr << "make_seeds: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
