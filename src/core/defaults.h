// Defaults of the pool's timing settings, each defined once: the core, the coordinator, the
// worker, the CLI and the simulator all take them from here. Values from docs/design.md
// ("Liveness"): a heartbeat every second, a worker silent for 5 s is lost (HTCondor's startd
// ALIVE_INTERVAL is minutes; machines that are taken back at any moment need faster detection).
#pragma once

#include "core/types.h"

namespace idlepool::core {

// Silence after which a worker is lost and its attempts go back to pending.
inline constexpr Millis kDefaultLeaseTimeout{5000};
// How often a worker heartbeats, unless told otherwise (the coordinator's Welcome.heartbeat_ms,
// or the worker's own --heartbeat-ms). Always at least three per lease.
inline constexpr Millis kDefaultHeartbeat{1000};

}  // namespace idlepool::core
