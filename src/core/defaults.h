// Defaults of the pool's timing settings (and its other tunable rules), each defined once: the
// core, the coordinator, the worker, the CLI and the simulator all take them from here. Values from
// docs/design.md
// ("Liveness"): a heartbeat every second, a worker silent for 5 s is lost (HTCondor's startd
// ALIVE_INTERVAL is minutes; machines that are taken back at any moment need faster detection).
#pragma once

#include <cstddef>

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

// A worker on which a job failed this many times with no success of that job there is held off
// the job (spec `[retry] hold_off_after`; "Health" in core/scheduler.h). Three: as max_attempts,
// one bad machine never takes more than a task's worth of tries.
inline constexpr uint32_t kDefaultHoldOffAfter = 3;

// Stalled attempts (core/stall.h, Options::stall). The protocol carries no per-attempt progress
// (a Heartbeat is empty), so the signs of progress are a report and a checkpoint; an attempt
// with neither for longer than its job's own attempt times make plausible is moved, and its
// worker gets no new work for a while:
//  - kStallFactor: 10x the median time (assignment to report, frozen time excluded) of the job's
//    last kStallSample attempts that succeeded from the task's start. Task times of batch work
//    are long-tailed, but one 10x the median is rare (Dean and Barroso, "The Tail at Scale",
//    CACM 2013, see p99/p50 ratios of a few times); a worker 10x slower than the median machine
//    is also rare in an office pool, and a false move costs only a rerun (a late success of it
//    still commits).
//  - kStallFloor: never less than 10 s, so that jobs of very short tasks do not move attempts
//    that a busy machine, a process start or a cold cache delayed by seconds.
//  - kStallNoHistory: 1 h while no attempt of the job has succeeded yet (nothing to compare to).
//  - kStallLinkBytesPerMs: plus the job's input bytes at 1 MB/s (a slow Wi-Fi link), since a
//    worker that lacks the inputs fetches them before its task starts and the median may come
//    from workers that had them cached.
//  - kStallAvoid: its worker gets no new attempts for 10 min (as a machine fault keeps a task
//    off a worker, Options::machine_fault_avoid); the attempts it still runs keep their leases.
inline constexpr double kStallFactor = 10;
inline constexpr size_t kStallSample = 64;
inline constexpr Millis kStallFloor{10000};
inline constexpr Millis kStallNoHistory{3600000};
inline constexpr double kStallLinkBytesPerMs = 1000;
inline constexpr Millis kStallAvoid{600000};

}  // namespace idlepool::core
