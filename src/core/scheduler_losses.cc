// Losses of a task's workers in a row (see "Failures" in scheduler.h: a task that crashes its
// workers fails). Same thread rules as the rest of the Scheduler.
#include <algorithm>
#include <string>
#include <vector>

#include "core/scheduler.h"

namespace idlepool::core {

std::string Scheduler::CountLoss(const TaskKey& key, const AttemptRec& a, AttemptOutcome outcome,
                                 bool alone) {
  const bool planted = options_.planted_bug == Options::PlantedBug::kPreemptionsAsLosses &&
                       outcome == AttemptOutcome::kPreempted;
  if (outcome == AttemptOutcome::kSucceeded || outcome == AttemptOutcome::kFailed ||
      outcome == AttemptOutcome::kTimedOut) {
    lost_in_a_row_.erase(key);  // it ran to an end on a worker that outlived it
    return "";
  }
  if (!(outcome == AttemptOutcome::kLost && a.worker_died) && !planted) return "";
  const uint32_t limit = options_.max_workers_lost_in_a_row;
  if (limit == 0) return "";
  avoid_[key][a.worker] = now_ + options_.machine_fault_avoid;  // not straight back to it
  std::vector<WorkerName>& died = lost_in_a_row_[key];
  if (died.size() < limit && std::find(died.begin(), died.end(), a.worker) == died.end()) {
    died.push_back(a.worker);
  }
  if (!alone || died.size() < limit) return "";
  std::string why =
      "the task fails: lost with " + std::to_string(died.size()) + " different workers in a row (";
  for (size_t i = 0; i < died.size(); ++i) why += (i == 0 ? "" : ", ") + died[i];
  why += "), each of which died while running it: a task that crashes its worker?";
  lost_in_a_row_.erase(key);
  return why;
}

}  // namespace idlepool::core
