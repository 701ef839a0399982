/* The C interface between mixprec and a plugin's shared library (mixprec/plugins.h says how
 * plugins are found, described and consented to). C, so a plugin may be built with any
 * compiler and links nothing of mixprec: everything it needs from mixprec comes through the
 * host table it is handed.
 *
 * A plugin library exports two functions:
 *   uint32_t mixprec_plugin_abi_version(void);   returns MIXPREC_PLUGIN_ABI_VERSION it was built with
 *   int mixprec_plugin_run(MixprecHost* host, const MixprecHostApi* api, int argc,
 *                          const char* const* argv, MixprecPluginResult* result);
 * mixprec loads the library only when the plugin is named, checks the version, and calls run once
 * with the plugin's own arguments, untouched (argv[0] is the plugin's name). run returns 0 and
 * fills result->model_path (the quantized model mixprec continues with: validate, compiler
 * options, compile) and, when it has one, result->config_path; or returns non-zero with a
 * one-line result->error. Strings are UTF-8 and NUL-terminated; the host's strings live for the
 * whole call. */
#ifndef MIXPREC_PLUGIN_ABI_H
#define MIXPREC_PLUGIN_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MIXPREC_PLUGIN_ABI_VERSION 1u

enum { MIXPREC_LOG_INFO = 0, MIXPREC_LOG_WARNING = 1 };

typedef struct MixprecHost MixprecHost; /* opaque: the run that loaded the plugin */

typedef struct MixprecHostApi {
  uint32_t abi_version;        /* MIXPREC_PLUGIN_ABI_VERSION of the host */
  const char* mixprec_version; /* "0.1.0" */
  const char* model_path;      /* the float model of the run */
  const char* device;          /* "stx", "ve2", "cpu" */
  const char* work_dir;        /* where the run writes; a plugin writes its files here too */
  const char* const* op_types; /* the model's op types, each once ("Conv"; "domain:op" outside the default domain) */
  size_t op_type_count;
  /* A progress line (info, shown with -v) or a warning (always shown, and in the report). */
  void (*log)(MixprecHost* host, int level, const char* message);
  /* Quantizes the run's model with `config_json` (a config as `--config` takes it: mixprec's
   * shape or Quark's, with the formats, methods and algorithms mixprec knows and those the
   * plugin's manifest adds for its devices), calibrating on the run's calibration data once per
   * run, and writes `output_path` with its config beside it (OUTPUT.config.json). Returns 0; or
   * non-zero with a one-line message in `error` (at most error_size bytes with the NUL). */
  int (*quantize)(MixprecHost* host, const char* config_json, const char* output_path, char* error,
                  size_t error_size);
  /* Registers an ONNX Runtime custom-op library (one exporting RegisterCustomOps; a path relative
   * to the plugin's folder, or absolute) with every session the run builds from then on:
   * calibration, validation, compile and exec run the plugin's own ops. Returns 0; or non-zero
   * with `error` filled when ONNX Runtime does not load it. */
  int (*register_custom_ops)(MixprecHost* host, const char* library_path, char* error, size_t error_size);
} MixprecHostApi;

#define MIXPREC_PLUGIN_PATH_MAX 4096
#define MIXPREC_PLUGIN_ERROR_MAX 1024

typedef struct MixprecPluginResult {
  char model_path[MIXPREC_PLUGIN_PATH_MAX];
  char config_path[MIXPREC_PLUGIN_PATH_MAX]; /* "" when the model has no config */
  char error[MIXPREC_PLUGIN_ERROR_MAX];
} MixprecPluginResult;

typedef uint32_t (*MixprecPluginAbiVersionFn)(void);
typedef int (*MixprecPluginRunFn)(MixprecHost* host, const MixprecHostApi* api, int argc, const char* const* argv,
                                  MixprecPluginResult* result);

#ifdef __cplusplus
}
#endif

#endif /* MIXPREC_PLUGIN_ABI_H */
