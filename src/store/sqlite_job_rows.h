// A job's rows in the SQLite store besides jobs and tasks (store/sqlite_schema.h): job_profiles
// (every job), job_gpus, job_sandbox and job_service (only for a job that states more than the
// default), written by InsertJob in its transaction; and the job_service columns that every job
// read joins in. Internal to sqlite_store.cc. Thread safety: none of their own (the store's
// mutex guards every statement).
#pragma once

#include <sqlite3.h>

#include <map>
#include <optional>

#include "core/types.h"
#include "spec/service.h"
#include "store/sqlite_stmt.h"
#include "store/store.h"

namespace idlepool::store::internal {

inline constexpr const char* kInsertJobProfileSql =
    "INSERT INTO job_profiles (job_id, profile_key, input_bytes, input_files) VALUES (?, ?, ?, ?)";
inline constexpr const char* kInsertJobGpusSql =
    "INSERT INTO job_gpus (job_id, gpu_memory_mb, gpu_api) VALUES (?, ?, ?)";
inline constexpr const char* kInsertJobSandboxSql =
    "INSERT INTO job_sandbox (job_id, host_network) VALUES (?, 1)";
inline constexpr const char* kInsertJobServiceSql =
    "INSERT INTO job_service (job_id, min_replicas, max_replicas, protocol, model, health, "
    "max_concurrent, drain_seconds, replicas_per_machine) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)";
inline constexpr const char* kInsertJobAfterSql =
    "INSERT OR IGNORE INTO job_after (job_id, after_id) VALUES (?, ?)";
inline constexpr const char* kLoadJobAfterSql =
    "SELECT job_id, after_id FROM job_after ORDER BY job_id, rowid";
inline constexpr const char* kInsertJobOwnerSql =
    "INSERT INTO job_owner (job_id, user, priority) VALUES (?, ?, ?)";

// job_service's columns as a job read selects them (ColService's order), and the join that
// brings them: every one NULL for a job without a row.
#define IDLEPOOL_JOB_SERVICE_COLUMNS                                          \
  "s.job_id, s.min_replicas, s.max_replicas, s.protocol, s.model, s.health, " \
  "s.max_concurrent, s.drain_seconds, s.replicas_per_machine"
#define IDLEPOOL_JOB_SERVICE_JOIN " LEFT JOIN job_service s ON s.job_id = j.id "
inline constexpr int kJobServiceColumns = 9;
// job_owner's columns as a job read selects them, and its join (a job without a row: '', 0).
#define IDLEPOOL_JOB_OWNER_COLUMNS "coalesce(o.user, ''), coalesce(o.priority, 0)"
#define IDLEPOOL_JOB_OWNER_JOIN " LEFT JOIN job_owner o ON o.job_id = j.id "

// The statements of kInsertJob*Sql, prepared by the store.
struct JobRowStatements {
  const StmtPtr& profile;
  const StmtPtr& gpus;
  const StmtPtr& sandbox;
  const StmtPtr& service;
  const StmtPtr& after;  // version 11
  const StmtPtr& owner;  // version 13
};

// A failed step: the SQLite code and what it was doing ("InsertJob: insert job gpus").
struct RowFailure {
  int rc = SQLITE_OK;
  const char* what = "";
};

// Inserts the rows of job `id` as submitted (`job`); nullopt when all are written. The caller
// holds the transaction and rolls it back on a failure.
[[nodiscard]] std::optional<RowFailure> InsertJobRows(const JobRowStatements& st, core::JobId id,
                                                      const NewJob& job);

// Adds each job's job_after rows to its RestoredJob (`pos`: job id -> index in out.jobs; rows of
// other jobs are skipped); nullopt when all are read.
[[nodiscard]] std::optional<RowFailure> LoadJobAfter(const StmtPtr& load,
                                                     const std::map<core::JobId, size_t>& pos,
                                                     core::RestoredState& out);

// The service of a job read whose IDLEPOOL_JOB_SERVICE_COLUMNS start at column `first`; nullopt
// for a job without a job_service row.
std::optional<spec::ServiceSpec> ColService(sqlite3_stmt* s, int first);

}  // namespace idlepool::store::internal
