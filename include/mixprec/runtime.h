// Runtime: the only gateway to ONNX Runtime. Sessions from a file or an in-memory model,
// execution providers by name, thread count, runs with named inputs, and intermediate tensors.
//
// ONNX Runtime exceptions never cross this boundary: they become mixprec::Error (kRuntime,
// or kBadInput when ONNX Runtime rejects the model or the data).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
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
  // Off for sessions that run beside another one: ONNX Runtime's idle threads then sleep
  // instead of spinning on the cores the other needs.
  bool spin_wait = true;
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
// Every session built after this in the process also registers the ONNX Runtime custom-op
// library at `path` (its RegisterCustomOps entry), e.g. the ops a plugin brings. Registering the
// same library again, at this path or another (same bytes), registers it once. The library is
// loaded once and kept loaded: deleting or replacing the file afterwards changes no later
// session. kBadInput naming `path` when it cannot be read or ONNX Runtime does not load it.
void register_custom_op_library(const std::string& path);

// Whether ONNX Runtime's CPU kernels for u8 activations x s8 weights (the fused QLinearConv,
// MatMulInteger, ... of a U8S8 model) add products in int16 pairs that saturate on this CPU:
// x86-64 without AVX-VNNI or AVX512-VNNI, where MLAS uses vpmaddubsw. Such a model can then
// compute differently from its Q/DQ graph; 7-bit weights (params.reduce_range) cannot saturate.
bool cpu_u8s8_kernels_saturate();

// A tensor as ONNX Runtime holds it during a run; valid only inside TapSink::observe.
struct TensorView {
  DType dtype = DType::kFloat32;
  Shape shape;
  const std::byte* data = nullptr;
  size_t bytes = 0;

  std::span<const float> floats() const {  // float32 tensors only
    return {reinterpret_cast<const float*>(data), bytes / sizeof(float)};
  }
};

// Receives the tapped tensors of a Session::tapped session while it runs, on the thread that
// called run_taps(), in the order ONNX Runtime executes the taps. An exception thrown here
// ends the run and is rethrown by run_taps().
class TapSink {
 public:
  virtual ~TapSink() = default;
  // `tap` indexes the tensor names the session was built with.
  virtual void observe(size_t tap, const TensorView& tensor) = 0;
};

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

  // A session of `model` in which each of `tensors` (graph inputs or node outputs of the main
  // graph) is observed by `sink` as it is computed: a tap node (a CPU custom op of mixprec's)
  // reads it and hands it over without making it a graph output, so ONNX Runtime keeps its
  // memory planning and frees each buffer after its last reader. `sink` must outlive the
  // session. Unknown names are kBadInput.
  static Session tapped(const onnx::ModelProto& model, const std::string& label, const std::vector<std::string>& tensors,
                        TapSink& sink, const SessionOptions& options = {});

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
  // A run of a tapped session that fetches nothing but the taps: every tapped tensor reaches
  // the sink (and whatever it needs is computed), nothing is copied out.
  void run_taps(const NamedTensors& inputs) const;

 private:
  struct Impl;
  explicit Session(std::unique_ptr<Impl> impl);
  // `taps`: register mixprec's tap op with the session; `edit` changes the graph the session
  // runs (not the caller's model). A model over the protobuf limit goes through a file.
  static std::unique_ptr<Impl> build(const onnx::ModelProto& model, const std::string& label,
                                     const SessionOptions& options, bool taps,
                                     const std::function<void(onnx::ModelProto&)>& edit);
  // `large`: a model over the protobuf limit (no weight prepacking).
  static std::unique_ptr<Impl> open_file(const std::string& model_path, const std::string& label,
                                         const SessionOptions& options, bool taps, bool large);
  std::unique_ptr<Impl> impl_;
};

// One run of `model` on `inputs` with `tensors` (main-graph inputs or node outputs) tapped: the
// shape and type each had, nothing copied out. A tensor the run did not compute is absent.
std::map<std::string, ObservedTensor> observe_tensors(const onnx::ModelProto& model, const std::string& label,
                                                      const std::vector<std::string>& tensors,
                                                      const NamedTensors& inputs, const SessionOptions& options = {});

// A copy of `model` whose graph also outputs the named intermediate tensors (so a Session can
// fetch activations). Names already outputs are not duplicated; unknown names → kBadInput.
onnx::ModelProto expose_intermediates(const onnx::ModelProto& model, const std::vector<std::string>& names,
                                      const std::string& label);

}  // namespace mixprec
