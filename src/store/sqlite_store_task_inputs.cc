// SqliteStore's per-task inputs (schema version 11): written with their job, read for
// assignments, restores, job status and blob collection. See sqlite_store_impl.h.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "store/sqlite_schema.h"
#include "store/sqlite_store_impl.h"

namespace idlepool::store::internal {

static_assert(kSchemaVersion >= kTaskInputsSchemaVersion, "the task_inputs tables exist");

const std::vector<std::pair<StmtPtr Statements::*, const char*>>&
SqliteStore::TaskInputStatements() {
  static const std::vector<std::pair<StmtPtr Statements::*, const char*>> kAll = {
      {&Statements::insert_task_input,
       "INSERT INTO task_inputs (job_id, idx, path, sha256, size, mode) VALUES (?, ?, ?, ?, ?, ?)"},
      {&Statements::insert_task_input_totals,
       "INSERT INTO job_task_inputs (job_id, files, bytes) VALUES (?, ?, ?)"},
      {&Statements::list_task_inputs,
       "SELECT idx, path, sha256, size, mode FROM task_inputs WHERE job_id = ? ORDER BY idx, path"},
      {&Statements::list_task_inputs_of_task,
       "SELECT idx, path, sha256, size, mode FROM task_inputs WHERE job_id = ? AND idx = ? "
       "ORDER BY path"},
      {&Statements::task_input_totals, "SELECT files, bytes FROM job_task_inputs WHERE job_id = ?"},
  };
  return kAll;
}

absl::Status SqliteStore::InsertTaskInputs(core::JobId id, const NewJob& job) {
  if (job.task_inputs.empty()) return absl::OkStatus();
  TaskInputTotals totals;
  for (const TaskInputRow& r : job.task_inputs) {
    if (r.index >= job.sched.task_count) {
      return Invalid(absl::StrCat("InsertJob: task input '", r.path, "' names task ", r.index,
                                  " of a job of ", job.sched.task_count, " tasks"));
    }
    Use u(st_.insert_task_input);
    Binder b(u);
    b.Int(static_cast<int64_t>(id))
        .Int(r.index)
        .Text(r.path)
        .Text(r.sha256)
        .Int(static_cast<int64_t>(r.size))
        .Int(r.mode);
    if (b.rc() != SQLITE_OK) return Err(b.rc(), "InsertJob: bind task input");
    const int rc = sqlite3_step(u);
    if (rc == SQLITE_CONSTRAINT_PRIMARYKEY) {
      return Invalid(absl::StrCat("InsertJob: task ", r.index, " stages '", r.path, "' twice"));
    }
    if (rc != SQLITE_DONE) return Err(rc, "InsertJob: insert task input");
    ++totals.files;
    totals.bytes += r.size;
  }
  Use u(st_.insert_task_input_totals);
  Binder b(u);
  b.Int(static_cast<int64_t>(id))
      .Int(static_cast<int64_t>(totals.files))
      .Int(static_cast<int64_t>(totals.bytes));
  if (b.rc() != SQLITE_OK) return Err(b.rc(), "InsertJob: bind task input totals");
  return Step(u, "InsertJob: insert task input totals");
}

absl::StatusOr<std::vector<TaskInputRow>> SqliteStore::ListTaskInputs(
    core::JobId job, std::optional<uint32_t> task) {
  std::lock_guard lock(mu_);
  absl::StatusOr<bool> exists = JobExists(job);
  if (!exists.ok()) return exists.status();
  if (!*exists) return NotFound(job);
  Use u(task ? st_.list_task_inputs_of_task : st_.list_task_inputs);
  Binder b(u);
  b.Int(static_cast<int64_t>(job));
  if (task) b.Int(*task);
  if (b.rc() != SQLITE_OK) return Err(b.rc(), "ListTaskInputs: bind");
  std::vector<TaskInputRow> out;
  int rc;
  while ((rc = sqlite3_step(u)) == SQLITE_ROW) {
    out.push_back(TaskInputRow{static_cast<uint32_t>(ColInt(u, 0)), ColText(u, 1), ColText(u, 2),
                               static_cast<uint64_t>(ColInt(u, 3)),
                               static_cast<uint32_t>(ColInt(u, 4))});
  }
  if (rc != SQLITE_DONE) return Err(rc, "ListTaskInputs: read");
  return out;
}

absl::StatusOr<TaskInputTotals> SqliteStore::GetTaskInputTotals(core::JobId job) {
  std::lock_guard lock(mu_);
  absl::StatusOr<bool> exists = JobExists(job);
  if (!exists.ok()) return exists.status();
  if (!*exists) return NotFound(job);
  Use u(st_.task_input_totals);
  if (int rc = sqlite3_bind_int64(u, 1, static_cast<int64_t>(job)); rc != SQLITE_OK) {
    return Err(rc, "GetTaskInputTotals: bind");
  }
  const int rc = sqlite3_step(u);
  if (rc == SQLITE_DONE) return TaskInputTotals{};
  if (rc != SQLITE_ROW) return Err(rc, "GetTaskInputTotals: read");
  return TaskInputTotals{static_cast<uint64_t>(ColInt(u, 0)), static_cast<uint64_t>(ColInt(u, 1))};
}

}  // namespace idlepool::store::internal
