#include "sim/dst.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <variant>

namespace idlepool::sim {
namespace {

std::string Key(core::TaskKey k) {
  return "task " + std::to_string(k.job) + "/" + std::to_string(k.index);
}

}  // namespace

void InvariantChecker::Violation(core::MonoTime now, std::string what) {
  if (violations_.size() >= kMaxViolations) return;
  char at[48];
  std::snprintf(at, sizeof at, "t=%.3f s: ",
                static_cast<double>(now.time_since_epoch().count()) / 1000.0);
  violations_.push_back(at + what);
}

InvariantChecker::TaskTruth* InvariantChecker::Task(core::TaskKey key) {
  auto it = tasks_.find(key.job);
  if (it == tasks_.end() || key.index >= it->second.size()) return nullptr;
  return &it->second[key.index];
}

void InvariantChecker::OnJob(core::JobId job, uint32_t tasks, uint32_t max_attempts,
                             const core::UserName& user, uint32_t cpus) {
  shares_.OnJob(job, user, cpus, tasks);
  tasks_[job].resize(tasks);
  max_attempts_[job] = max_attempts;
  job_final_[job] = false;
}

void InvariantChecker::OnWorkerReported(core::AttemptId attempt, core::ReportResult result,
                                        const std::vector<core::OutputFile>& outputs) {
  if (result == core::ReportResult::kSucceeded) succeeded_[attempt] = outputs;
  if (result == core::ReportResult::kFailed) failed_.insert(attempt);
}

void InvariantChecker::OnHeard(const core::WorkerName& worker, core::MonoTime now) {
  heard_[worker] = now;
}

void InvariantChecker::OnRestart(core::MonoTime now) {
  // The core forgets which workers fail which jobs: invariant 6 no longer holds for those running.
  std::erase_if(broken_, [this](const auto& b) { return !job_final_[b.first]; });
  for (auto& [name, t] : heard_) t = now;
  for (const auto& [name, n] : live_by_worker_) heard_[name] = now;
  shares_.OnRestart(now);
}

void InvariantChecker::OnBatch(const std::vector<core::Decision>& batch, core::MonoTime now,
                               bool tick) {
  std::set<core::TaskKey> touched;
  const ShareChecker::Report report = [&](std::string what) { Violation(now, std::move(what)); };
  for (const core::Decision& d : batch) {
    if (const auto* c = std::get_if<core::AttemptCreated>(&d)) {
      shares_.OnCreated(*c, now, report);
      if (c->revived) {
        auto l = lost_.find(c->attempt);
        if (l == lost_.end() || l->second.worker != c->worker || l->second.task != c->task) {
          Violation(now, "attempt " + std::to_string(c->attempt) +
                             " revived, but it had not been lost on that worker");
          continue;
        }
        lost_.erase(l);
      }
      TaskTruth* t = Task(c->task);
      if (t != nullptr && c->revived) t->lost_with.clear();  // its worker was alive after all
      if (t == nullptr) {
        Violation(now, "attempt " + std::to_string(c->attempt) + " created for unknown " + Key(c->task));
        continue;
      }
      if (!live_.emplace(c->attempt, AttemptTruth{c->task, c->worker}).second) {
        Violation(now, "attempt " + std::to_string(c->attempt) + " created twice");
      }
      ++t->live;
      ++live_by_worker_[c->worker];
      if (heard_.count(c->worker) == 0) heard_[c->worker] = now;
      touched.insert(c->task);
    } else if (const auto* e = std::get_if<core::AttemptEnded>(&d)) {
      shares_.OnEnded(*e, now);
      if (e->late) {
        // A late success replaces the kLost end of an attempt whose worker came back with it.
        auto l = lost_.find(e->attempt);
        if (l == lost_.end() || l->second.worker != e->worker ||
            e->outcome != core::AttemptOutcome::kSucceeded) {
          Violation(now, "attempt " + std::to_string(e->attempt) +
                             " ended late, but it had not been lost on that worker");
        } else {
          lost_.erase(l);
        }
        if (TaskTruth* t = Task(e->task)) t->lost_with.clear();
        touched.insert(e->task);
        continue;
      }
      auto it = live_.find(e->attempt);
      if (it == live_.end()) {
        Violation(now, "attempt " + std::to_string(e->attempt) + " ended but was not running");
        continue;
      }
      TaskTruth* t = Task(it->second.task);
      if (e->outcome == core::AttemptOutcome::kLost) lost_.emplace(e->attempt, it->second);
      if (--live_by_worker_[it->second.worker] == 0) live_by_worker_.erase(it->second.worker);
      live_.erase(it);
      if (t == nullptr) continue;
      --t->live;
      if (e->outcome == core::AttemptOutcome::kFailed || e->outcome == core::AttemptOutcome::kTimedOut) {
        ++t->failures;
      }
      if (e->outcome == core::AttemptOutcome::kFailed ||
          e->outcome == core::AttemptOutcome::kTimedOut ||
          e->outcome == core::AttemptOutcome::kSucceeded) {
        t->lost_with.clear();
      } else if (e->outcome == core::AttemptOutcome::kLost &&
                 std::find(t->lost_with.begin(), t->lost_with.end(), e->worker) ==
                     t->lost_with.end()) {
        t->lost_with.push_back(e->worker);
      }
      if (e->outcome == core::AttemptOutcome::kFailed && failed_.count(e->attempt) == 0) {
        Violation(now, "attempt " + std::to_string(e->attempt) + " of " + Key(e->task) +
                           " ended failed, but its worker never reported a failure");
      }
      touched.insert(e->task);
    } else if (const auto* c = std::get_if<core::TaskChanged>(&d)) {
      TaskTruth* t = Task(c->task);
      if (t == nullptr) {
        Violation(now, "change of unknown " + Key(c->task));
        continue;
      }
      t->state = c->state;
      shares_.OnTaskState(c->task, c->state);
      touched.insert(c->task);
      if (c->failures != t->failures) {
        Violation(now, Key(c->task) + " has " + std::to_string(c->failures) +
                           " failures, but " + std::to_string(t->failures) +
                           " of its attempts failed (preemptions and losses never count)");
      }
      const bool crashes = lost_in_a_row_ > 0 && t->lost_with.size() >= lost_in_a_row_;
      if (c->state == core::TaskState::kFailed && t->failures < max_attempts_[c->task.job] &&
          !crashes) {
        Violation(now, Key(c->task) + " failed after only " + std::to_string(t->failures) +
                           " failures (max_attempts " + std::to_string(max_attempts_[c->task.job]) +
                           ") and losses with " + std::to_string(t->lost_with.size()) +
                           " different workers in a row (the limit is " +
                           std::to_string(lost_in_a_row_) + ")");
      }
      if (c->state == core::TaskState::kFailed && !crashes && broken_.count(c->task.job) != 0) {
        std::string names;
        for (const core::WorkerName& b : broken_[c->task.job])
          names += (names.empty() ? "" : ", ") + b;
        Violation(now, Key(c->task) + " failed because of broken workers (" + names +
                           ") although a healthy worker could run it");
      }
      if (c->state == core::TaskState::kSucceeded) {
        if (++t->commits > 1) {
          Violation(now, Key(c->task) + " committed " + std::to_string(t->commits) +
                             " times (now by attempt " + std::to_string(c->committed_attempt) + ")");
        }
        auto s = succeeded_.find(c->committed_attempt);
        if (s == succeeded_.end()) {
          Violation(now, Key(c->task) + " committed by attempt " +
                             std::to_string(c->committed_attempt) +
                             ", which no worker finished successfully");
        } else if (s->second != c->outputs) {
          Violation(now, Key(c->task) + " committed outputs that are not attempt " +
                             std::to_string(c->committed_attempt) + "'s");
        }
      }
    } else if (const auto* j = std::get_if<core::JobChanged>(&d)) {
      if (j->state != core::JobState::kRunning) job_final_[j->job] = true;
    }
  }
  for (const core::TaskKey& k : touched) {
    const TaskTruth* t = Task(k);
    if (t == nullptr) continue;
    if (t->state == core::TaskState::kRunning && t->live == 0) {
      Violation(now, Key(k) + " is running with no running attempt: the task is lost");
    } else if (t->state != core::TaskState::kRunning && t->live != 0) {
      Violation(now, Key(k) + " is " + core::ToString(t->state) + " but still has " +
                         std::to_string(t->live) + " running attempt(s)");
    }
  }
  if (tick) {
    for (const auto& [name, n] : live_by_worker_) {
      auto h = heard_.find(name);
      if (h == heard_.end()) continue;
      if (now - h->second > lease_ + tick_) {
        Violation(now, "worker " + name + " holds " + std::to_string(n) +
                           " running attempt(s) after " +
                           std::to_string((now - h->second).count()) +
                           " ms of silence (lease " + std::to_string(lease_.count()) + " ms)");
        heard_[name] = now;  // report each expired lease once
      }
    }
  }
}

void InvariantChecker::CheckFinished(core::MonoTime now) {
  for (const auto& [job, final] : job_final_) {
    if (final) continue;
    uint32_t pending = 0, running = 0;
    for (const TaskTruth& t : tasks_[job]) {
      pending += t.state == core::TaskState::kPending;
      running += t.state == core::TaskState::kRunning;
    }
    Violation(now, "liveness: job " + std::to_string(job) + " never finished (" +
                       std::to_string(pending) + " tasks pending, " + std::to_string(running) +
                       " running) after the faults stopped");
  }
}

}  // namespace idlepool::sim
