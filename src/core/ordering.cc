#include "core/ordering.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace idlepool::core {

QuotaHold HeldBy(const Quota& quota, uint32_t held_slots, uint32_t held_gpus, uint32_t slots,
                 uint32_t gpus) {
  auto over = [](uint32_t max, uint32_t held, uint32_t need) {
    return max != 0 && uint64_t{held} + need > max;
  };
  if (over(quota.max_slots, held_slots, slots)) return QuotaHold::kMaxSlots;
  if (over(quota.max_gpus, held_gpus, gpus)) return QuotaHold::kMaxGpus;
  return QuotaHold::kNone;
}

UserKey KeyOf(const Standing& s, uint32_t placed_slots, uint32_t placed_gpus,
              const UsageRule& rule) {
  const UsageRule r = SaneRule(rule);
  const double share = SaneShare(s.share);
  const double usage = std::isfinite(s.usage) && s.usage > 0 ? s.usage : 0.0;
  const double placed = placed_slots + r.gpu_weight * placed_gpus;
  const double ahead_s = static_cast<double>(r.lookahead.count()) / 1000.0;
  return UserKey{!s.starving, (usage + placed * ahead_s) / share,
                 static_cast<double>(s.slots) / share, s.user};
}

PlacementOrder::PlacementOrder(const UsageRule& rule, std::vector<Standing> users,
                               std::vector<Candidate> jobs)
    : rule_(SaneRule(rule)) {
  // Made sane (no NaN left to sort) and sorted, so a duplicate resolves the same whatever the
  // inputs' order.
  for (Standing& s : users) {
    s.share = SaneShare(s.share);
    if (!std::isfinite(s.usage) || s.usage < 0) s.usage = 0;
  }
  std::sort(users.begin(), users.end());
  for (const Standing& s : users) users_.try_emplace(s.user, s);
  std::sort(jobs.begin(), jobs.end());
  for (const Candidate& c : jobs) {
    if (!jobs_.try_emplace(c.job, Job{c}).second) continue;
    Standing defaults;
    defaults.user = c.user;
    users_.try_emplace(c.user, defaults);
    queues_[c.user].jobs.push_back(c.job);
  }
  for (const auto& [name, q] : queues_) Requeue(name);
}

bool PlacementOrder::Live(const Job& j) const {
  const Standing& s = users_.at(j.c.user);
  return !j.skipped && j.c.pending > 0 &&
         HeldBy(s.quota, s.slots, s.gpus, j.c.slots, j.c.gpus) == QuotaHold::kNone;
}

void PlacementOrder::Requeue(const UserName& user) {
  Queue& q = queues_.at(user);
  if (q.key) {
    order_.erase({0, *q.key});
    order_.erase({1, *q.key});
  }
  q.tier[0].clear();
  q.tier[1].clear();
  for (JobId id : q.jobs) {
    const Job& j = jobs_.at(id);
    if (Live(j)) q.tier[j.c.service ? 0 : 1].insert({-int64_t{j.c.priority}, id});
  }
  q.key = KeyOf(users_.at(user), q.placed_slots, q.placed_gpus, rule_);
  for (int tier : {0, 1}) {
    if (!q.tier[tier].empty()) order_.insert({tier, *q.key});
  }
}

std::optional<JobId> PlacementOrder::Next() {
  if (order_.empty()) return std::nullopt;
  const auto& [tier, key] = *order_.begin();
  const JobId id = queues_.at(key.user).tier[tier].begin()->second;
  Job& j = jobs_.at(id);
  if (j.handed == 0) j.handed = ++handed_;
  return id;
}

void PlacementOrder::Placed(JobId job) {
  auto it = jobs_.find(job);
  if (it == jobs_.end() || it->second.c.pending == 0) return;
  Candidate& c = it->second.c;
  --c.pending;
  Standing& s = users_.at(c.user);
  s.slots += c.slots;
  s.gpus += c.gpus;
  Queue& q = queues_.at(c.user);
  q.placed_slots += c.slots;
  q.placed_gpus += c.gpus;
  Requeue(c.user);
}

void PlacementOrder::Skip(JobId job) {
  auto it = jobs_.find(job);
  if (it == jobs_.end() || it->second.skipped) return;
  it->second.skipped = true;
  Requeue(it->second.c.user);
}

uint64_t PlacementOrder::Ahead(JobId job) const {
  auto it = jobs_.find(job);
  const uint64_t before = it == jobs_.end() || it->second.handed == 0
                              ? std::numeric_limits<uint64_t>::max()
                              : it->second.handed;
  uint64_t ahead = 0;
  for (const auto& [id, j] : jobs_) {
    if (j.handed != 0 && j.handed < before) ahead += j.c.pending;
  }
  return ahead;
}

std::vector<QuotaHeld> PlacementOrder::held() const {
  std::vector<QuotaHeld> out;
  for (const auto& [id, j] : jobs_) {
    if (j.c.pending == 0) continue;
    const Standing& s = users_.at(j.c.user);
    const QuotaHold by = HeldBy(s.quota, s.slots, s.gpus, j.c.slots, j.c.gpus);
    if (by != QuotaHold::kNone) out.push_back({id, by});
  }
  return out;
}

const Standing* PlacementOrder::StandingOf(const UserName& user) const {
  auto it = users_.find(user);
  return it == users_.end() ? nullptr : &it->second;
}

bool Ordering::Set(const UserSet& u) {
  if (!std::isfinite(u.share) || u.share <= 0) return false;
  UserSet& s = users_[u.user];
  s = u;
  s.share = SaneShare(u.share);
  return true;
}

UserSet Ordering::SettingsOf(const UserName& user) const {
  auto it = users_.find(user);
  if (it != users_.end()) return it->second;
  UserSet defaults;
  defaults.user = user;
  return defaults;
}

Standing Ordering::StandingOf(const UserName& user, MonoTime now) const {
  const UserSet set = SettingsOf(user);
  const UsageLedger::Reading r = usage_.At(user, now);
  return Standing{user,
                  set.share,
                  set.quota,
                  usage_.Weighted(r),
                  r.slots,
                  r.gpus,
                  preemption_.StarvingNow(user, r.slots)};
}

std::vector<Standing> Ordering::Standings(MonoTime now) const {
  std::set<UserName> names;
  for (const auto& [name, s] : users_) names.insert(name);
  for (const UserName& name : usage_.Users()) names.insert(name);
  std::vector<Standing> out;
  for (const UserName& name : names) out.push_back(StandingOf(name, now));
  return out;
}

PlacementOrder Ordering::Begin(std::vector<Candidate> jobs, MonoTime now) const {
  std::set<UserName> names;
  for (const Candidate& c : jobs) names.insert(c.user);
  std::vector<Standing> users;
  for (const UserName& name : names) users.push_back(StandingOf(name, now));
  return PlacementOrder(usage_.rule(), std::move(users), std::move(jobs));
}

}  // namespace idlepool::core
