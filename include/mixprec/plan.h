// Plan (SPEC "Plan"): from the model's analysis and the user's intent (deployment target and
// goal), the quantization plan: backend, preset, calibration method and size, algorithms,
// include/exclude lists, external-data flag, evaluation intent and risks, each decision with
// its reason, plus the Quark-style config that `mixprec quantize --plan` executes.
//
// Contract:
// - make_plan() reads the model (without external data) and never modifies or runs it.
// - An already-quantized model gets no plan: Error kBadInput advising `mixprec requantize`.
// - Hard gates (kBadInput naming the request, the reason and the nearest viable choice):
//   npu_cnn needs a power-of-two INT8 preset (XINT8) and a PowerOfTwo_* calibration method;
//   every preset format must run on the device (FP16 not on stx). With `force` the request is
//   kept and the plan records it as a high-severity risk instead.
// - Unknown architecture: a draft with requires_confirmation = true, unless `confirmed`.
// - Risks recorded: forced gates, three or more algorithms, CLE on a transformer or hybrid, an
//   algorithm mixprec does not implement, a target that does not suit the architecture, a
//   backend missing from the loaded ONNX Runtime, an unknown task type.
// - plan_to_json() output always validates against plan_schema() (schemas/quant_plan.schema.json,
//   compiled in); load_plan() validates a file against it before reading it, and
//   plan_from_json(plan_to_json(p)) == p.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "mixprec/analysis.h"
#include "mixprec/calibration.h"
#include "mixprec/config.h"
#include "mixprec/jobs.h"
#include "mixprec/recommend.h"

namespace mixprec {

// Quantization algorithms a plan may list; mixprec's quantizer runs the implemented ones.
struct AlgorithmTraits {
  const char* name;         // "fold_batchnorm", "cle", ...
  bool implemented;         // run by mixprec quantize
  const char* description;  // one line
};
std::vector<AlgorithmTraits> all_algorithms();

struct PlanParams {
  EvaluationSetup setup;                   // model_path (read without external data, never run)
  PlanTarget target = PlanTarget::kCpu;
  PlanGoal goal = PlanGoal::kAccuracy;
  std::string device;                      // npu targets: "stx" or "ve2" (empty: ve2); others: cpu
  std::string preset;                      // empty: the plan's choice
  std::optional<CalibMethod> calib_method; // nullopt: the plan's choice
  size_t calibration_samples = 0;          // 0: the plan's choice
  std::vector<std::string> algorithms;     // requested on top of the plan's own
  bool force = false;                      // keep a request a gate rejects, as a high risk
  bool confirmed = false;                  // --yes: a draft (unknown architecture) is accepted
  // --ffn-only: the config quantizes only the MLP blocks' and attention projections' weight
  // MatMul/Gemm (feed_forward_nodes(); quantize_only_nodes()), with the chosen preset's layer;
  // Softmax, LayerNorm arithmetic and everything else stay float. kBadInput when the model has none.
  bool ffn_only = false;
  // A backend missing from the loaded ONNX Runtime is a risk; guide turns it off because it
  // compiles on the provider it is given and says so there.
  bool backend_risk = true;
};

struct PlanDecision {
  std::string decision;  // "backend", "preset", ...
  std::string value;
  std::string reason;
  bool operator==(const PlanDecision&) const = default;
};

struct PlanRisk {
  std::string severity;  // "high", "medium", "low"
  std::string risk;
  bool operator==(const PlanRisk&) const = default;
};

struct QuantPlan {
  // The model
  std::string model_path;
  std::string model_fingerprint;  // model_fingerprint() of the model as loaded
  uint64_t model_bytes = 0;       // the model file plus its external data files
  Architecture architecture = Architecture::kUnknown;
  TaskType task = TaskType::kUnknown;
  // The intent
  PlanTarget target = PlanTarget::kCpu;
  PlanGoal goal = PlanGoal::kAccuracy;
  std::string device;   // device profile name (mixprec/devices.h)
  std::string backend;  // ONNX Runtime execution provider, full name
  // The decisions
  std::string preset;
  CalibMethod calib_method = CalibMethod::kMinMax;
  int64_t calibration_samples = 0;
  int64_t calibration_batch = 1;
  std::vector<std::string> algorithms;
  // What guide tries, rung by rung, when the config misses its criterion: each rung is the
  // algo_config entries added to the config's (algorithms that run after the rewrite, so every
  // rung shares the config's statistics): bias correction per layer, bias correction of the
  // whole model, AdaRound. In the plan file each rung is an algo_config list. Empty: nothing to
  // try (a float preset, no layer the algorithms apply to).
  std::vector<std::vector<AlgorithmEntry>> recovery_ladder;
  // Rungs guide tries after those, on the model without the plan's CLE: CLE runs before
  // calibration, so these need statistics of their own (a second calibration pass). Measured:
  // XINT8 on the PP-OCR classifier, AdaRound 18.8 dB and 14/16 top-1, CLE + AdaRound 16.3 dB and
  // 12/16; on the detector at 320x320 CLE + AdaRound wins (27.3 against 20.6 dB). In the plan
  // file as recovery_ladder_without_cle, shaped as recovery_ladder.
  std::vector<std::vector<AlgorithmEntry>> recovery_ladder_without_cle;
  std::vector<std::string> include_op_types;
  std::vector<std::string> exclude_node_names;     // kept float (exact names)
  std::vector<std::string> higher_precision_nodes;  // kept at `higher_precision_format`
  std::string higher_precision_format;              // "BF16", or empty
  bool external_data = false;                       // model_bytes over 2 GB
  std::string evaluation_metric;
  std::vector<std::string> evaluation_criteria;     // accuracy target expressions
  int64_t evaluation_samples = 100;
  bool requires_confirmation = false;
  std::vector<PlanDecision> decisions;              // the table, in order
  std::vector<PlanRisk> risks;
  QuantConfig config;                               // what quantize --plan runs

  bool operator==(const QuantPlan&) const = default;
};

QuantPlan make_plan(const PlanParams& params);

// The schema every plan file follows (schemas/quant_plan.schema.json).
const nlohmann::ordered_json& plan_schema();
// `shape`: of the embedded config (either reads back); what Quark's cannot hold is kBadInput.
nlohmann::ordered_json plan_to_json(const QuantPlan& plan, ConfigShape shape = ConfigShape::kMixprec);
// `label` names the file in errors; the JSON must validate against plan_schema() (kBadInput
// listing the violations otherwise).
QuantPlan plan_from_json(const nlohmann::ordered_json& json, const std::string& label);
void save_plan(const QuantPlan& plan, const std::string& path,
               ConfigShape shape = ConfigShape::kMixprec);  // atomic; errors name `path`
QuantPlan load_plan(const std::string& path);

// Why `plan` cannot be executed by mixprec quantize as it stands (it needs confirmation, or
// lists an algorithm mixprec does not implement); nullopt when it can.
std::optional<std::string> plan_blocker(const QuantPlan& plan);

// quantize_job() with the plan at `plan_path` as its config. `params` gives the output, data,
// statistics and session; its model_path may be empty (the plan's model is used). Refused
// with kBadInput naming the plan file: a blocked plan (plan_blocker), a config or preset given
// as well, or a model that is not the one the plan was made for (fingerprint).
QuantizeReport quantize_with_plan(const std::string& plan_path, QuantizeParams params);

}  // namespace mixprec
