// Inputs for openWakeWord's models (scripts/setup.sh: third_party/models/oww_*.onnx) made from
// the speech recordings (third_party/data/speech), the way openWakeWord's own pipeline feeds
// them: 16 kHz audio as int16-valued floats into the melspectrogram front end; its output
// scaled (x / 10 + 2) and cut into windows of 76 frames every 8 for the embedding CNN
// ([N, 76, 32, 1] -> [N, 1, 1, 96]); 16 consecutive embeddings for a wake-word classifier
// ([1, 16, 96]). The recordings alternate between calibration and evaluation (even and odd
// positions in name order), so the two sets share no audio.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mixprec::testing {

struct SplitSamples {
  std::vector<std::string> calibration, evaluation;  // .npy paths
};

// The front end's inputs: from each recording, `clips_per_file` clips of `clip_samples`
// samples ([1, clip_samples]), evenly spread.
SplitSamples write_melspectrogram_clips(const std::string& wav_dir, const std::string& out_dir,
                                        int64_t clip_samples = 12000, size_t clips_per_file = 2);

// A classifier's inputs: each set's recordings joined, run through `melspectrogram` and
// `embedding`, and every `stride`-th window of 16 embeddings written as [1, 16, 96].
SplitSamples write_wakeword_embeddings(const std::string& wav_dir, const std::string& melspectrogram,
                                       const std::string& embedding, const std::string& out_dir, size_t stride = 2);

}  // namespace mixprec::testing
