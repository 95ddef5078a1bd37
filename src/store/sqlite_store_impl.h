// SqliteStore (store.h's SQLite implementation), shared by its source files: sqlite_store.cc
// (opening, migrations, writes, Load), sqlite_store_reads.cc (jobs, tasks, attempts, outputs,
// checkpoints) and sqlite_store_workers.cc (workers, predictions, worker events). Internal:
// use OpenSqliteStore (store.h).
//
// Concurrency: one connection guarded by one mutex; every statement is prepared once at open.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "store/sqlite_job_rows.h"
#include "store/sqlite_util.h"
#include "store/store.h"
#include "store/store_internal.h"

namespace idlepool::store::internal {

// Columns of a jobs header row (the spec follows when selected); see kGetJobSql.
constexpr int kJobHeaderColumns = 19 + kJobServiceColumns;  // then spec, when selected
// Where ListAttempts' statements put log_tail.
constexpr int kAttemptLogTailColumn = 23;

// Statements prepared once per connection.
struct Statements {
  StmtPtr begin_immediate, begin_deferred, commit, rollback;
  StmtPtr insert_job, insert_task;
  StmtPtr insert_attempt, end_attempt, get_attempt;
  StmtPtr update_task, delete_outputs, insert_output;
  StmtPtr update_job, update_service, suspend_attempt, delete_checkpoint, insert_checkpoint,
      get_checkpoint;
  StmtPtr load_sums, load_lost_attempts, revive_attempt;
  StmtPtr load_jobs, load_counts, load_lost, load_tasks, load_running, max_attempt;
  StmtPtr get_job, get_job_header, list_jobs, job_exists, list_tasks, list_attempts, list_outputs,
      failed_tasks, task_attempts, count_task_attempts, task_state;
  StmtPtr insert_job_profile, succeeded_of_job, succeeded_of_key;
  StmtPtr put_worker, list_workers, get_worker;                                 // schema version 5
  StmtPtr put_prediction, get_prediction;                                       // schema version 6
  StmtPtr append_event, list_events, trim_events_by_time, trim_events_by_rows;  // version 7
  StmtPtr insert_job_gpus;                                                      // version 8
  StmtPtr insert_job_sandbox;                                                   // version 9
  StmtPtr insert_job_service;                                                   // version 10
  StmtPtr insert_task_input, insert_task_input_totals, list_task_inputs, list_task_inputs_of_task,
      task_input_totals;  // version 11 (sqlite_store_task_inputs.cc)
  StmtPtr insert_job_after, load_job_after;                                     // version 11
  StmtPtr insert_job_owner;                                                     // version 13
  StmtPtr add_usage;                                                            // version 14
};

class SqliteStore final : public Store {
 public:
  explicit SqliteStore(std::string path) : path_(std::move(path)) {}

  ~SqliteStore() override {
    st_ = Statements{};  // finalize every statement before closing
    if (db_ != nullptr) sqlite3_close_v2(db_);
  }

  absl::Status Open();

  absl::StatusOr<core::JobId> InsertJob(const NewJob& job, int64_t now_ms) override;
  absl::Status Apply(const std::vector<core::Decision>& records, int64_t now_ms) override;
  absl::Status ScaleService(core::JobId job, uint32_t replicas) override;
  absl::StatusOr<core::RestoredState> Load() override;
  absl::StatusOr<JobRecord> GetJob(core::JobId job) override;
  absl::StatusOr<JobRecord> GetJobHeader(core::JobId job) override;
  absl::StatusOr<std::vector<JobRecord>> ListJobs() override;
  absl::StatusOr<std::vector<TaskRecord>> ListTasks(core::JobId job) override;
  absl::StatusOr<std::vector<AttemptRecord>> ListAttempts(core::JobId job) override;
  absl::StatusOr<std::vector<AttemptRecord>> ListFailedTasks(const FailedTasksQuery& q) override;
  absl::StatusOr<TaskAttempts> ListTaskAttempts(core::TaskKey task, size_t limit) override;
  absl::StatusOr<std::vector<AttemptRecord>> ListSucceededAttempts(
      const SucceededAttemptsQuery& query) override;
  absl::StatusOr<std::vector<TaskOutput>> ListOutputs(core::JobId job) override;
  absl::StatusOr<std::vector<core::OutputFile>> GetCheckpoint(core::TaskKey task) override;
  absl::Status PutWorkers(const std::vector<WorkerRecord>& workers) override;
  absl::StatusOr<std::vector<WorkerRecord>> ListWorkers() override;
  absl::StatusOr<std::optional<WorkerRecord>> GetWorker(const std::string& worker) override;
  absl::Status PutJobPrediction(core::JobId job, const std::string& bytes) override;
  absl::StatusOr<std::string> GetJobPrediction(core::JobId job) override;
  absl::Status AppendWorkerEvents(const std::vector<WorkerEvent>& events) override;
  absl::StatusOr<std::vector<WorkerEvent>> ListWorkerEvents(const WorkerEventsQuery& q) override;
  absl::Status TrimWorkerEvents(int64_t before_ms, size_t max_rows) override;
  absl::StatusOr<std::vector<TaskInputRow>> ListTaskInputs(core::JobId job,
                                                           std::optional<uint32_t> task) override;
  absl::StatusOr<TaskInputTotals> GetTaskInputTotals(core::JobId job) override;

  // The SQL of the version 11 statements, for PrepareAll.
  static const std::vector<std::pair<StmtPtr Statements::*, const char*>>& TaskInputStatements();
  // sqlite_store_gc.cc
  absl::StatusOr<std::set<std::string>> ReferencedBlobs(const SpecBlobs& spec_blobs) override;
  absl::StatusOr<std::set<std::string>> DeleteJob(core::JobId job,
                                                  const SpecBlobs& spec_blobs) override;
  // sqlite_store_users.cc (schema version 14)
  absl::Status PutUser(const UserRow& user) override;
  absl::Status PutUsageBalances(const std::vector<UsageBalance>& balances,
                                int64_t as_of_ms) override;
  absl::StatusOr<UsersState> LoadUsers() override;
  absl::Status SetJobPriority(core::JobId job, int32_t priority) override;
  absl::StatusOr<std::vector<UsageTotals>> ListUsage(int64_t since_day, UsageBy by) override;
  absl::Status TrimUsage(int64_t before_day) override;
  absl::Status AddServed(int64_t day, const std::vector<ServedRow>& rows) override;

 private:
  // InsertJob's rows for job.task_inputs (inside its transaction); the error names the row.
  absl::Status InsertTaskInputs(core::JobId id, const NewJob& job);
  // Error for a failed sqlite call `rc` while doing `what`; the message names the file.
  absl::Status Err(int rc, absl::string_view what) const {
    const char* detail = db_ != nullptr ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    return absl::Status(CodeFor(rc), absl::StrCat("sqlite store ", path_, ": ", what, ": ", detail,
                                                  " (sqlite code ", rc, ")"));
  }
  absl::Status Invalid(absl::string_view msg) const {
    return absl::InvalidArgumentError(absl::StrCat("sqlite store ", path_, ": ", msg));
  }
  absl::Status DataLoss(absl::string_view msg) const {
    return absl::DataLossError(absl::StrCat("sqlite store ", path_, ": ", msg));
  }
  absl::Status NotFound(core::JobId job) const {
    return absl::NotFoundError(absl::StrCat("sqlite store ", path_, ": no job ", job));
  }

  absl::Status Prepare(const char* sql, StmtPtr& out);
  absl::Status PrepareAll();
  absl::Status Exec(const char* sql, absl::string_view what);
  absl::StatusOr<int64_t> QueryInt(const char* sql, absl::string_view what);
  absl::Status Step(sqlite3_stmt* s, absl::string_view what);  // expects SQLITE_DONE
  absl::Status Begin(const StmtPtr& begin) { return Step(Use(begin), "begin transaction"); }
  absl::Status Commit();
  void Rollback();
  absl::Status ApplyOne(const core::Decision& d, int64_t now_ms);
  // Adds ended attempt `id` to its day's usage_days row (sqlite_store_users.cc).
  absl::Status AddUsage(core::AttemptId id);
  absl::StatusOr<bool> JobExists(core::JobId job);
  // Reads the kJobHeaderColumns of a jobs row (everything but spec) into `out`.
  absl::Status ReadJobHeader(sqlite3_stmt* s, JobRecord& out) const;
  // Reads a row of the attempt columns (kListAttemptsSql's order) into `out`.
  absl::Status ReadAttempt(sqlite3_stmt* s, AttemptRecord& out) const;
  // Every row of a bound attempt statement (ReadAttempt's columns), `what` naming the caller.
  absl::StatusOr<std::vector<AttemptRecord>> ReadAttempts(sqlite3_stmt* s, absl::string_view what);
  // Adds the blobs named by every row of `sql` (its first column a sha256, or with
  // `spec_blobs` a spec), `job` bound to its parameter when not 0.
  absl::Status AddBlobs(const char* sql, core::JobId job, const SpecBlobs* spec_blobs,
                        std::set<std::string>& out);
  absl::StatusOr<JobRecord> ReadOneJob(const StmtPtr& stmt, core::JobId job, bool with_spec,
                                       absl::string_view what);

  template <typename Enum>
  absl::Status ParseCol(sqlite3_stmt* s, int i, std::optional<Enum> (*parse)(absl::string_view),
                        const char* what, Enum& out) const {
    std::string text = ColText(s, i);
    std::optional<Enum> v = parse(text);
    if (!v) return DataLoss(absl::StrCat("unknown ", what, " '", text, "' in the database"));
    out = *v;
    return absl::OkStatus();
  }

  const std::string path_;
  std::mutex mu_;
  sqlite3* db_ = nullptr;
  Statements st_;
};

}  // namespace idlepool::store::internal
