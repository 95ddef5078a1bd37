// JSON views of the pool's read replies, shared by the CLI (`status --json`, `workers --json`,
// `plan --json`) and the coordinator's HTTP API (/api/v1/...), so both print the same objects.
//
// Numbers stay numbers: protobuf's own JSON mapping would quote 64-bit integers. A non-finite
// double (an infinite makespan) is written as null. Pure functions; thread-safe.
#pragma once

#include <string>

#include "idlepool.pb.h"
#include "nlohmann/json.hpp"

namespace idlepool::api {

// A job as `idlepool status N --json` prints it (fields documented in docs/guide/cli.md and
// docs/guide/http-api.md).
nlohmann::json JobJson(const v1::JobStatus& s);

// Why a job's pending tasks wait, in words (JobJson's "waiting", `status`'s "waiting:" line), or
// "" when no connected worker is known to refuse them: "no connected worker has the
// cpus/memory/gpus (with their memory and API) one task needs" (fits_no_worker), or "needs host
// network; no worker allows it (2 refuse it in their policy)" (host_network_refused).
std::string WaitingReason(const v1::JobStatus& s);

// A failed task (JobJson's failed_tasks, which lists the first 20 with more_failed_tasks set
// when there are more): {index, message, attempt, exit_code, outcome}.
nlohmann::json FailedTaskJson(const v1::FailedTask& f);

// A page of failed tasks (`idlepool failures --json`, GET /api/v1/jobs/N/failures):
// {job, total, failed_tasks: [FailedTaskJson...], more, next_after}; next_after is the `after`
// of the next page (null when there is none).
nlohmann::json FailedTasksJson(const v1::FailedTasksPage& p);

// One attempt of a timeline or a task's log (its log tail, when carried, included).
nlohmann::json TimelineAttemptJson(const v1::TimelineAttempt& a);

// A task's log (`idlepool logs --json`, GET /api/v1/jobs/N/tasks/I/log): {job, task, state,
// attempts_total, attempts: [TimelineAttemptJson...]} (the newest 20).
nlohmann::json TaskLogJson(const v1::TaskLog& l);

// {"jobs": [JobJson...]}: `idlepool status --json` and GET /api/v1/jobs.
nlohmann::json JobsJson(const v1::ListJobsReply& r);

// One worker as `idlepool workers --json` lists it.
nlohmann::json WorkerJson(const v1::WorkerInfo& w);

// {"workers": [WorkerJson...]}: `idlepool workers --json` and GET /api/v1/workers.
nlohmann::json WorkersJson(const v1::ListWorkersReply& r);

// What the pool measured of a worker (link, cpu_score, cores, availability), added to `j`;
// link is null when never measured.
void AddMeasurementsJson(const v1::WorkerInfo& w, nlohmann::json& j);

// A prediction (`plan --json` less job, profile_key and calibration_job; `status --json`
// reports it as "prediction").
nlohmann::json PredictionJson(const v1::Prediction& p);

// The sensors a worker last reported; null when it never did. Absent (unknown) readings are
// null.
nlohmann::json SensorsJson(const v1::WorkerInfo& w);

// A job's timeline (GET /api/v1/jobs/N/timeline): {"job": JobJson, "attempts": [...],
// "events": [...], "truncated", "now_ms"}; times are wall clock, Unix ms, as in the proto.
nlohmann::json TimelineJson(const v1::JobTimeline& t);

// Services (`idlepool services --json`; services_json.cc): {"gateway", "services": [{"job",
// "name", "state", "protocol", "model", "replicas", "min_replicas", "max_replicas",
// "max_concurrent", "queue_length", "requests", "errors", "ttft_answers", "ttft_p50_ms",
// "ttft_p95_ms", "replica_status": [{"replica", "attempt", "worker", "state", "in_flight",
// "requests", "errors", "attempts", "ttft_answers", "ttft_p50_ms", "ttft_p95_ms"}]}]}.
// ttft_*: time to first token, the first byte of a 2xx answer's body at the client since its
// request was read (for server-sent events the first event), over the gateway's last 60 s and
// at most 256 answers: how many, and the p50 and p95 in ms (null when none).
nlohmann::json ServicesJson(const v1::ListServicesReply& r);

// {"users": [{user, share, max_slots, max_gpus, max_queued_tasks, max_stored_bytes, usage_slot_s,
// usage_gpu_s, slots, gpus, queued_tasks, starving_s}], "half_life_s", "fair_preemption_after_s"
// (null: off)}: `idlepool users --json`, GET /api/v1/users.
nlohmann::json UsersJson(const v1::ListUsersReply& r);
// {"since_unix_s", "by", "rows": [{key, slot_s, gpu_s, attempts, tasks, preempted, bytes_in,
// bytes_out}]}: `idlepool usage --json`, GET /api/v1/usage.
nlohmann::json UsageJson(const v1::UsageReply& r, const std::string& by);

}  // namespace idlepool::api
