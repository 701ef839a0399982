// Plugins: the search path, manifests, and loading and running a plugin's library (mixprec/plugins.h).
#include "mixprec/plugins.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/text.h"
#include "config/algorithm_table.h"
#include "common/timing.h"
#include "mixprec/calibration.h"
#include "mixprec/config.h"
#include "mixprec/error.h"
#include "mixprec/formats.h"
#include "mixprec/log.h"
#include "mixprec/model_io.h"
#include "mixprec/plugin_abi.h"
#include "mixprec/runtime.h"

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

// The opaque registry a plugin's register is handed: what its manifest allows and what it added.
// What it adds is held here and joins the run only when register returns and the manifest
// agrees: a plugin that fails half way adds nothing.
struct MixprecRegistry {
  const mixprec::PluginManifest* manifest;
  std::string origin;  // "plugin NAME"
  std::vector<mixprec::AddedCalibMethod> calibration_methods;
  std::vector<mixprec::AddedPass> passes;
  std::vector<mixprec::AddedFormat> formats;
  std::vector<std::string> custom_op_libraries;
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

struct PluginLibrary {
  void* handle = nullptr;
  std::string path;
  uint32_t abi = 0;
};

// The plugin's library, loaded for the rest of the process (a plugin's static state, and the
// callbacks it registers, outlive the call), with its interface version checked.
PluginLibrary open_plugin_library(const PluginManifest& plugin) {
  PluginLibrary lib{.path = (fs::path(plugin.dir) / plugin.library).string()};
  lib.handle = dlopen(lib.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib.handle == nullptr) {
    const char* why = dlerror();
    throw_bad_input(lib.path, std::string("the plugin's library does not load: ") + (why != nullptr ? why : "?"));
  }
  auto abi = reinterpret_cast<MixprecPluginAbiVersionFn>(dlsym(lib.handle, "mixprec_plugin_abi_version"));
  if (abi == nullptr) throw_bad_input(lib.path, "not a mixprec plugin: it lacks mixprec_plugin_abi_version");
  lib.abi = abi();
  if (lib.abi < MIXPREC_PLUGIN_ABI_OLDEST || lib.abi > MIXPREC_PLUGIN_ABI_VERSION) {
    throw_bad_input(lib.path, "built for plugin interface " + std::to_string(lib.abi) + "; this mixprec loads " +
                                  std::to_string(MIXPREC_PLUGIN_ABI_OLDEST) + " to " + std::to_string(MIXPREC_PLUGIN_ABI_VERSION));
  }
  return lib;
}

// A C callback's failure as an Error: its message, or its code when it left none.
[[noreturn]] void callback_failed(const std::string& what, int code, const char* error, size_t size) {
  const std::string why = bounded(error, size);
  throw_bad_input("", what + " failed: " + (why.empty() ? "code " + std::to_string(code) : why));
}

// The C view of one tensor's statistics and of a format (plugin_abi.h).
MixprecTensorStats stats_view(const TensorStats& stats) {
  return {.min = stats.min, .max = stats.max, .count = stats.count, .range = stats.hist_range,
          .bins = stats.hist.data(), .bin_count = stats.hist.size()};
}

MixprecFormatInfo format_view(FormatId format, bool symmetric) {
  const FormatTraits& traits = format_traits(format);
  return {.name = traits.name, .qmin = traits.qmin, .qmax = traits.qmax,
          .integer_codes = has_integer_codes(format) ? 1 : 0,
          .power_of_two = traits.power_of_two_scale ? 1 : 0, .symmetric = symmetric ? 1 : 0};
}

// A registered C calibration method as an added method: one call at a time.
AddedCalibMethod calibration_method(const std::string& origin, const std::string& name, uint32_t flags,
                                    MixprecRangeFn range, void* user) {
  auto lock = std::make_shared<std::mutex>();
  return {.name = name,
          .origin = origin,
          .power_of_two = (flags & MIXPREC_CALIB_POWER_OF_TWO) != 0,
          .needs_histogram = (flags & MIXPREC_CALIB_NEEDS_HISTOGRAM) != 0,
          .keeps_bounded_range = (flags & MIXPREC_CALIB_KEEPS_BOUNDED_RANGE) != 0,
          .range = [origin, name, range, user, lock](const TensorStats& stats, FormatId format, const RangeOptions& options) {
            const MixprecTensorStats view = stats_view(stats);
            const MixprecFormatInfo info = format_view(format, options.symmetric);
            Range r;
            char error[MIXPREC_PLUGIN_ERROR_MAX] = {0};
            const std::lock_guard<std::mutex> hold(*lock);
            if (const int code = range(user, &view, &info, &r.min, &r.max, error, sizeof error); code != 0) {
              callback_failed(origin + ": calibration method " + name, code, error, sizeof error);
            }
            return r;
          }};
}

// A registered C pass as an added pass: the model goes through two files in a fresh folder.
AddedPass model_pass(const std::string& origin, const std::string& name, PassStage stage, MixprecPassFn run, void* user) {
  auto lock = std::make_shared<std::mutex>();
  return {.name = name,
          .origin = origin,
          .stage = stage,
          .run = [origin, name, run, user, lock](onnx::ModelProto& model, const std::string& params, const std::string& label) {
            std::string folder = (fs::temp_directory_path() / "mixprec-pass-XXXXXX").string();
            if (mkdtemp(folder.data()) == nullptr) throw Error(ErrorKind::kIo, folder, "cannot make a folder for pass " + name);
            const auto cleanup = [&] {
              std::error_code ec;
              fs::remove_all(folder, ec);
            };
            try {
              const std::string in = folder + "/input.onnx", out = folder + "/output.onnx";
              save_model(model, in);
              char error[MIXPREC_PLUGIN_ERROR_MAX] = {0};
              int code = 0;
              {
                const std::lock_guard<std::mutex> hold(*lock);
                code = run(user, in.c_str(), out.c_str(), params.c_str(), error, sizeof error);
              }
              if (code != 0) {
                const std::string why = bounded(error, sizeof error);
                throw_bad_input(label, origin + ": pass " + name + " failed: " + (why.empty() ? "code " + std::to_string(code) : why));
              }
              std::error_code ec;
              if (!fs::is_regular_file(out, ec)) throw_bad_input(label, origin + ": pass " + name + " wrote no model");
              onnx::ModelProto edited = load_model(out);
              model = std::move(edited);
            } catch (...) {
              cleanup();
              throw;
            }
            cleanup();
          }};
}

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
  const PluginLibrary lib = open_plugin_library(plugin);
  auto run = reinterpret_cast<MixprecPluginRunFn>(dlsym(lib.handle, "mixprec_plugin_run"));
  if (run == nullptr) {
    throw_bad_input(lib.path, "plugin '" + plugin.name + "' has nothing to run (no mixprec_plugin_run)" +
                                  (dlsym(lib.handle, "mixprec_plugin_register") != nullptr
                                       ? ": it adds methods or passes; name it with --use-plugin"
                                       : ""));
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

namespace {

// The registration callbacks (plugin_abi.h's MixprecRegisterApi).
bool listed(const std::vector<std::string>& names, const char* name) { return std::ranges::find(names, name) != names.end(); }

void check_listed(const MixprecRegistry& r, const std::vector<std::string>& names, const char* name, const char* what,
                  const char* key) {
  if (name == nullptr || *name == '\0') throw_bad_input("", r.origin + ": a " + what + " needs a name");
  if (!listed(names, name)) {
    throw_bad_input(r.manifest->manifest_path, r.origin + " adds " + what + " '" + name + "', which its manifest's adds." + key +
                                                   " does not list");
  }
}

extern "C" int host_add_calibration_method(MixprecRegistry* r, const char* name, uint32_t flags, MixprecRangeFn range,
                                           void* user, char* error, size_t error_size) {
  try {
    check_listed(*r, r->manifest->calibration_methods, name, "calibration method", "calibration_methods");
    if (range == nullptr) throw_bad_input("", r->origin + ": calibration method " + name + " has no range function");
    if (calib_method_from_name(name) || std::ranges::find(r->calibration_methods, name, &AddedCalibMethod::name) !=
                                            r->calibration_methods.end()) {
      throw_bad_input("", r->origin + ": calibration method " + name + " is already defined");
    }
    r->calibration_methods.push_back(calibration_method(r->origin, name, flags, range, user));
    return 0;
  } catch (const std::exception& e) {
    copy_message(e.what(), error, error_size);
    return 1;
  }
}

extern "C" int host_add_pass(MixprecRegistry* r, const char* name, int stage, MixprecPassFn run, void* user, char* error,
                             size_t error_size) {
  try {
    check_listed(*r, r->manifest->passes, name, "pass", "passes");
    if (stage != MIXPREC_PASS_FLOAT && stage != MIXPREC_PASS_QUANTIZED) {
      throw_bad_input("", r->origin + ": pass " + name + " has stage " + std::to_string(stage) + " (0 float, 1 quantized)");
    }
    if (run == nullptr) throw_bad_input("", r->origin + ": pass " + name + " has no function");
    const std::vector<std::string> known = algorithm_names();
    if (std::ranges::find(known, name) != known.end() || config::find_algorithm(name) != nullptr ||
        std::ranges::find(r->passes, name, &AddedPass::name) != r->passes.end()) {
      throw_bad_input("", r->origin + ": algorithm " + name + " is already defined");
    }
    r->passes.push_back(model_pass(r->origin, name, stage == MIXPREC_PASS_FLOAT ? PassStage::kFloat : PassStage::kQuantized, run, user));
    return 0;
  } catch (const std::exception& e) {
    copy_message(e.what(), error, error_size);
    return 1;
  }
}

// The attributes of an added format's op: a JSON object of integers, floats and strings.
std::vector<AddedFormatAttribute> format_attributes(const MixprecRegistry& r, const std::string& format, const char* json_text) {
  std::vector<AddedFormatAttribute> out;
  if (json_text == nullptr || *json_text == '\0') return out;
  const std::string where = r.origin + ": format " + format + "'s attributes";
  Json json;
  try {
    json = Json::parse(json_text);
  } catch (const Json::parse_error& e) {
    throw_bad_input("", where + " are not JSON (" + e.what() + ")");
  }
  if (!json.is_object()) throw_bad_input("", where + " must be a JSON object");
  for (const auto& [key, value] : json.items()) {
    AddedFormatAttribute a{.name = key};
    if (value.is_number_integer()) {
      a.kind = AddedFormatAttribute::Kind::kInt;
      a.i = value.get<int64_t>();
    } else if (value.is_number_float()) {
      a.kind = AddedFormatAttribute::Kind::kFloat;
      a.f = value.get<float>();
    } else if (value.is_string()) {
      a.kind = AddedFormatAttribute::Kind::kString;
      a.s = value.get<std::string>();
    } else {
      throw_bad_input("", where + ": \"" + key + "\" must be an integer, a float or a string");
    }
    out.push_back(std::move(a));
  }
  return out;
}

extern "C" int host_add_format(MixprecRegistry* r, const MixprecFormatSpec* spec, char* error, size_t error_size) {
  try {
    if (spec == nullptr) throw_bad_input("", r->origin + ": add_format needs a format");
    check_listed(*r, r->manifest->formats, spec->name, "format", "formats");
    const std::string name = spec->name;
    const std::string speed = spec->speed_as != nullptr ? spec->speed_as : "bf16";
    const std::optional<FormatId> speed_as = format_from_name(speed);
    if (!speed_as) throw_bad_input("", r->origin + ": format " + name + "'s speed_as '" + speed + "' is not a format");
    AddedFormat format{.name = name,
                       .spec_name = spec->spec_name != nullptr ? spec->spec_name : "",
                       .origin = r->origin,
                       .domain = spec->domain != nullptr ? spec->domain : "",
                       .op_type = spec->op_type != nullptr ? spec->op_type : "",
                       .attributes = format_attributes(*r, name, spec->attributes_json),
                       .weights = spec->weights != 0,
                       .speed_as = *speed_as};
    check_added_format(format);  // what add_format would refuse once the register succeeds
    for (const std::string& taken : {format.name, format.spec_name}) {  // ... and names this register took already
      if (std::ranges::any_of(r->formats, [&](const AddedFormat& f) { return f.name == taken || f.spec_name == taken; })) {
        throw_bad_input("", r->origin + ": format " + taken + " is already defined");
      }
    }
    r->formats.push_back(std::move(format));
    return 0;
  } catch (const std::exception& e) {
    copy_message(e.what(), error, error_size);
    return 1;
  }
}

extern "C" int host_add_custom_ops(MixprecRegistry* r, const char* library_path, char* error, size_t error_size) {
  try {
    if (library_path == nullptr || *library_path == '\0') throw_bad_input("", r->origin + ": add_custom_ops needs a library path");
    fs::path path(library_path);
    if (path.is_relative()) path = fs::path(r->manifest->dir) / path;
    r->custom_op_libraries.push_back(fs::absolute(path).lexically_normal().string());
    return 0;
  } catch (const std::exception& e) {
    copy_message(e.what(), error, error_size);
    return 1;
  }
}

}  // namespace

LoadedPlugin use_plugin(const PluginManifest& plugin, const std::string& device) {
  // A plugin registers once per process: named again (a second command in one process, a
  // library user's second run), it gives what it added the first time.
  static std::map<std::string, LoadedPlugin> loaded;
  const std::string key = fs::absolute(plugin.manifest_path).lexically_normal().string();
  if (const auto it = loaded.find(key); it != loaded.end()) return it->second;
  const auto t0 = Clock::now();
  const PluginLibrary lib = open_plugin_library(plugin);
  auto reg = reinterpret_cast<MixprecPluginRegisterFn>(dlsym(lib.handle, "mixprec_plugin_register"));
  if (lib.abi < 2 || reg == nullptr) {
    throw_bad_input(lib.path, "plugin '" + plugin.name + "' registers nothing (no mixprec_plugin_register)" +
                                  (dlsym(lib.handle, "mixprec_plugin_run") != nullptr ? ": run it with guide --plugin " + plugin.name
                                                                                      : ""));
  }
  MixprecRegistry registry{.manifest = &plugin, .origin = "plugin " + plugin.name, .calibration_methods = {}, .passes = {},
                           .formats = {}, .custom_op_libraries = {}};
  const MixprecRegisterApi api{.abi_version = MIXPREC_PLUGIN_ABI_VERSION,
                               .mixprec_version = mixprec_version().c_str(),
                               .device = device.c_str(),
                               .add_calibration_method = host_add_calibration_method,
                               .add_pass = host_add_pass,
                               .add_custom_ops = host_add_custom_ops,
                               .add_format = host_add_format};
  char error[MIXPREC_PLUGIN_ERROR_MAX] = {0};
  if (const int code = reg(&registry, &api, error, sizeof error); code != 0) {
    const std::string why = bounded(error, sizeof error);
    throw_bad_input(plugin.manifest_path, "plugin '" + plugin.name + "' failed to register: " +
                                              (why.empty() ? "code " + std::to_string(code) : why));
  }
  LoadedPlugin out{.name = plugin.name, .version = plugin.version};
  for (const auto& m : registry.calibration_methods) out.calibration_methods.push_back(m.name);
  for (const auto& p : registry.passes) out.passes.push_back(p.name);
  for (const auto& f : registry.formats) out.formats.push_back(f.name);
  const auto missing = [&](const std::vector<std::string>& listed_names, const std::vector<std::string>& added, const char* field) {
    for (const auto& name : listed_names) {
      if (std::ranges::find(added, name) == added.end()) {
        throw_bad_input(plugin.manifest_path, "adds." + std::string(field) + " lists '" + name + "', which plugin '" + plugin.name +
                                                  "' did not register");
      }
    }
  };
  missing(plugin.calibration_methods, out.calibration_methods, "calibration_methods");
  missing(plugin.passes, out.passes, "passes");
  std::vector<std::string> formats_to_add;  // a built-in name is an allowance, not an addition
  std::ranges::copy_if(plugin.formats, std::back_inserter(formats_to_add), [](const std::string& name) {
    const auto id = format_from_name(name);
    return !id || added_format(*id) != nullptr;
  });
  missing(formats_to_add, out.formats, "formats");
  if (!registry.formats.empty() && registry.custom_op_libraries.empty()) {
    throw_bad_input(plugin.manifest_path, "plugin '" + plugin.name + "' adds formats but no custom-op library to run their ops");
  }
  // Libraries first: the one step that can still fail (ONNX Runtime refusing one).
  for (const auto& library : registry.custom_op_libraries) register_custom_op_library(library);
  out.custom_op_libraries = registry.custom_op_libraries;
  for (auto& m : registry.calibration_methods) add_calib_method(std::move(m));
  for (auto& p : registry.passes) add_pass(std::move(p));
  for (auto& f : registry.formats) add_format(std::move(f));
  out.seconds = seconds_since(t0);
  loaded.emplace(key, out);
  return out;
}

std::string describe(const LoadedPlugin& plugin) {
  std::vector<std::string> parts;
  if (!plugin.calibration_methods.empty()) parts.push_back("calibration methods " + text::join(plugin.calibration_methods));
  if (!plugin.passes.empty()) {
    std::vector<std::string> passes;
    for (const auto& name : plugin.passes) {
      const AddedPass* pass = find_added_pass(name);
      passes.push_back(name + (pass ? std::string(" (") + pass_stage_names().name(pass->stage) + ")" : ""));
    }
    parts.push_back("passes " + text::join(passes));
  }
  if (!plugin.formats.empty()) parts.push_back("formats " + text::join(plugin.formats));
  if (!plugin.custom_op_libraries.empty()) parts.push_back(std::to_string(plugin.custom_op_libraries.size()) + " custom-op libraries");
  return parts.empty() ? "adds nothing" : "adds " + text::join(parts, "; ");
}

}  // namespace mixprec
