#include "support/speech_frames.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <numbers>
#include <stdexcept>

#include "mixprec/npy.h"
#include "mixprec/tensor.h"

namespace mixprec::testing {
namespace {
namespace fs = std::filesystem;

uint32_t read_u32(const std::vector<char>& bytes, size_t at) {
  uint32_t v = 0;
  std::memcpy(&v, bytes.data() + at, 4);
  return v;
}
uint16_t read_u16(const std::vector<char>& bytes, size_t at) {
  uint16_t v = 0;
  std::memcpy(&v, bytes.data() + at, 2);
  return v;
}

struct Pcm {
  std::vector<float> samples;  // mono, [-1, 1)
  int64_t rate = 0;
};

// RIFF/WAVE with a PCM 16-bit "fmt " chunk; channels are averaged.
Pcm read_wav(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto fail = [&](const std::string& why) { throw std::runtime_error(path.string() + ": " + why); };
  if (bytes.size() < 12 || std::memcmp(bytes.data(), "RIFF", 4) != 0 || std::memcmp(bytes.data() + 8, "WAVE", 4) != 0) {
    fail("not a RIFF/WAVE file");
  }
  uint16_t channels = 0, bits = 0;
  Pcm pcm;
  for (size_t at = 12; at + 8 <= bytes.size();) {
    const uint32_t size = read_u32(bytes, at + 4);
    const size_t body = at + 8;
    if (body + size > bytes.size()) fail("chunk runs past the end of the file");
    if (std::memcmp(bytes.data() + at, "fmt ", 4) == 0 && size >= 16) {
      if (read_u16(bytes, body) != 1) fail("not PCM");
      channels = read_u16(bytes, body + 2);
      pcm.rate = read_u32(bytes, body + 4);
      bits = read_u16(bytes, body + 14);
    } else if (std::memcmp(bytes.data() + at, "data", 4) == 0) {
      if (bits != 16 || channels == 0) fail("only 16-bit PCM with a fmt chunk first is read");
      const size_t frames = size / (2u * channels);
      pcm.samples.resize(frames);
      for (size_t f = 0; f < frames; ++f) {
        float sum = 0;
        for (uint16_t c = 0; c < channels; ++c) {
          int16_t v = 0;
          std::memcpy(&v, bytes.data() + body + 2 * (f * channels + c), 2);
          sum += static_cast<float>(v) / 32768.0f;
        }
        pcm.samples[f] = sum / channels;
      }
      return pcm;
    }
    at = body + size + (size & 1u);
  }
  fail("no data chunk");
  return pcm;
}

// Decimation by an integer factor behind a Hann-windowed sinc low-pass at 0.9 x the new Nyquist.
std::vector<float> decimate(const std::vector<float>& x, int64_t factor) {
  if (factor == 1) return x;
  constexpr int kHalf = 48;
  const double cutoff = 0.9 / static_cast<double>(2 * factor);  // cycles per input sample
  std::vector<double> taps(2 * kHalf + 1);
  double sum = 0;
  for (int i = -kHalf; i <= kHalf; ++i) {
    const double sinc = i == 0 ? 2 * cutoff : std::sin(2 * std::numbers::pi * cutoff * i) / (std::numbers::pi * i);
    const double window = 0.5 + 0.5 * std::cos(std::numbers::pi * i / (kHalf + 1));
    sum += taps[static_cast<size_t>(i + kHalf)] = sinc * window;
  }
  for (double& t : taps) t /= sum;
  std::vector<float> y;
  for (size_t n = 0; n < x.size(); n += static_cast<size_t>(factor)) {
    double acc = 0;
    for (int i = -kHalf; i <= kHalf; ++i) {
      const auto k = static_cast<int64_t>(n) - i;
      if (k >= 0 && k < static_cast<int64_t>(x.size())) acc += taps[static_cast<size_t>(i + kHalf)] * x[static_cast<size_t>(k)];
    }
    y.push_back(static_cast<float>(acc));
  }
  return y;
}

}  // namespace

std::vector<std::string> speech_files(const std::string& wav_dir) {
  std::vector<std::string> wavs;
  for (const auto& entry : fs::directory_iterator(wav_dir)) {
    if (entry.path().extension() == ".wav") wavs.push_back(entry.path().string());
  }
  std::sort(wavs.begin(), wavs.end());
  if (wavs.empty()) throw std::runtime_error(wav_dir + ": no .wav files");
  return wavs;
}

std::vector<float> read_speech(const std::string& wav, int64_t sample_rate) {
  const Pcm pcm = read_wav(wav);
  if (sample_rate <= 0 || pcm.rate % sample_rate != 0) {
    throw std::runtime_error(wav + ": sample rate " + std::to_string(pcm.rate) + " is not a multiple of " +
                             std::to_string(sample_rate));
  }
  return decimate(pcm.samples, pcm.rate / sample_rate);
}

std::vector<std::string> write_speech_frames(const std::string& wav_dir, const std::string& out_dir,
                                             const SpeechFrames& options) {
  fs::create_directories(out_dir);
  std::vector<std::string> written;
  for (const fs::path wav : speech_files(wav_dir)) {
    const std::vector<float> audio = read_speech(wav.string(), options.sample_rate);
    const auto frame = static_cast<size_t>(options.frame);
    if (audio.size() < frame) throw std::runtime_error(wav.string() + ": shorter than one frame");
    const size_t span = audio.size() - frame;
    for (size_t k = 0; k < options.frames_per_file; ++k) {
      // Evenly spread, centred in their strata: onsets, speech and the silences between words.
      const size_t start = span * (2 * k + 1) / (2 * options.frames_per_file);
      NamedTensors sample;
      sample.emplace_back(options.audio_input,
                          Tensor::from_floats({1, options.frame}, std::span(audio).subspan(start, frame)));
      sample.emplace_back(options.state_input, Tensor(DType::kFloat32, options.state_shape));
      Tensor rate(DType::kInt64, {});
      rate.as<int64_t>()[0] = options.sample_rate;
      sample.emplace_back(options.rate_input, std::move(rate));
      const std::string path = (fs::path(out_dir) / (wav.stem().string() + "_" + std::to_string(k) + ".npz")).string();
      write_npz(path, sample);
      written.push_back(path);
    }
  }
  return written;
}

}  // namespace mixprec::testing
