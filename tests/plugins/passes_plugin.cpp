// A plugin for the tests that registers (plugin_abi.h's register) one calibration method and two
// passes, so the tests can check what reaches them and what comes back:
//   HalfRange (calibration):  [min / 2, max / 2] of what calibration saw, for integer formats
//                             (an FP8 format is refused with a message);
//   tag-float (float pass):   adds metadata "tag-float" = its parameters and the model's
//                             QuantizeLinear count (0 on a float model);
//   tag-quantized (quantized): the same under "tag-quantized".
// A pass given {"fail": true} fails with a message.
#include <cstring>
#include <fstream>
#include <string>

#include <onnx/onnx_pb.h>

#include "mixprec/plugin_abi.h"
#include "plugin_text.h"

using mixprec_test_plugins::set;

namespace {

extern "C" int half_range(void*, const MixprecTensorStats* stats, const MixprecFormatInfo* format, float* range_min,
                          float* range_max, char* error, size_t error_size) {
  if (!format->integer_codes) {
    set(error, error_size, std::string("HalfRange takes integer formats, not ") + format->name);
    return 1;
  }
  *range_min = stats->min / 2;
  *range_max = stats->max / 2;
  return 0;
}

extern "C" int tag(void* user, const char* input_model, const char* output_model, const char* params, char* error,
                   size_t error_size) {
  const std::string key = static_cast<const char*>(user);
  if (std::strstr(params, "\"fail\":true") != nullptr) {
    set(error, error_size, key + " was told to fail");
    return 1;
  }
  onnx::ModelProto model;
  std::ifstream in(input_model, std::ios::binary);
  if (!model.ParseFromIstream(&in)) {
    set(error, error_size, std::string(input_model) + " is not a model");
    return 1;
  }
  int quantize = 0;
  for (const auto& node : model.graph().node()) quantize += node.op_type() == "QuantizeLinear" ? 1 : 0;
  auto* prop = model.add_metadata_props();
  prop->set_key(key);
  prop->set_value(std::string(params) + " QuantizeLinear=" + std::to_string(quantize));
  std::ofstream out(output_model, std::ios::binary);
  if (!model.SerializeToOstream(&out)) {
    set(error, error_size, std::string("cannot write ") + output_model);
    return 1;
  }
  return 0;
}

char kTagFloat[] = "tag-float";
char kTagQuantized[] = "tag-quantized";

}  // namespace

extern "C" __attribute__((visibility("default"))) uint32_t mixprec_plugin_abi_version(void) {
  return MIXPREC_PLUGIN_ABI_VERSION;
}

extern "C" __attribute__((visibility("default"))) int mixprec_plugin_register(MixprecRegistry* registry,
                                                                              const MixprecRegisterApi* api, char* error,
                                                                              size_t error_size) {
  if (api->add_calibration_method(registry, "HalfRange", 0, half_range, nullptr, error, error_size) != 0) return 1;
  if (api->add_pass(registry, kTagFloat, MIXPREC_PASS_FLOAT, tag, kTagFloat, error, error_size) != 0) return 1;
  if (api->add_pass(registry, kTagQuantized, MIXPREC_PASS_QUANTIZED, tag, kTagQuantized, error, error_size) != 0) return 1;
  return 0;
}
