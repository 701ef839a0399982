// Device profiles: which formats a deployment target can run, whether its integer formats need
// power-of-two scales, and how fast each format class is relative to BF16 there. One row per
// device (see all_devices()); adding a device is one row plus its tests.
//
// Contract:
// - Names are lower-case and case-sensitive: "stx" (AMD Strix NPU), "ve2" (Versal AI Edge gen 2),
//   "cpu" (ONNX Runtime's CPU provider).
// - A profile gates formats: device_allows() is the gate, device_rejects() says why in one
//   line, naming the format and listing the device's formats ("FP16 is not available on stx
//   (formats: fp32, xint8, int8, uint8, bf16)").
// - fp32 ("leave the tensor in float") is allowed everywhere: a mixed-precision config always
//   keeps some layers in float. On the NPU rows it is emulated and slow, and priced so.
// - Throughputs are nominal MACs per cycle relative to BF16 (= 1.0), not measurements; they
//   rank configurations against each other, they do not predict latency.
#pragma once

#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "mixprec/formats.h"
#include "mixprec/macs.h"

namespace mixprec {

// Nominal MACs per cycle of a format class, relative to BF16 on the same device; 0 when the
// device has no kernels for the class at all.
struct RelativeThroughput {
  double int8 = 0;   // xint8, int8, uint8
  double int16 = 0;  // int16, uint16
  double bf16 = 0;
  double fp16 = 0;
  double fp32 = 0;
  double block = 0;  // bfp16, mx4/6/9, mxint8, mxfp8/6/4
  double fp8 = 0;    // fp8e4m3, fp8e5m2 (per-tensor Q/DQ)
  double int4 = 0;   // int4, uint4
};

struct DeviceProfile {
  const char* name;                 // "stx", "ve2", "cpu"
  const char* description;          // one line for help texts and reports
  std::span<const FormatId> formats;  // allowed formats, in FormatId order
  bool requires_power_of_two;       // integer formats must use 2^k scales here
  RelativeThroughput throughput;    // per format class, whether or not the class is allowed
  // What converting one element at an INT8 <-> float boundary costs, in BF16-MAC equivalents
  // (the cost model prices each boundary tensor at this times its element count).
  double boundary_cost;
};

// Every profile, in table order (stx, ve2, cpu).
std::span<const DeviceProfile> all_devices();
// The profile called `name`, nullptr when unknown.
const DeviceProfile* find_device(const std::string& name);
// The profile called `name`; throws Error kBadInput naming the known devices when unknown.
const DeviceProfile& device_profile(const std::string& name);
// Profile names in table order.
std::vector<std::string> device_names();

bool device_allows(const DeviceProfile& device, FormatId format);
// nullopt when `format` is allowed on `device`; otherwise the reason, e.g.
// "FP16 is not available on stx (formats: fp32, xint8, int8, uint8, bf16)".
std::optional<std::string> device_rejects(const DeviceProfile& device, FormatId format);
// The same for every format a config or preset uses: nullopt when all are allowed; otherwise
// one line naming each rejected format once, in FormatId order ("FP16, INT16 are not available
// on stx (formats: ...)").
std::optional<std::string> device_rejects(const DeviceProfile& device, std::span<const FormatId> formats);

// True when `format` must use power-of-two scales on `device`: the format's own rule (xint8) or
// the device's rule for integer formats. Callers pass it as ParamOptions::power_of_two and pick
// a PowerOfTwo calibration method.
bool device_needs_power_of_two(const DeviceProfile& device, FormatId format);

// The nominal throughput of `format`'s class on `device`, relative to BF16 (see
// RelativeThroughput). Defined for every format, allowed or not (0 when the device has no
// kernels for the class); gate with device_allows() first.
double relative_speed(const DeviceProfile& device, FormatId format);

// Relative compute time of a model on `device`: the sum over `macs.nodes` of
// macs / relative_speed(format of the node), in BF16-MAC equivalents. A node absent from
// `formats` counts as fp32 (left in float); entries of `formats` naming no node of `macs` are
// ignored. Throws Error kBadInput (with device_rejects()'s reason and the node) when a node of
// `macs` is assigned a format the device does not allow. Only as exact as `macs` is.
double estimated_time(const MacEstimate& macs, const std::map<std::string, FormatId>& formats,
                      const DeviceProfile& device);

}  // namespace mixprec
