// The format table: one row per FormatId, in enum order.
#include <deque>
#include <iterator>
#include <limits>
#include <type_traits>

#include "mixprec/formats.h"

#include "common/text.h"
#include "mixprec/error.h"

namespace mixprec {
namespace {

// Signed integer formats default to symmetric (zero point 0 keeps integer kernels simple);
// unsigned ones to asymmetric, which is why they exist (post-ReLU activations use all codes).
// QuantizeLinear gained int8/uint8 in opset 10, float8 in opset 19 and int16/uint16/int4/uint4
// and output_dtype in opset 21. FP8 is symmetric (zero point 0, left out: its Q nodes name their
// type with output_dtype, hence 21; qdq_pairs.cpp says why); its code range is +-its largest
// finite value, so the symmetric scale is amax / 448 (E4M3FN) or amax / 57344 (E5M2).
constexpr FormatTraits kFormatTable[] = {
    // id                   name         spec_name         integer block  storage          qmin    qmax   pow2   sym    per_ch opset
    {FormatId::kFloat32,    "fp32",      "Float32Spec",    false,  false, DType::kFloat32,  0,      0,     false, false, false, 0},
    {FormatId::kXInt8,      "xint8",     "XInt8Spec",      true,   false, DType::kInt8,     -128,   127,   true,  true,  false, 10},
    {FormatId::kInt8,       "int8",      "Int8Spec",       true,   false, DType::kInt8,     -128,   127,   false, true,  true,  10},
    {FormatId::kUInt8,      "uint8",     "UInt8Spec",      true,   false, DType::kUInt8,    0,      255,   false, false, true,  10},
    {FormatId::kInt16,      "int16",     "Int16Spec",      true,   false, DType::kInt16,    -32768, 32767, false, true,  true,  21},
    {FormatId::kUInt16,     "uint16",    "UInt16Spec",     true,   false, DType::kUInt16,   0,      65535, false, false, true,  21},
    {FormatId::kBFloat16,   "bf16",      "BFloat16Spec",   false,  false, DType::kBFloat16, 0,      0,     false, false, false, 0},
    {FormatId::kFloat16,    "fp16",      "Float16Spec",    false,  false, DType::kFloat16,  0,      0,     false, false, false, 0},
    // Block formats keep float32 tensors: their one node rounds values in place.
    {FormatId::kBfp16,      "bfp16",     "BFP16Spec",      false,  true,  DType::kFloat32,  0,      0,     false, false, false, 0},
    {FormatId::kMx4,        "mx4",       "MX4Spec",        false,  true,  DType::kFloat32,  0,      0,     false, false, false, 0},
    {FormatId::kMx6,        "mx6",       "MX6Spec",        false,  true,  DType::kFloat32,  0,      0,     false, false, false, 0},
    {FormatId::kMx9,        "mx9",       "MX9Spec",        false,  true,  DType::kFloat32,  0,      0,     false, false, false, 0},
    {FormatId::kMxInt8,     "mxint8",    "MXINT8Spec",     false,  true,  DType::kFloat32,  0,      0,     false, false, false, 0},
    {FormatId::kMxFp8E4M3,  "mxfp8e4m3", "MXFP8E4M3Spec",  false,  true,  DType::kFloat32,  0,      0,     false, false, false, 0},
    {FormatId::kMxFp8E5M2,  "mxfp8e5m2", "MXFP8E5M2Spec",  false,  true,  DType::kFloat32,  0,      0,     false, false, false, 0},
    {FormatId::kMxFp6E3M2,  "mxfp6e3m2", "MXFP6E3M2Spec",  false,  true,  DType::kFloat32,  0,      0,     false, false, false, 0},
    {FormatId::kMxFp6E2M3,  "mxfp6e2m3", "MXFP6E2M3Spec",  false,  true,  DType::kFloat32,  0,      0,     false, false, false, 0},
    {FormatId::kMxFp4E2M1,  "mxfp4e2m1", "MXFP4E2M1Spec",  false,  true,  DType::kFloat32,  0,      0,     false, false, false, 0},
    {FormatId::kFp8E4M3,    "fp8e4m3",   "FP8E4M3Spec",    true,   false, DType::kFloat8E4M3FN, -448, 448, false, true, true, 21},
    {FormatId::kFp8E5M2,    "fp8e5m2",   "FP8E5M2Spec",    true,   false, DType::kFloat8E5M2, -57344, 57344, false, true, true, 21},
    {FormatId::kInt4,       "int4",      "Int4Spec",       true,   false, DType::kInt4,     -8,     7,     false, true,  true,  21},
    {FormatId::kUInt4,      "uint4",     "UInt4Spec",      true,   false, DType::kUInt4,    0,      15,    false, false, true,  21},
};

// Quark's parameters for each block format: BFP16 as its BFP16 tutorial sets it (blocks of 8,
// round half to even), MX4/MX6/MX9 as its Microexponents tutorial (to_bfp_prime, blocks of 16,
// sub-blocks of 2 with a 1-bit shift, bit_width 11/13/16), the MX formats as OCP MX v1.0 (blocks
// of 32, E8M0 scales).
constexpr BfpSpec bfp_prime(int64_t bit_width) {
  return {.method = BfpMethod::kBfpPrime, .bit_width = bit_width, .block_size = 16,
          .rounding = BlockRounding::kHalfToEven, .sub_block_size = 2, .sub_block_shift_bits = 1};
}
constexpr BlockFormat mx_format(MxElement element) {
  return {.mx = true, .mx_spec = {.element = element, .block_size = 32, .rounding = BlockRounding::kHalfToEven}};
}
struct BlockRow {
  FormatId id;
  BlockFormat format;
};
constexpr BlockRow kBlockTable[] = {
    {FormatId::kBfp16, {.bfp = {.bit_width = 16, .block_size = 8, .rounding = BlockRounding::kHalfToEven}}},
    {FormatId::kMx4, {.bfp = bfp_prime(11)}},
    {FormatId::kMx6, {.bfp = bfp_prime(13)}},
    {FormatId::kMx9, {.bfp = bfp_prime(16)}},
    {FormatId::kMxInt8, mx_format(MxElement::kInt8)},
    {FormatId::kMxFp8E4M3, mx_format(MxElement::kFp8E4M3)},
    {FormatId::kMxFp8E5M2, mx_format(MxElement::kFp8E5M2)},
    {FormatId::kMxFp6E3M2, mx_format(MxElement::kFp6E3M2)},
    {FormatId::kMxFp6E2M3, mx_format(MxElement::kFp6E2M3)},
    {FormatId::kMxFp4E2M1, mx_format(MxElement::kFp4E2M1)},
};

constexpr bool table_is_indexed_by_format_id() {
  for (size_t i = 0; i < std::size(kFormatTable); ++i) {
    if (static_cast<size_t>(kFormatTable[i].id) != i) return false;
  }
  return std::size(kFormatTable) == static_cast<size_t>(FormatId::kUInt4) + 1;
}
static_assert(table_is_indexed_by_format_id(), "kFormatTable rows must follow the FormatId order");

constexpr bool block_rows_match() {
  size_t blocks = 0;
  for (const FormatTraits& row : kFormatTable) blocks += row.is_block;
  for (const BlockRow& row : kBlockTable) {
    if (!kFormatTable[static_cast<size_t>(row.id)].is_block) return false;
  }
  return blocks == std::size(kBlockTable);
}
static_assert(block_rows_match(), "every block format has exactly one kBlockTable row");

constexpr size_t kBuiltIn = std::size(kFormatTable);

struct AddedRow {
  AddedFormat format;
  FormatTraits traits;
};
std::deque<AddedRow>& added_formats() {
  static std::deque<AddedRow> rows;  // a deque: a row's names stay where they are
  return rows;
}

}  // namespace

const FormatTraits& format_traits(FormatId id) {
  const auto index = static_cast<size_t>(id);
  if (index < kBuiltIn) return kFormatTable[index];
  if (index - kBuiltIn < added_formats().size()) return added_formats()[index - kBuiltIn].traits;
  throw Error(ErrorKind::kInternal, "", "format " + std::to_string(index) + " was never added");
}

const AddedFormat* added_format(FormatId id) {
  const auto index = static_cast<size_t>(id);
  return index >= kBuiltIn && index - kBuiltIn < added_formats().size() ? &added_formats()[index - kBuiltIn].format : nullptr;
}

void check_added_format(const AddedFormat& format) {
  const std::string& origin = format.origin;
  if (format.name.empty() || format.spec_name.empty()) throw_bad_input("", origin + ": a format needs a name and a spec name");
  for (const std::string& name : {format.name, format.spec_name}) {
    if (format_from_name(name)) throw_bad_input("", origin + ": format " + name + " is already defined");
  }
  if (format.domain.empty() || format.op_type.empty()) {
    throw_bad_input("", origin + ": format " + format.name + " needs the domain and op type of its fake-quantization op");
  }
  if (static_cast<size_t>(format.speed_as) >= kBuiltIn) {
    throw_bad_input("", origin + ": format " + format.name + " must run as fast as a built-in format");
  }
}

FormatId add_format(AddedFormat format) {
  check_added_format(format);
  const size_t index = kBuiltIn + added_formats().size();
  if (index > std::numeric_limits<std::underlying_type_t<FormatId>>::max()) {
    throw_bad_input("", format.origin + ": too many formats added");
  }
  AddedRow& row = added_formats().emplace_back(AddedRow{.format = std::move(format), .traits = kFormatTable[0]});
  row.traits.id = static_cast<FormatId>(index);  // float32's row: no codes, no scale, no opset
  row.traits.name = row.format.name.c_str();
  row.traits.spec_name = row.format.spec_name.c_str();
  return row.traits.id;
}

bool has_integer_codes(FormatId id) {
  const FormatTraits& traits = format_traits(id);
  return traits.is_qdq && !dtype_traits(traits.storage).is_float;
}

const BlockFormat* block_format(FormatId id) {
  for (const BlockRow& row : kBlockTable) {
    if (row.id == id) return &row.format;
  }
  return nullptr;
}

std::string format_names(std::span<const FormatId> formats) {
  std::vector<std::string> names;
  for (FormatId id : formats) names.emplace_back(format_traits(id).name);
  return text::join(names);
}
std::vector<FormatTraits> all_formats() {
  std::vector<FormatTraits> out(std::begin(kFormatTable), std::end(kFormatTable));
  for (const AddedRow& row : added_formats()) out.push_back(row.traits);
  return out;
}

std::optional<FormatId> format_from_name(std::string_view name) {
  for (const FormatTraits& traits : kFormatTable) {
    if (name == traits.spec_name || name == traits.name) return traits.id;
  }
  for (const AddedRow& row : added_formats()) {
    if (name == row.traits.spec_name || name == row.traits.name) return row.traits.id;
  }
  return std::nullopt;
}

}  // namespace mixprec
