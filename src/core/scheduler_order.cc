// Scheduler::Schedule, one placement pass in the order of core/ordering.h, and its steps.
#include <algorithm>
#include <optional>
#include <vector>

#include "core/scheduler.h"

namespace idlepool::core {

// One pass: the order (core/ordering.h: services, then users by decayed usage / share, then
// priority, then the oldest job) hands out a job, and its first task a worker can take is placed.
void Scheduler::Schedule(MonoTime now, std::vector<Decision>& out) {
  if (free_index_.empty() || pending_.empty()) return;  // no free slot, or nothing to place
  PlacementOrder order = ordering_.Begin(Candidates(), now);
  while (std::optional<JobId> job = order.Next()) {
    if (free_index_.empty()) return;
    if (PlaceNextOf(*job, order.Ahead(*job), now, out)) {
      order.Placed(*job);
    } else {
      order.Skip(*job);
    }
  }
}

// Only the jobs that some free worker fits (every task of a job needs the same resources): the
// others cannot place a task in this pass, and leaving them out keeps a pass over many jobs that
// fit nothing (bench/attacks/name_churn.sh) as cheap as the check itself.
std::vector<Candidate> Scheduler::Candidates() const {
  std::vector<Candidate> out;
  for (auto it = pending_.begin(); it != pending_.end();
       it = pending_.lower_bound(TaskKey{it->job + 1, 0})) {
    const JobRec& job = jobs_.at(it->job);
    const Resources& r = job.spec.resources;
    if (std::none_of(free_index_.begin(), free_index_.end(), [&](const FreeEntry& f) {
          const WorkerRec& w = workers_.at(f.name);
          return Fits(w, r) && LendsTo(w, job.spec.user);
        })) {
      continue;
    }
    out.push_back(Candidate{it->job, job.spec.user, job.spec.priority, job.spec.service.has_value(),
                            job.pending, r.cpus, r.gpus});
    // The planted starvation bug (DST): every job one anonymous user's, oldest first.
    if (options_.planted_bug == Options::PlantedBug::kFifoAcrossUsers) {
      out.back().user.clear();
      out.back().priority = 0;
    }
  }
  return out;
}

bool Scheduler::PlaceNextOf(JobId job_id, uint64_t ahead, MonoTime now,
                            std::vector<Decision>& out) {
  JobRec& job = jobs_.at(job_id);
  const Resources& need = job.spec.resources;
  for (auto it = pending_.lower_bound(TaskKey{job_id, 0});
       it != pending_.end() && it->job == job_id; ++it) {
    const TaskKey key = *it;
    // The best-ranked worker wins, then the most free slots, then the first by name: the first
    // that fits in index order (usually the first of all; only gpus or memory make it look
    // further).
    WorkerName best_name;
    const WorkerName* best = nullptr;
    const bool avoiding =
        (!avoid_.empty() && avoid_.count(key) != 0) || job.spec.service || health_.Marked(key);
    for (const FreeEntry& f : free_index_) {
      const WorkerRec& w = workers_.at(f.name);
      if (Fits(w, need) && LendsTo(w, job.spec.user) && !(avoiding && Avoided(key, f.name, now))) {
        best_name = f.name;
        best = &best_name;
        break;
      }
    }
    // Locality: a holder of the task's inputs may finish sooner (scheduler_locality.cc).
    if (best != nullptr) PreferHolder(key, avoiding, now, best_name);
    // Kept off the only workers that fit (machine faults): this task waits, the job's others
    // may still go there.
    if (best == nullptr && avoiding) continue;
    // No fit: every task of a job needs the same resources and placing only uses capacity up,
    // so no later task of this job fits either during this pass. The tail rule: the best free
    // worker waits, and every other free one ranks lower, so it would wait too. Not for a task
    // that failed somewhere: the better-ranked workers may be the ones it avoids (Health).
    if (best == nullptr ||
        (Ranked() && !job.spec.service && !health_.Marked(key) &&
         ShouldWait(workers_.at(*best), need, MeanMs(job), ahead + job.pending))) {
      return false;
    }
    Place(key, *best, now, out);  // erases `key` from pending_: `it` is not used again
    return true;
  }
  return false;
}

}  // namespace idlepool::core
