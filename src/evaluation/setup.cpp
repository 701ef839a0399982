// The rules every command shares about its data and where it runs (mixprec/evaluation.h).
#include "common/text.h"
#include "mixprec/error.h"
#include "mixprec/evaluation.h"
#include "mixprec/log.h"

namespace mixprec {

DataSpec calibration_data(const EvaluationSetup& setup, size_t random_samples) {
  if (!setup.calibration.empty()) return setup.calibration;
  DataSpec data = setup.calibration;  // keeps the preprocessing and pinned shapes
  if (!setup.evaluation.data.files.empty()) {
    log_warning(setup.model_path + ": no calibration data given; calibrating on the evaluation samples, which flatters "
                                   "INT8 (give --calibration-data)");
    return setup.evaluation;
  }
  data.data.random_samples = random_samples;
  log_warning(setup.model_path + ": no calibration data given; calibrating on " + std::to_string(random_samples) +
              " seeded random samples (UseRandomData, seed " + std::to_string(data.data.seed) +
              "): ranges from random data can mislead, give --calibration-data");
  return data;
}

DataSpec evaluation_data(const EvaluationSetup& setup) {
  if (!setup.evaluation.empty()) return setup.evaluation;
  if (!setup.calibration.data.files.empty()) {
    log_warning(setup.model_path + ": no evaluation data given; evaluating on the calibration data, which flatters "
                                   "INT8 (give held-out samples with --data)");
    return setup.calibration;
  }
  throw_bad_input(setup.model_path, "no evaluation data: give --data (pictures, .npy/.npz) or --random N");
}

const DeviceProfile& DeploymentTarget::profile() const { return device_profile(device); }

SessionOptions DeploymentTarget::session(GraphOptimization optimization) const {
  SessionOptions options;
  options.provider = provider;
  options.provider_options = provider_options;
  options.intra_op_threads = threads;
  options.optimization = optimization;
  return options;
}

bool DeploymentTarget::on_cpu() const {
  return text::equal_ignoring_case(provider, "CPU") || text::equal_ignoring_case(provider, "CPUExecutionProvider");
}

RuntimeTrial try_on_provider(const DeploymentTarget& deployment, const std::string& model_path) {
  RuntimeTrial trial{deployment.provider, model_path, false, ""};
  try {
    Session::from_file(model_path, deployment.session());
    trial.ok = true;
    trial.detail = "session built";
  } catch (const Error& error) {
    trial.detail = error.message();
    log_warning(model_path + ": does not load on " + deployment.provider + ": " + error.message());
  }
  return trial;
}

SessionOptions accuracy_session(const DeploymentTarget& deployment) {
  SessionOptions options;
  options.intra_op_threads = deployment.threads;
  return options;  // CPU, basic optimizations
}

}  // namespace mixprec
