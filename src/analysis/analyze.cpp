// analyze_model(): metadata, op histogram and inputs/outputs here; the other facts come from
// the passes declared in analysis/model_graph.h.
#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "analysis/model_graph.h"
#include "mixprec/analysis.h"

namespace mixprec {
namespace {

TensorInfo describe_value(const onnx::ValueInfoProto& info) {
  TensorInfo tensor{.name = info.name(), .dtype = "undefined", .shape = std::nullopt};
  switch (info.type().value_case()) {
    case onnx::TypeProto::kTensorType: break;
    case onnx::TypeProto::kSequenceType: tensor.dtype = "sequence"; return tensor;
    case onnx::TypeProto::kMapType: tensor.dtype = "map"; return tensor;
    case onnx::TypeProto::kOptionalType: tensor.dtype = "optional"; return tensor;
    case onnx::TypeProto::kSparseTensorType: tensor.dtype = "sparse_tensor"; return tensor;
    case onnx::TypeProto::kOpaqueType: tensor.dtype = "opaque"; return tensor;
    case onnx::TypeProto::VALUE_NOT_SET: return tensor;
  }
  const onnx::TypeProto::Tensor& type = info.type().tensor_type();
  tensor.dtype = ir::onnx_type_name(type.elem_type());
  if (type.has_shape()) {
    tensor.shape.emplace();
    for (const onnx::TensorShapeProto::Dimension& dim : type.shape().dim()) {
      tensor.shape->push_back(Dim{.value = dim.has_dim_value() ? std::optional<int64_t>(dim.dim_value()) : std::nullopt,
                                  .param = dim.has_dim_param() ? dim.dim_param() : ""});
    }
  }
  return tensor;
}

std::vector<OpCount> op_histogram(const analysis::ModelGraph& graph) {
  std::map<std::string, int64_t> counts;
  for (size_t id = 0; id < graph.size(); ++id) ++counts[ir::qualified_op_type(graph.node(id))];
  std::vector<OpCount> histogram;
  for (const auto& [op_type, count] : counts) histogram.push_back({op_type, count});
  // counts is ordered by name, so a stable sort on the count breaks ties by name.
  std::stable_sort(histogram.begin(), histogram.end(),
                   [](const OpCount& a, const OpCount& b) { return a.count > b.count; });
  return histogram;
}

}  // namespace

const char* to_string(QuantState state) {
  switch (state) {
    case QuantState::kFloat: return "float";
    case QuantState::kQdq: return "qdq";
    case QuantState::kCastPairs: return "cast_pairs";
    case QuantState::kQOperator: return "qoperator";
    case QuantState::kCustomDomain: return "custom_domain";
    case QuantState::kMixed: return "mixed";
  }
  return "?";
}

const char* to_string(Precision precision) {
  switch (precision) {
    case Precision::kFloat: return "float";
    case Precision::kQuantized: return "quantized";
    case Precision::kBFloat16: return "bf16";
    case Precision::kFloat16: return "fp16";
  }
  return "?";
}

const char* to_string(TaskType task) {
  switch (task) {
    case TaskType::kClassification: return "classification";
    case TaskType::kDetection: return "detection";
    case TaskType::kRegression: return "regression";
    case TaskType::kSequence: return "sequence";
    case TaskType::kUnknown: return "unknown";
  }
  return "?";
}

const char* to_string(Architecture architecture) {
  switch (architecture) {
    case Architecture::kCnn: return "cnn";
    case Architecture::kTransformer: return "transformer";
    case Architecture::kHybrid: return "hybrid";
    case Architecture::kRecurrent: return "recurrent";
    case Architecture::kUnknown: return "unknown";
  }
  return "?";
}

std::string Dim::to_string() const {
  if (value) return std::to_string(*value);
  return param.empty() ? "?" : param;
}

std::string dims_to_string(const std::optional<std::vector<Dim>>& shape) {
  if (!shape) return "[*]";
  std::string text = "[";
  for (size_t i = 0; i < shape->size(); ++i) text += (i == 0 ? "" : ", ") + (*shape)[i].to_string();
  return text + "]";
}

EdgeQdqCount count_edge_qdq(const onnx::GraphProto& graph) {
  std::set<std::string> inputs, outputs;
  for (const auto& input : graph.input()) inputs.insert(input.name());
  for (const auto& output : graph.output()) outputs.insert(output.name());
  EdgeQdqCount count;
  for (const auto& node : graph.node()) {
    if (node.op_type() == "QuantizeLinear" && node.input_size() > 0 && inputs.count(node.input(0))) {
      ++count.quantized_inputs;
    }
    if (node.op_type() == "DequantizeLinear" && node.output_size() > 0 && outputs.count(node.output(0))) {
      ++count.dequantized_outputs;
    }
  }
  return count;
}

ModelAnalysis analyze_model(const onnx::ModelProto& model, const std::string& model_path) {
  const analysis::ModelGraph graph(model.graph(), model_path);

  ModelAnalysis result;
  result.model_path = model_path;
  result.ir_version = model.ir_version();
  for (const onnx::OperatorSetIdProto& opset : model.opset_import()) {
    result.opsets[ir::is_default_domain(opset.domain()) ? "ai.onnx" : opset.domain()] = opset.version();
  }
  result.producer_name = model.producer_name();
  result.producer_version = model.producer_version();
  result.graph_name = model.graph().name();
  result.node_count = static_cast<int64_t>(graph.size());

  result.quantization = analysis::summarize_quantization(graph);
  const EdgeQdqCount edges = count_edge_qdq(model.graph());
  result.quantization.edge_quantized_inputs = edges.quantized_inputs;
  result.quantization.edge_dequantized_outputs = edges.dequantized_outputs;
  result.op_histogram = op_histogram(graph);
  for (const onnx::ValueInfoProto& input : model.graph().input()) {
    if (!graph.root().is_initializer(input.name())) result.inputs.push_back(describe_value(input));
  }
  for (const onnx::ValueInfoProto& output : model.graph().output()) result.outputs.push_back(describe_value(output));
  result.dynamic_dims = dynamic_dims(model);
  result.body_dynamic_dims = body_dynamic_dims(model);

  const std::vector<std::optional<Precision>> precisions = analysis::classify_compute_nodes(graph);
  result.compute_ops = analysis::count_compute_ops(graph, precisions);
  result.coverage = analysis::summarize_coverage(result.compute_ops);
  result.graph_coverage = analysis::summarize_graph_coverage(graph, precisions);
  result.islands = analysis::find_islands(graph, precisions);
  result.task = analysis::infer_task_type(graph, result.outputs);
  result.architecture = analysis::infer_architecture(graph);
  return result;
}

}  // namespace mixprec
