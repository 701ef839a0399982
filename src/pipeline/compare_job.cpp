#include "mixprec/error.h"
#include "mixprec/log.h"
#include "mixprec/model_io.h"
#include "mixprec/pipeline.h"

namespace mixprec {

CompareReport compare_job(const CompareParams& params) {
  WarningCollector warnings;
  CompareReport report;
  const onnx::ModelProto reference_model = load_model(params.reference_path, {.load_external_data = false});
  report.task = analyze_model(reference_model, params.reference_path).task;
  const Session reference = Session::from_file(params.reference_path, params.session);
  const Session candidate = Session::from_file(params.model_path, params.session);
  for (const auto& in : reference.inputs()) {
    const auto& cand = candidate.inputs();
    if (std::none_of(cand.begin(), cand.end(), [&](const InputSpec& s) { return s.name == in.name; })) {
      throw_bad_input(params.model_path, "has no input '" + in.name + "' that the reference model has");
    }
  }
  const auto source = open_samples(params.data, reference.inputs(), params.reference_path);
  if (source->size() == 0) throw_bad_input(params.reference_path, "no evaluation samples");
  ModelComparer comparer(params.tolerance);
  for (size_t i = 0; i < source->size(); ++i) {
    const NamedTensors inputs = source->sample(i);
    comparer.add(reference.run(inputs), candidate.run(inputs));
    if (params.progress) params.progress(i + 1, source->size());
  }
  report.samples = source->size();
  report.data_description = source->describe();
  report.outputs = comparer.results();
  report.verdict = judge(report.task.type, report.outputs, params.target);
  report.warnings = warnings.warnings();
  return report;
}

}  // namespace mixprec
