// The bad-input matrix (issue 18): one test per way a user's input or machine can be wrong.
// Each row runs the mixprec executable as a user would and checks the four promises of
// SPEC's "Bad input": the exit code (2), a one-line message naming the file and the problem,
// every input byte for byte as it was, and no output at all (no model, no config, no
// temporary file) where the command would have written.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "mixprec/model_io.h"
#include "mixprec/npy.h"
#include "mixprec/random_data.h"
#include "support/cli_runner.h"
#include "support/hostile_inputs.h"
#include "support/model_builder.h"
#include "support/temp_dir.h"

namespace mixprec {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class BadInputMatrix : public testing::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    fs::create_directories(path("in"));
    fs::create_directories(path("out"));
    save_model(testing::conv_chain(2), path("in/model.onnx"));
    write_npy(path("in/data.npy"), random_tensor(DType::kFloat32, {4, 3, 8, 8}, 7));
  }

  // Every file under in/, by content: what "input untouched" compares.
  std::map<std::string, std::string> inputs() const {
    std::map<std::string, std::string> files;
    for (const auto& entry : fs::recursive_directory_iterator(dir_ / "in")) {
      if (entry.is_regular_file()) files[entry.path().string()] = slurp(entry.path());
    }
    return files;
  }

  std::vector<std::string> quantize_args(const std::string& model, const std::string& data,
                                         const std::vector<std::string>& extra = {}) const {
    std::vector<std::string> args = {"quantize", model, "-o", path("out/q.onnx"), "--calibration-data", data};
    if (extra.empty()) args.insert(args.end(), {"--preset", "XINT8"});
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }

  // Runs `args` and checks the row: exit 2, one line on stderr naming `file` and holding
  // `message`, inputs unchanged, out/ still empty.
  void expect_rejected(const std::vector<std::string>& args, const std::string& file, const std::string& message,
                       const testing::CliFaults& faults = {}) {
    const auto before = inputs();
    const CliResult r = run_cli(args, faults);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    const std::string line = "mixprec: error: " + (file.empty() ? "" : file + ": ");
    EXPECT_EQ(r.err.rfind(line, 0), 0u) << "want '" << line << "...', got: " << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << "want '" << message << "' in: " << r.err;
    // Warnings may come first; the error itself is one line, the last.
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
    EXPECT_EQ(inputs(), before) << "an input changed";
    std::vector<std::string> left;
    for (const auto& entry : fs::directory_iterator(dir_ / "out")) left.push_back(entry.path().filename().string());
    EXPECT_TRUE(left.empty()) << "left in out/: " << left.front();
  }

  std::string write(const std::string& name, const std::string& bytes) {
    std::ofstream(path(name), std::ios::binary) << bytes;
    return path(name);
  }
};

// --- Models ---------------------------------------------------------------------------------

TEST_F(BadInputMatrix, TruncatedModel) {
  const std::string bytes = slurp(path("in/model.onnx"));
  const std::string model = write("in/cut.onnx", bytes.substr(0, bytes.size() / 2));
  expect_rejected(quantize_args(model, path("in/data.npy")), model, "not an ONNX model");
}

TEST_F(BadInputMatrix, RandomBytesModel) {
  std::string bytes(4096, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>((i * 2654435761u) >> 13);
  const std::string model = write("in/random.onnx", bytes);
  expect_rejected(quantize_args(model, path("in/data.npy")), model, "not an ONNX model");
}

TEST_F(BadInputMatrix, EmptyModel) {
  const std::string model = write("in/empty.onnx", "");
  expect_rejected(quantize_args(model, path("in/data.npy")), model, "empty file, not an ONNX model");
}

TEST_F(BadInputMatrix, DirectoryAsModel) {
  fs::create_directories(path("in/folder.onnx"));
  expect_rejected(quantize_args(path("in/folder.onnx"), path("in/data.npy")), path("in/folder.onnx"),
                  "is a directory");
}

TEST_F(BadInputMatrix, SingleFileModelOver2GB) {
  // Sparse: 2.1 GB long, no disk used; protobuf cannot parse it, so it is refused unread.
  const std::string model = path("in/huge.onnx");
  std::ofstream(model).close();
  fs::resize_file(model, (uint64_t{21} << 30) / 10);
  const auto before_size = fs::file_size(model);
  const CliResult r = run_cli(quantize_args(model, path("in/data.npy")));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(model + ": model file is 2150 MiB; protobuf cannot parse over 2 GB: save the model with "
                               "external data"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(fs::file_size(model), before_size);
  EXPECT_TRUE(fs::is_empty(path("out")));
}

class ExternalDataRow : public BadInputMatrix {
 protected:
  void SetUp() override {
    BadInputMatrix::SetUp();
    // ModelBuilder writes typed fields (float_data); external data holds raw bytes.
    onnx::ModelProto model = testing::conv_chain(2);
    for (auto& init : *model.mutable_graph()->mutable_initializer()) {
      if (init.float_data_size() == 0) continue;
      init.set_raw_data(std::string(reinterpret_cast<const char*>(init.float_data().data()),
                                    sizeof(float) * static_cast<size_t>(init.float_data_size())));
      init.clear_float_data();
    }
    save_model(model, path("in/ext.onnx"), {.external_data = ExternalData::kAlways, .external_threshold_bytes = 64});
    ASSERT_GT(fs::file_size(path("in/ext.onnx.data")), 0u);
  }
};

TEST_F(ExternalDataRow, ExternalDataMissing) {
  fs::remove(path("in/ext.onnx.data"));
  expect_rejected(quantize_args(path("in/ext.onnx"), path("in/data.npy")), path("in/ext.onnx"),
                  "cannot read external data file");
}

TEST_F(ExternalDataRow, ExternalDataShort) {
  fs::resize_file(path("in/ext.onnx.data"), 100);
  expect_rejected(quantize_args(path("in/ext.onnx"), path("in/data.npy")), path("in/ext.onnx"), "tensor needs bytes");
}

TEST_F(ExternalDataRow, ExternalDataPathTraversal) {
  onnx::ModelProto model = load_model(path("in/ext.onnx"), {.load_external_data = false});
  for (auto& init : *model.mutable_graph()->mutable_initializer()) {
    for (auto& entry : *init.mutable_external_data()) {
      if (entry.key() == "location") entry.set_value("../../etc/passwd");
    }
  }
  const std::string escaping = path("in/escaping.onnx");
  write_file_atomically(escaping, serialize_model(model, escaping));
  expect_rejected(quantize_args(escaping, path("in/data.npy")), escaping, "outside the model folder");
}

TEST_F(BadInputMatrix, UnregisteredCustomOp) {
  testing::ModelBuilder b;
  b.add_input("input", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{4}})
      .add_output("output", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{4}})
      .add_node("Frobnicate", {"input"}, {"output"}, {}, "custom", "com.example.ops");
  const std::string model = path("in/custom.onnx");
  save_model(b.build(), model);
  write_npy(path("in/x.npy"), random_tensor(DType::kFloat32, {1, 4}, 1));
  expect_rejected(quantize_args(model, path("in/x.npy"), {"--preset", "BF16"}), model,
                  "op com.example.ops:Frobnicate");
}

TEST_F(BadInputMatrix, ModelWithoutAnOpsetList) {
  onnx::ModelProto proto = testing::conv_chain(2);
  proto.clear_opset_import();
  const std::string model = path("in/no_opset.onnx");
  write_file_atomically(model, serialize_model(proto, model));
  expect_rejected(quantize_args(model, path("in/data.npy")), model, "imports no opset");
}

// --- Data -----------------------------------------------------------------------------------

TEST_F(BadInputMatrix, WrongShape) {
  write_npy(path("in/wrong.npy"), random_tensor(DType::kFloat32, {1, 3, 4, 4}, 1));
  expect_rejected(quantize_args(path("in/model.onnx"), path("in/wrong.npy")), path("in/wrong.npy"),
                  "has shape 1x3x4x4, the model wants 1x3x8x8");
}

TEST_F(BadInputMatrix, WrongRank) {
  write_npy(path("in/rank.npy"), random_tensor(DType::kFloat32, {3, 8, 8}, 1));
  expect_rejected(quantize_args(path("in/model.onnx"), path("in/rank.npy")), path("in/rank.npy"), "has shape 3x8x8");
}

TEST_F(BadInputMatrix, WrongDtype) {
  write_npy(path("in/ints.npy"), Tensor(DType::kInt64, {1, 3, 8, 8}));
  expect_rejected(quantize_args(path("in/model.onnx"), path("in/ints.npy")), path("in/ints.npy"),
                  "is int64, the model wants float32");
}

TEST_F(BadInputMatrix, NaNInData) {
  Tensor t = random_tensor(DType::kFloat32, {1, 3, 8, 8}, 1);
  t.as<float>()[5] = std::numeric_limits<float>::quiet_NaN();
  write_npy(path("in/nan.npy"), t);
  expect_rejected(quantize_args(path("in/model.onnx"), path("in/nan.npy")), path("in/nan.npy"), "NaN");
}

TEST_F(BadInputMatrix, InfInData) {
  Tensor t = random_tensor(DType::kFloat32, {1, 3, 8, 8}, 1);
  t.as<float>()[7] = -std::numeric_limits<float>::infinity();
  write_npy(path("in/inf.npy"), t);
  expect_rejected(quantize_args(path("in/model.onnx"), path("in/inf.npy")), path("in/inf.npy"), "Inf");
}

TEST_F(BadInputMatrix, WrongNpzKey) {
  write_npz(path("in/keys.npz"), {{"not_the_input", random_tensor(DType::kFloat32, {1, 3, 8, 8}, 1)}});
  expect_rejected(quantize_args(path("in/model.onnx"), path("in/keys.npz")), path("in/keys.npz"), "'input'");
}

TEST_F(BadInputMatrix, ZeroSamples) {
  write_npy(path("in/none.npy"), Tensor(DType::kFloat32, {0, 3, 8, 8}));
  expect_rejected(quantize_args(path("in/model.onnx"), path("in/none.npy")), path("in/none.npy"),
                  "input 'input' holds no samples");
}

TEST_F(BadInputMatrix, CorruptPicture) {
  fs::create_directories(path("in/pictures"));
  const testing::NamedBytes pictures = testing::hostile_pictures();
  const auto& [name, bytes] = pictures.at(1);  // the PNG with a broken header CRC
  const std::string file = write("in/pictures/" + name, bytes);
  expect_rejected(quantize_args(path("in/model.onnx"), path("in/pictures"), {"--preset", "XINT8", "--preprocess", "raw"}),
                  file, "cannot decode PNG picture");
}

TEST_F(BadInputMatrix, EmptyPictureFolder) {
  fs::create_directories(path("in/nothing"));
  expect_rejected(quantize_args(path("in/model.onnx"), path("in/nothing")), path("in/nothing"),
                  "folder has no pictures (.png, .jpg, .jpeg, .bmp) and no arrays (.npy, .npz)");
}

// --- Configs --------------------------------------------------------------------------------

TEST_F(BadInputMatrix, ConfigNotJson) {
  const std::string config = write("in/broken.json", R"({"global_config": )");
  expect_rejected(quantize_args(path("in/model.onnx"), path("in/data.npy"), {"--config", config}), config,
                  "not valid JSON");
}

TEST_F(BadInputMatrix, ConfigUnknownSpec) {
  const std::string config = write("in/spec.json", R"({"global_config": {"weight": {"spec": "Int9Spec", "params": {}}}})");
  expect_rejected(quantize_args(path("in/model.onnx"), path("in/data.npy"), {"--config", config}), config, "Int9Spec");
}

TEST_F(BadInputMatrix, ConfigNumberOverflow) {
  const std::string config = write("in/big.json", R"({"extra_options": {"NumCalibSamples": 1e999}})");
  expect_rejected(quantize_args(path("in/model.onnx"), path("in/data.npy"), {"--config", config}), config,
                  "number overflow");
}

TEST_F(BadInputMatrix, ConfigNestedTooDeep) {
  const std::string config = write("in/deep.json", "{\"x\": " + std::string(100000, '[') + std::string(100000, ']') + "}");
  expect_rejected(quantize_args(path("in/model.onnx"), path("in/data.npy"), {"--config", config}), config,
                  "nested deeper than 128 levels");
}

TEST_F(BadInputMatrix, ConfigInvalidRegex) {
  const std::string config = write("in/regex.json", R"({"exclude": {"node_names": ["(unclosed"]}})");
  expect_rejected(quantize_args(path("in/model.onnx"), path("in/data.npy"), {"--config", config}), config,
                  "exclude.node_names[0]: invalid regex");
}

// --- Criteria -------------------------------------------------------------------------------

TEST_F(BadInputMatrix, TargetGrammar) {
  expect_rejected({"compare", path("in/model.onnx"), path("in/model.onnx"), "--random", "2", "--target-accuracy",
                   "psnr>>30"},
                  "", "psnr>>30");
}

TEST_F(BadInputMatrix, EmptyTarget) {
  expect_rejected({"compare", path("in/model.onnx"), path("in/model.onnx"), "--random", "2", "--target-accuracy", ""},
                  "", "--target-accuracy is empty");
}

// --- Outputs --------------------------------------------------------------------------------

TEST_F(BadInputMatrix, MissingOutputFolderIsReportedBeforeCalibrating) {
  const auto before = inputs();
  const CliResult r = run_cli({"-v", "quantize", path("in/model.onnx"), "-o", path("out/missing/q.onnx"), "--preset",
                               "XINT8", "--calibration-data", path("in/data.npy")});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("the output folder " + path("out/missing") + " does not exist"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("calibrat"), std::string::npos) << "calibrated first: " << r.err;
  EXPECT_EQ(inputs(), before);
  EXPECT_TRUE(fs::is_empty(path("out")));
}

TEST_F(BadInputMatrix, ReadOnlyOutputFolder) {
  // /proc refuses new files even to root (CI runs as root, who writes into any mode-0555 folder).
  const auto before = inputs();
  const CliResult r = run_cli({"quantize", path("in/model.onnx"), "-o", "/proc/mixprec_q.onnx", "--preset", "XINT8",
                               "--calibration-data", path("in/data.npy")});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("/proc/mixprec_q.onnx: cannot write into the output folder /proc"), std::string::npos) << r.err;
  EXPECT_EQ(inputs(), before);
}

TEST_F(BadInputMatrix, DiskFullWhileWritingTheModel) {
  // RLIMIT_FSIZE makes every write past 512 bytes fail with EFBIG, as a full disk fails with
  // ENOSPC: the config (written first, under a temporary name) and the model (a few KiB) cannot
  // be written; the message fits.
  expect_rejected(quantize_args(path("in/model.onnx"), path("in/data.npy")), path("out/q.config.json"),
                  "write failed (disk full?)", {.file_size_limit = 512});
}

TEST_F(BadInputMatrix, ConfigBesideTheModelCannotBeWritten) {
  // The config's place is taken by a folder: the model must not stay without its config.
  fs::create_directories(path("out/q.config.json"));
  const auto before = inputs();
  const CliResult r = run_cli(quantize_args(path("in/model.onnx"), path("in/data.npy")));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(path("out/q.config.json") + ": cannot write the config beside the model"), std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(path("out/q.onnx")));
  std::vector<std::string> left;
  for (const auto& entry : fs::directory_iterator(dir_ / "out")) left.push_back(entry.path().filename().string());
  EXPECT_EQ(left, std::vector<std::string>{"q.config.json"});  // the folder that was there, untouched
  EXPECT_TRUE(fs::is_empty(path("out/q.config.json")));
  EXPECT_EQ(inputs(), before);
}

}  // namespace
}  // namespace mixprec
