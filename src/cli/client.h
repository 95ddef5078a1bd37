// Client side of the Jobs and Blobs services, as used by the CLI subcommands and `idlepool run`.
//
// Thread safety: a PoolClient may be shared between threads (gRPC stubs are thread-safe).
// Errors: gRPC failures map to absl codes (PERMISSION_DENIED -> kPermissionDenied, UNAVAILABLE
// -> kUnavailable, ...), said as client_error.h says them: what failed and what to do.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "blob/blob.h"
#include "idlepool.grpc.pb.h"
#include "spec/spec.h"

namespace idlepool::cli {

// The profile key (spec/profile_key.h) the coordinator will give `spec` when it is submitted:
// hashes the spec's input files (Input::source) as Submit does. Errors: the file's (kNotFound...).
[[nodiscard]] absl::StatusOr<std::string> ProfileKeyOf(const spec::JobSpec& spec);

// gRPC's own log lines (e.g. "E1203 ... Handshake failed") go to spdlog at debug level: a client
// command says what failed in one line of its own (client_error.h). Process-wide; idempotent.
void QuietGrpcLog();

// Transfer progress for a meter (transfer_meter.h): blob bytes done of the total, called on the
// caller's thread after every chunk moved and after every file.
using TransferProgress = std::function<void(uint64_t done, uint64_t total)>;

class PoolClient {
 public:
  // TLS verified against `ca_pem` (the pool CA, checked against the token's pin by
  // credentials.h); every call carries the access token.
  PoolClient(const std::string& address, std::string token, const std::string& ca_pem);

  // Hashes and uploads the spec's inputs and its per-task inputs (JobSpec::task_inputs, expanded
  // for every task: spec::ExpandTaskInputs' errors name the task and the pattern), each distinct
  // blob once, skipping blobs the coordinator already has; then submits. The job is durable when
  // this returns OK. `progress`: the uploads' (bytes of the blobs it lacks).
  [[nodiscard]] absl::StatusOr<v1::SubmitJobReply> Submit(const spec::JobSpec& spec,
                                                          const std::string& source_file,
                                                          const TransferProgress& progress = {});
  // Plans the job on the pool (Pool.PlanJob): hashes the spec's inputs (uploads nothing) and sends
  // it with `extras` (workers, task_s, output bytes; its spec field is replaced).
  [[nodiscard]] absl::StatusOr<v1::PlanReply> PlanJob(const spec::JobSpec& spec,
                                                     const v1::PlanRequest& extras);
  [[nodiscard]] absl::StatusOr<v1::JobStatus> GetJob(uint64_t job);
  [[nodiscard]] absl::StatusOr<v1::ListJobsReply> ListJobs();
  [[nodiscard]] absl::StatusOr<v1::ListWorkersReply> ListWorkers();
  [[nodiscard]] absl::StatusOr<std::string> Cancel(uint64_t job);
  // Removes a finished job and its blobs nothing else uses (Jobs.DeleteJob); `cancel` cancels a
  // running one first. kFailedPrecondition for a running job without it, kNotFound.
  [[nodiscard]] absl::StatusOr<v1::DeleteJobReply> DeleteJob(uint64_t job, bool cancel);
  // A service now runs `replicas` replicas (Jobs.ScaleService). Errors: kNotFound, kInvalidArgument
  // (not a service, or more than its max_replicas), kFailedPrecondition (it has ended).
  [[nodiscard]] absl::StatusOr<v1::ScaleReply> Scale(uint64_t job, uint32_t replicas);
  // A job's priority among its user's jobs (Jobs.SetPriority); the previous one. Errors:
  // kNotFound, kPermissionDenied (another user's job), kInvalidArgument (out of -1000..1000).
  [[nodiscard]] absl::StatusOr<v1::PriorityReply> SetPriority(uint64_t job, int32_t priority);
  // Users with their shares, quotas and usage (Jobs.ListUsers).
  [[nodiscard]] absl::StatusOr<v1::ListUsersReply> ListUsers();
  // What ended attempts used since a time, by "user" or "worker" (Jobs.GetUsage).
  [[nodiscard]] absl::StatusOr<v1::UsageReply> GetUsage(int64_t since_unix_s,
                                                        const std::string& by);
  // Services and their replicas (Jobs.ListServices).
  [[nodiscard]] absl::StatusOr<v1::ListServicesReply> ListServices();
  // The history of succeeded attempts (Pool.GetProfile): of `job`, or of every job with
  // `profile_key` when job is 0. max_samples 0: the coordinator's default (200).
  [[nodiscard]] absl::StatusOr<v1::ProfileReply> GetProfile(const std::string& profile_key,
                                                            uint64_t job, uint32_t max_samples);
  // Every attempt of `job` with its worker and times, and its workers' events
  // (Pool.GetJobTimeline); max_attempts 0: the coordinator's default (the newest 20,000).
  // Errors: kNotFound (no such job), kUnimplemented (a coordinator without timelines).
  [[nodiscard]] absl::StatusOr<v1::JobTimeline> GetJobTimeline(uint64_t job,
                                                               uint32_t max_attempts);
  // A page of the job's failed tasks after task `after` (from the first when absent), at most
  // `limit` (0: the coordinator's default, 100; it caps it at 1,000).
  [[nodiscard]] absl::StatusOr<v1::FailedTasksPage> ListFailedTasks(uint64_t job,
                                                                    std::optional<uint32_t> after,
                                                                    uint32_t limit);
  // One task's newest attempts with their log tails. Errors: kNotFound (no such job or task).
  [[nodiscard]] absl::StatusOr<v1::TaskLog> GetTaskLog(uint64_t job, uint32_t task);
  // A task's output (Jobs.TaskLogs), each piece handed to `on_data` as it comes; with
  // req.follow() the call has no deadline and returns once the task is finished. Errors:
  // kNotFound (no such job, task or attempt), kInvalidArgument (a job of several tasks and no
  // task), kResourceExhausted (too many readers follow logs).
  [[nodiscard]] absl::Status TaskLogs(const v1::LogRequest& req,
                                      const std::function<void(const v1::LogData&)>& on_data);

  // Polls until the job is no longer running, calling `progress` on every change and, when
  // `every` is above zero, also when `every` has passed since its last call (for a display
  // whose ETA and worker states move without the job changing).
  [[nodiscard]] absl::StatusOr<v1::JobStatus> Wait(
      uint64_t job, const std::function<void(const v1::JobStatus&)>& progress,
      std::chrono::milliseconds every = std::chrono::milliseconds(0));

  // Downloads every committed output into `out_dir` (flat; if two tasks wrote the same path,
  // each task's files go to task-NNNNNN/ instead). Files already there with the right hash are
  // kept. Returns the paths written, relative to out_dir. `progress`: over every output's bytes
  // (kept files count as done).
  [[nodiscard]] absl::StatusOr<std::vector<std::string>> Fetch(
      uint64_t job, const std::string& out_dir, const TransferProgress& progress = {});

 private:
  std::unique_ptr<grpc::ClientContext> Context() const;
  // A failed call said so that a person can act on it (client_error.h).
  absl::Status CallError(const grpc::Status& st, const std::string& what) const;
  // Uploads each blob of `sources` (sha256 -> a file holding it) the coordinator lacks, once.
  absl::Status UploadMissing(const std::map<std::string, std::string>& sources,
                             const std::map<std::string, blob::FileDigest>& digests,
                             const TransferProgress& progress);
  std::string address_;  // host:port, for messages
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Jobs::Stub> stub_;    // the clients' calls
  std::unique_ptr<v1::Blobs::Stub> blobs_;  // inputs up, outputs down
  std::string token_;
};

}  // namespace idlepool::cli
