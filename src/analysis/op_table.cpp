#include "analysis/op_table.h"

#include <array>
#include <initializer_list>
#include <unordered_map>
#include <vector>

#include "mixprec/analysis.h"

namespace mixprec::analysis {
namespace {

constexpr uint16_t inputs(std::initializer_list<int> indices) {
  uint16_t mask = 0;
  for (int i : indices) mask = static_cast<uint16_t>(mask | (1u << i));
  return mask;
}

constexpr std::string_view kMs = "com.microsoft";
constexpr std::string_view kAnyCustom = "*";
using enum QuantRole;

// clang-format off
constexpr OpTraits kOpTable[] = {
  // domain      op_type                     flags                      role          operands          quant types
  // Float compute.
  {"",  "Conv",                   kCompute,                  kNone,        inputs({0, 1}),    0},
  {"",  "ConvTranspose",          kCompute,                  kNone,        inputs({0, 1}),    0},
  {"",  "Gemm",                   kCompute,                  kNone,        inputs({0, 1}),    0},
  {"",  "MatMul",                 kCompute,                  kNone,        inputs({0, 1}),    0},
  {"",  "Einsum",                 kCompute,                  kNone,        kAllInputs,        0},
  {"",  "Attention",              kCompute,                  kNone,        inputs({0, 1, 2}), 0},
  {"",  "LSTM",                   kCompute,                  kNone,        inputs({0, 1, 2}), 0},
  {"",  "GRU",                    kCompute,                  kNone,        inputs({0, 1, 2}), 0},
  {"",  "RNN",                    kCompute,                  kNone,        inputs({0, 1, 2}), 0},
  {kMs, "Attention",              kCompute,                  kNone,        inputs({0, 1}),    0},
  {kMs, "MultiHeadAttention",     kCompute,                  kNone,        inputs({0, 1, 2}), 0},
  {kMs, "GroupQueryAttention",    kCompute,                  kNone,        inputs({0, 1, 2}), 0},
  {kMs, "FusedConv",              kCompute,                  kNone,        inputs({0, 1}),    0},
  {kMs, "FusedGemm",              kCompute,                  kNone,        inputs({0, 1}),    0},
  {kMs, "FusedMatMul",            kCompute,                  kNone,        inputs({0, 1}),    0},
  // Quantized compute kernels (QOperator format, dynamic and weight-only quantization).
  {"",  "QLinearConv",            kCompute,                  kQOperator,   0, inputs({2, 5, 7})},
  {"",  "QLinearMatMul",          kCompute,                  kQOperator,   0, inputs({2, 5, 7})},
  {"",  "ConvInteger",            kCompute,                  kQOperator,   0, inputs({0, 1, 2, 3})},
  {"",  "MatMulInteger",          kCompute,                  kQOperator,   0, inputs({0, 1, 2, 3})},
  {kMs, "QGemm",                  kCompute,                  kQOperator,   0, inputs({2, 5, 8})},
  {kMs, "QAttention",             kCompute,                  kQOperator,   0, inputs({6, 7})},
  {kMs, "DynamicQuantizeMatMul",  kCompute,                  kQOperator,   0, inputs({1, 3})},
  {kMs, "MatMulIntegerToFloat",   kCompute,                  kQOperator,   0, inputs({0, 1, 4, 5})},
  {kMs, "DynamicQuantizeLSTM",    kCompute,                  kQOperator,   0, 0},
  {kMs, "MatMulNBits",            kCompute,                  kQOperator,   0, 0},
  // Quantized non-compute ops.
  {"",  "DynamicQuantizeLinear",  0,                         kQOperator,   0, 0},
  {kMs, "QLinearAdd",             0,                         kQOperator,   0, inputs({2, 5, 7})},
  {kMs, "QLinearMul",             0,                         kQOperator,   0, inputs({2, 5, 7})},
  {kMs, "QLinearSigmoid",         0,                         kQOperator,   0, inputs({2, 4})},
  {kMs, "QLinearLeakyRelu",       0,                         kQOperator,   0, inputs({2, 4})},
  {kMs, "QLinearSoftmax",         0,                         kQOperator,   0, inputs({2, 4})},
  {kMs, "QLinearAveragePool",     0,                         kQOperator,   0, inputs({2, 4})},
  {kMs, "QLinearGlobalAveragePool", 0,                       kQOperator,   0, inputs({2, 4})},
  {kMs, "QLinearConcat",          0,                         kQOperator,   0, inputs({1})},
  // Quantize / dequantize.
  {"",  "QuantizeLinear",         kRepresentationOnly,       kQuantize,    0, inputs({2})},
  {"",  "DequantizeLinear",       kRepresentationOnly,       kDequantize,  0, inputs({0, 2})},
  // Vendor quantize ops in any other domain, matched by suffix (com.microsoft QuantizeLinear,
  // com.amd.quark ExtendedQuantizeLinear / BFPQuantizeDequantize, com.vai.quantize
  // VitisDequantizeLinear, ...). Suffixes are case-sensitive: "DequantizeLinear" does not end
  // with "QuantizeLinear".
  {kAnyCustom, "DequantizeLinear",   kRepresentationOnly,  kDequantize,         0, inputs({0, 2})},
  {kAnyCustom, "QuantizeLinear",     kRepresentationOnly,  kQuantize,           0, inputs({2})},
  {kAnyCustom, "QuantizeDequantize", kRepresentationOnly,  kQuantizeDequantize, 0, 0},
  // Plumbing.
  {"",  "Identity",               kLayoutOnly | kRepresentationOnly, kNone, 0, 0},
  {"",  "Cast",                   kRepresentationOnly,       kNone,        0, 0},
  {"",  "Reshape",                kLayoutOnly,               kNone,        0, 0},
  {"",  "Transpose",              kLayoutOnly,               kNone,        0, 0},
  {"",  "Squeeze",                kLayoutOnly,               kNone,        0, 0},
  {"",  "Unsqueeze",              kLayoutOnly,               kNone,        0, 0},
  {"",  "Flatten",                kLayoutOnly,               kNone,        0, 0},
  // Detection post-processing.
  {"",  "NonMaxSuppression",      kDetectionPostprocess,     kNone,        0, 0},
  {"",  "TopK",                   kDetectionPostprocess,     kNone,        0, 0},
  {"",  "ScatterND",              kDetectionPostprocess,     kNone,        0, 0},
};
// clang-format on

struct TableIndex {
  std::unordered_map<std::string, const OpTraits*> exact;  // "domain:op_type", default domain ""
  std::vector<const OpTraits*> custom_suffixes;

  TableIndex() {
    for (const OpTraits& row : kOpTable) {
      if (row.domain == kAnyCustom) {
        custom_suffixes.push_back(&row);
      } else {
        exact.emplace(std::string(row.domain) + ":" + std::string(row.op_type), &row);
      }
    }
  }
};

const TableIndex& table_index() {
  static const TableIndex index;
  return index;
}

// Index = ONNX TensorProto.DataType value (onnx.proto3). Names follow mixprec's dtype names.
constexpr std::array<std::string_view, 24> kElementTypeNames = {
    "undefined",     "float32",     "uint8",          "int8",       "uint16",  "int16",
    "int32",         "int64",       "string",         "bool",       "float16", "float64",
    "uint32",        "uint64",      "complex64",      "complex128", "bfloat16", "float8e4m3fn",
    "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz", "uint4",      "int4",    "float4e2m1",
};

}  // namespace

bool is_default_domain(std::string_view domain) { return domain.empty() || domain == "ai.onnx"; }

const OpTraits* find_op_traits(std::string_view domain, std::string_view op_type) {
  const TableIndex& index = table_index();
  const std::string key =
      std::string(is_default_domain(domain) ? std::string_view() : domain) + ":" + std::string(op_type);
  if (const auto it = index.exact.find(key); it != index.exact.end()) return it->second;
  if (is_default_domain(domain)) return nullptr;
  for (const OpTraits* row : index.custom_suffixes) {
    if (op_type.ends_with(row->op_type)) return row;
  }
  return nullptr;
}

std::string qualified_op_type(const onnx::NodeProto& node) {
  return is_default_domain(node.domain()) ? node.op_type() : node.domain() + ":" + node.op_type();
}

std::string onnx_type_name(int32_t elem_type) {
  if (elem_type >= 0 && static_cast<size_t>(elem_type) < kElementTypeNames.size()) {
    return std::string(kElementTypeNames[static_cast<size_t>(elem_type)]);
  }
  return "onnx_type_" + std::to_string(elem_type);
}

}  // namespace mixprec::analysis

namespace mixprec {

bool is_compute_op(std::string_view domain, std::string_view op_type) {
  const analysis::OpTraits* traits = analysis::find_op_traits(domain, op_type);
  return traits != nullptr && (traits->flags & analysis::kCompute) != 0;
}

}  // namespace mixprec
