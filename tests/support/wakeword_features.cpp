#include "support/wakeword_features.h"

#include <filesystem>
#include <span>
#include <stdexcept>

#include "mixprec/npy.h"
#include "mixprec/runtime.h"
#include "mixprec/tensor.h"
#include "support/speech_frames.h"

namespace mixprec::testing {
namespace {
namespace fs = std::filesystem;

constexpr int64_t kRate = 16000;
constexpr float kInt16 = 32768.0f;  // openWakeWord feeds int16 sample values as floats
constexpr int64_t kMelBins = 32, kWindow = 76, kWindowStep = 8, kEmbedding = 96, kEmbeddings = 16;

// Even positions calibrate, odd ones evaluate.
bool calibrates(size_t index) { return index % 2 == 0; }

std::string npy_path(const std::string& dir, const std::string& stem, size_t k) {
  return (fs::path(dir) / (stem + "_" + std::to_string(k) + ".npy")).string();
}

// The only output of `session` on its only input.
Tensor run_one(const Session& session, Tensor input) {
  NamedTensors out = session.run({{session.inputs().at(0).name, std::move(input)}});
  if (out.size() != 1) throw std::runtime_error("expected one output, got " + std::to_string(out.size()));
  return std::move(out.front().second);
}

// [1, 16, 96] windows of the embeddings of `audio` (16 kHz, [-1, 1)).
std::vector<Tensor> embedding_windows(const std::vector<float>& audio, const Session& mel, const Session& embed,
                                      size_t stride) {
  std::vector<float> scaled(audio.size());
  for (size_t i = 0; i < audio.size(); ++i) scaled[i] = audio[i] * kInt16;
  const Tensor spec = run_one(mel, Tensor::from_floats({1, static_cast<int64_t>(scaled.size())}, scaled));
  std::vector<float> frames = spec.to_floats();  // [1, 1, F, 32]
  for (float& v : frames) v = v / 10 + 2;        // openWakeWord's scaling before the embedding
  const auto count = static_cast<int64_t>(frames.size()) / kMelBins;
  if (count < kWindow) throw std::runtime_error("too little audio for one embedding window");
  const int64_t windows = (count - kWindow) / kWindowStep + 1;
  std::vector<float> batch;
  for (int64_t w = 0; w < windows; ++w) {
    const auto at = static_cast<size_t>(w * kWindowStep * kMelBins);
    batch.insert(batch.end(), frames.begin() + static_cast<long>(at),
                 frames.begin() + static_cast<long>(at + static_cast<size_t>(kWindow * kMelBins)));
  }
  const std::vector<float> embeddings = run_one(embed, Tensor::from_floats({windows, kWindow, kMelBins, 1}, batch)).to_floats();
  std::vector<Tensor> out;
  for (int64_t s = 0; s + kEmbeddings <= windows; s += static_cast<int64_t>(stride)) {
    const auto at = static_cast<size_t>(s * kEmbedding);
    out.push_back(Tensor::from_floats({1, kEmbeddings, kEmbedding},
                                      std::span(embeddings).subspan(at, static_cast<size_t>(kEmbeddings * kEmbedding))));
  }
  return out;
}

}  // namespace

SplitSamples write_melspectrogram_clips(const std::string& wav_dir, const std::string& out_dir, int64_t clip_samples,
                                        size_t clips_per_file) {
  fs::create_directories(out_dir);
  SplitSamples out;
  const std::vector<std::string> wavs = speech_files(wav_dir);
  for (size_t i = 0; i < wavs.size(); ++i) {
    const std::vector<float> audio = read_speech(wavs[i], kRate);
    const auto clip = static_cast<size_t>(clip_samples);
    if (audio.size() < clip) throw std::runtime_error(wavs[i] + ": shorter than one clip");
    const size_t span = audio.size() - clip;
    for (size_t k = 0; k < clips_per_file; ++k) {
      const size_t start = clips_per_file == 1 ? span / 2 : span * k / (clips_per_file - 1);
      std::vector<float> scaled(clip);
      for (size_t j = 0; j < clip; ++j) scaled[j] = audio[start + j] * kInt16;
      const std::string path = npy_path(out_dir, fs::path(wavs[i]).stem().string(), k);
      write_npy(path, Tensor::from_floats({1, clip_samples}, scaled));
      (calibrates(i) ? out.calibration : out.evaluation).push_back(path);
    }
  }
  return out;
}

SplitSamples write_wakeword_embeddings(const std::string& wav_dir, const std::string& melspectrogram,
                                       const std::string& embedding, const std::string& out_dir, size_t stride) {
  fs::create_directories(out_dir);
  const Session mel = Session::from_file(melspectrogram);
  const Session embed = Session::from_file(embedding);
  std::vector<float> audio[2];  // calibration, evaluation: each set's recordings joined
  const std::vector<std::string> wavs = speech_files(wav_dir);
  for (size_t i = 0; i < wavs.size(); ++i) {
    const std::vector<float> one = read_speech(wavs[i], kRate);
    std::vector<float>& to = audio[calibrates(i) ? 0 : 1];
    to.insert(to.end(), one.begin(), one.end());
  }
  SplitSamples out;
  for (int set = 0; set < 2; ++set) {
    const std::vector<Tensor> windows = embedding_windows(audio[set], mel, embed, stride);
    for (size_t k = 0; k < windows.size(); ++k) {
      const std::string path = npy_path(out_dir, set == 0 ? "calib" : "eval", k);
      write_npy(path, windows[k]);
      (set == 0 ? out.calibration : out.evaluation).push_back(path);
    }
  }
  return out;
}

}  // namespace mixprec::testing
