#include "owner/gpu_policy.h"

#include <gtest/gtest.h>

#include <cmath>

#include "owner/owner_policy.h"

namespace idlepool::owner {
namespace {

GpuReading Hot(double t) { return GpuReading{t, std::vector<int64_t>{}}; }
GpuReading Owner(std::vector<int64_t> pids) { return GpuReading{40.0, std::move(pids)}; }
const GpuHold kFree{};
const GpuHold kHot{true, GpuCause::kTemperature};
const GpuHold kOwned{true, GpuCause::kOwnerUse};

TEST(GpuPolicy, DefaultsSuspendOwnerUseAt85C) {
  EXPECT_EQ(GpuPolicyConfig{}.owner_use, GpuOwnerUse::kSuspend);
  EXPECT_EQ(GpuPolicyConfig{}.max_temperature_c, 85);
  EXPECT_EQ(PolicyConfig{}.gpu.max_temperature_c, 85);
}

TEST(GpuPolicy, CoolAndUnusedDeviceIsFree) {
  EXPECT_EQ(DecideGpu(Hot(60), {}, kFree), kFree);
}

TEST(GpuPolicy, OwnerProcessesHoldTheDevice) {
  std::string reason;
  EXPECT_EQ(DecideGpu(Owner({4242}), {}, kFree, &reason), kOwned);
  EXPECT_NE(reason.find("4242"), std::string::npos) << reason;
  // Free again as soon as they are gone: no hysteresis for owner use.
  EXPECT_EQ(DecideGpu(Owner({}), {}, kOwned), kFree);
}

TEST(GpuPolicy, IgnoredOwnerUseNeverHolds) {
  GpuPolicyConfig c;
  c.owner_use = GpuOwnerUse::kIgnore;
  EXPECT_EQ(DecideGpu(Owner({4242}), c, kFree), kFree);
  c.owner_use = GpuOwnerUse::kVacate;
  EXPECT_EQ(DecideGpu(Owner({4242}), c, kFree), kOwned);
}

TEST(GpuPolicy, TemperatureHoldsWithHysteresis) {
  const GpuPolicyConfig c;  // 85 C
  EXPECT_EQ(DecideGpu(Hot(85), c, kFree), kFree);  // at the threshold: not over it
  EXPECT_EQ(DecideGpu(Hot(86), c, kFree), kHot);
  // Held until kTemperatureHysteresisC below the threshold.
  EXPECT_EQ(DecideGpu(Hot(84), c, kHot), kHot);
  EXPECT_EQ(DecideGpu(Hot(85 - kTemperatureHysteresisC + 0.5), c, kHot), kHot);
  EXPECT_EQ(DecideGpu(Hot(85 - kTemperatureHysteresisC), c, kHot), kFree);
  // The hysteresis belongs to a temperature hold only: a device held for owner use that is
  // at 84 C is free once the owner leaves.
  EXPECT_EQ(DecideGpu(Hot(84), c, kOwned), kFree);
}

TEST(GpuPolicy, OwnerUseWinsOverTemperature) {
  EXPECT_EQ(DecideGpu(GpuReading{95.0, std::vector<int64_t>{7}}, {}, kFree), kOwned);
  // The owner leaves but it is still hot: held for the temperature now.
  EXPECT_EQ(DecideGpu(GpuReading{95.0, std::vector<int64_t>{}}, {}, kOwned), kHot);
}

TEST(GpuPolicy, UnknownReadingsNeverHold) {
  EXPECT_EQ(DecideGpu(GpuReading{}, {}, kFree), kFree);
  EXPECT_EQ(DecideGpu(GpuReading{}, {}, kHot), kFree);
  EXPECT_EQ(DecideGpu(GpuReading{}, {}, kOwned), kFree);
  EXPECT_EQ(DecideGpu(GpuReading{std::nan(""), std::nullopt}, {}, kFree), kFree);
  EXPECT_EQ(DecideGpu(GpuReading{std::nan(""), std::nullopt}, {}, kHot), kFree);
}

TEST(GpuPolicy, OwnerProcessesArePidsMinusThePools) {
  EXPECT_EQ(OwnerProcesses(std::nullopt, {1, 2}), std::nullopt);
  EXPECT_EQ(OwnerProcesses(std::vector<int64_t>{}, {1}), std::vector<int64_t>{});
  // The pool's own task on the device is not the owner.
  EXPECT_EQ(OwnerProcesses(std::vector<int64_t>{300}, {300}), std::vector<int64_t>{});
  EXPECT_EQ(OwnerProcesses(std::vector<int64_t>{500, 300, 400, 500}, {400, 300, 1}),
            std::vector<int64_t>{500});
}

TEST(GpuPolicy, PerDeviceStateIsIndependent) {
  // The caller keeps one GpuHold per device: one device's hold never affects another's.
  std::vector<GpuHold> holds(2);
  const std::vector<GpuReading> readings = {Owner({9}), Owner({})};
  for (size_t i = 0; i < holds.size(); ++i) holds[i] = DecideGpu(readings[i], {}, holds[i]);
  EXPECT_EQ(holds[0], kOwned);
  EXPECT_EQ(holds[1], kFree);
}

TEST(GpuPolicy, WireNames) {
  EXPECT_STREQ(ToString(GpuCause::kOwnerUse), "gpu_owner");
  EXPECT_STREQ(ToString(GpuCause::kTemperature), "gpu_temperature");
  EXPECT_STREQ(ToString(GpuOwnerUse::kVacate), "vacate");
}

}  // namespace
}  // namespace idlepool::owner
