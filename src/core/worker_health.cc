#include "core/worker_health.h"

#include <algorithm>

namespace idlepool::core {

bool WorkerHealth::Failed(const TaskKey& task, const WorkerName& worker, uint32_t hold_off_after,
                          const std::string& message, MonoTime now) {
  failed_on_[task].insert(worker);
  Hold& h = holds_[{task.job, worker}];
  ++h.failures;
  h.last_error = message;
  if (hold_off_after > 0 && h.failures >= hold_off_after) h.held = true;
  Streak& s = streaks_[worker];
  s.jobs.insert(task.job);
  s.last_error =
      "job " + std::to_string(task.job) + " task " + std::to_string(task.index) + ": " + message;
  return MaybeTrip(s, now);
}

void WorkerHealth::CannotStart(const TaskKey& task, const WorkerName& worker,
                               const std::string& message) {
  failed_on_[task].insert(worker);
  Hold& h = holds_[{task.job, worker}];
  ++h.failures;
  h.last_error = message;
  h.held = true;
}

std::vector<WorkerName> WorkerHealth::Succeeded(const TaskKey& task, const WorkerName& worker,
                                                MonoTime now) {
  failed_on_.erase(task);
  holds_.erase({task.job, worker});
  streaks_.erase(worker);
  std::vector<WorkerName> tripped;
  if (!worked_.insert(task.job).second) return tripped;
  // The job works: its failures elsewhere now count against those machines.
  for (auto& [name, s] : streaks_) {
    if (s.jobs.count(task.job) != 0 && MaybeTrip(s, now)) tripped.push_back(name);
  }
  return tripped;
}

bool WorkerHealth::MaybeTrip(Streak& s, MonoTime now) {
  if (s.until && now < *s.until) return false;  // already out
  const auto counted = static_cast<uint32_t>(std::count_if(
      s.jobs.begin(), s.jobs.end(), [this](JobId j) { return worked_.count(j) != 0; }));
  if (rule_.distinct_jobs == 0 || counted < rule_.distinct_jobs) return false;
  const uint32_t doublings = std::min<uint32_t>(s.trips, 30);
  const double wait =
      std::min(static_cast<double>(rule_.backoff.count()) * double(1ull << doublings),
               static_cast<double>(rule_.max_backoff.count()));
  s.until = now + Millis{static_cast<int64_t>(wait)};
  ++s.trips;
  return true;
}

bool WorkerHealth::Reset(const WorkerName& worker) {
  bool changed = false;
  if (auto s = streaks_.find(worker); s != streaks_.end()) {
    changed = s->second.until.has_value();
    streaks_.erase(s);
  }
  for (auto it = holds_.begin(); it != holds_.end();) {
    if (it->first.second == worker) {
      changed = changed || it->second.held;
      it = holds_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = failed_on_.begin(); it != failed_on_.end();) {
    it->second.erase(worker);
    it = it->second.empty() ? failed_on_.erase(it) : std::next(it);
  }
  return changed;
}

void WorkerHealth::ForgetJob(JobId job) {
  failed_on_.erase(failed_on_.lower_bound(TaskKey{job, 0}),
                   failed_on_.lower_bound(TaskKey{job + 1, 0}));
  holds_.erase(holds_.lower_bound({job, WorkerName{}}),
               holds_.lower_bound({job + 1, WorkerName{}}));
  worked_.erase(job);
  for (auto& [name, s] : streaks_) s.jobs.erase(job);
}

std::vector<WorkerName> WorkerHealth::Recover(MonoTime now) {
  std::vector<WorkerName> back;
  for (auto& [name, s] : streaks_) {
    if (s.until && now >= *s.until) {
      s.until.reset();
      back.push_back(name);
    }
  }
  return back;
}

bool WorkerHealth::IsHeldOff(JobId job, const WorkerName& worker) const {
  auto it = holds_.find({job, worker});
  return it != holds_.end() && it->second.held;
}

bool WorkerHealth::FailedOn(const TaskKey& task, const WorkerName& worker) const {
  auto it = failed_on_.find(task);
  return it != failed_on_.end() && it->second.count(worker) != 0;
}

bool WorkerHealth::Marked(const TaskKey& task) const {
  if (failed_on_.count(task) != 0) return true;
  auto it = holds_.lower_bound({task.job, WorkerName{}});
  for (; it != holds_.end() && it->first.first == task.job; ++it) {
    if (it->second.held) return true;
  }
  return false;
}

std::optional<Unhealthy> WorkerHealth::UnhealthyOf(const WorkerName& worker) const {
  auto it = streaks_.find(worker);
  if (it == streaks_.end() || !it->second.until) return std::nullopt;
  return Unhealthy{it->second.last_error, *it->second.until,
                   static_cast<uint32_t>(it->second.jobs.size())};
}

std::vector<HeldOff> WorkerHealth::HeldOffOf(JobId job) const {
  std::vector<HeldOff> out;
  auto it = holds_.lower_bound({job, WorkerName{}});
  for (; it != holds_.end() && it->first.first == job; ++it) {
    if (it->second.held)
      out.push_back({it->first.second, it->second.failures, it->second.last_error});
  }
  return out;
}

}  // namespace idlepool::core
