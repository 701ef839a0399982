#include <filesystem>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common.h"
#include "mixprec/error.h"
#include "mixprec/run.h"

namespace mixprec::cli {
namespace {

std::string fixed(double value, int digits) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(digits) << value;
  return out.str();
}

nlohmann::ordered_json specs_json(const std::vector<InputSpec>& specs) {
  auto out = nlohmann::ordered_json::array();
  for (const auto& s : specs) out.push_back({{"name", s.name}, {"dtype", dtype_name(s.dtype)}, {"shape", s.shape}});
  return out;
}

void print_report(const RunReport& r) {
  std::cout << "model      " << r.model_path << "\n"
            << "runtime    ONNX Runtime " << r.runtime_version << ", provider " << r.provider << "\n"
            << "data       " << r.data_description << "\n";
  for (const auto& s : r.inputs) {
    std::cout << "input      " << s.name << "  " << dtype_name(s.dtype) << "  " << shape_to_string(s.shape) << "\n";
  }
  for (const auto& s : r.outputs) {
    std::cout << "output     " << s.name << "  " << dtype_name(s.dtype) << "  " << shape_to_string(s.shape) << "\n";
  }
  const LatencyStats& l = r.latency;
  std::cout << "session    " << fixed(r.session_create_ms, 1) << " ms to create\n"
            << "latency    min " << fixed(l.min_ms, 2) << " ms  median " << fixed(l.median_ms, 2) << " ms  mean "
            << fixed(l.mean_ms, 2) << " ms  p90 " << fixed(l.p90_ms, 2) << " ms  (" << l.runs << " runs)\n"
            << "throughput " << fixed(r.inferences_per_second, 1) << " inferences/s, " << fixed(r.items_per_second, 1)
            << " items/s\n";
  if (!r.saved_outputs_path.empty()) std::cout << "outputs    " << r.saved_outputs_path << "\n";
}

nlohmann::ordered_json report_json(const RunReport& r) {
  const LatencyStats& l = r.latency;
  return {{"model", r.model_path},
          {"runtime", {{"name", "onnxruntime"}, {"version", r.runtime_version}, {"provider", r.provider}}},
          {"data", r.data_description},
          {"samples", r.samples},
          {"inputs", specs_json(r.inputs)},
          {"outputs", specs_json(r.outputs)},
          {"session_create_ms", r.session_create_ms},
          {"latency_ms",
           {{"runs", l.runs}, {"min", l.min_ms}, {"median", l.median_ms}, {"mean", l.mean_ms}, {"p90", l.p90_ms},
            {"max", l.max_ms}}},
          {"inferences_per_second", r.inferences_per_second},
          {"items_per_second", r.items_per_second},
          {"saved_outputs", r.saved_outputs_path},
          {"warnings", r.warnings}};
}

}  // namespace

Command add_run(CLI::App& app) {
  struct Flags {
    std::string model;
    SampleFlags data;
    DeploymentFlags deployment;
    std::string save_outputs;
    size_t runs = 10;
    size_t warmup = 1;
    bool json = false;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand("run", "Run the FP32 baseline: outputs, latency (min/median) and throughput");
  cmd->add_option("MODEL", flags->model, "ONNX model")->required();
  flags->data.add_to(*cmd, "--data", 8);
  flags->deployment.add_to(*cmd, "execution provider: CPU, CUDA, VitisAI, ... (CPU always falls back)");
  cmd->add_option("--save-outputs", flags->save_outputs, "write every output to this .npz");
  cmd->add_option("--runs", flags->runs, "timed runs at least (cycling over the samples)")->capture_default_str();
  cmd->add_option("--warmup", flags->warmup, "untimed warm-up runs")->capture_default_str();
  cmd->add_flag("--json", flags->json, "print the report as JSON");
  cmd->footer(kExitCodesHelp);
  return {cmd, [flags] {
            RunParams params;
            params.setup.model_path = flags->model;
            params.setup.evaluation = flags->data.resolve();
            params.deployment = flags->deployment.resolve();  // every graph optimization: a deployment latency
            params.min_timed_runs = flags->runs;
            params.warmup_runs = flags->warmup;
            params.save_outputs_path = flags->save_outputs;
            if (!params.save_outputs_path.empty()) {
              std::error_code ec;
              if (std::filesystem::equivalent(params.save_outputs_path, params.setup.model_path, ec)) {
                throw_bad_input(params.save_outputs_path, "--save-outputs would overwrite the input model");
              }
            }
            const RunReport report = run_model(params);
            if (flags->json) {
              std::cout << report_json(report).dump(2) << '\n';
            } else {
              print_report(report);
            }
            return kExitOk;
          }};
}

}  // namespace mixprec::cli
