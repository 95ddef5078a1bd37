// A shared pool in the Scheduler: users' settings, job priorities, the lender's choice of users,
// fair preemption, and the users' view. The rules themselves are core/ordering*.h; this file only
// feeds them the Scheduler's state and acts on their answers.
#include <algorithm>
#include <optional>
#include <vector>

#include "core/scheduler.h"

namespace idlepool::core {

namespace {

constexpr int32_t kMaxPriority = 1000;

bool Listed(const std::vector<UserName>& names, const UserName& user) {
  return std::find(names.begin(), names.end(), user) != names.end();
}

}  // namespace

void Scheduler::OnUserSet(const UserSet& e) { (void)ordering_.Set(e); }

void Scheduler::OnPriority(const JobPriority& e) {
  auto it = jobs_.find(e.job);
  if (it == jobs_.end()) return;
  it->second.spec.priority = std::clamp(e.priority, -kMaxPriority, kMaxPriority);
}

void Scheduler::RestoreUsers(const RestoredState& state, MonoTime now) {
  ordering_ = Ordering(options_.usage, options_.fair_preemption);
  for (const UserSet& u : state.users) (void)ordering_.Set(u);
  for (const RestoredUsage& u : state.usage) ordering_.Restore(u.user, u.slot_s, u.gpu_s, now);
  // Restored attempts run (their workers have not said hello yet): their users hold their slots
  // from now, or a quota would let a placement pass it until the hellos arrive.
  for (const auto& [worker, id] : orphans_) HoldUsage(attempts_.at(id), now);
}

void Scheduler::HoldUsage(const AttemptRec& a, MonoTime now) {
  ordering_.Hold(JobOf(a.task).spec.user, JobOf(a.task).spec.resources.cpus,
                 static_cast<uint32_t>(a.gpus.size()), now);
}

void Scheduler::FreeUsage(const AttemptRec& a, MonoTime now) {
  ordering_.Free(JobOf(a.task).spec.user, JobOf(a.task).spec.resources.cpus,
                 static_cast<uint32_t>(a.gpus.size()), now);
}

bool LendsTo(const std::vector<UserName>& accept, const std::vector<UserName>& refuse,
             const UserName& user) {
  return (accept.empty() || Listed(accept, user)) && !Listed(refuse, user);
}

bool Scheduler::LendsTo(const WorkerRec& w, const UserName& user) {
  return core::LendsTo(w.accept_users, w.refuse_users, user);
}

bool Scheduler::QuotaHolds(const UserName& user, const Resources& need) const {
  const UsageLedger::Reading r = ordering_.usage().At(user, now_);
  return HeldBy(ordering_.SettingsOf(user).quota, r.slots, r.gpus, need.cpus, need.gpus) !=
         QuotaHold::kNone;
}

// Each user with work: the slots it holds (the ledger counts every charged attempt) and the slots
// its placeable pending tasks need on a worker that would lend to it.
std::vector<Demand> Scheduler::Demands() const {
  std::map<UserName, Demand> by_user;
  for (const UserName& u : ordering_.usage().Users()) {
    const UsageLedger::Reading r = ordering_.usage().At(u, now_);
    if (r.slots > 0) by_user[u] = Demand{u, ordering_.SettingsOf(u).share, r.slots, 0};
  }
  for (auto it = pending_.begin(); it != pending_.end();
       it = pending_.lower_bound(TaskKey{it->job + 1, 0})) {
    const JobRec& job = jobs_.at(it->job);
    const Resources& need = job.spec.resources;
    const bool fits = std::any_of(workers_.begin(), workers_.end(), [&](const auto& w) {
      return Schedulable(w.second) && CapacityFits(w.second, need) && NetworkFits(w.second, need) &&
             LendsTo(w.second, job.spec.user);
    });
    if (!fits) continue;
    Demand& d = by_user[job.spec.user];
    d.user = job.spec.user;
    d.share = ordering_.SettingsOf(job.spec.user).share;
    d.pending_slots += job.pending * std::max<uint32_t>(need.cpus, 1);
  }
  std::vector<Demand> out;
  for (auto& [u, d] : by_user) out.push_back(std::move(d));
  return out;
}

// The running batch attempts fair preemption may vacate for `starving`: fits_starving when freeing
// the attempt's slots (and GPUs) would let the starving user's first job by its own order
// (priority, then age) place a task on that worker.
std::vector<Running> Scheduler::Vacatable(const UserName& starving) const {
  const JobRec* want = nullptr;
  for (auto it = pending_.begin(); it != pending_.end();
       it = pending_.lower_bound(TaskKey{it->job + 1, 0})) {
    const JobRec& job = jobs_.at(it->job);
    if (job.spec.user == starving && (want == nullptr || job.spec.priority > want->spec.priority))
      want = &job;
  }
  std::vector<Running> out;
  if (want == nullptr) return out;
  const Resources& need = want->spec.resources;
  for (const auto& [id, a] : attempts_) {
    const JobRec& job = jobs_.at(a.task.job);
    if (a.orphan_deadline || a.suspended_since || job.spec.service) continue;
    const WorkerRec& w = workers_.at(a.worker);
    const uint32_t slots = job.spec.resources.cpus;
    const uint32_t gpus_free = w.capacity.gpus - static_cast<uint32_t>(w.gpu_owner.size());
    const bool fits = Schedulable(w) && LendsTo(w, starving) && CapacityFits(w, need) &&
                      NetworkFits(w, need) && FreeSlots(w) + slots >= need.cpus &&
                      gpus_free + a.gpus.size() >= need.gpus;
    out.push_back(Running{id, job.spec.user, a.worker, slots, a.started, a.progress, false, fits});
  }
  return out;
}

// Once a user has starved for --fair-preemption-after, vacates what loses least for it: the
// attempt ends kPreempted at once (requeued, never a failure) and its worker is told to kill it,
// so the next pass of this Apply gives the freed slot to the starving user, who sorts first.
void Scheduler::PreemptForShare(MonoTime now, std::vector<Decision>& out) {
  FairPreemption& fp = ordering_.preemption();
  if (!fp.rule().after) return;
  const std::vector<Demand> demands = pending_.empty() ? std::vector<Demand>{} : Demands();
  const std::optional<UserName> starving = fp.Starving(schedulable_slots_, demands, now);
  if (!starving) return;
  const std::vector<AttemptId> chosen =
      fp.Choose(*starving, schedulable_slots_, demands, Vacatable(*starving), now);
  for (AttemptId id : chosen) {
    const AttemptRec& a = attempts_.at(id);
    const WorkerRec& w = workers_.at(a.worker);
    out.push_back(KillAttempt{a.worker, w.session, id, KillReason::kFairShare});
    const std::string why = "vacated for fair share: user " +
                            (starving->empty() ? std::string("(none)") : *starving) +
                            " was below half of its share";
    EndAttempt(id, AttemptOutcome::kPreempted, 0, why, out);
  }
}

std::vector<UserView> Scheduler::Users(MonoTime now) const {
  std::map<UserName, UserView> by_user;
  for (const Standing& s : ordering_.Standings(now)) by_user[s.user];
  for (const auto& [id, job] : jobs_) {
    if (job.state != JobState::kRunning) continue;
    UserView& v = by_user[job.spec.user];
    v.queued_tasks += job.unfinished;
    v.pending_slots += job.pending * std::max<uint32_t>(job.spec.resources.cpus, 1);
  }
  std::vector<UserView> out;
  for (auto& [name, v] : by_user) {
    v.settings = ordering_.SettingsOf(name);
    v.usage = ordering_.usage().At(name, now);
    v.starving_since = ordering_.preemption().StarvingSince(name);
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace idlepool::core
