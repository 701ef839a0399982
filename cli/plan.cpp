#include <iostream>
#include <memory>

#include "common.h"
#include "mixprec/error.h"
#include "mixprec/plan.h"
#include "mixprec/workflow_report.h"

namespace mixprec::cli {

Command add_plan(CLI::App& app) {
  struct Flags {
    std::string model, output = "quant_plan.json", target = "cpu", goal = "accuracy", device, preset, calib_method;
    std::vector<std::string> algorithms;
    size_t samples = 0;
    bool yes = false, force = false, json = false, schema = false, ffn_only = false;
    ConfigFormatFlag config_format;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "plan", "Plan the quantization from the analysis and your intent: decision table, risks, quant_plan.json");
  cmd->add_option("MODEL", flags->model, "float ONNX model");
  cmd->add_option("--target", flags->target, "cpu, cuda, npu_cnn or npu_transformer")->capture_default_str();
  cmd->add_option("--goal", flags->goal, "accuracy, size or speed")->capture_default_str();
  cmd->add_option("--device", flags->device, "NPU targets: stx or ve2 (default ve2)");
  cmd->add_option("--preset", flags->preset, "a preset (default: the plan's choice): " + preset_list());
  cmd->add_option("--calib-method", flags->calib_method,
                  "MinMax, Percentile, Entropy, MinMSE, PowerOfTwo_NonOverflow, PowerOfTwo_MinMSE (default: the plan's choice)");
  cmd->add_option("--calib-samples", flags->samples, "calibration samples (default: 256 for accuracy, else 100)");
  cmd->add_option("--algorithm", flags->algorithms,
                  "add an algorithm (repeatable): fold_batchnorm, cle, bias_correction, adaround, adaquant, smoothquant, gptq");
  cmd->add_flag("--ffn-only", flags->ffn_only,
                "the config quantizes only the MLP blocks' and attention projections' weight MatMul/Gemm; the rest stays float");
  cmd->add_flag("--force", flags->force, "keep a request a hard gate rejects; the plan records it as a high risk");
  cmd->add_flag("--yes", flags->yes, "accept a draft plan (unknown architecture) as confirmed");
  cmd->add_option("-o,--output", flags->output, "plan file to write")->capture_default_str();
  flags->config_format.add_to(*cmd, "the config inside the plan (quantize --plan reads either)");
  cmd->add_flag("--json", flags->json, "print the plan as JSON instead of the table");
  cmd->add_flag("--schema", flags->schema, "print the plan's JSON schema and exit");
  cmd->footer(kExitCodesHelp);
  return {cmd, [flags] {
            if (flags->schema) {
              std::cout << plan_schema().dump(2) << "\n";
              return kExitOk;
            }
            if (flags->model.empty()) throw_bad_input("", "plan needs MODEL");
            PlanParams params;
            params.setup.model_path = flags->model;
            params.target = parse_choice(plan_target_names(), "--target", flags->target);
            params.goal = parse_choice(plan_goal_names(), "--goal", flags->goal);
            params.device = flags->device;
            params.preset = flags->preset;
            if (!flags->calib_method.empty()) params.calib_method = parse_calib_method(flags->calib_method);
            params.calibration_samples = flags->samples;
            params.algorithms = flags->algorithms;
            params.force = flags->force;
            params.ffn_only = flags->ffn_only;
            params.confirmed = flags->yes;
            const QuantPlan plan = make_plan(params);
            const ConfigShape shape = flags->config_format.resolve();
            save_plan(plan, flags->output, shape);
            if (flags->json) {
              std::cout << plan_to_json(plan, shape).dump(2) << "\n";
            } else {
              std::cout << plan_text(plan) << "written  " << flags->output << "\n";
            }
            return kExitOk;
          }};
}

}  // namespace mixprec::cli
