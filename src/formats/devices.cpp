// The device table: one row per deployment target.
#include "mixprec/devices.h"

#include <algorithm>
#include <cctype>
#include <iterator>

#include "common/text.h"
#include "mixprec/error.h"

namespace mixprec {
namespace {

// Allowed formats per device, in FormatId order. The NPUs compute in 8-bit integers and BF16
// (ve2 also FP16); fp32 is kept as "left in float". The CPU provider runs every format.
constexpr FormatId kStxFormats[] = {FormatId::kFloat32, FormatId::kXInt8, FormatId::kInt8, FormatId::kUInt8,
                                    FormatId::kBFloat16};
constexpr FormatId kVe2Formats[] = {FormatId::kFloat32, FormatId::kXInt8,    FormatId::kInt8,
                                    FormatId::kUInt8,   FormatId::kBFloat16, FormatId::kFloat16};
// The block formats are experimental on the NPUs (they reach users there as plugins); the CPU
// provider runs them through mixprec's com.amd.quark kernels.
constexpr FormatId kCpuFormats[] = {
    FormatId::kFloat32, FormatId::kXInt8,     FormatId::kInt8,      FormatId::kUInt8,     FormatId::kInt16,
    FormatId::kUInt16,  FormatId::kBFloat16,  FormatId::kFloat16,   FormatId::kBfp16,     FormatId::kMx4,
    FormatId::kMx6,     FormatId::kMx9,       FormatId::kMxInt8,    FormatId::kMxFp8E4M3, FormatId::kMxFp8E5M2,
    FormatId::kMxFp6E3M2, FormatId::kMxFp6E2M3, FormatId::kMxFp4E2M1, FormatId::kFp8E4M3,  FormatId::kFp8E5M2,
    FormatId::kInt4,    FormatId::kUInt4};

// Throughputs are nominal figures, not measurements:
// - NPU rows follow the AIE-ML tile: 256 int8 MACs/cycle vs 128 bf16 (2.0), int16 at half the
//   bf16 rate (0.5), fp16 at the bf16 rate where the hardware has it (ve2; 0 on stx, which has
//   no fp16 kernels), fp32 emulated with several bf16 passes (0.25).
// - The CPU row takes fp32 as its native rate: int8 kernels (VNNI-style dot products) about
//   twice it, int16 about fp32 (ONNX Runtime runs int16 QDQ through float kernels), bf16 and
//   fp16 emulated through fp32 with conversions (0.5), block formats as fp32 kernels behind a
//   block rounding node (0.8). FP8 and INT4 are measured (mixprec run, the recognizer at 48x320,
//   one thread, ONNX Runtime 1.29): FP32 23.2 ms; FP8E4M3 183 ms, its float8 Q/DQ kernels run
//   unfused (0.15); A8W4 48.9 ms, 42.3 ms with MatMulNBits (0.5). The NPUs run neither (0).
// Boundary cost, per element converted between INT8 and float, in BF16-MAC equivalents:
// - NPU rows, nominal: the AIE-ML vector unit converts ~32 elements per cycle where the array
//   does 128 bf16 MACs (4), and a boundary is also a round trip of the tensor through memory
//   between two kernels (another 4): 8.
// - CPU row, measured on ONNX Runtime 1.29's CPU provider (make bench, figure 12): a
//   QuantizeLinear + DequantizeLinear pair over a [1, 64, 80, 80] tensor against a 3x3 64->64
//   Conv on it, one thread: 3.5-5.4 (median of 20 interleaved runs, three runs on a loaded
//   2-core machine): 4.
const DeviceProfile kDeviceTable[] = {
    // name   description
    //        formats      pow2   throughput {int8, int16, bf16, fp16, fp32, block, fp8, int4}
    {"stx", "AMD Strix NPU (XDNA 2): BF16, INT8 and mixed BF16/INT8; INT8 needs power-of-two scales",
     kStxFormats, true, {2.0, 0.5, 1.0, 0.0, 0.25, 0.0, 0.0, 0.0}, 8.0},
    {"ve2", "AMD Versal AI Edge gen 2: BF16, FP16, INT8 and mixes; INT8 needs power-of-two scales",
     kVe2Formats, true, {2.0, 0.5, 1.0, 1.0, 0.25, 0.0, 0.0, 0.0}, 8.0},
    {"cpu", "ONNX Runtime CPU provider: every format (int8, int16, bf16, fp16, fp32, BFP16, MX*, FP8, INT4)",
     kCpuFormats, false, {2.0, 1.0, 0.5, 0.5, 1.0, 0.8, 0.15, 0.5}, 4.0},
};

// The format name as users write it in messages: "fp16" -> "FP16".
std::string upper_name(FormatId format) {
  std::string name = format_traits(format).name;
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return name;
}



}  // namespace

std::span<const DeviceProfile> all_devices() { return kDeviceTable; }

const DeviceProfile* find_device(const std::string& name) {
  for (const DeviceProfile& device : kDeviceTable) {
    if (name == device.name) return &device;
  }
  return nullptr;
}

const DeviceProfile& device_profile(const std::string& name) {
  if (const DeviceProfile* device = find_device(name)) return *device;
  throw_bad_input("", "unknown device '" + name + "' (known devices: " + text::join(device_names()) + ")");
}

std::vector<std::string> device_names() {
  std::vector<std::string> names;
  for (const DeviceProfile& device : kDeviceTable) names.emplace_back(device.name);
  return names;
}

bool device_allows(const DeviceProfile& device, FormatId format) {
  if (added_format(format)) return true;  // a plugin's: its manifest says where it runs
  return std::find(device.formats.begin(), device.formats.end(), format) != device.formats.end();
}

std::optional<std::string> device_rejects(const DeviceProfile& device, FormatId format) {
  return device_rejects(device, std::span<const FormatId>(&format, 1));
}

std::optional<std::string> device_rejects(const DeviceProfile& device, std::span<const FormatId> formats) {
  std::vector<std::string> rejected;
  for (const FormatTraits& traits : all_formats()) {
    const bool used = std::find(formats.begin(), formats.end(), traits.id) != formats.end();
    if (used && !device_allows(device, traits.id)) rejected.push_back(upper_name(traits.id));
  }
  if (rejected.empty()) return std::nullopt;
  const bool block = std::ranges::any_of(formats, [&](FormatId f) { return format_traits(f).is_block && !device_allows(device, f); });
  return text::join(rejected) + (rejected.size() == 1 ? " is" : " are") + " not available on " + device.name +
         " (formats: " + format_names(device.formats) + ")" +
         (block ? "; block formats are experimental on the NPUs and reach them as plugins" : "");
}

bool device_needs_power_of_two(const DeviceProfile& device, FormatId format) {
  const FormatTraits& traits = format_traits(format);
  return traits.power_of_two_scale || (traits.is_qdq && device.requires_power_of_two);
}

double relative_speed(const DeviceProfile& device, FormatId format) {
  // One column per format class; the switch is the FormatId -> class map, complete by -Wswitch.
  const RelativeThroughput& speed = device.throughput;
  if (const AddedFormat* added = added_format(format)) return relative_speed(device, added->speed_as);
  switch (format) {
    case FormatId::kXInt8:
    case FormatId::kInt8:
    case FormatId::kUInt8:
      return speed.int8;
    case FormatId::kInt16:
    case FormatId::kUInt16:
      return speed.int16;
    case FormatId::kBFloat16:
      return speed.bf16;
    case FormatId::kFloat16:
      return speed.fp16;
    case FormatId::kFloat32:
      return speed.fp32;
    case FormatId::kBfp16:
    case FormatId::kMx4:
    case FormatId::kMx6:
    case FormatId::kMx9:
    case FormatId::kMxInt8:
    case FormatId::kMxFp8E4M3:
    case FormatId::kMxFp8E5M2:
    case FormatId::kMxFp6E3M2:
    case FormatId::kMxFp6E2M3:
    case FormatId::kMxFp4E2M1:
      return speed.block;
    case FormatId::kFp8E4M3:
    case FormatId::kFp8E5M2:
      return speed.fp8;
    case FormatId::kInt4:
    case FormatId::kUInt4:
      return speed.int4;
  }
  throw Error(ErrorKind::kInternal, "", "relative_speed: unknown FormatId");
}

double estimated_time(const MacEstimate& macs, const std::map<std::string, FormatId>& formats,
                      const DeviceProfile& device) {
  double time = 0;
  for (const auto& [node, node_macs] : macs.nodes) {
    const auto it = formats.find(node);
    const FormatId format = it == formats.end() ? FormatId::kFloat32 : it->second;
    if (const std::optional<std::string> reason = device_rejects(device, format)) {
      throw_bad_input("", "node '" + node + "': " + *reason);
    }
    time += node_macs.macs / relative_speed(device, format);
  }
  return time;
}

}  // namespace mixprec
