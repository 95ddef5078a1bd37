// The shared pool's invariants for deterministic simulation testing (sim/dst.h numbers them 7
// and 8), fed the same decision batches as the InvariantChecker:
//   7. starvation bound: a user with eligible pending work and no running attempt is passed
//      over at most kPassOverBound times in a row, where a pass-over is a slot handed to another
//      user whose usage per share is higher than the waiting user's (by more than a slack for
//      rounding). A pending task is eligible on the worker that got the slot when it needs no
//      more slots than the task placed there, it was not lost on that worker, its job never
//      failed there, and its last attempt did not fail (a retry may be waiting out a backoff).
//      The bound absorbs the core's other legitimate reasons to leave a task pending for a while
//      (the tail rule, a user that fair preemption counts as starving going first).
//   8. quotas: no attempt is placed that takes its user past max_slots (revived and re-adopted
//      attempts are not placements and may).
// Usage is counted here from the decisions themselves (slot-ms held, not decayed: DST scenarios
// set a half-life far longer than a run), and starts over at a coordinator restart, as the
// simulated coordinator does not save it.
//
// Thread safety: one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/scheduler.h"

namespace idlepool::sim {

class ShareChecker {
 public:
  static constexpr uint32_t kPassOverBound = 8;
  using Report = std::function<void(std::string)>;

  void SetUsers(const std::vector<core::UserSet>& users);
  void OnJob(core::JobId job, const core::UserName& user, uint32_t cpus, uint32_t tasks);
  void OnRestart(core::MonoTime now);
  void OnCreated(const core::AttemptCreated& c, core::MonoTime now, const Report& report);
  void OnEnded(const core::AttemptEnded& e, core::MonoTime now);
  void OnTaskState(core::TaskKey task, core::TaskState state);

 private:
  struct TaskFacts {
    core::TaskState state = core::TaskState::kPending;
    bool retrying = false;  // its last attempt failed: it may wait out a backoff
    std::set<core::WorkerName> lost_on;
  };
  struct JobFacts {
    core::UserName user;
    uint32_t cpus = 1;
    std::vector<TaskFacts> tasks;
    std::set<core::WorkerName> failed_on;
  };
  struct Held {
    core::UserName user;
    uint32_t cpus = 1;
    core::TaskKey task;
    core::MonoTime since{};
  };
  double UsagePerShare(const core::UserName& user, core::MonoTime now) const;
  uint32_t HeldSlots(const core::UserName& user) const;
  bool WaitsFor(const core::UserName& user, const core::WorkerName& worker, uint32_t cpus) const;
  void CountPassOvers(const core::UserName& placed, const core::WorkerName& worker, uint32_t cpus,
                      core::MonoTime now, const Report& report);

  std::map<core::UserName, core::UserSet> users_;
  std::map<core::JobId, JobFacts> jobs_;
  std::map<core::AttemptId, Held> held_;
  std::map<core::UserName, double> used_slot_ms_;  // by ended attempts since the last restart
  std::map<core::UserName, uint32_t> passed_over_;
};

}  // namespace idlepool::sim
