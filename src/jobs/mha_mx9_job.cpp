// mha_mx9_job: the MHA-MX9 pipeline on a model, its inputs pinned first where asked, and the
// rewritten model run beside the input model on the same samples: the error it costs, measured.
#include "evaluation/static_shapes.h"
#include "jobs/model_and_config.h"
#include "mixprec/error.h"
#include "mixprec/jobs.h"
#include "mixprec/log.h"
#include "mixprec/model_io.h"
#include "mixprec/runtime.h"
#include "rewrite/mha_mx9.h"

namespace mixprec {

MhaMx9Report mha_mx9_job(const MhaMx9Params& params) {
  WarningCollector warnings;
  MhaMx9Report report;
  const std::string& label = params.setup.model_path;
  refuse_overwriting_input(label, params.output_path);
  onnx::ModelProto model = load_model(label);
  DataSpec data = params.setup.evaluation.empty() ? params.setup.calibration : params.setup.evaluation;
  if (data.empty()) data.data.random_samples = 4;
  // --input-shape pins the inputs the pipeline needs static.
  for (auto& input : *model.mutable_graph()->mutable_input()) {
    const auto pinned = data.data.input_shapes.find(input.name());
    if (pinned == data.data.input_shapes.end()) continue;
    auto* shape = input.mutable_type()->mutable_tensor_type()->mutable_shape();
    if (shape->dim_size() != 0 && shape->dim_size() != static_cast<int>(pinned->second.size())) {
      throw_bad_input(label, "--input-shape " + input.name() + "=" + shape_to_string(pinned->second) + " has rank " +
                                 std::to_string(pinned->second.size()) + "; the input has rank " +
                                 std::to_string(shape->dim_size()));
    }
    shape->clear_dim();
    for (int64_t d : pinned->second) shape->add_dim()->set_dim_value(d);
    report.pinned_inputs.push_back(input.name() + " " + shape_to_string(pinned->second));
  }
  const SessionOptions options{.optimization = GraphOptimization::kDisabled};
  const Session before = Session::from_model(model, label, options);
  auto source = open_samples(data, before.inputs(), label);
  report.samples = source->size();
  report.data_description = source->describe();
  if (report.samples == 0) throw_bad_input(label, "no samples to compare the outputs on");
  // The shapes a run sees, declared first: ONNX inference does not follow every exported
  // Reshape, and each step's own nodes are then inferred from their inputs' shapes.
  onnx::ModelProto shaped = model;
  declare_static_shapes(shaped, {source->sample(0)}, false, options, label, params.output_path);
  const onnx::ModelProto rewritten = rewrite::mha_mx9(shaped, label, &report.summary);
  const Session after = Session::from_model(rewritten, params.output_path, options);
  std::vector<OutputComparer> comparers;
  for (const auto& output : before.outputs()) comparers.emplace_back(output.name);
  for (size_t i = 0; i < report.samples; ++i) {
    const NamedTensors inputs = source->sample(i);
    const NamedTensors want = before.run(inputs);
    const NamedTensors got = after.run(inputs);
    for (size_t o = 0; o < want.size(); ++o) comparers[o].add(want[o].second, got[o].second);
  }
  for (const auto& c : comparers) report.metrics.push_back(c.result());
  save_model(rewritten, params.output_path);
  report.output_path = params.output_path;
  report.warnings = warnings.warnings();
  return report;
}

}  // namespace mixprec
