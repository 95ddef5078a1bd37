#include "core/scheduler.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <utility>

// Always-on check for invariants whose breach would corrupt the pool's state. Never used for
// anything a worker or client can send: those are handled as ordinary (refused or ignored) input.
#define CORE_CHECK(cond, msg)                                                               \
  do {                                                                                      \
    if (!(cond)) {                                                                          \
      std::fprintf(stderr, "%s:%d: core invariant violated: %s (%s)\n", __FILE__, __LINE__, \
                   (msg), #cond);                                                           \
      std::abort();                                                                         \
    }                                                                                       \
  } while (0)

namespace idlepool::core {
namespace {

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

}  // namespace

bool IsRecord(const Decision& d) {
  return std::holds_alternative<AttemptCreated>(d) || std::holds_alternative<AttemptEnded>(d) ||
         std::holds_alternative<TaskChanged>(d) || std::holds_alternative<JobChanged>(d) ||
         std::holds_alternative<WorkerLost>(d) || std::holds_alternative<AttemptSuspended>(d) ||
         std::holds_alternative<TaskCheckpointed>(d);
}

namespace {

bool Unfinished(TaskState s) { return s == TaskState::kPending || s == TaskState::kRunning; }

}  // namespace

Scheduler::Scheduler(Options options) : options_(options) {}

// ---------------------------------------------------------------------------------------------
// Restore

void Scheduler::Restore(const RestoredState& state, MonoTime now) {
  jobs_.clear();
  attempts_.clear();
  workers_.clear();
  free_index_.clear();
  pending_.clear();
  orphans_.clear();
  next_attempt_id_ = std::max<AttemptId>(state.next_attempt_id, 1);

  for (const RestoredJob& rj : state.jobs) {
    JobRec job;
    job.spec = rj.spec;
    job.state = rj.state;
    job.counters = rj.counters;
    job.workers_lost.insert(rj.workers_lost.begin(), rj.workers_lost.end());
    job.tasks.resize(rj.spec.task_count);  // a task the store does not list stays pending
    jobs_[rj.spec.job] = std::move(job);
  }
  for (const RestoredTask& rt : state.tasks) {
    auto it = jobs_.find(rt.task.job);
    if (it == jobs_.end() || rt.task.index >= it->second.tasks.size()) continue;
    TaskRec& t = it->second.tasks[rt.task.index];
    t.state = rt.state;
    t.failures = rt.failures;
    t.current = 0;
  }
  for (const RestoredAttempt& ra : state.running) {
    next_attempt_id_ = std::max(next_attempt_id_, ra.attempt + 1);
    auto it = jobs_.find(ra.task.job);
    // An attempt of a finished job, or of an unknown task, is not restored: if its worker still
    // holds it, the hello kills it as stale.
    if (it == jobs_.end() || it->second.state != JobState::kRunning ||
        ra.task.index >= it->second.tasks.size()) {
      continue;
    }
    TaskRec& t = it->second.tasks[ra.task.index];
    if (t.current != 0) continue;  // one running attempt per task
    t.state = TaskState::kRunning;
    t.current = ra.attempt;
    attempts_[ra.attempt] =
        AttemptRec{ra.task, ra.worker, now, now + options_.lease_timeout, now, std::nullopt};
    orphans_.insert({ra.worker, ra.attempt});
  }
  for (auto& [id, job] : jobs_) {
    job.unfinished = 0;
    for (uint32_t i = 0; i < job.tasks.size(); ++i) {
      TaskRec& t = job.tasks[i];
      // A task recorded as running whose attempt is not among the running ones goes back to
      // pending: its attempt is gone.
      if (t.state == TaskState::kRunning && t.current == 0) t.state = TaskState::kPending;
      // A finished job never runs anything again.
      if (job.state != JobState::kRunning && Unfinished(t.state)) t.state = TaskState::kCancelled;
      if (t.state == TaskState::kPending) pending_.insert(TaskKey{id, i});
      if (Unfinished(t.state)) ++job.unfinished;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Apply

std::vector<Decision> Scheduler::Apply(const Event& event, MonoTime now) {
  std::vector<Decision> out;
  std::visit(Overloaded{
                 [&](const JobSubmitted& e) { OnSubmit(e, now, out); },
                 [&](const JobCancelled& e) { OnCancel(e, now, out); },
                 [&](const WorkerHello& e) { OnHello(e, now, out); },
                 [&](const WorkerHeartbeat& e) { OnHeartbeat(e, now, out); },
                 [&](const SessionClosed& e) { OnSessionClosed(e, now, out); },
                 [&](const WorkerLeaving& e) { OnLeaving(e, now, out); },
                 [&](const AttemptReport& e) { OnReport(e, now, out); },
                 [&](const Tick&) { OnTick(now, out); },
                 [&](const OwnerStateChanged& e) { OnOwnerState(e, now, out); },
                 [&](const CheckpointSaved& e) { OnCheckpoint(e, now, out); },
             },
             event);
  Schedule(now, out);
  // Records first, each group in the order it happened, so the shell can persist all records of
  // the batch before it sends any message.
  std::stable_partition(out.begin(), out.end(), IsRecord);
  return out;
}

void Scheduler::OnSubmit(const JobSubmitted& e, MonoTime now, std::vector<Decision>& out) {
  if (e.job == 0 || jobs_.count(e.job) != 0) return;
  JobRec job;
  job.spec = e;
  job.tasks.resize(e.task_count);
  job.unfinished = e.task_count;
  for (uint32_t i = 0; i < e.task_count; ++i) pending_.insert(TaskKey{e.job, i});
  auto [it, inserted] = jobs_.emplace(e.job, std::move(job));
  FinishJobIfDone(it->second, e.job, out);  // only a job with no tasks finishes here
}

void Scheduler::OnCancel(const JobCancelled& e, MonoTime now, std::vector<Decision>& out) {
  auto it = jobs_.find(e.job);
  if (it == jobs_.end() || it->second.state != JobState::kRunning) return;
  JobRec& job = it->second;
  // Set first so that ending the last attempt does not finish the job as succeeded/failed.
  job.state = JobState::kCancelled;
  for (uint32_t i = 0; i < job.tasks.size(); ++i) {
    TaskRec& t = job.tasks[i];
    const TaskKey key{e.job, i};
    if (t.state == TaskState::kRunning) {
      const AttemptId id = t.current;
      auto a = attempts_.find(id);
      CORE_CHECK(a != attempts_.end(), "running task without a running attempt");
      auto w = workers_.find(a->second.worker);
      // An orphan whose worker has not said hello yet gets no message: if the worker comes back
      // holding it, the hello kills it as stale.
      if (w != workers_.end() && w->second.attempts.count(id) != 0) {
        out.push_back(KillAttempt{a->second.worker, w->second.session, id, KillReason::kCancelled});
      }
      EndAttempt(id, AttemptOutcome::kCancelled, 0, "job cancelled", out);
    } else if (t.state == TaskState::kPending) {
      pending_.erase(key);
      t.state = TaskState::kCancelled;
      --job.unfinished;
      out.push_back(TaskChanged{key, t.state, t.failures, 0, {}});
    }
  }
  CORE_CHECK(job.unfinished == 0, "cancelled job still has unfinished tasks");
  out.push_back(JobChanged{e.job, JobState::kCancelled});
}

void Scheduler::OnHello(const WorkerHello& e, MonoTime now, std::vector<Decision>& out) {
  auto it = workers_.find(e.worker);
  if (it != workers_.end() && it->second.state != WorkerState::kLost &&
      it->second.boot_id != e.boot_id) {
    WorkerRec& w = it->second;
    if (w.session_open) {
      out.push_back(RefuseSession{e.worker, e.session,
                                  "worker name \"" + e.worker +
                                      "\" is in use by another live worker (different boot id)"});
      return;
    }
    // The worker process restarted: whatever it ran is gone.
    const std::set<AttemptId> ids = w.attempts;
    for (AttemptId id : ids) {
      EndAttempt(id, AttemptOutcome::kLost, 0, "worker restarted (new boot id)", out);
    }
  }

  // Register (or re-register) with this session; the old session, if any, is dead.
  WorkerRec& w = workers_[e.worker];
  w.state = WorkerState::kConnected;
  w.session = e.session;
  w.session_open = true;
  w.boot_id = e.boot_id;
  w.capacity = e.capacity;
  w.last_seen = now;
  w.accepting = e.accepting;

  const std::set<AttemptId> held(e.held.begin(), e.held.end());
  for (AttemptId id : held) {
    auto a = attempts_.find(id);
    if (a != attempts_.end() && a->second.worker == e.worker) {
      if (a->second.orphan_deadline) {  // restored attempt: adopt it onto the worker
        a->second.orphan_deadline.reset();
        orphans_.erase({e.worker, id});
        const bool inserted = w.attempts.insert(id).second;
        CORE_CHECK(inserted, "orphan attempt already on its worker");
        Charge(w, JobOf(a->second.task).spec.resources);
      } else {
        CORE_CHECK(w.attempts.count(id) != 0, "running attempt missing from its worker");
      }
    } else {
      out.push_back(KillAttempt{e.worker, e.session, id, KillReason::kStale});
    }
  }
  // Which held attempts are frozen now: their timeout clocks stop (or restart).
  const std::set<AttemptId> frozen(e.frozen.begin(), e.frozen.end());
  for (AttemptId id : w.attempts) {
    AttemptRec& a = attempts_.at(id);
    if (frozen.count(id) != 0) {
      if (!a.suspended_since) a.suspended_since = now;
    } else if (a.suspended_since) {
      a.started += now - *a.suspended_since;
      a.suspended_since.reset();
    }
  }
  // Attempts the core has on this worker (adopted or orphaned) that the worker no longer holds.
  std::vector<AttemptId> missing;
  for (AttemptId id : w.attempts) {
    if (held.count(id) == 0) missing.push_back(id);
  }
  for (auto o = orphans_.lower_bound({e.worker, 0}); o != orphans_.end() && o->first == e.worker;
       ++o) {
    if (held.count(o->second) == 0) missing.push_back(o->second);
  }
  for (AttemptId id : missing) {
    EndAttempt(id, AttemptOutcome::kLost, 0, "worker no longer holds the attempt", out);
  }
  Reindex(e.worker);
}

void Scheduler::OnHeartbeat(const WorkerHeartbeat& e, MonoTime now, std::vector<Decision>& out) {
  auto it = workers_.find(e.worker);
  if (it == workers_.end()) return;
  WorkerRec& w = it->second;
  if (w.state == WorkerState::kLost || w.session != e.session) return;
  w.last_seen = now;
}

void Scheduler::OnSessionClosed(const SessionClosed& e, MonoTime now, std::vector<Decision>& out) {
  auto it = workers_.find(e.worker);
  if (it == workers_.end()) return;
  WorkerRec& w = it->second;
  if (w.session != e.session) return;
  w.session_open = false;
  if (w.state == WorkerState::kConnected) w.state = WorkerState::kDisconnected;
  Reindex(e.worker);
}

void Scheduler::OnLeaving(const WorkerLeaving& e, MonoTime now, std::vector<Decision>& out) {
  auto it = workers_.find(e.worker);
  if (it == workers_.end()) return;
  WorkerRec& w = it->second;
  if (w.session != e.session || w.state == WorkerState::kLost) return;
  w.state = WorkerState::kLeft;
  Reindex(e.worker);
  w.last_seen = now;
  for (AttemptId id : std::set<AttemptId>(e.vacated.begin(), e.vacated.end())) {
    if (w.attempts.count(id) != 0) {
      EndAttempt(id, AttemptOutcome::kPreempted, 0, "vacated: worker stopped by its owner", out);
    }
  }
}

std::string Scheduler::CheckCurrent(const WorkerName& worker, SessionId session,
                                    AttemptId attempt) const {
  auto a = attempts_.find(attempt);
  auto w = workers_.find(worker);
  if (a == attempts_.end()) {
    return attempt >= next_attempt_id_ || attempt == 0 ? "unknown attempt"
                                                       : "attempt is no longer running";
  }
  if (a->second.worker != worker) return "attempt is assigned to another worker";
  if (w == workers_.end() || w->second.attempts.count(attempt) == 0) {
    return "attempt has not been re-adopted by this worker";
  }
  if (w->second.session != session) {
    // Only the worker's current session speaks for it: a refused impostor using its name, or
    // a stream the worker has already replaced, cannot commit results.
    return "report from a session that is not the worker's current one";
  }
  return "";
}

void Scheduler::OnOwnerState(const OwnerStateChanged& e, MonoTime now,
                             std::vector<Decision>& out) {
  auto it = workers_.find(e.worker);
  if (it == workers_.end()) return;
  WorkerRec& w = it->second;
  if (w.session != e.session || w.state == WorkerState::kLost) return;
  w.accepting = e.accepting;
  Reindex(e.worker);
  w.owner_state = e.state;
  w.owner_reason = e.reason;
  if (e.accepting) {
    // Thawed: the time they spent frozen does not count toward their timeout.
    for (AttemptId id : w.attempts) {
      AttemptRec& a = attempts_.at(id);
      if (a.suspended_since) {
        a.started += now - *a.suspended_since;
        a.suspended_since.reset();
      }
    }
  }
  for (AttemptId id : std::set<AttemptId>(e.suspended.begin(), e.suspended.end())) {
    if (w.attempts.count(id) == 0) continue;
    AttemptRec& a = attempts_.at(id);
    ++JobOf(a.task).counters.suspensions;
    if (!a.suspended_since) a.suspended_since = now;
    out.push_back(AttemptSuspended{id, a.task});
  }
}

void Scheduler::OnCheckpoint(const CheckpointSaved& e, MonoTime now, std::vector<Decision>& out) {
  if (!CheckCurrent(e.worker, e.session, e.attempt).empty()) {
    out.push_back(KillAttempt{e.worker, e.session, e.attempt, KillReason::kStale});
    return;
  }
  AttemptRec& a = attempts_.at(e.attempt);
  a.progress = now;
  out.push_back(TaskCheckpointed{a.task, e.attempt, e.files});
}

void Scheduler::OnReport(const AttemptReport& e, MonoTime now, std::vector<Decision>& out) {
  const std::string refusal = CheckCurrent(e.worker, e.session, e.attempt);
  if (!refusal.empty() && options_.planted_bug == Options::PlantedBug::kNoFencing &&
      e.result == ReportResult::kSucceeded && planted_ended_.count(e.attempt) != 0) {
    // The planted bug: a late success of an ended attempt is committed as well.
    const TaskKey key = planted_ended_.at(e.attempt);
    TaskRec& t = TaskOf(key);
    out.push_back(TaskChanged{key, TaskState::kSucceeded, t.failures, e.attempt, e.outputs});
    out.push_back(AckReport{e.worker, e.session, e.attempt, true, ""});
    return;
  }
  if (!refusal.empty()) {
    out.push_back(AckReport{e.worker, e.session, e.attempt, false, refusal});
    out.push_back(KillAttempt{e.worker, e.session, e.attempt, KillReason::kStale});
    return;
  }

  switch (e.result) {
    case ReportResult::kSucceeded:
      EndAttempt(e.attempt, AttemptOutcome::kSucceeded, e.exit_code, e.message, e.outputs, out);
      break;
    case ReportResult::kFailed:
      EndAttempt(e.attempt, AttemptOutcome::kFailed, e.exit_code, e.message, out);
      break;
    case ReportResult::kTimedOut:
      EndAttempt(e.attempt, AttemptOutcome::kTimedOut, e.exit_code, e.message, out);
      break;
    case ReportResult::kPreempted: {
      if (e.checkpoint) {
        out.push_back(TaskCheckpointed{attempts_.at(e.attempt).task, e.attempt, *e.checkpoint});
      }
      EndAttempt(e.attempt, AttemptOutcome::kPreempted, e.exit_code, e.message, {}, out,
                 std::max(e.lost, Millis{0}));
      break;
    }
    default:  // a value outside the enum: treat the attempt as failed rather than trust it
      EndAttempt(e.attempt, AttemptOutcome::kFailed, e.exit_code, "unknown report result", out);
      break;
  }
  out.push_back(AckReport{e.worker, e.session, e.attempt, true, ""});
}

void Scheduler::OnTick(MonoTime now, std::vector<Decision>& out) {
  if (options_.stall_threshold > Millis{0} && last_tick_ &&
      now - *last_tick_ > options_.stall_threshold) {
    // The coordinator itself was not running: nobody's lease ran during the gap.
    const Millis gap = std::chrono::duration_cast<Millis>(now - *last_tick_);
    for (auto& [name, w] : workers_) w.last_seen = std::min(now, w.last_seen + gap);
    for (auto& [id, a] : attempts_) {
      a.started += gap;
      a.progress += gap;
      if (a.suspended_since) *a.suspended_since += gap;
      if (a.orphan_deadline) *a.orphan_deadline += gap;
    }
  }
  last_tick_ = now;

  // Restored attempts whose worker did not come back in time.
  std::vector<AttemptId> expired;
  for (const auto& [worker, id] : orphans_) {
    if (*attempts_.at(id).orphan_deadline <= now) expired.push_back(id);
  }
  for (AttemptId id : expired) {
    EndAttempt(id, AttemptOutcome::kLost, 0, "worker did not return after coordinator restart",
               out);
  }

  // Silent workers. Checked before timeouts: a silent worker's attempts are lost, not failed.
  std::vector<WorkerName> silent;
  for (const auto& [name, w] : workers_) {
    if (options_.planted_bug == Options::PlantedBug::kNoLeaseExpiry) break;
    if (w.state == WorkerState::kLost) continue;
    if (w.state == WorkerState::kLeft && w.attempts.empty()) continue;  // gone, owing nothing
    if (w.last_seen + options_.lease_timeout <= now) silent.push_back(name);
  }
  for (const WorkerName& name : silent) LoseWorker(name, out);

  // Timeout backstop: the worker enforces timeout_s itself; this catches one that did not.
  std::vector<AttemptId> overdue;
  const bool any_timeout = std::any_of(jobs_.begin(), jobs_.end(), [](const auto& kv) {
    return kv.second.state == JobState::kRunning && kv.second.spec.timeout > Millis{0};
  });
  for (const auto& [id, a] : attempts_) {
    if (!any_timeout) break;
    if (a.orphan_deadline || a.suspended_since) continue;
    const Millis timeout = JobOf(a.task).spec.timeout;
    if (timeout > Millis{0} && a.started + timeout + options_.timeout_grace <= now) {
      overdue.push_back(id);
    }
  }
  for (AttemptId id : overdue) {
    const AttemptRec& a = attempts_.at(id);
    auto w = workers_.find(a.worker);
    CORE_CHECK(w != workers_.end(), "adopted attempt without a worker");
    out.push_back(KillAttempt{a.worker, w->second.session, id, KillReason::kTimedOut});
    EndAttempt(id, AttemptOutcome::kTimedOut, 0, "timed out (no report from the worker)", out);
  }
}

// ---------------------------------------------------------------------------------------------
// State changes

void Scheduler::EndAttempt(AttemptId id, AttemptOutcome outcome, int exit_code,
                           const std::string& message, std::vector<Decision>& out) {
  EndAttempt(id, outcome, exit_code, message, {}, out);
}

void Scheduler::EndAttempt(AttemptId id, AttemptOutcome outcome, int exit_code,
                           const std::string& message, std::vector<OutputFile> outputs,
                           std::vector<Decision>& out, Millis lost) {
  auto it = attempts_.find(id);
  CORE_CHECK(it != attempts_.end(), "ending an attempt that is not running");
  CORE_CHECK(outcome != AttemptOutcome::kRunning, "ending an attempt as running");
  const AttemptRec a = std::move(it->second);
  attempts_.erase(it);
  if (a.orphan_deadline) orphans_.erase({a.worker, id});
  if (options_.planted_bug == Options::PlantedBug::kNoFencing) planted_ended_[id] = a.task;

  JobRec& job = JobOf(a.task);
  TaskRec& task = TaskOf(a.task);
  CORE_CHECK(task.state == TaskState::kRunning && task.current == id,
             "ended attempt is not its task's current attempt");

  auto w = workers_.find(a.worker);
  if (outcome == AttemptOutcome::kLost && w != workers_.end() && !a.orphan_deadline) {
    // Everything since its start or last checkpoint, up to the last sign of life.
    lost = std::max(Millis{0}, std::chrono::duration_cast<Millis>(w->second.last_seen - a.progress));
  }
  if (outcome != AttemptOutcome::kPreempted && outcome != AttemptOutcome::kLost) lost = Millis{0};
  job.counters.lost_work += lost;
  if (w != workers_.end() && w->second.attempts.erase(id) != 0) {
    Release(w->second, job.spec.resources);
    Reindex(a.worker);
  }

  out.push_back(AttemptEnded{id, a.task, a.worker, outcome, exit_code, message, lost});

  task.current = 0;
  AttemptId committed = 0;
  switch (outcome) {
    case AttemptOutcome::kSucceeded:
      task.state = TaskState::kSucceeded;
      committed = id;
      break;
    case AttemptOutcome::kFailed:
    case AttemptOutcome::kTimedOut:
      ++task.failures;
      ++job.counters.failures;
      task.state = task.failures >= job.spec.max_attempts ? TaskState::kFailed
                                                          : TaskState::kPending;
      break;
    case AttemptOutcome::kPreempted:
      ++job.counters.preemptions;
      task.state = TaskState::kPending;
      if (options_.planted_bug == Options::PlantedBug::kCountPreemptions) {
        ++task.failures;
        if (task.failures >= job.spec.max_attempts) task.state = TaskState::kFailed;
      }
      break;
    case AttemptOutcome::kLost:
      ++job.counters.lost;
      job.workers_lost.insert(a.worker);
      task.state = TaskState::kPending;
      if (options_.planted_bug == Options::PlantedBug::kForgetLostTasks) {
        // The task keeps looking like it runs, with no attempt anywhere.
        task.state = TaskState::kRunning;
        FinishJobIfDone(job, a.task.job, out);
        return;
      }
      break;
    case AttemptOutcome::kCancelled:
      task.state = TaskState::kCancelled;
      break;
    case AttemptOutcome::kRunning:
      break;
  }
  // A task only goes back to pending while its job runs (a cancelled job's attempts end
  // kCancelled, so this holds by construction).
  CORE_CHECK(task.state != TaskState::kPending || job.state == JobState::kRunning,
             "requeueing a task of a finished job");
  if (task.state == TaskState::kPending) {
    if (!(options_.planted_bug == Options::PlantedBug::kStrandPreempted &&
          outcome == AttemptOutcome::kPreempted)) {
      pending_.insert(a.task);
    }
  } else {
    --job.unfinished;
  }
  if (task.state == TaskState::kSucceeded) {
    out.push_back(TaskChanged{a.task, task.state, task.failures, committed, std::move(outputs)});
  } else {
    out.push_back(TaskChanged{a.task, task.state, task.failures, 0, {}});
  }
  FinishJobIfDone(job, a.task.job, out);
}

void Scheduler::LoseWorker(const WorkerName& name, std::vector<Decision>& out) {
  WorkerRec& w = workers_.at(name);
  out.push_back(WorkerLost{name});
  w.state = WorkerState::kLost;
  w.session_open = false;
  Reindex(name);
  const std::set<AttemptId> ids = w.attempts;
  for (AttemptId id : ids) EndAttempt(id, AttemptOutcome::kLost, 0, "worker lost", out);
  CORE_CHECK(w.slots_busy == 0 && w.gpus_busy == 0 && w.memory_busy_mb == 0,
             "lost worker still has busy capacity");
}

void Scheduler::FinishJobIfDone(JobRec& job, JobId id, std::vector<Decision>& out) {
  if (job.state != JobState::kRunning || job.unfinished != 0) return;
  const bool all_succeeded = std::all_of(job.tasks.begin(), job.tasks.end(), [](const TaskRec& t) {
    return t.state == TaskState::kSucceeded;
  });
  job.state = all_succeeded ? JobState::kSucceeded : JobState::kFailed;
  out.push_back(JobChanged{id, job.state});
}

// ---------------------------------------------------------------------------------------------
// Placement

bool Scheduler::Connected(const WorkerRec& w) {
  return w.state == WorkerState::kConnected && w.session_open;
}

bool Scheduler::Schedulable(const WorkerRec& w) { return Connected(w) && w.accepting; }

uint32_t Scheduler::FreeSlots(const WorkerRec& w) {
  return w.capacity.cpus > w.slots_busy ? w.capacity.cpus - w.slots_busy : 0;
}

bool Scheduler::Fits(const WorkerRec& w, const Resources& need) {
  if (!Schedulable(w)) return false;
  if (FreeSlots(w) < need.cpus) return false;
  const uint32_t free_gpus = w.capacity.gpus > w.gpus_busy ? w.capacity.gpus - w.gpus_busy : 0;
  if (free_gpus < need.gpus) return false;
  if (need.memory_mb != 0 && w.capacity.memory_mb != 0) {
    const uint64_t free_mb =
        w.capacity.memory_mb > w.memory_busy_mb ? w.capacity.memory_mb - w.memory_busy_mb : 0;
    if (free_mb < need.memory_mb) return false;
  }
  return true;
}

void Scheduler::Charge(WorkerRec& w, const Resources& need) {
  w.slots_busy += need.cpus;
  w.gpus_busy += need.gpus;
  w.memory_busy_mb += need.memory_mb;
}

void Scheduler::Release(WorkerRec& w, const Resources& need) {
  CORE_CHECK(w.slots_busy >= need.cpus && w.gpus_busy >= need.gpus &&
                 w.memory_busy_mb >= need.memory_mb,
             "releasing more capacity than is busy");
  w.slots_busy -= need.cpus;
  w.gpus_busy -= need.gpus;
  w.memory_busy_mb -= need.memory_mb;
}

void Scheduler::Reindex(const WorkerName& name) {
  auto it = workers_.find(name);
  if (it == workers_.end()) return;
  WorkerRec& w = it->second;
  if (w.indexed_free > 0) free_index_.erase({w.indexed_free, name});
  w.indexed_free = Schedulable(w) ? FreeSlots(w) : 0;
  if (w.indexed_free > 0) free_index_.insert({w.indexed_free, name});
}

void Scheduler::Schedule(MonoTime now, std::vector<Decision>& out) {
  auto it = pending_.begin();
  while (it != pending_.end()) {
    if (free_index_.empty()) return;  // no worker has a free slot
    const TaskKey key = *it;
    const Resources& need = JobOf(key).spec.resources;
    // The most free slots wins, the first by name among equals: the first that fits in index
    // order (usually the first of all; only gpus or memory make it look further).
    WorkerName best_name;
    const WorkerName* best = nullptr;
    for (const auto& [free, name] : free_index_) {
      if (Fits(workers_.at(name), need)) {
        best_name = name;
        best = &best_name;
        break;
      }
    }
    if (best == nullptr) {
      // Every task of a job needs the same resources and placing only uses capacity up, so no
      // later task of this job fits either during this pass.
      it = pending_.lower_bound(TaskKey{key.job + 1, 0});
      continue;
    }
    ++it;  // Place erases `key` from pending_
    Place(key, *best, now, out);
  }
}

void Scheduler::Place(const TaskKey& key, const WorkerName& name, MonoTime now,
                      std::vector<Decision>& out) {
  JobRec& job = JobOf(key);
  TaskRec& task = TaskOf(key);
  WorkerRec& w = workers_.at(name);
  CORE_CHECK(task.state == TaskState::kPending && task.current == 0, "placing a non-pending task");
  const AttemptId id = next_attempt_id_++;
  attempts_[id] = AttemptRec{key, name, now, std::nullopt, now, std::nullopt};
  w.attempts.insert(id);
  Charge(w, job.spec.resources);
  Reindex(name);
  pending_.erase(key);
  task.state = TaskState::kRunning;
  task.current = id;
  ++job.counters.attempts;
  out.push_back(AttemptCreated{id, key, name});
  out.push_back(AssignAttempt{name, w.session, id, key});
  out.push_back(TaskChanged{key, TaskState::kRunning, task.failures, 0, {}});
}

Scheduler::JobRec& Scheduler::JobOf(const TaskKey& key) {
  auto it = jobs_.find(key.job);
  CORE_CHECK(it != jobs_.end(), "task of an unknown job");
  return it->second;
}

Scheduler::TaskRec& Scheduler::TaskOf(const TaskKey& key) {
  JobRec& job = JobOf(key);
  CORE_CHECK(key.index < job.tasks.size(), "task index out of range");
  return job.tasks[key.index];
}

// ---------------------------------------------------------------------------------------------
// Views

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
      case TaskState::kPending: ++s.pending; break;
      case TaskState::kRunning: ++s.running; break;
      case TaskState::kSucceeded: ++s.succeeded; break;
      case TaskState::kFailed: ++s.failed; break;
      case TaskState::kCancelled: ++s.cancelled; break;
    }
  }
  s.counters = job.counters;
  s.workers_lost = static_cast<uint32_t>(job.workers_lost.size());
  if (s.pending > 0) {
    const Resources& need = job.spec.resources;
    s.fits_no_worker = std::none_of(workers_.begin(), workers_.end(), [&](const auto& kv) {
      const WorkerRec& w = kv.second;
      return Connected(w) && w.capacity.cpus >= need.cpus && w.capacity.gpus >= need.gpus &&
             (need.memory_mb == 0 || w.capacity.memory_mb == 0 ||
              w.capacity.memory_mb >= need.memory_mb);
    });
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
  for (const auto& [name, w] : workers_) {
    all.push_back(WorkerView{name, w.state, w.session, w.boot_id, w.capacity, w.slots_busy,
                             static_cast<uint32_t>(w.attempts.size()), w.last_seen, w.accepting,
                             w.owner_state, w.owner_reason});
  }
  return all;
}

std::optional<AttemptId> Scheduler::CurrentAttempt(TaskKey key) const {
  auto it = jobs_.find(key.job);
  if (it == jobs_.end() || key.index >= it->second.tasks.size()) return std::nullopt;
  const AttemptId id = it->second.tasks[key.index].current;
  if (id == 0) return std::nullopt;
  return id;
}

}  // namespace idlepool::core
