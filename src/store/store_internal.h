// Private helpers shared by the store backends (not part of the store's interface): the on-disk
// names of the core enums and the wording of validation errors, so that the SQLite and memory
// backends agree on codes and messages.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>
#include "absl/strings/string_view.h"

#include "absl/strings/str_cat.h"
#include "core/scheduler.h"
#include "core/types.h"
#include "store/store.h"

namespace idlepool::store::internal {

// Names are part of the SQLite file format: never change one, only add new ones.
inline const char* TaskStateName(core::TaskState s) {
  switch (s) {
    case core::TaskState::kPending: return "pending";
    case core::TaskState::kRunning: return "running";
    case core::TaskState::kSucceeded: return "succeeded";
    case core::TaskState::kFailed: return "failed";
    case core::TaskState::kCancelled: return "cancelled";
  }
  return "?";
}

inline const char* JobStateName(core::JobState s) {
  switch (s) {
    case core::JobState::kRunning: return "running";
    case core::JobState::kSucceeded: return "succeeded";
    case core::JobState::kFailed: return "failed";
    case core::JobState::kCancelled: return "cancelled";
  }
  return "?";
}

inline const char* OutcomeName(core::AttemptOutcome o) {
  switch (o) {
    case core::AttemptOutcome::kRunning: return "running";
    case core::AttemptOutcome::kSucceeded: return "succeeded";
    case core::AttemptOutcome::kFailed: return "failed";
    case core::AttemptOutcome::kTimedOut: return "timed_out";
    case core::AttemptOutcome::kPreempted: return "preempted";
    case core::AttemptOutcome::kLost: return "lost";
    case core::AttemptOutcome::kCancelled: return "cancelled";
    case core::AttemptOutcome::kMachineFault: return "machine_fault";
  }
  return "?";
}

inline std::optional<core::TaskState> ParseTaskState(absl::string_view s) {
  for (auto v : {core::TaskState::kPending, core::TaskState::kRunning,
                 core::TaskState::kSucceeded, core::TaskState::kFailed,
                 core::TaskState::kCancelled}) {
    if (s == TaskStateName(v)) return v;
  }
  return std::nullopt;
}

inline std::optional<core::JobState> ParseJobState(absl::string_view s) {
  for (auto v : {core::JobState::kRunning, core::JobState::kSucceeded, core::JobState::kFailed,
                 core::JobState::kCancelled}) {
    if (s == JobStateName(v)) return v;
  }
  return std::nullopt;
}

inline std::optional<core::AttemptOutcome> ParseOutcome(absl::string_view s) {
  for (auto v : {core::AttemptOutcome::kRunning, core::AttemptOutcome::kSucceeded,
                 core::AttemptOutcome::kFailed, core::AttemptOutcome::kTimedOut,
                 core::AttemptOutcome::kPreempted, core::AttemptOutcome::kLost,
                 core::AttemptOutcome::kCancelled, core::AttemptOutcome::kMachineFault}) {
    if (s == OutcomeName(v)) return v;
  }
  return std::nullopt;
}

inline bool IsTerminal(core::JobState s) { return s != core::JobState::kRunning; }

// An attempt's GPUs (AttemptCreated::gpus) as stored: ascending indices joined by ",", "" for
// none. Parsing skips anything that is not a decimal index (never fails on a damaged row).
inline std::string GpusText(const std::vector<uint32_t>& gpus) {
  std::string out;
  for (uint32_t g : gpus) {
    if (!out.empty()) out += ',';
    out += std::to_string(g);
  }
  return out;
}
inline std::vector<uint32_t> ParseGpus(absl::string_view s) {
  std::vector<uint32_t> out;
  uint64_t v = 0;
  bool digits = false, bad = false;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == ',') {
      if (digits && !bad) out.push_back(static_cast<uint32_t>(v));
      v = 0;
      digits = bad = false;
    } else if (s[i] >= '0' && s[i] <= '9' && v <= UINT32_MAX / 10) {
      v = v * 10 + static_cast<uint64_t>(s[i] - '0');
      digits = true;
      if (v > UINT32_MAX) bad = true;
    } else {
      bad = true;
    }
  }
  return out;
}

inline std::string TaskName(core::TaskKey t) {
  return absl::StrCat("job ", t.job, " task ", t.index);
}

// Adds one finished (or running) attempt to a job's counters, as the scheduler counts them.
inline void CountAttempt(core::AttemptOutcome o, core::JobCounters& c) {
  ++c.attempts;
  if (o == core::AttemptOutcome::kFailed || o == core::AttemptOutcome::kTimedOut) ++c.failures;
  if (o == core::AttemptOutcome::kPreempted) ++c.preemptions;
  if (o == core::AttemptOutcome::kLost) ++c.lost;
  if (o == core::AttemptOutcome::kMachineFault) ++c.machine_faults;
}
inline std::string ReviveNotLostMsg(core::AttemptId a) {
  return absl::StrCat("AttemptCreated (revived) for attempt ", a,
                      ", which is not a lost attempt of that task on that worker");
}
// A late success (AttemptEnded::late) replaces a kLost record, and nothing else.
inline std::string LateNotLostMsg(core::AttemptId a, core::AttemptOutcome o) {
  return absl::StrCat("AttemptEnded (late success) for attempt ", a, ", which ended ",
                      OutcomeName(o), ", not lost");
}
inline std::string LateNotSuccessMsg(core::AttemptId a) {
  return absl::StrCat("AttemptEnded for attempt ", a, " is late but not a success");
}
inline std::string CheckpointOfEndedMsg(core::AttemptId a) {
  return absl::StrCat("TaskCheckpointed by attempt ", a, ": the attempt is not running");
}
inline std::string SuspendedEndedMsg(core::AttemptId a) {
  return absl::StrCat("AttemptSuspended for attempt ", a, ": the attempt is not running");
}

// Validation messages (shared so both backends say the same thing).
inline std::string NoProfileQueryMsg() {
  return "ListSucceededAttempts: give a job or a non-empty profile key";
}
// Newest first: ListSucceededAttempts' order.
inline bool NewerAttempt(int64_t a_ended_ms, core::AttemptId a, int64_t b_ended_ms,
                         core::AttemptId b) {
  return a_ended_ms != b_ended_ms ? a_ended_ms > b_ended_ms : a > b;
}
inline std::string ZeroTaskCountMsg() { return "InsertJob: task_count must be > 0"; }

// Why PutWorkers refuses `w`, or "" when it is fine: a name of 1 to 256 bytes, no negative
// or non-finite figure.
inline std::string WorkerRecordProblem(const WorkerRecord& w) {
  if (w.worker.empty() || w.worker.size() > 256) {
    return "PutWorkers: worker name must be 1 to 256 bytes";
  }
  if (w.rtt_us < 0 || w.down_bytes_per_s < 0 || w.up_bytes_per_s < 0 || w.probe_bytes < 0 ||
      w.up_ms < 0 || w.down_ms < 0 || !(w.cpu_score >= 0 && w.cpu_score < 1e12)) {
    return absl::StrCat("PutWorkers: worker ", w.worker, ": negative or non-finite figure");
  }
  return "";
}
// Why PutUser refuses `u`, or "" when it is fine: a name of 1 to 64 bytes, a finite share > 0.
inline std::string UserRowProblem(const UserRow& u) {
  if (u.user.empty() || u.user.size() > 64) return "PutUser: user name must be 1 to 64 bytes";
  if (!(u.share > 0 && u.share < 1e300)) {
    return absl::StrCat("PutUser: user ", u.user, ": share must be a finite number > 0");
  }
  return "";
}
inline std::string WorkerEventProblem(const WorkerEvent& e) {
  if (e.worker.empty() || e.worker.size() > 256) {
    return "AppendWorkerEvents: worker name must be 1 to 256 bytes";
  }
  if (e.kind.empty()) return absl::StrCat("AppendWorkerEvents: worker ", e.worker, ": empty kind");
  return "";
}
inline std::string ZeroAttemptIdMsg(core::TaskKey t) {
  return absl::StrCat("AttemptCreated for ", TaskName(t), ": attempt id must be > 0");
}
inline std::string UnknownTaskMsg(const char* record, core::TaskKey t) {
  return absl::StrCat(record, " names unknown ", TaskName(t));
}
inline std::string UnknownJobMsg(const char* record, core::JobId job) {
  return absl::StrCat(record, " names unknown job ", job);
}
inline std::string DuplicateAttemptMsg(core::AttemptId a) {
  return absl::StrCat("AttemptCreated: attempt ", a, " already exists");
}
inline std::string UnknownAttemptMsg(core::AttemptId a) {
  return absl::StrCat("AttemptEnded names unknown attempt ", a);
}
inline std::string EndedRunningMsg(core::AttemptId a) {
  return absl::StrCat("AttemptEnded for attempt ", a, " has outcome running");
}
inline std::string AttemptMismatchMsg(core::AttemptId a, core::TaskKey stored_task,
                                      absl::string_view stored_worker, core::TaskKey task,
                                      absl::string_view worker) {
  return absl::StrCat("AttemptEnded for attempt ", a, " names ", TaskName(task), " on worker '",
                      worker, "' but it belongs to ", TaskName(stored_task), " on worker '",
                      stored_worker, "'");
}
inline std::string AlreadyEndedMsg(core::AttemptId a, core::AttemptOutcome o) {
  return absl::StrCat("AttemptEnded for attempt ", a, ", which already ended ", OutcomeName(o));
}
inline std::string DuplicateOutputMsg(core::TaskKey t, absl::string_view path) {
  return absl::StrCat("TaskChanged for ", TaskName(t), " lists output '", path, "' twice");
}

}  // namespace idlepool::store::internal
