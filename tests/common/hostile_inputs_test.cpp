// Regression tests for the defects fuzzing found (issue 18): each reproducer in
// support/hostile_inputs.h now gets a one-line Error naming its file, quickly, without a crash
// or a large allocation (the fuzz build runs the same inputs under ASan and UBSan).
#include "support/hostile_inputs.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>

#include "mixprec/calibration.h"
#include "mixprec/config.h"
#include "mixprec/error.h"
#include "mixprec/log.h"
#include "mixprec/npy.h"
#include "mixprec/plan.h"
#include "support/temp_dir.h"
#include "tensor/image_decode.h"

namespace mixprec {
namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::span<const std::byte> bytes_of(const std::string& text) { return std::as_bytes(std::span(text)); }

template <class F>
Error error_from(F&& f) {
  try {
    f();
  } catch (const Error& error) {
    return error;
  }
  ADD_FAILURE() << "expected a mixprec::Error";
  return Error(ErrorKind::kInternal, "", "nothing thrown");
}

const std::string& named(const testing::NamedBytes& entries, const std::string& name) {
  for (const auto& [file, bytes] : entries) {
    if (file == name) return bytes;
  }
  throw std::runtime_error("no reproducer " + name);
}

const std::string& picture(const std::string& name) {
  static const testing::NamedBytes pictures = testing::hostile_pictures();
  return named(pictures, name);
}

TEST(HostilePictures, EveryReproducerIsABadInputErrorNamingTheFile) {
  for (const auto& [name, bytes] : testing::hostile_pictures()) {
    const Error error = error_from([&] { decode_image_rgb(bytes_of(bytes), name); });
    EXPECT_TRUE(error.kind() == ErrorKind::kBadInput || error.kind() == ErrorKind::kUnsupported) << error.what();
    EXPECT_EQ(error.file(), name);
  }
}

TEST(HostilePictures, HuffmanTableOfMoreThan256CodesIsRejected) {
  // stb_image wrote past its 256-entry table on these 9 bytes.
  const Error error = error_from([] { decode_image_rgb(bytes_of(picture("jpeg_huffman_510_codes.jpg")), "a.jpg"); });
  EXPECT_EQ(error.kind(), ErrorKind::kBadInput);
  EXPECT_PRED2(contains, error.what(), "cannot decode JPEG picture");
}

TEST(HostilePictures, CorruptPngIsReportedAsPngNotJpeg) {
  for (const char* name : {"png_bad_ihdr_crc.png", "png_truncated.png"}) {
    const Error error = error_from([&] { decode_image_rgb(bytes_of(picture(name)), name); });
    EXPECT_PRED2(contains, error.what(), "cannot decode PNG picture") << name;
    EXPECT_FALSE(contains(error.what(), "JPEG")) << error.what();
  }
}

TEST(HostilePictures, GigapixelHeadersAreRefusedBeforeAllocating) {
  for (const char* name : {"png_100000x100000.png", "bmp_30000x30000_no_pixels.bmp"}) {
    const Error error = error_from([&] { check_image_header(bytes_of(picture(name)), name); });
    EXPECT_TRUE(contains(error.what(), "over the limit") || contains(error.what(), "truncated")) << error.what();
  }
}

TEST(HostileArrays, NpzDeclaringSixGibibytesFailsBeforeAllocating) {
  const testing::NamedBytes arrays = testing::hostile_arrays();
  const std::string& npz = arrays.at(0).second;
  ASSERT_LT(npz.size(), 300u);
  const auto start = std::chrono::steady_clock::now();
  const Error error = error_from([&] { npz_from_bytes(bytes_of(npz), "bomb.npz"); });
  EXPECT_EQ(error.kind(), ErrorKind::kBadInput);
  EXPECT_EQ(error.file(), "bomb.npz");
  EXPECT_PRED2(contains, error.what(), "more than deflate can produce");
  // Allocating (and zeroing) 6 GiB takes seconds; the check takes none. Not a timing target:
  // a loose bound that only an allocation would cross.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

TEST(HostileArrays, NpyPromisingMoreDataThanItHolds) {
  const std::string npy = testing::hostile_arrays().at(1).second;
  const Error error = error_from([&] { npy_from_bytes(bytes_of(npy), "short.npy"); });
  EXPECT_PRED2(contains, error.what(), "data size mismatch");
}

class HostileFiles : public testing::TempDirTest {
 protected:
  std::string write(const std::string& name, const std::string& text) {
    std::ofstream(path(name), std::ios::binary) << text;
    return path(name);
  }
  const std::string& config(const std::string& name) {
    static const testing::NamedBytes configs = testing::hostile_configs();
    return named(configs, name);
  }
};

TEST_F(HostileFiles, RegexNested20000DeepLoadsWithoutRecursion) {
  // std::regex compiled it recursively and overflowed the stack; RE2 parses it with its own stack.
  const QuantConfig loaded = load_config(write("deep_regex.json", config("regex_nested_20000.json")));
  ASSERT_EQ(loaded.exclude.node_names.size(), 1u);
}

TEST_F(HostileFiles, BacktrackingPatternMatchesLongNamesInLinearTime) {
  const std::string file = write("redos.json", config("regex_backtracking.json"));
  const QuantConfig loaded = load_config(file);
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  model.mutable_graph()->add_input()->set_name("x");
  auto* node = model.mutable_graph()->add_node();
  node->set_op_type("Relu");
  node->set_name(std::string(5000, 'a'));  // "(a*)*.*b" backtracks exponentially on this
  node->add_input("x");
  node->add_output("y");
  const auto assignment = assign_layers(loaded, model, file);
  EXPECT_EQ(assignment.size(), 1u);
}

TEST_F(HostileFiles, JsonNested300000DeepIsABadInputError) {
  const std::string file = write("deep.json", config("json_nested_300000.json"));
  const Error error = error_from([&] { load_config(file); });
  EXPECT_EQ(error.kind(), ErrorKind::kBadInput);
  EXPECT_EQ(error.file(), file);
  EXPECT_PRED2(contains, error.what(), "nested deeper than 128 levels");
}

TEST_F(HostileFiles, NumberOverflowingADoubleIsABadInputErrorInEveryLoader) {
  // nlohmann throws out_of_range (not parse_error) for 1e999: it escaped as "internal error".
  const std::string config_file = write("big.json", config("number_1e999.json"));
  const std::string stats_file = write("big.stats.json", R"({"format": "mixprec-stats", "version": 1e999})");
  const std::string plan_file = write("big.plan.json", R"({"schema_version": 1e999})");
  for (const auto& [file, load] : std::vector<std::pair<std::string, std::function<void()>>>{
           {config_file, [&] { load_config(config_file); }},
           {stats_file, [&] { load_stats(stats_file); }},
           {plan_file, [&] { load_plan(plan_file); }}}) {
    const Error error = error_from(load);
    EXPECT_EQ(error.kind(), ErrorKind::kBadInput) << error.what();
    EXPECT_EQ(error.file(), file);
    EXPECT_PRED2(contains, error.what(), "number overflow");
  }
}

TEST_F(HostileFiles, WrongTypesInAStatsFileNameTheFile) {
  const std::string file = write("typed.stats.json", R"({"format": "mixprec-stats", "version": 1,
    "model_fingerprint": "x", "samples": 1, "data_description": "", "histogram_bins": 2048,
    "ranks": {"a": 1}, "tensors": {"a": {"min": "low"}}})");
  const Error error = error_from([&] { load_stats(file); });
  EXPECT_EQ(error.kind(), ErrorKind::kBadInput);
  EXPECT_EQ(error.file(), file);
}

}  // namespace
}  // namespace mixprec
