// The block-formats plugin: block floating point (BFP16) and microexponent (MX4/6/9, MXINT8)
// quantization for the NPU devices, where mixprec's own configs refuse them (experimental
// there; VITIS.md: they reach users as plugins). It speaks only the C interface of
// mixprec/plugin_abi.h: it turns its own arguments into a config and asks the host to quantize.
//
//   block-formats quantize --format bfp16|mx4|mx6|mx9|mxint8 [--ops Conv,MatMul,...]
//                          [--rest bf16|fp32] [--exclude REGEX]... [-o OUT]
//
// --ops: the op types that get the block format (default Conv, ConvTranspose, MatMul, Gemm:
// the dot products the format's shared exponents are made for); --rest: what every other
// quantizable op gets (bf16, the default: the NPU runs float ops as BF16; fp32: left to the
// compiler's conversion); --exclude: node-name regexes kept in float; -o: the model (default
// WORK_DIR/block-formats.FORMAT.onnx).
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mixprec/plugin_abi.h"

namespace {

constexpr char kUsage[] =
    "usage: block-formats quantize --format bfp16|mx4|mx6|mx9|mxint8 [--ops Conv,MatMul,...] [--rest bf16|fp32] "
    "[--exclude REGEX]... [-o OUT]";

const std::map<std::string, std::string> kSpecs = {
    {"bfp16", "BFP16Spec"}, {"mx4", "MX4Spec"}, {"mx6", "MX6Spec"}, {"mx9", "MX9Spec"}, {"mxint8", "MXINT8Spec"}};

void set(char* out, size_t size, const std::string& text) {
  const size_t n = text.size() < size ? text.size() : size - 1;
  std::memcpy(out, text.data(), n);
  out[n] = '\0';
}

int fail(MixprecPluginResult* result, const std::string& message) {
  set(result->error, sizeof result->error, message);
  return 1;
}

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = list.find(',', start);
    const std::string item = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!item.empty()) out.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

nlohmann::ordered_json layer(const std::string& spec) {
  return {{"input_tensors", {{"spec", spec}}}, {"weight", {{"spec", spec}}}};
}

}  // namespace

extern "C" __attribute__((visibility("default"))) uint32_t mixprec_plugin_abi_version(void) {
  return MIXPREC_PLUGIN_ABI_VERSION;
}

extern "C" __attribute__((visibility("default"))) int mixprec_plugin_run(MixprecHost* host, const MixprecHostApi* api,
                                                                         int argc, const char* const* argv,
                                                                         MixprecPluginResult* result) {
  try {
    if (argc < 2 || std::strcmp(argv[1], "quantize") != 0) {
      return fail(result, std::string(argc < 2 ? "no command" : "unknown command '" + std::string(argv[1]) + "'") +
                              "; " + kUsage);
    }
    std::string format, rest = "bf16", output;
    // By default the dot-product ops the model has (a layer_type entry naming an absent op is warned about).
    std::vector<std::string> ops, exclude;
    for (const char* op : {"Conv", "ConvTranspose", "MatMul", "Gemm"}) {
      for (size_t k = 0; k < api->op_type_count; ++k) {
        if (std::strcmp(api->op_types[k], op) == 0) ops.emplace_back(op);
      }
    }
    for (int i = 2; i < argc; ++i) {
      const std::string arg = argv[i];
      if (i + 1 >= argc) return fail(result, "'" + arg + "' needs a value; " + kUsage);
      const std::string value = argv[++i];
      if (arg == "--format") {
        format = value;
      } else if (arg == "--ops") {
        ops = split(value);
      } else if (arg == "--rest") {
        rest = value;
      } else if (arg == "--exclude") {
        exclude.push_back(value);
      } else if (arg == "-o" || arg == "--output") {
        output = value;
      } else {
        return fail(result, "unknown option '" + arg + "'; " + kUsage);
      }
    }
    const auto spec = kSpecs.find(format);
    if (spec == kSpecs.end()) {
      return fail(result, (format.empty() ? std::string("no --format") : "unknown format '" + format + "'") + "; " +
                              kUsage);
    }
    if (ops.empty()) return fail(result, "no op type for the block format (the model has no Conv, ConvTranspose, MatMul or Gemm; name some with --ops)");
    if (rest != "bf16" && rest != "fp32") return fail(result, "--rest is bf16 or fp32, not '" + rest + "'");
    if (output.empty()) output = std::string(api->work_dir) + "/block-formats." + format + ".onnx";
    if (output.size() < 5 || output.compare(output.size() - 5, 5, ".onnx") != 0) {
      return fail(result, "-o '" + output + "' must end in .onnx");
    }

    nlohmann::ordered_json config = {
        {"global_config", rest == "bf16" ? layer("BFloat16Spec") : nlohmann::ordered_json::object()},
        {"layer_type_config", {{{"op_types", ops}, {"layer_config", layer(spec->second)}}}}};
    if (!exclude.empty()) config["exclude"] = {{"node_names", exclude}};
    api->log(host, MIXPREC_LOG_INFO,
             (spec->second + " on " + std::to_string(ops.size()) + " op types, the rest " + rest + " (" + api->device + ")").c_str());
    char error[MIXPREC_PLUGIN_ERROR_MAX] = {0};
    if (api->quantize(host, config.dump().c_str(), output.c_str(), error, sizeof error) != 0) {
      return fail(result, std::string("quantize: ") + error);
    }
    set(result->model_path, sizeof result->model_path, output);
    set(result->config_path, sizeof result->config_path, output.substr(0, output.size() - 5) + ".config.json");
    return 0;
  } catch (const std::exception& e) {
    return fail(result, e.what());
  }
}
