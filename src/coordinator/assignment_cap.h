// The bound on one Assignment message (docs/limits.md). An assignment lists every input its
// attempt stages: the job's, the task's own, and the committed outputs of the jobs it runs
// `after`. A message over the session's caps (coordinator.cc kMaxMessageBytes, sessions.h
// kMaxOutboxBytes) would cut its worker's session, the attempt would be lost and placed again,
// and the next assignment cut again, without end. So an assignment over `bytes_max` is never
// sent: its attempt ends failed with the reason (not a machine fault: every worker would be
// refused it), and when the excess is the job's own (its inputs or its `after` outputs, the same
// for every task) the job is cancelled with that reason, once.
//
// Pure: sizes in, a reason out. Thread-safe. Units: bytes as serialized.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/types.h"

namespace idlepool::coordinator {

// Half of the session's message and outbox caps (128 MiB): one assignment always fits, beside
// the others of a burst.
inline constexpr uint64_t kMaxAssignmentBytes = uint64_t{64} << 20;

// What an assignment holds, for the reason.
struct AssignmentSize {
  core::TaskKey task;
  uint64_t bytes = 0;         // the whole message
  uint64_t inputs = 0;        // inputs listed
  uint64_t after_inputs = 0;  // of them, outputs of the jobs it runs after
  uint64_t after_bytes = 0;   // what those take of `bytes`
  uint64_t task_inputs = 0;   // of them, the task's own
};

struct AssignmentRefusal {
  std::string reason;
  bool whole_job = false;  // every task's assignment would be refused alike
};

// Why an assignment of `size` may not be sent under `bytes_max`, or nullopt when it may.
[[nodiscard]] std::optional<AssignmentRefusal> RefuseAssignment(const AssignmentSize& size,
                                                                uint64_t bytes_max);

// IDLEPOOL_TEST_ASSIGNMENT_BYTES_MAX (tests only, documented in docs/design.md) when it holds a
// positive number, else kMaxAssignmentBytes.
uint64_t AssignmentBytesMaxFromEnv();

}  // namespace idlepool::coordinator
