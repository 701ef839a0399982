// Plugins: manifests and their errors, the search path, and loading and running the real
// block-formats plugin built from this repo (libs/plugins/block_formats) through its C interface.
#include "mixprec/plugins.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "mixprec/error.h"
#include "support/temp_dir.h"

namespace mixprec {
namespace {
namespace fs = std::filesystem;

const std::string kPlugins = MIXPREC_TEST_PLUGINS_DIR;

class PluginsTest : public testing::TempDirTest {
 protected:
  // `dir`/`name`/plugin.json with `manifest`.
  std::string write_plugin(const std::string& dir, const std::string& name, const std::string& manifest) {
    const fs::path folder = fs::path(path(dir)) / name;
    fs::create_directories(folder);
    std::ofstream(folder / "plugin.json") << manifest;
    return folder.string();
  }
  static std::string manifest(const std::string& name, const std::string& extra = "") {
    return R"({"name": ")" + name + R"(", "version": "1.2.0", "library": "lib.so", "requires_mixprec": "0.1.0")" +
           extra + "}";
  }
  static std::string error_of(const std::function<void()>& f) {
    try {
      f();
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
};

TEST_F(PluginsTest, TheShippedManifestReads) {
  const PluginManifest m = read_plugin_manifest(kPlugins + "/block-formats");
  EXPECT_EQ(m.name, "block-formats");
  EXPECT_EQ(m.library, "libmixprec_block_formats.so");
  EXPECT_EQ(m.formats, (std::vector<std::string>{"bfp16", "mx4", "mx6", "mx9", "mxint8"}));
  ASSERT_EQ(m.commands.size(), 1u);
  EXPECT_EQ(m.commands[0].name, "quantize");
  EXPECT_FALSE(m.consent.empty());
  EXPECT_TRUE(fs::exists(fs::path(m.dir) / m.library));
}

TEST_F(PluginsTest, BadManifestsNameTheFileAndTheProblem) {
  const auto bad = [&](const std::string& name, const std::string& text) {
    return error_of([&] { read_plugin_manifest(write_plugin("bad", name, text)); });
  };
  EXPECT_NE(bad("a", "{not json").find("a/plugin.json: not valid JSON"), std::string::npos);
  EXPECT_NE(bad("b", R"({"version": "1.0.0", "library": "x.so", "requires_mixprec": "0.1.0"})").find("b/plugin.json: no \"name\""),
            std::string::npos);
  EXPECT_NE(bad("c", manifest("other")).find("\"name\" is 'other' but the folder is 'c'"), std::string::npos);
  EXPECT_NE(bad("d", R"({"name": "d", "version": "1.0.0", "library": "../evil.so", "requires_mixprec": "0.1.0"})")
                .find("\"library\" must be a file name beside plugin.json"),
            std::string::npos);
  EXPECT_NE(bad("e", R"({"name": "e", "version": "one", "library": "x.so", "requires_mixprec": "0.1.0"})")
                .find("\"version\" 'one' is not a version"),
            std::string::npos);
  EXPECT_NE(bad("f", manifest("f", R"(, "devices": "stx")")).find("\"devices\" must be a list of strings"),
            std::string::npos);
  EXPECT_NE(error_of([&] { read_plugin_manifest(path("nowhere")); }).find("no plugin manifest here"), std::string::npos);
}

TEST_F(PluginsTest, TheFirstFolderOnThePathWinsAndBrokenOnesAreListed) {
  write_plugin("one", "alpha", manifest("alpha"));
  write_plugin("one", "broken", "[]");
  write_plugin("two", "alpha", manifest("alpha", R"(, "description": "shadowed")"));
  write_plugin("two", "beta", manifest("beta"));
  const InstalledPlugins installed = installed_plugins({path("one"), path("two"), path("missing")});
  ASSERT_EQ(installed.plugins.size(), 2u);
  EXPECT_EQ(installed.plugins[0].name, "alpha");
  EXPECT_EQ(installed.plugins[0].description, "");  // one/alpha, not two/alpha
  EXPECT_EQ(installed.plugins[1].name, "beta");
  ASSERT_EQ(installed.broken.size(), 1u);
  EXPECT_NE(installed.broken[0].find("broken/plugin.json: the manifest must be a JSON object"), std::string::npos);

  EXPECT_EQ(resolve_plugin("beta", {path("one"), path("two")}, "stx").dir, path("two") + "/beta");
  const std::string missing = error_of([&] { resolve_plugin("gamma", {path("one"), path("two")}, "stx"); });
  EXPECT_NE(missing.find("no plugin 'gamma' (installed: alpha, beta; searched " + path("one")), std::string::npos)
      << missing;
  write_plugin("four", "npu", manifest("npu", R"(, "devices": ["stx", "ve2"])"));
  EXPECT_NE(error_of([&] { resolve_plugin("npu", {path("four")}, "cpu"); }).find("runs on stx, ve2, not on cpu"),
            std::string::npos);
}

TEST_F(PluginsTest, APluginNeedingANewerMixprecIsRefused) {
  write_plugin("p", "future", R"({"name": "future", "version": "1.0.0", "library": "x.so", "requires_mixprec": "99.0.0"})");
  EXPECT_NE(error_of([&] { resolve_plugin("future", {path("p")}, "stx"); })
                .find("plugin 'future' needs mixprec 99.0.0 or newer; this is " + mixprec_version()),
            std::string::npos);
}

TEST_F(PluginsTest, TheBlockFormatsPluginRunsThroughTheHostsQuantize) {
  const PluginManifest m = resolve_plugin("block-formats", {kPlugins}, "stx");
  std::vector<std::string> configs;
  PluginHost host{.model_path = path("model.onnx"), .device = "stx", .work_dir = path(""),
                  .op_types = {"Conv", "Relu", "MatMul"},
                  .quantize = [&](const std::string& json, const std::string& output) {
                    configs.push_back(json);
                    std::ofstream(output) << "model";
                    std::ofstream(fs::path(output).replace_extension(".config.json")) << "{}";
                  }};
  const PluginRun run = run_plugin(m, {"quantize", "--format", "mx9", "--exclude", "^head.*"}, host);
  EXPECT_EQ(run.model_path, path("") + "/block-formats.mx9.onnx");
  EXPECT_EQ(run.config_path, path("") + "/block-formats.mx9.config.json");
  ASSERT_EQ(configs.size(), 1u);
  // MX9 on the model's dot-product ops (Conv and MatMul here), BF16 elsewhere, the regex excluded.
  const auto config = nlohmann::json::parse(configs[0]);
  EXPECT_EQ(config["global_config"]["input_tensors"]["spec"], "BFloat16Spec");
  EXPECT_EQ(config["layer_type_config"][0]["op_types"], nlohmann::json::parse(R"(["Conv", "MatMul"])"));
  EXPECT_EQ(config["layer_type_config"][0]["layer_config"]["weight"]["spec"], "MX9Spec");
  EXPECT_EQ(config["exclude"]["node_names"][0], "^head.*");

  // Its own argument errors, and the host's, come back as one line naming the plugin.
  const std::string bad_format = error_of([&] { run_plugin(m, {"quantize", "--format", "mx7"}, host); });
  EXPECT_NE(bad_format.find("plugin 'block-formats' failed: unknown format 'mx7'; usage: block-formats quantize"),
            std::string::npos) << bad_format;
  host.quantize = [](const std::string&, const std::string&) { throw Error(ErrorKind::kBadInput, "cfg", "no such spec"); };
  const std::string host_error = error_of([&] { run_plugin(m, {"quantize", "--format", "bfp16"}, host); });
  EXPECT_NE(host_error.find("failed: quantize: cfg: no such spec"), std::string::npos) << host_error;
}

TEST_F(PluginsTest, ALibraryThatIsNotAPluginIsRefused) {
  const std::string dir = write_plugin("p", "fake", R"({"name": "fake", "version": "1.0.0", "library": "lib.so", "requires_mixprec": "0.1.0"})");
  fs::copy_file(MIXPREC_TEST_NOT_A_PLUGIN, fs::path(dir) / "lib.so");
  const PluginHost host{.model_path = "m.onnx", .device = "stx", .work_dir = path("")};
  EXPECT_NE(error_of([&] { run_plugin(read_plugin_manifest(dir), {}, host); }).find("not a mixprec plugin"),
            std::string::npos);
  const std::string missing = write_plugin("q", "gone", R"({"name": "gone", "version": "1.0.0", "library": "none.so", "requires_mixprec": "0.1.0"})");
  EXPECT_NE(error_of([&] { run_plugin(read_plugin_manifest(missing), {}, host); }).find("the plugin's library does not load"),
            std::string::npos);
}

}  // namespace
}  // namespace mixprec
