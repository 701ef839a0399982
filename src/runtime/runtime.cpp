// The only translation unit family that includes onnxruntime_cxx_api.h.
#include "mixprec/runtime.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <functional>
#include <exception>
#include <fstream>
#include <iterator>
#include <mutex>
#include <map>
#include <set>
#include <string_view>
#include <unordered_map>

// The API table is set at run time (ensure_api): the linked ONNX Runtime, or the library
// MIXPREC_ORT_LIB names.
#define ORT_API_MANUAL_INIT
#include <onnxruntime_cxx_api.h>
#include <onnxruntime_session_options_config_keys.h>

#include <dlfcn.h>

#include "common/digest.h"
#include "common/text.h"
#include "mixprec/error.h"
#include "mixprec/log.h"
#include "mixprec/model_io.h"
#include "rewrite/graph_edit.h"
#include "runtime/quark_ops.h"

namespace mixprec {
namespace fs = std::filesystem;
namespace {

struct ApiSource {
  const OrtApiBase* base = nullptr;
  const OrtApi* api = nullptr;
  std::string library;  // "linked" or the MIXPREC_ORT_LIB path
};

ApiSource load_api() {
  const char* path = std::getenv("MIXPREC_ORT_LIB");
  if (path == nullptr || *path == '\0') return {OrtGetApiBase(), OrtGetApiBase()->GetApi(ORT_API_VERSION), "linked"};
  const std::string label = std::string("MIXPREC_ORT_LIB=") + path;
  // Kept loaded for the life of the process: the API table points into it.
  void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    throw_bad_input(label, std::string("cannot load the ONNX Runtime library: ") + (why ? why : "unknown reason"));
  }
  using GetApiBase = const OrtApiBase* (*)();
  auto* get_base = reinterpret_cast<GetApiBase>(dlsym(handle, "OrtGetApiBase"));
  if (get_base == nullptr) throw_bad_input(label, "not an ONNX Runtime library (no OrtGetApiBase)");
  const OrtApiBase* base = get_base();
  const OrtApi* api = base->GetApi(ORT_API_VERSION);
  if (api == nullptr) {
    throw_bad_input(label, std::string("ONNX Runtime ") + base->GetVersionString() +
                               " does not offer API version " + std::to_string(ORT_API_VERSION) +
                               ", which mixprec was built against; use ONNX Runtime 1." + std::to_string(ORT_API_VERSION) + " or newer");
  }
  return {base, api, path};
}

// Sets the C++ API's table once per process; every entry point calls it first.
const ApiSource& ensure_api() {
  static const ApiSource source = [] {
    ApiSource loaded = load_api();
    Ort::InitApi(loaded.api);
    return loaded;
  }();
  return source;
}

std::atomic<size_t> runtime_messages{0};

// ONNX Runtime's own log lines (optimizer notes such as "UnsqueezeElimination cannot remove
// node ...") go through our logger instead of raw to stderr: errors as warnings, the rest as
// info (shown with -v), each one counted.
void ORT_API_CALL forward_runtime_log(void*, OrtLoggingLevel severity, const char* category, const char*,
                                      const char* code_location, const char* message) {
  ++runtime_messages;
  const std::string text = std::string("onnxruntime [") + (category ? category : "") + "] " + (message ? message : "") +
                           (code_location && *code_location ? std::string(" (") + code_location + ")" : "");
  if (severity >= ORT_LOGGING_LEVEL_ERROR) {
    log_warning(text);
  } else {
    log_info(text);
  }
}

Ort::Env& ort_env() {
  // One environment per process, as ONNX Runtime requires.
  static Ort::Env env(ORT_LOGGING_LEVEL_WARNING, "mixprec", forward_runtime_log, nullptr);
  return env;
}

GraphOptimizationLevel to_ort(GraphOptimization level) {
  switch (level) {
    case GraphOptimization::kDisabled: return ORT_DISABLE_ALL;
    case GraphOptimization::kBasic: return ORT_ENABLE_BASIC;
    case GraphOptimization::kExtended: return ORT_ENABLE_EXTENDED;
    case GraphOptimization::kAll: return ORT_ENABLE_ALL;
  }
  return ORT_ENABLE_BASIC;
}

using ProviderOptions = std::unordered_map<std::string, std::string>;

// One row per execution provider we know how to append. Providers not listed here are
// appended through ONNX Runtime's generic by-name entry point.
struct ProviderRow {
  const char* short_name;
  const char* ort_name;
  void (*append)(Ort::SessionOptions&, const ProviderOptions&);
};

void append_none(Ort::SessionOptions&, const ProviderOptions&) {}

void append_cuda(Ort::SessionOptions& so, const ProviderOptions& options) {
  const OrtApi& api = Ort::GetApi();
  OrtCUDAProviderOptionsV2* cuda = nullptr;
  Ort::ThrowOnError(api.CreateCUDAProviderOptions(&cuda));
  std::unique_ptr<OrtCUDAProviderOptionsV2, decltype(api.ReleaseCUDAProviderOptions)> guard(
      cuda, api.ReleaseCUDAProviderOptions);
  std::vector<const char*> keys, values;
  for (const auto& [k, v] : options) {
    keys.push_back(k.c_str());
    values.push_back(v.c_str());
  }
  Ort::ThrowOnError(api.UpdateCUDAProviderOptions(cuda, keys.data(), values.data(), keys.size()));
  so.AppendExecutionProvider_CUDA_V2(*cuda);
}

void append_vitisai(Ort::SessionOptions& so, const ProviderOptions& options) {
  so.AppendExecutionProvider_VitisAI(options);
}

constexpr ProviderRow kProviders[] = {
    {"CPU", "CPUExecutionProvider", append_none},
    {"CUDA", "CUDAExecutionProvider", append_cuda},
    {"VitisAI", "VitisAIExecutionProvider", append_vitisai},
    {"XNNPACK", "XnnpackExecutionProvider", nullptr},
    {"OpenVINO", "OpenVINOExecutionProvider", nullptr},
    {"QNN", "QNNExecutionProvider", nullptr},
    {"DML", "DmlExecutionProvider", nullptr},
};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

const ProviderRow* find_provider(const std::string& name) {
  for (const auto& row : kProviders) {
    if (lower(name) == lower(row.short_name) || lower(name) == lower(row.ort_name)) return &row;
  }
  return nullptr;
}

// ONNX Runtime 1.29's QDQ fusions take float8 Q/DQ for integer ones: its selectors turn
// DQ(float8) -> Conv -> Q into a QLinearConv (or QLinearAdd, ...) that rejects float8 ("Type
// 'tensor(float8e4m3fn)' of input parameter ... of operator (QLinearConv) ... is invalid"), and its
// Clip/QuantizeLinear fusion throws on a float8 zero-point constant (mixprec's FP8 Q nodes have
// none; other tools' may). Such a session is opened again with the QDQ fusions off
// (session.disable_quant_qdq), and for the Clip fusion with graph optimizations off, so the float8
// Q/DQ nodes run as they are.
enum class Float8Failure { kNone, kQdqFusion, kClipFusion };

Float8Failure float8_failure(const std::string& message) {
  if (message.find("float8") != std::string::npos && message.find("QLinear") != std::string::npos) {
    return Float8Failure::kQdqFusion;
  }
  if (message.find("input y_zero_point of 17") != std::string::npos ||
      message.find("input y_zero_point of 19") != std::string::npos) {
    return Float8Failure::kClipFusion;
  }
  return Float8Failure::kNone;
}

// Creates a session with `so`, or after a float8 fusion failure with those fusions off (said
// once per process).
template <class Create>
Ort::Session create_session(Ort::SessionOptions& so, const std::string& label, const Create& create) {
  try {
    return create(so);
  } catch (const Ort::Exception& e) {
    const Float8Failure failure = float8_failure(e.what());
    if (failure == Float8Failure::kNone) throw;
    static std::once_flag said;
    std::call_once(said, [&] {
      log_warning(label + ": ONNX Runtime's QDQ fusions do not take FP8 Q/DQ (they build integer kernels from them); " +
                  (failure == Float8Failure::kClipFusion ? "the session runs with graph optimizations off"
                                                         : "the session runs with session.disable_quant_qdq=1") +
                  ", the FP8 Q/DQ nodes unfused");
    });
    so.AddConfigEntry("session.disable_quant_qdq", "1");
    if (failure == Float8Failure::kClipFusion) so.SetGraphOptimizationLevel(ORT_DISABLE_ALL);
    return create(so);
  }
}

// ONNX Runtime custom-op libraries every session registers (register_custom_op_library), by
// content digest: one library found at two paths registers its domain once (twice, the session
// fails "Domain already set in registry"). Each is loaded once and stays loaded for the life of
// the process, and each session calls its RegisterCustomOps entry (what ONNX Runtime's
// RegisterCustomOpsLibrary does after loading it again from the path): a library deleted or
// replaced on disk after registering changes nothing for the sessions that follow.
using RegisterCustomOpsFn = OrtStatus*(ORT_API_CALL*)(OrtSessionOptions*, const OrtApiBase*);
struct CustomOpLibrary {
  std::string digest;  // of the file's bytes
  std::string path;    // the first path it was registered from (for messages)
  RegisterCustomOpsFn register_ops = nullptr;
};

// Registers `library`'s ops with `so`; kRuntime naming `label` when the library's entry fails.
void add_custom_ops(OrtSessionOptions* so, const CustomOpLibrary& library, const std::string& label) {
  const ApiSource& source = ensure_api();
  if (OrtStatus* status = library.register_ops(so, source.base)) {
    const std::string why = source.api->GetErrorMessage(status);
    source.api->ReleaseStatus(status);
    throw Error(ErrorKind::kRuntime, label, "custom-op library " + library.path + ": RegisterCustomOps failed: " + why);
  }
}

std::mutex custom_op_libraries_mutex;
std::vector<CustomOpLibrary>& custom_op_libraries() {
  static std::vector<CustomOpLibrary> libraries;  // in the order registered
  return libraries;
}

Ort::SessionOptions make_session_options(const SessionOptions& options, const std::string& label,
                                         OrtCustomOpDomain* custom_ops = nullptr, bool large = false) {
  Ort::SessionOptions so;
  if (custom_ops != nullptr) so.Add(custom_ops);
  {
    const std::lock_guard lock(custom_op_libraries_mutex);
    for (const CustomOpLibrary& library : custom_op_libraries()) add_custom_ops(so, library, label);
  }
  // Quark's operators, so Quark-made and block-format models run on CPU.
  for (OrtCustomOpDomain* domain : quark_op_domains()) so.Add(domain);
  if (large) so.AddConfigEntry(kOrtSessionOptionsConfigDisablePrepacking, "1");
  so.SetGraphOptimizationLevel(to_ort(options.optimization));
  if (options.intra_op_threads > 0) so.SetIntraOpNumThreads(options.intra_op_threads);
  if (!options.optimized_model_path.empty()) so.SetOptimizedModelFilePath(options.optimized_model_path.c_str());
  if (!options.spin_wait) so.AddConfigEntry("session.intra_op.allow_spinning", "0");

  const ProviderRow* row = find_provider(options.provider);
  const std::string ort_name = row ? row->ort_name : options.provider;
  const auto available = available_providers();
  if (std::find(available.begin(), available.end(), ort_name) == available.end()) {
    throw Error(ErrorKind::kBadInput, label,
                "execution provider '" + options.provider + "' is not in this ONNX Runtime build (available: " +
                    text::join(available) + ")");
  }
  const ProviderOptions provider_options(options.provider_options.begin(), options.provider_options.end());
  if (row && row->append) {
    row->append(so, provider_options);
  } else {
    so.AppendExecutionProvider(row ? row->short_name : options.provider, provider_options);
  }
  return so;
}

Error runtime_error(const std::string& label, const Ort::Exception& e) {
  // ORT_INVALID_GRAPH / ORT_INVALID_ARGUMENT / ORT_NO_SUCHFILE describe the model or the data.
  const OrtErrorCode code = e.GetOrtErrorCode();
  const bool input_fault = code == ORT_INVALID_GRAPH || code == ORT_INVALID_ARGUMENT || code == ORT_NO_SUCHFILE ||
                           code == ORT_INVALID_PROTOBUF || code == ORT_NOT_IMPLEMENTED || code == ORT_NO_MODEL;
  std::string message = e.what();
  std::replace(message.begin(), message.end(), '\n', ' ');
  // "...Fatal error: com.example:Frobnicate(-1) is not a registered function/op": a node no
  // kernel or schema exists for is the model's property, not a failure of ours.
  constexpr std::string_view kUnregistered = " is not a registered function/op";
  if (const size_t end = message.find(kUnregistered); end != std::string::npos && end > 0) {
    const size_t start = message.rfind(' ', end - 1) + 1;
    std::string op = message.substr(start, end - start);
    op = op.substr(0, op.find('('));
    return Error(ErrorKind::kUnsupported, label,
                 "op " + op + " is not implemented by ONNX Runtime " + Ort::GetVersionString() +
                     " (an op of a custom domain needs its library registered)");
  }
  return Error(input_fault ? ErrorKind::kBadInput : ErrorKind::kRuntime, label, "ONNX Runtime: " + message);
}

InputSpec spec_from(const std::string& name, const Ort::TypeInfo& type_info, const std::string& label) {
  if (type_info.GetONNXType() != ONNX_TYPE_TENSOR) {
    throw_unsupported(label, "'" + name + "' is not a tensor (sequences, maps and optionals are not supported)");
  }
  auto info = type_info.GetTensorTypeAndShapeInfo();
  InputSpec spec;
  spec.name = name;
  spec.dtype = dtype_from_onnx(static_cast<int32_t>(info.GetElementType()));
  spec.shape = info.GetShape();
  const size_t rank = spec.shape.size();
  std::vector<const char*> symbolic(rank, nullptr);
  if (rank > 0) info.GetSymbolicDimensions(symbolic.data(), rank);
  spec.dim_params.resize(rank);
  for (size_t i = 0; i < rank; ++i) spec.dim_params[i] = symbolic[i] ? symbolic[i] : "";
  return spec;
}

void check_input(const InputSpec& spec, const Tensor& tensor, const std::string& label) {
  if (tensor.dtype() != spec.dtype) {
    throw_bad_input(label, "input '" + spec.name + "' is " + dtype_name(tensor.dtype()) + ", the model wants " +
                               dtype_name(spec.dtype));
  }
  bool ok = tensor.shape().size() == spec.shape.size();
  for (size_t i = 0; ok && i < spec.shape.size(); ++i) {
    ok = spec.shape[i] < 0 || spec.shape[i] == tensor.shape()[i];
  }
  if (!ok) {
    throw_bad_input(label, "input '" + spec.name + "' has shape " + shape_to_string(tensor.shape()) +
                               ", the model wants " + shape_to_string(spec.shape));
  }
}

// --- Taps: a CPU custom op that hands its input to the session's TapSink ---------------------
// Each tap node carries the id of its session's entry in a process-wide registry and its index
// among the session's tapped tensors; its output is a float scalar, a graph output, so the
// node is kept and a run can fetch the taps alone.
constexpr const char* kTapDomain = "mixprec.tap";
constexpr const char* kTapOp = "Tap";

struct TapEntry {
  TapSink* sink = nullptr;
  size_t count = 0;          // the sink's taps; higher indices only carry a body's chain out
  std::exception_ptr error;  // the first failure of a run, rethrown by run_taps
};

class TapRegistry {
 public:
  static TapRegistry& instance() {
    static TapRegistry registry;
    return registry;
  }
  int64_t add(std::shared_ptr<TapEntry> entry) {
    std::lock_guard lock(mutex_);
    entries_.emplace(next_, std::move(entry));
    return next_++;
  }
  void remove(int64_t id) {
    std::lock_guard lock(mutex_);
    entries_.erase(id);
  }
  std::shared_ptr<TapEntry> find(int64_t id) {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(id);
    return it == entries_.end() ? nullptr : it->second;
  }

 private:
  std::mutex mutex_;
  std::unordered_map<int64_t, std::shared_ptr<TapEntry>> entries_;
  int64_t next_ = 1;
};

struct TapKernel {
  TapKernel(const OrtApi&, const OrtKernelInfo* info) {
    const Ort::ConstKernelInfo kernel_info(info);
    session_ = kernel_info.GetAttribute<int64_t>("session");
    index_ = static_cast<size_t>(kernel_info.GetAttribute<int64_t>("index"));
  }
  // Exceptions must not cross ONNX Runtime's C boundary: the entry keeps the first one.
  void Compute(OrtKernelContext* context) {
    const std::shared_ptr<TapEntry> entry = TapRegistry::instance().find(session_);
    try {
      Ort::KernelContext ctx(context);
      if (entry && !entry->error && index_ < entry->count) {
        const Ort::ConstValue value = ctx.GetInput(1);
        const auto info = value.GetTensorTypeAndShapeInfo();
        TensorView view;
        view.dtype = dtype_from_onnx(static_cast<int32_t>(info.GetElementType()));
        view.shape = info.GetShape();
        view.data = static_cast<const std::byte*>(value.GetTensorRawData());
        view.bytes = info.GetElementCount() * dtype_size(view.dtype);
        entry->sink->observe(index_, view);
      }
      auto out = ctx.GetOutput(0, nullptr, 0);
      *out.GetTensorMutableData<float>() = 0.0f;
    } catch (...) {
      if (entry && !entry->error) entry->error = std::current_exception();
    }
  }

 private:
  int64_t session_ = 0;
  size_t index_ = 0;
};

struct TapOp : Ort::CustomOpBase<TapOp, TapKernel> {
  void* CreateKernel(const OrtApi& api, const OrtKernelInfo* info) const { return new TapKernel(api, info); }
  const char* GetName() const { return kTapOp; }
  // Input 0: the previous tap's output (omitted for the first tap); input 1: the tensor.
  size_t GetInputTypeCount() const { return 2; }
  ONNXTensorElementDataType GetInputType(size_t index) const {
    return index == 0 ? ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT : ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  }
  OrtCustomOpInputOutputCharacteristic GetInputCharacteristic(size_t index) const {
    return index == 0 ? INPUT_OUTPUT_OPTIONAL : INPUT_OUTPUT_REQUIRED;
  }
  size_t GetOutputTypeCount() const { return 1; }
  ONNXTensorElementDataType GetOutputType(size_t) const { return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT; }
};

// Created on first use, after the API table is set; lives as long as the process.
OrtCustomOpDomain* tap_domain() {
  static TapOp op;
  static Ort::CustomOpDomain domain = [] {
    Ort::CustomOpDomain d(kTapDomain);
    d.Add(&op);
    return d;
  }();
  return domain;
}

// Chains a tap node reading each of `taps` (tap index, tensor) into `graph`, in the order the
// graph computes the tensors; returns the chain's last output ("" when `taps` is empty).
std::string chain_taps(onnx::GraphProto& graph, std::vector<std::pair<size_t, std::string>> taps,
                       const std::unordered_map<std::string, size_t>& position, int64_t session,
                       std::set<std::string>& names) {
  std::stable_sort(taps.begin(), taps.end(),
                   [&](const auto& a, const auto& b) { return position.at(a.second) < position.at(b.second); });
  std::string previous;
  for (const auto& [i, tensor] : taps) {
    std::string out = "mixprec_tap_" + std::to_string(i);
    while (names.count(out)) out += "_";
    names.insert(out);
    onnx::NodeProto& node = *graph.add_node();
    node.set_op_type(kTapOp);
    node.set_domain(kTapDomain);
    node.set_name(out);
    node.add_input(previous);  // "" for the first: an omitted optional input
    node.add_input(tensor);
    node.add_output(out);
    for (const auto& [key, value] : {std::pair{"session", session}, std::pair{"index", static_cast<int64_t>(i)}}) {
      auto& attribute = *node.add_attribute();
      attribute.set_name(key);
      attribute.set_type(onnx::AttributeProto::INT);
      attribute.set_i(value);
    }
    previous = out;
  }
  return previous;
}

// `model` with a tap node reading each of `tensors`; returns the name of the output run_taps
// fetches. The taps form a chain, each reading the previous tap's (scalar) output first and
// then its tensor, in the order the graph computes the tensors: ONNX Runtime orders execution
// by a depth-first walk from the fetched outputs, inputs first, so the chain puts each tap
// right after the nodes its tensor needs, and the tensor's buffer is free after its last
// reader, as without the tap. (Independent taps, each a graph output, would all run at the
// end and keep every tapped tensor alive at once.)
// A tensor computed inside an If/Loop/Scan body (or a body's own input) is tapped inside that
// body, where ONNX Runtime runs it each time the body runs: once per taken branch, once per
// iteration. A body's chain ends in a body output: an extra output of the body and of the node
// that owns it (an If's other branch gives a 0 for it; a Loop or Scan stacks it per iteration),
// which the enclosing graph's chain reads, so fetching the main chain runs every body with taps.
std::string add_taps(onnx::ModelProto& model, const std::vector<std::string>& tensors, int64_t session,
                     const std::string& label) {
  std::set<std::string> names;
  // Where each tensor becomes available, per graph; tensors in the graph that defines them.
  std::map<const onnx::GraphProto*, std::unordered_map<std::string, size_t>> positions;
  std::unordered_map<std::string, const onnx::GraphProto*> defined_in;
  rewrite::for_each_graph(*model.mutable_graph(), [&](onnx::GraphProto& graph) {
    auto& position = positions[&graph];
    for (const auto& input : graph.input()) position.emplace(input.name(), 0);
    for (int n = 0; n < graph.node_size(); ++n) {
      for (const auto& out : graph.node(n).output()) position.emplace(out, static_cast<size_t>(n) + 1);
      names.insert(graph.node(n).name());
    }
    for (const auto& init : graph.initializer()) {
      names.insert(init.name());
      if (position.contains(init.name()) && position.at(init.name()) == 0) position.erase(init.name());
    }
    for (const auto& [name, at] : position) {
      names.insert(name);
      defined_in.emplace(name, &graph);  // the first graph (outermost, then node order) that defines it
    }
  });
  std::map<const onnx::GraphProto*, std::vector<std::pair<size_t, std::string>>> taps;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto it = defined_in.find(tensors[i]);
    if (it == defined_in.end()) throw_bad_input(label, "no tensor named '" + tensors[i] + "' in the model");
    taps[it->second].emplace_back(i, tensors[i]);
  }
  // Bottom up: a body's chain becomes an output of its owner, which its own graph then taps.
  const std::function<std::string(onnx::GraphProto&)> tap_graph = [&](onnx::GraphProto& graph) -> std::string {
    auto& position = positions[&graph];
    std::vector<std::pair<size_t, std::string>> own = taps[&graph];
    for (int n = 0; n < graph.node_size(); ++n) {
      onnx::NodeProto& node = *graph.mutable_node(n);
      std::vector<std::pair<onnx::GraphProto*, std::string>> ends;  // body, its chain's end
      for (auto& attribute : *node.mutable_attribute()) {
        if (attribute.has_g()) ends.emplace_back(attribute.mutable_g(), tap_graph(*attribute.mutable_g()));
        for (auto& body : *attribute.mutable_graphs()) ends.emplace_back(&body, tap_graph(body));
      }
      if (std::none_of(ends.begin(), ends.end(), [](const auto& e) { return !e.second.empty(); })) continue;
      if (node.op_type() != "If" && node.op_type() != "Loop" && node.op_type() != "Scan") {
        throw_unsupported(label, "node '" + node.name() + "' (" + node.op_type() +
                                     "): calibration cannot observe tensors inside its subgraph (only If, Loop and "
                                     "Scan bodies are run with taps)");
      }
      for (auto& [body, end] : ends) {
        std::string value = end;
        if (value.empty()) {  // an If branch without taps: a 0 for the tap output
          value = "mixprec_tap_none";
          while (names.count(value)) value += "_";
          names.insert(value);
          onnx::NodeProto& zero = *body->add_node();
          zero.set_op_type("Constant");
          zero.set_name(value);
          zero.add_output(value);
          auto& attribute = *zero.add_attribute();
          attribute.set_name("value");
          attribute.set_type(onnx::AttributeProto::TENSOR);
          attribute.mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
          attribute.mutable_t()->add_float_data(0.0f);
        }
        auto& output = *body->add_output();
        output.set_name(value);
        output.mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
        output.mutable_type()->mutable_tensor_type()->mutable_shape();  // a scalar (Scan wants the shape)
      }
      std::string out = "mixprec_tap_" + (node.name().empty() ? node.op_type() : node.name());
      while (names.count(out)) out += "_";
      names.insert(out);
      node.add_output(out);  // If: the branch's scalar; Loop/Scan: one per iteration, stacked
      if (node.op_type() == "Scan") {
        for (auto& attribute : *node.mutable_attribute()) {
          if (attribute.name() == "scan_output_axes" || attribute.name() == "scan_output_directions") attribute.add_ints(0);
        }
      }
      position.emplace(out, static_cast<size_t>(n) + 1);
      own.emplace_back(tensors.size(), out);  // an index past the sink's taps: not observed
    }
    return chain_taps(graph, own, position, session, names);
  };
  const std::string previous = tap_graph(*model.mutable_graph());
  if (!previous.empty()) {
    auto& output = *model.mutable_graph()->add_output();
    output.set_name(previous);
    output.mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  }
  auto& opset = *model.add_opset_import();
  opset.set_domain(kTapDomain);
  opset.set_version(1);
  return previous;
}

}  // namespace

std::vector<std::string> available_providers() {
  ensure_api();
  return Ort::GetAvailableProviders();
}

std::string runtime_version() {
  ensure_api();
  return Ort::GetVersionString();
}

std::string runtime_library() { return ensure_api().library; }

struct Session::Impl {
  std::string label;
  Ort::Session session{nullptr};
  std::vector<InputSpec> inputs;
  std::vector<InputSpec> outputs;
  // Tapped sessions: the registry entry and the tap outputs run_taps fetches.
  std::shared_ptr<TapEntry> taps;
  int64_t tap_id = 0;
  std::vector<std::string> tap_outputs;

  ~Impl() {
    if (tap_id) TapRegistry::instance().remove(tap_id);
  }

  // The Ort::Values of `given` for this session's inputs, checked against its input specs;
  // `names` receives their names. The values point into `given`.
  std::vector<Ort::Value> input_values(const NamedTensors& given, std::vector<const char*>& names) const;
  std::vector<Ort::Value> run(const NamedTensors& given, const std::vector<std::string>& wanted);

  void describe() {
    Ort::AllocatorWithDefaultOptions allocator;
    for (size_t i = 0; i < session.GetInputCount(); ++i) {
      inputs.push_back(spec_from(session.GetInputNameAllocated(i, allocator).get(), session.GetInputTypeInfo(i), label));
    }
    for (size_t i = 0; i < session.GetOutputCount(); ++i) {
      outputs.push_back(
          spec_from(session.GetOutputNameAllocated(i, allocator).get(), session.GetOutputTypeInfo(i), label));
    }
  }
};

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;
Session::~Session() = default;

Session Session::from_file(const std::string& model_path, const SessionOptions& options) {
  ensure_api();
  std::error_code ec;
  if (!fs::is_regular_file(model_path, ec)) throw_io(model_path, "no such model file");
  return Session(open_file(model_path, model_path, options, false, false));
}

std::unique_ptr<Session::Impl> Session::open_file(const std::string& model_path, const std::string& label,
                                                  const SessionOptions& options, bool taps, bool large) {
  auto impl = std::make_unique<Impl>();
  impl->label = label;
  try {
    Ort::SessionOptions so = make_session_options(options, label, taps ? tap_domain() : nullptr, large);
    impl->session = create_session(so, label, [&](Ort::SessionOptions& o) { return Ort::Session(ort_env(), model_path.c_str(), o); });
    impl->describe();
  } catch (const Ort::Exception& e) {
    throw runtime_error(label, e);
  }
  return impl;
}

std::unique_ptr<Session::Impl> Session::build(const onnx::ModelProto& model, const std::string& label,
                                              const SessionOptions& options, bool taps,
                                              const std::function<void(onnx::ModelProto&)>& edit) {
  if (model.opset_import_size() == 0) {
    throw_bad_input(label, "the model imports no opset (opset_import is empty), so no operator version is known: "
                           "export it again with its opset");
  }
  if (model.ByteSizeLong() > kProtobufLimitBytes) {
    // ONNX Runtime cannot take >2 GB from memory: the model goes through a temporary file with
    // external data, written from the model's buffers, and `edit` changes only the light graph.
    const fs::path dir = fs::temp_directory_path() / ("mixprec-session-" + std::to_string(::getpid()) + "-" +
                                                       std::to_string(reinterpret_cast<uintptr_t>(&model)));
    fs::create_directories(dir);
    const std::string path = (dir / "model.onnx").string();
    try {
      save_model(model, path, {.external_data = ExternalData::kAlways, .edit_graph = edit});
      auto impl = open_file(path, label, options, taps, true);
      fs::remove_all(dir);
      return impl;
    } catch (...) {
      fs::remove_all(dir);
      throw;
    }
  }
  std::string bytes;
  if (edit) {
    onnx::ModelProto copy = model;
    edit(copy);
    bytes = serialize_model(copy, label);
  } else {
    bytes = serialize_model(model, label);
  }
  auto impl = std::make_unique<Impl>();
  impl->label = label;
  try {
    Ort::SessionOptions so = make_session_options(options, label, taps ? tap_domain() : nullptr);
    impl->session =
        create_session(so, label, [&](Ort::SessionOptions& o) { return Ort::Session(ort_env(), bytes.data(), bytes.size(), o); });
    impl->describe();
  } catch (const Ort::Exception& e) {
    throw runtime_error(label, e);
  }
  return impl;
}

Session Session::from_model(const onnx::ModelProto& model, const std::string& label, const SessionOptions& options,
                            const std::vector<std::string>& extra_outputs) {
  ensure_api();
  std::function<void(onnx::ModelProto&)> edit;
  if (!extra_outputs.empty()) {
    edit = [&](onnx::ModelProto& graph) { graph = expose_intermediates(graph, extra_outputs, label); };
  }
  return Session(build(model, label, options, false, edit));
}

std::map<std::string, ObservedTensor> observe_tensors(const onnx::ModelProto& model, const std::string& label,
                                                      const std::vector<std::string>& tensors,
                                                      const NamedTensors& inputs, const SessionOptions& options) {
  struct Sink : TapSink {
    explicit Sink(const std::vector<std::string>& tensor_names) : names(tensor_names) {}
    void observe(size_t tap, const TensorView& tensor) override { seen[names.at(tap)] = {tensor.shape, tensor.dtype}; }
    const std::vector<std::string>& names;
    std::map<std::string, ObservedTensor> seen;
  };
  Sink sink(tensors);
  Session::tapped(model, label, tensors, sink, options).run_taps(inputs);
  return std::move(sink.seen);
}

Session Session::tapped(const onnx::ModelProto& model, const std::string& label, const std::vector<std::string>& tensors,
                        TapSink& sink, const SessionOptions& options) {
  ensure_api();
  auto entry = std::make_shared<TapEntry>();
  entry->sink = &sink;
  entry->count = tensors.size();
  const int64_t id = TapRegistry::instance().add(entry);
  std::vector<std::string> tap_outputs;
  std::unique_ptr<Impl> impl;
  try {
    impl = build(model, label, options, true, [&](onnx::ModelProto& graph) {
      const std::string last = add_taps(graph, tensors, id, label);
      if (!last.empty()) tap_outputs.push_back(last);
    });
  } catch (...) {
    TapRegistry::instance().remove(id);
    throw;
  }
  impl->taps = std::move(entry);
  impl->tap_id = id;
  impl->tap_outputs = std::move(tap_outputs);
  // The taps are the session's business: callers see the model's own outputs.
  std::erase_if(impl->outputs, [&](const InputSpec& spec) {
    return std::find(impl->tap_outputs.begin(), impl->tap_outputs.end(), spec.name) != impl->tap_outputs.end();
  });
  return Session(std::move(impl));
}

const std::vector<InputSpec>& Session::inputs() const { return impl_->inputs; }
const std::vector<InputSpec>& Session::outputs() const { return impl_->outputs; }

std::vector<Ort::Value> Session::Impl::input_values(const NamedTensors& given, std::vector<const char*>& names) const {
  std::vector<Ort::Value> values;
  Ort::MemoryInfo memory = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
  std::set<std::string> seen;
  for (const auto& [name, tensor] : given) {
    auto spec = std::find_if(inputs.begin(), inputs.end(), [&](const auto& s) { return s.name == name; });
    if (spec == inputs.end()) throw_bad_input(label, "the model has no input named '" + name + "'");
    check_input(*spec, tensor, label);
    if (dtype_traits(tensor.dtype()).bits == 4) {
      throw_unsupported(label, "model input '" + name + "' is " + dtype_name(tensor.dtype()) +
                                   ": 4-bit model inputs are not supported");
    }
    seen.insert(name);
    names.push_back(name.c_str());
    // ONNX Runtime reads inputs only; the const_cast is required by its C signature.
    values.push_back(Ort::Value::CreateTensor(
        memory, const_cast<std::byte*>(tensor.data()), tensor.byte_size(), tensor.shape().data(),
        tensor.shape().size(), static_cast<ONNXTensorElementDataType>(dtype_to_onnx(tensor.dtype()))));
  }
  for (const auto& spec : inputs) {
    if (!seen.count(spec.name)) throw_bad_input(label, "no data given for model input '" + spec.name + "'");
  }
  return values;
}

std::vector<Ort::Value> Session::Impl::run(const NamedTensors& given, const std::vector<std::string>& wanted) {
  std::vector<const char*> input_names;
  const std::vector<Ort::Value> values = input_values(given, input_names);
  std::vector<const char*> wanted_c;
  for (const auto& name : wanted) wanted_c.push_back(name.c_str());
  if (taps) taps->error = nullptr;
  std::vector<Ort::Value> results;
  try {
    results = session.Run(Ort::RunOptions{nullptr}, input_names.data(), values.data(), values.size(), wanted_c.data(),
                          wanted_c.size());
  } catch (const Ort::Exception& e) {
    if (taps && taps->error) std::rethrow_exception(taps->error);
    throw runtime_error(label, e);
  }
  if (taps && taps->error) std::rethrow_exception(std::exchange(taps->error, nullptr));
  return results;
}

NamedTensors Session::run(const NamedTensors& inputs, const std::vector<std::string>& output_names) const {
  const std::string& label = impl_->label;
  std::vector<std::string> wanted = output_names;
  if (wanted.empty()) {
    for (const auto& spec : impl_->outputs) wanted.push_back(spec.name);
  }
  std::vector<Ort::Value> results = impl_->run(inputs, wanted);
  NamedTensors out;
  out.reserve(results.size());
  for (size_t i = 0; i < results.size(); ++i) {
    Ort::Value& value = results[i];
    if (!value.IsTensor()) throw_unsupported(label, "output '" + wanted[i] + "' is not a tensor");
    auto info = value.GetTensorTypeAndShapeInfo();
    const DType dtype = dtype_from_onnx(static_cast<int32_t>(info.GetElementType()));
    const Shape shape = info.GetShape();
    const auto* bytes = static_cast<const std::byte*>(value.GetTensorRawData());
    const auto count = static_cast<size_t>(shape_numel(shape));
    const std::span<const std::byte> stored(bytes, onnx_byte_size(dtype, count));
    if (dtype_traits(dtype).bits == 4) {  // ONNX Runtime keeps two 4-bit elements per byte
      out.emplace_back(wanted[i], Tensor(dtype, shape, unpack_4bit(stored, count, dtype == DType::kInt4)));
    } else {
      out.emplace_back(wanted[i], Tensor(dtype, shape, stored));
    }
  }
  return out;
}

void Session::run_taps(const NamedTensors& inputs) const {
  if (!impl_->taps) throw Error(ErrorKind::kInternal, impl_->label, "run_taps on a session without taps");
  if (impl_->tap_outputs.empty()) return;  // nothing tapped
  impl_->run(inputs, impl_->tap_outputs);
}

onnx::ModelProto expose_intermediates(const onnx::ModelProto& model, const std::vector<std::string>& names,
                                      const std::string& label) {
  onnx::ModelProto copy = model;
  onnx::GraphProto& graph = *copy.mutable_graph();
  std::set<std::string> produced;
  for (const auto& node : graph.node()) produced.insert(node.output().begin(), node.output().end());
  for (const auto& input : graph.input()) produced.insert(input.name());
  std::set<std::string> outputs;
  for (const auto& output : graph.output()) outputs.insert(output.name());
  std::unordered_map<std::string, const onnx::ValueInfoProto*> known;
  for (const auto& vi : graph.value_info()) known.emplace(vi.name(), &vi);
  for (const auto& name : names) {
    if (!produced.count(name)) throw_bad_input(label, "no tensor named '" + name + "' in the main graph");
    if (!outputs.insert(name).second) continue;
    auto* added = graph.add_output();
    if (auto it = known.find(name); it != known.end()) {
      *added = *it->second;
    } else {
      added->set_name(name);  // ONNX Runtime infers the type of an untyped graph output
    }
  }
  return copy;
}

size_t runtime_log_messages() { return runtime_messages.load(); }

void register_custom_op_library(const std::string& path) {
  ensure_api();
  std::ifstream file(path, std::ios::binary);
  if (!file) throw_bad_input(path, "cannot read this custom-op library");
  Fnv1a digest;
  digest.add(std::string(std::istreambuf_iterator<char>(file), {}));
  const std::string key = digest.hex();
  const std::lock_guard lock(custom_op_libraries_mutex);
  if (std::ranges::find(custom_op_libraries(), key, &CustomOpLibrary::digest) != custom_op_libraries().end()) return;
  // Loaded for the life of the process: the ops' kernels live in it.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    throw_bad_input(path, std::string("ONNX Runtime does not load it as a custom-op library: ") +
                              (why ? why : "unknown reason"));
  }
  CustomOpLibrary library{.digest = key, .path = path,
                          .register_ops = reinterpret_cast<RegisterCustomOpsFn>(dlsym(handle, "RegisterCustomOps"))};
  if (library.register_ops == nullptr) {
    dlclose(handle);
    throw_bad_input(path, "ONNX Runtime does not load it as a custom-op library: it has no RegisterCustomOps entry");
  }
  try {
    Ort::SessionOptions probe;
    add_custom_ops(probe, library, path);
  } catch (const Error& e) {
    dlclose(handle);
    throw_bad_input(path, "ONNX Runtime does not load it as a custom-op library: " + e.message());
  }
  custom_op_libraries().push_back(std::move(library));
}

}  // namespace mixprec
