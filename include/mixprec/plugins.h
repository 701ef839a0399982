// Plugins (../shared/VITIS.md "Plugins"): specialised methods found at run time in a plugin
// folder, never from a hard-coded list, and loaded only when named.
//
// A plugin is a folder `<plugin dir>/<name>/` holding plugin.json and a shared library with
// the C interface of mixprec/plugin_abi.h. plugin.json:
//   {"name": "block-formats",                 the folder's name
//    "version": "1.0.0",
//    "description": "one line",
//    "library": "libmixprec_block_formats.so", beside plugin.json
//    "requires_mixprec": "0.1.0",             the oldest mixprec it runs with
//    "devices": ["stx", "ve2"],               optional: where it may run (absent: everywhere)
//    "adds": {"formats": ["mx9"], "calibration_methods": ["ACIQ"], "passes": ["clip-weights"], "custom_ops": []},
//                                             formats: built-in ones are allowed on its devices when it
//                                             runs; the others, methods and passes are what its
//                                             register adds (exactly)
//    "commands": [{"name": "quantize", "usage": "...", "description": "..."}],
//    "compiler_flags": "flag=1",              optional: appended to the compiler's fe_args
//    "consent": "banner text"}                optional: shown; the run needs consent to go on
// The formats it adds become available on its devices for that run only.
//
// The search path: the --plugin-dir folders, then MIXPREC_PLUGIN_PATH (':'-separated), then the
// default <prefix>/lib/mixprec/plugins, where <prefix> is the parent of the executable's folder
// when that folder is called bin (an installed mixprec), else the executable's folder itself (a
// build tree: build/lib/mixprec/plugins). The first folder holding `<name>/` wins.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace mixprec {

struct PluginCommand {
  std::string name, usage, description;
};

struct PluginManifest {
  std::string name, version, description, library, requires_mixprec;
  std::vector<std::string> devices;  // empty: every device
  std::vector<std::string> formats, calibration_methods, passes, custom_ops;  // "adds"
  std::vector<PluginCommand> commands;
  std::string compiler_flags;
  std::string consent;               // empty: no banner
  std::string dir;                   // the plugin's folder
  std::string manifest_path;
};

// mixprec's own version ("0.1.0").
const std::string& mixprec_version();

// The folders searched, in order (see the header comment).
std::vector<std::string> plugin_search_path(const std::vector<std::string>& plugin_dirs);

// plugin.json of the plugin folder `dir`. kBadInput naming the manifest for a missing file,
// malformed JSON, a missing or mistyped field, a name that is not the folder's, or a library
// path that leaves the folder.
PluginManifest read_plugin_manifest(const std::string& dir);

struct InstalledPlugins {
  std::vector<PluginManifest> plugins;  // by search order, then name; a name shadowed by an earlier folder is left out
  std::vector<std::string> broken;      // "path: what is wrong" for folders whose manifest does not read
};
InstalledPlugins installed_plugins(const std::vector<std::string>& search_path);

// The plugin called `name` on the path. kBadInput when it is not installed (the message lists
// the installed ones and the folders searched), when it needs a newer mixprec, or when its
// manifest does not list `device`.
PluginManifest resolve_plugin(const std::string& name, const std::vector<std::string>& search_path,
                              const std::string& device);

// What the host offers a running plugin (plugin_abi.h's MixprecHostApi).
struct PluginHost {
  std::string model_path, device, work_dir;
  std::vector<std::string> op_types;  // of the model, each once
  // Quantize the run's model with a config given as JSON text to `output_path`; throws Error.
  std::function<void(const std::string& config_json, const std::string& output_path)> quantize;
  // Register an ONNX Runtime custom-op library (an absolute path) for the run's sessions; throws Error.
  std::function<void(const std::string& library_path)> register_custom_ops;
};

struct PluginRun {
  std::string model_path, config_path;  // what the plugin returned (config_path may be empty)
  std::vector<std::string> custom_op_libraries;  // registered through the host, absolute paths
  double seconds = 0;
};

// Loads the plugin's library (only now), checks its ABI version and runs it with `args`
// untouched. kBadInput when the library does not load, lacks the entry points, was built for
// another ABI version, fails (its message), or returns a model that does not exist.
PluginRun run_plugin(const PluginManifest& plugin, const std::vector<std::string>& args, const PluginHost& host);

// What a plugin named with --use-plugin added to the run (plugin_abi.h's register).
struct LoadedPlugin {
  std::string name, version;
  std::vector<std::string> calibration_methods, passes;  // now known by name (calibration.h, config.h)
  std::vector<std::string> formats;                      // added ones (formats.h's add_format), by short name
  std::vector<std::string> custom_op_libraries;          // registered with every session, absolute paths
  double seconds = 0;
};

// Loads the plugin's library (only now) and calls its register: its calibration methods,
// passes and formats join the run's (add_calib_method, add_pass, add_format), its custom-op
// libraries every session. A name in the manifest's adds.formats that is a built-in format is an
// allowance (guide --plugin), not something register must add.
// Call it once per plugin, before the run starts. kBadInput when the library does not load, was
// built for another interface, has no register, fails, or adds something its manifest does not
// list or leaves out something it lists.
LoadedPlugin use_plugin(const PluginManifest& plugin, const std::string& device);
// "adds calibration methods ACIQ; passes clip-weights (float)".
std::string describe(const LoadedPlugin& plugin);

}  // namespace mixprec
