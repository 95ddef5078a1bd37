#include "core/scheduler.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <utility>

#include "core/check.h"

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

std::optional<Policy> PolicyNamed(std::string_view name) {
  Policy p = Policy::Fifo();
  if (name == "fifo") return p;
  if (name == "fast") {
    p.fast = true;
    return p;
  }
  if (name == "speculative") {
    p.speculate = true;
    return p;
  }
  if (name == "churn") {
    p.churn_aware = true;
    return p;
  }
  if (name == "default") return Policy{};
  return std::nullopt;
}

std::string_view PolicyNames() { return "fifo, fast, speculative, churn, default"; }

Scheduler::Scheduler(Options options)
    : options_(options),
      health_(options.health),
      ordering_(options.usage, options.fair_preemption) {}

// ---------------------------------------------------------------------------------------------
// Restore

void Scheduler::Restore(const RestoredState& state, MonoTime now) {
  jobs_.clear();
  attempts_.clear();
  workers_.clear();
  free_index_.clear();
  ranked_ = RankIndex{};
  schedulable_slots_ = 0;
  backups_running_ = 0;
  last_speculation_.reset();
  pool_ref_ = RefMean{};
  churn_ = ChurnTable{};
  pending_.clear();
  orphans_.clear();
  lost_attempts_.clear();
  holders_.clear();
  avoid_.clear();
  lost_in_a_row_.clear();
  restarts_.clear();
  waiting_.clear();
  health_ = WorkerHealth(options_.health);  // not in the store (see "Health")
  after_dirty_ = true;  // the first Apply starts or cancels the jobs that wait (ResolveAfter)
  now_ = now;
  next_attempt_id_ = std::max<AttemptId>(state.next_attempt_id, 1);

  for (const RestoredJob& rj : state.jobs) {
    JobRec job;
    job.spec = rj.spec;
    job.state = rj.state;
    job.counters = rj.counters;
    NormalizeInputs(job);
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
    t.backup = 0;
  }
  for (const RestoredLost& rl : state.lost) {
    auto it = jobs_.find(rl.task.job);
    if (it == jobs_.end() || it->second.state != JobState::kRunning ||
        rl.task.index >= it->second.tasks.size()) {
      continue;
    }
    lost_attempts_[rl.attempt] = LostRec{rl.task, rl.worker, rl.lost, rl.gpus};
    it->second.lost_attempts.push_back(rl.attempt);
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
    // At most two running attempts per task (an original and its backup); the first listed
    // becomes the current one.
    if (t.backup != 0) continue;
    if (t.current == 0) {
      t.current = ra.attempt;
    } else {
      t.backup = ra.attempt;
      ++backups_running_;
    }
    t.state = TaskState::kRunning;
    AttemptRec& a = attempts_[ra.attempt];
    a = AttemptRec{ra.task, ra.worker, now, now + options_.lease_timeout, now, std::nullopt};
    a.fresh = false;
    a.restored = true;
    a.gpus = ra.gpus;
    orphans_.insert({ra.worker, ra.attempt});
  }
  for (auto& [id, job] : jobs_) {
    job.unfinished = 0;
    job.waiting = job.state == JobState::kRunning && !job.spec.after.empty();
    if (job.waiting) waiting_.insert(id);
    for (uint32_t i = 0; i < job.tasks.size(); ++i) {
      TaskRec& t = job.tasks[i];
      // A task recorded as running whose attempt is not among the running ones goes back to
      // pending: its attempt is gone.
      if (t.state == TaskState::kRunning && t.current == 0) t.state = TaskState::kPending;
      // A finished job never runs anything again.
      if (job.state != JobState::kRunning && Unfinished(t.state)) t.state = TaskState::kCancelled;
      const bool parked = job.spec.service && i >= job.spec.service->replicas;
      // A task pending after a failure waits its whole retry backoff again.
      if (t.state == TaskState::kPending && !parked) Requeue(TaskKey{id, i}, t.failures > 0, now);
      if (Unfinished(t.state)) ++job.unfinished;
    }
  }
  RestoreUsers(state, now);
}

// ---------------------------------------------------------------------------------------------
// Apply

std::vector<Decision> Scheduler::Apply(const Event& event, MonoTime now) {
  std::vector<Decision> out;
  now_ = now;
  if (options_.policy.churn_aware) RefreshChurn();
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
                 [&](const CacheChanged& e) { OnCacheChanged(e, out); },
                 [&](const GpusHeld& e) { OnGpusHeld(e); },
                 [&](const ScaleService& e) { OnScale(e, out); },
                 [&](const LinkRate& e) { OnLinkRate(e); },
                 [&](const WorkerReset& e) { OnReset(e); },
                 [&](const UserSet& e) { OnUserSet(e); },
                 [&](const JobPriority& e) { OnPriority(e); },
             },
             event);
  ResolveAfter(now, out, 0);
  Schedule(now, out);
  Speculate(now, out);
  // Records first, each group in the order it happened, so the shell can persist all records of
  // the batch before it sends any message.
  std::stable_partition(out.begin(), out.end(), IsRecord);
  return out;
}

void Scheduler::OnSubmit(const JobSubmitted& e, MonoTime now, std::vector<Decision>& out) {
  if (e.job == 0 || jobs_.count(e.job) != 0) return;
  JobRec job;
  job.spec = e;
  NormalizeInputs(job);
  job.tasks.resize(e.task_count);
  job.unfinished = e.task_count;
  auto [it, inserted] = jobs_.emplace(e.job, std::move(job));
  StartOrWait(it->second, e.job, now, out);  // or it waits for the jobs it runs after
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
      // The backup first: ending it leaves the task running on the other, whose end then
      // cancels the task.
      for (const AttemptId id : {t.backup, t.current}) {
        if (id == 0) continue;
        auto a = attempts_.find(id);
        CORE_CHECK(a != attempts_.end(), "running task without a running attempt");
        auto w = workers_.find(a->second.worker);
        // An orphan whose worker has not said hello yet gets no message: if the worker comes
        // back holding it, the hello kills it as stale.
        if (w != workers_.end() && w->second.attempts.count(id) != 0) {
          out.push_back(
              KillAttempt{a->second.worker, w->second.session, id, KillReason::kCancelled});
        }
        EndAttempt(id, AttemptOutcome::kCancelled, 0, "job cancelled", out);
      }
    } else if (t.state == TaskState::kPending) {
      ErasePending(key);
      restarts_.erase(key);
      t.state = TaskState::kCancelled;
      --job.unfinished;
      out.push_back(TaskChanged{key, t.state, t.failures, 0, {}});
    }
  }
  CORE_CHECK(job.unfinished == 0, "cancelled job still has unfinished tasks");
  ForgetLost(e.job);
  out.push_back(JobChanged{e.job, JobState::kCancelled, e.reason});
}

void Scheduler::OnHello(const WorkerHello& e, MonoTime now, std::vector<Decision>& out) {
  auto it = workers_.find(e.worker);
  // The same process as before (its running attempts may still run).
  const bool same_boot = it != workers_.end() && it->second.boot_id == e.boot_id;
  if (it != workers_.end() && it->second.state != WorkerState::kLost &&
      it->second.boot_id != e.boot_id) {
    WorkerRec& w = it->second;
    if (w.session_open) {
      out.push_back(RefuseSession{e.worker, e.session,
                                  "worker name \"" + e.worker +
                                      "\" is in use by another live worker (different boot id)"});
      return;
    }
    // The worker process restarted: whatever it ran is gone, and so is its up period (it ended
    // around its last sign of life).
    const std::set<AttemptId> ids = w.attempts;
    for (AttemptId id : ids) {
      attempts_.at(id).worker_died = w.state != WorkerState::kLeft;
      EndAttempt(id, AttemptOutcome::kLost, 0, "worker restarted (new boot id)", out);
    }
    UpEnd(w, w.last_seen);
  }

  // Register (or re-register) with this session; the old session, if any, is dead.
  WorkerRec& w = workers_[e.worker];
  // A new worker, one back after being lost or leaving, or a restarted one: a new up period.
  if (!w.up_since) UpStart(w, now);
  w.state = WorkerState::kConnected;
  w.session = e.session;
  w.session_open = true;
  w.boot_id = e.boot_id;
  w.capacity = e.capacity;
  w.gpus = e.gpus;
  if (w.gpus.empty()) {
    // No device list (the simulator, older tests): anonymous stand-ins 0..n-1.
    for (uint32_t i = 0; i < e.capacity.gpus; ++i) w.gpus.push_back(GpuDevice{i, 0, {}});
  }
  std::sort(w.gpus.begin(), w.gpus.end(),
            [](const GpuDevice& a, const GpuDevice& b) { return a.index < b.index; });
  auto same_index = [](const GpuDevice& a, const GpuDevice& b) { return a.index == b.index; };
  w.gpus.erase(std::unique(w.gpus.begin(), w.gpus.end(), same_index), w.gpus.end());
  w.capacity.gpus = static_cast<uint32_t>(w.gpus.size());
  w.accept_users = e.accept_users;
  w.refuse_users = e.refuse_users;
  w.last_seen = now;
  w.accepting = e.accepting;
  // Its cache as it is now: what it held before may have been evicted or lost with its disk.
  DropBlobs(w, e.worker);
  for (const BlobRef& b : e.cached) AddBlob(w, e.worker, b, /*confirmed=*/true);

  std::set<AttemptId> held(e.held.begin(), e.held.end());
  const std::set<AttemptId> delivering(e.delivering.begin(), e.delivering.end());
  std::vector<AttemptId> conflicting;  // restored attempts whose GPUs another attempt owns
  for (AttemptId id : held) {
    auto a = attempts_.find(id);
    if (a != attempts_.end() && a->second.worker == e.worker) {
      if (a->second.orphan_deadline && !GpusFree(w, a->second.gpus)) {
        // Only a damaged store gets here (two running attempts on one device): the other keeps
        // the device, this one ends below as no longer held.
        out.push_back(KillAttempt{e.worker, e.session, id, KillReason::kObsolete});
        conflicting.push_back(id);
      } else if (a->second.orphan_deadline) {  // restored attempt: adopt it onto the worker
        orphans_.erase({e.worker, id});
        const bool inserted = w.attempts.insert(id).second;
        CORE_CHECK(inserted, "orphan attempt already on its worker");
        Charge(w, JobOf(a->second.task).spec.resources, id, a->second);  // usage held already
        a->second.orphan_deadline.reset();
      } else {
        CORE_CHECK(w.attempts.count(id) != 0, "running attempt missing from its worker");
      }
    } else if (!(same_boot || delivering.count(id) != 0) || !Revive(e.worker, w, id, now, out)) {
      // Still worth delivering only if a late success of it could commit.
      auto l = lost_attempts_.find(id);
      const bool may_commit = l != lost_attempts_.end() && l->second.worker == e.worker;
      out.push_back(KillAttempt{e.worker, e.session, id,
                                may_commit ? KillReason::kStale : KillReason::kObsolete});
    }
  }
  for (AttemptId id : conflicting) held.erase(id);
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
  UpEnd(w, now);
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
  w.owner_cause = e.cause;
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
  if (!e.files.empty()) TaskOf(a.task).checkpointed = true;
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
  if (!refusal.empty() && e.result == ReportResult::kSucceeded && LateSuccess(e, out)) return;
  if (!refusal.empty()) {
    out.push_back(AckReport{e.worker, e.session, e.attempt, false, refusal});
    out.push_back(KillAttempt{e.worker, e.session, e.attempt, KillReason::kStale});
    return;
  }

  switch (e.result) {
    case ReportResult::kSucceeded:
      EndAttempt(e.attempt, AttemptOutcome::kSucceeded, e.exit_code, e.message, e.outputs, out,
                 Millis{0}, e.transfer, e.timing, e.log_tail);
      break;
    case ReportResult::kFailed:
    case ReportResult::kTimedOut:
      attempts_.at(e.attempt).unsent = e.unsent;
      EndAttempt(e.attempt,
                 e.result == ReportResult::kFailed ? AttemptOutcome::kFailed
                                                   : AttemptOutcome::kTimedOut,
                 e.exit_code, e.message, {}, out, Millis{0}, e.transfer, e.timing, e.log_tail);
      break;
    case ReportResult::kPreempted: {
      if (e.checkpoint) {
        const TaskKey key = attempts_.at(e.attempt).task;
        if (!e.checkpoint->empty()) TaskOf(key).checkpointed = true;
        out.push_back(TaskCheckpointed{key, e.attempt, *e.checkpoint});
      }
      EndAttempt(e.attempt, AttemptOutcome::kPreempted, e.exit_code, e.message, {}, out,
                 std::max(e.lost, Millis{0}), e.transfer, e.timing, e.log_tail);
      break;
    }
    case ReportResult::kMachineFault:
      if (e.cannot_start) NoteCannotStart(e);
      EndAttempt(e.attempt, AttemptOutcome::kMachineFault, e.exit_code, e.message, {}, out,
                 Millis{0}, e.transfer, e.timing, e.log_tail);
      break;
    default:  // a value outside the enum: treat the attempt as failed rather than trust it
      EndAttempt(e.attempt, AttemptOutcome::kFailed, e.exit_code, "unknown report result", {}, out,
                 Millis{0}, e.transfer, e.timing, e.log_tail);
      break;
  }
  out.push_back(AckReport{e.worker, e.session, e.attempt, true, ""});
}

bool Scheduler::LateSuccess(const AttemptReport& e, std::vector<Decision>& out) {
  auto l = lost_attempts_.find(e.attempt);
  if (l == lost_attempts_.end() || l->second.worker != e.worker) return false;
  auto w = workers_.find(e.worker);
  if (w == workers_.end() || w->second.session != e.session || !Connected(w->second)) {
    return false;
  }
  const TaskKey key = l->second.task;
  JobRec& job = JobOf(key);
  TaskRec& task = TaskOf(key);
  if (job.state != JobState::kRunning ||
      (task.state != TaskState::kPending && task.state != TaskState::kRunning)) {
    return false;
  }
  // It counted as lost, with its work; it is a success now.
  lost_in_a_row_.erase(key);
  const Millis lost = l->second.lost;
  lost_attempts_.erase(l);
  --job.counters.lost;
  job.counters.lost_work -= lost;
  job.counters.transfer += e.transfer;
  out.push_back(AttemptEnded{e.attempt, key, e.worker, AttemptOutcome::kSucceeded, e.exit_code,
                             e.message, Millis{0}, e.transfer, /*late=*/true, e.timing,
                             e.log_tail});
  // The attempts that replaced it are superseded (the backup first, as in OnCancel).
  for (const AttemptId id : {task.backup, task.current}) {
    if (id != 0) Supersede(id, e.attempt, out);
  }
  ErasePending(key);
  task.state = TaskState::kSucceeded;
  --job.unfinished;
  out.push_back(TaskChanged{key, task.state, task.failures, e.attempt, e.outputs});
  out.push_back(AckReport{e.worker, e.session, e.attempt, true, ""});
  FinishJobIfDone(job, key.job, out);
  return true;
}

void Scheduler::NormalizeInputs(JobRec& job) {
  // By hash, once each (two paths may hold the same bytes).
  auto& in = job.spec.inputs;
  std::sort(in.begin(), in.end());
  in.erase(std::unique(in.begin(), in.end(),
                       [](const BlobRef& a, const BlobRef& b) { return a.sha256 == b.sha256; }),
           in.end());
  job.input_bytes = 0;
  for (const BlobRef& b : in) job.input_bytes += b.size;
  auto& own = job.spec.task_inputs;  // by (task, blob): OwnInputs finds a task's by bisection
  std::sort(own.begin(), own.end());
  own.erase(std::unique(own.begin(), own.end()), own.end());
}

bool Scheduler::Avoided(const TaskKey& key, const WorkerName& name, MonoTime now) const {
  if (ReplicasFull(key, name) || Steered(key, name, now)) return true;
  auto t = avoid_.find(key);
  if (t == avoid_.end()) return false;
  auto w = t->second.find(name);
  return w != t->second.end() && now < w->second;
}

bool Scheduler::Revive(const WorkerName& name, WorkerRec& w, AttemptId id, MonoTime now,
                       std::vector<Decision>& out) {
  auto l = lost_attempts_.find(id);
  if (l == lost_attempts_.end() || l->second.worker != name) return false;
  const TaskKey key = l->second.task;
  JobRec& job = JobOf(key);
  TaskRec& task = TaskOf(key);
  if (job.state != JobState::kRunning || task.state != TaskState::kPending || task.current != 0) {
    return false;
  }
  // Room on the worker (whether it accepts new work does not matter: this one it already has).
  // Its own GPUs, since its process still runs on them.
  const Resources& need = job.spec.resources;
  if (FreeSlots(w) < need.cpus || !GpusFree(w, l->second.gpus)) return false;
  const Millis lost = l->second.lost;
  std::vector<uint32_t> gpus = l->second.gpus;
  lost_attempts_.erase(l);
  lost_in_a_row_.erase(key);  // its worker did not die after all
  if (auto t = avoid_.find(key); t != avoid_.end()) t->second.erase(name);
  auto& ids = job.lost_attempts;
  ids.erase(std::remove(ids.begin(), ids.end(), id), ids.end());
  --job.counters.lost;
  job.counters.lost_work -= lost;
  AttemptRec a{key, name, now, std::nullopt, now, std::nullopt, /*fresh=*/false};
  a.gpus = gpus;
  attempts_[id] = a;
  w.attempts.insert(id);
  Charge(w, need, id, a);
  ErasePending(key);
  task.state = TaskState::kRunning;
  task.current = id;
  out.push_back(AttemptCreated{id, key, name, /*revived=*/true, std::move(gpus)});
  out.push_back(TaskChanged{key, TaskState::kRunning, task.failures, 0, {}});
  return true;
}

void Scheduler::ForgetLost(JobId id) {
  avoid_.erase(avoid_.lower_bound(TaskKey{id, 0}), avoid_.lower_bound(TaskKey{id + 1, 0}));
  lost_in_a_row_.erase(lost_in_a_row_.lower_bound(TaskKey{id, 0}),
                       lost_in_a_row_.lower_bound(TaskKey{id + 1, 0}));
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return;
  for (AttemptId a : it->second.lost_attempts) lost_attempts_.erase(a);
  it->second.lost_attempts.clear();
  it->second.lost_attempts.shrink_to_fit();
}

void Scheduler::OnGpusHeld(const GpusHeld& e) {
  auto it = workers_.find(e.worker);
  if (it == workers_.end() || it->second.session != e.session) return;
  const std::set<uint32_t> held(e.held.begin(), e.held.end());
  for (GpuDevice& d : it->second.gpus) d.held = held.count(d.index) != 0;
}

void Scheduler::OnCacheChanged(const CacheChanged& e, std::vector<Decision>& out) {
  auto it = workers_.find(e.worker);
  if (it == workers_.end() || it->second.session != e.session) return;
  WorkerRec& w = it->second;
  for (const std::string& sha : e.removed) {
    auto b = w.blobs.find(sha);
    if (b == w.blobs.end()) continue;
    if (b->second.confirmed) {
      w.cache_bytes -= std::min(w.cache_bytes, b->second.size);
      if (w.cache_blobs > 0) --w.cache_blobs;
    }
    w.blobs.erase(b);
    auto h = holders_.find(sha);
    if (h != holders_.end()) {
      h->second.erase(e.worker);
      if (h->second.empty()) holders_.erase(h);
    }
  }
  for (const BlobRef& b : e.added) AddBlob(w, e.worker, b, /*confirmed=*/true);
}

void Scheduler::AddBlob(WorkerRec& w, const WorkerName& name, const BlobRef& blob,
                        bool confirmed) {
  // Bounded whatever a worker says: at most kMaxBlobsPerWorker, sizes at most 64 GiB.
  if (w.blobs.size() >= kMaxBlobsPerWorker && w.blobs.count(blob.sha256) == 0) return;
  WorkerRec::Held& h = w.blobs[blob.sha256];
  const uint64_t size = std::min<uint64_t>(blob.size, uint64_t{64} << 30);
  if (confirmed && !h.confirmed) {
    w.cache_bytes += size;
    ++w.cache_blobs;
    h.confirmed = true;
  } else if (confirmed) {
    w.cache_bytes = w.cache_bytes - std::min(w.cache_bytes, h.size) + size;
  }
  h.size = size;
  holders_[blob.sha256].insert(name);
}

void Scheduler::DropBlobs(WorkerRec& w, const WorkerName& name) {
  for (const auto& [sha, held] : w.blobs) {
    auto h = holders_.find(sha);
    if (h == holders_.end()) continue;
    h->second.erase(name);
    if (h->second.empty()) holders_.erase(h);
  }
  w.blobs.clear();
  w.cache_bytes = 0;
  w.cache_blobs = 0;
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

  KillOverdue(now, out);
  MoveStalled(now, out);
  RestartDue(now);
  RecoverHealthy(now);
  PreemptForShare(now, out);
}

// ---------------------------------------------------------------------------------------------
// State changes

void Scheduler::EndAttempt(AttemptId id, AttemptOutcome outcome, int exit_code,
                           const std::string& message, std::vector<Decision>& out) {
  EndAttempt(id, outcome, exit_code, message, {}, out);
}

Scheduler::AttemptRec Scheduler::Unlink(AttemptId id) {
  auto it = attempts_.find(id);
  CORE_CHECK(it != attempts_.end(), "ending an attempt that is not running");
  AttemptRec a = std::move(it->second);
  attempts_.erase(it);
  if (a.orphan_deadline) {
    orphans_.erase({a.worker, id});
    FreeUsage(a, now_);  // held since the restore, never charged to a worker
  }
  if (options_.planted_bug == Options::PlantedBug::kNoFencing) planted_ended_[id] = a.task;

  TaskRec& task = TaskOf(a.task);
  CORE_CHECK(task.state == TaskState::kRunning && (task.current == id || task.backup == id),
             "ended attempt is not one of its task's running attempts");
  if (task.backup != 0) --backups_running_;
  if (task.current == id) task.current = task.backup;
  task.backup = 0;
  return a;
}

void Scheduler::Supersede(AttemptId id, AttemptId winner, std::vector<Decision>& out) {
  const AttemptRec a = Unlink(id);
  auto w = workers_.find(a.worker);
  if (w != workers_.end() && w->second.attempts.erase(id) != 0) {
    Release(w->second, JobOf(a.task).spec.resources, id, a);
    Reindex(a.worker);
    out.push_back(KillAttempt{a.worker, w->second.session, id, KillReason::kSuperseded});
  }
  // An orphan gets no message: if its worker comes back holding it, the hello kills it as stale.
  out.push_back(AttemptEnded{id, a.task, a.worker, AttemptOutcome::kCancelled, 0,
                             "superseded: attempt " + std::to_string(winner) +
                                 " of the same task succeeded first",
                             Millis{0}});
}

void Scheduler::EndAttempt(AttemptId id, AttemptOutcome outcome, int exit_code,
                           const std::string& message, std::vector<OutputFile> outputs,
                           std::vector<Decision>& out, Millis lost, const Transfer& transfer,
                           const AttemptTiming& timing, const std::string& log_tail) {
  CORE_CHECK(outcome != AttemptOutcome::kRunning, "ending an attempt as running");
  const AttemptRec a = Unlink(id);
  JobRec& job = JobOf(a.task);
  TaskRec& task = TaskOf(a.task);
  const AttemptId other = task.current;  // the task's other running attempt, 0 if none

  auto w = workers_.find(a.worker);
  if (outcome == AttemptOutcome::kLost && w != workers_.end() && !a.orphan_deadline) {
    // Everything since its start or last checkpoint, up to the last sign of life.
    lost = std::max(Millis{0}, std::chrono::duration_cast<Millis>(w->second.last_seen - a.progress));
  }
  if (outcome != AttemptOutcome::kPreempted && outcome != AttemptOutcome::kLost) lost = Millis{0};
  job.counters.lost_work += lost;
  if (outcome == AttemptOutcome::kSucceeded && w != workers_.end() && !job.spec.service) {
    Learn(a, w->second, job, now_);
  }
  if (w != workers_.end() && w->second.attempts.erase(id) != 0) {
    Release(w->second, job.spec.resources, id, a);
    Reindex(a.worker);
  }

  job.counters.transfer += transfer;
  const std::string crashes =
      job.spec.service ? "" : CountLoss(a.task, a, outcome, /*alone=*/other == 0);
  out.push_back(AttemptEnded{id, a.task, a.worker, outcome, exit_code,
                             crashes.empty() ? message : message + "; " + crashes, lost, transfer,
                             /*late=*/false, timing, log_tail});
  if (!job.spec.service) NoteHealth(a, outcome, message);
  if (job.spec.service && job.state == JobState::kRunning) return EndReplica(job, a, outcome, now_, out);

  bool failure = false;
  switch (outcome) {
    case AttemptOutcome::kFailed:
    case AttemptOutcome::kTimedOut:
      failure = true;
      ++task.failures;
      ++job.counters.failures;
      break;
    case AttemptOutcome::kPreempted:
      ++job.counters.preemptions;
      if (options_.planted_bug == Options::PlantedBug::kCountPreemptions) {
        ++task.failures;
        failure = true;
      }
      break;
    case AttemptOutcome::kLost:
      ++job.counters.lost;
      job.workers_lost.insert(a.worker);
      // Its worker may still deliver its success (LateSuccess).
      if (job.state == JobState::kRunning) {
        lost_attempts_[id] = LostRec{a.task, a.worker, lost, a.gpus};
        job.lost_attempts.push_back(id);
      }
      break;
    case AttemptOutcome::kMachineFault:
      ++job.counters.machine_faults;
      if (task.machine_faults < UINT16_MAX) ++task.machine_faults;
      // One that could not start is held off the whole job instead (see "Health").
      if (job.state == JobState::kRunning && !health_.FailedOn(a.task, a.worker)) {
        avoid_[a.task][a.worker] = now_ + options_.machine_fault_avoid;
      }
      break;
    default:
      break;
  }

  if (outcome == AttemptOutcome::kSucceeded) {
    // First success commits; the other attempt, if any, is superseded (never a failure).
    if (other != 0) Supersede(other, id, out);
    task.state = TaskState::kSucceeded;
    --job.unfinished;
    out.push_back(TaskChanged{a.task, task.state, task.failures, id, std::move(outputs)});
    FinishJobIfDone(job, a.task.job, out);
    return;
  }
  if (other != 0) {
    // The task runs on in its other attempt; a failure still counts (and is recorded).
    if (failure) out.push_back(TaskChanged{a.task, task.state, task.failures, 0, {}});
    return;
  }

  switch (outcome) {
    case AttemptOutcome::kCancelled:
      task.state = TaskState::kCancelled;
      break;
    case AttemptOutcome::kLost:
      if (options_.planted_bug == Options::PlantedBug::kForgetLostTasks) {
        // The task keeps looking like it runs, with no attempt anywhere.
        FinishJobIfDone(job, a.task.job, out);
        return;
      }
      [[fallthrough]];
    default:
      // Failures may have reached max_attempts while another attempt still ran.
      task.state = task.failures >= job.spec.max_attempts ? TaskState::kFailed
                                                          : TaskState::kPending;
      if (outcome == AttemptOutcome::kMachineFault && options_.max_machine_faults > 0 &&
          task.machine_faults >= options_.max_machine_faults) {
        task.state = TaskState::kFailed;
      }
      if (!crashes.empty()) task.state = TaskState::kFailed;
      break;
  }
  // A task only goes back to pending while its job runs (a cancelled job's attempts end
  // kCancelled, so this holds by construction).
  CORE_CHECK(task.state != TaskState::kPending || job.state == JobState::kRunning,
             "requeueing a task of a finished job");
  if (task.state == TaskState::kPending) {
    if (!(options_.planted_bug == Options::PlantedBug::kStrandPreempted &&
          outcome == AttemptOutcome::kPreempted)) {
      Requeue(a.task, failure, now_);  // after its retry wait, when it failed
    }
  } else {
    --job.unfinished;
  }
  out.push_back(TaskChanged{a.task, task.state, task.failures, 0, {}});
  FinishJobIfDone(job, a.task.job, out);
}

void Scheduler::LoseWorker(const WorkerName& name, std::vector<Decision>& out) {
  WorkerRec& w = workers_.at(name);
  // Its session ended without a goodbye before its lease ran out: its process died.
  const bool died = w.state == WorkerState::kDisconnected;
  out.push_back(WorkerLost{name});
  w.state = WorkerState::kLost;
  w.session_open = false;
  UpEnd(w, w.last_seen);
  Reindex(name);
  const std::set<AttemptId> ids = w.attempts;
  for (AttemptId id : ids) {
    attempts_.at(id).worker_died = died;
    EndAttempt(id, AttemptOutcome::kLost, 0, "worker lost", out);
  }
  CORE_CHECK(w.slots_busy == 0 && w.gpu_owner.empty() && w.memory_busy_mb == 0,
             "lost worker still has busy capacity");
}

void Scheduler::FinishJobIfDone(JobRec& job, JobId id, std::vector<Decision>& out) {
  if (job.state != JobState::kRunning || job.unfinished != 0) return;
  const bool all_succeeded = std::all_of(job.tasks.begin(), job.tasks.end(), [](const TaskRec& t) {
    return t.state == TaskState::kSucceeded;
  });
  job.state = all_succeeded ? JobState::kSucceeded : JobState::kFailed;
  ForgetLost(id);
  out.push_back(JobChanged{id, job.state});
}

// ---------------------------------------------------------------------------------------------
// Placement

bool Scheduler::Connected(const WorkerRec& w) {
  return w.state == WorkerState::kConnected && w.session_open;
}

bool Scheduler::Schedulable(const WorkerRec& w) {
  return Connected(w) && w.accepting && w.stalled.empty() && w.unhealthy.empty();
}

void Scheduler::Reindex(const WorkerName& name) {
  auto it = workers_.find(name);
  if (it == workers_.end()) return;
  WorkerRec& w = it->second;
  const bool schedulable = Schedulable(w);
  const double rank = Ranked() && schedulable ? RankOf(w) : 1.0;
  const uint32_t free = schedulable ? FreeSlots(w) : 0;
  if (w.indexed_free != free || w.rank != rank) {
    if (w.indexed_free > 0) free_index_.erase(FreeEntry{w.rank, w.indexed_free, name});
    if (free > 0) free_index_.insert(FreeEntry{rank, free, name});
  }
  const uint32_t slots = schedulable ? w.capacity.cpus : 0;
  const bool ranked = Ranked() && schedulable;
  if (w.ranked != ranked || w.rank != rank || w.counted_slots != slots) {
    if (w.ranked) ranked_.Erase(w.rank, name, w.rank_share);
    if (ranked) w.rank_share = ranked_.Insert(rank, name, slots);
    schedulable_slots_ -= w.counted_slots;
    schedulable_slots_ += slots;
  }
  w.ranked = ranked;
  w.rank = rank;
  w.indexed_free = free;
  w.counted_slots = slots;
}

void Scheduler::AddPending(const TaskKey& key) {
  if (pending_.insert(key).second) ++JobOf(key).pending;
}

void Scheduler::ErasePending(const TaskKey& key) {
  if (pending_.erase(key) != 0) --JobOf(key).pending;
}

AttemptId Scheduler::StartAttempt(const TaskKey& key, const WorkerName& name, MonoTime now,
                                  std::vector<Decision>& out) {
  JobRec& job = JobOf(key);
  const TaskRec& task = TaskOf(key);
  WorkerRec& w = workers_.at(name);
  // Placement checked Fits(), so the devices are there.
  std::optional<std::vector<uint32_t>> gpus = ChooseGpus(w, job.spec.resources);
  CORE_CHECK(gpus.has_value(), "placing an attempt on a worker without the GPUs it needs");
  const AttemptId id = next_attempt_id_++;
  AttemptRec& a = attempts_[id] =
      AttemptRec{key, name, now, std::nullopt, now, std::nullopt, /*fresh=*/!task.checkpointed};
  a.gpus = *gpus;
  w.attempts.insert(id);
  Charge(w, job.spec.resources, id, a);
  Reindex(name);
  ++job.counters.attempts;
  out.push_back(AttemptCreated{id, key, name, /*revived=*/false, *gpus});
  out.push_back(AssignAttempt{name, w.session, id, key, std::move(*gpus)});
  return id;
}

void Scheduler::Place(const TaskKey& key, const WorkerName& name, MonoTime now,
                      std::vector<Decision>& out) {
  NoteInputsSent(key, name);  // the job's next tasks find its inputs there
  TaskRec& task = TaskOf(key);
  CORE_CHECK(task.state == TaskState::kPending && task.current == 0, "placing a non-pending task");
  const AttemptId id = StartAttempt(key, name, now, out);
  ErasePending(key);
  task.state = TaskState::kRunning;
  task.current = id;
  out.push_back(TaskChanged{key, TaskState::kRunning, task.failures, 0, {}});
}

void Scheduler::PlaceBackup(const TaskKey& key, const WorkerName& name, MonoTime now,
                            std::vector<Decision>& out) {
  TaskRec& task = TaskOf(key);
  CORE_CHECK(task.state == TaskState::kRunning && task.current != 0 && task.backup == 0,
             "backing up a task that does not run exactly one attempt");
  CORE_CHECK(attempts_.at(task.current).worker != name, "backup on the original's worker");
  task.backup = StartAttempt(key, name, now, out);
  ++backups_running_;
  ++JobOf(key).counters.backups;
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

}  // namespace idlepool::core
