// The tick's watch over running attempts: the timeout backstop and stalled attempts (see
// "Timeouts" and "Stalls" in scheduler.h). Same thread rules as the rest of the Scheduler.
#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "core/scheduler.h"

namespace idlepool::core {

void Scheduler::KillOverdue(MonoTime now, std::vector<Decision>& out) {
  // The worker enforces timeout_s itself; this catches one that did not.
  const bool any_timeout = std::any_of(jobs_.begin(), jobs_.end(), [](const auto& kv) {
    return kv.second.state == JobState::kRunning && kv.second.spec.timeout > Millis{0};
  });
  if (!any_timeout) return;
  std::vector<AttemptId> overdue;
  for (const auto& [id, a] : attempts_) {
    if (a.orphan_deadline || a.suspended_since) continue;
    const Millis timeout = JobOf(a.task).spec.timeout;
    if (timeout > Millis{0} && a.started + timeout + options_.timeout_grace <= now) {
      overdue.push_back(id);
    }
  }
  for (AttemptId id : overdue) {
    const AttemptRec& a = attempts_.at(id);
    auto w = workers_.find(a.worker);
    if (w != workers_.end()) {
      out.push_back(KillAttempt{a.worker, w->second.session, id, KillReason::kTimedOut});
    }
    EndAttempt(id, AttemptOutcome::kTimedOut, 0, "timed out (no report from the worker)", out);
  }
}

void Scheduler::MoveStalled(MonoTime now, std::vector<Decision>& out) {
  const StallRule& rule = options_.stall;
  if (!rule.enabled || (last_stall_check_ && now - *last_stall_check_ < Millis(1000))) return;
  last_stall_check_ = now;
  for (auto& [name, w] : workers_) {
    if (!w.stalled.empty() && w.stalled_until <= now) {
      w.stalled.clear();
      Reindex(name);
    }
  }
  std::map<JobId, std::pair<Millis, std::optional<Millis>>> limits;  // job -> limit, median
  std::vector<std::pair<AttemptId, std::string>> stalled;
  for (const auto& [id, a] : attempts_) {
    // A replica of a service runs until stopped: never stalled.
    if (a.orphan_deadline || a.suspended_since || JobOf(a.task).spec.service) continue;
    auto [it, added] = limits.try_emplace(a.task.job);
    if (added) {
      const JobRec& job = JobOf(a.task);
      it->second.second = job.times.Median();
      it->second.first = StallLimit(rule, it->second.second, job.input_bytes);
    }
    const Millis quiet = std::chrono::duration_cast<Millis>(now - std::max(a.started, a.progress));
    if (quiet > it->second.first) {
      stalled.emplace_back(id, StallMessage(rule, quiet, it->second.first, it->second.second));
    }
  }
  for (const auto& [id, message] : stalled) {
    const WorkerName worker = attempts_.at(id).worker;
    auto w = workers_.find(worker);
    if (w != workers_.end()) {
      if (w->second.attempts.count(id) != 0) {
        out.push_back(KillAttempt{worker, w->second.session, id, KillReason::kStale});
      }
      w->second.stalled = message;
      w->second.stalled_until = now + rule.avoid;
    }
    EndAttempt(id, AttemptOutcome::kLost, 0, message, out);
    Reindex(worker);
  }
}

}  // namespace idlepool::core
