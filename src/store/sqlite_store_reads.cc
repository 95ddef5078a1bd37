// SqliteStore's reads of jobs, tasks, attempts, outputs and checkpoints. See sqlite_store_impl.h.
#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "store/sqlite_store_impl.h"

namespace idlepool::store::internal {

absl::Status SqliteStore::ReadJobHeader(sqlite3_stmt* s, JobRecord& out) const {
  out.id = static_cast<core::JobId>(ColInt(s, 0));
  out.name = ColText(s, 1);
  out.spec.clear();
  out.sched.job = out.id;
  out.sched.task_count = static_cast<uint32_t>(ColInt(s, 2));
  out.sched.resources.cpus = static_cast<uint32_t>(ColInt(s, 3));
  out.sched.resources.gpus = static_cast<uint32_t>(ColInt(s, 4));
  out.sched.resources.memory_mb = static_cast<uint64_t>(ColInt(s, 5));
  out.sched.max_attempts = static_cast<uint32_t>(ColInt(s, 6));
  out.sched.timeout = core::Millis(ColInt(s, 7));
  if (absl::Status st = ParseCol(s, 8, ParseJobState, "job state", out.state); !st.ok()) {
    return st;
  }
  out.submitted_ms = ColInt(s, 9);
  out.finished_ms = ColInt(s, 10);
  out.profile_key = ColText(s, 11);
  out.input_bytes = static_cast<uint64_t>(ColInt(s, 12));
  out.input_files = static_cast<uint32_t>(ColInt(s, 13));
  out.sched.resources.gpu_memory_mb = static_cast<uint64_t>(ColInt(s, 14));
  out.sched.resources.gpu_api = ColText(s, 15);
  out.sched.resources.host_network = ColInt(s, 16) != 0;
  out.sched.user = ColText(s, 17);
  out.sched.priority = static_cast<int32_t>(ColInt(s, 18));
  out.service = ColService(s, 19);
  return absl::OkStatus();
}

absl::StatusOr<bool> SqliteStore::JobExists(core::JobId job) {
  Use u(st_.job_exists);
  if (int rc = sqlite3_bind_int64(u, 1, static_cast<int64_t>(job)); rc != SQLITE_OK) {
    return Err(rc, "bind");
  }
  int rc = sqlite3_step(u);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return Err(rc, "read job");
}

absl::StatusOr<JobRecord> SqliteStore::ReadOneJob(const StmtPtr& stmt, core::JobId job,
                                                  bool with_spec, absl::string_view what) {
  std::lock_guard lock(mu_);
  Use u(stmt);
  if (int rc = sqlite3_bind_int64(u, 1, static_cast<int64_t>(job)); rc != SQLITE_OK) {
    return Err(rc, absl::StrCat(what, ": bind"));
  }
  int rc = sqlite3_step(u);
  if (rc == SQLITE_DONE) return NotFound(job);
  if (rc != SQLITE_ROW) return Err(rc, absl::StrCat(what, ": read job"));
  JobRecord out;
  if (absl::Status s = ReadJobHeader(u, out); !s.ok()) return s;
  if (with_spec) out.spec = ColBlob(u, kJobHeaderColumns);
  return out;
}

absl::StatusOr<JobRecord> SqliteStore::GetJob(core::JobId job) {
  return ReadOneJob(st_.get_job, job, /*with_spec=*/true, "GetJob");
}

absl::StatusOr<JobRecord> SqliteStore::GetJobHeader(core::JobId job) {
  return ReadOneJob(st_.get_job_header, job, /*with_spec=*/false, "GetJobHeader");
}

absl::StatusOr<std::vector<JobRecord>> SqliteStore::ListJobs() {
  std::lock_guard lock(mu_);
  Use u(st_.list_jobs);
  std::vector<JobRecord> out;
  int rc;
  while ((rc = sqlite3_step(u)) == SQLITE_ROW) {
    JobRecord j;
    if (absl::Status s = ReadJobHeader(u, j); !s.ok()) return s;
    out.push_back(std::move(j));
  }
  if (rc != SQLITE_DONE) return Err(rc, "ListJobs: read jobs");
  return out;
}

absl::StatusOr<std::vector<TaskRecord>> SqliteStore::ListTasks(core::JobId job) {
  std::lock_guard lock(mu_);
  absl::StatusOr<bool> exists = JobExists(job);
  if (!exists.ok()) return exists.status();
  if (!*exists) return NotFound(job);
  Use u(st_.list_tasks);
  if (int rc = sqlite3_bind_int64(u, 1, static_cast<int64_t>(job)); rc != SQLITE_OK) {
    return Err(rc, "ListTasks: bind");
  }
  std::vector<TaskRecord> out;
  int rc;
  while ((rc = sqlite3_step(u)) == SQLITE_ROW) {
    TaskRecord t;
    t.task = {job, static_cast<uint32_t>(ColInt(u, 0))};
    if (absl::Status s = ParseCol(u, 1, ParseTaskState, "task state", t.state); !s.ok()) {
      return s;
    }
    t.failures = static_cast<uint32_t>(ColInt(u, 2));
    t.committed_attempt = static_cast<core::AttemptId>(ColInt(u, 3));
    out.push_back(t);
  }
  if (rc != SQLITE_DONE) return Err(rc, "ListTasks: read tasks");
  return out;
}

absl::StatusOr<std::vector<AttemptRecord>> SqliteStore::ListAttempts(core::JobId job) {
  std::lock_guard lock(mu_);
  absl::StatusOr<bool> exists = JobExists(job);
  if (!exists.ok()) return exists.status();
  if (!*exists) return NotFound(job);
  Use u(st_.list_attempts);
  if (int rc = sqlite3_bind_int64(u, 1, static_cast<int64_t>(job)); rc != SQLITE_OK) {
    return Err(rc, "ListAttempts: bind");
  }
  std::vector<AttemptRecord> out;
  int rc;
  while ((rc = sqlite3_step(u)) == SQLITE_ROW) {
    AttemptRecord a;
    if (absl::Status s = ReadAttempt(u, a); !s.ok()) return s;
    out.push_back(std::move(a));
  }
  if (rc != SQLITE_DONE) return Err(rc, "ListAttempts: read attempts");
  return out;
}

absl::StatusOr<std::vector<AttemptRecord>> SqliteStore::ListFailedTasks(const FailedTasksQuery& q) {
  std::lock_guard lock(mu_);
  absl::StatusOr<bool> exists = JobExists(q.job);
  if (!exists.ok()) return exists.status();
  if (!*exists) return NotFound(q.job);
  Use u(st_.failed_tasks);
  Binder b(u);
  b.Int(static_cast<int64_t>(q.job))
      .Text(TaskStateName(core::TaskState::kFailed))
      .Int(q.after_task ? int64_t{*q.after_task} + 1 : 0)
      .Int(static_cast<int64_t>(std::min<size_t>(q.limit, INT64_MAX)));
  if (b.rc() != SQLITE_OK) return Err(b.rc(), "ListFailedTasks: bind");
  return ReadAttempts(u, "ListFailedTasks");
}

absl::StatusOr<TaskAttempts> SqliteStore::ListTaskAttempts(core::TaskKey task, size_t limit) {
  std::lock_guard lock(mu_);
  TaskAttempts out;
  {
    Use u(st_.task_state);
    if (int rc = Binder(u).Int(static_cast<int64_t>(task.job)).Int(task.index).rc(); rc) {
      return Err(rc, "ListTaskAttempts: bind");
    }
    const int rc = sqlite3_step(u);
    if (rc == SQLITE_DONE) {
      return absl::NotFoundError(absl::StrCat("sqlite store ", path_, ": no ", TaskName(task)));
    }
    if (rc != SQLITE_ROW) return Err(rc, "ListTaskAttempts: read task");
    if (absl::Status s = ParseCol(u, 0, ParseTaskState, "task state", out.state); !s.ok()) {
      return s;
    }
  }
  {
    Use u(st_.count_task_attempts);
    if (int rc = Binder(u).Int(static_cast<int64_t>(task.job)).Int(task.index).rc(); rc) {
      return Err(rc, "ListTaskAttempts: bind");
    }
    const int rc = sqlite3_step(u);
    if (rc != SQLITE_ROW) return Err(rc, "ListTaskAttempts: count attempts");
    out.total = static_cast<uint64_t>(ColInt(u, 0));
  }
  Use u(st_.task_attempts);
  Binder b(u);
  b.Int(static_cast<int64_t>(task.job))
      .Int(task.index)
      .Int(static_cast<int64_t>(std::min<size_t>(limit, INT64_MAX)));
  if (b.rc() != SQLITE_OK) return Err(b.rc(), "ListTaskAttempts: bind");
  auto newest_first = ReadAttempts(u, "ListTaskAttempts");
  if (!newest_first.ok()) return newest_first.status();
  out.attempts.assign(std::make_move_iterator(newest_first->rbegin()),
                      std::make_move_iterator(newest_first->rend()));
  return out;
}

absl::StatusOr<std::vector<AttemptRecord>> SqliteStore::ReadAttempts(sqlite3_stmt* u,
                                                                     absl::string_view what) {
  std::vector<AttemptRecord> out;
  int rc;
  while ((rc = sqlite3_step(u)) == SQLITE_ROW) {
    AttemptRecord a;
    if (absl::Status s = ReadAttempt(u, a); !s.ok()) return s;
    out.push_back(std::move(a));
  }
  if (rc != SQLITE_DONE) return Err(rc, absl::StrCat(what, ": read attempts"));
  return out;
}

absl::Status SqliteStore::ReadAttempt(sqlite3_stmt* u, AttemptRecord& a) const {
  a.attempt = static_cast<core::AttemptId>(ColInt(u, 0));
  a.task = {static_cast<core::JobId>(ColInt(u, 21)), static_cast<uint32_t>(ColInt(u, 1))};
  a.worker = ColText(u, 2);
  if (absl::Status s = ParseCol(u, 3, ParseOutcome, "attempt outcome", a.outcome); !s.ok()) {
    return s;
  }
  a.exit_code = static_cast<int>(ColInt(u, 4));
  a.message = ColText(u, 5);
  a.started_ms = ColInt(u, 6);
  a.ended_ms = ColInt(u, 7);
  a.suspensions = static_cast<uint32_t>(ColInt(u, 8));
  a.lost_ms = ColInt(u, 9);
  a.transfer = ColTransfer(u, 10);
  a.timing = ColTiming(u, 17);
  a.gpus = ParseGpus(ColText(u, 22));
  if (sqlite3_column_count(u) > kAttemptLogTailColumn) {
    a.log_tail = ColText(u, kAttemptLogTailColumn);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<AttemptRecord>> SqliteStore::ListSucceededAttempts(
    const SucceededAttemptsQuery& q) {
  if (q.job == 0 && q.profile_key.empty()) return Invalid(NoProfileQueryMsg());
  std::lock_guard lock(mu_);
  if (q.job != 0) {
    absl::StatusOr<bool> exists = JobExists(q.job);
    if (!exists.ok()) return exists.status();
    if (!*exists) return NotFound(q.job);
  }
  Use u(q.job != 0 ? st_.succeeded_of_job : st_.succeeded_of_key);
  Binder b(u);
  if (q.job != 0) {
    b.Int(static_cast<int64_t>(q.job));
  } else {
    b.Text(q.profile_key);
  }
  b.Text(OutcomeName(core::AttemptOutcome::kSucceeded))
      .Int(static_cast<int64_t>(std::min<size_t>(q.limit, INT64_MAX)));
  if (b.rc() != SQLITE_OK) return Err(b.rc(), "ListSucceededAttempts: bind");
  std::vector<AttemptRecord> out;
  int rc;
  while ((rc = sqlite3_step(u)) == SQLITE_ROW) {
    AttemptRecord a;
    if (absl::Status s = ReadAttempt(u, a); !s.ok()) return s;
    out.push_back(std::move(a));
  }
  if (rc != SQLITE_DONE) return Err(rc, "ListSucceededAttempts: read attempts");
  return out;
}

absl::StatusOr<std::vector<TaskOutput>> SqliteStore::ListOutputs(core::JobId job) {
  std::lock_guard lock(mu_);
  absl::StatusOr<bool> exists = JobExists(job);
  if (!exists.ok()) return exists.status();
  if (!*exists) return NotFound(job);
  Use u(st_.list_outputs);
  if (int rc = sqlite3_bind_int64(u, 1, static_cast<int64_t>(job)); rc != SQLITE_OK) {
    return Err(rc, "ListOutputs: bind");
  }
  std::vector<TaskOutput> out;
  int rc;
  while ((rc = sqlite3_step(u)) == SQLITE_ROW) {
    TaskOutput o;
    o.index = static_cast<uint32_t>(ColInt(u, 0));
    o.file.path = ColText(u, 1);
    o.file.sha256 = ColText(u, 2);
    o.file.size = static_cast<uint64_t>(ColInt(u, 3));
    out.push_back(std::move(o));
  }
  if (rc != SQLITE_DONE) return Err(rc, "ListOutputs: read outputs");
  return out;
}

absl::StatusOr<std::vector<core::OutputFile>> SqliteStore::GetCheckpoint(core::TaskKey task) {
  std::lock_guard lock(mu_);
  absl::StatusOr<bool> exists = JobExists(task.job);
  if (!exists.ok()) return exists.status();
  if (!*exists) return NotFound(task.job);
  Use u(st_.get_checkpoint);
  Binder b(u);
  b.Int(static_cast<int64_t>(task.job)).Int(task.index);
  if (b.rc() != SQLITE_OK) return Err(b.rc(), "GetCheckpoint: bind");
  std::vector<core::OutputFile> out;
  int rc;
  while ((rc = sqlite3_step(u)) == SQLITE_ROW) {
    out.push_back({ColText(u, 0), ColText(u, 1), static_cast<uint64_t>(ColInt(u, 2))});
  }
  if (rc != SQLITE_DONE) return Err(rc, "GetCheckpoint: read");
  return out;
}

}  // namespace idlepool::store::internal
