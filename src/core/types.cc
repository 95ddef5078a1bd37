#include "core/types.h"

namespace idlepool::core {

const char* ToString(TaskState s) {
  switch (s) {
    case TaskState::kPending: return "pending";
    case TaskState::kRunning: return "running";
    case TaskState::kSucceeded: return "succeeded";
    case TaskState::kFailed: return "failed";
    case TaskState::kCancelled: return "cancelled";
  }
  return "unknown";
}

const char* ToString(JobState s) {
  switch (s) {
    case JobState::kRunning: return "running";
    case JobState::kSucceeded: return "succeeded";
    case JobState::kFailed: return "failed";
    case JobState::kCancelled: return "cancelled";
  }
  return "unknown";
}

const char* ToString(AttemptOutcome o) {
  switch (o) {
    case AttemptOutcome::kRunning: return "running";
    case AttemptOutcome::kSucceeded: return "succeeded";
    case AttemptOutcome::kFailed: return "failed";
    case AttemptOutcome::kTimedOut: return "timed_out";
    case AttemptOutcome::kPreempted: return "preempted";
    case AttemptOutcome::kLost: return "lost";
    case AttemptOutcome::kCancelled: return "cancelled";
    case AttemptOutcome::kMachineFault: return "machine_fault";
  }
  return "unknown";
}

}  // namespace idlepool::core
