// Runtime: the only gateway to ONNX Runtime. Sessions from a file or an in-memory model,
// execution providers by name, thread count, runs with named inputs, and intermediate tensors.
//
// ONNX Runtime exceptions never cross this boundary: they become mixprec::Error (kRuntime,
// or kBadInput when ONNX Runtime rejects the model or the data).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <onnx/onnx_pb.h>

#include "mixprec/input_spec.h"
#include "mixprec/tensor.h"

namespace mixprec {

enum class GraphOptimization { kDisabled, kBasic, kExtended, kAll };

struct SessionOptions {
  // Short name ("CPU", "CUDA", "VitisAI", ...) or ONNX Runtime's full name
  // ("CUDAExecutionProvider"). CPU is always appended last as the fallback.
  std::string provider = "CPU";
  std::map<std::string, std::string> provider_options;
  int intra_op_threads = 0;  // 0: ONNX Runtime's default (one per core)
  // Basic keeps the graph close to what we wrote (reference and accuracy runs); kAll is what
  // a deployment would use (latency, compile reports).
  GraphOptimization optimization = GraphOptimization::kBasic;
  // When set, ONNX Runtime writes the optimized graph there.
  std::string optimized_model_path;
};

// Providers compiled into the loaded ONNX Runtime ("CPUExecutionProvider", ...).
std::vector<std::string> available_providers();
// Version string of the loaded ONNX Runtime.
std::string runtime_version();
// Where the ONNX Runtime in use comes from: "linked" (the SDK mixprec was built with), or the
// library the MIXPREC_ORT_LIB environment variable names, loaded on first use. A path that
// does not load, is not ONNX Runtime, or lacks the API version mixprec was built against is
// Error kBadInput naming MIXPREC_ORT_LIB.
std::string runtime_library();
// How many of ONNX Runtime's own log lines (warnings and errors) were routed through the logger
// so far: errors as warnings, warnings as info (a CLI shows them with -v and counts them otherwise).
size_t runtime_log_messages();

class Session {
 public:
  static Session from_file(const std::string& model_path, const SessionOptions& options = {});
  // `label` names the model in error messages (a path or "quantized model"). `extra_outputs`
  // are intermediate tensors the session also returns, as with expose_intermediates(). A
  // model over protobuf's 2 GB limit goes through a temporary file with external data,
  // written straight from the model's buffers, and its session does not prepack weights
  // (prepacking holds a second copy of each): one copy in ONNX Runtime beside the caller's.
  static Session from_model(const onnx::ModelProto& model, const std::string& label,
                            const SessionOptions& options = {}, const std::vector<std::string>& extra_outputs = {});

  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;
  ~Session();

  // Graph inputs (initializers excluded) and outputs as ONNX Runtime sees them; dynamic dims
  // are -1 with their symbolic names in dim_params.
  const std::vector<InputSpec>& inputs() const;
  const std::vector<InputSpec>& outputs() const;

  // Runs once. `inputs` must name every model input, each with the input's dtype and rank and
  // matching static dims. Returns the requested outputs (all outputs when empty) in order.
  NamedTensors run(const NamedTensors& inputs, const std::vector<std::string>& output_names = {}) const;

 private:
  struct Impl;
  explicit Session(std::unique_ptr<Impl> impl);
  // `large`: a model over the protobuf limit (no weight prepacking).
  static Session open_file(const std::string& model_path, const SessionOptions& options, bool large);
  std::unique_ptr<Impl> impl_;
};

// A copy of `model` whose graph also outputs the named intermediate tensors (so a Session can
// fetch activations). Names already outputs are not duplicated; unknown names → kBadInput.
onnx::ModelProto expose_intermediates(const onnx::ModelProto& model, const std::vector<std::string>& names,
                                      const std::string& label);

}  // namespace mixprec
