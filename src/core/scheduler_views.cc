// The scheduler's read-only views (Job, Jobs, Workers, Worker, CurrentAttempt, RunningOn):
// summaries of its state for status queries, computed on demand. Same thread rules as the rest of
// the Scheduler.
#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "core/scheduler.h"

namespace idlepool::core {

std::optional<JobSummary> Scheduler::Job(JobId id) const {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return std::nullopt;
  const JobRec& job = it->second;
  JobSummary s;
  s.job = id;
  s.state = job.state;
  s.tasks = static_cast<uint32_t>(job.tasks.size());
  for (const TaskRec& t : job.tasks) {
    switch (t.state) {
      case TaskState::kPending:
        ++s.pending;
        break;
      case TaskState::kRunning:
        ++s.running;
        break;
      case TaskState::kSucceeded:
        ++s.succeeded;
        break;
      case TaskState::kFailed:
        ++s.failed;
        break;
      case TaskState::kCancelled:
        ++s.cancelled;
        break;
    }
  }
  s.counters = job.counters;
  s.workers_lost = static_cast<uint32_t>(job.workers_lost.size());
  s.host_network = job.spec.resources.host_network;
  if (job.spec.service) {
    s.service = true;
    s.replicas = job.spec.service->replicas;
  }
  for (auto r = restarts_.lower_bound(TaskKey{id, 0}); r != restarts_.end() && r->first.job == id;
       ++r) {
    if (job.tasks[r->first.index].state == TaskState::kPending) ++s.restarting;
  }
  if (job.waiting) s.waiting_on = AfterPending(job);
  s.after = job.spec.after;
  s.held_off = health_.HeldOffOf(id);
  if (s.pending > 0 && job.state == JobState::kRunning) {
    s.quota = HeldBy(ordering_.SettingsOf(job.spec.user).quota,
                     ordering_.usage().At(job.spec.user, now_).slots,
                     ordering_.usage().At(job.spec.user, now_).gpus, job.spec.resources.cpus,
                     job.spec.resources.gpus);
  }
  if (s.pending > 0) {
    // Capacity first (cpus, memory, GPUs), then, among the workers it fits, the network.
    Resources need = job.spec.resources;
    need.host_network = false;
    uint32_t fit = 0, refuse = 0;
    for (const auto& [name, w] : workers_) {
      if (!Connected(w) || !CapacityFits(w, need)) continue;
      ++fit;
      if (!NetworkFits(w, job.spec.resources)) ++refuse;
    }
    s.fits_no_worker = fit == 0;
    if (fit > 0 && refuse == fit) s.host_network_refused = refuse;
  }
  return s;
}

std::vector<JobSummary> Scheduler::Jobs() const {
  std::vector<JobSummary> all;
  all.reserve(jobs_.size());
  for (const auto& [id, job] : jobs_) all.push_back(*Job(id));
  return all;
}

std::vector<WorkerView> Scheduler::Workers() const {
  std::vector<WorkerView> all;
  all.reserve(workers_.size());
  for (const auto& [name, w] : workers_) all.push_back(*Worker(name));
  return all;
}

std::optional<WorkerView> Scheduler::Worker(const WorkerName& name) const {
  auto it = workers_.find(name);
  if (it == workers_.end()) return std::nullopt;
  const WorkerRec& w = it->second;
  WorkerView v{name,
               w.state,
               w.session,
               w.boot_id,
               w.capacity,
               w.slots_busy,
               static_cast<uint32_t>(w.attempts.size()),
               w.last_seen,
               w.accepting,
               w.owner_state,
               w.owner_reason,
               Speed(w),
               w.up_ends,
               w.cache_bytes,
               w.cache_blobs,
               w.owner_cause};
  v.gpus = w.gpus;
  for (const auto& [index, attempt] : w.gpu_owner) v.gpus_busy.push_back(index);
  v.stalled = w.stalled;
  if (const std::optional<Unhealthy> u = health_.UnhealthyOf(name)) {
    v.unhealthy = u->last_error;
    v.unhealthy_until = u->until;
  }
  v.accept_users = w.accept_users;
  v.refuse_users = w.refuse_users;
  return v;
}

std::optional<AttemptId> Scheduler::CurrentAttempt(TaskKey key) const {
  auto it = jobs_.find(key.job);
  if (it == jobs_.end() || key.index >= it->second.tasks.size()) return std::nullopt;
  const AttemptId id = it->second.tasks[key.index].current;
  if (id == 0) return std::nullopt;
  return id;
}

std::optional<TaskKey> Scheduler::RunningOn(AttemptId id, const WorkerName& worker,
                                            SessionId session) const {
  auto a = attempts_.find(id);
  if (a == attempts_.end() || a->second.worker != worker || a->second.orphan_deadline) {
    return std::nullopt;
  }
  auto w = workers_.find(worker);
  if (w == workers_.end() || w->second.session != session || !w->second.session_open ||
      w->second.state != WorkerState::kConnected) {
    return std::nullopt;
  }
  return a->second.task;
}

}  // namespace idlepool::core
