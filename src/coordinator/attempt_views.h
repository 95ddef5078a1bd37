// Stored attempts onto the wire views that show them: a failed task (JobStatus.failed_tasks,
// ListFailedTasks) and an attempt of a timeline or a task's log (TimelineAttempt). Also the page
// sizes that keep a job's status, its failures and a task's log bounded whatever the job
// (issue 21: a status listing 20,000 failures with their log tails was 164 MB). Pure functions;
// thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "idlepool.pb.h"
#include "store/store.h"

namespace idlepool::coordinator {

// Failed tasks listed in a JobStatus (GetJob, the HTTP API's job); ListFailedTasks pages
// through the rest, by default kFailedTasksPage at a time and at most kFailedTasksPageMax.
constexpr uint32_t kFailedTasksInStatus = 20;
constexpr uint32_t kFailedTasksPage = 100;
constexpr uint32_t kFailedTasksPageMax = 1000;
// GetTaskLog: a task's newest attempts (each with a log tail of at most 4 KiB).
constexpr uint32_t kTaskLogAttempts = 20;
// A failed task's message in a page: why its attempt failed, cut to this many bytes.
constexpr size_t kFailureReasonBytes = 1024;

// The core's transfer and timing figures as their wire messages.
void ToProto(const core::Transfer& t, v1::Transfer* o);
void ToProto(const core::AttemptTiming& a, v1::AttemptTiming* t);

// An attempt's stored message without the log tail the coordinator appends to it (after a
// newline, see worker_input.cc), when it ends with that tail.
std::string WithoutLogTail(const std::string& message, const std::string& log_tail);

// The failed task of `a`, its last attempt: index, attempt, exit code, outcome and the reason
// (WithoutLogTail, cut to kFailureReasonBytes on a UTF-8 boundary); no log tail.
void FillFailedTask(const store::AttemptRecord& a, v1::FailedTask* out);

// One attempt of a timeline or task log, its log tail included unless `with_log_tail` is false;
// `next`: its task's next attempt (0: none).
void FillTimelineAttempt(const store::AttemptRecord& a, uint64_t next, bool with_log_tail,
                         v1::TimelineAttempt* t);

}  // namespace idlepool::coordinator
