// The scheduler core's events: what the shell (the coordinator, the simulator, tests) tells
// core::Scheduler happened. Each is a value type; Scheduler::Apply(event, now) takes one. The
// rules each event follows are in core/scheduler.h's header comment, which this file is part of
// (split out of it to keep each file to one screenful of ideas).
//
// Thread safety: plain values, no shared state.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/defaults.h"
#include "core/ordering.h"
#include "core/types.h"

namespace idlepool::core {
// ---------------------------------------------------------------------------------------------
// Events (inputs)

// A service (a job spec's [service] table; docs/guide/job-spec.md): its tasks are replicas,
// long-running attempts that never succeed or fail. Task i is replica i; the job has max_replicas
// tasks and runs the first `replicas` of them. See "Services" above.
struct ServiceShape {
  uint32_t replicas = 1;     // replicas wanted now, <= task_count (ScaleService changes it)
  uint32_t per_machine = 1;  // at most this many of its replicas run on one worker; >= 1
};

// Retries of a batch job's tasks (its spec's [retry] backoff_s and max_backoff_s): see
// "Retries" above. Zero backoff: a failed task is pending again at once.
struct RetryBackoff {
  Millis backoff{0};  // the wait after the first failure; doubles with each failure after it
  Millis max{0};      // the cap of the wait (jitter included)
  bool operator==(const RetryBackoff&) const = default;
};

struct JobSubmitted {
  JobId job = 0;
  uint32_t task_count = 0;   // > 0
  Resources resources;       // per attempt
  uint32_t max_attempts = 3; // failures allowed per task before the task fails; >= 1
  Millis timeout{0};         // per attempt; 0 = none. Enforced by the worker; the core kills an
                             // attempt still running at timeout + lease_timeout as a backstop.
  // The blobs every attempt stages (inputs): placement prefers workers that already hold them.
  std::vector<BlobRef> inputs;
  std::optional<ServiceShape> service{};  // set: a service (task_count = its max_replicas)
  // Each task's own inputs (spec `task_inputs`), sorted by (task, blob): only that task's
  // attempts stage them, and its placement prefers workers that hold them too.
  std::vector<TaskBlob> task_inputs{};
  RetryBackoff retry{};  // batch jobs only (a service restarts its replicas on its own rules)
  // The jobs it runs after (see "Pipelines" above): until each of them has succeeded its tasks
  // are never placed. Ids the core does not know do not hold it back.
  std::vector<JobId> after{};
  // A worker on which the job failed this many times, with no success of it there, is held off
  // it (see "Health"); batch jobs only. >= 1.
  uint32_t hold_off_after = kDefaultHoldOffAfter;
  // Who submitted it (the token's user; "" for jobs from before users) and its priority among
  // that user's jobs (spec `priority`, -1000..1000).
  std::string user{};
  int32_t priority = 0;
};

// A worker's measured down rate (coordinator -> worker, bytes per second; 0: unmeasured), from
// its link probes (WorkerMessage.link) or, after a restart, the workers table. Locality counts
// its missing input bytes at this rate (core/link.h). Ignored for an unknown worker.
struct LinkRate {
  WorkerName worker;
  double down_bytes_per_s = 0;
};

// A service now wants `replicas` replicas (clamped to its task count). Ignored for a batch job
// or a job that is not running.
struct ScaleService {
  JobId job = 0;
  uint32_t replicas = 0;
};

struct JobCancelled {
  JobId job = 0;
  std::string reason{};  // carried to JobChanged::reason (empty: the user cancelled it)
};

// A worker opened a session stream. `held` lists the attempts it still has (running, or
// finished with a report not yet acknowledged).
struct WorkerHello {
  WorkerName worker;
  SessionId session = 0;
  std::string boot_id;  // changes whenever the worker process restarts
  Resources capacity;   // cpus = slots offered
  std::vector<AttemptId> held;
  bool accepting = true;  // the worker's owner policy allows new work (see OwnerStateChanged)
  // Held attempts frozen for the owner right now: their timeout clocks stay stopped (a
  // restarted coordinator learns it here; not counted as new suspensions).
  std::vector<AttemptId> frozen;
  // What its blob cache holds now (replaces whatever the core knew of it).
  std::vector<BlobRef> cached;
  // Held attempts that finished and are delivering their outputs (from the worker's durable
  // outbox): even with a new boot id they are not gone, and one declared lost is revived.
  std::vector<AttemptId> delivering;
  // The GPUs it offers (by index; a repeated index counts once). When empty, capacity.gpus
  // anonymous devices 0..n-1 (unknown memory, no API) stand in; when not, capacity.gpus is taken
  // to be gpus.size().
  std::vector<GpuDevice> gpus{};
  // Its owner policy's choice of users (`accept_users`, `refuse_users`): it gets tasks only of
  // users in accept_users (when not empty) and not in refuse_users.
  std::vector<UserName> accept_users{};
  std::vector<UserName> refuse_users{};
};

// The worker's blob cache gained or evicted blobs (ignored unless from its current session).
struct CacheChanged {
  WorkerName worker;
  SessionId session = 0;
  std::vector<BlobRef> added;
  std::vector<std::string> removed;  // sha256
};

// The worker's owner policy now holds exactly these of its GPUs (GpuDevice::index; the owner
// uses them, or they are too hot; owner/gpu_policy.h): no new attempt gets a held device until
// a later GpusHeld frees it. The attempts that own one keep it (the worker suspends or vacates
// them itself, and reports those suspensions through OwnerStateChanged). Indexes the worker
// does not offer are ignored; ignored unless from its current session.
struct GpusHeld {
  WorkerName worker;
  SessionId session = 0;
  std::vector<uint32_t> held;
};

struct WorkerHeartbeat {
  WorkerName worker;
  SessionId session = 0;
};

// The session stream ended (network cut, worker exit). The lease keeps running from the last
// heartbeat: the worker may reconnect and re-adopt its attempts before it expires.
struct SessionClosed {
  WorkerName worker;
  SessionId session = 0;
};

// The worker is stopping (its owner took the machine back, or it was shut down): it gets no
// more work, and the attempts it lists were vacated; they end kPreempted (never a failure) and
// their tasks are pending again at once, without waiting for the lease. Attempts it holds but
// does not list (finished, report on its way) stay until their reports arrive.
struct WorkerLeaving {
  WorkerName worker;
  SessionId session = 0;
  std::vector<AttemptId> vacated;
};

// The worker's owner policy changed its decision (owner/owner_policy.h). A worker that is not
// accepting gets no new attempts; those it runs keep their leases (it still heartbeats). Each
// attempt in `suspended` (frozen by this change) counts one suspension for its job; ids the
// worker does not run are ignored. A frozen attempt's timeout clock (the backstop below) stops
// until the worker accepts work again, as the worker's own timeout does.
struct OwnerStateChanged {
  WorkerName worker;
  SessionId session = 0;
  bool accepting = true;
  std::string state;   // "run", "suspend", "vacate": for display
  std::string reason;  // for display
  std::vector<AttemptId> suspended;
  std::string cause;  // which rule decided (owner/owner_policy.h Cause names): for display
};

// A running attempt saved a checkpoint (blobs already stored by the shell). It replaces the
// task's previous checkpoint (TaskCheckpointed) and marks the attempt's progress, from which
// lost work is measured when its worker is lost. Ignored unless the attempt is current on that
// worker's current session; an attempt that is not is killed (KillAttempt{kStale}).
struct CheckpointSaved {
  WorkerName worker;
  SessionId session = 0;
  AttemptId attempt = 0;
  std::vector<OutputFile> files;  // paths relative to the checkpoint dir; may be empty
};

// kMachineFault: the machine failed the attempt, not the task (disk full): it ends
// AttemptOutcome::kMachineFault, never a failure, and the task is pending again at once.
enum class ReportResult : uint8_t { kSucceeded, kFailed, kTimedOut, kPreempted, kMachineFault };

struct AttemptReport {
  WorkerName worker;
  SessionId session = 0;
  AttemptId attempt = 0;
  ReportResult result = ReportResult::kSucceeded;
  int exit_code = 0;
  std::vector<OutputFile> outputs;  // only for kSucceeded; blobs already stored by the shell
  std::string message;              // short human-readable reason, e.g. "exit code 2"
  // kPreempted only: the checkpoint taken after the task stopped (replaces the task's previous
  // one) and the running time lost since the last checkpoint, as measured by the worker.
  std::optional<std::vector<OutputFile>> checkpoint;
  Millis lost{0};
  Transfer transfer{};  // bytes the attempt moved (added to its job's counters)
  AttemptTiming timing{};  // where its time went (carried to the store, never decided on)
  std::string log_tail{};  // last bytes of its output (carried to the store, never decided on)
  // kMachineFault only: the task's command could not start there (exec failed: no such program,
  // not executable, a library missing). The worker is held off the job at once (see "Health").
  bool cannot_start = false;
  // kFailed only: the coordinator never sent the assignment (too big to send): a failure of the
  // task that says nothing of the worker, so it never counts toward holding it off or unhealthy.
  bool unsent = false;
};

// The pool's admin cleared `worker`'s failures (`idlepool workers reset`): it is healthy again
// and held off no job. Ignored for an unknown worker.
struct WorkerReset {
  WorkerName worker;
};

// A user's share and quotas changed (admin `idlepool users set`): UserSet in core/ordering.h.
// A share that is not a finite number > 0 is ignored (the shell refuses it first).

// A job's priority among its user's jobs changed (`idlepool priority JOB N`); clamped to
// -1000..1000. Ignored for an unknown job.
struct JobPriority {
  JobId job = 0;
  int32_t priority = 0;
};

// Time passed: expire leases, orphaned attempts and timeouts.
struct Tick {};

using Event =
    std::variant<JobSubmitted, JobCancelled, WorkerHello, WorkerHeartbeat, SessionClosed,
                 WorkerLeaving, AttemptReport, Tick, OwnerStateChanged, CheckpointSaved,
                 CacheChanged, GpusHeld, ScaleService, LinkRate, WorkerReset, UserSet, JobPriority>;

}  // namespace idlepool::core
