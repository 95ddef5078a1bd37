// Defaults of the pool's timing settings (and its other tunable rules), each defined once: the
// core, the coordinator, the worker, the CLI and the simulator all take them from here. Values from
// docs/design.md
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

// A task whose worker died while running it, on this many different workers in a row, fails
// (Options::max_workers_lost_in_a_row): it most likely crashes its worker (a placeholder bomb, a
// task that kills its parent), and would otherwise take down every worker that takes it. Three:
// two unrelated crashes of the machines that ran one task, back to back, are already rare.
inline constexpr uint32_t kDefaultMaxWorkersLostInARow = 3;

}  // namespace idlepool::core
