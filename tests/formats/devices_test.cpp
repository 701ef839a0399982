// The device table: format gates, power-of-two rules, nominal speeds and the time estimate.
#include "mixprec/devices.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "mixprec/error.h"

namespace mixprec {
namespace {

constexpr FormatId kInt8Family[] = {FormatId::kXInt8, FormatId::kInt8, FormatId::kUInt8};

TEST(DeviceTable, NamesAndLookup) {
  EXPECT_EQ(device_names(), (std::vector<std::string>{"stx", "ve2", "cpu"}));
  for (const DeviceProfile& device : all_devices()) {
    EXPECT_EQ(find_device(device.name), &device);
    EXPECT_EQ(&device_profile(device.name), &device);
    EXPECT_STRNE(device.description, "");
  }
  EXPECT_EQ(find_device("npu"), nullptr);
  EXPECT_EQ(find_device("STX"), nullptr);  // case-sensitive
}

TEST(DeviceTable, UnknownDeviceErrorNamesTheKnownOnes) {
  try {
    device_profile("npu");
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::kBadInput);
    EXPECT_EQ(error.message(), "unknown device 'npu' (known devices: stx, ve2, cpu)");
  }
}

TEST(DeviceTable, RowsAreConsistent) {
  for (const DeviceProfile& device : all_devices()) {
    // Formats are listed once each, in FormatId order (messages list them in that order).
    EXPECT_TRUE(std::is_sorted(device.formats.begin(), device.formats.end())) << device.name;
    EXPECT_EQ(std::adjacent_find(device.formats.begin(), device.formats.end()), device.formats.end()) << device.name;
    // Every allowed format has kernels to run on, and fp32 is always allowed.
    for (FormatId format : device.formats) EXPECT_GT(relative_speed(device, format), 0.0) << device.name;
    EXPECT_TRUE(device_allows(device, FormatId::kFloat32)) << device.name;
    EXPECT_EQ(relative_speed(device, FormatId::kBFloat16), device.name == std::string("cpu") ? 0.5 : 1.0);
  }
}

TEST(DeviceGate, Fp16OnStxIsRejectedWithAClearMessage) {
  const DeviceProfile& stx = device_profile("stx");
  EXPECT_FALSE(device_allows(stx, FormatId::kFloat16));
  EXPECT_EQ(device_rejects(stx, FormatId::kFloat16),
            "FP16 is not available on stx (formats: fp32, xint8, int8, uint8, bf16)");
  EXPECT_EQ(device_rejects(stx, FormatId::kBFloat16), std::nullopt);
}

TEST(DeviceGate, BlockFormatsRunOnCpuAndAreExperimentalOnTheNpus) {
  const std::optional<std::string> why = device_rejects(device_profile("stx"), FormatId::kMx9);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("MX9 is not available on stx"), std::string::npos) << *why;
  EXPECT_NE(why->find("experimental on the NPUs"), std::string::npos) << *why;
  EXPECT_FALSE(device_allows(device_profile("ve2"), FormatId::kBfp16));
  EXPECT_EQ(device_rejects(device_profile("cpu"), FormatId::kBfp16), std::nullopt);
  EXPECT_EQ(relative_speed(device_profile("cpu"), FormatId::kMxInt8), 0.8);
}

TEST(DeviceGate, Fp16IsAllowedOnVe2AndCpu) {
  EXPECT_EQ(device_rejects(device_profile("ve2"), FormatId::kFloat16), std::nullopt);
  EXPECT_EQ(device_rejects(device_profile("cpu"), FormatId::kFloat16), std::nullopt);
}

TEST(DeviceGate, Int8FamilyIsAllowedEverywhere) {
  for (const DeviceProfile& device : all_devices()) {
    for (FormatId format : kInt8Family) {
      EXPECT_TRUE(device_allows(device, format)) << device.name << " " << format_traits(format).name;
    }
  }
}

TEST(DeviceGate, Int16OnlyOnCpuAndCpuRunsEverything) {
  for (FormatId format : {FormatId::kInt16, FormatId::kUInt16}) {
    EXPECT_FALSE(device_allows(device_profile("stx"), format));
    EXPECT_FALSE(device_allows(device_profile("ve2"), format));
  }
  EXPECT_EQ(device_rejects(device_profile("ve2"), FormatId::kInt16),
            "INT16 is not available on ve2 (formats: fp32, xint8, int8, uint8, bf16, fp16)");
  for (const FormatTraits& traits : all_formats()) EXPECT_TRUE(device_allows(device_profile("cpu"), traits.id));
}

TEST(DeviceGate, AConfigsFormatsAreCheckedTogether) {
  const DeviceProfile& stx = device_profile("stx");
  // Each rejected format named once, in FormatId order (int16 before fp16).
  const std::vector<FormatId> used = {FormatId::kFloat16, FormatId::kInt8, FormatId::kInt16, FormatId::kFloat16};
  EXPECT_EQ(device_rejects(stx, used), "INT16, FP16 are not available on stx (formats: fp32, xint8, int8, uint8, bf16)");
  const std::vector<FormatId> mixed = {FormatId::kBFloat16, FormatId::kXInt8, FormatId::kFloat32};
  EXPECT_EQ(device_rejects(stx, mixed), std::nullopt);
  EXPECT_EQ(device_rejects(stx, std::vector<FormatId>{}), std::nullopt);
}

TEST(DeviceGate, PowerOfTwoScalesOnTheNpus) {
  for (const char* npu : {"stx", "ve2"}) {
    const DeviceProfile& device = device_profile(npu);
    EXPECT_TRUE(device.requires_power_of_two);
    for (FormatId format : kInt8Family) EXPECT_TRUE(device_needs_power_of_two(device, format)) << npu;
    EXPECT_FALSE(device_needs_power_of_two(device, FormatId::kBFloat16));
    EXPECT_FALSE(device_needs_power_of_two(device, FormatId::kFloat32));
  }
  const DeviceProfile& cpu = device_profile("cpu");
  EXPECT_FALSE(cpu.requires_power_of_two);
  EXPECT_FALSE(device_needs_power_of_two(cpu, FormatId::kInt8));
  EXPECT_FALSE(device_needs_power_of_two(cpu, FormatId::kInt16));
  EXPECT_TRUE(device_needs_power_of_two(cpu, FormatId::kXInt8));  // the format's own rule
}

TEST(DeviceSpeed, NominalFiguresPerFormatClass) {
  const DeviceProfile& stx = device_profile("stx");
  EXPECT_EQ(relative_speed(stx, FormatId::kInt8), 2.0);
  EXPECT_EQ(relative_speed(stx, FormatId::kUInt8), 2.0);
  EXPECT_EQ(relative_speed(stx, FormatId::kXInt8), 2.0);
  EXPECT_EQ(relative_speed(stx, FormatId::kInt16), 0.5);
  EXPECT_EQ(relative_speed(stx, FormatId::kBFloat16), 1.0);
  EXPECT_EQ(relative_speed(stx, FormatId::kFloat16), 0.0);  // no fp16 kernels
  EXPECT_EQ(relative_speed(stx, FormatId::kFloat32), 0.25);

  const DeviceProfile& ve2 = device_profile("ve2");
  EXPECT_EQ(relative_speed(ve2, FormatId::kInt8), 2.0);
  EXPECT_EQ(relative_speed(ve2, FormatId::kFloat16), 1.0);
  EXPECT_EQ(relative_speed(ve2, FormatId::kFloat32), 0.25);

  const DeviceProfile& cpu = device_profile("cpu");
  EXPECT_EQ(relative_speed(cpu, FormatId::kInt8), 2.0);
  EXPECT_EQ(relative_speed(cpu, FormatId::kInt16), 1.0);
  EXPECT_EQ(relative_speed(cpu, FormatId::kUInt16), 1.0);
  EXPECT_EQ(relative_speed(cpu, FormatId::kBFloat16), 0.5);
  EXPECT_EQ(relative_speed(cpu, FormatId::kFloat16), 0.5);
  EXPECT_EQ(relative_speed(cpu, FormatId::kFloat32), 1.0);
}

MacEstimate three_nodes() {
  MacEstimate macs;
  macs.nodes = {{"conv", {.op_type = "Conv", .macs = 1000}},
                {"fc", {.op_type = "Gemm", .macs = 400}},
                {"head", {.op_type = "MatMul", .macs = 100}},
                {"relu", {.op_type = "Relu", .macs = 0}}};
  macs.total = 1500;
  return macs;
}

TEST(DeviceTime, SumsMacsOverRelativeSpeed) {
  const MacEstimate macs = three_nodes();
  // "head" and "relu" are absent: fp32. Sums are exact in double (small integers and halves).
  const std::map<std::string, FormatId> formats = {{"conv", FormatId::kInt8}, {"fc", FormatId::kBFloat16}};
  // stx: 1000/2 + 400/1 + 100/0.25 = 500 + 400 + 400.
  EXPECT_EQ(estimated_time(macs, formats, device_profile("stx")), 1300.0);
  // cpu: 1000/2 + 400/0.5 + 100/1 = 500 + 800 + 100.
  EXPECT_EQ(estimated_time(macs, formats, device_profile("cpu")), 1400.0);
  // All fp32 on cpu: the MAC total itself.
  EXPECT_EQ(estimated_time(macs, {}, device_profile("cpu")), 1500.0);
  // Formats of nodes the estimate does not know are ignored.
  EXPECT_EQ(estimated_time(macs, {{"ghost", FormatId::kFloat16}}, device_profile("cpu")), 1500.0);
}

TEST(DeviceTime, AFormatTheDeviceRejectsIsAnError) {
  const MacEstimate macs = three_nodes();
  try {
    estimated_time(macs, {{"fc", FormatId::kFloat16}}, device_profile("stx"));
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::kBadInput);
    EXPECT_EQ(error.message(), "node 'fc': FP16 is not available on stx (formats: fp32, xint8, int8, uint8, bf16)");
  }
  // ve2 has fp16: conv and head in fp32, 1000/0.25 + 400/1 + 100/0.25 = 4000 + 400 + 400.
  EXPECT_EQ(estimated_time(macs, {{"fc", FormatId::kFloat16}}, device_profile("ve2")), 4800.0);
}

}  // namespace
}  // namespace mixprec
