// The SQLite store's file format: the schema, its versions and the steps that migrate an older
// file (store/sqlite_store.cc opens, creates and migrates; this header only describes).
//
// File format (schema version 14, kept in PRAGMA user_version; PRAGMA application_id marks the
// file as an idlepool store):
//   jobs        (id INTEGER PRIMARY KEY AUTOINCREMENT, ...)  ids are never reused
//   tasks       (job_id, idx) WITHOUT ROWID
//   attempts    (id INTEGER PRIMARY KEY = AttemptId, job_id, idx, worker, outcome, ...,
//                suspensions, lost_ms)
//   outputs     (job_id, idx, path) WITHOUT ROWID
//   checkpoints (job_id, idx, path) WITHOUT ROWID: each task's latest checkpoint
//   job_profiles (job_id PRIMARY KEY, profile_key, input_bytes, input_files), indexed by key
//   workers     (worker) WITHOUT ROWID: what the pool measured of each worker (version 5)
//   job_predictions (job_id PRIMARY KEY, prediction BLOB): makespan predictions (version 6)
//   worker_events (id INTEGER PRIMARY KEY, worker, at_ms, kind, ...): what happened to workers
//                (version 7, which also added attempts.log_tail)
//   job_gpus    (job_id PRIMARY KEY, gpu_memory_mb, gpu_api): a job's GPU needs beyond the count,
//                only for jobs that state them (version 8, which also added attempts.gpus)
//   job_sandbox (job_id PRIMARY KEY, host_network): how a job's tasks are isolated, only for jobs
//                that ask for more than the default (version 9)
//   job_service (job_id PRIMARY KEY, min_replicas, ...): a service's [service] table, only for
//                services (version 10)
//   task_inputs (job_id, idx, path) WITHOUT ROWID, indexed by sha256: each task's own inputs;
//                job_task_inputs (job_id PRIMARY KEY, files, bytes): their totals (version 11)
//   job_after   (job_id, after_id): the jobs each job runs after (version 12)
//   job_owner   (job_id PRIMARY KEY, user, priority): who submitted each job and its priority
//                among that user's jobs (version 13); a job without a row has user '', priority 0
//   users       (user PRIMARY KEY, share, max_slots, ...): users' shares and quotas;
//   user_usage  (user PRIMARY KEY, slot_s, gpu_s, as_of_ms): their decayed usage;
//   usage_days  (day, user, worker) WITHOUT ROWID: what ended attempts used, by UTC day (version
//                14)
// Version 2 added attempts.suspensions, attempts.lost_ms and the checkpoints table; version 3 the
// attempts' transfer columns (input_bytes ... cache_misses); version 4 the attempts' timing
// columns (stage_ms, run_ms, upload_ms, resumed) and job_profiles; version 5 the workers table.
// Older files are migrated in place when opened. The profile key lives in its own table, not in
// jobs: jobs.spec must stay the last column of jobs (see kSchemaV1), and ALTER TABLE can only
// append.
// Enums are stored as lowercase names (store_internal.h), never as C++ enum values. Job counters
// and lost workers are not stored: Load recomputes them from the attempts table, so they can
// never disagree with it.

// Constants only; the SQL is part of the file format: change nothing of an older version, add a
// version instead.
#pragma once

#include <iterator>

namespace idlepool::store::internal {

inline constexpr int kSchemaVersion = 14;

inline constexpr const char* kSchemaV1 = R"sql(
CREATE TABLE jobs (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  name          TEXT    NOT NULL,
  task_count    INTEGER NOT NULL,
  cpus          INTEGER NOT NULL,
  gpus          INTEGER NOT NULL,
  memory_mb     INTEGER NOT NULL,
  max_attempts  INTEGER NOT NULL,
  timeout_ms    INTEGER NOT NULL,
  state         TEXT    NOT NULL,
  submitted_ms  INTEGER NOT NULL,
  finished_ms   INTEGER NOT NULL DEFAULT 0,
  -- Last: reading the columns before it never walks the blob's overflow pages, so a status
  -- poll costs microseconds even for a job whose spec holds a million items.
  spec          BLOB    NOT NULL
);
CREATE TABLE tasks (
  job_id             INTEGER NOT NULL REFERENCES jobs(id),
  idx                INTEGER NOT NULL,
  state              TEXT    NOT NULL,
  failures           INTEGER NOT NULL DEFAULT 0,
  committed_attempt  INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (job_id, idx)
) WITHOUT ROWID;
CREATE TABLE attempts (
  id          INTEGER PRIMARY KEY,
  job_id      INTEGER NOT NULL,
  idx         INTEGER NOT NULL,
  worker      TEXT    NOT NULL,
  outcome     TEXT    NOT NULL,
  exit_code   INTEGER NOT NULL DEFAULT 0,
  message     TEXT    NOT NULL DEFAULT '',
  started_ms  INTEGER NOT NULL,
  ended_ms    INTEGER NOT NULL DEFAULT 0,
  FOREIGN KEY (job_id, idx) REFERENCES tasks(job_id, idx)
);
CREATE INDEX attempts_by_task ON attempts(job_id, idx);
CREATE TABLE outputs (
  job_id  INTEGER NOT NULL,
  idx     INTEGER NOT NULL,
  path    TEXT    NOT NULL,
  sha256  TEXT    NOT NULL,
  size    INTEGER NOT NULL,
  PRIMARY KEY (job_id, idx, path),
  FOREIGN KEY (job_id, idx) REFERENCES tasks(job_id, idx)
) WITHOUT ROWID;
)sql";

// From version 1 to 2.
inline constexpr const char* kMigrateV2 = R"sql(
ALTER TABLE attempts ADD COLUMN suspensions INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN lost_ms INTEGER NOT NULL DEFAULT 0;
CREATE TABLE checkpoints (
  job_id  INTEGER NOT NULL,
  idx     INTEGER NOT NULL,
  path    TEXT    NOT NULL,
  sha256  TEXT    NOT NULL,
  size    INTEGER NOT NULL,
  attempt INTEGER NOT NULL,
  PRIMARY KEY (job_id, idx, path),
  FOREIGN KEY (job_id, idx) REFERENCES tasks(job_id, idx)
) WITHOUT ROWID;
)sql";

// From version 2 to 3: what each attempt moved (AttemptEnded::transfer).
inline constexpr const char* kMigrateV3 = R"sql(
ALTER TABLE attempts ADD COLUMN input_bytes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN cached_bytes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN coordinator_bytes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN peer_bytes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN output_bytes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN cache_hits INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN cache_misses INTEGER NOT NULL DEFAULT 0;
)sql";

// ---- BEGIN timing migration (branch `timing`; renumber at merge if another lands first) ----
// From version 3 to 4: where each attempt's time went (AttemptEnded::timing), and each job's
// profile key (spec/profile_key.h) with its input size, for the planner's history.
inline constexpr int kTimingSchemaVersion = 4;
inline constexpr const char* kMigrateV4 = R"sql(
ALTER TABLE attempts ADD COLUMN stage_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN run_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN upload_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN resumed INTEGER NOT NULL DEFAULT 0;
CREATE TABLE job_profiles (
  job_id       INTEGER PRIMARY KEY REFERENCES jobs(id),
  profile_key  TEXT    NOT NULL,
  input_bytes  INTEGER NOT NULL DEFAULT 0,
  input_files  INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX job_profiles_by_key ON job_profiles(profile_key);
)sql";
// ---- END timing migration ----

// ---- Schema version 5 (issue 6, "measure the pool"): self-contained so it can be renumbered at
// merge. From version 4 to 5: one row per worker name with what the pool measured of it
// (store::WorkerRecord; written by PutWorkers, never by Apply).
inline constexpr int kWorkersSchemaVersion = 5;
inline constexpr const char* kMigrateV5Workers = R"sql(
CREATE TABLE workers (
  worker            TEXT    PRIMARY KEY,
  hostname          TEXT    NOT NULL DEFAULT '',
  link_measured_ms  INTEGER NOT NULL DEFAULT 0,
  rtt_us            INTEGER NOT NULL DEFAULT 0,
  down_bytes_per_s  INTEGER NOT NULL DEFAULT 0,
  up_bytes_per_s    INTEGER NOT NULL DEFAULT 0,
  probe_bytes       INTEGER NOT NULL DEFAULT 0,
  cpu_score         REAL    NOT NULL DEFAULT 0,
  cores             INTEGER NOT NULL DEFAULT 0,
  first_seen_ms     INTEGER NOT NULL DEFAULT 0,
  up_ms             INTEGER NOT NULL DEFAULT 0,
  down_ms           INTEGER NOT NULL DEFAULT 0,
  up_periods        INTEGER NOT NULL DEFAULT 0,
  down_periods      INTEGER NOT NULL DEFAULT 0,
  updated_ms        INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
)sql";
// ---- end of schema version 5

// From version 5 to 6: each job's makespan prediction (coordinator/planner.h), opaque bytes.
inline constexpr const char* kMigrateV6 = R"sql(
CREATE TABLE job_predictions (
  job_id      INTEGER PRIMARY KEY REFERENCES jobs(id),
  prediction  BLOB    NOT NULL
);
)sql";

// ---- Schema version 7 (issue 7, "see the pool"): self-contained so it can be renumbered at
// merge. From version 6 to 7: each attempt's log tail (AttemptEnded::log_tail), and what happened
// to workers (store::WorkerEvent; written by AppendWorkerEvents, never by Apply; ordered by id
// among equal times). worker_events is bounded by TrimWorkerEvents, by time and by rows.
inline constexpr int kEventsSchemaVersion = 7;
inline constexpr const char* kMigrateV7Events = R"sql(
ALTER TABLE attempts ADD COLUMN log_tail TEXT NOT NULL DEFAULT '';
CREATE TABLE worker_events (
  id      INTEGER PRIMARY KEY,
  worker  TEXT    NOT NULL,
  at_ms   INTEGER NOT NULL,
  kind    TEXT    NOT NULL,
  state   TEXT    NOT NULL DEFAULT '',
  cause   TEXT    NOT NULL DEFAULT '',
  reason  TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX worker_events_by_worker ON worker_events(worker, at_ms);
CREATE INDEX worker_events_by_time ON worker_events(at_ms);
)sql";
// ---- end of schema version 7

// ---- Schema version 8 (issue 8, GPUs): self-contained so it can be renumbered at merge. From
// version 7 to 8: each attempt's GPUs (AttemptCreated::gpus, in::GpusText), restored with a
// running attempt so its devices stay busy across a coordinator restart; and each job's
// Resources.gpu_memory_mb / gpu_api, in their own table (jobs.spec must stay jobs' last column),
// one row per job that states either.
inline constexpr int kGpusSchemaVersion = 8;
inline constexpr const char* kMigrateV8Gpus = R"sql(
ALTER TABLE attempts ADD COLUMN gpus TEXT NOT NULL DEFAULT '';
CREATE TABLE job_gpus (
  job_id         INTEGER PRIMARY KEY REFERENCES jobs(id),
  gpu_memory_mb  INTEGER NOT NULL DEFAULT 0,
  gpu_api        TEXT    NOT NULL DEFAULT ''
);
)sql";
// ---- end of schema version 8

// ---- Schema version 9 (issue 19, sandbox): self-contained so it can be renumbered at merge. From
// version 8 to 9: how each job's tasks are isolated beyond the default (Resources::host_network:
// spec `[sandbox] network = "host"`), in its own table (jobs.spec must stay jobs' last column),
// one row per job that asks for more than the default; a job without a row has the default.
inline constexpr int kSandboxSchemaVersion = 9;
inline constexpr const char* kMigrateV9Sandbox = R"sql(
CREATE TABLE job_sandbox (
  job_id        INTEGER PRIMARY KEY REFERENCES jobs(id),
  host_network  INTEGER NOT NULL DEFAULT 0
);
)sql";
// ---- end of schema version 9

// ---- Schema version 10 (issue 17, services): self-contained so it can be renumbered at merge.
// From version 9 to 10: a service job's [service] table (spec::ServiceSpec, protocol by its
// name), one row per service; a job without a row is a batch job.
inline constexpr int kServiceSchemaVersion = 10;
inline constexpr const char* kMigrateV10Service = R"sql(
CREATE TABLE job_service (
  job_id                INTEGER PRIMARY KEY REFERENCES jobs(id),
  min_replicas          INTEGER NOT NULL,
  max_replicas          INTEGER NOT NULL,
  protocol              TEXT    NOT NULL,
  model                 TEXT    NOT NULL DEFAULT '',
  health                TEXT    NOT NULL,
  max_concurrent        INTEGER NOT NULL,
  drain_seconds         INTEGER NOT NULL,
  replicas_per_machine  INTEGER NOT NULL,
  replicas              INTEGER NOT NULL DEFAULT -1  -- as scaled (idlepool scale); -1: min
);
)sql";
// ---- end of schema version 10

// ---- Schema version 11 (issue 18, per-task inputs): self-contained so it can be renumbered at
// merge. From version 10 to 11: each task's own inputs (store::TaskInputRow), one row per file,
// indexed by blob for collection; and each job's totals of them, one row per job that has some.
inline constexpr int kTaskInputsSchemaVersion = 11;
inline constexpr const char* kMigrateV11TaskInputs = R"sql(
CREATE TABLE task_inputs (
  job_id  INTEGER NOT NULL REFERENCES jobs(id),
  idx     INTEGER NOT NULL,
  path    TEXT    NOT NULL,
  sha256  TEXT    NOT NULL,
  size    INTEGER NOT NULL,
  mode    INTEGER NOT NULL,
  PRIMARY KEY (job_id, idx, path)
) WITHOUT ROWID;
CREATE INDEX task_inputs_by_blob ON task_inputs(sha256);
CREATE TABLE job_task_inputs (
  job_id  INTEGER PRIMARY KEY REFERENCES jobs(id),
  files   INTEGER NOT NULL,
  bytes   INTEGER NOT NULL
);
)sql";
// ---- end of schema version 11

// ---- Schema version 12 (issue 18, pipelines): self-contained so it can be renumbered at merge.
// From version 11 to 12: the jobs each job runs after (JobSpec.after resolved to ids at submit),
// one row per pair; a job without rows runs after none. Kept apart from the spec so Load gives
// every job's (finished ones too: status shows them) without reading specs.
inline constexpr int kPipelineSchemaVersion = 12;
inline constexpr const char* kMigrateV12Pipeline = R"sql(
CREATE TABLE job_after (
  job_id    INTEGER NOT NULL REFERENCES jobs(id),
  after_id  INTEGER NOT NULL,
  PRIMARY KEY (job_id, after_id)
);
)sql";
// ---- end of schema version 12

// ---- Schema version 13 (issue 32, a shared pool): who submitted each job (the token's user) and
// its priority among that user's jobs. Every job submitted from version 13 on has a row; older
// jobs have none (user '', priority 0). Apart from jobs for the reason of kSchemaV1's note.
inline constexpr int kOwnerSchemaVersion = 13;
inline constexpr const char* kMigrateV13Owner = R"sql(
CREATE TABLE job_owner (
  job_id    INTEGER PRIMARY KEY REFERENCES jobs(id),
  user      TEXT    NOT NULL,
  priority  INTEGER NOT NULL DEFAULT 0
);
)sql";
// ---- end of schema version 13

// ---- Schema version 14 (issue 32): users' shares and quotas (`idlepool users set`), and their
// decayed usage as the coordinator last saved it (all rows share one as_of_ms), so fair share
// survives a restart. A user without a users row has share 1 and no quota.
inline constexpr int kUsersSchemaVersion = 14;
inline constexpr const char* kMigrateV14Users = R"sql(
CREATE TABLE users (
  user              TEXT    PRIMARY KEY,
  share             REAL    NOT NULL DEFAULT 1,
  max_slots         INTEGER NOT NULL DEFAULT 0,
  max_gpus          INTEGER NOT NULL DEFAULT 0,
  max_queued_tasks  INTEGER NOT NULL DEFAULT 0,
  max_stored_bytes  INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE TABLE user_usage (
  user      TEXT    PRIMARY KEY,
  slot_s    REAL    NOT NULL,
  gpu_s     REAL    NOT NULL,
  as_of_ms  INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE usage_days (
  day        INTEGER NOT NULL,
  user       TEXT    NOT NULL,
  worker     TEXT    NOT NULL,
  slot_ms    INTEGER NOT NULL DEFAULT 0,
  gpu_ms     INTEGER NOT NULL DEFAULT 0,
  attempts   INTEGER NOT NULL DEFAULT 0,
  tasks      INTEGER NOT NULL DEFAULT 0,
  preempted  INTEGER NOT NULL DEFAULT 0,
  bytes_in   INTEGER NOT NULL DEFAULT 0,
  bytes_out  INTEGER NOT NULL DEFAULT 0,
  requests   INTEGER NOT NULL DEFAULT 0,
  tokens     INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (day, user, worker)
) WITHOUT ROWID;
)sql";
// Each attempt that ends adds to its (UTC day of its end, user, worker) row of usage_days, in
// AttemptEnded's transaction: what it held (slots and GPUs times its wall time), whether it
// succeeded or was preempted, the bytes it moved. Kept when its job is deleted; trimmed with
// --keep-finished (TrimUsage).
inline constexpr const char* kAddUsageSql = R"sql(
INSERT INTO usage_days (day, user, worker, slot_ms, gpu_ms, attempts, tasks, preempted,
                        bytes_in, bytes_out)
SELECT a.ended_ms / 86400000, COALESCE(o.user, ''), a.worker,
       MAX(a.ended_ms - a.started_ms, 0) * j.cpus, MAX(a.ended_ms - a.started_ms, 0) * j.gpus,
       1, a.outcome = 'succeeded', a.outcome = 'preempted', a.input_bytes, a.output_bytes
FROM attempts a JOIN jobs j ON j.id = a.job_id LEFT JOIN job_owner o ON o.job_id = a.job_id
WHERE a.id = ?
ON CONFLICT (day, user, worker) DO UPDATE SET
  slot_ms = slot_ms + excluded.slot_ms, gpu_ms = gpu_ms + excluded.gpu_ms,
  attempts = attempts + 1, tasks = tasks + excluded.tasks,
  preempted = preempted + excluded.preempted, bytes_in = bytes_in + excluded.bytes_in,
  bytes_out = bytes_out + excluded.bytes_out
)sql";
// A gateway's served requests and tokens: (day, user, worker, requests, tokens).
inline constexpr const char* kAddServedSql = R"sql(
INSERT INTO usage_days (day, user, worker, requests, tokens) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (day, user, worker) DO UPDATE SET
  requests = requests + excluded.requests, tokens = tokens + excluded.tokens
)sql";
// ---- end of schema version 14

// Every step from version 1 up, in order: a fresh file runs kSchemaV1 and then all of them; an
// older file, the steps above its version, each in its own transaction.
struct Migration {
  int to;
  const char* ddl;
};
inline constexpr Migration kMigrations[] = {{2, kMigrateV2},
                                            {3, kMigrateV3},
                                            {kTimingSchemaVersion, kMigrateV4},
                                            {kWorkersSchemaVersion, kMigrateV5Workers},
                                            {6, kMigrateV6},
                                            {kEventsSchemaVersion, kMigrateV7Events},
                                            {kGpusSchemaVersion, kMigrateV8Gpus},
                                            {kSandboxSchemaVersion, kMigrateV9Sandbox},
                                            {kServiceSchemaVersion, kMigrateV10Service},
                                            {kTaskInputsSchemaVersion, kMigrateV11TaskInputs},
                                            {kPipelineSchemaVersion, kMigrateV12Pipeline},
                                            {kOwnerSchemaVersion, kMigrateV13Owner},
                                            {kUsersSchemaVersion, kMigrateV14Users}};
static_assert(std::size(kMigrations) + 1 == kSchemaVersion, "one migration step per version");

}  // namespace idlepool::store::internal
