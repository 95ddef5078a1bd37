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
// Protocol rules implemented here (DESIGN.md, "Protocol essentials"):
//   - Fencing: every assignment gets a fresh AttemptId. A report for an attempt that is not the
//     task's current running attempt on that worker, arriving on that worker's current session,
//     is refused (AckReport{accepted=false}) and the attempt is killed (KillAttempt{kStale}).
//     A task's outputs are committed exactly once.
//   - The coordinator's own stalls do not count against workers: a gap between Ticks longer than
//     Options::stall_threshold extends every lease, orphan deadline and attempt clock by the
//     gap, since no heartbeat could be read during it.
//   - Liveness: a worker silent for Options::lease_timeout is lost; its attempts end kLost and
//     their tasks are pending again at once. A worker that says hello again with the same boot
//     id re-adopts the attempts it still holds that are current; anything else it holds is
//     killed. A new boot id means its processes are gone: its attempts are requeued at once.
//   - Failures: only kFailed and kTimedOut count toward max_attempts; preemptions and losses
//     never do.
//   - Owners: a worker whose owner policy does not accept work (OwnerStateChanged) gets no new
//     attempts; a vacated attempt reported kPreempted is requeued at once, never a failure.
//   - Placement: pending tasks in (job id, task index) order, each on the worker with the most
//     free slots that fits it (ties broken by worker name). Deterministic: no hash-map order.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "core/types.h"

namespace idlepool::core {

// ---------------------------------------------------------------------------------------------
// Events (inputs)

struct JobSubmitted {
  JobId job = 0;
  uint32_t task_count = 0;   // > 0
  Resources resources;       // per attempt
  uint32_t max_attempts = 3; // failures allowed per task before the task fails; >= 1
  Millis timeout{0};         // per attempt; 0 = none. Enforced by the worker; the core kills an
                             // attempt still running at timeout + lease_timeout as a backstop.
};

struct JobCancelled {
  JobId job = 0;
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

// The worker's owner policy changed its decision (worker/owner_policy.h). A worker that is not
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

enum class ReportResult : uint8_t { kSucceeded, kFailed, kTimedOut, kPreempted };

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
};

// Time passed: expire leases, orphaned attempts and timeouts.
struct Tick {};

using Event = std::variant<JobSubmitted, JobCancelled, WorkerHello, WorkerHeartbeat,
                           SessionClosed, WorkerLeaving, AttemptReport, Tick, OwnerStateChanged,
                           CheckpointSaved>;

// ---------------------------------------------------------------------------------------------
// Decisions (outputs)

// Records to persist.
struct AttemptCreated {
  AttemptId attempt = 0;
  TaskKey task;
  WorkerName worker;
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
};
enum class KillReason : uint8_t { kStale, kCancelled, kTimedOut };
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
// hello holding it within lease_timeout of the restore, else it ends kLost.
struct RestoredAttempt {
  AttemptId attempt = 0;
  TaskKey task;
  WorkerName worker;
};
struct RestoredState {
  std::vector<RestoredJob> jobs;
  std::vector<RestoredTask> tasks;  // every task of every job
  std::vector<RestoredAttempt> running;
  AttemptId next_attempt_id = 1;    // greater than every AttemptId in the store
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
  // Pending tasks that no connected worker could ever fit (cpus, gpus or memory beyond every
  // worker's capacity): they wait for a bigger worker to join.
  bool fits_no_worker = false;
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
};

struct Options {
  // Silence after which a worker is lost. Default 5 s (DESIGN.md; HTCondor's equivalent, the
  // startd's ALIVE_INTERVAL, is minutes: volatile machines need much faster detection).
  Millis lease_timeout{5000};
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
    kNoFencing,          // a succeeded report of a no-longer-current attempt commits outputs
    kForgetLostTasks,    // a lost worker's tasks are neither requeued nor ended (task lost)
    kNoLeaseExpiry,      // silent workers are never declared lost (leases held forever)
    kCountPreemptions,   // preemptions count toward max_attempts
    kStrandPreempted,    // a preempted task is marked pending but never placed again
  };
  PlantedBug planted_bug = PlantedBug::kNone;
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

  // Views. Unknown ids give std::nullopt.
  std::optional<JobSummary> Job(JobId job) const;
  std::vector<JobSummary> Jobs() const;           // by job id
  std::vector<WorkerView> Workers() const;        // by worker name
  std::optional<AttemptId> CurrentAttempt(TaskKey task) const;
  AttemptId next_attempt_id() const { return next_attempt_id_; }
  const Options& options() const { return options_; }

 private:
  struct TaskRec {
    TaskState state = TaskState::kPending;
    uint32_t failures = 0;
    AttemptId current = 0;  // running attempt, 0 if none
  };
  struct JobRec {
    JobSubmitted spec;
    JobState state = JobState::kRunning;
    JobCounters counters;
    std::set<WorkerName> workers_lost;
    std::vector<TaskRec> tasks;
    uint32_t unfinished = 0;  // tasks pending or running
  };
  struct AttemptRec {
    TaskKey task;
    WorkerName worker;
    MonoTime started{};
    std::optional<MonoTime> orphan_deadline;  // set for restored attempts not yet re-adopted
    MonoTime progress{};  // start, or its last checkpoint: lost work is measured from here
    std::optional<MonoTime> suspended_since;  // frozen by its owner: its timeout is paused
  };
  struct WorkerRec {
    WorkerState state = WorkerState::kConnected;
    SessionId session = 0;
    bool session_open = false;
    std::string boot_id;
    Resources capacity;
    uint32_t slots_busy = 0;
    uint32_t gpus_busy = 0;
    uint64_t memory_busy_mb = 0;
    MonoTime last_seen{};
    std::set<AttemptId> attempts;
    bool accepting = true;
    std::string owner_state, owner_reason;
    uint32_t indexed_free = 0;  // its key in free_index_ (0: not in it)
  };
  // Schedulable workers with free slots, most free first, then by name: placement takes the
  // first that fits instead of scanning every worker for every task.
  struct MostFreeFirst {
    bool operator()(const std::pair<uint32_t, WorkerName>& a,
                    const std::pair<uint32_t, WorkerName>& b) const {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    }
  };

  void OnSubmit(const JobSubmitted& e, MonoTime now, std::vector<Decision>& out);
  void OnCancel(const JobCancelled& e, MonoTime now, std::vector<Decision>& out);
  void OnHello(const WorkerHello& e, MonoTime now, std::vector<Decision>& out);
  void OnHeartbeat(const WorkerHeartbeat& e, MonoTime now, std::vector<Decision>& out);
  void OnSessionClosed(const SessionClosed& e, MonoTime now, std::vector<Decision>& out);
  void OnLeaving(const WorkerLeaving& e, MonoTime now, std::vector<Decision>& out);
  void OnReport(const AttemptReport& e, MonoTime now, std::vector<Decision>& out);
  void OnTick(MonoTime now, std::vector<Decision>& out);
  void OnOwnerState(const OwnerStateChanged& e, MonoTime now, std::vector<Decision>& out);
  void OnCheckpoint(const CheckpointSaved& e, MonoTime now, std::vector<Decision>& out);
  // The refusal reason when `attempt` is not current on `worker`'s session `session`, else "".
  std::string CheckCurrent(const WorkerName& worker, SessionId session, AttemptId attempt) const;

  // Ends a running attempt: frees its slots, records the outcome, and moves its task on
  // (pending again, failed, or cancelled). Does not send anything to the worker.
  void EndAttempt(AttemptId id, AttemptOutcome outcome, int exit_code, const std::string& message,
                  std::vector<Decision>& out);
  // As above; `outputs` are committed when outcome is kSucceeded.
  void EndAttempt(AttemptId id, AttemptOutcome outcome, int exit_code, const std::string& message,
                  std::vector<OutputFile> outputs, std::vector<Decision>& out,
                  Millis lost = Millis{0});
  void LoseWorker(const WorkerName& name, std::vector<Decision>& out);
  // Puts `name` in free_index_ at its current free slots, or takes it out; call after any change
  // to a worker's state, session, acceptance, capacity or busy slots.
  void Reindex(const WorkerName& name);
  void FinishJobIfDone(JobRec& job, JobId id, std::vector<Decision>& out);
  void Schedule(MonoTime now, std::vector<Decision>& out);
  void Place(const TaskKey& key, const WorkerName& name, MonoTime now, std::vector<Decision>& out);
  JobRec& JobOf(const TaskKey& key);
  TaskRec& TaskOf(const TaskKey& key);

  // Worker capacity accounting. Free amounts never go below zero (capacity may shrink on a
  // reconnect while more is busy).
  static bool Connected(const WorkerRec& w);
  static bool Schedulable(const WorkerRec& w);  // connected and accepting
  static uint32_t FreeSlots(const WorkerRec& w);
  static bool Fits(const WorkerRec& w, const Resources& need);
  static void Charge(WorkerRec& w, const Resources& need);
  static void Release(WorkerRec& w, const Resources& need);

  Options options_;
  AttemptId next_attempt_id_ = 1;
  std::map<JobId, JobRec> jobs_;
  std::map<AttemptId, AttemptRec> attempts_;  // running attempts only
  std::map<WorkerName, WorkerRec> workers_;
  std::set<TaskKey> pending_;  // placement order
  std::set<std::pair<uint32_t, WorkerName>, MostFreeFirst> free_index_;
  // Restored attempts not yet re-adopted (orphan_deadline set), by worker: a hello looks only at
  // its own worker's, a tick only at these.
  std::set<std::pair<WorkerName, AttemptId>> orphans_;
  // Attempt -> task for every ended attempt; kept only under PlantedBug::kNoFencing.
  std::map<AttemptId, TaskKey> planted_ended_;
  std::optional<MonoTime> last_tick_;
};

}  // namespace idlepool::core
