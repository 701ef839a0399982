// A plugin for the tests: it registers a custom-op library through the host and hands back a
// model that needs it, as a plugin with its own ops would.
//   ops-plugin LIBRARY MODEL CONFIG
#include <string>

#include "mixprec/plugin_abi.h"
#include "plugin_text.h"

using mixprec_test_plugins::set;

extern "C" __attribute__((visibility("default"))) uint32_t mixprec_plugin_abi_version(void) {
  return MIXPREC_PLUGIN_ABI_VERSION;
}

extern "C" __attribute__((visibility("default"))) int mixprec_plugin_run(MixprecHost* host, const MixprecHostApi* api,
                                                                         int argc, const char* const* argv,
                                                                         MixprecPluginResult* result) {
  if (argc != 4) {
    set(result->error, sizeof result->error, "usage: ops-plugin LIBRARY MODEL CONFIG");
    return 1;
  }
  char error[MIXPREC_PLUGIN_ERROR_MAX] = {0};
  if (api->register_custom_ops(host, argv[1], error, sizeof error) != 0) {
    set(result->error, sizeof result->error, std::string("register_custom_ops: ") + error);
    return 1;
  }
  set(result->model_path, sizeof result->model_path, argv[2]);
  set(result->config_path, sizeof result->config_path, argv[3]);
  return 0;
}
