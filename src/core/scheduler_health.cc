// Failures steer placement (see "Health" in scheduler.h; the bookkeeping is core/worker_health.h):
// a retry avoids the workers its task failed on, a job's held-off workers get none of its tasks,
// and an unhealthy worker gets no new work. Same thread rules as the rest of the Scheduler.
#include <string>
#include <vector>

#include "core/scheduler.h"

namespace idlepool::core {

void Scheduler::NoteHealth(const AttemptRec& a, AttemptOutcome outcome,
                           const std::string& message) {
  if (a.unsent) return;  // the worker never saw it
  if (outcome == AttemptOutcome::kFailed || outcome == AttemptOutcome::kTimedOut) {
    const uint32_t hold_off_after = JobOf(a.task).spec.hold_off_after;
    if (health_.Failed(a.task, a.worker, hold_off_after, message, now_)) SyncHealth(a.worker);
  } else if (outcome == AttemptOutcome::kSucceeded) {
    const bool was_unhealthy = health_.UnhealthyOf(a.worker).has_value();
    for (const WorkerName& name : health_.Succeeded(a.task, a.worker, now_)) SyncHealth(name);
    if (was_unhealthy) SyncHealth(a.worker);
  }
}

void Scheduler::NoteCannotStart(const AttemptReport& e) {
  auto it = attempts_.find(e.attempt);
  if (it == attempts_.end() || JobOf(it->second.task).spec.service) return;
  health_.CannotStart(it->second.task, e.worker, e.message);
}

void Scheduler::OnReset(const WorkerReset& e) {
  if (health_.Reset(e.worker)) SyncHealth(e.worker);
}

void Scheduler::RecoverHealthy(MonoTime now) {
  for (const WorkerName& name : health_.Recover(now)) SyncHealth(name);
}

void Scheduler::SyncHealth(const WorkerName& name) {
  auto it = workers_.find(name);
  if (it == workers_.end()) return;
  const std::optional<Unhealthy> u = health_.UnhealthyOf(name);
  it->second.unhealthy = u ? "unhealthy: " + u->last_error : "";
  Reindex(name);
}

bool Scheduler::Steered(const TaskKey& key, const WorkerName& name, MonoTime now) const {
  const auto job = jobs_.find(key.job);
  if (job == jobs_.end() || job->second.spec.service) return false;
  if (options_.planted_bug == Options::PlantedBug::kPinRetries) {
    // The planted bug: a task that failed somewhere goes back to a worker it failed on.
    return health_.FailedSomewhere(key) && !health_.FailedOn(key, name);
  }
  if (!health_.FailedOn(key, name) && !health_.IsHeldOff(key.job, name)) return false;
  return ElsewhereSoon(key, name, now);
}

bool Scheduler::ElsewhereSoon(const TaskKey& key, const WorkerName& name, MonoTime now) const {
  const Resources& need = jobs_.at(key.job).spec.resources;
  for (const auto& [other, w] : workers_) {
    if (other == name || !w.unhealthy.empty() || !CapacityFits(w, need)) continue;
    // One that said goodbye may be gone for the day; one lost (cut off, crashed) is often back
    // within minutes, but not after machine_fault_avoid.
    // One kept off the task for a while (it died with it, its disk filled) still counts: that
    // wait is bounded, a retry on a worker that fails the task is not.
    if (w.state == WorkerState::kLeft) continue;
    if (w.state == WorkerState::kLost && w.last_seen + options_.machine_fault_avoid <= now)
      continue;
    if (health_.FailedOn(key, other) || health_.IsHeldOff(key.job, other)) continue;
    return true;
  }
  return false;
}

}  // namespace idlepool::core
