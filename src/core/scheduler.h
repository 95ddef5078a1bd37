// The pure scheduler core: a state machine over jobs, tasks, attempts, leases and workers.
//
// Scheduler::Apply(event, now) changes the state and returns the decisions the shell must carry
// out, in order. It never reads a clock, sleeps, spawns threads, touches files or sockets, or
// draws random numbers: the same events at the same `now` values give the same decisions, so the
// coordinator, the unit tests and the simulator all drive this one implementation.
//
// Thread safety: none. One thread (the coordinator's core loop, or the simulator) owns a
// Scheduler. Ownership: the Scheduler owns all its state; returned vectors are the caller's.
//
// Decisions come in two kinds:
//   - records to persist (AttemptCreated, AttemptEnded, TaskChanged, JobChanged, WorkerLost):
//     the shell writes all records of one Apply batch in one store transaction, and only then
//   - sends the messages (AssignAttempt, KillAttempt, AckReport, RefuseSession), so nothing a
//     worker is told can be forgotten by a coordinator crash.
//
// Protocol rules implemented here (docs/design.md, "Protocol essentials"):
//   - Fencing: every assignment gets a fresh AttemptId. A report for an attempt that is not the
//     task's current running attempt on that worker, arriving on that worker's current session,
//     is refused (AckReport{accepted=false}) and the attempt is killed (KillAttempt{kStale}).
//     One exception keeps finished work: a kSucceeded report of an attempt that ended kLost (its
//     worker went silent past the lease, e.g. its link was cut while it uploaded outputs), from
//     the same worker on its current session, while the task has not succeeded, failed or been
//     cancelled, commits (AttemptEnded{late}); the task's running attempts are superseded.
//     Better still, a worker that says hello with the same boot id holding such an attempt (or
//     listing it as delivering its outputs, whatever its boot id) while its task is still
//     pending (nobody else took it) gets it back, running (AttemptCreated{revived}): no rerun.
//     A restarted worker's attempts end kLost at its hello and are revived there if delivering.
//     A task's outputs are committed exactly once.
//   - The coordinator's own stalls do not count against workers: a gap between Ticks longer than
//     Options::stall_threshold extends every lease, orphan deadline and attempt clock by the
//     gap, since no heartbeat could be read during it.
//   - Liveness: a worker silent for Options::lease_timeout is lost; its attempts end kLost and
//     their tasks are pending again at once. A worker that says hello again with the same boot
//     id re-adopts the attempts it still holds that are current; anything else it holds is
//     killed. A new boot id means its processes are gone: its attempts are requeued at once.
//   - Failures: only kFailed and kTimedOut count toward max_attempts; preemptions and losses
//     never do. One exception: a task whose worker died while running it on
//     Options::max_workers_lost_in_a_row different workers in a row fails (its last AttemptEnded,
//     kLost, says why), since it most likely crashes its workers and would crash every one that
//     takes it; meanwhile it is kept off the workers it killed (see "Placement"), so a worker
//     restarted at once does not get it straight back. A worker died when its session ended without
//     a goodbye and its lease then ran out (SessionClosed, no WorkerLeaving), or when it said hello
//     with a new boot id before that; silence with the session still open (a machine asleep or cut
//     off) does not count, nor do losses at a coordinator restart or a dropped assignment. "In a
//     row": a success, a failure or a timeout of the task starts the count over, as does a revival
//     of a lost attempt (its worker was alive after all); preemptions, machine faults and losses
//     that do not count neither count nor break the run. The count is not kept in the store: it
//     starts over at a coordinator restart.
//   - Stalls (Options::stall, core/stall.h): a running attempt with no report and no checkpoint for
//     longer than its job's attempt times make plausible (StallLimit; not while frozen for its
//     owner, nor a restored attempt not yet re-adopted) ends kLost with a "stalled: ..." message
//     (a loss: never a failure, never a death of its worker) and is killed (kStale: a late success
//     may still commit); its task is pending again at once. Its worker gets no new attempts for
//     StallRule::avoid (WorkerView::stalled says why); checked at most once a second.
//   - Owners: a worker whose owner policy does not accept work (OwnerStateChanged) gets no new
//     attempts; a vacated attempt reported kPreempted is requeued at once, never a failure.
//   - Placement: pending tasks in (job id, task index) order, each on the free worker that fits
//     it with the highest rank (Policy below; under Policy::Fifo() every rank is equal), then the
//     most free slots, then the worker name. Deterministic: no hash-map order. Locality: for a
//     task with inputs (its job's, or its own: JobSubmitted::task_inputs), free workers that hold
//     (or were just sent) some of them compete with that pick on expected finish = missing input
//     bytes over that worker's link (FetchMs: its LinkRate, else Options::link_bytes_per_ms) +
//     the job's mean runtime / rank; the lowest wins (ties keep the order above). A task is not
//     placed on a worker where it ended kMachineFault, or whose process died running it (see
//     "Failures"), within Options::machine_fault_avoid. A task whose job asks for the host network
//     (Resources::host_network) is placed, backups included, only on a worker whose capacity
//     offers it (its owner policy allows it); JobSummary::host_network_refused says when a job
//     waits for that alone.
//   - GPUs: an attempt of a task with gpus = N gets N of its worker's free devices that have the
//     task's gpu_memory_mb and gpu_api, best fit (the smallest memory that fits, then the lowest
//     index; AttemptCreated/AssignAttempt::gpus). A device belongs to one running attempt at a
//     time and is free again when that attempt ends, however it ends; a restored attempt takes
//     its devices back when its worker re-adopts it, a revived one only if they are still free.
//     A device its worker's owner policy holds (GpusHeld, GpuDevice::held) is not free for new
//     attempts (its owner uses it, or it is too hot) until the worker frees it.
//   - Retries (JobSubmitted::retry, scheduler_retry.cc): a batch task whose attempt ended
//     kFailed or kTimedOut (never a preemption, loss or machine fault) and that may try again is
//     pending again only after RetryWait: backoff x 2^(failures - 1), plus a jitter of up to a
//     quarter of it, capped at max. The jitter is no random draw: it is a hash of (job, task,
//     failures), so the same events give the same decisions. A Tick makes the task placeable once
//     its wait is over. A restored task pending after a failure waits its whole backoff again
//     from the restore (the store does not keep when the wait began).
//   - Health (core/worker_health.h, scheduler_health.cc): failures steer placement. A batch task
//     whose attempt failed or timed out on a worker avoids that worker (every worker it failed
//     on) while another worker could take it now or soon: one that fits the job's resources when
//     idle, is not unhealthy, not held off the job, has not failed the task, and is connected (or
//     disconnected within its lease) or lost within machine_fault_avoid (one kept off the task for
//     machine_fault_avoid counts: that wait is bounded); one that left does not count. With none (a
//     one-worker pool), it retries there after its backoff. A worker on which a job failed
//     JobSubmitted::hold_off_after times with no success of that job there, or on which its
//     command could not start (AttemptReport::cannot_start, a machine fault: no attempt used), is
//     held off the job: none of its tasks while such another worker exists; when every worker
//     that could take them is held off, the hold is ignored (the tasks then fail through
//     max_attempts instead of waiting forever). A worker that failed Options::health.distinct_jobs
//     different jobs in a row (each of which succeeded somewhere) with no success in between is
//     unhealthy: no new attempts for a backoff (10 min doubling to 4 h; WorkerView::unhealthy),
//     cleared by a success or WorkerReset. Preemptions, losses and other machine faults never
//     count. Services are not counted. Not kept in the store: a coordinator restart starts over.
//   - Pipelines (JobSubmitted::after, scheduler_after.cc): a job whose `after` jobs have not all
//     succeeded waits: none of its tasks is placed. When the last of them succeeds its tasks are
//     pending; when one fails or is cancelled it is cancelled (JobChanged::reason says which),
//     which may cancel the jobs that run after it in turn, in the same Apply. A job submitted
//     after jobs already finished starts or is cancelled at once.
//   - Services (JobSubmitted::service): a service's tasks are its replicas. The first
//     ServiceShape::replicas of them are placed like batch tasks, at most per_machine of them on
//     one worker; they are never backed up, never stalled, and teach no speeds. A replica never
//     commits: however its attempt ends, its task is pending again, at once after a preemption,
//     loss or machine fault (its machine's doing), after a backoff when it exited or failed on
//     its own (Options::replica_restart_*). Failures never fail a service. ScaleService changes
//     how many run: a replica beyond the new count is cancelled (KillAttempt{kCancelled}: its
//     worker drains it) and parked, pending but not placed. Only JobCancelled ends a service.
//   - Policies (Options::policy; see Policy for the formulas and where they come from): the core
//     learns each worker's speed and each job's mean task runtime from succeeded attempts, and each
//     worker's up periods from its hellos and departures. It uses them to rank free workers
//     (fast, churn_aware), to leave a slow or short-lived worker idle at a job's tail when faster
//     workers are expected to finish the remaining tasks sooner, and to launch backup attempts for
//     stragglers (speculate). A task then has up to two running attempts: the first success
//     commits, the other ends kCancelled and is killed (KillReason::kSuperseded); the failure,
//     preemption or loss of one leaves the task running on the other.
#pragma once

#include <array>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/churn_table.h"
#include "core/defaults.h"
#include "core/events.h"
#include "core/link.h"
#include "core/ordering.h"
#include "core/rank_index.h"
#include "core/stall.h"
#include "core/types.h"
#include "core/worker_health.h"

namespace idlepool::core {

// ---------------------------------------------------------------------------------------------
// Decisions (outputs)

// Records to persist.
struct AttemptCreated {
  AttemptId attempt = 0;
  TaskKey task;
  WorkerName worker;
  // Revived: the attempt had ended kLost, and its worker came back still holding it while its
  // task waited, pending: it runs again (the store turns its kLost record back into running).
  bool revived = false;
  // The worker's GPUs (GpuDevice::index) it owns until it ends, ascending; empty for none.
  std::vector<uint32_t> gpus{};
};
struct AttemptEnded {
  AttemptId attempt = 0;
  TaskKey task;
  WorkerName worker;
  AttemptOutcome outcome = AttemptOutcome::kRunning;
  int exit_code = 0;
  std::string message;
  // Work lost with this attempt (kPreempted: as the worker measured it; kLost: from its start or
  // last checkpoint to its worker's last heartbeat); 0 otherwise.
  Millis lost{0};
  Transfer transfer{};  // as its worker reported it (zero when no report came)
  // A late success: the attempt had ended kLost (its worker went silent, e.g. while uploading
  // its outputs) and has now reported kSucceeded; the store replaces the kLost record.
  bool late = false;
  AttemptTiming timing{};  // as its worker reported it (zero when no report came)
  std::string log_tail{};  // as its worker reported it (empty when no report came)
};
struct TaskChanged {
  TaskKey task;
  TaskState state = TaskState::kPending;
  uint32_t failures = 0;              // attempts that ended kFailed or kTimedOut
  AttemptId committed_attempt = 0;    // set when state == kSucceeded
  std::vector<OutputFile> outputs;    // set when state == kSucceeded
};
struct JobChanged {
  JobId job = 0;
  JobState state = JobState::kRunning;
  // Why it was cancelled when the core did it (a job it runs after failed or was cancelled:
  // "job 12 failed"); empty otherwise. The shell may reword it with names.
  std::string reason{};
};
struct WorkerLost {
  WorkerName worker;
};
// One more suspension of a running attempt.
struct AttemptSuspended {
  AttemptId attempt = 0;
  TaskKey task;
};
// The task's checkpoint is now `files` (replacing any earlier one), saved by `attempt`.
struct TaskCheckpointed {
  TaskKey task;
  AttemptId attempt = 0;
  std::vector<OutputFile> files;
};

// Messages to send.
struct AssignAttempt {
  WorkerName worker;
  SessionId session = 0;
  AttemptId attempt = 0;
  TaskKey task;
  // The worker's GPUs this attempt owns (as in its AttemptCreated): no other attempt gets any of
  // them until this one ends, however it ends.
  std::vector<uint32_t> gpus{};
};
// kSuperseded: another attempt of the same task (a speculative backup, or the original the backup
// raced) succeeded first; the killed attempt ends AttemptOutcome::kCancelled, never a failure.
// kObsolete: a held attempt that is not current and whose result can no longer commit (its task
// is finished, or it is not a lost attempt of this worker): drop it, outputs and all. kStale, by
// contrast, leaves a worker delivering a finished attempt's outputs free to go on (a late success
// may still commit).
// kFairShare: vacated so a user below half of its fair share gets the slot (see "A shared
// pool"); the attempt ends kPreempted, never a failure.
enum class KillReason : uint8_t {
  kStale,
  kCancelled,
  kTimedOut,
  kSuperseded,
  kObsolete,
  kFairShare
};
struct KillAttempt {
  WorkerName worker;
  SessionId session = 0;
  AttemptId attempt = 0;
  KillReason reason = KillReason::kStale;
};
struct AckReport {
  WorkerName worker;
  SessionId session = 0;
  AttemptId attempt = 0;
  bool accepted = false;  // false: the report was refused (stale attempt); drop it anyway
  std::string reason;
};
struct RefuseSession {
  WorkerName worker;
  SessionId session = 0;
  std::string reason;  // e.g. another live worker already uses this name
};

using Decision = std::variant<AttemptCreated, AttemptEnded, TaskChanged, JobChanged, WorkerLost,
                              AttemptSuspended, TaskCheckpointed, AssignAttempt, KillAttempt,
                              AckReport, RefuseSession>;

// True for the decisions the shell must persist (records), false for messages to send.
bool IsRecord(const Decision& d);

// ---------------------------------------------------------------------------------------------
// Restoring from the store after a coordinator restart

struct JobCounters {
  uint64_t attempts = 0;     // attempts created
  uint64_t failures = 0;     // ended kFailed or kTimedOut
  uint64_t preemptions = 0;  // ended kPreempted
  uint64_t lost = 0;         // ended kLost
  uint64_t suspensions = 0;  // times an attempt was frozen for its machine's owner
  Millis lost_work{0};       // sum of AttemptEnded::lost
  // Speculative backup attempts launched (Policy::speculate); included in `attempts`. Not
  // restored from the store (it does not record which attempts were backups): 0 after a restart.
  uint64_t backups = 0;
  uint64_t machine_faults = 0;  // ended kMachineFault
  Transfer transfer{};            // sum over the attempts' reports
  bool operator==(const JobCounters&) const = default;
};

struct RestoredJob {
  JobSubmitted spec;
  JobState state = JobState::kRunning;
  JobCounters counters;
  std::vector<WorkerName> workers_lost;  // distinct workers lost while running its attempts
};
struct RestoredTask {
  TaskKey task;
  TaskState state = TaskState::kPending;
  uint32_t failures = 0;
};
// An attempt that was running when the coordinator stopped. It is re-adopted if its worker says
// hello holding it within lease_timeout of the restore, else it ends kLost. A task may have two
// (an original and its speculative backup); a third one of the same task is not restored.
struct RestoredAttempt {
  AttemptId attempt = 0;
  TaskKey task;
  WorkerName worker;
  std::vector<uint32_t> gpus{};  // its devices (AttemptCreated::gpus): busy again once re-adopted
};
// An attempt that ended kLost in a job still running: its late success may still commit.
struct RestoredLost {
  AttemptId attempt = 0;
  TaskKey task;
  WorkerName worker;
  Millis lost{0};  // the work it was charged with (AttemptEnded::lost)
  std::vector<uint32_t> gpus{};  // its devices (AttemptCreated::gpus): a revival needs them free
};
// A user's decayed usage as the store kept it, decayed by the shell to the restore's time.
struct RestoredUsage {
  UserName user;
  double slot_s = 0;
  double gpu_s = 0;
};
struct RestoredState {
  std::vector<RestoredJob> jobs;
  std::vector<RestoredTask> tasks;  // every task of every job
  std::vector<RestoredAttempt> running;
  std::vector<RestoredLost> lost;
  AttemptId next_attempt_id = 1;    // greater than every AttemptId in the store
  std::vector<UserSet> users{};     // shares and quotas set (`idlepool users set`)
  std::vector<RestoredUsage> usage{};  // users' decayed usage as of the restore
};

// ---------------------------------------------------------------------------------------------
// Read-only views for status queries

struct JobSummary {
  JobId job = 0;
  JobState state = JobState::kRunning;
  uint32_t tasks = 0;
  uint32_t pending = 0, running = 0, succeeded = 0, failed = 0, cancelled = 0;
  JobCounters counters;
  uint32_t workers_lost = 0;  // distinct workers lost while running this job's attempts
  // Pending tasks that no connected worker could ever fit (cpus or memory beyond every worker's
  // capacity, or fewer of its GPUs with the task's gpu_memory_mb and gpu_api than it needs): they
  // wait for a bigger worker to join.
  bool fits_no_worker = false;
  bool host_network = false;  // the job asks for the host network (Resources::host_network)
  bool service = false;       // a service: `tasks` are its replicas, `replicas` of them wanted
  uint32_t replicas = 0;
  uint32_t restarting = 0;  // replicas (or a batch job's tasks) waiting out their backoff
  // Its `after` jobs still running: while not empty it waits (Pipelines), nothing placed.
  std::vector<JobId> waiting_on{};
  std::vector<JobId> after{};  // JobSubmitted::after, as submitted
  // Its pending tasks wait because every connected worker that fits them refuses the host
  // network: how many refuse. 0 when it does not wait for that (also when fits_no_worker).
  uint32_t host_network_refused = 0;
  std::vector<HeldOff> held_off{};  // workers held off it (see "Health"), by name
  // Its pending tasks wait because its user holds its max_slots or max_gpus (core/ordering.h).
  QuotaHold quota = QuotaHold::kNone;
};

// kLeft: said it was leaving (WorkerLeaving); never declared lost for its silence afterwards
// unless it still holds attempts.
enum class WorkerState : uint8_t { kConnected, kDisconnected, kLost, kLeft };
struct WorkerView {
  WorkerName worker;
  WorkerState state = WorkerState::kConnected;
  SessionId session = 0;  // the current (or last) session
  std::string boot_id;
  Resources capacity;
  uint32_t slots_busy = 0;
  uint32_t attempts_running = 0;
  MonoTime last_seen{};
  bool accepting = true;
  std::string owner_state;  // as last reported (OwnerStateChanged), empty before any
  std::string owner_reason;
  // Learned relative speed (1.0 until an attempt of it succeeds; see Policy) and the up periods
  // seen to end (WorkerLost, WorkerLeaving, or a restart with a new boot id).
  double speed = 1.0;
  uint32_t up_periods_ended = 0;
  // Its blob cache as it last said (Hello, CacheChanged).
  uint64_t cache_bytes = 0;
  uint32_t cache_blobs = 0;
  std::string owner_cause;  // OwnerStateChanged::cause as last reported, for display
  std::vector<GpuDevice> gpus{};  // the devices it offers (WorkerHello::gpus, or the stand-ins)
  std::vector<uint32_t> gpus_busy{};  // indices owned by running attempts, ascending
  // Why it gets no new attempts for now after one of its attempts stalled (Options::stall);
  // empty when it was not found stalling within StallRule::avoid.
  std::string stalled{};
  // Unhealthy (see "Health"): the failure that tripped it, and until when it takes no new work;
  // empty when healthy.
  std::string unhealthy{};
  MonoTime unhealthy_until{};
  // Its owner policy's choice of users (WorkerHello): empty accept_users accepts everyone.
  std::vector<UserName> accept_users{};
  std::vector<UserName> refuse_users{};
};

// Whether a worker whose owner policy says `accept` (empty: everyone) and `refuse` runs `user`'s
// tasks: refuse wins over accept.
bool LendsTo(const std::vector<UserName>& accept, const std::vector<UserName>& refuse,
             const UserName& user);

// A user as the pool stands (Scheduler::Users): settings, usage, work.
struct UserView {
  UserSet settings;
  UsageLedger::Reading usage;  // decayed as of the view's `now`; slots and GPUs held now
  uint64_t queued_tasks = 0;   // tasks of its running jobs not finished
  uint32_t pending_slots = 0;  // slots its placeable pending tasks need
  std::optional<MonoTime> starving_since;  // below half of its fair share with pending work
};

// Placement policy: which of the learned-estimate rules the scheduler applies. Every rule is a
// pure function of the events seen so far; the estimates below are kept under every policy, so
// switching policy changes decisions only.
//
// Estimates (all kept by the core from events it already receives; no protocol change):
//  - Job mean runtime m_j, in "reference" ms (the runtime on a speed-1.0 worker): the running mean
//    of runtime x speed-of-its-worker over the job's succeeded attempts that ran from the task's
//    start (not resumed from a checkpoint, not restored after a coordinator restart). Runtime is
//    start to report, with the time the attempt was frozen for its owner left out.
//  - Worker speed s_w, relative and unitless: the decayed ratio estimator of LATE's "progress
//    rate" (Zaharia et al., "Improving MapReduce Performance in Heterogeneous Environments",
//    OSDI 2008) over whole attempts, s_w = (A + p) / (B + p) with, per success, A <- d*A + 1 and
//    B <- d*B + runtime / m_j (d = speed_decay, p = speed_prior pseudo-attempts at speed 1.0, so
//    a worker with no history counts as 1.0). Clamped to [1/64, 64].
//  - Worker survival: up periods run from a hello (first, after lost/left, or a new boot id) to
//    lost (its last heartbeat), leaving, or a restart. Machine availability has a decreasing
//    hazard (Weibull shapes 0.45-0.85 in the Failure Trace Archive fits, Javadi et al., JPDC
//    2013: a machine up for hours tends to stay up), so the pool's hazard is estimated by age:
//    a life table (piecewise-constant hazard, the censored maximum-likelihood estimate per age
//    bin: periods ended at that age / time spent up at that age, current periods included as
//    censored) over age bins [0, 1 min), [1, 2 min), [2, 4 min)... doubling, each shrunk toward
//    the pooled rate by one pseudo-end; recomputed at most once a minute. A worker's own
//    history scales it (a frailty, as in proportional-hazards models): z_w = (ends_w + c) /
//    (E_w + c), E_w its expected ends (the pool's cumulative hazard over its periods so far), c =
//    churn_prior_periods. P(w up for t more | up for a) = exp(-z_w (H(a + t) - H(a))). No ended
//    period anywhere in the pool: 1.0 for every worker (neutral); a worker with no history gets
//    the pool's hazard at its age.
//
// Rank (the effective speed k_w, tasks per reference ms relative to a speed-1.0 worker that
// never leaves): k_w = (fast ? s_w : 1) x (churn_aware ? P(w stays up for r / s_w) : 1), with r the
// pool's mean reference runtime, kept to 1/64 of an octave. A task's expected time on w is
// m_j / k_w (a task cut by a departure is run again: the mean of a geometric number of tries).
//
// Rules:
//  - fast / churn_aware (either): free workers are taken by rank. The tail rule: a free worker w
//    stays idle (the task stays pending) when the workers ranked above it are expected to finish
//    every pending task ahead of and including this one before w would finish one (m_j / k_w).
//    With 16 or fewer such tasks this is counted exactly over the 64 best-ranked workers of at
//    least 1.25x w's rank: each of their slots frees when its running attempt is expected to end
//    (see speculate), then completes one task per m_j / k_x. With more, the count is the
//    expected one over all schedulable workers of at least 1.5x w's rank (a slot of rank k_x
//    completes about k_x / k_w - 1 tasks while w runs one: k_x / k_w, less its running task's
//    residual and the rounding down), read from rank bins instead of every worker. Outside that
//    tail (the bulk phase) placement is work-conserving, and it never waits unless a worker whose
//    capacity fits the task is among those counted. One job's tail never idles a worker that a
//    later job's pending task could use.
//  - speculate (LATE): at most every `speculation_interval`, for each job with no pending task,
//    running attempts (not restored ones: how far they got is unknown) are taken from the latest
//    expected end on; each without a backup gets one on the fastest free worker that fits (not
//    its own worker) when the backup is expected to end at least `speculation_gain` of the
//    original's remaining time sooner, while fewer than `speculative_cap` of the schedulable
//    slots run backups (LATE's SpeculativeCap), and unless the tail rule says better-ranked
//    workers will free in time to run it sooner. The original's expected runtime is
//    T = max(m_j / s'_w, elapsed x (1 + overrun)) (a task past its expected end is assumed to
//    need `overrun` of its elapsed time again: long-tailed task times), with s'_w the speed
//    estimate that also counts, as censored evidence, how far each of w's running attempts has
//    run past a mean task; remaining T - elapsed (plus the time it has been frozen so far); the
//    backup's is T x s'_w / s_x. With churn_aware both are divided by the chance that their worker
//    stays up that long. LATE uses progress reports to the same end; the protocol has none.
struct Policy {
  bool fast = true;
  bool speculate = true;
  bool churn_aware = true;

  double speed_decay = 0.9;   // weight of older attempts in a worker's speed estimate
  double speed_prior = 1.0;   // pseudo-attempts at speed 1.0 in every worker's estimate
  double overrun = 0.5;       // see above
  double speculation_gain = 0.25;
  double speculative_cap = 0.1;  // LATE's SpeculativeCap: 10% of the slots
  double churn_prior_periods = 1.0;  // c above: pseudo-ends at the pool's hazard per worker
  Millis speculation_interval{1000};

  // The historical behaviour: no estimate used, every free worker ranks the same.
  static Policy Fifo() { return Policy{.fast = false, .speculate = false, .churn_aware = false}; }
  bool operator==(const Policy&) const = default;
};

// The policy called `name`: "fifo", "fast" (fast only), "speculative" (speculate only), "churn"
// (churn_aware only), or "default" (Policy{}, the combination that did best in the simulator).
// std::nullopt for any other name.
std::optional<Policy> PolicyNamed(std::string_view name);
// The names PolicyNamed accepts, for messages: "fifo, fast, speculative, churn, default".
std::string_view PolicyNames();

struct Options {
  // Silence after which a worker is lost (core/defaults.h).
  Millis lease_timeout = kDefaultLeaseTimeout;
  // How long past a job's timeout the core waits for the worker's own timeout report before it
  // gives up on the attempt: the worker's SIGTERM-to-SIGKILL grace (10 s) plus margin.
  Millis timeout_grace{20000};
  // A gap between Ticks longer than this means the coordinator itself was not running (paused,
  // suspended, starved): the gap is not charged to any lease, orphan deadline or attempt clock.
  // The coordinator ticks every 100 ms and sets lease_timeout / 2; 0 disables the rule (tests
  // and simulations that advance time in large steps).
  Millis stall_threshold{0};

  // TEST ONLY: makes the core wrong on purpose, so the deterministic simulation tests can show
  // that their invariant checks catch the bug each one guards against (src/sim/dst.h). Never set
  // outside tests; the coordinator has no way to set it.
  enum class PlantedBug : uint8_t {
    kNone,
    kNoFencing,            // a succeeded report of a no-longer-current attempt commits outputs
    kForgetLostTasks,      // a lost worker's tasks are neither requeued nor ended (task lost)
    kNoLeaseExpiry,        // silent workers are never declared lost (leases held forever)
    kCountPreemptions,     // preemptions count toward max_attempts
    kStrandPreempted,      // a preempted task is marked pending but never placed again
    kPreemptionsAsLosses,  // a preemption counts as a worker that died (max_workers_lost_in_a_row)
    kPinRetries,           // a failed task retries only on the worker it last failed on
    kFifoAcrossUsers,      // placement ignores users: the oldest job first (starvation)
  };
  PlantedBug planted_bug = PlantedBug::kNone;

  // Placement policy; the default is the best one found in the simulator (see Policy).
  Policy policy = {};

  // A task whose attempts ended kMachineFault this many times fails (its last message says why):
  // it needs more disk than the machines that tried it had, and would otherwise wait forever.
  uint32_t max_machine_faults = 5;

  // A task whose worker died while running it on this many different workers in a row fails
  // (see "Failures" above; core/defaults.h). 0: never.
  uint32_t max_workers_lost_in_a_row = kDefaultMaxWorkersLostInARow;

  // Locality: the link rate assumed to move a job's inputs to a worker that lacks them, in bytes
  // per ms (12,500 = 100 Mbit/s: core::kAssumedLinkBytesPerS), for a worker whose link is not
  // measured (LinkRate). Placement weighs a worker's missing input bytes / its rate against its
  // expected runtime (scheduler_locality.cc). 0: no locality.
  double link_bytes_per_ms = kAssumedLinkBytesPerS / 1000;

  // A task that ended kMachineFault on a worker (its disk filled up) is not placed there again
  // for this long, so a task that needs more disk than a machine has goes elsewhere instead of
  // failing there over and over; the worker still takes other work once it has space. 10 min:
  // long enough for the other workers to take the task, short enough that a pool whose every
  // machine faulted retries. The same holds for a worker that died running the task (see
  // "Failures"): restarted at once, it would otherwise get the task straight back.
  Millis machine_fault_avoid{600000};

  // Unhealthy workers (see "Health"): how many jobs failing in a row, and the backoff.
  HealthRule health{};

  // Stalled attempts (see "Stalls" above; core/stall.h). Off unless enabled.
  StallRule stall{};

  // Services: a replica that exited or failed on its own is restarted after a backoff that
  // doubles from replica_restart_min up to replica_restart_max with its crashes in a row (as
  // systemd's Restart= with a rising RestartSec, or Kubernetes' CrashLoopBackOff: 10 s doubling to
  // 5 min; ours starts at 1 s because a lent machine's replica often dies of its machine, not of
  // itself). A replica that ran replica_healthy_run or longer starts the count over.
  Millis replica_restart_min{1000};
  Millis replica_restart_max{300000};
  Millis replica_healthy_run{60000};

  // A shared pool (core/ordering.h): how usage decays (coordinator --usage-half-life) and when
  // fair preemption vacates for a starving user (--fair-preemption-after; nullopt: off).
  UsageRule usage{};
  FairPreemptionRule fair_preemption{};
};

class Scheduler {
 public:
  explicit Scheduler(Options options = {});

  // Replaces all state with `state`; restored running attempts become orphans with a deadline
  // of now + lease_timeout. Call once, before any Apply.
  void Restore(const RestoredState& state, MonoTime now);

  // Applies one event and returns the decisions, persistence records first in the order they
  // happened, each message after the records that justify it.
  [[nodiscard]] std::vector<Decision> Apply(const Event& event, MonoTime now);

  // Drops the workers that left or were lost, hold no attempt and were last seen `after` or
  // more before `now`; returns their names, by name. Not an event: the shell calls it from time
  // to time (the simulator never does). A forgotten worker that says hello again starts afresh
  // (average speed, no up periods, a new boot id as far as the core knows).
  std::vector<WorkerName> ForgetDeparted(MonoTime now, Millis after);
  // Drops a finished job (idlepool delete): its record, its tasks' loss runs, avoidances and
  // lost attempts, so that views no longer show it. Not an event: the shell calls it once the
  // store removed the job. False (nothing changed) while the job runs or has an attempt running;
  // true for an unknown job.
  bool ForgetJob(JobId job);

  // The wait before task `task` tries again after its `failures`-th failure (>= 1) under
  // `retry` (see "Retries"): min(max, b + j) with b = backoff x 2^(failures - 1) and j in
  // [0, b / 4) a hash of (task, failures). 0 when backoff is 0. Pure.
  static Millis RetryWait(const RetryBackoff& retry, TaskKey task, uint32_t failures);

  // Views. Unknown ids give std::nullopt.
  // Locality's figure: ms to move `bytes` to `worker` over its measured link (LinkRate), or at
  // Options::link_bytes_per_ms when unmeasured or unknown (core::TransferSeconds).
  double FetchMs(const WorkerName& worker, uint64_t bytes) const;
  std::optional<JobSummary> Job(JobId job) const;
  std::vector<JobSummary> Jobs() const;           // by job id
  std::vector<WorkerView> Workers() const;        // by worker name
  // Users set, with usage, or with jobs, by name (scheduler_users.cc).
  std::vector<UserView> Users(MonoTime now) const;
  std::optional<WorkerView> Worker(const WorkerName& name) const;
  size_t worker_count() const { return workers_.size(); }  // workers it remembers
  std::optional<AttemptId> CurrentAttempt(TaskKey task) const;
  // The task of attempt `id` when it runs on `worker`'s session `session` (adopted, not an
  // orphan): fencing for what a worker says of it (its log); std::nullopt otherwise.
  std::optional<TaskKey> RunningOn(AttemptId id, const WorkerName& worker, SessionId session) const;
  AttemptId next_attempt_id() const { return next_attempt_id_; }
  const Options& options() const { return options_; }

 private:
  struct TaskRec {
    TaskState state = TaskState::kPending;
    bool checkpointed = false;  // has a non-empty checkpoint: new attempts resume from it
    uint32_t failures = 0;
    AttemptId current = 0;  // running attempt (the older one of two), 0 if none
    AttemptId backup = 0;   // a second running attempt (speculative backup), 0 if none
    uint16_t machine_faults = 0;  // attempts ended kMachineFault (not restored from the store)
  };
  struct JobRec {
    JobSubmitted spec;
    JobState state = JobState::kRunning;
    JobCounters counters;
    std::set<WorkerName> workers_lost;
    std::vector<TaskRec> tasks;
    uint32_t unfinished = 0;  // tasks pending or running
    uint32_t pending = 0;     // its tasks in pending_
    double ref_ms_sum = 0;    // sum of runtime x worker speed over learned successes (Policy)
    uint64_t ref_n = 0;       // learned successes
    uint64_t input_bytes = 0;  // sum of spec.inputs sizes (sorted, unique by sha256)
    std::vector<AttemptId> lost_attempts;  // ended kLost while it runs (LateSuccess)
    AttemptTimes times;                    // of its learned successes (Learn), for the stall limit
    bool waiting = false;  // its `after` jobs have not all succeeded: none of its tasks is placed
  };
  struct AttemptRec {
    TaskKey task;
    WorkerName worker;
    MonoTime started{};
    std::optional<MonoTime> orphan_deadline;  // set for restored attempts not yet re-adopted
    MonoTime progress{};  // start, or its last checkpoint: lost work is measured from here
    std::optional<MonoTime> suspended_since;  // frozen by its owner: its timeout is paused
    bool fresh = true;  // ran from the task's start (no checkpoint, not restored): learn from it
    bool restored = false;  // started before a coordinator restart: its progress is unknown
    std::vector<uint32_t> gpus{};  // the worker's devices it owns (charged while on its worker)
    bool worker_died = false;      // set just before it ends kLost when its worker died
    bool unsent = false;  // set just before it ends kFailed when its assignment was never sent
  };
  struct WorkerRec {
    WorkerState state = WorkerState::kConnected;
    SessionId session = 0;
    bool session_open = false;
    std::string boot_id;
    Resources capacity;
    std::vector<GpuDevice> gpus{};  // offered devices, by index (capacity.gpus == gpus.size())
    uint32_t slots_busy = 0;
    std::map<uint32_t, AttemptId> gpu_owner;  // busy device index -> the attempt that owns it
    uint64_t memory_busy_mb = 0;
    MonoTime last_seen{};
    std::set<AttemptId> attempts;
    bool accepting = true;
    std::string owner_state, owner_reason, owner_cause;
    std::string stalled;  // not schedulable until stalled_until (Options::stall)
    std::string unhealthy;  // not schedulable while set (see "Health"; health_ says until when)
    MonoTime stalled_until{};
    // Speed estimate (Policy): decayed attempts and decayed runtime / job mean.
    double speed_attempts = 0, speed_time = 0;
    // Up periods (Policy): the current one's start, the ended ones' count and expected count.
    std::optional<MonoTime> up_since;
    uint32_t up_ends = 0;
    double expected_ends = 0;  // sum over its ended periods of the pool's cumulative hazard
    // Where it is indexed (Reindex): its rank, its key in free_index_ (0: not in it), and
    // whether it is in ranked_ (schedulable, ranked policy) with what it added there.
    double rank = 1.0;
    uint32_t indexed_free = 0;
    bool ranked = false;
    RankIndex::Share rank_share{};
    uint32_t counted_slots = 0;  // capacity.cpus as added to schedulable_slots_
    // Locality: blobs it holds (confirmed: it said so) or was sent inputs it will fetch.
    struct Held {
      uint64_t size = 0;
      bool confirmed = false;
    };
    std::map<std::string, Held> blobs;
    uint64_t cache_bytes = 0;  // confirmed ones
    uint32_t cache_blobs = 0;
    double down_bytes_per_s = 0;  // measured link (LinkRate); 0: Options::link_bytes_per_ms
    std::vector<UserName> accept_users, refuse_users;  // its owner's choice (WorkerHello)
  };
  // Schedulable workers with free slots, highest rank first, then most free, then by name:
  // placement takes the first that fits instead of scanning every worker for every task.
  struct FreeEntry {
    double rank;
    uint32_t free;
    WorkerName name;
  };
  struct FreeOrder {
    bool operator()(const FreeEntry& a, const FreeEntry& b) const {
      if (a.rank != b.rank) return a.rank > b.rank;
      return a.free != b.free ? a.free > b.free : a.name < b.name;
    }
  };
  // Locality: holders of a job's inputs looked at per placement (bounds its cost in big pools).
  static constexpr size_t kLocalityCandidates = 256;
  // Blobs remembered per worker (Hello lists at most 20,000; CacheChanged additions past this are
  // ignored): whatever workers say, the core's memory stays bounded.
  static constexpr size_t kMaxBlobsPerWorker = 20000;

  void OnSubmit(const JobSubmitted& e, MonoTime now, std::vector<Decision>& out);
  void OnCancel(const JobCancelled& e, MonoTime now, std::vector<Decision>& out);
  void OnHello(const WorkerHello& e, MonoTime now, std::vector<Decision>& out);
  void OnHeartbeat(const WorkerHeartbeat& e, MonoTime now, std::vector<Decision>& out);
  void OnSessionClosed(const SessionClosed& e, MonoTime now, std::vector<Decision>& out);
  void OnLeaving(const WorkerLeaving& e, MonoTime now, std::vector<Decision>& out);
  void OnReport(const AttemptReport& e, MonoTime now, std::vector<Decision>& out);
  void OnTick(MonoTime now, std::vector<Decision>& out);
  // The tick's checks of running attempts (scheduler_watch.cc): the timeout backstop, and
  // stalled attempts (at most once a second).
  void KillOverdue(MonoTime now, std::vector<Decision>& out);
  void MoveStalled(MonoTime now, std::vector<Decision>& out);
  void OnOwnerState(const OwnerStateChanged& e, MonoTime now, std::vector<Decision>& out);
  void OnCheckpoint(const CheckpointSaved& e, MonoTime now, std::vector<Decision>& out);
  void OnCacheChanged(const CacheChanged& e, std::vector<Decision>& out);
  void OnGpusHeld(const GpusHeld& e);
  // A shared pool (scheduler_users.cc): users' settings, job priorities, the lender's choice of
  // users, and fair preemption (core/ordering_preemption.h), checked on every Tick.
  void OnUserSet(const UserSet& e);
  void RestoreUsers(const RestoredState& state, MonoTime now);
  void OnPriority(const JobPriority& e);
  static bool LendsTo(const WorkerRec& w, const UserName& user);
  // One more attempt needing `need` would take `user` past its max_slots or max_gpus.
  bool QuotaHolds(const UserName& user, const Resources& need) const;
  void PreemptForShare(MonoTime now, std::vector<Decision>& out);
  std::vector<Demand> Demands() const;
  std::vector<Running> Vacatable(const UserName& starving) const;
  // Health (scheduler_health.cc). NoteHealth: what attempt `a` of a batch job ending with
  // `outcome` says of its worker; NoteCannotStart: a machine fault whose command could not start.
  void NoteHealth(const AttemptRec& a, AttemptOutcome outcome, const std::string& message);
  void NoteCannotStart(const AttemptReport& e);
  void OnReset(const WorkerReset& e);
  void RecoverHealthy(MonoTime now);
  // Marks `name` unhealthy (or healthy again) in its WorkerRec and reindexes it.
  void SyncHealth(const WorkerName& name);
  // Whether placement keeps task `key` off `name`: it failed there, or `name` is held off its job,
  // and another worker could take it now or soon (ElsewhereSoon).
  bool Steered(const TaskKey& key, const WorkerName& name, MonoTime now) const;
  bool ElsewhereSoon(const TaskKey& key, const WorkerName& name, MonoTime now) const;
  // Services (scheduler_service.cc).
  void OnScale(const ScaleService& e, std::vector<Decision>& out);
  // The tasks a job submitted runs at once: all, or a service's first `replicas` (the rest are
  // parked until it is scaled up).
  static uint32_t RunnableAtSubmit(const JobSubmitted& e);
  // Moves the task of a running service's ended attempt `a` on: pending again (at once after a
  // preemption, loss or machine fault; after the backoff when it crashed), or parked when it is
  // beyond the replicas wanted. Counts the outcome; records TaskChanged.
  void EndReplica(JobRec& job, const AttemptRec& a, AttemptOutcome outcome, MonoTime now,
                  std::vector<Decision>& out);
  // Replicas, and batch tasks, whose backoff ran out are pending again.
  void RestartDue(MonoTime now);
  // Retries (scheduler_retry.cc): pending task `key` is placeable at once, or after its retry
  // wait when `failed` (its attempt ended kFailed or kTimedOut) and its batch job has a backoff.
  void Requeue(const TaskKey& key, bool failed, MonoTime now);
  // Pipelines (scheduler_after.cc). StartOrWait: job `id` waits for its `after` jobs, or its
  // runnable tasks are pending, or it is cancelled (one of them failed). ResolveAfter: when a job
  // changed state in `out` from `first` on (or after a restore), does so for every waiting job.
  void StartOrWait(JobRec& job, JobId id, MonoTime now, std::vector<Decision>& out);
  void ResolveAfter(MonoTime now, std::vector<Decision>& out, size_t first);
  // The first `after` job that failed or was cancelled (0: none); those still running.
  JobId AfterFailed(const JobRec& job) const;
  std::vector<JobId> AfterPending(const JobRec& job) const;
  // `name` already runs as many replicas of `key`'s service as a worker may
  // (ServiceShape::per_machine); false for a batch job.
  bool ReplicasFull(const TaskKey& key, const WorkerName& name) const;
  // Commits a kSucceeded report of an attempt that ended kLost (see "Fencing" above); false when
  // the report does not qualify (the caller refuses it).
  bool LateSuccess(const AttemptReport& e, std::vector<Decision>& out);
  // Re-adopts held attempt `id`, which ended kLost, onto `w` when its task is still pending and
  // `w` has room; false otherwise.
  bool Revive(const WorkerName& name, WorkerRec& w, AttemptId id, MonoTime now,
              std::vector<Decision>& out);
  // Forgets the lost attempts of a job that finished (no late success can commit any more).
  void ForgetLost(JobId job);
  static void NormalizeInputs(JobRec& job);
  // Locality: `name` holds (or will hold) `blob`; or no longer does.
  void AddBlob(WorkerRec& w, const WorkerName& name, const BlobRef& blob, bool confirmed);
  void DropBlobs(WorkerRec& w, const WorkerName& name);
  // Input bytes of `job`'s task `index` (the job's inputs and the task's own) that `w` lacks.
  uint64_t MissingBytes(const JobRec& job, uint32_t index, const WorkerRec& w) const;
  // Locality (scheduler_locality.cc): the task's own inputs (JobSubmitted::task_inputs).
  static std::pair<const TaskBlob*, const TaskBlob*> OwnInputs(const JobRec& job, uint32_t index);
  // Locality: the free worker that fits task `key` with the lowest expected finish, starting
  // from `best_name` (the pick by rank), among holders of its inputs.
  void PreferHolder(const TaskKey& key, bool avoiding, MonoTime now, WorkerName& best_name);
  // Locality: `name` will fetch task `key`'s inputs (the job's and its own) for a new attempt.
  void NoteInputsSent(const TaskKey& key, const WorkerName& name);
  void OnLinkRate(const LinkRate& e);
  // The refusal reason when `attempt` is not current on `worker`'s session `session`, else "".
  std::string CheckCurrent(const WorkerName& worker, SessionId session, AttemptId attempt) const;

  // Ends a running attempt: frees its slots, records the outcome, and moves its task on
  // (pending again, failed, or cancelled; still running when its other attempt runs on; on
  // success the other attempt is superseded). Does not send anything to the worker.
  void EndAttempt(AttemptId id, AttemptOutcome outcome, int exit_code, const std::string& message,
                  std::vector<Decision>& out);
  // As above; `outputs` are committed when outcome is kSucceeded.
  void EndAttempt(AttemptId id, AttemptOutcome outcome, int exit_code, const std::string& message,
                  std::vector<OutputFile> outputs, std::vector<Decision>& out,
                  Millis lost = Millis{0}, const Transfer& transfer = {},
                  const AttemptTiming& timing = {}, const std::string& log_tail = {});
  // Takes a running attempt out of attempts_, orphans_ and its task's attempt slots (the other
  // attempt, if any, becomes current) and returns its record; the caller frees its worker's
  // slots and moves its task on.
  AttemptRec Unlink(AttemptId id);
  // Ends `id`, the other attempt of a task that `winner` just committed: kCancelled, and a
  // KillAttempt{kSuperseded} when its worker holds it.
  void Supersede(AttemptId id, AttemptId winner, std::vector<Decision>& out);
  void LoseWorker(const WorkerName& name, std::vector<Decision>& out);
  // The rule of max_workers_lost_in_a_row for attempt `a` of task `key` ending with `outcome`
  // (`alone`: the task has no other running attempt): counts or clears the task's run of losses,
  // and returns why the task fails now, or "".
  std::string CountLoss(const TaskKey& key, const AttemptRec& a, AttemptOutcome outcome,
                        bool alone);
  // Puts `name` in free_index_ at its current rank and free slots, or takes it out, and keeps
  // ranked_ and schedulable_slots_ in step; call after any change to a worker's
  // state, session, acceptance, capacity, busy slots or estimates.
  void Reindex(const WorkerName& name);
  void FinishJobIfDone(JobRec& job, JobId id, std::vector<Decision>& out);
  void Schedule(MonoTime now, std::vector<Decision>& out);
  // Schedule's step for one job the order handed out: places its first pending task that a
  // worker can take; false when none can in this pass (no fit, the tail rule, all avoided).
  // `ahead`: pending tasks of the jobs handed out before it (the tail rule's).
  bool PlaceNextOf(JobId job, uint64_t ahead, MonoTime now, std::vector<Decision>& out);
  // The jobs with pending tasks, as the order sees them (core/ordering.h).
  std::vector<Candidate> Candidates() const;
  // Places a pending task, or a backup of a running one, on `name`.
  void Place(const TaskKey& key, const WorkerName& name, MonoTime now, std::vector<Decision>& out);
  void PlaceBackup(const TaskKey& key, const WorkerName& name, MonoTime now,
                   std::vector<Decision>& out);
  AttemptId StartAttempt(const TaskKey& key, const WorkerName& name, MonoTime now,
                         std::vector<Decision>& out);
  void AddPending(const TaskKey& key);
  void ErasePending(const TaskKey& key);
  JobRec& JobOf(const TaskKey& key);
  TaskRec& TaskOf(const TaskKey& key);

  // Estimates and rules (Policy).
  bool Ranked() const { return options_.policy.fast || options_.policy.churn_aware; }
  double Speed(const WorkerRec& w) const;
  // Speed() with the censored evidence of w's running attempts: each one running longer than
  // its job's mean task adds the excess (in mean tasks) to the time side of the estimator.
  double RunningSpeed(const WorkerRec& w) const;
  double Survival(const WorkerRec& w, double ms) const;  // P(w stays up for `ms` more)
  double RankOf(const WorkerRec& w) const;
  static double MeanMs(const JobRec& job);  // reference ms; 0 when nothing is learned yet
  // Expected remaining ms of attempt `a` on `w` and its estimated reference work (ms on a
  // speed-1.0 worker), given its job's mean `mean_ms` (> 0).
  void Expect(const AttemptRec& a, const WorkerRec& w, double mean_ms, double& remaining_ms,
              double& work_ms) const;
  // Updates the job's mean runtime and the worker's speed with a succeeded attempt `a` of `job`
  // that ran on `w` (only attempts that ran from the task's start teach anything).
  void Learn(const AttemptRec& a, WorkerRec& w, JobRec& job, MonoTime now);
  void UpStart(WorkerRec& w, MonoTime at);
  // Re-estimates churn_ from the ended periods and the current ones when it is due, and then
  // re-ranks the workers (survival changes with age).
  void RefreshChurn();
  void UpEnd(WorkerRec& w, MonoTime at);
  // The tail rule: true when free worker `w` should leave a task (needing `need`, `work_ms`
  // reference ms) pending because the workers ranked above it are expected to finish `ahead`
  // such tasks sooner.
  bool ShouldWait(const WorkerRec& w, const Resources& need, double work_ms,
                  uint64_t ahead) const;
  void Speculate(MonoTime now, std::vector<Decision>& out);

  // Worker capacity accounting. Free amounts never go below zero (capacity may shrink on a
  // reconnect while more is busy).
  static bool Connected(const WorkerRec& w);
  static bool Schedulable(const WorkerRec& w);  // connected and accepting
  static uint32_t FreeSlots(const WorkerRec& w);
  static bool Fits(const WorkerRec& w, const Resources& need);
  static bool CapacityFits(const WorkerRec& w, const Resources& need);  // when idle
  // A task of a host-network job goes only to a worker that offers it (Resources::host_network).
  static bool NetworkFits(const WorkerRec& w, const Resources& need) {
    return !need.host_network || w.capacity.host_network;
  }
  // GPUs: whether device `d` meets `need`'s gpu_memory_mb and gpu_api; the free ones of `w` that
  // do, best fit first (the smallest memory that fits, then the lowest index), `need.gpus` of them
  // in ascending index order, or std::nullopt when fewer are free.
  static bool GpuFits(const GpuDevice& d, const Resources& need);
  static std::optional<std::vector<uint32_t>> ChooseGpus(const WorkerRec& w, const Resources& need);
  // Whether every device in `gpus` is free on `w` (an attempt re-adopted or revived needs its own).
  static bool GpusFree(const WorkerRec& w, const std::vector<uint32_t>& gpus);
  // Charge: takes `need`'s slots and memory and the devices `a.gpus` (which must be free) for
  // attempt `id`; Release gives them back.
  // Both also tell the attempt's user's usage (ordering_) as of now_.
  void Charge(WorkerRec& w, const Resources& need, AttemptId id, const AttemptRec& a);
  void Release(WorkerRec& w, const Resources& need, AttemptId id, const AttemptRec& a);
  // What attempt `a` holds, told to its user's usage (ordering_) as of `now`.
  void HoldUsage(const AttemptRec& a, MonoTime now);
  void FreeUsage(const AttemptRec& a, MonoTime now);

  Options options_;
  AttemptId next_attempt_id_ = 1;
  MonoTime now_{};  // of the Apply (or Restore) running: estimates that age read it
  std::map<JobId, JobRec> jobs_;
  std::map<AttemptId, AttemptRec> attempts_;  // running attempts only
  std::map<WorkerName, WorkerRec> workers_;
  std::set<TaskKey> pending_;  // placement order
  std::set<FreeEntry, FreeOrder> free_index_;
  RankIndex ranked_;                // schedulable workers by rank (ranked policies only)
  uint64_t schedulable_slots_ = 0;  // capacity.cpus over schedulable workers
  uint64_t backups_running_ = 0;    // tasks with two running attempts
  std::optional<MonoTime> last_speculation_;
  // Pool-wide estimates (Policy): the reference runtime over all learned successes, and the
  // life table of up periods.
  struct RefMean {
    double sum_ms = 0;
    uint64_t n = 0;
  };
  RefMean pool_ref_;
  ChurnTable churn_;
  // Restored attempts not yet re-adopted (orphan_deadline set), by worker: a hello looks only at
  // its own worker's, a tick only at these.
  std::set<std::pair<WorkerName, AttemptId>> orphans_;
  // Attempts that ended kLost while their job runs: a late success may still commit them.
  struct LostRec {
    TaskKey task;
    WorkerName worker;
    Millis lost{0};
    std::vector<uint32_t> gpus{};
  };
  std::map<AttemptId, LostRec> lost_attempts_;
  // The workers that died running each task since its last success, failure or timeout, in the
  // order they died (CountLoss); only tasks with such a run.
  std::map<TaskKey, std::vector<WorkerName>> lost_in_a_row_;
  // Tasks kept off workers where they ended kMachineFault or their worker died, until the given
  // time.
  std::map<TaskKey, std::map<WorkerName, MonoTime>> avoid_;
  // Service replicas and batch tasks waiting out their backoff (pending, not in pending_), and
  // when each may start again.
  std::map<TaskKey, MonoTime> restarts_;
  std::set<JobId> waiting_;   // jobs waiting for their `after` jobs (Pipelines)
  WorkerHealth health_;       // failures by task, job and worker (see "Health")
  Ordering ordering_;         // users' usage and the order of a pass (core/ordering.h)
  bool after_dirty_ = false;  // set by a restore: the next Apply resolves every waiting job
  bool Avoided(const TaskKey& key, const WorkerName& name, MonoTime now) const;
  // Locality: blob -> workers that hold it (or were sent it), for placement.
  std::map<std::string, std::set<WorkerName>> holders_;
  // Attempt -> task for every ended attempt; kept only under PlantedBug::kNoFencing.
  std::map<AttemptId, TaskKey> planted_ended_;
  std::optional<MonoTime> last_tick_;
  std::optional<MonoTime> last_stall_check_;
};

}  // namespace idlepool::core
