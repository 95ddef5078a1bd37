#include "owner/gpu_policy.h"

#include <algorithm>
#include <cstdio>

#include "owner/owner_policy.h"

namespace idlepool::owner {

GpuHold DecideGpu(const GpuReading& reading, const GpuPolicyConfig& config, const GpuHold& prev,
                  std::string* reason) {
  auto say = [&](std::string text) {
    if (reason != nullptr) *reason = std::move(text);
  };
  say("");
  if (config.owner_use != GpuOwnerUse::kIgnore && reading.owner_pids &&
      !reading.owner_pids->empty()) {
    std::string pids;
    for (size_t i = 0; i < reading.owner_pids->size() && i < 4; ++i) {
      pids += (i ? "," : "") + std::to_string((*reading.owner_pids)[i]);
    }
    say("owner processes on the GPU (" + pids + ")");
    return GpuHold{true, GpuCause::kOwnerUse};
  }
  if (reading.temperature_c) {
    const double t = *reading.temperature_c;
    const bool was_hot = prev.held && prev.cause == GpuCause::kTemperature;
    const double limit =
        was_hot ? config.max_temperature_c - kTemperatureHysteresisC : config.max_temperature_c;
    // NaN compares false: never holds.
    if (t > limit) {
      char text[96];
      std::snprintf(text, sizeof text, "GPU temperature %.0f C > %.0f C", t, limit);
      say(text);
      return GpuHold{true, GpuCause::kTemperature};
    }
  }
  return GpuHold{};
}

std::optional<std::vector<int64_t>> OwnerProcesses(
    const std::optional<std::vector<int64_t>>& device_pids, std::vector<int64_t> pool_pids) {
  if (!device_pids) return std::nullopt;
  std::sort(pool_pids.begin(), pool_pids.end());
  std::vector<int64_t> out;
  for (int64_t pid : *device_pids) {
    if (!std::binary_search(pool_pids.begin(), pool_pids.end(), pid)) out.push_back(pid);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

const char* ToString(GpuOwnerUse use) {
  switch (use) {
    case GpuOwnerUse::kSuspend:
      return "suspend";
    case GpuOwnerUse::kVacate:
      return "vacate";
    case GpuOwnerUse::kIgnore:
      return "ignore";
  }
  return "?";
}

const char* ToString(GpuCause cause) {
  switch (cause) {
    case GpuCause::kNone:
      return "none";
    case GpuCause::kOwnerUse:
      return "gpu_owner";
    case GpuCause::kTemperature:
      return "gpu_temperature";
  }
  return "?";
}

}  // namespace idlepool::owner
