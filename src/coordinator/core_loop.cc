#include "coordinator/core_loop.h"

#include <algorithm>
#include <iterator>
#include <set>
#include <string>
#include <utility>
#include <variant>

#include "absl/strings/str_cat.h"
#include "coordinator/assignment_cap.h"
#include "coordinator/core_driver.h"
#include "coordinator/job_after.h"
#include "platform/clock.h"
#include "platform/memory.h"
#include "spdlog/spdlog.h"
#include "wire/wire.h"

namespace idlepool::coordinator {

// The records of a batch go to the store in one transaction (timed for idlepool metrics).
class CoreLoop::StoreSink final : public RecordSink {
 public:
  explicit StoreSink(CoreLoopDeps& deps) : deps_(deps) {}
  absl::Status Commit(const std::vector<core::Decision>& batch) override {
    const int64_t commit_start = platform::SteadyNanos();
    absl::Status st = deps_.store.Apply(batch, deps_.clock.WallMs());
    const std::chrono::nanoseconds took(platform::SteadyNanos() - commit_start);
    deps_.metrics.OnCommit(std::chrono::duration<double>(took).count());
    return st;
  }

 private:
  CoreLoopDeps& deps_;
};

// Messages of a committed batch go to the worker sessions; the jobs map follows the batch.
class CoreLoop::SessionTarget final : public DecisionTarget {
 public:
  SessionTarget(CoreLoopDeps& deps, std::map<core::JobId, JobInfo>& jobs, CoreLoop& core)
      : deps_(deps), jobs_(jobs), core_(core) {}

  void Assign(const core::AssignAttempt& a) override {
    auto s = deps_.sessions.Find(a.session);
    auto it = jobs_.find(a.task.job);
    if (!s || it == jobs_.end() || a.task.index >= it->second.tasks.size()) return;
    v1::CoordinatorMessage m;
    auto* as = m.mutable_assign();
    *as = wire::ToAssignment(it->second.spec, a.task.job, it->second.tasks[a.task.index], a.attempt,
                             a.gpus);
    if (it->second.any_checkpoint) AddCheckpoint(a, as);
    const int before_own = as->inputs_size();
    if (it->second.task_inputs && !AddTaskInputs(a, as)) return;
    const int own = as->inputs_size() - before_own;
    if (!it->second.spec.after().empty() && !AddAfterInputs(a, it->second, as)) return;
    if (Oversize(a, it->second, m, static_cast<uint64_t>(own))) return;
    s->Send(std::move(m));
  }

  void TaskCheckpointed(const core::TaskCheckpointed& c) override {
    auto it = jobs_.find(c.task.job);
    if (it != jobs_.end()) it->second.any_checkpoint = true;
  }

  void Kill(const core::KillAttempt& k) override {
    // A replica draining for the gateway (serve_bridge.h) ends with the bridge's own kill, not
    // with a stale one (its worker's Hello after a blip, a late message of the ended attempt).
    if (k.reason != core::KillReason::kCancelled && deps_.serve &&
        deps_.serve->Retiring(k.attempt)) {
      return;
    }
    if (auto s = deps_.sessions.Find(k.session)) {
      v1::CoordinatorMessage m;
      *m.mutable_kill() = wire::ToKill(k.attempt, k.reason);
      s->Send(std::move(m));
    }
  }

  void Ack(const core::AckReport& ack) override {
    if (auto s = deps_.sessions.Find(ack.session)) {
      v1::CoordinatorMessage m;
      m.mutable_ack()->set_attempt(ack.attempt);
      m.mutable_ack()->set_accepted(ack.accepted);
      m.mutable_ack()->set_reason(ack.reason);
      s->Send(std::move(m));
    }
  }

  void Refuse(const core::RefuseSession& r) override {
    if (auto s = deps_.sessions.Find(r.session)) {
      spdlog::warn("refused session {} of worker {}: {}", r.session, r.worker, r.reason);
      v1::CoordinatorMessage m;
      m.mutable_refused()->set_reason(r.reason);
      s->Send(std::move(m), /*end=*/true);
    }
  }

  // Service replicas for the gateway (serve_bridge.h).
  void AttemptCreated(const core::AttemptCreated& a) override {
    auto it = jobs_.find(a.task.job);
    if (deps_.serve && it != jobs_.end() && it->second.spec.has_service()) {
      deps_.serve->ReplicaCreated(a.task.job, it->second.spec, a.attempt, a.task.index, a.worker);
    }
  }
  void AttemptEnded(const core::AttemptEnded& e) override {
    // Scaled down or cancelled: it drains first (serve_bridge.h, retiring).
    if (deps_.serve) {
      deps_.serve->ReplicaEnded(e.attempt, e.outcome == core::AttemptOutcome::kCancelled);
    }
  }

  void JobChanged(const core::JobChanged& j) override {
    if (j.state != core::JobState::kRunning) {
      refused_jobs_.erase(j.job);
      if (deps_.serve) deps_.serve->ServiceEnded(j.job);
      jobs_.erase(j.job);
      spdlog::info("job {} {}{}", j.job, core::ToString(j.state),
                   j.reason.empty() ? "" : ": " + j.reason);
    }
  }

  void WorkerLost(const core::WorkerLost& l) override {
    deps_.book.RecordLost(l.worker);
    spdlog::warn("worker {} lost (silent for {} ms); its attempts are requeued", l.worker,
                 deps_.options.lease_timeout.count());
    // A lost worker whose stream is somehow still open (a frozen process, a half-dead
    // connection) must say hello again, so its stale attempts are reconciled and killed.
    for (auto& s : deps_.sessions.OpenOf(l.worker)) {
      v1::CoordinatorMessage m;
      m.mutable_refused()->set_reason("lease expired; reconnect to re-register");
      s->Send(std::move(m), /*end=*/true);
    }
  }

 private:
  // The task's checkpoint files onto its assignment.
  // Pipelines: the outputs of the jobs `job` runs after (job_after.h). False when they cannot be
  // staged (two of a job's tasks output one path, or the store failed): the job is cancelled
  // with the reason, and its assignment is not sent.
  bool AddAfterInputs(const core::AssignAttempt& a, JobInfo& job, v1::Assignment* as) {
    if (!job.after_inputs) {
      std::vector<core::JobId> after;
      for (const std::string& id : job.spec.after()) after.push_back(std::stoull(id));
      auto inputs = AfterInputs(deps_.store, after);
      if (!inputs.ok()) {
        const std::string why = absl::StrCat("cannot stage the outputs of the jobs it runs after: ",
                                             inputs.status().message());
        spdlog::error("job {}: {}; cancelling it", a.task.job, why);
        core_.PostItem(CoreItem{core::Event(core::JobCancelled{a.task.job, why}), {}});
        return false;
      }
      job.after_inputs = std::move(*inputs);
    }
    for (const v1::Input& in : *job.after_inputs) *as->add_inputs() = in;
    return true;
  }

  // An assignment over the cap (assignment_cap.h) is not sent: its attempt ends failed with the
  // reason, and the job is cancelled with it when every task's would be refused alike.
  bool Oversize(const core::AssignAttempt& a, JobInfo& job, const v1::CoordinatorMessage& m,
                uint64_t own_inputs) {
    AssignmentSize size;
    size.task = a.task;
    size.bytes = m.ByteSizeLong();
    size.inputs = static_cast<uint64_t>(m.assign().inputs_size());
    size.task_inputs = own_inputs;
    if (job.after_inputs) {
      size.after_inputs = job.after_inputs->size();
      for (const v1::Input& in : *job.after_inputs) size.after_bytes += in.ByteSizeLong();
    }
    auto refused = RefuseAssignment(size, assignment_bytes_max_);
    if (!refused) return false;
    spdlog::error("job {}: attempt {} not sent: {}", a.task.job, a.attempt, refused->reason);
    core::AttemptReport failed;
    failed.worker = a.worker;
    failed.session = a.session;
    failed.attempt = a.attempt;
    failed.result = core::ReportResult::kFailed;
    failed.message = refused->reason;
    failed.unsent = true;  // not the worker's failure: never counts toward holding it off
    core_.PostItem(CoreItem{core::Event(std::move(failed)), {}});
    if (refused->whole_job && refused_jobs_.insert(a.task.job).second) {
      core_.PostItem(CoreItem{core::Event(core::JobCancelled{a.task.job, refused->reason}), {}});
    }
    return true;
  }

  void AddCheckpoint(const core::AssignAttempt& a, v1::Assignment* as) {
    auto ckpt = deps_.store.GetCheckpoint(a.task);
    if (!ckpt.ok()) {
      // Starting from scratch loses work but nothing else: say so and go on.
      spdlog::warn("attempt {}: cannot read the checkpoint of task {}: {}", a.attempt, a.task.index,
                   std::string(ckpt.status().message()));
      return;
    }
    for (const auto& f : *ckpt) {
      auto* o = as->add_checkpoint();
      o->set_path(f.path);
      o->set_sha256(f.sha256);
      o->set_size(f.size);
    }
  }

  // The task's own inputs (issue 18), after the job's. False when the store cannot say: the
  // assignment is not sent (an attempt without its inputs would fail), and the attempt ends
  // lost when its worker's next heartbeat does not hold it.
  bool AddTaskInputs(const core::AssignAttempt& a, v1::Assignment* as) {
    auto rows = deps_.store.ListTaskInputs(a.task.job, a.task.index);
    if (!rows.ok()) {
      spdlog::error("attempt {}: cannot read the inputs of task {}: {}", a.attempt, a.task.index,
                    std::string(rows.status().message()));
      return false;
    }
    for (const store::TaskInputRow& r : *rows) {
      v1::Input* in = as->add_inputs();
      in->set_path(r.path);
      in->set_sha256(r.sha256);
      in->set_size(r.size);
      in->set_mode(r.mode);
    }
    return true;
  }

  CoreLoopDeps& deps_;
  std::map<core::JobId, JobInfo>& jobs_;
  CoreLoop& core_;  // to cancel a job whose after inputs cannot be staged
  // The most one assignment may take (assignment_cap.h; lowered in tests by its hook).
  const uint64_t assignment_bytes_max_ = AssignmentBytesMaxFromEnv();
  // Running jobs cancelled for their assignments' size: cancelled once.
  std::set<core::JobId> refused_jobs_;
};

namespace {

// How often departed workers are looked for (ObserveWorkers); each look is one pass over the
// workers in memory.
constexpr core::Millis kForgetEvery{10000};

// The jobs of a batch whose tasks succeeded or that ended, by id.
std::vector<core::JobId> ProgressedJobs(const std::vector<core::Decision>& decisions) {
  std::set<core::JobId> ids;
  for (const auto& d : decisions) {
    if (const auto* t = std::get_if<core::TaskChanged>(&d)) {
      if (t->state == core::TaskState::kSucceeded) ids.insert(t->task.job);
    } else if (const auto* j = std::get_if<core::JobChanged>(&d)) {
      if (j->state != core::JobState::kRunning) ids.insert(j->job);
    }
  }
  return {ids.begin(), ids.end()};
}

}  // namespace

CoreLoop::CoreLoop(CoreLoopDeps deps)
    : deps_(std::move(deps)),
      sched_(core::Options{.lease_timeout = deps_.options.lease_timeout,
                           .stall_threshold = deps_.options.lease_timeout / 2,
                           .health = core::HealthRule{.backoff = deps_.options.unhealthy_backoff},
                           .stall = core::StallRule{.enabled = true},
                           .usage = deps_.options.usage,
                           .fair_preemption = deps_.options.fair_preemption}),
      sink_(std::make_unique<StoreSink>(deps_)),
      target_(std::make_unique<SessionTarget>(deps_, jobs_, *this)) {}

CoreLoop::~CoreLoop() { Stop(); }

void CoreLoop::Restore(const core::RestoredState& state, std::map<core::JobId, JobInfo> jobs) {
  jobs_ = std::move(jobs);
  sched_.Restore(state, deps_.clock.Now());
  for (const auto& [id, info] : jobs_) {  // services, for the gateway
    if (deps_.serve && info.spec.has_service()) deps_.serve->ServiceStarted(id, info.spec);
  }
  for (const auto& a : state.running) {  // replicas awaiting re-adoption, for the gateway
    auto it = jobs_.find(a.task.job);
    if (deps_.serve && it != jobs_.end() && it->second.spec.has_service()) {
      deps_.serve->ReplicaCreated(a.task.job, it->second.spec, a.attempt, a.task.index, a.worker);
    }
  }
}

void CoreLoop::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void CoreLoop::Stop() {
  {
    std::lock_guard lock(queue_mu_);
    stopping_ = true;
    queue_cv_.notify_all();
  }
  if (thread_.joinable()) {
    thread_.join();
    SaveUsage(deps_.clock.Now());  // the core thread is gone: sched_ is this thread's now
  }
}

// Users' decayed usage, so fair share survives a restart (user_book.h): a save a minute loses at
// most a minute of usage to a crash.
void CoreLoop::SaveUsage(core::MonoTime now) {
  std::vector<store::UsageBalance> balances;
  for (const core::UserView& v : sched_.Users(now)) {
    if (v.usage.slot_s > 0 || v.usage.gpu_s > 0) {
      balances.push_back(store::UsageBalance{v.settings.user, v.usage.slot_s, v.usage.gpu_s});
    }
  }
  if (absl::Status st = deps_.store.PutUsageBalances(balances, deps_.clock.WallMs()); !st.ok()) {
    spdlog::warn("users' usage not saved (fair share restarts from the last save): {}",
                 std::string(st.message()));
  }
}

void CoreLoop::PostItem(CoreItem item) {
  item.queued_ns = platform::SteadyNanos();
  std::lock_guard lock(queue_mu_);
  queue_.push_back(std::move(item));
  queue_cv_.notify_one();
}

std::vector<std::function<void()>> CoreLoop::ApplyItems(std::deque<CoreItem>& batch,
                                                        std::vector<core::Decision>& decisions,
                                                        std::vector<int64_t>& queued_ns,
                                                        bool& visible) {
  std::vector<std::function<void()>> committed;
  for (auto& item : batch) {
    if (item.fn) item.fn();
    if (item.event) {
      Touch(*item.event);
      queued_ns.push_back(item.queued_ns);
      visible = visible || !std::holds_alternative<core::WorkerHeartbeat>(*item.event);
      auto d = sched_.Apply(*item.event, deps_.clock.Now());
      std::move(d.begin(), d.end(), std::back_inserter(decisions));
    }
    if (item.after_commit) committed.push_back(std::move(item.after_commit));
  }
  batch.clear();
  return committed;
}

// How often the core thread gives freed memory back to the kernel (platform/memory.h): after a
// burst the coordinator returns to its idle size within this; the pass costs well under 1 ms.
constexpr core::Millis kReturnMemoryEvery{10000};
constexpr core::Millis kSaveUsageEvery{60000};

void CoreLoop::Loop() {
  CoreDriver driver(*sink_, *target_);
  auto next_tick = deps_.clock.Now() + deps_.options.tick;
  auto next_return = next_tick + kReturnMemoryEvery;
  auto next_usage_save = next_tick + kSaveUsageEvery;
  std::deque<CoreItem> batch;
  std::vector<core::Decision> decisions;
  while (true) {
    {
      std::unique_lock lock(queue_mu_);
      auto wait = std::max<core::Millis>(core::Millis(0), next_tick - deps_.clock.Now());
      queue_cv_.wait_for(lock, wait, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      batch.swap(queue_);
    }
    decisions.clear();
    std::vector<int64_t> queued_ns;  // of the batch's events (idlepool_scheduling_seconds)
    bool visible = false;            // an event a dashboard shows even without records
    std::vector<std::function<void()>> committed = ApplyItems(batch, decisions, queued_ns, visible);
    auto now = deps_.clock.Now();
    if (now >= next_tick) {
      auto d = sched_.Apply(core::Tick{}, now);
      std::move(d.begin(), d.end(), std::back_inserter(decisions));
      for (const auto& x : decisions) {
        if (const auto* l = std::get_if<core::WorkerLost>(&x)) touched_.insert(l->worker);
      }
      // Sessions end because the coordinator stops, not because workers went away: not down
      // time (docs/guide/data.md: time the coordinator is not running counts neither way).
      if (!deps_.shutting_down.load()) ObserveWorkers(now);
      next_tick = now + deps_.options.tick;
      if (now >= next_return) {
        platform::ReturnFreeMemory();
        next_return = now + kReturnMemoryEvery;
      }
      if (now >= next_usage_save) {
        SaveUsage(now);
        next_usage_save = now + kSaveUsageEvery;
      }
    }
    if (decisions.empty() && held_.empty()) {
      for (auto& fn : committed) fn();
      BatchDone(queued_ns, visible);
      continue;
    }
    const bool has_records = std::any_of(decisions.begin(), decisions.end(), core::IsRecord);
    const Commit done = CommitOrHold(driver, decisions, committed);
    if (done == Commit::kStopped) return;
    if (done == Commit::kHeld) {
      BatchDone(queued_ns, visible);
      continue;
    }
    for (auto& fn : committed) fn();
    deps_.metrics.OnDecisions(decisions);
    if (deps_.on_jobs_progressed) {
      if (auto jobs = ProgressedJobs(decisions); !jobs.empty()) deps_.on_jobs_progressed(jobs);
    }
    BatchDone(queued_ns, visible || has_records);
  }
}

CoreLoop::Commit CoreLoop::CommitOrHold(CoreDriver& driver, std::vector<core::Decision>& decisions,
                                        std::vector<std::function<void()>>& committed) {
  const bool holding = !held_.empty();
  if (holding) {
    std::move(decisions.begin(), decisions.end(), std::back_inserter(held_));
    std::move(committed.begin(), committed.end(), std::back_inserter(held_committed_));
    const auto now = deps_.clock.Now();
    if (now < next_retry_) return Commit::kHeld;
    decisions = std::move(held_);
    committed = std::move(held_committed_);
    held_.clear();
    held_committed_.clear();
  }
  absl::Status st = driver.Apply(decisions);
  if (st.ok()) {
    if (holding)
      spdlog::info("store: {} held decisions committed; the disk has room again", decisions.size());
    return Commit::kDone;
  }
  if (absl::IsResourceExhausted(st) && decisions.size() <= kMaxHeldDecisions) {
    if (!holding) {
      spdlog::error(
          "store write failed, the disk of {} is full: {}; holding {} decisions and retrying "
          "every {} ms (uploads and submissions are refused until space is freed)",
          deps_.options.data_dir, std::string(st.message()), decisions.size(), kHeldRetry.count());
    }
    held_ = std::move(decisions);
    held_committed_ = std::move(committed);
    next_retry_ = deps_.clock.Now() + kHeldRetry;
    return Commit::kHeld;
  }
  // Memory and disk would disagree from here on; stop and let a restart recover.
  spdlog::critical("store write failed, stopping the coordinator: {}", st.ToString());
  deps_.on_fatal(st);
  return Commit::kStopped;
}

void CoreLoop::Touch(const core::Event& ev) {
  if (const auto* h = std::get_if<core::WorkerHello>(&ev)) {
    touched_.insert(h->worker);
  } else if (const auto* c = std::get_if<core::SessionClosed>(&ev)) {
    touched_.insert(c->worker);
  } else if (const auto* l = std::get_if<core::WorkerLeaving>(&ev)) {
    touched_.insert(l->worker);
  } else if (const auto* o = std::get_if<core::OwnerStateChanged>(&ev)) {
    touched_.insert(o->worker);
  }
}

void CoreLoop::ObserveWorkers(core::MonoTime now) {
  if (!observed_all_) {
    deps_.book.ObserveAvailability(sched_.Workers(), now);
    observed_all_ = true;
    next_forget_ = now + std::min(kForgetEvery, deps_.options.forget_workers_after);
  } else {
    for (const core::WorkerName& name : touched_) {
      auto w = sched_.Worker(name);
      deps_.book.ObserveWorker(name, w && w->state == core::WorkerState::kConnected && w->accepting,
                               now);
    }
  }
  touched_.clear();
  if (now < next_forget_) return;
  const auto after = deps_.options.forget_workers_after;
  next_forget_ = now + std::min(kForgetEvery, after);
  std::vector<core::WorkerName> gone = sched_.ForgetDeparted(now, after);
  if (!gone.empty())
    spdlog::info("forgot {} departed workers (gone {} ms or more)", gone.size(), after.count());
  deps_.sessions.Forget(gone);
  (void)deps_.book.ForgetDeparted(now, after);
}

void CoreLoop::BatchDone(const std::vector<int64_t>& queued_ns, bool changed) {
  const int64_t now = platform::SteadyNanos();
  for (int64_t q : queued_ns) {
    const std::chrono::nanoseconds waited(now - q);
    deps_.metrics.OnScheduled(std::chrono::duration<double>(waited).count());
  }
  if (changed) deps_.feed.Bump();
}

}  // namespace idlepool::coordinator
