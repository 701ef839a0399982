// A plugin for the tests that registers (plugin_abi.h's register, interface 3) one format and the
// custom-op library that computes it:
//   step-half (StepHalfSpec): test.mixprec RoundToStep with step 0.5 (tests/plugins/test_ops.cpp)
//                             on activations and weights, priced as bf16;
//   the library: ops.so in the plugin's folder.
#include <string>

#include "mixprec/plugin_abi.h"
#include "plugin_text.h"

using mixprec_test_plugins::set;

extern "C" __attribute__((visibility("default"))) uint32_t mixprec_plugin_abi_version(void) {
  return MIXPREC_PLUGIN_ABI_VERSION;
}

extern "C" __attribute__((visibility("default"))) int mixprec_plugin_register(MixprecRegistry* registry,
                                                                              const MixprecRegisterApi* api, char* error,
                                                                              size_t error_size) {
  if (api->abi_version < 3) {  // an older host's table ends before add_format
    set(error, error_size, "needs plugin interface 3 (formats)");
    return 1;
  }
  const MixprecFormatSpec step_half{.name = "step-half",
                                    .spec_name = "StepHalfSpec",
                                    .domain = "test.mixprec",
                                    .op_type = "RoundToStep",
                                    .attributes_json = R"({"step": 0.5})",
                                    .weights = 1,
                                    .speed_as = "bf16"};
  if (api->add_format(registry, &step_half, error, error_size) != 0) return 1;
  return api->add_custom_ops(registry, "ops.so", error, error_size);
}
