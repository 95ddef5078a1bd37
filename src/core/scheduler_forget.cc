// Forgetting departed workers (Scheduler::ForgetDeparted) and deleted jobs (ForgetJob). A worker
// that left or was lost, owes nothing and was not seen for a while is dropped from memory, so the
// core's state and every pass over its workers follow the pool as it is, not every name it ever saw
// (issue 21: a pool that saw tens of thousands of names spent a core on them). Same thread rules as
// the rest of the Scheduler.
#include <map>
#include <vector>

#include "core/scheduler.h"

namespace idlepool::core {

std::vector<WorkerName> Scheduler::ForgetDeparted(MonoTime now, Millis after) {
  std::vector<WorkerName> gone;
  for (const auto& [name, w] : workers_) {
    const bool departed = w.state == WorkerState::kLost || w.state == WorkerState::kLeft;
    if (departed && !w.session_open && w.attempts.empty() && w.gpu_owner.empty() &&
        w.last_seen + after <= now) {
      gone.push_back(name);
    }
  }
  for (const WorkerName& name : gone) {
    Reindex(name);  // out of every index (it is not schedulable)
    WorkerRec& w = workers_.at(name);
    DropBlobs(w, name);
    (void)health_.Reset(name);  // a forgotten worker starts afresh
    workers_.erase(name);
  }
  return gone;
}

bool Scheduler::ForgetJob(JobId job) {
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return true;
  if (it->second.state == JobState::kRunning) return false;
  for (const auto& [id, a] : attempts_) {
    if (a.task.job == job) return false;
  }
  auto of_job = [job](const auto& entry) { return entry.first.job == job; };
  std::erase_if(lost_in_a_row_, of_job);
  std::erase_if(avoid_, of_job);
  health_.ForgetJob(job);
  std::erase_if(restarts_, of_job);
  std::erase_if(pending_, [job](const TaskKey& k) { return k.job == job; });
  std::erase_if(lost_attempts_, [job](const auto& e) { return e.second.task.job == job; });
  std::erase_if(planted_ended_, [job](const auto& e) { return e.second.job == job; });
  jobs_.erase(it);
  return true;
}

}  // namespace idlepool::core
