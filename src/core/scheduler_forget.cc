// Forgetting departed workers (Scheduler::ForgetDeparted): a worker that left or was lost, owes
// nothing and was not seen for a while is dropped from memory, so the core's state and every
// pass over its workers follow the pool as it is, not every name it ever saw (issue 21: a pool
// that saw tens of thousands of names spent a core on them). Same thread rules as the rest of
// the Scheduler.
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
    workers_.erase(name);
  }
  return gone;
}

}  // namespace idlepool::core
