// The one vocabulary for where a model runs and the one recommendation table (recommend.h).
#include "mixprec/recommend.h"

#include <algorithm>

#include "common/text.h"
#include "mixprec/devices.h"
#include "mixprec/error.h"

namespace mixprec {
namespace {
using enum PlanTarget;
using enum PlanGoal;
using enum CalibMethod;

constexpr EnumName<PlanTarget> kTargetNames[] = {
    {kCpu, "cpu"}, {kCuda, "cuda"}, {kNpuCnn, "npu_cnn"}, {kNpuTransformer, "npu_transformer"}};
constexpr EnumName<PlanGoal> kGoalNames[] = {{kAccuracy, "accuracy"}, {kSize, "size"}, {kSpeed, "speed"}};

constexpr PlanTargetTraits kTargets[] = {
    {kCpu, "CPUExecutionProvider", false, false},
    {kCuda, "CUDAExecutionProvider", false, false},
    {kNpuCnn, "VitisAIExecutionProvider", true, false},
    {kNpuTransformer, "VitisAIExecutionProvider", true, true},
};

constexpr const char* kDefaultNpu = "ve2";
constexpr const char* kHostDevice = "cpu";

// clang-format off
constexpr PresetChoice kChoices[] = {
  {kCpu, kAccuracy, "U8S8", kPercentile,
   "uint8 activations x per-channel int8 weights, placed so ONNX Runtime's CPU provider fuses every quantized op into integer kernels (OrtCpuFusion)"},
  {kCpu, kSize, "U8S8", kMinMax,
   "int8 weights are 4x smaller than float32; per-channel scales keep that at little accuracy cost"},
  {kCpu, kSpeed, "U8S8", kMinMax,
   "u8 x s8 is ONNX Runtime's fastest CPU int8 path, and OrtCpuFusion lets it fuse every quantized op"},
  {kCuda, kAccuracy, "A8W8", kEntropy,
   "symmetric int8 activations and per-channel int8 weights: the scheme GPU int8 kernels (TensorRT-style) run"},
  {kCuda, kSize, "A8W8", kMinMax,
   "int8 weights are 4x smaller than float32"},
  {kCuda, kSpeed, "A8W8", kEntropy,
   "symmetric int8 is what GPU int8 kernels run fastest"},
  {kNpuCnn, kAccuracy, "XINT8", kPowerOfTwoMinMse,
   "the NPU runs int8 with power-of-two scales: symmetric int8, per tensor"},
  {kNpuCnn, kSize, "XINT8", kPowerOfTwoMinMse,
   "power-of-two int8 everywhere: 4x smaller weights and what the NPU runs"},
  {kNpuCnn, kSpeed, "XINT8", kPowerOfTwoMinMse,
   "power-of-two int8 everywhere: the NPU's fastest format"},
  {kNpuTransformer, kAccuracy, "XINT8", kPowerOfTwoMinMse,
   "power-of-two int8 for the projections and feed-forward MatMuls; the attention MatMuls stay BF16 (below)"},
  {kNpuTransformer, kSize, "XINT8", kPowerOfTwoMinMse,
   "power-of-two int8 everywhere: 4x smaller weights"},
  {kNpuTransformer, kSpeed, "XINT8", kPowerOfTwoMinMse,
   "power-of-two int8 everywhere: the NPU's fastest format"},
};
// clang-format on

}  // namespace

const EnumNames<PlanTarget>& plan_target_names() {
  static constexpr EnumNames<PlanTarget> names{kTargetNames};
  return names;
}
const EnumNames<PlanGoal>& plan_goal_names() {
  static constexpr EnumNames<PlanGoal> names{kGoalNames};
  return names;
}

const PlanTargetTraits& plan_target_traits(PlanTarget target) {
  return *std::ranges::find_if(kTargets, [&](const PlanTargetTraits& row) { return row.target == target; });
}

DeploymentTarget deployment_for(PlanTarget target, const std::string& device, const std::string& label) {
  const PlanTargetTraits& row = plan_target_traits(target);
  DeploymentTarget deployment;
  deployment.provider = row.provider;
  if (row.npu) {
    deployment.device = device.empty() ? kDefaultNpu : device;
    const DeviceProfile& profile = deployment.profile();
    if (!profile.requires_power_of_two || deployment.device == kHostDevice) {
      throw_bad_input(label, "--device " + deployment.device + " is not an NPU; --target " + to_string(target) +
                                 " needs stx or ve2");
    }
  } else {
    if (!device.empty() && device != kHostDevice) {
      throw_bad_input(label, "--device " + device + " is an NPU; --target " + to_string(target) +
                                 " runs on the host (use an npu_* target)");
    }
    deployment.device = kHostDevice;
  }
  return deployment;
}

PlanTarget plan_target_for(const DeploymentTarget& deployment, Architecture architecture) {
  if (deployment.profile().requires_power_of_two) {
    const bool attention = architecture == Architecture::kTransformer || architecture == Architecture::kHybrid;
    return attention ? kNpuTransformer : kNpuCnn;
  }
  const std::string& p = deployment.provider;
  return text::equal_ignoring_case(p, "CUDA") || text::equal_ignoring_case(p, plan_target_traits(kCuda).provider) ? kCuda
                                                                                                                  : kCpu;
}

const PresetChoice& recommended_preset(PlanTarget target, PlanGoal goal) {
  return *std::ranges::find_if(kChoices, [&](const PresetChoice& row) { return row.target == target && row.goal == goal; });
}

const char* calib_method_reason(CalibMethod method) {
  switch (method) {
    case kMinMax: return "MinMax keeps every calibration value in range";
    case kPercentile: return "Percentile 99.999 clips the rare outliers that would stretch an activation's range";
    case kEntropy: return "Entropy (KL) is the GPU int8 calibrators' usual choice: it trades clipping against resolution";
    case kMinMse: return "MinMSE picks the range with the smallest quantization error";
    case kPowerOfTwoNonOverflow: return "PowerOfTwo_NonOverflow rounds the MinMax scale up to 2^k";
    case kPowerOfTwoMinMse: return "PowerOfTwo_MinMSE picks the 2^k scale with the smallest quantization error";
  }
  return "a plugin's method";  // an added method (add_calib_method)
}

std::string int8_preset_for(const DeploymentTarget& deployment) {
  return recommended_preset(plan_target_for(deployment, Architecture::kCnn), kAccuracy).preset;
}

}  // namespace mixprec
