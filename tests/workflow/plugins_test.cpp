// Plugins: manifests and their errors, the search path, and loading and running the real
// block-formats plugin built from this repo (libs/plugins/block_formats) through its C interface;
// registration (--use-plugin): the shipped calib-aciq plugin's method against hand-worked
// ranges, and a test plugin's method and passes inside a real quantize run.
#include "mixprec/plugins.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <cmath>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "mixprec/calibration.h"
#include "mixprec/devices.h"
#include "mixprec/formats.h"
#include "mixprec/runtime.h"
#include "mixprec/config.h"
#include "mixprec/error.h"
#include "mixprec/jobs.h"
#include "mixprec/model_io.h"
#include "mixprec/npy.h"
#include "mixprec/tensor_proto.h"
#include "support/model_builder.h"
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
  // The test plugin (tests/plugins/passes_plugin.cpp) in a folder of its own with `adds`.
  std::string passes_plugin(const std::string& dir, const std::string& adds) {
    const fs::path folder = fs::path(path(dir)) / "passes";
    fs::create_directories(folder);
    std::ofstream(folder / "plugin.json") << R"({"name": "passes", "version": "1.0.0", "library": "lib.so",
                                                 "requires_mixprec": "0.1.0", "adds": )" << adds << "}";
    fs::create_symlink(MIXPREC_TEST_PASSES_PLUGIN, folder / "lib.so");
    return folder.string();
  }
  // The formats test plugin (tests/plugins/formats_plugin.cpp) with the test op library beside it.
  std::string formats_plugin(const std::string& dir, const std::string& adds) {
    const fs::path folder = fs::path(path(dir)) / "formats";
    fs::create_directories(folder);
    std::ofstream(folder / "plugin.json") << R"({"name": "formats", "version": "1.0.0", "library": "lib.so",
                                                 "requires_mixprec": "0.1.0", "adds": )" << adds << "}";
    fs::create_symlink(MIXPREC_TEST_FORMATS_PLUGIN, folder / "lib.so");
    fs::create_symlink(MIXPREC_TEST_OPS_LIB, folder / "ops.so");
    return folder.string();
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

// The ACIQ clip ratio t (t e^t = 3 * levels^2), by bisection: independent of the plugin's Newton.
double aciq_ratio(double levels) {
  double lo = 1, hi = 50;
  for (int i = 0; i < 200; ++i) {
    const double mid = (lo + hi) / 2;
    (mid * std::exp(mid) < 3 * levels * levels ? lo : hi) = mid;
  }
  return lo;
}

// 1000 values at 0.5, 1000 at -0.5 and one at 64: R = 128, bins 1/8 wide, so the values sit in
// bins centred at 0.5625, -0.4375 and 64.0625.
TensorStats aciq_stats() {
  StatsCollector c;
  std::vector<float> values(2000, 0.5f);
  std::fill(values.begin() + 1000, values.end(), -0.5f);
  values.push_back(64.0f);
  c.update(values);
  return c.stats();
}

TEST_F(PluginsTest, TheCalibAciqPluginClipsAtTheLaplaceOptimum) {
  const PluginManifest m = resolve_plugin("calib-aciq", {kPlugins}, "cpu");
  const LoadedPlugin loaded = use_plugin(m, "cpu");
  EXPECT_EQ(loaded.calibration_methods, std::vector<std::string>{"ACIQ"});
  EXPECT_EQ(describe(loaded), "adds calibration methods ACIQ");
  const std::optional<CalibMethod> aciq = calib_method_from_name("ACIQ");
  ASSERT_TRUE(aciq.has_value());
  EXPECT_TRUE(is_added_calib_method(*aciq));
  EXPECT_TRUE(calib_method_traits(*aciq).keeps_bounded_range);
  EXPECT_EQ(all_calib_methods().back().name, std::string("ACIQ"));
  // Named twice, it is the same registration (not a second "ACIQ").
  EXPECT_EQ(use_plugin(m, "cpu").calibration_methods, loaded.calibration_methods);

  const TensorStats stats = aciq_stats();
  // Symmetric int8: b = E|x| = (1000 * 0.5625 + 1000 * 0.4375 + 64.0625) / 2001; t = 9.897 (the paper lists 9.89 for 8 bits).
  const double b = (562.5 + 437.5 + 64.0625) / 2001;
  EXPECT_NEAR(aciq_ratio(256), 9.89, 0.01);
  Range r = compute_range(stats, *aciq, FormatId::kInt8, {.symmetric = true});
  EXPECT_FLOAT_EQ(r.min, -0.5f);  // [-alpha, alpha] kept inside [min, max]
  EXPECT_NEAR(r.max, aciq_ratio(256) * b, 1e-5);
  // 4-bit codes clip tighter: t = 5.03.
  EXPECT_NEAR(aciq_ratio(16), 5.03, 0.01);
  r = compute_range(stats, *aciq, FormatId::kInt4, {.symmetric = true});
  EXPECT_NEAR(r.max, aciq_ratio(16) * b, 1e-5);
  // Asymmetric uint8 fits around the mean.
  const double mean = (562.5 - 437.5 + 64.0625) / 2001;
  const double b_mean = (1000 * (0.5625 - mean) + 1000 * (0.4375 + mean) + (64.0625 - mean)) / 2001;
  r = compute_range(stats, *aciq, FormatId::kUInt8, {.symmetric = false});
  EXPECT_FLOAT_EQ(r.min, -0.5f);
  EXPECT_NEAR(r.max, mean + aciq_ratio(256) * b_mean, 1e-5);
  // FP8 grids are not uniform: the range seen.
  r = compute_range(stats, *aciq, FormatId::kFp8E4M3, {.symmetric = true});
  EXPECT_FLOAT_EQ(r.max, 64.0f);
}

TEST_F(PluginsTest, APluginWithoutRegisterIsRefusedByUsePlugin) {
  const std::string why = error_of([&] { use_plugin(resolve_plugin("block-formats", {kPlugins}, "stx"), "stx"); });
  EXPECT_NE(why.find("registers nothing (no mixprec_plugin_register): run it with guide --plugin block-formats"),
            std::string::npos)
      << why;
}

TEST_F(PluginsTest, WhatRegisterAddsMustBeWhatTheManifestLists) {
  // It registers HalfRange, tag-float and tag-quantized; this manifest lists the method only.
  // Registration lasts for the process: once another test of it has loaded the plugin, a second
  // load stops at "already defined" before the manifest is compared (ctest runs each test alone).
  if (calib_method_from_name("HalfRange")) GTEST_SKIP() << "plugin 'passes' was loaded by an earlier test of this process";
  const size_t methods = all_calib_methods().size();
  const std::string dir = passes_plugin("short", R"({"calibration_methods": ["HalfRange"]})");
  std::string why = error_of([&] { use_plugin(read_plugin_manifest(dir), "cpu"); });
  EXPECT_NE(why.find("plugin passes adds pass 'tag-float', which its manifest's adds.passes does not list"), std::string::npos)
      << why;
  // ... and nothing of it joined the run.
  EXPECT_FALSE(calib_method_from_name("HalfRange").has_value());
  EXPECT_EQ(all_calib_methods().size(), methods);
  const std::string more = passes_plugin(
      "long", R"({"calibration_methods": ["HalfRange", "Other"], "passes": ["tag-float", "tag-quantized"]})");
  why = error_of([&] { use_plugin(read_plugin_manifest(more), "cpu"); });
  EXPECT_NE(why.find("adds.calibration_methods lists 'Other', which plugin 'passes' did not register"), std::string::npos) << why;
  EXPECT_FALSE(calib_method_from_name("HalfRange").has_value());
  EXPECT_EQ(all_calib_methods().size(), methods);
}

// A quantize run with the plugin's method and both its passes: y = x W on one sample
// x = (1, -2, 0.5, 4). HalfRange gives x the range [-1, 2], so its A8W8 scale is 2 / 127; the
// float pass sees no QuantizeLinear, the quantized pass the model's.
TEST_F(PluginsTest, ARegisteredMethodAndPassesRunInsideQuantize) {
  const LoadedPlugin loaded = use_plugin(
      read_plugin_manifest(passes_plugin("p", R"({"calibration_methods": ["HalfRange"], "passes": ["tag-float", "tag-quantized"]})")),
      "cpu");
  EXPECT_EQ(describe(loaded), "adds calibration methods HalfRange; passes tag-float (float), tag-quantized (quantized)");
  save_model(testing::ModelBuilder()
                 .add_input("x", onnx::TensorProto::FLOAT, {1, 4})
                 .add_output("y", onnx::TensorProto::FLOAT, {1, 2})
                 .add_initializer("w", {4, 2}, {1, -1, 2, 0, 0, 1, -1, 2})
                 .add_node("MatMul", {"x", "w"}, {"y"}, {}, "mm")
                 .build(),
             path("model.onnx"));
  const std::vector<float> x = {1, -2, 0.5f, 4};
  write_npy(path("x.npy"), Tensor::from_floats({1, 4}, x));
  QuantConfig config = *preset_config("A8W8");
  config.extra.calib_method = *calib_method_from_name("HalfRange");
  config.algorithms = {{.name = "tag-float", .params = {{"k", 1}}}, {.name = "tag-quantized"}};
  save_config(config, path("config.json"));
  EXPECT_EQ(algorithm_recipe(load_config(path("config.json"))).names(),
            (std::vector<std::string>{"tag-float", "tag-quantized"}));

  QuantizeParams q;
  q.setup.model_path = path("model.onnx");
  q.setup.calibration.data.files = {path("x.npy")};
  q.output_path = path("out.onnx");
  q.config.path = path("config.json");
  const QuantizeReport report = quantize_job(q);
  ASSERT_EQ(report.prepare.passes.size(), 1u);
  EXPECT_EQ(report.prepare.passes[0].rfind("tag-float (plugin passes): ", 0), 0u) << report.prepare.passes[0];

  const onnx::ModelProto out = load_model(q.output_path);
  std::map<std::string, std::string> meta;
  for (const auto& p : out.metadata_props()) meta[p.key()] = p.value();
  EXPECT_EQ(meta["tag-float"], R"({"k":1} QuantizeLinear=0)");
  int quantize = 0;
  std::string x_scale;
  for (const auto& node : out.graph().node()) {
    if (node.op_type() != "QuantizeLinear") continue;
    ++quantize;
    if (node.input(0) == "x") x_scale = node.input(1);
  }
  EXPECT_EQ(meta["tag-quantized"], "{} QuantizeLinear=" + std::to_string(quantize));
  ASSERT_FALSE(x_scale.empty());
  for (const auto& init : out.graph().initializer()) {
    if (init.name() == x_scale) {
      EXPECT_FLOAT_EQ(tensor_from_proto(init, "scale").to_floats().at(0), 2.0f / 127);
    }
  }

  // A pass that fails stops the run with its message; nothing is written.
  config.algorithms = {{.name = "tag-quantized", .params = {{"fail", true}}}};
  save_config(config, path("failing.json"));
  q.config.path = path("failing.json");
  q.output_path = path("never.onnx");
  const std::string why = error_of([&] { quantize_job(q); });
  EXPECT_NE(why.find("plugin passes: pass tag-quantized failed: tag-quantized was told to fail"), std::string::npos) << why;
  EXPECT_FALSE(fs::exists(q.output_path));
}

// A plugin's format: y = x' W' with x = (1, -2, 0.3, 4.2) and W = [[1.2, -1], [2, 0], [0, 1],
// [-1, 2.3]], its op rounding to steps of 0.5: x' = (1, -2, 0.5, 4), W' = [[1, -1], [2, 0],
// [0, 1], [-1, 2.5]], so y = (1 - 4 - 4, -1 + 0.5 + 10) = (-7, 9.5) (on the step grid: the op on
// y changes nothing), where float gives (-7.6, 8.96).
TEST_F(PluginsTest, ARegisteredFormatPutsItsOpOnActivationsAndWeights) {
  // Registering a format the manifest does not list adds nothing; nor does a listed non-built-in
  // format the plugin does not register.
  EXPECT_NE(error_of([&] { use_plugin(read_plugin_manifest(formats_plugin("unlisted", "{}")), "cpu"); })
                .find("plugin formats adds format 'step-half', which its manifest's adds.formats does not list"),
            std::string::npos);
  EXPECT_FALSE(format_from_name("step-half"));
  const std::string unregistered = error_of([&] {
    use_plugin(read_plugin_manifest(formats_plugin("nonsuch", R"({"formats": ["bf16", "step-half", "nonsuch"]})")), "cpu");
  });
  EXPECT_NE(unregistered.find("adds.formats lists 'nonsuch', which plugin 'formats' did not register"), std::string::npos)
      << unregistered;
  EXPECT_FALSE(format_from_name("step-half"));  // a refused plugin adds nothing

  const LoadedPlugin loaded = use_plugin(read_plugin_manifest(formats_plugin("ok", R"({"formats": ["step-half"]})")), "cpu");
  EXPECT_EQ(describe(loaded), "adds formats step-half; 1 custom-op libraries");
  const std::optional<FormatId> id = format_from_name("StepHalfSpec");
  ASSERT_TRUE(id);
  EXPECT_EQ(format_from_name("step-half"), id);
  EXPECT_FALSE(format_traits(*id).is_qdq);
  EXPECT_EQ(relative_speed(device_profile("stx"), *id), relative_speed(device_profile("stx"), FormatId::kBFloat16));

  save_model(testing::ModelBuilder()
                 .add_input("x", onnx::TensorProto::FLOAT, {1, 4})
                 .add_output("y", onnx::TensorProto::FLOAT, {1, 2})
                 .add_initializer("w", {4, 2}, {1.2f, -1, 2, 0, 0, 1, -1, 2.3f})
                 .add_node("MatMul", {"x", "w"}, {"y"}, {}, "mm")
                 .build(),
             path("model.onnx"));
  const std::vector<float> x = {1, -2, 0.3f, 4.2f};
  write_npy(path("x.npy"), Tensor::from_floats({1, 4}, x));
  QuantConfig config;
  const TensorQuantSpec spec{.format = *id};
  config.global = {.input_tensors = spec, .weight = spec, .bias = std::nullopt, .output_tensors = spec};
  save_config(config, path("config.json"));
  std::ifstream text_in(path("config.json"));
  const std::string text((std::istreambuf_iterator<char>(text_in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("\"StepHalfSpec\""), std::string::npos) << text;
  EXPECT_EQ(load_config(path("config.json")), config);

  QuantizeParams q;
  q.setup.model_path = path("model.onnx");
  q.setup.calibration.data.files = {path("x.npy")};
  q.output_path = path("out.onnx");
  q.config.path = path("config.json");
  const QuantizeReport report = quantize_job(q);
  EXPECT_EQ(report.rewrite.added_format_ops, 3);  // x, w and y's
  EXPECT_EQ(report.rewrite.block_ops, 0);          // not BFP/MX
  const onnx::ModelProto out = load_model(q.output_path);
  std::map<std::string, std::string> op_inputs;  // RoundToStep's input -> its step
  for (const auto& node : out.graph().node()) {
    EXPECT_NE(node.op_type(), "QuantizeLinear");
    if (node.op_type() != "RoundToStep") continue;
    EXPECT_EQ(node.domain(), "test.mixprec");
    ASSERT_EQ(node.attribute_size(), 1);
    op_inputs[node.input(0)] = node.attribute(0).name() + "=" + std::to_string(node.attribute(0).f());
  }
  EXPECT_EQ(op_inputs, (std::map<std::string, std::string>{
                           {"x", "step=0.500000"}, {"w", "step=0.500000"}, {"y_prequant", "step=0.500000"}}));  // y's op writes the graph output
  EXPECT_TRUE(std::ranges::any_of(out.opset_import(), [](const auto& o) { return o.domain() == "test.mixprec"; }));
  for (const auto& init : out.graph().initializer()) {
    if (init.name() == "w") {
      EXPECT_FLOAT_EQ(tensor_from_proto(init, "w").to_floats().at(0), 1.2f);  // kept float
    }
  }

  // ONNX Runtime runs the plugin's op (use_plugin registered its library with every session).
  const NamedTensors y = Session::from_model(out, "out.onnx").run({{"x", Tensor::from_floats({1, 4}, x)}});
  ASSERT_EQ(y.size(), 1u);
  EXPECT_EQ(y.begin()->second.to_floats(), (std::vector<float>{-7, 9.5f}));

  // Quark's shape has no data type for it: a clear error, nothing written.
  const std::string why = error_of([&] { save_config(config, path("quark.json"), ConfigShape::kQuark); });
  EXPECT_NE(why.find("Quark has no data type for StepHalfSpec"), std::string::npos) << why;
  EXPECT_FALSE(fs::exists(path("quark.json")));
}

}  // namespace
}  // namespace mixprec
