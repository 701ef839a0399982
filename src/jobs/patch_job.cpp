// patch_job: vaip_patch on a model, with the shapes its custom quant nodes take observed in one
// run, and the patched model checked against the input on the same samples. A model whose
// bf16/fp16 zero points keep it from running (a float32 zero point on bf16 codes) is checked
// against itself with only that edit made, and the report says so.
#include <cstring>
#include <map>
#include <memory>
#include <optional>

#include "jobs/model_and_config.h"
#include "mixprec/error.h"
#include "mixprec/jobs.h"
#include "mixprec/log.h"
#include "mixprec/model_io.h"
#include "mixprec/runtime.h"
#include "rewrite/vaip_patch.h"

namespace mixprec {
namespace {

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && a.byte_size() == b.byte_size() &&
         std::memcmp(a.data(), b.data(), a.byte_size()) == 0;
}

}  // namespace

PatchReport patch_job(const PatchParams& params) {
  WarningCollector warnings;
  PatchReport report;
  const std::string& label = params.setup.model_path;
  refuse_overwriting_input(label, params.output_path);
  const onnx::ModelProto model = load_model(label);
  const SessionOptions options{.optimization = GraphOptimization::kDisabled};
  // The reference run: the input model; when it does not run and fixing its zero points is what
  // makes it run, the input with only that edit (copied only then: a model can be large).
  std::optional<onnx::ModelProto> zero_points_fixed;
  std::optional<Session> session;
  std::string failure;
  const auto fall_back = [&](const std::string& why) {
    VaipPatchSummary fixes;
    onnx::ModelProto fixed = rewrite::vaip_fix_zero_points(model, label, &fixes);
    if (fixes.zero_points_fixed == 0) return false;
    zero_points_fixed = std::move(fixed);
    failure = why;
    session.emplace(Session::from_model(*zero_points_fixed, label, options));
    return true;
  };
  try {
    session.emplace(Session::from_model(model, label, options));
  } catch (const Error& e) {
    if (!fall_back(e.what())) throw;
  }
  // The user's data, else one seeded random sample (shapes are all a run is needed for here).
  DataSpec data = params.setup.evaluation.empty() ? params.setup.calibration : params.setup.evaluation;
  if (data.empty()) data.data.random_samples = 1;
  auto source = open_samples(data, session->inputs(), label);
  report.samples = source->size();
  report.data_description = source->describe();
  if (report.samples == 0) throw_bad_input(label, "no samples to observe the shapes on");
  if (!zero_points_fixed) {
    try {
      (void)session->run(source->sample(0));
    } catch (const Error& e) {
      if (!fall_back(e.what())) throw;
    }
  }
  const onnx::ModelProto& reference = zero_points_fixed ? *zero_points_fixed : model;
  if (zero_points_fixed) {
    report.reference = "the input model does not run in ONNX Runtime until its zero points are fixed (" + failure +
                       "): the outputs are compared with the input's with only that edit made";
  }
  const Session& original = *session;

  std::map<std::string, ObservedTensor> observed;
  const std::vector<std::string> tensors = rewrite::vaip_patch_shape_tensors(model);
  if (!tensors.empty()) observed = observe_tensors(reference, label, tensors, source->sample(0), options);
  const onnx::ModelProto patched = rewrite::vaip_patch(model, observed, label, &report.summary);
  if (!report.summary.no_shape.empty()) {
    log_warning(label + ": " + std::to_string(report.summary.no_shape.size()) +
                " custom quant node(s) got no shape attribute (inside If/Loop/Scan bodies, not observed): " +
                report.summary.no_shape.front() + (report.summary.no_shape.size() > 1 ? ", ..." : ""));
  }

  // The patched model must compute what the input model computes, bit for bit.
  const Session after = Session::from_model(patched, params.output_path, options);
  for (size_t i = 0; i < report.samples; ++i) {
    const NamedTensors inputs = source->sample(i);
    const NamedTensors want = original.run(inputs);
    const NamedTensors got = after.run(inputs);
    for (size_t o = 0; o < want.size(); ++o) {
      if (!same_bits(want[o].second, got[o].second)) {
        throw Error(ErrorKind::kInternal, label, "the patched model's output '" + want[o].first + "' differs from the input model's on " +
                       "sample " + std::to_string(i) + "; nothing written");
      }
    }
    report.outputs_compared = want.size();
  }
  save_model(patched, params.output_path);
  report.output_path = params.output_path;
  report.warnings = warnings.warnings();
  return report;
}

}  // namespace mixprec
