// The ordering of a shared pool (core/ordering.h) under seeded random inputs, each property
// checked against a model kept here from the inputs alone:
//   Placement passes (random users, usage, shares, quotas, jobs; a caller that places a job's
//   task while free slots are left and skips some by a hash of the job):
//     1. any order of the inputs gives the same pass (hand-outs, Ahead, held);
//     2. Next() is a service while one is live, else a job of the user with the lowest
//        (not starving, (usage + placed·lookahead)/share, held/share, name) among users with a
//        live job (placed: in this pass);
//     3. within a user, priority non-increasing, then job id increasing;
//     4. after any Placed no user is past a quota, and held() is exactly the jobs whose next
//        task a quota holds; Ahead is the pending tasks of the jobs handed out before;
//     5. the pass ends within Σ pending + jobs calls, and every job with pending tasks is
//        handed out or held.
//   Usage: 6. one step equals any split of it (rel 1e-9); holding nothing halves usage per
//     half-life; a constant hold w tends to w·H/ln2.
//   Fair preemption: 7. in ordering_preemption_property_test.cc.
//   Closed loops over time: 8. shares 2:1, equal-length tasks (at most a twentieth of the
//     half-life), endless queues: slot-seconds 2:1 within 5%; 9. a user arriving with a small job
//     while another has a long queue gets the next free slot.
// A failure prints its seed; ORDERING_SEED=N reruns one seed, ORDERING_SEEDS=N runs N seeds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <numbers>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "core/ordering.h"
#include "tests/unit/ordering_property_util.h"

namespace idlepool::core {
namespace {

using test::At;
using test::ForEachSeed;
using test::Rng;

uint64_t Mix(uint64_t x) {  // splitmix64: the caller's "no worker" decisions, order-free
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// --- placement passes (1-5) ---

struct Pass {
  UsageRule rule;
  std::vector<Standing> users;
  std::vector<Candidate> jobs;
  uint64_t free_slots = 0;
  uint64_t salt = 0;
};

Pass RandomPass(Rng& r) {
  Pass p;
  p.rule.lookahead = Millis{r.Pick<int64_t>({0, 1000, 600'000, 3'600'000})};
  p.rule.gpu_weight = r.Pick({0.0, 1.0, 4.0});
  const uint64_t users = 1 + r.Below(5);
  for (uint64_t i = 0; i < users; ++i) {
    Standing s;
    s.user = "u" + std::to_string(i);
    s.share = r.Pick({0.5, 1.0, 1.0, 2.0, 3.0, -1.0});  // -1: taken as 1
    s.usage = r.Chance(0.5) ? r.Pick({0.0, 600.0, 1200.0}) : r.Real(0, 20'000);
    s.slots = static_cast<uint32_t>(r.Below(7));
    s.gpus = static_cast<uint32_t>(r.Below(3));
    s.starving = r.Chance(0.2);
    if (r.Chance(0.5)) s.quota.max_slots = static_cast<uint32_t>(1 + r.Below(12));
    if (r.Chance(0.3)) s.quota.max_gpus = static_cast<uint32_t>(1 + r.Below(3));
    p.users.push_back(s);
    if (r.Chance(0.1)) p.users.push_back(Standing{s.user, 1, {}, 5, 1, 0, false});  // a duplicate
  }
  const uint64_t jobs = 1 + r.Below(12);
  for (uint64_t i = 0; i < jobs; ++i) {
    Candidate c;
    c.job = 1 + r.Below(40);                            // duplicates now and then
    c.user = "u" + std::to_string(r.Below(users + 1));  // u<users>: a user with no Standing
    c.priority = r.Pick({-5, 0, 0, 3, 10});
    c.service = r.Chance(0.2);
    c.pending = static_cast<uint32_t>(r.Below(7));
    c.slots = static_cast<uint32_t>(1 + r.Below(3));
    c.gpus = r.Chance(0.2) ? 1 : 0;
    p.jobs.push_back(c);
  }
  p.free_slots = r.Below(31);
  p.salt = r.Below(1ull << 62);
  return p;
}

// The pass as this test expects it, from the inputs and the documented rules alone.
class PassModel {
 public:
  explicit PassModel(const Pass& p) : rule_(p.rule) {
    std::vector<Standing> users = p.users;
    for (Standing& s : users) s.share = s.share > 0 ? s.share : 1.0;
    std::sort(users.begin(), users.end());
    for (const Standing& s : users) users_.try_emplace(s.user, s);
    std::vector<Candidate> jobs = p.jobs;
    std::sort(jobs.begin(), jobs.end());
    for (const Candidate& c : jobs) {
      if (!jobs_.try_emplace(c.job, Job{c}).second) continue;
      users_.try_emplace(c.user, Standing{c.user, 1, {}, 0, 0, 0, false});
    }
  }

  std::optional<JobId> Expected() const {
    using Key = std::tuple<int, bool, double, double, UserName, int64_t, JobId>;
    std::optional<Key> best;
    for (const auto& [id, j] : jobs_) {
      if (!Live(j)) continue;
      const Standing& u = users_.at(j.c.user);
      const auto [placed_slots, placed_gpus] =
          placed_.count(u.user) ? placed_.at(u.user) : std::pair<uint32_t, uint32_t>{};
      const double placed = placed_slots + rule_.gpu_weight * placed_gpus;
      const double ahead_s = static_cast<double>(rule_.lookahead.count()) / 1000.0;
      const Key k{j.c.service ? 0 : 1,
                  !u.starving,
                  (u.usage + placed * ahead_s) / u.share,
                  u.slots / u.share,
                  u.user,
                  -int64_t{j.c.priority},
                  id};
      if (!best || k < *best) best = k;
    }
    if (!best) return std::nullopt;
    return std::get<6>(*best);
  }
  std::vector<QuotaHeld> Held() const {
    std::vector<QuotaHeld> out;
    for (const auto& [id, j] : jobs_) {
      const QuotaHold by = Hold(j);
      if (j.c.pending > 0 && by != QuotaHold::kNone) out.push_back({id, by});
    }
    return out;
  }
  uint64_t Ahead(JobId job) const {
    uint64_t n = 0;
    const auto it = std::find(handed_.begin(), handed_.end(), job);
    for (auto h = handed_.begin(); h != it; ++h) n += jobs_.at(*h).c.pending;
    return n;
  }
  void Handed(JobId job) {
    if (std::find(handed_.begin(), handed_.end(), job) == handed_.end()) handed_.push_back(job);
  }
  void Placed(JobId job) {
    Candidate& c = jobs_.at(job).c;
    --c.pending;
    users_.at(c.user).slots += c.slots;
    users_.at(c.user).gpus += c.gpus;
    placed_[c.user].first += c.slots;
    placed_[c.user].second += c.gpus;
  }
  void Skip(JobId job) { jobs_.at(job).skipped = true; }
  const Candidate& JobOf(JobId job) const { return jobs_.at(job).c; }
  const Standing& UserOf(const UserName& user) const { return users_.at(user); }
  // Jobs with pending tasks neither handed out nor held.
  std::vector<JobId> Unreached() const {
    std::vector<JobId> out;
    const std::vector<QuotaHeld> held = Held();
    for (const auto& [id, j] : jobs_) {
      const bool is_held =
          std::any_of(held.begin(), held.end(), [&](const QuotaHeld& h) { return h.job == id; });
      const bool handed = std::count(handed_.begin(), handed_.end(), id) != 0;
      if (j.c.pending > 0 && !handed && !is_held) out.push_back(id);
    }
    return out;
  }

 private:
  struct Job {
    Candidate c;
    bool skipped = false;
  };
  QuotaHold Hold(const Job& j) const {
    const Standing& u = users_.at(j.c.user);
    const Quota& q = u.quota;
    if (q.max_slots != 0 && u.slots + j.c.slots > q.max_slots) return QuotaHold::kMaxSlots;
    if (q.max_gpus != 0 && u.gpus + j.c.gpus > q.max_gpus) return QuotaHold::kMaxGpus;
    return QuotaHold::kNone;
  }
  bool Live(const Job& j) const {
    return !j.skipped && j.c.pending > 0 && Hold(j) == QuotaHold::kNone;
  }

  UsageRule rule_;
  std::map<UserName, Standing> users_;
  std::map<JobId, Job> jobs_;
  std::map<UserName, std::pair<uint32_t, uint32_t>> placed_;  // slots, gpus placed in the pass
  std::vector<JobId> handed_;
};

// Drives one pass: a line per call into `trace`; with `check`, every rule against the model.
std::string RunPass(const Pass& p, bool check, std::string& trace) {
  PlacementOrder order(p.rule, p.users, p.jobs);
  PassModel model(p);
  std::ostringstream out;
  uint64_t free = p.free_slots, budget = 1;
  for (const Candidate& c : p.jobs) budget += c.pending + 1;
  std::map<std::pair<UserName, bool>, std::pair<int64_t, JobId>> last;  // (user, service) -> rank
  std::map<JobId, uint32_t> tries;
  for (uint64_t calls = 0;; ++calls) {
    const std::optional<JobId> j = order.Next();
    if (check && j != model.Expected()) return "2: Next() " + std::to_string(j.value_or(0));
    if (check && calls > budget) return "5: the pass runs past its bound";
    if (!j) break;
    model.Handed(*j);
    const Candidate c = model.JobOf(*j);
    const std::pair<int64_t, JobId> rank{-int64_t{c.priority}, c.job};
    auto [it, added] = last.try_emplace({c.user, c.service}, rank);
    if (check && rank < it->second) return "3: job " + std::to_string(c.job) + " out of order";
    it->second = rank;
    if (check && order.Ahead(*j) != model.Ahead(*j)) return "4: Ahead of " + std::to_string(*j);
    const bool fits = c.slots <= free && Mix(p.salt ^ (*j * 1'000'003) ^ tries[*j]++) % 6 != 0;
    out << *j << (fits ? "P " : "S ") << order.Ahead(*j) << "; ";
    if (fits) {
      free -= c.slots;
      order.Placed(*j);
      model.Placed(*j);
      const Standing& u = model.UserOf(c.user);
      if (check && u.quota.max_slots != 0 && u.slots > u.quota.max_slots) return "4: max_slots";
      if (check && u.quota.max_gpus != 0 && u.gpus > u.quota.max_gpus) return "4: max_gpus";
      if (check && order.StandingOf(c.user)->slots != u.slots) return "4: held slots";
    } else {
      order.Skip(*j);
      model.Skip(*j);
    }
    if (check && order.held() != model.Held()) return "4: held() after job " + std::to_string(*j);
  }
  for (const QuotaHeld& h : order.held()) out << "held " << h.job << " " << int(h.by) << "; ";
  for (JobId id : model.Unreached()) {
    if (check) return "5: job " + std::to_string(id) + " never handed out nor held";
  }
  trace = out.str();
  return "";
}

TEST(PlacementProperty, AnyOrderOfTheInputsGivesTheSamePass) {
  ForEachSeed([](uint64_t seed) -> std::string {
    Rng r(seed);
    Pass p = RandomPass(r);
    std::string a, b;
    RunPass(p, false, a);
    r.Shuffle(p.users);
    r.Shuffle(p.jobs);
    RunPass(p, false, b);
    return a == b ? "" : "1: the pass differs after a shuffle:\n  " + a + "\n  " + b;
  });
}

TEST(PlacementProperty, EveryCallKeepsTheOrderAndTheQuotas) {
  ForEachSeed([](uint64_t seed) {
    Rng r(seed);
    std::string trace;
    for (int i = 0; i < 20; ++i) {
      const std::string failure = RunPass(RandomPass(r), true, trace);
      if (!failure.empty()) return "pass " + std::to_string(i) + ": " + failure;
    }
    return std::string();
  });
}

// --- usage (6) ---

TEST(UsageProperty, OneStepEqualsAnySplitOfIt) {
  ForEachSeed([](uint64_t seed) {
    Rng r(seed);
    const UsageRule rule{.half_life = Millis{1 + static_cast<int64_t>(r.Below(100'000'000))}};
    UsageLedger whole(rule), split(rule);
    const double u0 = r.Real(0, 1e6);
    const auto slots = static_cast<uint32_t>(r.Below(64)), gpus = static_cast<uint32_t>(r.Below(8));
    for (UsageLedger* l : {&whole, &split}) {
      l->Restore("u", u0, u0 / 3, At(0));
      l->Hold("u", slots, gpus, At(0));
    }
    const double end = r.Real(1, 1e9);
    std::vector<double> cuts;
    for (uint64_t i = r.Below(20); i > 0; --i) cuts.push_back(r.Real(0, end));
    std::sort(cuts.begin(), cuts.end());
    for (double t : cuts) split.Hold("u", 0, 0, At(t));
    const UsageLedger::Reading a = whole.At("u", At(end)), b = split.At("u", At(end));
    const bool ok = std::abs(a.slot_s - b.slot_s) <= 1e-9 * std::max(1.0, a.slot_s) &&
                    std::abs(a.gpu_s - b.gpu_s) <= 1e-9 * std::max(1.0, a.gpu_s);
    return ok ? std::string()
              : "6: " + std::to_string(a.slot_s) + " vs " + std::to_string(b.slot_s);
  });
}

TEST(UsageProperty, HoldingNothingHalvesPerHalfLifeAndAHoldTendsToItsLimit) {
  ForEachSeed([](uint64_t seed) {
    Rng r(seed);
    const Millis h{1 + static_cast<int64_t>(r.Below(1'000'000'000))};
    UsageLedger idle(UsageRule{.half_life = h}), busy(UsageRule{.half_life = h});
    const double u0 = r.Real(0, 1e9);
    const auto w = static_cast<uint32_t>(1 + r.Below(1000));
    idle.Restore("u", u0, 0, At(0));
    busy.Hold("u", w, 0, At(0));
    const int n = static_cast<int>(r.Below(30));
    const double halved = idle.At("u", At(static_cast<double>(n * h.count()))).slot_s;
    if (std::abs(halved - u0 / std::exp2(n)) > 1e-9 * u0) return std::string("6: halving");
    const double limit = w * (static_cast<double>(h.count()) / 1000.0) / std::numbers::ln2;
    const double got = busy.At("u", At(static_cast<double>(n * h.count()))).slot_s;
    if (std::abs(got - limit * (1 - std::exp2(-n))) > 1e-9 * limit) return std::string("6: hold");
    const double far = busy.At("u", At(60.0 * static_cast<double>(h.count()))).slot_s;
    return std::abs(far - limit) <= 1e-9 * limit ? std::string() : std::string("6: limit");
  });
}

// --- closed loops over time (8, 9) ---

// Slots that run one task at a time; the usage of each task is held in `ordering`.
class SlotLoop {
 public:
  SlotLoop(Ordering& ordering, size_t slots) : ordering_(ordering), slots_(slots) {}
  double now() const { return now_; }
  // Ends the tasks due by now; the slots free.
  std::vector<size_t> Free() {
    std::vector<size_t> free;
    for (size_t i = 0; i < slots_.size(); ++i) {
      if (slots_[i].end > now_) continue;
      if (!slots_[i].user.empty()) ordering_.Free(slots_[i].user, 1, 0, At(now_));
      slots_[i].user.clear();
      free.push_back(i);
    }
    return free;
  }
  void Start(size_t slot, const UserName& user, double ms, double horizon) {
    ordering_.Hold(user, 1, 0, At(now_));
    slots_[slot] = {user, now_ + ms};
    slot_s_[user] += std::min(now_ + ms, horizon) - now_;
  }
  void ToNextEnd() {
    now_ = std::min_element(slots_.begin(), slots_.end(), [](const Slot& a, const Slot& b) {
             return a.end < b.end;
           })->end;
  }
  double slot_s(const UserName& user) { return slot_s_[user]; }

 private:
  struct Slot {
    UserName user;  // "": free
    double end = 0;
  };
  Ordering& ordering_;
  std::vector<Slot> slots_;
  std::map<UserName, double> slot_s_;  // up to the horizon
  double now_ = 0;
};

UsageRule RandomRule(Rng& r) {
  return UsageRule{.half_life = r.Pick({Millis{3'600'000}, Millis{86'400'000}}),
                   .lookahead = Millis{r.Pick<int64_t>({0, 60'000, 600'000, 3'600'000})}};
}

Candidate Endless(JobId job, const UserName& user, uint32_t pending) {
  return Candidate{job, user, 0, false, pending, 1, 0};
}

TEST(FairnessProperty, SharesTwoToOneGiveSlotSecondsTwoToOne) {
  ForEachSeed([](uint64_t seed) -> std::string {
    Rng r(seed);
    const UsageRule rule = RandomRule(r);
    Ordering ordering(rule);
    if (!ordering.Set(UserSet{"a", 2, {}}) || !ordering.Set(UserSet{"b", 1, {}})) return "Set";
    // Tasks at most a twentieth of the half-life: one near it forgets the very usage the shares
    // are measured by (2 slots, 10-minute tasks, a 1 h half-life: 1.88 instead of 2).
    const double longest = std::min(600'000.0, static_cast<double>(rule.half_life.count()) / 20);
    const double task_ms = r.Real(10'000, longest), horizon = 300 * task_ms;
    const size_t slots = 2 + r.Below(31);
    SlotLoop loop(ordering, slots);
    while (loop.now() < horizon) {
      const std::vector<size_t> free = loop.Free();
      const auto n = static_cast<uint32_t>(free.size());
      PlacementOrder pass =
          ordering.Begin({Endless(1, "a", n), Endless(2, "b", n)}, At(loop.now()));
      for (size_t i : free) {
        const JobId j = pass.Next().value_or(0);
        pass.Placed(j);
        // The first tasks end at random, to stagger the slots; then all take task_ms.
        loop.Start(i, j == 1 ? "a" : "b", loop.now() == 0 ? r.Real(1, task_ms) : task_ms, horizon);
      }
      loop.ToNextEnd();
    }
    const double ratio = loop.slot_s("a") / loop.slot_s("b");
    if (std::abs(ratio / 2 - 1) <= 0.05) return "";
    return "8: slot-seconds a/b = " + std::to_string(ratio) + " on " + std::to_string(slots) +
           " slots, tasks of " + std::to_string(task_ms / 1000) + " s, half-life " +
           std::to_string(rule.half_life.count() / 1000) + " s, lookahead " +
           std::to_string(rule.lookahead.count() / 1000) + " s";
  });
}

TEST(FairnessProperty, ALateSmallJobGetsTheNextFreeSlot) {
  ForEachSeed([](uint64_t seed) -> std::string {
    Rng r(seed);
    Ordering ordering(RandomRule(r));
    if (!ordering.Set(UserSet{"a", r.Real(0.2, 5), {}}) ||
        !ordering.Set(UserSet{"b", r.Real(0.2, 5), {}}))
      return "Set";
    const double task_ms = r.Real(1000, 600'000), arrives = r.Real(0.5, 20) * task_ms;
    const auto small = static_cast<uint32_t>(1 + r.Below(3));
    SlotLoop loop(ordering, 1 + r.Below(16));
    for (;; loop.ToNextEnd()) {
      const std::vector<size_t> free = loop.Free();
      std::vector<Candidate> jobs = {Endless(1, "a", 1'000'000)};
      if (loop.now() >= arrives) jobs.push_back(Endless(2, "b", small));
      PlacementOrder pass = ordering.Begin(jobs, At(loop.now()));
      const JobId first = pass.Next().value_or(0);
      if (loop.now() >= arrives) {
        if (first != 2) return "9: the first free slot after b arrived went to job 1";
        if (loop.now() - arrives > 2 * task_ms) return "9: b waited past a task of a";
        return "";
      }
      for (size_t i : free) {
        pass.Placed(pass.Next().value_or(0));
        loop.Start(i, "a", r.Real(0.5, 2) * task_ms, 1e300);
      }
    }
  });
}

}  // namespace
}  // namespace idlepool::core