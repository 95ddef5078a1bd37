#include "sim/dst_shares.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace idlepool::sim {
namespace {

// Usage per share this much above the waiting user's still counts as a tie: rounding, and the
// core's clock reading of a batch against ours.
constexpr double kSlackRelative = 0.02;
constexpr double kSlackSlotMs = 2000;

}  // namespace

void ShareChecker::SetUsers(const std::vector<core::UserSet>& users) {
  for (const core::UserSet& u : users) users_[u.user] = u;
}

void ShareChecker::OnJob(core::JobId job, const core::UserName& user, uint32_t cpus,
                         uint32_t tasks) {
  JobFacts& j = jobs_[job];
  j.user = user;
  j.cpus = std::max<uint32_t>(1, cpus);
  j.tasks.resize(tasks);
}

void ShareChecker::OnRestart(core::MonoTime now) {
  used_slot_ms_.clear();
  for (auto& [id, h] : held_) h.since = now;
  passed_over_.clear();
}

double ShareChecker::UsagePerShare(const core::UserName& user, core::MonoTime now) const {
  double used = 0;
  if (auto it = used_slot_ms_.find(user); it != used_slot_ms_.end()) used = it->second;
  for (const auto& [id, h] : held_) {
    if (h.user == user) used += static_cast<double>(h.cpus * (now - h.since).count());
  }
  auto u = users_.find(user);
  const double share = u == users_.end() ? 1.0 : core::SaneShare(u->second.share);
  return used / share;
}

uint32_t ShareChecker::HeldSlots(const core::UserName& user) const {
  uint32_t slots = 0;
  for (const auto& [id, h] : held_) slots += h.user == user ? h.cpus : 0;
  return slots;
}

bool ShareChecker::WaitsFor(const core::UserName& user, const core::WorkerName& worker,
                            uint32_t cpus) const {
  for (const auto& [id, j] : jobs_) {
    if (j.user != user || j.cpus > cpus || j.failed_on.count(worker) != 0) continue;
    for (const TaskFacts& t : j.tasks) {
      if (t.state == core::TaskState::kPending && !t.retrying && t.lost_on.count(worker) == 0) {
        return true;
      }
    }
  }
  return false;
}

void ShareChecker::CountPassOvers(const core::UserName& placed, const core::WorkerName& worker,
                                  uint32_t cpus, core::MonoTime now, const Report& report) {
  passed_over_[placed] = 0;
  const double placed_key = UsagePerShare(placed, now);
  std::set<core::UserName> users;
  for (const auto& [id, j] : jobs_) users.insert(j.user);
  for (const core::UserName& y : users) {
    if (y == placed) continue;
    const double key = UsagePerShare(y, now);
    const bool passed = HeldSlots(y) == 0 && WaitsFor(y, worker, cpus) &&
                        key * (1 + kSlackRelative) + kSlackSlotMs < placed_key;
    if (!passed) {
      if (HeldSlots(y) != 0 || !WaitsFor(y, worker, cpus)) passed_over_[y] = 0;
      continue;
    }
    if (++passed_over_[y] > kPassOverBound) {
      report(absl::StrFormat(
          "starvation: user '%s' waits with eligible pending work and no slot, passed over %u "
          "times in a row, last for user '%s' on %s (usage per share %.0f slot-s against %.0f)",
          y, passed_over_[y], placed, worker, key / 1000, placed_key / 1000));
      passed_over_[y] = 0;
    }
  }
}

void ShareChecker::OnCreated(const core::AttemptCreated& c, core::MonoTime now,
                             const Report& report) {
  auto j = jobs_.find(c.task.job);
  if (j == jobs_.end()) return;
  const core::UserName& user = j->second.user;
  if (c.task.index < j->second.tasks.size()) j->second.tasks[c.task.index].retrying = false;
  if (!c.revived) {
    CountPassOvers(user, c.worker, j->second.cpus, now, report);
    auto u = users_.find(user);
    const uint32_t quota = u == users_.end() ? 0 : u->second.quota.max_slots;
    const uint32_t after = HeldSlots(user) + j->second.cpus;
    if (quota != 0 && after > quota) {
      report(absl::StrCat("quota exceeded: attempt ", c.attempt, " of task ", c.task.job, "/",
                          c.task.index, " takes user '", user, "' to ", after, " slots (max_slots ",
                          quota, ")"));
    }
  }
  held_[c.attempt] = Held{user, j->second.cpus, c.task, now};
}

void ShareChecker::OnEnded(const core::AttemptEnded& e, core::MonoTime now) {
  if (e.late) return;  // freed when it was lost
  auto h = held_.find(e.attempt);
  if (h != held_.end()) {
    used_slot_ms_[h->second.user] +=
        static_cast<double>(h->second.cpus * (now - h->second.since).count());
    held_.erase(h);
  }
  auto j = jobs_.find(e.task.job);
  if (j == jobs_.end() || e.task.index >= j->second.tasks.size()) return;
  TaskFacts& t = j->second.tasks[e.task.index];
  switch (e.outcome) {
    case core::AttemptOutcome::kFailed:
    case core::AttemptOutcome::kTimedOut:
    case core::AttemptOutcome::kMachineFault:
      t.retrying = true;
      j->second.failed_on.insert(e.worker);
      break;
    case core::AttemptOutcome::kLost:
      t.lost_on.insert(e.worker);
      break;
    default:
      break;
  }
}

void ShareChecker::OnTaskState(core::TaskKey task, core::TaskState state) {
  auto j = jobs_.find(task.job);
  if (j == jobs_.end() || task.index >= j->second.tasks.size()) return;
  j->second.tasks[task.index].state = state;
}

}  // namespace idlepool::sim
