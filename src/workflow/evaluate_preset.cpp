#include "workflow/evaluate_preset.h"

#include "mixprec/model_io.h"

namespace mixprec {

Evaluation evaluate_preset(Workbench& bench, const DeviceProfile& device, const std::string& preset,
                           const std::string& label, const std::string& model_path, PresetResult& result) {
  const QuantConfig config = *preset_config(preset);
  result = PresetResult{.label = label, .preset = preset};
  if (const auto why = device_rejects(device, formats_used(config))) {
    result.on_device = false;
    result.device_note = *why;
  }
  Evaluation e = bench.evaluate(config);
  result.metrics = e.metrics;
  result.verdict = e.verdict;
  result.seconds = e.seconds;
  result.model_path = model_path;
  save_model(bench.for_writing(*e.model, model_path), model_path);
  return e;
}

}  // namespace mixprec
