// Where a model runs and what to start it with: one vocabulary and one table for every command.
//
// - Where a model runs is a DeploymentTarget (mixprec/evaluation.h): a device profile and an
//   ONNX Runtime provider. A PlanTarget is the name a user gives it in `mixprec plan --target`
//   (cpu, cuda, npu_cnn, npu_transformer); deployment_for() and plan_target_for() translate
//   between the two through one table, so plan, guide, ladder and dry-run cannot disagree.
// - The recommendation table gives, per target and goal, the preset and calibration method to
//   start from and why. plan's decisions, guide's proposed config (it is make_plan()'s), the
//   ladder's w8a8 rung and dry-run's INT8 row all read it.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "mixprec/analysis.h"
#include "mixprec/calibration.h"
#include "mixprec/enum_names.h"
#include "mixprec/evaluation.h"

namespace mixprec {

enum class PlanTarget { kCpu, kCuda, kNpuCnn, kNpuTransformer };
enum class PlanGoal { kAccuracy, kSize, kSpeed };

const EnumNames<PlanTarget>& plan_target_names();  // "cpu", "cuda", "npu_cnn", "npu_transformer"
const EnumNames<PlanGoal>& plan_goal_names();      // "accuracy", "size", "speed"
inline const char* to_string(PlanTarget target) { return plan_target_names().name(target); }
inline const char* to_string(PlanGoal goal) { return plan_goal_names().name(goal); }

struct PlanTargetTraits {
  PlanTarget target;
  const char* provider;        // ONNX Runtime's full provider name
  bool npu;                    // runs on an NPU device profile (stx, ve2); else on the host ("cpu")
  bool attention_in_bf16;      // attention MatMuls go to BF16 rather than float (NPU transformers)
};
const PlanTargetTraits& plan_target_traits(PlanTarget target);

// The deployment a plan target names. `device`: the NPU profile for npu targets (empty: ve2;
// kBadInput when it is not an NPU); host targets run on "cpu" (kBadInput for an NPU device).
// `label` names the model in errors.
DeploymentTarget deployment_for(PlanTarget target, const std::string& device, const std::string& label);

// The plan target of a deployment: an NPU device (power-of-two int8) is npu_transformer for a
// transformer or hybrid and npu_cnn otherwise (recurrent and unknown models included: the
// row's reason does not claim an architecture); the CUDA provider is cuda; anything else cpu.
PlanTarget plan_target_for(const DeploymentTarget& deployment, Architecture architecture);

// The start the table recommends for a target and goal.
struct PresetChoice {
  PlanTarget target;
  PlanGoal goal;
  const char* preset;
  CalibMethod method;
  const char* why;             // the preset's reason, in words
};
const PresetChoice& recommended_preset(PlanTarget target, PlanGoal goal);
// Why a calibration method, whichever row picked it.
const char* calib_method_reason(CalibMethod method);

// The int8 preset a deployment's accuracy goal starts from: what the ladder's w8a8 rung and
// dry-run's INT8 row measure (XINT8 on NPUs, U8S8 on the CPU provider, A8W8 on CUDA).
std::string int8_preset_for(const DeploymentTarget& deployment);

}  // namespace mixprec
