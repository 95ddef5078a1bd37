// Fair preemption (core/ordering_preemption.h) over a pool that changes with time: attempts
// start and end at random on workers of 1-4 slots, users' pending work comes and goes, and the
// attempts Choose picks take 1-3 ticks to vacate. A model kept here from the inputs alone checks
// at every tick (property 7 of ordering_property_test.cc):
//   - any order of the inputs gives the same answers (a second FairPreemption fed shuffled);
//   - Starving names exactly the user the rule names: starving (pending work, under half of its
//     fair share) without a break for `after`, the lowest held / fair first, then by name;
//   - Choose never takes the starving user's attempts, a service's, or one that makes no room;
//     never leaves a victim under its fair share (vacates in flight counted); at most one per
//     worker per `after`; in non-decreasing loss; and only while the deficit is not met.
// A failure prints its seed; ORDERING_SEED=N reruns one seed, ORDERING_SEEDS=N runs N seeds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/ordering_preemption.h"
#include "tests/unit/ordering_property_util.h"

namespace idlepool::core {
namespace {

using test::At;
using test::ForEachSeed;
using test::Rng;

class PreemptionSim {
 public:
  explicit PreemptionSim(uint64_t seed)
      : r_(seed),
        after_(Millis{1000 + static_cast<int64_t>(r_.Below(60'000))}),
        p1_(FairPreemptionRule{after_}),
        p2_(FairPreemptionRule{after_}) {
    for (uint64_t i = 0, n = 2 + r_.Below(3); i < n; ++i)
      shares_["u" + std::to_string(i)] = r_.Pick({0.5, 1.0, 1.0, 2.0, 3.0});
    for (const auto& [u, share] : shares_) weight_[u] = r_.Real(0.05, 1);  // who starts work
    for (uint64_t i = 0, n = 1 + r_.Below(6); i < n; ++i)
      capacity_["w" + std::to_string(i)] = static_cast<uint32_t>(1 + r_.Below(4));
    for (const auto& [w, c] : capacity_) pool_ += c;
  }

  std::string Run(int ticks) {
    for (int i = 0; i < ticks && failure_.empty(); ++i) Tick();
    return failure_;
  }

 private:
  void Check(bool ok, const std::string& what) {
    if (!ok && failure_.empty()) failure_ = "7: " + what + " at t=" + std::to_string(now_ms_);
  }
  uint32_t FreeOn(const WorkerName& w) const {
    uint32_t used = 0;
    for (const Running& a : running_) used += a.worker == w ? a.slots : 0;
    return capacity_.at(w) - used;
  }
  // The user of a new attempt: some users start far more work than others.
  UserName Starter() {
    double total = 0;
    for (const auto& [u, w] : weight_) total += w;
    double x = r_.Real(0, total);
    for (const auto& [u, w] : weight_) {
      if ((x -= w) <= 0) return u;
    }
    return weight_.rbegin()->first;
  }
  void Churn() {
    for (auto it = vacating_.begin(); it != vacating_.end();) {  // vacates take 1-3 ticks
      if (--it->second > 0) {
        ++it;
        continue;
      }
      std::erase_if(running_, [&](const Running& a) { return a.attempt == it->first; });
      it = vacating_.erase(it);
    }
    std::erase_if(running_, [&](const Running& a) {
      return vacating_.count(a.attempt) == 0 && r_.Chance(0.1);
    });
    for (const auto& [w, cap] : capacity_) {
      while (FreeOn(w) > 0 && r_.Chance(0.7)) {
        Running a;
        a.attempt = next_attempt_++;
        a.user = Starter();
        a.worker = w;
        a.slots = static_cast<uint32_t>(1 + r_.Below(std::min<uint32_t>(2, FreeOn(w))));
        a.started = At(now_ms_ - std::floor(r_.Real(0, 1e6)));
        if (r_.Chance(0.5)) a.progress = At(now_ms_ - std::floor(r_.Real(0, 1e6)));
        a.service = r_.Chance(0.15);
        running_.push_back(a);
      }
    }
  }
  std::vector<Demand> Demands() {
    std::vector<Demand> out;
    for (const auto& [u, share] : shares_) {
      if (r_.Chance(0.15)) pending_[u] = r_.Chance(0.6) ? 1 + r_.Below(6) : 0;  // now and then
      Demand d{u, share, 0, static_cast<uint32_t>(pending_[u])};
      for (const Running& a : running_) d.slots += a.user == u ? a.slots : 0;
      if (d.slots > 0 || d.pending_slots > 0 || r_.Chance(0.5)) out.push_back(d);
    }
    return out;
  }
  void Tick() {
    now_ms_ += std::floor(r_.Real(0, 0.6 * static_cast<double>(after_.count())));
    Churn();
    std::vector<Demand> users = Demands(), shuffled = users;
    r_.Shuffle(shuffled);
    const std::map<UserName, double> fair = FairShares(pool_, users);
    const std::optional<UserName> s = p1_.Starving(pool_, users, At(now_ms_));
    Check(s == p2_.Starving(pool_, shuffled, At(now_ms_)), "Starving depends on input order");
    CheckStarving(users, fair, s);
    if (!s) return;
    for (Running& a : running_) a.fits_starving = r_.Chance(0.6);
    std::vector<Running> mixed = running_;
    r_.Shuffle(mixed);
    const std::vector<AttemptId> chosen = p1_.Choose(*s, pool_, users, running_, At(now_ms_));
    Check(chosen == p2_.Choose(*s, pool_, shuffled, mixed, At(now_ms_)),
          "Choose depends on input order");
    CheckChosen(*s, users, fair, chosen);
  }
  void CheckStarving(const std::vector<Demand>& users, const std::map<UserName, double>& fair,
                     const std::optional<UserName>& s) {
    std::map<UserName, double> next;
    std::optional<std::pair<double, UserName>> best;
    for (const Demand& d : users) {
      auto f = fair.find(d.user);
      if (f == fair.end() || d.pending_slots == 0 || !(d.slots < f->second / 2)) continue;
      next[d.user] = since_.count(d.user) ? since_[d.user] : now_ms_;
      const std::pair<double, UserName> k{d.slots / f->second, d.user};
      if (now_ms_ - next[d.user] >= after_.count() && (!best || k < *best)) best = k;
    }
    since_ = next;
    Check(s == (best ? std::optional<UserName>(best->second) : std::nullopt), "Starving's answer");
  }
  void CheckChosen(const UserName& s, const std::vector<Demand>& users,
                   const std::map<UserName, double>& fair, const std::vector<AttemptId>& chosen) {
    std::map<UserName, double> held, gone;  // slots held, slots being vacated
    double in_flight = 0, deficit = 0, last_loss = -1;
    for (const Demand& d : users) held[d.user] = d.slots;
    for (const auto& [id, ticks] : vacating_) {
      for (const Running& a : running_) {
        if (a.attempt == id) gone[a.user] += a.slots, in_flight += a.slots;
      }
    }
    for (const Demand& d : users) {
      if (d.user == s)
        deficit = std::min(fair.at(s) - d.slots, static_cast<double>(d.pending_slots));
    }
    for (AttemptId id : chosen) {
      auto a =
          std::find_if(running_.begin(), running_.end(), [&](auto& x) { return x.attempt == id; });
      if (a == running_.end()) return Check(false, "chose an attempt not running");
      Check(a->user != s && !a->service && a->fits_starving, "chose a forbidden attempt");
      Check(in_flight < deficit, "chose past the deficit");
      gone[a->user] += a->slots;
      in_flight += a->slots;
      Check(fair.count(a->user) && held[a->user] - gone[a->user] >= fair.at(a->user),
            "left a victim under its fair share");
      auto w = last_vacate_.find(a->worker);
      Check(w == last_vacate_.end() || now_ms_ - w->second >= after_.count(), "window broken");
      last_vacate_[a->worker] = now_ms_;
      const double loss = now_ms_ - std::max(a->started, a->progress).time_since_epoch().count();
      Check(loss >= last_loss, "loss decreased");
      last_loss = loss;
      vacating_[id] = static_cast<int>(1 + r_.Below(3));
    }
  }

  Rng r_;
  Millis after_;
  FairPreemption p1_, p2_;
  std::map<UserName, double> shares_;
  std::map<UserName, double> weight_;
  std::map<UserName, uint64_t> pending_;
  std::map<WorkerName, uint32_t> capacity_;
  uint64_t pool_ = 0;
  double now_ms_ = 2e6;
  AttemptId next_attempt_ = 1;
  std::vector<Running> running_;
  std::map<AttemptId, int> vacating_;
  std::map<UserName, double> since_;
  std::map<WorkerName, double> last_vacate_;
  std::string failure_;
};

TEST(PreemptionProperty, StarvingAndChooseKeepEveryRule) {
  ForEachSeed([](uint64_t seed) { return PreemptionSim(seed).Run(300); });
}

}  // namespace
}  // namespace idlepool::core
