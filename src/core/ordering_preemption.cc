#include "core/ordering_preemption.h"

#include <algorithm>
#include <tuple>

namespace idlepool::core {

namespace {

// One Demand per user, shares made sane; a duplicate user: the lowest by all fields counts.
std::map<UserName, Demand> ByUser(std::vector<Demand> users) {
  for (Demand& d : users) d.share = SaneShare(d.share);  // before sorting: no NaN
  std::sort(users.begin(), users.end());
  std::map<UserName, Demand> out;
  for (const Demand& d : users) out.try_emplace(d.user, d);
  return out;
}

Millis Loss(const Running& r, MonoTime now) {
  const MonoTime from = std::max(r.started, r.progress);
  return now > from ? now - from : Millis{0};
}

// Least loss first, then the newest start, then the highest attempt id.
bool CheaperToVacate(const Running& a, const Running& b, MonoTime now) {
  return std::make_tuple(Loss(a, now), b.started, b.attempt) <
         std::make_tuple(Loss(b, now), a.started, a.attempt);
}

// The attempts that may be vacated for `starving` (one per attempt id), cheapest first.
std::vector<Running> Vacatable(std::vector<Running> running, const UserName& starving,
                               MonoTime now) {
  std::sort(running.begin(), running.end());
  auto same = [](const Running& a, const Running& b) { return a.attempt == b.attempt; };
  running.erase(std::unique(running.begin(), running.end(), same), running.end());
  std::erase_if(running, [&](const Running& r) {
    return r.user == starving || r.service || !r.fits_starving;
  });
  std::sort(running.begin(), running.end(),
            [now](const Running& a, const Running& b) { return CheaperToVacate(a, b, now); });
  return running;
}

}  // namespace

std::map<UserName, double> FairShares(uint64_t pool_slots, const std::vector<Demand>& users) {
  const std::map<UserName, Demand> by_user = ByUser(users);
  double shares = 0;
  for (const auto& [name, d] : by_user) {
    if (d.slots > 0 || d.pending_slots > 0) shares += d.share;
  }
  std::map<UserName, double> fair;
  for (const auto& [name, d] : by_user) {
    if (d.slots > 0 || d.pending_slots > 0)
      fair[name] = static_cast<double>(pool_slots) * d.share / shares;
  }
  return fair;
}

FairPreemption::FairPreemption(FairPreemptionRule rule) : rule_(rule) {
  if (rule_.after) rule_.after = std::max(*rule_.after, Millis{0});
}

std::optional<UserName> FairPreemption::Starving(uint64_t pool_slots,
                                                 const std::vector<Demand>& users, MonoTime now) {
  std::map<UserName, MonoTime> since;
  half_share_.clear();
  std::optional<UserName> best;
  double best_ratio = 0;
  if (rule_.after) {
    const std::map<UserName, double> fair = FairShares(pool_slots, users);
    for (const auto& [name, d] : ByUser(users)) {
      auto f = fair.find(name);
      if (f == fair.end() || d.pending_slots == 0 || !(d.slots < f->second / 2)) continue;
      auto old = starving_since_.find(name);
      const MonoTime from = old != starving_since_.end() ? old->second : now;
      since[name] = from;
      half_share_[name] = f->second / 2;
      const double ratio = static_cast<double>(d.slots) / f->second;
      if (now - from >= *rule_.after && (!best || ratio < best_ratio)) {
        best = name;
        best_ratio = ratio;
      }
    }
  }
  starving_since_ = std::move(since);
  return best;
}

std::optional<MonoTime> FairPreemption::StarvingSince(const UserName& user) const {
  auto it = starving_since_.find(user);
  if (it == starving_since_.end()) return std::nullopt;
  return it->second;
}

bool FairPreemption::StarvingNow(const UserName& user, uint32_t slots) const {
  auto it = half_share_.find(user);
  return it != half_share_.end() && static_cast<double>(slots) < it->second;
}

uint64_t FairPreemption::StillVacating(const std::vector<Running>& running,
                                       std::map<UserName, uint64_t>& by_user) {
  std::set<AttemptId> live;
  for (const Running& r : running) live.insert(r.attempt);
  uint64_t total = 0;
  for (auto it = vacating_.begin(); it != vacating_.end();) {
    if (live.count(it->first) == 0) {
      it = vacating_.erase(it);
      continue;
    }
    by_user[it->second.user] += it->second.slots;
    total += it->second.slots;
    ++it;
  }
  return total;
}

bool FairPreemption::WindowOpen(const WorkerName& worker, MonoTime now) const {
  auto it = last_vacate_.find(worker);
  return it == last_vacate_.end() || now - it->second >= *rule_.after;
}

std::vector<AttemptId> FairPreemption::Choose(const UserName& starving, uint64_t pool_slots,
                                              const std::vector<Demand>& users,
                                              std::vector<Running> running, MonoTime now) {
  std::vector<AttemptId> chosen;
  if (!rule_.after) return chosen;
  std::erase_if(last_vacate_, [&](const auto& w) { return WindowOpen(w.first, now); });
  std::map<UserName, uint64_t> vacating_by_user;
  const uint64_t in_flight = StillVacating(running, vacating_by_user);
  const std::map<UserName, Demand> by_user = ByUser(users);
  const std::map<UserName, double> fair = FairShares(pool_slots, users);
  auto s = by_user.find(starving);
  auto fs = fair.find(starving);
  if (s == by_user.end() || fs == fair.end()) return chosen;
  const double deficit =
      std::min(fs->second - s->second.slots, static_cast<double>(s->second.pending_slots)) -
      static_cast<double>(in_flight);
  double freed = 0;
  for (const Running& r : Vacatable(std::move(running), starving, now)) {
    if (freed >= deficit) break;
    auto v = by_user.find(r.user);
    auto fv = fair.find(r.user);
    if (v == by_user.end() || fv == fair.end()) continue;
    if (vacating_.count(r.attempt) != 0 || !WindowOpen(r.worker, now)) continue;
    const double left = static_cast<double>(v->second.slots) -
                        static_cast<double>(vacating_by_user[r.user]) - r.slots;
    if (left < fv->second) continue;  // never under its fair share
    chosen.push_back(r.attempt);
    vacating_[r.attempt] = Vacating{r.user, r.slots};
    vacating_by_user[r.user] += r.slots;
    last_vacate_[r.worker] = now;
    freed += r.slots;
  }
  return chosen;
}

}  // namespace idlepool::core
