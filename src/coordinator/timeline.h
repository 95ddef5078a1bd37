// Pure pieces of what the coordinator shows of its pool (ListWorkers, GetJobTimeline), kept apart
// so they can be unit-tested: the one-word activity of a worker, and the arrow from an attempt to
// its task's next attempt. No I/O, no clocks; thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "store/store.h"

namespace idlepool::coordinator {

// What decides a worker's activity (v1::WorkerInfo.activity).
struct ActivityInput {
  std::string_view state;        // connected, disconnected, lost, left (WorkerInfo.state)
  std::string_view owner_state;  // run, suspend, vacate, unknown, or "" (OwnerState.state)
  std::string_view owner_cause;  // OwnerState.cause names (owner/owner_policy.h), or ""
  uint32_t attempts_running = 0;
};

// One word (proto/idlepool.proto, WorkerInfo.activity):
//   not connected                         -> its state: lost, disconnected or left
//   owner state suspend or vacate, by cause:
//     owner_input, owner_load             -> suspended
//     battery                             -> on_battery
//     temperature                         -> hot
//     lid, sleep                          -> lid_closed
//     window                              -> outside_window
//     none, empty or unknown              -> suspended (the owner policy stops work; a worker
//                                            stopping or an older worker gives no cause)
//   otherwise: attempts_running > 0       -> running, else idle
std::string WorkerActivity(const ActivityInput& in);

// For each attempt of `attempts` (one job's, any order), in the same order: the id of its task's
// next attempt, the lowest-id attempt of the same task with a higher id that started at or after
// this one ended (the store stamps both with the same batch time when a task is requeued at
// once), or 0 when there is none or this one has not ended. A backup started while this one still
// ran is not its next attempt.
std::vector<uint64_t> NextAttempts(const std::vector<store::AttemptRecord>& attempts);

}  // namespace idlepool::coordinator
