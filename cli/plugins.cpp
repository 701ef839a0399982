// mixprec plugins: what the plugin search path holds (mixprec/plugins.h); and the split of
// `--plugin NAME ARGS...` off the command line, so the plugin's arguments reach it untouched.
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <memory>

#include "common.h"
#include "mixprec/plugins.h"

namespace mixprec::cli {
namespace {

std::vector<std::string>& stored_plugin_arguments() {
  static std::vector<std::string> args;
  return args;
}

}  // namespace

std::vector<std::string> take_plugin_arguments(std::vector<std::string>& args) {
  for (size_t i = 1; i < args.size(); ++i) {
    const size_t rest = args[i] == "--plugin" ? i + 2 : args[i].starts_with("--plugin=") ? i + 1 : 0;
    if (rest == 0 || rest > args.size()) continue;
    std::vector<std::string> plugin(args.begin() + static_cast<std::ptrdiff_t>(rest), args.end());
    args.resize(rest);
    stored_plugin_arguments() = plugin;
    return plugin;
  }
  return {};
}

const std::vector<std::string>& plugin_arguments() { return stored_plugin_arguments(); }

bool plugin_consent(const PluginManifest& plugin, bool yes) {
  if (plugin.consent.empty() || yes) return true;
  if (!isatty(STDIN_FILENO)) return false;
  std::cerr << "plugin " << plugin.name << " " << plugin.version << ": " << plugin.consent << "\ncontinue? [y/N] ";
  std::string answer;
  std::getline(std::cin, answer);
  return answer == "y" || answer == "Y" || answer == "yes";
}

void PluginFlags::add_to(CLI::App& cmd) {
  cmd.add_option("--use-plugin", use,
                 "NAME: load the plugin's calibration methods and passes for this run (a config's calib_method and "
                 "algo_config, --calib-method, may then name them; repeatable). `mixprec plugins` lists them");
  cmd.add_option("--plugin-dir", dirs,
                 "plugin folders searched first (then MIXPREC_PLUGIN_PATH, then <prefix>/lib/mixprec/plugins)");
  cmd.add_flag("--yes", yes, "consent to a plugin's banner without being asked");
}

void PluginFlags::load(const std::string& device) const {
  const std::vector<std::string> path = plugin_search_path(dirs);
  std::vector<std::string> done;
  for (const std::string& name : use) {
    if (std::ranges::find(done, name) != done.end()) continue;
    done.push_back(name);
    const PluginManifest plugin = resolve_plugin(name, path, device);
    if (!plugin_consent(plugin, yes)) {
      throw_bad_input(plugin.manifest_path, "plugin '" + plugin.name + "' runs only with consent (--yes): " + plugin.consent);
    }
    const LoadedPlugin loaded = use_plugin(plugin, device);
    std::cout << "plugin " << loaded.name << " " << loaded.version << ": " << describe(loaded) << "\n";
  }
}

Command add_plugins(CLI::App& app) {
  struct Flags {
    std::vector<std::string> dirs;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand("plugins", "The installed plugins: name, version, what they add, their commands");
  cmd->add_option("--plugin-dir", flags->dirs,
                  "plugin folders searched first (then MIXPREC_PLUGIN_PATH, then <prefix>/lib/mixprec/plugins)");
  cmd->footer(kExitCodesHelp);
  return {cmd, [flags] {
            const std::vector<std::string> path = plugin_search_path(flags->dirs);
            const InstalledPlugins installed = installed_plugins(path);
            std::cout << "searched:";
            for (const auto& dir : path) std::cout << " " << dir;
            std::cout << "\n";
            if (installed.plugins.empty()) std::cout << "no plugins installed\n";
            for (const PluginManifest& p : installed.plugins) {
              std::cout << "\n" << p.name << " " << p.version << (p.description.empty() ? "" : ": " + p.description)
                        << "\n  folder    " << p.dir << "\n  needs     mixprec " << p.requires_mixprec << " or newer\n";
              const auto list = [](const std::vector<std::string>& items) {
                std::string out;
                for (const auto& item : items) {
                  if (!out.empty()) out += ", ";
                  out += item;
                }
                return out;
              };
              std::cout << "  devices   " << (p.devices.empty() ? "every device" : list(p.devices)) << "\n";
              if (!p.formats.empty()) std::cout << "  formats   " << list(p.formats) << "\n";
              if (!p.calibration_methods.empty()) std::cout << "  methods   " << list(p.calibration_methods) << "\n";
              if (!p.passes.empty()) std::cout << "  passes    " << list(p.passes) << "\n";
              if (!p.custom_ops.empty()) std::cout << "  ops       " << list(p.custom_ops) << "\n";
              if (!p.compiler_flags.empty()) std::cout << "  compiler  " << p.compiler_flags << "\n";
              for (const auto& c : p.commands) {
                std::cout << "  command   " << (c.usage.empty() ? c.name : c.usage) << "\n";
                if (!c.description.empty()) std::cout << "            " << c.description << "\n";
              }
              if (!p.consent.empty()) std::cout << "  consent   asked before it runs (--yes)\n";
              if (p.calibration_methods.empty() && p.passes.empty()) {
                std::cout << "  run with  mixprec guide --model M --plugin " << p.name << " ARGS...\n";
              } else {
                std::cout << "  use with  --use-plugin " << p.name << " on quantize, explore, guide, ladder, requantize, dry-run\n";
              }
            }
            for (const auto& broken : installed.broken) std::cout << "\nnot loadable: " << broken << "\n";
            return kExitOk;
          }};
}

}  // namespace mixprec::cli
