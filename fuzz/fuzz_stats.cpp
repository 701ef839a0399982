// Statistics files: parse; what parses saves and loads back to the same statistics.
#include <filesystem>
#include <string>

#include <unistd.h>

#include "fuzz_support.h"
#include "mixprec/calibration.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mixprec;
  CalibrationStats stats;
  try {
    stats = parse_stats(fuzz::text_of(data, size), "fuzz.stats.json");
  } catch (const Error&) {
    return 0;
  }
  static const std::string path =
      (std::filesystem::temp_directory_path() / ("mixprec-fuzz-stats-" + std::to_string(::getpid()) + ".json")).string();
  try {
    save_stats(stats, path);
  } catch (const Error&) {
    return 0;  // names that are not UTF-8 cannot be written (documented)
  }
  MIXPREC_FUZZ_CHECK(load_stats(path) == stats);
  return 0;
}
