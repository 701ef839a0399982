#include "mixprec/error.h"
#include "mixprec/log.h"
#include "mixprec/model_io.h"
#include "mixprec/jobs.h"

namespace mixprec {

CompareReport compare_job(const CompareParams& params) {
  WarningCollector warnings;
  CompareReport report;
  const std::string& reference_path = params.setup.model_path;
  const onnx::ModelProto reference_model = load_model(reference_path, {.load_external_data = false});
  report.task = analyze_model(reference_model, reference_path).task;
  const SessionOptions session = params.deployment.session(GraphOptimization::kBasic);
  const Session reference = Session::from_file(reference_path, session);
  const Session candidate = Session::from_file(params.candidate_path, session);
  for (const auto& in : reference.inputs()) {
    const auto& cand = candidate.inputs();
    if (std::none_of(cand.begin(), cand.end(), [&](const InputSpec& s) { return s.name == in.name; })) {
      throw_bad_input(params.candidate_path, "has no input '" + in.name + "' that the reference model has");
    }
  }
  const auto source = open_samples(evaluation_data(params.setup), reference.inputs(), reference_path);
  if (source->size() == 0) throw_bad_input(reference_path, "no evaluation samples");
  ModelComparer comparer(params.setup.criterion.tolerance);
  for (size_t i = 0; i < source->size(); ++i) {
    const NamedTensors inputs = source->sample(i);
    comparer.add(reference.run(inputs), candidate.run(inputs));
    if (params.setup.progress) params.setup.progress(i + 1, source->size());
  }
  report.samples = source->size();
  report.data_description = source->describe();
  report.outputs = comparer.results();
  report.verdict = judge(report.task.type, report.outputs, params.setup.criterion.target);
  report.warnings = warnings.warnings();
  return report;
}

}  // namespace mixprec
