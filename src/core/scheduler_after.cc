// Pipelines: a job that runs after other jobs waits until they have all succeeded, and is
// cancelled when one of them fails or is cancelled (see "Pipelines" in scheduler.h). Same thread
// rules as the rest of the Scheduler.
#include <algorithm>
#include <string>
#include <variant>
#include <vector>

#include "core/scheduler.h"

namespace idlepool::core {

JobId Scheduler::AfterFailed(const JobRec& job) const {
  for (const JobId d : job.spec.after) {
    auto it = jobs_.find(d);
    if (d == job.spec.job || it == jobs_.end()) continue;
    if (it->second.state == JobState::kFailed || it->second.state == JobState::kCancelled) {
      return d;
    }
  }
  return 0;
}

std::vector<JobId> Scheduler::AfterPending(const JobRec& job) const {
  std::vector<JobId> out;
  for (const JobId d : job.spec.after) {
    auto it = jobs_.find(d);
    // Only older jobs can hold it back (ids grow with submission), so no cycle can form.
    if (d >= job.spec.job || it == jobs_.end()) continue;
    if (it->second.state == JobState::kRunning) out.push_back(d);
  }
  return out;
}

void Scheduler::StartOrWait(JobRec& job, JobId id, MonoTime now, std::vector<Decision>& out) {
  if (const JobId bad = AfterFailed(job); bad != 0) {
    job.waiting = false;
    waiting_.erase(id);
    const bool failed = jobs_.at(bad).state == JobState::kFailed;
    OnCancel(
        JobCancelled{id, "job " + std::to_string(bad) + (failed ? " failed" : " was cancelled")},
        now, out);
    return;
  }
  if (!AfterPending(job).empty()) {
    job.waiting = true;
    waiting_.insert(id);
    return;
  }
  job.waiting = false;
  waiting_.erase(id);
  const auto size = static_cast<uint32_t>(job.tasks.size());
  const uint32_t runnable = job.spec.service ? std::min(job.spec.service->replicas, size) : size;
  for (uint32_t i = 0; i < runnable; ++i) {
    const TaskKey key{id, i};
    if (job.tasks[i].state == TaskState::kPending && restarts_.count(key) == 0) AddPending(key);
  }
}

void Scheduler::ResolveAfter(MonoTime now, std::vector<Decision>& out, size_t first) {
  bool changed = after_dirty_;
  after_dirty_ = false;
  for (size_t i = first; i < out.size() && !changed; ++i) {
    changed = std::holds_alternative<JobChanged>(out[i]);
  }
  // A cancellation here may cancel the jobs that run after it in turn: go on until none does.
  while (changed && !waiting_.empty()) {
    changed = false;
    const std::vector<JobId> ids(waiting_.begin(), waiting_.end());
    for (const JobId id : ids) {
      JobRec& job = jobs_.at(id);
      if (job.state != JobState::kRunning) {  // cancelled while it waited
        job.waiting = false;
        waiting_.erase(id);
        continue;
      }
      StartOrWait(job, id, now, out);
      changed = changed || job.state != JobState::kRunning;
    }
  }
}

}  // namespace idlepool::core
