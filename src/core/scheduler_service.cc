// Services: replicas that restart instead of finishing, scaling, and at most a few replicas per
// machine (see "Services" in scheduler.h). Same thread rules as the rest of the Scheduler.
#include <algorithm>
#include <vector>

#include "core/scheduler.h"

namespace idlepool::core {

uint32_t Scheduler::RunnableAtSubmit(const JobSubmitted& e) {
  return e.service ? std::min(e.service->replicas, e.task_count) : e.task_count;
}

void Scheduler::OnScale(const ScaleService& e, std::vector<Decision>& out) {
  auto it = jobs_.find(e.job);
  if (it == jobs_.end() || it->second.state != JobState::kRunning || !it->second.spec.service) {
    return;
  }
  JobRec& job = it->second;
  const auto size = static_cast<uint32_t>(job.tasks.size());
  const uint32_t wanted = std::min(e.replicas, size);
  job.spec.service->replicas = wanted;
  for (uint32_t i = 0; i < size; ++i) {
    const TaskKey key{e.job, i};
    TaskRec& t = job.tasks[i];
    if (i < wanted) {
      // A waiting service (Pipelines) places none: it starts with the replicas wanted then.
      if (t.state == TaskState::kPending && restarts_.count(key) == 0 && !job.waiting) {
        AddPending(key);
      }
      continue;
    }
    restarts_.erase(key);
    ErasePending(key);
    if (t.state != TaskState::kRunning) continue;
    const AttemptId id = t.current;
    const AttemptRec& a = attempts_.at(id);
    auto w = workers_.find(a.worker);
    if (w != workers_.end() && w->second.attempts.count(id) != 0) {
      out.push_back(KillAttempt{a.worker, w->second.session, id, KillReason::kCancelled});
    }
    EndAttempt(id, AttemptOutcome::kCancelled, 0, "scaled down", out);
  }
}

void Scheduler::EndReplica(JobRec& job, const AttemptRec& a, AttemptOutcome outcome,
                           MonoTime now, std::vector<Decision>& out) {
  TaskRec& task = job.tasks[a.task.index];
  const bool crashed = outcome == AttemptOutcome::kSucceeded ||
                       outcome == AttemptOutcome::kFailed || outcome == AttemptOutcome::kTimedOut;
  switch (outcome) {
    case AttemptOutcome::kFailed:
    case AttemptOutcome::kTimedOut:
      ++job.counters.failures;
      break;
    case AttemptOutcome::kPreempted:
      ++job.counters.preemptions;
      break;
    case AttemptOutcome::kLost:
      ++job.counters.lost;
      job.workers_lost.insert(a.worker);
      break;
    case AttemptOutcome::kMachineFault:
      ++job.counters.machine_faults;
      avoid_[a.task][a.worker] = now + options_.machine_fault_avoid;
      break;
    default:
      break;
  }
  // Crashes in a row: a replica that ran long enough was healthy, whatever ended it.
  if (now - a.started >= options_.replica_healthy_run) task.failures = 0;
  if (crashed) ++task.failures;
  task.state = TaskState::kPending;
  if (a.task.index < job.spec.service->replicas) {
    if (crashed) {
      const uint32_t doublings = std::min<uint32_t>(task.failures - 1, 20);
      const Millis backoff = std::min(options_.replica_restart_max,
                                      options_.replica_restart_min * (int64_t{1} << doublings));
      restarts_[a.task] = now + backoff;
    } else {
      AddPending(a.task);
    }
  }
  out.push_back(TaskChanged{a.task, task.state, task.failures, 0, {}});
}

void Scheduler::RestartDue(MonoTime now) {
  for (auto it = restarts_.begin(); it != restarts_.end();) {
    if (it->second > now) {
      ++it;
      continue;
    }
    const TaskKey key = it->first;
    it = restarts_.erase(it);
    auto job = jobs_.find(key.job);
    if (job != jobs_.end() && job->second.state == JobState::kRunning &&
        job->second.tasks[key.index].state == TaskState::kPending) {
      AddPending(key);
    }
  }
}

bool Scheduler::ReplicasFull(const TaskKey& key, const WorkerName& name) const {
  const JobRec& job = jobs_.at(key.job);
  auto w = workers_.find(name);
  if (!job.spec.service || w == workers_.end()) return false;
  uint32_t n = 0;
  for (const AttemptId id : w->second.attempts) {
    auto a = attempts_.find(id);
    if (a != attempts_.end() && a->second.task.job == key.job) ++n;
  }
  return n >= job.spec.service->per_machine;
}

}  // namespace idlepool::core
