// How long bytes take over a worker's link to the coordinator: the one rule the core's locality
// (scheduler_locality.cc) and the planner (plan/pool_model.h) both use, so they agree on every
// worker's figures.
//
// Pure, header-only, thread-safe. Units: bytes, bytes per second, seconds.
#pragma once

#include <cstdint>

namespace idlepool::core {

// Assumed when a worker's link is not measured: 100 Mbit/s (Fast Ethernet, ordinary office
// Wi-Fi). Workers measure their link when they join (WorkerMessage.link) and about hourly.
inline constexpr double kAssumedLinkBytesPerS = 12.5e6;

// The down rate (coordinator -> worker) to count with: `measured` when it is above zero, else
// `assumed`.
constexpr double LinkBytesPerS(double measured, double assumed = kAssumedLinkBytesPerS) {
  return measured > 0 ? measured : assumed;
}

// Seconds to move `bytes` to a worker whose measured down rate is `measured` (0: unmeasured).
constexpr double TransferSeconds(uint64_t bytes, double measured,
                                 double assumed = kAssumedLinkBytesPerS) {
  return static_cast<double>(bytes) / LinkBytesPerS(measured, assumed);
}

}  // namespace idlepool::core
