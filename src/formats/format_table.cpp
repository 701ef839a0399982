// The format table: one row per FormatId, in enum order.
#include <iterator>

#include "mixprec/formats.h"

#include "common/text.h"

namespace mixprec {
namespace {

// Signed integer formats default to symmetric (zero point 0 keeps integer kernels simple);
// unsigned ones to asymmetric, which is why they exist (post-ReLU activations use all codes).
// QuantizeLinear gained int8/uint8 in opset 10 and int16/uint16 in opset 21.
constexpr FormatTraits kFormatTable[] = {
    // id                 name      spec_name       integer storage          qmin    qmax   pow2   sym    per_ch opset
    {FormatId::kFloat32,  "fp32",   "Float32Spec",  false, DType::kFloat32,  0,      0,     false, false, false, 0},
    {FormatId::kXInt8,    "xint8",  "XInt8Spec",    true,  DType::kInt8,     -128,   127,   true,  true,  false, 10},
    {FormatId::kInt8,     "int8",   "Int8Spec",     true,  DType::kInt8,     -128,   127,   false, true,  true,  10},
    {FormatId::kUInt8,    "uint8",  "UInt8Spec",    true,  DType::kUInt8,    0,      255,   false, false, true,  10},
    {FormatId::kInt16,    "int16",  "Int16Spec",    true,  DType::kInt16,    -32768, 32767, false, true,  true,  21},
    {FormatId::kUInt16,   "uint16", "UInt16Spec",   true,  DType::kUInt16,   0,      65535, false, false, true,  21},
    {FormatId::kBFloat16, "bf16",   "BFloat16Spec", false, DType::kBFloat16, 0,      0,     false, false, false, 0},
    {FormatId::kFloat16,  "fp16",   "Float16Spec",  false, DType::kFloat16,  0,      0,     false, false, false, 0},
};

constexpr bool table_is_indexed_by_format_id() {
  for (size_t i = 0; i < std::size(kFormatTable); ++i) {
    if (static_cast<size_t>(kFormatTable[i].id) != i) return false;
  }
  return std::size(kFormatTable) == static_cast<size_t>(FormatId::kFloat16) + 1;
}
static_assert(table_is_indexed_by_format_id(), "kFormatTable rows must follow the FormatId order");

}  // namespace

const FormatTraits& format_traits(FormatId id) { return kFormatTable[static_cast<size_t>(id)]; }

std::string format_names(std::span<const FormatId> formats) {
  std::vector<std::string> names;
  for (FormatId id : formats) names.emplace_back(format_traits(id).name);
  return text::join(names);
}
std::span<const FormatTraits> all_formats() { return kFormatTable; }

std::optional<FormatId> format_from_name(std::string_view name) {
  for (const FormatTraits& traits : kFormatTable) {
    if (name == traits.spec_name || name == traits.name) return traits.id;
  }
  return std::nullopt;
}

}  // namespace mixprec
