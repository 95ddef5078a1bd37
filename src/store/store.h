// Durable pool state behind one small interface: jobs, tasks, attempts and committed outputs.
//
// Backends: SQLite (the default, WAL mode, one file in the coordinator's data dir) and an
// in-memory store for tests and the simulator. Both pass the same conformance suite
// (tests/unit/store_conformance_test.cc).
//
// Thread safety: every method may be called from any thread; a backend serialises writers
// internally. In the coordinator only the core thread writes; RPC threads read.
//
// Errors: kInvalidArgument for malformed input (e.g. a record naming an unknown job),
// kNotFound for unknown ids, kDataLoss if the store on disk is corrupt or from an unknown schema
// version, kResourceExhausted when the disk is full (a write failed whole: nothing of it is
// stored, and it may be retried once space is freed), kUnavailable/kInternal for other I/O
// failures (the caller must not acknowledge anything whose write failed).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/scheduler.h"
#include "core/types.h"
#include "spec/service.h"

namespace idlepool::store {

// One file of one task's own inputs (spec `task_inputs`, SubmitJobRequest.task_inputs), as the
// coordinator checked it: staged at `path` (relative to the task dir) from blob `sha256`.
struct TaskInputRow {
  uint32_t index = 0;  // task index within the job
  std::string path;
  std::string sha256;
  uint64_t size = 0;     // bytes
  uint32_t mode = 0644;  // permission bits
  bool operator==(const TaskInputRow&) const = default;
};

// A job's per-task inputs in all.
struct TaskInputTotals {
  uint64_t files = 0;
  uint64_t bytes = 0;
};

// A job as submitted. `spec` is opaque to the store (the coordinator keeps the serialized
// protobuf JobSpec there); `sched` is what the scheduler core needs (its `job` field is ignored
// by InsertJob and filled in on reads).
struct NewJob {
  std::string name;
  std::string spec;  // bytes
  core::JobSubmitted sched;
  std::string profile_key;   // spec/profile_key.h; may be empty
  uint64_t input_bytes = 0;  // total size of the job's inputs
  uint32_t input_files = 0;
  // Set for a service (its [service] table, also inside `spec`): kept in a table of its own,
  // so every job read (headers included) has it without parsing the spec.
  std::optional<spec::ServiceSpec> service;
  // Each task's own inputs (issue 18), by (index, path): written with the job, never in `spec`
  // (a job of 100,000 tasks would make every spec read carry them).
  std::vector<TaskInputRow> task_inputs;
};

struct JobRecord {
  core::JobId id = 0;
  std::string name;
  std::string spec;  // empty in headers (GetJobHeader, ListJobs)
  core::JobSubmitted sched;
  core::JobState state = core::JobState::kRunning;
  int64_t submitted_ms = 0;  // wall clock, Unix ms (display only, never used for timeouts)
  int64_t finished_ms = 0;   // 0 while running
  // As submitted (NewJob); empty and 0 for jobs stored before the store kept them.
  std::string profile_key;
  uint64_t input_bytes = 0;
  uint32_t input_files = 0;
  std::optional<spec::ServiceSpec> service;  // as submitted (NewJob); empty for a batch job
};

struct AttemptRecord {
  core::AttemptId attempt = 0;
  core::TaskKey task;
  core::WorkerName worker;
  core::AttemptOutcome outcome = core::AttemptOutcome::kRunning;
  int exit_code = 0;
  std::string message;
  int64_t started_ms = 0;  // wall clock, Unix ms
  int64_t ended_ms = 0;    // 0 while running
  uint32_t suspensions = 0;  // AttemptSuspended records
  int64_t lost_ms = 0;       // AttemptEnded::lost
  core::Transfer transfer;   // AttemptEnded::transfer
  core::AttemptTiming timing;  // AttemptEnded::timing
  std::string log_tail;       // AttemptEnded::log_tail (empty while running)
  std::vector<uint32_t> gpus;  // AttemptCreated::gpus: the worker's devices it owned
};

// Which succeeded attempts ListSucceededAttempts returns: those of job `job` when it is not 0,
// else those of every job whose profile_key equals `profile_key` (which must then be non-empty).
struct SucceededAttemptsQuery {
  std::string profile_key;
  core::JobId job = 0;
  size_t limit = 200;  // at most this many, the newest
};

// Something that happened to a worker (v1::WorkerEvent): kind "owner" (its owner policy changed:
// state run/suspend/vacate, cause, reason) or a session change ("connected", "disconnected",
// "lost", "left"; state, cause and reason empty). Written by the coordinator off the core thread
// (AppendWorkerEvents), read for job timelines.
struct WorkerEvent {
  std::string worker;
  int64_t at_ms = 0;  // wall clock, Unix ms
  std::string kind;
  std::string state;
  std::string cause;
  std::string reason;
  bool operator==(const WorkerEvent&) const = default;
};

// Which events ListWorkerEvents returns: those of `workers` with from_ms <= at_ms <= to_ms, at
// most `limit` of them (the newest when there are more).
struct WorkerEventsQuery {
  std::vector<std::string> workers;
  int64_t from_ms = 0;
  int64_t to_ms = INT64_MAX;
  size_t limit = 100000;
};

// Which failed tasks ListFailedTasks returns: those of `job` with an index above `after_task`
// (every one when it is absent), by index, at most `limit`.
struct FailedTasksQuery {
  core::JobId job = 0;
  std::optional<uint32_t> after_task;
  size_t limit = 100;
};

// ListTaskAttempts: the task's state, its newest attempts and how many it has in all.
struct TaskAttempts {
  core::TaskState state = core::TaskState::kPending;
  std::vector<AttemptRecord> attempts;
  uint64_t total = 0;
};

struct TaskOutput {
  uint32_t index = 0;  // task index within the job
  core::OutputFile file;
};

struct TaskRecord {
  core::TaskKey task;
  core::TaskState state = core::TaskState::kPending;
  uint32_t failures = 0;
  core::AttemptId committed_attempt = 0;
};

// What the pool measured of one worker (issue 6: link, speed, availability), one row per worker
// name, written by the coordinator when a measurement or the availability changes. Unknown
// measurements are 0.
struct WorkerRecord {
  std::string worker;  // primary key
  std::string hostname;
  // Its link to the coordinator as it last measured it; link_measured_ms 0 = never.
  int64_t link_measured_ms = 0;  // wall clock, Unix ms
  int64_t rtt_us = 0;
  int64_t down_bytes_per_s = 0;
  int64_t up_bytes_per_s = 0;
  int64_t probe_bytes = 0;
  // Calibration: MB/s of SHA-256 on one core, and its machine's logical CPUs.
  double cpu_score = 0;
  uint32_t cores = 0;
  // Availability aggregates (coordinator/availability.h), the period in progress included.
  int64_t first_seen_ms = 0;  // wall clock, Unix ms
  int64_t up_ms = 0;
  int64_t down_ms = 0;
  uint32_t up_periods = 0;    // ended
  uint32_t down_periods = 0;  // ended
  int64_t updated_ms = 0;     // wall clock, Unix ms, of this write
};

// The blobs a stored spec (`jobs.spec`, opaque to the store) names as the job's inputs: the
// coordinator decodes it (v1::JobSpec). Must not throw; a spec it cannot read names none.
using SpecBlobs = std::function<std::vector<std::string>(const std::string& spec)>;

// A user's settings (`idlepool users set`): share and quotas, 0 = no limit.
struct UserRow {
  std::string user;
  double share = 1.0;
  uint32_t max_slots = 0;
  uint32_t max_gpus = 0;
  uint64_t max_queued_tasks = 0;
  uint64_t max_stored_bytes = 0;
  bool operator==(const UserRow&) const = default;
};
// A user's decayed usage (core::UsageLedger) as the coordinator last saved it.
struct UsageBalance {
  std::string user;
  double slot_s = 0;
  double gpu_s = 0;
  bool operator==(const UsageBalance&) const = default;
};
// What attempts that ended used, summed over a key (a user, or a worker) since some day.
struct UsageTotals {
  std::string key;
  int64_t slot_ms = 0;                              // slots x wall time of its attempts
  int64_t gpu_ms = 0;                               // GPUs x wall time
  uint64_t attempts = 0, tasks = 0, preempted = 0;  // ended, succeeded, preempted
  uint64_t bytes_in = 0, bytes_out = 0;             // moved to and from workers
  uint64_t requests = 0, tokens = 0;                // served by a gateway (AddServed)
  bool operator==(const UsageTotals&) const = default;
};
// What a gateway served one user through one worker's replicas ("" when not through a tunnel).
struct ServedRow {
  std::string user;
  std::string worker;
  uint64_t requests = 0, tokens = 0;
};
enum class UsageBy : uint8_t { kUser, kWorker };
struct UsersState {
  std::vector<UserRow> users;          // by name
  std::vector<UsageBalance> balances;  // by name
  int64_t balances_as_of_ms = 0;       // wall clock of the save; 0: none saved
};

class Store {
 public:
  virtual ~Store() = default;

  // Inserts a job and its sched.task_count pending tasks in one transaction and returns its id
  // (1, 2, 3, ... in submission order, never reused). When this returns OK the job is durable.
  // `now_ms` is the wall-clock submission time.
  [[nodiscard]] virtual absl::StatusOr<core::JobId> InsertJob(const NewJob& job,
                                                              int64_t now_ms) = 0;

  // Persists, in one transaction, every record decision of one scheduler batch (AttemptCreated,
  // AttemptEnded, TaskChanged, JobChanged, WorkerLost, AttemptSuspended, TaskCheckpointed);
  // message decisions are ignored. `now_ms`
  // (wall clock) stamps attempt start/end and job finish times. Either all records are durable
  // or none is.
  [[nodiscard]] virtual absl::Status Apply(const std::vector<core::Decision>& records,
                                           int64_t now_ms) = 0;

  // A service now runs `replicas` replicas (idlepool scale): Load() gives its ServiceShape that
  // many from now on. Errors: kInvalidArgument naming the job when it is not a service.
  [[nodiscard]] virtual absl::Status ScaleService(core::JobId job, uint32_t replicas) = 0;

  // Everything the scheduler needs after a restart: jobs (with counters and lost workers
  // recomputed from attempts), every task, the attempts still running, next_attempt_id.
  [[nodiscard]] virtual absl::StatusOr<core::RestoredState> Load() = 0;

  // Reads.

  // The whole job, spec included. The spec can be large (tens of MB for a job of 100k items):
  // call this only when the spec is needed, and GetJobHeader otherwise.
  [[nodiscard]] virtual absl::StatusOr<JobRecord> GetJob(core::JobId job) = 0;
  // The job without its spec: every field as GetJob returns it except `spec`, which is left
  // empty. The spec is never copied (the SQLite backend does not select its column), so this is
  // what status and wait polls should use. Errors as GetJob (kNotFound for an unknown id).
  [[nodiscard]] virtual absl::StatusOr<JobRecord> GetJobHeader(core::JobId job) = 0;
  // Every job, by id, as headers: like GetJobHeader, `spec` is empty and never read. Use GetJob
  // for the spec of one job.
  [[nodiscard]] virtual absl::StatusOr<std::vector<JobRecord>> ListJobs() = 0;
  [[nodiscard]] virtual absl::StatusOr<std::vector<TaskRecord>> ListTasks(core::JobId job) = 0;
  // By attempt id.
  [[nodiscard]] virtual absl::StatusOr<std::vector<AttemptRecord>> ListAttempts(
      core::JobId job) = 0;
  // Attempts that ended kSucceeded (late successes included), newest first: by ended_ms
  // descending, then attempt id descending. Their log_tail is left empty (planner samples
  // never need it). kInvalidArgument when neither a job nor a key is
  // given; kNotFound for an unknown job (an unknown key just matches nothing).
  [[nodiscard]] virtual absl::StatusOr<std::vector<AttemptRecord>> ListSucceededAttempts(
      const SucceededAttemptsQuery& query) = 0;
  // The last attempt of each failed task of the query (the attempt that failed it), by task
  // index, log tail included; a failed task with no attempt (none is stored) is skipped. One
  // page: cost and memory follow `limit`, not the job's size. kNotFound for an unknown job.
  [[nodiscard]] virtual absl::StatusOr<std::vector<AttemptRecord>> ListFailedTasks(
      const FailedTasksQuery& query) = 0;
  // One task's state and its newest `limit` attempts, by attempt id, log tails included, and how
  // many it has in all. kNotFound for an unknown job or task index.
  [[nodiscard]] virtual absl::StatusOr<TaskAttempts> ListTaskAttempts(core::TaskKey task,
                                                                      size_t limit) = 0;
  // Committed outputs, by (task index, path).
  [[nodiscard]] virtual absl::StatusOr<std::vector<TaskOutput>> ListOutputs(core::JobId job) = 0;
  // The task's latest checkpoint (TaskCheckpointed), by path; empty when it has none. kNotFound
  // for an unknown job.
  [[nodiscard]] virtual absl::StatusOr<std::vector<core::OutputFile>> GetCheckpoint(
      core::TaskKey task) = 0;

  // Worker measurements (WorkerRecord). Inserts or replaces each row by worker name, all in one
  // transaction. kInvalidArgument for an empty name or negative figures. Not part of Apply's group
  // commit: the coordinator writes these rows from its own thread.
  [[nodiscard]] virtual absl::Status PutWorkers(const std::vector<WorkerRecord>& workers) = 0;
  // Every worker row, by name.
  [[nodiscard]] virtual absl::StatusOr<std::vector<WorkerRecord>> ListWorkers() = 0;
  // The row of one worker; nullopt when it has none.
  [[nodiscard]] virtual absl::StatusOr<std::optional<WorkerRecord>> GetWorker(
      const std::string& worker) = 0;

  // Worker events (WorkerEvent), appended in one transaction in the given order; not part of
  // Apply's group commit. kInvalidArgument for an empty worker or kind (nothing of the batch is
  // written). ListWorkerEvents: by at_ms, then in the order appended; an empty `workers` matches
  // nothing. TrimWorkerEvents bounds their growth: deletes events with at_ms < before_ms, then the
  // oldest beyond the newest max_rows.
  [[nodiscard]] virtual absl::Status AppendWorkerEvents(const std::vector<WorkerEvent>& events) = 0;
  [[nodiscard]] virtual absl::StatusOr<std::vector<WorkerEvent>> ListWorkerEvents(
      const WorkerEventsQuery& query) = 0;
  [[nodiscard]] virtual absl::Status TrimWorkerEvents(int64_t before_ms, size_t max_rows) = 0;

  // A job's makespan prediction (the coordinator's serialized v1::Prediction, opaque here), made
  // once per job and replaced if made again. kNotFound for an unknown job. Not part of Apply's
  // group commit. GetJobPrediction: the bytes, empty when the job has none.
  [[nodiscard]] virtual absl::Status PutJobPrediction(core::JobId job, const std::string& bytes) = 0;
  [[nodiscard]] virtual absl::StatusOr<std::string> GetJobPrediction(core::JobId job) = 0;

  // Per-task inputs (NewJob::task_inputs). ListTaskInputs: of `job`, or of its task `task` only,
  // by (index, path); empty when it has none; kNotFound for an unknown job. TaskInputTotals:
  // their count and bytes (zeros when none). Collection reads their blobs in ReferencedBlobs.
  [[nodiscard]] virtual absl::StatusOr<std::vector<TaskInputRow>> ListTaskInputs(
      core::JobId job, std::optional<uint32_t> task) = 0;
  [[nodiscard]] virtual absl::StatusOr<TaskInputTotals> GetTaskInputTotals(core::JobId job) = 0;
  // Collection (issue 18; blob/collect.h). Neither is part of Apply's group commit.
  //
  // The blobs the store references, read in one transaction: every job's inputs (its spec,
  // through `spec_blobs`), per-task inputs, outputs and checkpoints. THE one place where a table
  // that names blobs must be added (sqlite_store_gc.cc, memory_store_gc.cc): a blob missing here is
  // collected.
  [[nodiscard]] virtual absl::StatusOr<std::set<std::string>> ReferencedBlobs(
      const SpecBlobs& spec_blobs) = 0;
  // Removes a finished job in one transaction: its jobs row, tasks, attempts, outputs,
  // checkpoints and every job_* side table's row; its id is never reused. Returns the blobs those
  // rows named (inputs through `spec_blobs`, outputs, checkpoints), for the caller to collect
  // what nothing else references. kNotFound for an unknown job; kFailedPrecondition while it
  // is running (nothing removed).
  [[nodiscard]] virtual absl::StatusOr<std::set<std::string>> DeleteJob(
      core::JobId job, const SpecBlobs& spec_blobs) = 0;

  // A shared pool (issue 32). None is part of Apply's group commit. PutUser inserts or replaces
  // a user's row (kInvalidArgument for an empty name or a share that is not a finite number >
  // 0). PutUsageBalances replaces every balance with `balances`, all as of `as_of_ms`. LoadUsers
  // reads both. SetJobPriority changes a job's priority (kNotFound for an unknown job).
  [[nodiscard]] virtual absl::Status PutUser(const UserRow& user) = 0;
  [[nodiscard]] virtual absl::Status PutUsageBalances(const std::vector<UsageBalance>& balances,
                                                      int64_t as_of_ms) = 0;
  [[nodiscard]] virtual absl::StatusOr<UsersState> LoadUsers() = 0;
  [[nodiscard]] virtual absl::Status SetJobPriority(core::JobId job, int32_t priority) = 0;
  // Usage by day (every attempt that ends adds to its day's row, by the wall clock of its end, in
  // UTC days since 1970; a late success adds nothing more). ListUsage sums the days from
  // `since_day` on, by key. TrimUsage deletes the days before `before_day`.
  [[nodiscard]] virtual absl::StatusOr<std::vector<UsageTotals>> ListUsage(int64_t since_day,
                                                                           UsageBy by) = 0;
  [[nodiscard]] virtual absl::Status TrimUsage(int64_t before_day) = 0;
  // Adds a gateway's served requests and tokens to day `day`'s rows, in one transaction.
  // kInvalidArgument for a row without a user name (1..64 bytes) or a worker name over 64 bytes.
  [[nodiscard]] virtual absl::Status AddServed(int64_t day, const std::vector<ServedRow>& rows) = 0;
};

// Opens (creating if needed) the SQLite store at `path` in WAL mode with synchronous=FULL, so an
// acknowledged write survives power loss, not just a process crash.
[[nodiscard]] absl::StatusOr<std::unique_ptr<Store>> OpenSqliteStore(const std::string& path);

// A store that lives in memory only; same semantics, nothing durable across processes.
std::unique_ptr<Store> NewMemoryStore();

}  // namespace idlepool::store
