// Speech recordings (scripts/setup.sh: third_party/data/speech, 16-bit PCM WAV) cut into frames
// and written as .npz samples for a voice-activity model with several inputs: the frame, a
// zero recurrent state, and the sample rate as an int64 scalar.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mixprec::testing {

struct SpeechFrames {
  std::string audio_input = "input";   // [1, frame] float32, samples in [-1, 1)
  std::string state_input = "state";   // zeros of state_shape
  std::string rate_input = "sr";       // int64 scalar
  std::vector<int64_t> state_shape{2, 1, 128};
  int64_t sample_rate = 16000;         // the recordings are resampled to it (an integer divisor)
  int64_t frame = 576;                 // samples per frame (Silero v5 at 16 kHz: 64 context + 512)
  size_t frames_per_file = 4;          // spread evenly over each recording
};

// The .wav files of `wav_dir`, in name order; std::runtime_error when there are none.
std::vector<std::string> speech_files(const std::string& wav_dir);
// A 16-bit PCM WAV's samples, channels averaged, in [-1, 1), resampled to `sample_rate` (an
// integer divisor of the file's rate). std::runtime_error naming the file otherwise.
std::vector<float> read_speech(const std::string& wav, int64_t sample_rate);

// One npz per frame in `out_dir` (created), for every .wav of `wav_dir` in name order; returns
// the paths. Throws std::runtime_error naming the file for a WAV it cannot read.
std::vector<std::string> write_speech_frames(const std::string& wav_dir, const std::string& out_dir,
                                             const SpeechFrames& options = {});

}  // namespace mixprec::testing
