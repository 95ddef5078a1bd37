// The SQLite store: one database file in WAL mode with synchronous=FULL. Opening, migrations,
// the writes and Load; the class is in sqlite_store_impl.h, its reads in sqlite_store_reads.cc
// and sqlite_store_workers.cc.
//
// File format and migrations: store/sqlite_schema.h.

#include <sqlite3.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "store/sqlite_job_rows.h"
#include "store/sqlite_schema.h"
#include "store/sqlite_store_impl.h"
#include "store/sqlite_util.h"
#include "store/store.h"
#include "store/store_internal.h"

namespace idlepool::store::internal {
namespace {

constexpr int32_t kApplicationId = 0x49504f4c;  // "IPOL"
constexpr int kBusyTimeoutMs = 10000;

// The workers table (schema version 5).
#define IDLEPOOL_WORKER_COLUMNS                                                                \
  "worker, hostname, link_measured_ms, rtt_us, down_bytes_per_s, up_bytes_per_s, probe_bytes, " \
  "cpu_score, cores, first_seen_ms, up_ms, down_ms, up_periods, down_periods, updated_ms"
constexpr const char* kPutWorkerSql =
    "INSERT OR REPLACE INTO workers (" IDLEPOOL_WORKER_COLUMNS
    ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
constexpr const char* kListWorkersSql =
    "SELECT " IDLEPOOL_WORKER_COLUMNS " FROM workers ORDER BY worker";
constexpr const char* kGetWorkerSql =
    "SELECT " IDLEPOOL_WORKER_COLUMNS " FROM workers WHERE worker = ?";
#undef IDLEPOOL_WORKER_COLUMNS
// The worker_events table (schema version 7).
constexpr const char* kAppendWorkerEventSql =
    "INSERT INTO worker_events (worker, at_ms, kind, state, cause, reason) "
    "VALUES (?, ?, ?, ?, ?, ?)";
// One worker's events in a time range, newest first (the limit keeps the newest).
constexpr const char* kListWorkerEventsSql =
    "SELECT id, worker, at_ms, kind, state, cause, reason FROM worker_events "
    "WHERE worker = ? AND at_ms >= ? AND at_ms <= ? ORDER BY at_ms DESC, id DESC LIMIT ?";
constexpr const char* kTrimEventsByTimeSql = "DELETE FROM worker_events WHERE at_ms < ?";
// The row `offset` places below the newest, and every older one (none when there are fewer).
constexpr const char* kTrimEventsByRowsSql =
    "DELETE FROM worker_events WHERE id <= "
    "(SELECT id FROM worker_events ORDER BY id DESC LIMIT 1 OFFSET ?)";

// Every column of a jobs row except spec, in the order ReadJobHeader reads them. Header reads
// (GetJobHeader, ListJobs) select only these, so they never copy the spec blob; spec is the
// table's last column, so they never walk its overflow pages either.
// The profile columns come from job_profiles (a job stored before version 4 has no row there).
#define IDLEPOOL_JOB_HEADER_COLUMNS                                                         \
  "j.id, j.name, j.task_count, j.cpus, j.gpus, j.memory_mb, j.max_attempts, j.timeout_ms, " \
  "j.state, j.submitted_ms, j.finished_ms, coalesce(p.profile_key, ''), "                   \
  "coalesce(p.input_bytes, 0), coalesce(p.input_files, 0), coalesce(g.gpu_memory_mb, 0), "  \
  "coalesce(g.gpu_api, ''), coalesce(x.host_network, 0), " IDLEPOOL_JOB_OWNER_COLUMNS       \
  ", " IDLEPOOL_JOB_SERVICE_COLUMNS
#define IDLEPOOL_JOB_HEADER_FROM                                                          \
  " FROM jobs j LEFT JOIN job_profiles p ON p.job_id = j.id LEFT JOIN job_gpus g "        \
  "ON g.job_id = j.id LEFT JOIN job_sandbox x ON x.job_id = j.id" IDLEPOOL_JOB_OWNER_JOIN \
      IDLEPOOL_JOB_SERVICE_JOIN
constexpr const char* kGetJobSql = "SELECT " IDLEPOOL_JOB_HEADER_COLUMNS
                                   ", j.spec" IDLEPOOL_JOB_HEADER_FROM "WHERE j.id = ?";
constexpr const char* kGetJobHeaderSql =
    "SELECT " IDLEPOOL_JOB_HEADER_COLUMNS IDLEPOOL_JOB_HEADER_FROM "WHERE j.id = ?";
constexpr const char* kListJobsSql =
    "SELECT " IDLEPOOL_JOB_HEADER_COLUMNS IDLEPOOL_JOB_HEADER_FROM "ORDER BY j.id";
#undef IDLEPOOL_JOB_HEADER_FROM
#undef IDLEPOOL_JOB_HEADER_COLUMNS

// Every column of an attempts row that an AttemptRecord holds except log_tail, in the order
// ReadAttempt reads them; ListAttempts adds log_tail as column kAttemptLogTailColumn.
#define IDLEPOOL_ATTEMPT_COLUMNS                                                               \
  "a.id, a.idx, a.worker, a.outcome, a.exit_code, a.message, a.started_ms, a.ended_ms, "       \
  "a.suspensions, a.lost_ms, a.input_bytes, a.cached_bytes, a.coordinator_bytes, "             \
  "a.peer_bytes, a.output_bytes, a.cache_hits, a.cache_misses, a.stage_ms, a.run_ms, "        \
  "a.upload_ms, a.resumed, a.job_id, a.gpus"
constexpr const char* kListAttemptsSql =
    "SELECT " IDLEPOOL_ATTEMPT_COLUMNS ", a.log_tail FROM attempts a WHERE a.job_id = ? "
    "ORDER BY a.id";
// The last attempt of each failed task from task index ? on (ListFailedTasks).
constexpr const char* kFailedTasksSql =
    "SELECT " IDLEPOOL_ATTEMPT_COLUMNS
    ", a.log_tail FROM tasks t JOIN attempts a ON a.id = "
    "(SELECT max(id) FROM attempts WHERE job_id = t.job_id AND idx = t.idx) "
    "WHERE t.job_id = ? AND t.state = ? AND t.idx >= ? ORDER BY t.idx LIMIT ?";
// The newest attempts of one task, newest first (ListTaskAttempts reverses them).
constexpr const char* kTaskAttemptsSql =
    "SELECT " IDLEPOOL_ATTEMPT_COLUMNS
    ", a.log_tail FROM attempts a "
    "WHERE a.job_id = ? AND a.idx = ? ORDER BY a.id DESC LIMIT ?";
constexpr const char* kSucceededOfJobSql =
    "SELECT " IDLEPOOL_ATTEMPT_COLUMNS " FROM attempts a WHERE a.job_id = ? AND a.outcome = ? "
    "ORDER BY a.ended_ms DESC, a.id DESC LIMIT ?";
constexpr const char* kSucceededOfKeySql =
    "SELECT " IDLEPOOL_ATTEMPT_COLUMNS " FROM job_profiles p JOIN attempts a "
    "ON a.job_id = p.job_id WHERE p.profile_key = ? AND a.outcome = ? "
    "ORDER BY a.ended_ms DESC, a.id DESC LIMIT ?";
#undef IDLEPOOL_ATTEMPT_COLUMNS

}  // namespace

absl::Status SqliteStore::Prepare(const char* sql, StmtPtr& out) {
  sqlite3_stmt* s = nullptr;
  int rc = sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(s);
    return Err(rc, absl::StrCat("prepare \"", sql, "\""));
  }
  out.reset(s);
  return absl::OkStatus();
}

absl::Status SqliteStore::Exec(const char* sql, absl::string_view what) {
  char* errmsg = nullptr;
  int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &errmsg);
  sqlite3_free(errmsg);  // sqlite3_errmsg still has it
  if (rc != SQLITE_OK) return Err(rc, what);
  return absl::OkStatus();
}

absl::StatusOr<int64_t> SqliteStore::QueryInt(const char* sql, absl::string_view what) {
  StmtPtr s;
  if (absl::Status st = Prepare(sql, s); !st.ok()) return st;
  int rc = sqlite3_step(s.get());
  if (rc != SQLITE_ROW) return Err(rc, what);
  return ColInt(s.get(), 0);
}

absl::Status SqliteStore::Step(sqlite3_stmt* s, absl::string_view what) {
  int rc = sqlite3_step(s);
  if (rc != SQLITE_DONE) return Err(rc, what);
  return absl::OkStatus();
}

absl::Status SqliteStore::Commit() {
  Use u(st_.commit);
  int rc = sqlite3_step(u);
  if (rc == SQLITE_DONE) return absl::OkStatus();
  absl::Status err = Err(rc, "commit");
  if (!sqlite3_get_autocommit(db_)) Rollback();
  return err;
}

void SqliteStore::Rollback() {
  if (sqlite3_get_autocommit(db_)) return;  // sqlite already rolled back (e.g. after I/O error)
  Use u(st_.rollback);
  sqlite3_step(u);
}

absl::Status SqliteStore::Open() {
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
  int rc = sqlite3_open_v2(path_.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    absl::Status err = Err(rc, "open");
    sqlite3_close_v2(db_);
    db_ = nullptr;
    return err;
  }
  sqlite3_extended_result_codes(db_, 1);
  sqlite3_busy_timeout(db_, kBusyTimeoutMs);
  if (absl::Status s = Exec("PRAGMA foreign_keys = ON", "enable foreign keys"); !s.ok()) return s;

  // The first statements that read the file: a file that is not a database fails here.
  absl::StatusOr<int64_t> objects = QueryInt("SELECT count(*) FROM sqlite_master", "read schema");
  if (!objects.ok()) {
    if (objects.status().code() == absl::StatusCode::kDataLoss) {
      return DataLoss(absl::StrCat("the file is not a SQLite database or is corrupt (",
                                   objects.status().message(), ")"));
    }
    return objects.status();
  }
  absl::StatusOr<int64_t> version = QueryInt("PRAGMA user_version", "read schema version");
  if (!version.ok()) return version.status();
  absl::StatusOr<int64_t> app_id = QueryInt("PRAGMA application_id", "read application id");
  if (!app_id.ok()) return app_id.status();

  const bool fresh = *objects == 0 && *version == 0 && *app_id == 0;
  if (!fresh) {
    if (*app_id != kApplicationId) {
      return DataLoss("the file is a SQLite database but not an idlepool store");
    }
    if (*version > kSchemaVersion) {
      return DataLoss(absl::StrCat("schema version ", *version,
                                   " is newer than this idlepool supports (", kSchemaVersion,
                                   "); open it with a newer idlepool"));
    }
    if (*version < 1) return DataLoss(absl::StrCat("bad schema version ", *version));
  }

  {
    StmtPtr s;
    if (absl::Status st = Prepare("PRAGMA journal_mode = WAL", s); !st.ok()) return st;
    rc = sqlite3_step(s.get());
    if (rc != SQLITE_ROW) return Err(rc, "set WAL mode");
    std::string mode = ColText(s.get(), 0);
    if (mode != "wal") {
      return absl::UnavailableError(absl::StrCat("sqlite store ", path_,
                                                 ": cannot use WAL mode (journal_mode is '",
                                                 mode, "')"));
    }
  }
  if (absl::Status s = Exec("PRAGMA synchronous = FULL", "set synchronous"); !s.ok()) return s;

  if (fresh) {
    std::string ddl = absl::StrCat("BEGIN IMMEDIATE;", kSchemaV1);
    for (const Migration& step : kMigrations) absl::StrAppend(&ddl, step.ddl);
    absl::StrAppend(&ddl, "PRAGMA application_id = ", kApplicationId, ";",
                    "PRAGMA user_version = ", kSchemaVersion, ";", "COMMIT;");
    if (absl::Status s = Exec(ddl.c_str(), "create schema"); !s.ok()) {
      if (!sqlite3_get_autocommit(db_)) Exec("ROLLBACK", "rollback").IgnoreError();
      return s;
    }
  }
  // Each step in its own transaction, from the file's version up: a crash between two steps
  // leaves a file of the earlier version, migrated again at the next open.
  for (const Migration& step : kMigrations) {
    if (fresh || *version >= step.to) continue;
    std::string ddl = absl::StrCat("BEGIN IMMEDIATE;", step.ddl, "PRAGMA user_version = ",
                                   step.to, ";", "COMMIT;");
    if (absl::Status s = Exec(ddl.c_str(), absl::StrCat("migrate schema ", step.to - 1, " to ",
                                                        step.to));
        !s.ok()) {
      if (!sqlite3_get_autocommit(db_)) Exec("ROLLBACK", "rollback").IgnoreError();
      return s;
    }
  }
  return PrepareAll();
}

absl::Status SqliteStore::PrepareAll() {
  const std::pair<StmtPtr*, const char*> all[] = {
      {&st_.begin_immediate, "BEGIN IMMEDIATE"},
      {&st_.begin_deferred, "BEGIN"},
      {&st_.commit, "COMMIT"},
      {&st_.rollback, "ROLLBACK"},
      {&st_.insert_job,
       "INSERT INTO jobs (name, spec, task_count, cpus, gpus, memory_mb, max_attempts, "
       "timeout_ms, state, submitted_ms, finished_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)"},
      {&st_.insert_task,
       "INSERT INTO tasks (job_id, idx, state, failures, committed_attempt) "
       "VALUES (?, ?, ?, 0, 0)"},
      {&st_.insert_attempt,
       "INSERT INTO attempts (id, job_id, idx, worker, outcome, exit_code, message, started_ms, "
       "ended_ms, gpus) VALUES (?, ?, ?, ?, ?, 0, '', ?, 0, ?)"},
      {&st_.end_attempt,
       "UPDATE attempts SET outcome = ?, exit_code = ?, message = ?, ended_ms = ?, lost_ms = ?, "
       "input_bytes = ?, cached_bytes = ?, coordinator_bytes = ?, peer_bytes = ?, "
       "output_bytes = ?, cache_hits = ?, cache_misses = ?, stage_ms = ?, run_ms = ?, "
       "upload_ms = ?, resumed = ?, log_tail = ? "
       "WHERE id = ? AND job_id = ? AND idx = ? AND worker = ? AND outcome = ?"},
      {&st_.suspend_attempt,
       "UPDATE attempts SET suspensions = suspensions + 1 "
       "WHERE id = ? AND job_id = ? AND idx = ? AND outcome = ?"},
      {&st_.delete_checkpoint, "DELETE FROM checkpoints WHERE job_id = ? AND idx = ?"},
      {&st_.insert_checkpoint,
       "INSERT INTO checkpoints (job_id, idx, path, sha256, size, attempt) "
       "VALUES (?, ?, ?, ?, ?, ?)"},
      {&st_.get_checkpoint,
       "SELECT path, sha256, size FROM checkpoints WHERE job_id = ? AND idx = ? ORDER BY path"},
      {&st_.load_sums,
       "SELECT job_id, sum(suspensions), sum(lost_ms), sum(input_bytes), sum(cached_bytes), "
       "sum(coordinator_bytes), sum(peer_bytes), sum(output_bytes), sum(cache_hits), "
       "sum(cache_misses) FROM attempts GROUP BY job_id"},
      {&st_.revive_attempt,
       "UPDATE attempts SET outcome = ?, ended_ms = 0, lost_ms = 0, message = '', log_tail = '' "
       "WHERE id = ? AND job_id = ? AND idx = ? AND worker = ? AND outcome = ?"},
      {&st_.load_lost_attempts,
       "SELECT a.id, a.job_id, a.idx, a.worker, a.lost_ms, a.gpus FROM attempts a JOIN jobs j "
       "ON j.id = a.job_id WHERE a.outcome = ? AND j.state = ? ORDER BY a.id"},
      {&st_.get_attempt, "SELECT job_id, idx, worker, outcome FROM attempts WHERE id = ?"},
      {&st_.update_task,
       "UPDATE tasks SET state = ?, failures = ?, committed_attempt = ? "
       "WHERE job_id = ? AND idx = ?"},
      {&st_.delete_outputs, "DELETE FROM outputs WHERE job_id = ? AND idx = ?"},
      {&st_.insert_output,
       "INSERT INTO outputs (job_id, idx, path, sha256, size) VALUES (?, ?, ?, ?, ?)"},
      {&st_.update_job, "UPDATE jobs SET state = ?, finished_ms = ? WHERE id = ?"},
      {&st_.update_service, "UPDATE job_service SET replicas = ? WHERE job_id = ?"},
      {&st_.load_jobs,
       "SELECT j.id, j.task_count, j.cpus, j.gpus, j.memory_mb, j.max_attempts, j.timeout_ms, "
       "j.state, coalesce(g.gpu_memory_mb, 0), coalesce(g.gpu_api, ''), "
       "coalesce(x.host_network, 0), coalesce(iif(s.replicas >= 0, s.replicas, s.min_replicas), "
       "-1), "
       "coalesce(s.replicas_per_machine, 1), " IDLEPOOL_JOB_OWNER_COLUMNS
       " FROM jobs j LEFT JOIN job_gpus g ON g.job_id = j.id "
       "LEFT JOIN job_sandbox x ON x.job_id = j.id LEFT JOIN job_service s ON s.job_id = "
       "j.id" IDLEPOOL_JOB_OWNER_JOIN "ORDER BY j.id"},
      {&st_.load_counts, "SELECT job_id, outcome, count(*) FROM attempts GROUP BY job_id, outcome"},
      {&st_.load_lost,
       "SELECT DISTINCT job_id, worker FROM attempts WHERE outcome = ? "
       "ORDER BY job_id, worker"},
      {&st_.load_tasks, "SELECT job_id, idx, state, failures FROM tasks ORDER BY job_id, idx"},
      {&st_.load_running,
       "SELECT id, job_id, idx, worker, gpus FROM attempts WHERE outcome = ? ORDER BY id"},
      {&st_.max_attempt, "SELECT coalesce(max(id), 0) FROM attempts"},
      // The header columns first (read by ReadJobHeader), then spec, read by GetJob only.
      {&st_.get_job, kGetJobSql},
      {&st_.get_job_header, kGetJobHeaderSql},
      {&st_.list_jobs, kListJobsSql},
      {&st_.job_exists, "SELECT 1 FROM jobs WHERE id = ?"},
      {&st_.list_tasks,
       "SELECT idx, state, failures, committed_attempt FROM tasks WHERE job_id = ? "
       "ORDER BY idx"},
      {&st_.list_attempts, kListAttemptsSql},
      {&st_.failed_tasks, kFailedTasksSql},
      {&st_.task_attempts, kTaskAttemptsSql},
      {&st_.count_task_attempts, "SELECT count(*) FROM attempts WHERE job_id = ? AND idx = ?"},
      {&st_.task_state, "SELECT state FROM tasks WHERE job_id = ? AND idx = ?"},
      {&st_.succeeded_of_job, kSucceededOfJobSql},
      {&st_.succeeded_of_key, kSucceededOfKeySql},
      {&st_.insert_job_profile, kInsertJobProfileSql},
      {&st_.list_outputs,
       "SELECT idx, path, sha256, size FROM outputs WHERE job_id = ? ORDER BY idx, path"},
      {&st_.put_worker, kPutWorkerSql},
      {&st_.list_workers, kListWorkersSql},
      {&st_.get_worker, kGetWorkerSql},
      {&st_.put_prediction,
       "INSERT OR REPLACE INTO job_predictions (job_id, prediction) VALUES (?, ?)"},
      {&st_.get_prediction, "SELECT prediction FROM job_predictions WHERE job_id = ?"},
      {&st_.append_event, kAppendWorkerEventSql},
      {&st_.list_events, kListWorkerEventsSql},
      {&st_.trim_events_by_time, kTrimEventsByTimeSql},
      {&st_.trim_events_by_rows, kTrimEventsByRowsSql},
      {&st_.insert_job_gpus, kInsertJobGpusSql},
      {&st_.insert_job_sandbox, kInsertJobSandboxSql},
      {&st_.insert_job_service, kInsertJobServiceSql},
      {&st_.insert_job_after, kInsertJobAfterSql},
      {&st_.load_job_after, kLoadJobAfterSql},
      {&st_.insert_job_owner, kInsertJobOwnerSql},
      {&st_.add_usage, kAddUsageSql},
  };
  for (const auto& [stmt, sql] : all) {
    if (absl::Status s = Prepare(sql, *stmt); !s.ok()) return s;
  }
  for (const auto& [member, sql] : TaskInputStatements()) {
    if (absl::Status s = Prepare(sql, st_.*member); !s.ok()) return s;
  }
  return absl::OkStatus();
}

// --- writes -------------------------------------------------------------------------------------

absl::StatusOr<core::JobId> SqliteStore::InsertJob(const NewJob& job, int64_t now_ms) {
  if (job.sched.task_count == 0) return Invalid(ZeroTaskCountMsg());
  std::lock_guard lock(mu_);
  if (absl::Status s = Begin(st_.begin_immediate); !s.ok()) return s;
  auto fail = [&](absl::Status s) {
    Rollback();
    return s;
  };
  core::JobId id = 0;
  {
    Use u(st_.insert_job);
    const core::JobSubmitted& j = job.sched;
    Binder b(u);
    b.Text(job.name)
        .Blob(job.spec)
        .Int(j.task_count)
        .Int(j.resources.cpus)
        .Int(j.resources.gpus)
        .Int(static_cast<int64_t>(j.resources.memory_mb))
        .Int(j.max_attempts)
        .Int(j.timeout.count())
        .Text(JobStateName(core::JobState::kRunning))
        .Int(now_ms);
    if (b.rc() != SQLITE_OK) return fail(Err(b.rc(), "InsertJob: bind job"));
    if (absl::Status s = Step(u, "InsertJob: insert job"); !s.ok()) return fail(s);
    id = static_cast<core::JobId>(sqlite3_last_insert_rowid(db_));
  }
  if (std::optional<RowFailure> f =
          InsertJobRows({st_.insert_job_profile, st_.insert_job_gpus, st_.insert_job_sandbox,
                         st_.insert_job_service, st_.insert_job_after, st_.insert_job_owner},
                        id, job)) {
    return fail(Err(f->rc, f->what));
  }
  if (absl::Status s = InsertTaskInputs(id, job); !s.ok()) return fail(s);
  {
    Use u(st_.insert_task);
    Binder b(u);
    b.Int(static_cast<int64_t>(id)).Int(0).Text(TaskStateName(core::TaskState::kPending));
    if (b.rc() != SQLITE_OK) return fail(Err(b.rc(), "InsertJob: bind task"));
    for (uint32_t i = 0; i < job.sched.task_count; ++i) {
      int rc = sqlite3_bind_int64(u, 2, i);
      if (rc != SQLITE_OK) return fail(Err(rc, "InsertJob: bind task"));
      rc = sqlite3_step(u);
      if (rc != SQLITE_DONE) return fail(Err(rc, "InsertJob: insert task"));
      sqlite3_reset(u);  // keeps the bindings
    }
  }
  if (absl::Status s = Commit(); !s.ok()) return s;
  return id;
}

absl::Status SqliteStore::ApplyOne(const core::Decision& d, int64_t now_ms) {
  if (const auto* r = std::get_if<core::AttemptCreated>(&d)) {
    if (r->attempt == 0) return Invalid(ZeroAttemptIdMsg(r->task));
    if (r->revived) {
      Use u(st_.revive_attempt);
      Binder b(u);
      b.Text(OutcomeName(core::AttemptOutcome::kRunning))
          .Int(static_cast<int64_t>(r->attempt))
          .Int(static_cast<int64_t>(r->task.job))
          .Int(r->task.index)
          .Text(r->worker)
          .Text(OutcomeName(core::AttemptOutcome::kLost));
      if (b.rc() != SQLITE_OK) return Err(b.rc(), "AttemptCreated: bind");
      if (absl::Status s = Step(u, "AttemptCreated: revive attempt"); !s.ok()) return s;
      if (sqlite3_changes(db_) != 1) return Invalid(ReviveNotLostMsg(r->attempt));
      return absl::OkStatus();
    }
    Use u(st_.insert_attempt);
    Binder b(u);
    const std::string gpus = GpusText(r->gpus);
    b.Int(static_cast<int64_t>(r->attempt))
        .Int(static_cast<int64_t>(r->task.job))
        .Int(r->task.index)
        .Text(r->worker)
        .Text(OutcomeName(core::AttemptOutcome::kRunning))
        .Int(now_ms)
        .Text(gpus);
    if (b.rc() != SQLITE_OK) return Err(b.rc(), "AttemptCreated: bind");
    int rc = sqlite3_step(u);
    if (rc == SQLITE_DONE) return absl::OkStatus();
    if (rc == SQLITE_CONSTRAINT_PRIMARYKEY) return Invalid(DuplicateAttemptMsg(r->attempt));
    if (rc == SQLITE_CONSTRAINT_FOREIGNKEY) {
      return Invalid(UnknownTaskMsg("AttemptCreated", r->task));
    }
    return Err(rc, "AttemptCreated: insert attempt");
  }

  if (const auto* r = std::get_if<core::AttemptEnded>(&d)) {
    if (r->outcome == core::AttemptOutcome::kRunning) return Invalid(EndedRunningMsg(r->attempt));
    if (r->late && r->outcome != core::AttemptOutcome::kSucceeded) {
      return Invalid(LateNotSuccessMsg(r->attempt));
    }
    {
      Use u(st_.end_attempt);
      Binder b(u);
      const core::Transfer& t = r->transfer;
      auto i64 = [](uint64_t v) { return static_cast<int64_t>(std::min<uint64_t>(v, INT64_MAX)); };
      b.Text(OutcomeName(r->outcome))
          .Int(r->exit_code)
          .Text(r->message)
          .Int(now_ms)
          .Int(r->lost.count())
          .Int(i64(t.input_bytes))
          .Int(i64(t.cached_bytes))
          .Int(i64(t.coordinator_bytes))
          .Int(i64(t.peer_bytes))
          .Int(i64(t.output_bytes))
          .Int(i64(t.cache_hits))
          .Int(i64(t.cache_misses))
          .Int(i64(r->timing.stage_ms))
          .Int(i64(r->timing.run_ms))
          .Int(i64(r->timing.upload_ms))
          .Int(r->timing.resumed ? 1 : 0)
          .Text(r->log_tail)
          .Int(static_cast<int64_t>(r->attempt))
          .Int(static_cast<int64_t>(r->task.job))
          .Int(r->task.index)
          .Text(r->worker)
          .Text(
              OutcomeName(r->late ? core::AttemptOutcome::kLost : core::AttemptOutcome::kRunning));
      if (b.rc() != SQLITE_OK) return Err(b.rc(), "AttemptEnded: bind");
      if (absl::Status s = Step(u, "AttemptEnded: update attempt"); !s.ok()) return s;
      if (sqlite3_changes(db_) == 1) return r->late ? absl::OkStatus() : AddUsage(r->attempt);
    }
    // Nothing matched: say why.
    Use u(st_.get_attempt);
    if (int rc = sqlite3_bind_int64(u, 1, static_cast<int64_t>(r->attempt)); rc != SQLITE_OK) {
      return Err(rc, "AttemptEnded: bind");
    }
    int rc = sqlite3_step(u);
    if (rc == SQLITE_DONE) return Invalid(UnknownAttemptMsg(r->attempt));
    if (rc != SQLITE_ROW) return Err(rc, "AttemptEnded: read attempt");
    core::TaskKey task{static_cast<core::JobId>(ColInt(u, 0)),
                       static_cast<uint32_t>(ColInt(u, 1))};
    std::string worker = ColText(u, 2);
    if (task != r->task || worker != r->worker) {
      return Invalid(AttemptMismatchMsg(r->attempt, task, worker, r->task, r->worker));
    }
    core::AttemptOutcome outcome{};
    if (absl::Status s = ParseCol(u, 3, ParseOutcome, "attempt outcome", outcome); !s.ok()) {
      return s;
    }
    if (r->late) return Invalid(LateNotLostMsg(r->attempt, outcome));
    return Invalid(AlreadyEndedMsg(r->attempt, outcome));
  }

  if (const auto* r = std::get_if<core::TaskChanged>(&d)) {
    const int64_t job = static_cast<int64_t>(r->task.job);
    {
      Use u(st_.update_task);
      Binder b(u);
      b.Text(TaskStateName(r->state))
          .Int(r->failures)
          .Int(static_cast<int64_t>(r->committed_attempt))
          .Int(job)
          .Int(r->task.index);
      if (b.rc() != SQLITE_OK) return Err(b.rc(), "TaskChanged: bind");
      if (absl::Status s = Step(u, "TaskChanged: update task"); !s.ok()) return s;
      if (sqlite3_changes(db_) != 1) return Invalid(UnknownTaskMsg("TaskChanged", r->task));
    }
    if (r->state != core::TaskState::kSucceeded) return absl::OkStatus();
    {
      Use u(st_.delete_outputs);
      Binder b(u);
      b.Int(job).Int(r->task.index);
      if (b.rc() != SQLITE_OK) return Err(b.rc(), "TaskChanged: bind");
      if (absl::Status s = Step(u, "TaskChanged: delete outputs"); !s.ok()) return s;
    }
    Use u(st_.insert_output);
    for (const core::OutputFile& f : r->outputs) {
      sqlite3_clear_bindings(u);
      Binder b(u);
      b.Int(job).Int(r->task.index).Text(f.path).Text(f.sha256).Int(static_cast<int64_t>(f.size));
      if (b.rc() != SQLITE_OK) return Err(b.rc(), "TaskChanged: bind output");
      int rc = sqlite3_step(u);
      if (rc == SQLITE_CONSTRAINT_PRIMARYKEY) return Invalid(DuplicateOutputMsg(r->task, f.path));
      if (rc != SQLITE_DONE) return Err(rc, "TaskChanged: insert output");
      sqlite3_reset(u);
    }
    return absl::OkStatus();
  }

  if (const auto* r = std::get_if<core::JobChanged>(&d)) {
    Use u(st_.update_job);
    Binder b(u);
    b.Text(JobStateName(r->state))
        .Int(IsTerminal(r->state) ? now_ms : 0)
        .Int(static_cast<int64_t>(r->job));
    if (b.rc() != SQLITE_OK) return Err(b.rc(), "JobChanged: bind");
    if (absl::Status s = Step(u, "JobChanged: update job"); !s.ok()) return s;
    if (sqlite3_changes(db_) != 1) return Invalid(UnknownJobMsg("JobChanged", r->job));
    return absl::OkStatus();
  }

  if (const auto* r = std::get_if<core::AttemptSuspended>(&d)) {
    Use u(st_.suspend_attempt);
    Binder b(u);
    b.Int(static_cast<int64_t>(r->attempt))
        .Int(static_cast<int64_t>(r->task.job))
        .Int(r->task.index)
        .Text(OutcomeName(core::AttemptOutcome::kRunning));
    if (b.rc() != SQLITE_OK) return Err(b.rc(), "AttemptSuspended: bind");
    if (absl::Status s = Step(u, "AttemptSuspended: update attempt"); !s.ok()) return s;
    if (sqlite3_changes(db_) != 1) return Invalid(SuspendedEndedMsg(r->attempt));
    return absl::OkStatus();
  }

  if (const auto* r = std::get_if<core::TaskCheckpointed>(&d)) {
    const int64_t job = static_cast<int64_t>(r->task.job);
    {
      Use u(st_.get_attempt);
      if (int rc = sqlite3_bind_int64(u, 1, static_cast<int64_t>(r->attempt)); rc != SQLITE_OK) {
        return Err(rc, "TaskCheckpointed: bind");
      }
      int rc = sqlite3_step(u);
      if (rc == SQLITE_DONE) return Invalid(UnknownAttemptMsg(r->attempt));
      if (rc != SQLITE_ROW) return Err(rc, "TaskCheckpointed: read attempt");
      core::TaskKey task{static_cast<core::JobId>(ColInt(u, 0)),
                         static_cast<uint32_t>(ColInt(u, 1))};
      core::AttemptOutcome outcome{};
      if (absl::Status s = ParseCol(u, 3, ParseOutcome, "attempt outcome", outcome); !s.ok()) {
        return s;
      }
      if (task != r->task || outcome != core::AttemptOutcome::kRunning) {
        return Invalid(CheckpointOfEndedMsg(r->attempt));
      }
    }
    {
      Use u(st_.delete_checkpoint);
      Binder b(u);
      b.Int(job).Int(r->task.index);
      if (b.rc() != SQLITE_OK) return Err(b.rc(), "TaskCheckpointed: bind");
      if (absl::Status s = Step(u, "TaskCheckpointed: delete"); !s.ok()) return s;
    }
    Use u(st_.insert_checkpoint);
    for (const core::OutputFile& f : r->files) {
      sqlite3_clear_bindings(u);
      Binder b(u);
      b.Int(job).Int(r->task.index).Text(f.path).Text(f.sha256).Int(static_cast<int64_t>(f.size))
          .Int(static_cast<int64_t>(r->attempt));
      if (b.rc() != SQLITE_OK) return Err(b.rc(), "TaskCheckpointed: bind file");
      int rc = sqlite3_step(u);
      if (rc == SQLITE_CONSTRAINT_PRIMARYKEY) return Invalid(DuplicateOutputMsg(r->task, f.path));
      if (rc != SQLITE_DONE) return Err(rc, "TaskCheckpointed: insert file");
      sqlite3_reset(u);
    }
    return absl::OkStatus();
  }

  // WorkerLost needs nothing durable: lost workers are derived from attempts that ended kLost.
  // Message decisions (AssignAttempt, KillAttempt, AckReport, RefuseSession) are not records.
  return absl::OkStatus();
}

absl::Status SqliteStore::Apply(const std::vector<core::Decision>& records, int64_t now_ms) {
  bool any = false;
  for (const core::Decision& d : records) any = any || core::IsRecord(d);
  if (!any) return absl::OkStatus();
  std::lock_guard lock(mu_);
  if (absl::Status s = Begin(st_.begin_immediate); !s.ok()) return s;
  for (const core::Decision& d : records) {
    if (absl::Status s = ApplyOne(d, now_ms); !s.ok()) {
      Rollback();
      return s;
    }
  }
  return Commit();
}

absl::Status SqliteStore::ScaleService(core::JobId job, uint32_t replicas) {
  std::lock_guard lock(mu_);
  Use u(st_.update_service);
  const int rc = Binder(u).Int(replicas).Int(static_cast<int64_t>(job)).rc();
  if (rc != SQLITE_OK) return Err(rc, "ScaleService: bind");
  if (absl::Status s = Step(u, "ScaleService: update"); !s.ok()) return s;
  if (sqlite3_changes(db_) != 1) return Invalid(absl::StrCat("job ", job, " is not a service"));
  return absl::OkStatus();
}

// --- reads --------------------------------------------------------------------------------------

absl::StatusOr<core::RestoredState> SqliteStore::Load() {
  std::lock_guard lock(mu_);
  if (absl::Status s = Begin(st_.begin_deferred); !s.ok()) return s;
  auto finish = [&](absl::Status s) {
    Rollback();
    return s;
  };
  core::RestoredState out;
  std::map<core::JobId, size_t> pos;  // job id -> index in out.jobs
  int rc;
  {
    Use u(st_.load_jobs);
    while ((rc = sqlite3_step(u)) == SQLITE_ROW) {
      core::RestoredJob j;
      j.spec.job = static_cast<core::JobId>(ColInt(u, 0));
      j.spec.task_count = static_cast<uint32_t>(ColInt(u, 1));
      j.spec.resources.cpus = static_cast<uint32_t>(ColInt(u, 2));
      j.spec.resources.gpus = static_cast<uint32_t>(ColInt(u, 3));
      j.spec.resources.memory_mb = static_cast<uint64_t>(ColInt(u, 4));
      j.spec.max_attempts = static_cast<uint32_t>(ColInt(u, 5));
      j.spec.timeout = core::Millis(ColInt(u, 6));
      if (absl::Status s = ParseCol(u, 7, ParseJobState, "job state", j.state); !s.ok()) {
        return finish(s);
      }
      j.spec.resources.gpu_memory_mb = static_cast<uint64_t>(ColInt(u, 8));
      j.spec.resources.gpu_api = ColText(u, 9);
      j.spec.resources.host_network = ColInt(u, 10) != 0;
      if (ColInt(u, 11) >= 0) {  // a service: it runs its minimum until scaled
        j.spec.service = core::ServiceShape{static_cast<uint32_t>(ColInt(u, 11)),
                                            static_cast<uint32_t>(ColInt(u, 12))};
      }
      j.spec.user = ColText(u, 13);
      j.spec.priority = static_cast<int32_t>(ColInt(u, 14));
      pos[j.spec.job] = out.jobs.size();
      out.jobs.push_back(std::move(j));
    }
    if (rc != SQLITE_DONE) return finish(Err(rc, "Load: read jobs"));
  }
  if (std::optional<RowFailure> f = LoadJobAfter(st_.load_job_after, pos, out)) {
    return finish(Err(f->rc, f->what));
  }
  {
    Use u(st_.load_counts);
    while ((rc = sqlite3_step(u)) == SQLITE_ROW) {
      auto it = pos.find(static_cast<core::JobId>(ColInt(u, 0)));
      if (it == pos.end()) return finish(DataLoss("attempts of a job that does not exist"));
      core::AttemptOutcome o{};
      if (absl::Status s = ParseCol(u, 1, ParseOutcome, "attempt outcome", o); !s.ok()) {
        return finish(s);
      }
      core::JobCounters one;
      CountAttempt(o, one);
      const uint64_t n = static_cast<uint64_t>(ColInt(u, 2));
      core::JobCounters& c = out.jobs[it->second].counters;
      c.attempts += one.attempts * n;
      c.failures += one.failures * n;
      c.preemptions += one.preemptions * n;
      c.lost += one.lost * n;
      c.machine_faults += one.machine_faults * n;
    }
    if (rc != SQLITE_DONE) return finish(Err(rc, "Load: count attempts"));
  }
  {
    Use u(st_.load_sums);
    while ((rc = sqlite3_step(u)) == SQLITE_ROW) {
      auto it = pos.find(static_cast<core::JobId>(ColInt(u, 0)));
      if (it == pos.end()) return finish(DataLoss("attempts of a job that does not exist"));
      core::JobCounters& c = out.jobs[it->second].counters;
      c.suspensions = static_cast<uint64_t>(ColInt(u, 1));
      c.lost_work = core::Millis(ColInt(u, 2));
      c.transfer = ColTransfer(u, 3);
    }
    if (rc != SQLITE_DONE) return finish(Err(rc, "Load: sum attempts"));
  }
  {
    Use u(st_.load_lost_attempts);
    if (int b = Binder(u)
                    .Text(OutcomeName(core::AttemptOutcome::kLost))
                    .Text(JobStateName(core::JobState::kRunning))
                    .rc();
        b != SQLITE_OK) {
      return finish(Err(b, "Load: bind"));
    }
    while ((rc = sqlite3_step(u)) == SQLITE_ROW) {
      core::RestoredLost l;
      l.attempt = static_cast<core::AttemptId>(ColInt(u, 0));
      l.task = {static_cast<core::JobId>(ColInt(u, 1)), static_cast<uint32_t>(ColInt(u, 2))};
      l.worker = ColText(u, 3);
      l.lost = core::Millis(ColInt(u, 4));
      l.gpus = ParseGpus(ColText(u, 5));
      out.lost.push_back(std::move(l));
    }
    if (rc != SQLITE_DONE) return finish(Err(rc, "Load: read lost attempts"));
  }
  {
    Use u(st_.load_lost);
    if (int b = Binder(u).Text(OutcomeName(core::AttemptOutcome::kLost)).rc(); b != SQLITE_OK) {
      return finish(Err(b, "Load: bind"));
    }
    while ((rc = sqlite3_step(u)) == SQLITE_ROW) {
      auto it = pos.find(static_cast<core::JobId>(ColInt(u, 0)));
      if (it == pos.end()) return finish(DataLoss("attempts of a job that does not exist"));
      out.jobs[it->second].workers_lost.push_back(ColText(u, 1));
    }
    if (rc != SQLITE_DONE) return finish(Err(rc, "Load: read lost workers"));
  }
  {
    Use u(st_.load_tasks);
    while ((rc = sqlite3_step(u)) == SQLITE_ROW) {
      core::RestoredTask t;
      t.task = {static_cast<core::JobId>(ColInt(u, 0)), static_cast<uint32_t>(ColInt(u, 1))};
      if (absl::Status s = ParseCol(u, 2, ParseTaskState, "task state", t.state); !s.ok()) {
        return finish(s);
      }
      t.failures = static_cast<uint32_t>(ColInt(u, 3));
      out.tasks.push_back(t);
    }
    if (rc != SQLITE_DONE) return finish(Err(rc, "Load: read tasks"));
  }
  {
    Use u(st_.load_running);
    if (int b = Binder(u).Text(OutcomeName(core::AttemptOutcome::kRunning)).rc(); b != SQLITE_OK) {
      return finish(Err(b, "Load: bind"));
    }
    while ((rc = sqlite3_step(u)) == SQLITE_ROW) {
      core::RestoredAttempt a;
      a.attempt = static_cast<core::AttemptId>(ColInt(u, 0));
      a.task = {static_cast<core::JobId>(ColInt(u, 1)), static_cast<uint32_t>(ColInt(u, 2))};
      a.worker = ColText(u, 3);
      a.gpus = ParseGpus(ColText(u, 4));
      out.running.push_back(std::move(a));
    }
    if (rc != SQLITE_DONE) return finish(Err(rc, "Load: read running attempts"));
  }
  {
    Use u(st_.max_attempt);
    rc = sqlite3_step(u);
    if (rc != SQLITE_ROW) return finish(Err(rc, "Load: read max attempt id"));
    out.next_attempt_id = static_cast<core::AttemptId>(ColInt(u, 0)) + 1;
  }
  if (absl::Status s = Commit(); !s.ok()) return s;
  return out;
}

}  // namespace idlepool::store::internal

namespace idlepool::store {

absl::StatusOr<std::unique_ptr<Store>> OpenSqliteStore(const std::string& path) {
  auto store = std::make_unique<internal::SqliteStore>(path);
  if (absl::Status s = store->Open(); !s.ok()) return s;
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace idlepool::store
