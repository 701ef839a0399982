// A preset evaluated on the workbench for dry-run and the ladder: the device's verdict on its
// formats, one rewrite and evaluation pass, and the model saved in the work dir.
#pragma once

#include <string>

#include "mixprec/devices.h"
#include "mixprec/workflow.h"
#include "evaluation/workbench.h"

namespace mixprec {

// The model goes to `model_path`; the Evaluation (with its model) is returned for callers that
// need more than the result.
Evaluation evaluate_preset(Workbench& bench, const DeviceProfile& device, const std::string& preset,
                           const std::string& label, const std::string& model_path, PresetResult& result);

}  // namespace mixprec
