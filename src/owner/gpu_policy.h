// Owner policy for GPUs: per device, whether the pool may use it now or must hold its GPU work
// (suspend or vacate the attempts that own it, and take no new GPU work on it).
//
// DecideGpu() is pure: no clocks, no I/O, standard library only. The worker reads the devices'
// live readings (platform/gpu.h GpuInventory::ReadLive), works out which of each device's
// processes are not the pool's own (OwnerProcesses), and carries GpuHold per device between
// calls.
//
// Rules for one device, in priority order:
//   1. the owner's own processes on it (owner_use != kIgnore) -> hold, cause kOwnerUse
//   2. temperature_c > max_temperature_c                       -> hold, cause kTemperature
//   3. otherwise                                               -> free
// Hysteresis: a device held for its temperature stays held until it is
// kTemperatureHysteresisC (owner_policy.h, the rule the CPU temperature uses) below the
// threshold. A device held for owner use is free as soon as the owner's processes are gone
// (BOINC resumes GPU work when the owner's GPU use ends).
// Unknown readings (nullopt: the API gives none, the call failed) never hold a device.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace idlepool::owner {

// What to do with the GPU work on a device the owner uses.
enum class GpuOwnerUse {
  kSuspend,  // freeze the attempts that own it until the owner's processes are gone
  kVacate,   // hand those attempts back (their devices go to work elsewhere)
  kIgnore,   // the owner's GPU use never stops work (a machine whose owner shares the GPU)
};

struct GpuPolicyConfig {
  // BOINC suspends GPU work while the owner uses the computer; the pool suspends it while the
  // owner uses that GPU.
  GpuOwnerUse owner_use = GpuOwnerUse::kSuspend;
  // Hold a device hotter than this. NVIDIA desktop GPUs start to slow down (their "slowdown"
  // temperature in nvidia-smi -q) at about 90-95 C; 85 C keeps the pool's work clear of that,
  // as the CPU threshold (90 C) keeps clear of a CPU's ~100 C TjMax.
  double max_temperature_c = 85;
};

enum class GpuCause { kNone, kOwnerUse, kTemperature };

// One device's state, carried by the caller between calls (initially free).
struct GpuHold {
  bool held = false;
  GpuCause cause = GpuCause::kNone;  // kNone unless held
  bool operator==(const GpuHold&) const = default;
};

// One device's readings, as DecideGpu needs them.
struct GpuReading {
  std::optional<double> temperature_c;
  // Processes on it that are not the pool's (OwnerProcesses); nullopt: unknown.
  std::optional<std::vector<int64_t>> owner_pids;
};

// The next state of one device. `reason` (may be null) gets a short human-readable reason for
// a hold ("owner processes 4242 on GPU", "GPU temperature 91 C > 85 C").
GpuHold DecideGpu(const GpuReading& reading, const GpuPolicyConfig& config, const GpuHold& prev,
                  std::string* reason = nullptr);

// The device's processes that are not the pool's: `device_pids` minus `pool_pids` (both any
// order). nullopt when `device_pids` is nullopt (unknown).
std::optional<std::vector<int64_t>> OwnerProcesses(
    const std::optional<std::vector<int64_t>>& device_pids, std::vector<int64_t> pool_pids);

// Wire names: "suspend", "vacate", "ignore"; causes "none", "gpu_owner", "gpu_temperature".
const char* ToString(GpuOwnerUse use);
const char* ToString(GpuCause cause);

}  // namespace idlepool::owner
