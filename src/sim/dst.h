// Invariant checks for deterministic simulation testing: fed every core decision batch, the
// simulator's ground truth (what workers really reported) and the coordinator's ticks, they say
// whether the pool ever broke one of its promises.
//
// Checked after every batch:
//   1. exactly once: a task is committed (TaskChanged kSucceeded) at most once, by an attempt of
//      that task whose worker really finished it successfully, with that attempt's outputs;
//   2. no task lost: a running task has a running attempt, a pending or finished one has none,
//      and every attempt that ends was running;
//   3. leases: after a tick at `now`, no worker holds a running attempt when nothing has been
//      heard from it for longer than lease_timeout + one tick period;
//   4. failures: a task's failure count is exactly its attempts that ended kFailed or kTimedOut
//      (preemptions and losses never count), kFailed only for attempts whose worker reported a
//      failure, and a task fails only once it has max_attempts failures, or once it was lost
//      with `lost_in_a_row` different workers since its last success, failure or timeout (the
//      core's Options::max_workers_lost_in_a_row; the core counts only workers that died, a
//      subset of these, so this holds whenever the core is right).
//   6. broken machines: a job with broken workers (SimJob::broken_on, where each of its attempts
//      fails) and a healthy worker that fits it never has a task fail because of the broken ones
//      (the scenario gives it no other failure and room for one: max_attempts >= 2), unless the
//      coordinator restarted while it ran (the core keeps its health in memory only) or the task
//      failed for the workers that died running it.
//   7. starvation bound and 8. quotas of a shared pool: sim/dst_shares.h.
// And at the end of a run whose faults stopped: 5. liveness: every job reached a final state.
//
// Thread safety: one thread. Memory: a few words per task and per running attempt.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/scheduler.h"
#include "sim/dst_shares.h"

namespace idlepool::sim {

class InvariantChecker {
 public:
  // Stops collecting after this many violations (the first ones are the interesting ones).
  static constexpr size_t kMaxViolations = 20;

  InvariantChecker(core::Millis lease_timeout, core::Millis tick, uint32_t lost_in_a_row)
      : lease_(lease_timeout), tick_(tick), lost_in_a_row_(lost_in_a_row) {}

  // The pool's users (shares, quotas) as the run starts; a user not among them has the defaults.
  void OnUsers(const std::vector<core::UserSet>& users) { shares_.SetUsers(users); }
  void OnJob(core::JobId job, uint32_t tasks, uint32_t max_attempts,
             const core::UserName& user = "", uint32_t cpus = 1);
  // Job `job` always fails on `broken` and has a healthy worker that fits it (invariant 6).
  void OnBrokenJob(core::JobId job, std::vector<core::WorkerName> broken) {
    broken_[job] = std::move(broken);
  }
  // Ground truth from the simulated workers, before the report is sent.
  void OnWorkerReported(core::AttemptId attempt, core::ReportResult result,
                        const std::vector<core::OutputFile>& outputs);
  // Something from `worker` was applied to the core at `now`.
  void OnHeard(const core::WorkerName& worker, core::MonoTime now);
  // The coordinator restarted from its store at `now`: every worker's silence starts over.
  void OnRestart(core::MonoTime now);
  // One Apply batch; `tick` when the event was a Tick.
  void OnBatch(const std::vector<core::Decision>& batch, core::MonoTime now, bool tick);
  // The store refused a batch of the core's records (the core asked for something impossible).
  void OnStoreError(core::MonoTime now, const std::string& message) {
    Violation(now, "the store refused a batch of records: " + message);
  }
  // Liveness: call at the end of a run whose faults had stopped.
  void CheckFinished(core::MonoTime now);

  const std::vector<std::string>& violations() const { return violations_; }

 private:
  struct TaskTruth {
    core::TaskState state = core::TaskState::kPending;
    uint32_t live = 0;       // running attempts
    uint32_t failures = 0;   // attempts ended kFailed or kTimedOut
    uint32_t commits = 0;
    // Workers its attempts were lost with since its last success, failure or timeout, each once.
    std::vector<core::WorkerName> lost_with;
  };
  struct AttemptTruth {
    core::TaskKey task;
    core::WorkerName worker;
  };
  void Violation(core::MonoTime now, std::string what);
  TaskTruth* Task(core::TaskKey key);

  core::Millis lease_, tick_;
  uint32_t lost_in_a_row_ = 0;
  std::map<core::JobId, std::vector<TaskTruth>> tasks_;
  std::map<core::JobId, uint32_t> max_attempts_;
  std::map<core::JobId, bool> job_final_;
  std::map<core::JobId, std::vector<core::WorkerName>> broken_;  // invariant 6, until a restart
  std::map<core::AttemptId, AttemptTruth> live_;  // running attempts
  std::map<core::AttemptId, AttemptTruth> lost_;  // ended kLost: a late success may end them again
  std::map<core::WorkerName, uint32_t> live_by_worker_;
  std::map<core::WorkerName, core::MonoTime> heard_;
  std::map<core::AttemptId, std::vector<core::OutputFile>> succeeded_;  // worker truth
  std::set<core::AttemptId> failed_;                                    // worker truth
  std::vector<std::string> violations_;
  ShareChecker shares_;  // invariants 7 and 8
};

}  // namespace idlepool::sim
