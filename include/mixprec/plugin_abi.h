/* The C interface between mixprec and a plugin's shared library (mixprec/plugins.h says how
 * plugins are found, described and consented to). C, so a plugin may be built with any
 * compiler and links nothing of mixprec: everything it needs from mixprec comes through the
 * host table it is handed.
 *
 * A plugin library exports mixprec_plugin_abi_version and at least one of the other two:
 *   uint32_t mixprec_plugin_abi_version(void);   returns MIXPREC_PLUGIN_ABI_VERSION it was built with
 *   int mixprec_plugin_run(MixprecHost* host, const MixprecHostApi* api, int argc,
 *                          const char* const* argv, MixprecPluginResult* result);
 *   int mixprec_plugin_register(MixprecRegistry* registry, const MixprecRegisterApi* api,
 *                               char* error, size_t error_size);
 * mixprec loads the library only when the plugin is named, and checks the version (a library
 * built for interface 1, which had no register, still runs).
 *
 * run (`guide --plugin NAME ARGS...`) is called once with the plugin's own arguments, untouched
 * (argv[0] is the plugin's name). It returns 0 and fills result->model_path (the quantized model
 * mixprec continues with: validate, compiler options, compile) and, when it has one,
 * result->config_path; or returns non-zero with a one-line result->error.
 *
 * register (`--use-plugin NAME` on quantize, explore, guide, ladder, requantize, dry-run) is
 * called once, before the command does any work, and adds what the manifest's "adds" lists
 * (exactly that: a name the manifest does not list, or one it lists and register does not add,
 * is an error): calibration methods (a config's "calib_method", --calib-method, guide's method
 * sweep), passes (a config's algo_config entry {"name": ..., its own parameters}), ONNX
 * Runtime custom-op libraries and (interface 3) formats: a format is fake quantization by one
 * custom op of the plugin's library, put on the tensors a config gives the format. The
 * callbacks it hands over are called from mixprec's threads, one call at a time per callback;
 * `user` is passed back untouched and must live for the process.
 *
 * Strings are UTF-8 and NUL-terminated; the host's strings live for the whole call. */
#ifndef MIXPREC_PLUGIN_ABI_H
#define MIXPREC_PLUGIN_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MIXPREC_PLUGIN_ABI_VERSION 3u
#define MIXPREC_PLUGIN_ABI_OLDEST 1u /* the oldest interface this host still loads */

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

/* ---- Registration (interface 2) ---- */

/* One tensor's calibration statistics. Bin i of `bins` covers [-range + i*w, -range + (i+1)*w)
 * with w = 2 * range / bin_count; values of magnitude beyond range sit in the edge bins. */
typedef struct MixprecTensorStats {
  float min, max;        /* over every finite value seen */
  uint64_t count;        /* finite values seen: the sum of bins */
  float range;           /* R */
  const uint64_t* bins;
  size_t bin_count;
} MixprecTensorStats;

/* The format the range is for. */
typedef struct MixprecFormatInfo {
  const char* name;      /* "int8", "uint8", "xint8", "int16", "fp8_e4m3", ... */
  int64_t qmin, qmax;    /* its code range (FP8: +-the largest finite value) */
  int integer_codes;     /* 1: integer codes; 0: FP8 codes */
  int power_of_two;      /* 1: the format's scales are powers of two */
  int symmetric;         /* 1: the range is for symmetric quantization */
} MixprecFormatInfo;

/* A calibration method: the float range [*range_min, *range_max] to quantize `stats` into
 * `format`. The host widens it to contain 0; it must be finite with min <= max. Returns 0; or
 * non-zero with a one-line message in `error`. */
typedef int (*MixprecRangeFn)(void* user, const MixprecTensorStats* stats, const MixprecFormatInfo* format,
                              float* range_min, float* range_max, char* error, size_t error_size);

enum {
  MIXPREC_CALIB_POWER_OF_TWO = 1u,       /* its scales are rounded to 2^k (needs symmetric quantization) */
  MIXPREC_CALIB_NEEDS_HISTOGRAM = 2u,    /* it reads bins (else min and max suffice) */
  MIXPREC_CALIB_KEEPS_BOUNDED_RANGE = 4u /* a bounded activation (an SE gate) keeps at least its observed range */
};

/* A pass: reads the ONNX model at `input_model`, writes the edited model to `output_model`
 * (both files in a folder of the host's; the host reads the output back and deletes both).
 * `params_json` is the algo_config entry's object without "name" ("{}" when it has none).
 * Returns 0; or non-zero with a one-line message in `error`. */
typedef int (*MixprecPassFn)(void* user, const char* input_model, const char* output_model, const char* params_json,
                             char* error, size_t error_size);

enum {
  MIXPREC_PASS_FLOAT = 0,    /* on the prepared float model, before statistics are collected */
  MIXPREC_PASS_QUANTIZED = 1 /* on each quantized model the run builds, last */
};

/* A format (interface 3): every tensor a config gives it gets one node `domain:op_type` with
 * `attributes`, float in, float out of the same shape (x -> op -> x'); with `weights`, a weight
 * too (w -> op -> w', the weight kept float in the model). The op sees the values themselves:
 * mixprec computes no scale for it. The op must be in a custom-op library the plugin adds
 * (add_custom_ops). To mixprec the format is otherwise a float format: allowed on every device
 * the plugin runs on and, in the cost model, as fast as `speed_as`. */
typedef struct MixprecFormatSpec {
  const char* name;            /* the short name: "step-half" */
  const char* spec_name;       /* the config spelling: "StepHalfSpec" */
  const char* domain;          /* the op's domain: "com.example" */
  const char* op_type;         /* "RoundToStep" */
  const char* attributes_json; /* a JSON object of the op's attributes: integers, floats (1.0) and strings; NULL: none */
  int weights;                 /* 1: weights get the op too; 0: only activations */
  const char* speed_as;        /* a built-in format's name ("bf16", "int8"); NULL: "bf16" */
} MixprecFormatSpec;

typedef struct MixprecRegistry MixprecRegistry; /* opaque: the plugin being registered */

typedef struct MixprecRegisterApi {
  uint32_t abi_version;        /* MIXPREC_PLUGIN_ABI_VERSION of the host */
  const char* mixprec_version;
  const char* device;          /* the run's device: "stx", "ve2", "cpu" */
  /* Each returns 0; or non-zero with `error` filled (a taken name, a name the manifest does not
   * list, an unloadable library). */
  int (*add_calibration_method)(MixprecRegistry* registry, const char* name, uint32_t flags, MixprecRangeFn range,
                                void* user, char* error, size_t error_size);
  int (*add_pass)(MixprecRegistry* registry, const char* name, int stage, MixprecPassFn run, void* user, char* error,
                  size_t error_size);
  /* An ONNX Runtime custom-op library (relative to the plugin's folder, or absolute) for every
   * session the run builds. */
  int (*add_custom_ops)(MixprecRegistry* registry, const char* library_path, char* error, size_t error_size);
  /* Interface 3 (check abi_version >= 3 before calling): a format (MixprecFormatSpec). */
  int (*add_format)(MixprecRegistry* registry, const MixprecFormatSpec* format, char* error, size_t error_size);
} MixprecRegisterApi;

typedef uint32_t (*MixprecPluginAbiVersionFn)(void);
typedef int (*MixprecPluginRunFn)(MixprecHost* host, const MixprecHostApi* api, int argc, const char* const* argv,
                                  MixprecPluginResult* result);
typedef int (*MixprecPluginRegisterFn)(MixprecRegistry* registry, const MixprecRegisterApi* api, char* error,
                                       size_t error_size);

#ifdef __cplusplus
}
#endif

#endif /* MIXPREC_PLUGIN_ABI_H */
