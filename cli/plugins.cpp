// mixprec plugins: what the plugin search path holds (mixprec/plugins.h); and the split of
// `--plugin NAME ARGS...` off the command line, so the plugin's arguments reach it untouched.
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
              std::cout << "  run with  mixprec guide --model M --plugin " << p.name << " ARGS...\n";
            }
            for (const auto& broken : installed.broken) std::cout << "\nnot loadable: " << broken << "\n";
            return kExitOk;
          }};
}

}  // namespace mixprec::cli
