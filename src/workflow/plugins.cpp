// Plugins: the search path, manifests, and loading and running a plugin's library (mixprec/plugins.h).
#include "mixprec/plugins.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/text.h"
#include "common/timing.h"
#include "mixprec/error.h"
#include "mixprec/log.h"
#include "mixprec/plugin_abi.h"

#ifndef MIXPREC_VERSION
#error "MIXPREC_VERSION is defined by the build"
#endif

// The opaque host a plugin is handed: the run's services and the plugin's name for messages.
struct MixprecHost {
  const mixprec::PluginHost* services;
  std::string plugin;
  std::string dir;                            // the plugin's folder: relative library paths start here
  std::vector<std::string> custom_op_libraries;  // registered so far
};

namespace mixprec {
namespace {
namespace fs = std::filesystem;
using Json = nlohmann::json;

std::vector<int> version_numbers(const std::string& version, const std::string& file, const std::string& field) {
  std::vector<int> numbers;
  std::stringstream in(version);
  std::string part;
  while (std::getline(in, part, '.')) {
    if (part.empty() || part.size() > 6 || !std::ranges::all_of(part, [](char c) { return c >= '0' && c <= '9'; })) {
      throw_bad_input(file, field + " '" + version + "' is not a version (MAJOR.MINOR.PATCH)");
    }
    numbers.push_back(std::stoi(part));
  }
  if (numbers.empty() || numbers.size() > 3) throw_bad_input(file, field + " '" + version + "' is not a version (MAJOR.MINOR.PATCH)");
  numbers.resize(3, 0);
  return numbers;
}

std::string string_field(const Json& json, const char* key, const std::string& file, bool required) {
  if (!json.contains(key)) {
    if (required) throw_bad_input(file, std::string("no \"") + key + "\"");
    return "";
  }
  if (!json[key].is_string()) throw_bad_input(file, std::string("\"") + key + "\" must be a string");
  return json[key].get<std::string>();
}

std::vector<std::string> strings_field(const Json& json, const char* key, const std::string& file) {
  std::vector<std::string> out;
  if (!json.contains(key)) return out;
  if (!json[key].is_array()) throw_bad_input(file, std::string("\"") + key + "\" must be a list of strings");
  for (const auto& item : json[key]) {
    if (!item.is_string()) throw_bad_input(file, std::string("\"") + key + "\" must be a list of strings");
    out.push_back(item.get<std::string>());
  }
  return out;
}

// <prefix>/lib/mixprec/plugins (see the header).
std::string default_plugin_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  fs::path prefix = exe.parent_path();
  if (prefix.filename() == "bin") prefix = prefix.parent_path();
  return (prefix / "lib" / "mixprec" / "plugins").string();
}

void copy_message(const std::string& message, char* out, size_t size) {
  if (out == nullptr || size == 0) return;
  const size_t n = std::min(message.size(), size - 1);
  std::memcpy(out, message.data(), n);
  out[n] = '\0';
}

extern "C" void host_log(MixprecHost* host, int level, const char* message) {
  const std::string line = "plugin " + host->plugin + ": " + (message != nullptr ? message : "");
  if (level == MIXPREC_LOG_WARNING) {
    log_warning(line);
  } else {
    log_info(line);
  }
}

extern "C" int host_quantize(MixprecHost* host, const char* config_json, const char* output_path, char* error,
                             size_t error_size) {
  try {
    if (config_json == nullptr || output_path == nullptr) throw_bad_input("", "quantize needs a config and an output path");
    host->services->quantize(config_json, output_path);
    return 0;
  } catch (const std::exception& e) {
    copy_message(e.what(), error, error_size);
    return 1;
  }
}

extern "C" int host_register_custom_ops(MixprecHost* host, const char* library_path, char* error, size_t error_size) {
  try {
    if (library_path == nullptr || *library_path == '\0') throw_bad_input("", "register_custom_ops needs a library path");
    if (!host->services->register_custom_ops) throw_bad_input("", "this run takes no custom-op libraries");
    fs::path path(library_path);
    if (path.is_relative()) path = fs::path(host->dir) / path;
    const std::string absolute = fs::absolute(path).lexically_normal().string();
    host->services->register_custom_ops(absolute);
    host->custom_op_libraries.push_back(absolute);
    return 0;
  } catch (const std::exception& e) {
    copy_message(e.what(), error, error_size);
    return 1;
  }
}

// The C string `field` of the result, bounded by its array (a plugin may forget the NUL).
std::string bounded(const char* field, size_t size) { return std::string(field, strnlen(field, size)); }

}  // namespace

const std::string& mixprec_version() {
  static const std::string version = MIXPREC_VERSION;
  return version;
}

std::vector<std::string> plugin_search_path(const std::vector<std::string>& plugin_dirs) {
  std::vector<std::string> path = plugin_dirs;
  if (const char* env = std::getenv("MIXPREC_PLUGIN_PATH"); env != nullptr) {
    std::stringstream in(env);
    std::string dir;
    while (std::getline(in, dir, ':')) {
      if (!dir.empty()) path.push_back(dir);
    }
  }
  if (const std::string dir = default_plugin_dir(); !dir.empty()) path.push_back(dir);
  return path;
}

PluginManifest read_plugin_manifest(const std::string& dir) {
  const std::string file = (fs::path(dir) / "plugin.json").string();
  std::ifstream in(file);
  if (!in) throw_bad_input(file, "no plugin manifest here (plugin.json)");
  Json json;
  try {
    json = Json::parse(in);
  } catch (const Json::exception& e) {
    throw_bad_input(file, std::string("not valid JSON: ") + e.what());
  }
  if (!json.is_object()) throw_bad_input(file, "the manifest must be a JSON object");
  PluginManifest m;
  m.dir = dir;
  m.manifest_path = file;
  m.name = string_field(json, "name", file, true);
  m.version = string_field(json, "version", file, true);
  m.description = string_field(json, "description", file, false);
  m.library = string_field(json, "library", file, true);
  m.requires_mixprec = string_field(json, "requires_mixprec", file, true);
  m.compiler_flags = string_field(json, "compiler_flags", file, false);
  m.consent = string_field(json, "consent", file, false);
  m.devices = strings_field(json, "devices", file);
  if (json.contains("adds")) {
    const Json& adds = json["adds"];
    if (!adds.is_object()) throw_bad_input(file, "\"adds\" must be an object");
    m.formats = strings_field(adds, "formats", file);
    m.calibration_methods = strings_field(adds, "calibration_methods", file);
    m.passes = strings_field(adds, "passes", file);
    m.custom_ops = strings_field(adds, "custom_ops", file);
  }
  if (json.contains("commands")) {
    if (!json["commands"].is_array()) throw_bad_input(file, "\"commands\" must be a list");
    for (const auto& c : json["commands"]) {
      if (!c.is_object()) throw_bad_input(file, "each of \"commands\" must be an object");
      m.commands.push_back({string_field(c, "name", file, true), string_field(c, "usage", file, false),
                            string_field(c, "description", file, false)});
    }
  }
  if (m.name != fs::path(dir).filename().string()) {
    throw_bad_input(file, "\"name\" is '" + m.name + "' but the folder is '" + fs::path(dir).filename().string() + "'");
  }
  if (m.library.empty() || m.library.find('/') != std::string::npos || m.library == "." || m.library == "..") {
    throw_bad_input(file, "\"library\" must be a file name beside plugin.json");
  }
  version_numbers(m.version, file, "\"version\"");
  version_numbers(m.requires_mixprec, file, "\"requires_mixprec\"");
  return m;
}

InstalledPlugins installed_plugins(const std::vector<std::string>& search_path) {
  InstalledPlugins out;
  std::set<std::string> seen;
  for (const auto& dir : search_path) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) continue;
    std::vector<fs::path> folders;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      if (entry.is_directory(ec)) folders.push_back(entry.path());
    }
    std::ranges::sort(folders);
    for (const auto& folder : folders) {
      const std::string name = folder.filename().string();
      if (seen.contains(name)) continue;
      try {
        out.plugins.push_back(read_plugin_manifest(folder.string()));
        seen.insert(name);
      } catch (const Error& e) {
        out.broken.push_back(e.what());
      }
    }
  }
  return out;
}

PluginManifest resolve_plugin(const std::string& name, const std::vector<std::string>& search_path,
                              const std::string& device) {
  for (const auto& dir : search_path) {
    const fs::path folder = fs::path(dir) / name;
    std::error_code ec;
    if (!fs::is_directory(folder, ec)) continue;
    PluginManifest m = read_plugin_manifest(folder.string());
    if (version_numbers(mixprec_version(), "", "mixprec's version") <
        version_numbers(m.requires_mixprec, m.manifest_path, "\"requires_mixprec\"")) {
      throw_bad_input(m.manifest_path, "plugin '" + name + "' needs mixprec " + m.requires_mixprec + " or newer; this is " +
                                           mixprec_version());
    }
    if (!m.devices.empty() && std::ranges::find(m.devices, device) == m.devices.end()) {
      throw_bad_input(m.manifest_path, "plugin '" + name + "' runs on " + text::join(m.devices) + ", not on " + device);
    }
    return m;
  }
  std::vector<std::string> names;
  for (const auto& p : installed_plugins(search_path).plugins) names.push_back(p.name);
  throw_bad_input("", "no plugin '" + name + "' (installed: " + (names.empty() ? "none" : text::join(names)) +
                          "; searched " + (search_path.empty() ? "nothing" : text::join(search_path)) + ")");
}

PluginRun run_plugin(const PluginManifest& plugin, const std::vector<std::string>& args, const PluginHost& host) {
  const std::string library = (fs::path(plugin.dir) / plugin.library).string();
  // Loaded for the rest of the process: a plugin's static state may outlive the call.
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    throw_bad_input(library, std::string("the plugin's library does not load: ") + (why != nullptr ? why : "?"));
  }
  auto abi = reinterpret_cast<MixprecPluginAbiVersionFn>(dlsym(handle, "mixprec_plugin_abi_version"));
  auto run = reinterpret_cast<MixprecPluginRunFn>(dlsym(handle, "mixprec_plugin_run"));
  if (abi == nullptr || run == nullptr) {
    throw_bad_input(library, "not a mixprec plugin: it lacks mixprec_plugin_abi_version or mixprec_plugin_run");
  }
  if (const uint32_t version = abi(); version != MIXPREC_PLUGIN_ABI_VERSION) {
    throw_bad_input(library, "built for plugin interface " + std::to_string(version) + "; this mixprec has " +
                                 std::to_string(MIXPREC_PLUGIN_ABI_VERSION));
  }
  MixprecHost state{&host, plugin.name, plugin.dir, {}};
  std::vector<const char*> op_types;
  for (const auto& op : host.op_types) op_types.push_back(op.c_str());
  const MixprecHostApi api{.abi_version = MIXPREC_PLUGIN_ABI_VERSION,
                           .mixprec_version = mixprec_version().c_str(),
                           .model_path = host.model_path.c_str(),
                           .device = host.device.c_str(),
                           .work_dir = host.work_dir.c_str(),
                           .op_types = op_types.data(),
                           .op_type_count = op_types.size(),
                           .log = host_log,
                           .quantize = host_quantize,
                           .register_custom_ops = host_register_custom_ops};
  std::vector<const char*> argv = {plugin.name.c_str()};
  for (const auto& a : args) argv.push_back(a.c_str());
  MixprecPluginResult result{};
  const auto t0 = Clock::now();
  const int code = run(&state, &api, static_cast<int>(argv.size()), argv.data(), &result);
  PluginRun out{.model_path = bounded(result.model_path, sizeof result.model_path),
                .config_path = bounded(result.config_path, sizeof result.config_path),
                .custom_op_libraries = state.custom_op_libraries,
                .seconds = seconds_since(t0)};
  if (code != 0) {
    const std::string why = bounded(result.error, sizeof result.error);
    throw_bad_input(plugin.manifest_path, "plugin '" + plugin.name + "' failed: " +
                                              (why.empty() ? "exit code " + std::to_string(code) : why));
  }
  std::error_code ec;
  if (out.model_path.empty() || !fs::is_regular_file(out.model_path, ec)) {
    throw_bad_input(plugin.manifest_path, "plugin '" + plugin.name + "' returned no model (" +
                                              (out.model_path.empty() ? "empty path" : "'" + out.model_path + "' is not a file") + ")");
  }
  if (!out.config_path.empty() && !fs::is_regular_file(out.config_path, ec)) {
    throw_bad_input(plugin.manifest_path, "plugin '" + plugin.name + "' returned config '" + out.config_path +
                                              "', which is not a file");
  }
  return out;
}

}  // namespace mixprec
