// The order in which work is placed in a shared pool (issue 32): fair share between users,
// priority within a user, quotas, and fair preemption. One pure unit in three files: this one
// (the order of a placement pass, and Ordering, the Scheduler's one member for all of it),
// core/ordering_usage.h (decayed usage) and core/ordering_preemption.h (what to vacate, when).
//
// Which job's next task takes the next free slot of a pass:
//   1. Services before batch work: a replica serves requests now; a batch task can wait a pass.
//   2. Then users that fair preemption counts as starving (Standing::starving: below half of their
//      fair share with pending work; core/ordering_preemption.h) before the others.
//   3. Then the user with the lowest key (usage + placed · lookahead) / share, ties by held slots
//      / share, then by name. usage is the user's decayed weighted usage as of the pass's `now`
//      (slot-seconds + gpu_weight · GPU-seconds, half-life UsageRule::half_life): HTCondor orders
//      its users by such a decayed usage (its "user priority"), and Slurm's fair share likewise
//      weighs decayed usage against shares. placed is what this pass has placed for the user so
//      far (slots + gpu_weight · GPUs); lookahead (UsageRule::lookahead, 10 min) is the usage a
//      slot placed now will have accrued when it frees, about one attempt. held is every attempt
//      of the user, this pass's included.
//   4. Within a user, the highest priority, then the oldest job (lowest id).
// The key is recomputed after every Placed (placed and held grow; usage does not move in a pass).
//
// Why this key. Between passes it is the literal rule (usage / share, held / share, name): usage
// is the integral of what a user holds, so giving each free slot to the lowest usage / share is
// integral control, and over a steady load slot-seconds converge to the shares (2:1 within 5% in
// the property test, tasks short against the half-life), while a newcomer (usage 0) sorts first at
// once: B's 2-task job starts at the next free slot while A's 60-task job runs. Within a pass usage
// does not move, so the literal rule would give a burst of free slots (a pool starting, a big job's
// tasks ending together) all to the user whose usage / share is lower by any epsilon, leaving the
// other far under its fair share for a task length: just what fair preemption then answers, so the
// two rules would fight. Charging each slot placed in the pass lookahead of usage deals a burst out
// by the shares (equal usage, shares 2:1: two of every three slots) while a real difference still
// counts (X slot-seconds less usage: X / lookahead more slots first). Rejected: charging every held
// slot, not only this pass's. The key then weighs held slots as much as usage, each freed slot goes
// back to whichever user keeps held slots nearest the shares, and allocations lock at whole slots:
// near 13:7 on 20 slots (1.87, not 2) once usage decays (the property test found it). lookahead 0
// is the literal rule throughout. Why starving users first: fair preemption looks at held slots,
// this order at usage. A user with a long history can be below half of its share while a newcomer's
// lower usage wins every free slot, the one just vacated for the starving user included; putting
// the starving first makes the vacated slot (and any slot that frees sooner) reach it, so that a
// preemption is needed only when slots do not free for `after`. Starving is judged at a Tick but
// read against what the user holds now: once it holds half of its fair share it stops going
// first, or between two Ticks it would take every slot that frees and overshoot its share (2:1
// shares measured 1.58:1 over a steady load of 0.3 s tasks before this).
//
// Quotas (max_slots, max_gpus; 0: no limit) hold a job at placement: a job whose next task would
// take its user past a quota is not handed out (PlacementOrder::held says which and why). Held
// counts include every attempt of the user (services, backups, revived ones): a quota is what the
// user holds, not what this pass placed. A task that alone needs more than a quota is held for
// ever: refusing such a job is the submit's business.
//
// Bad input never crashes a pass: shares, half-lives and weights are made sane as
// core/ordering_usage.h says; a job with no pending task is ignored; a user with jobs but no
// Standing has the defaults (share 1, usage 0, no quota); duplicates (of one user or job id)
// count once, the lowest by all fields, so the order never depends on the inputs' order. Calls
// with an unknown job (Placed, Skip) are ignored. Ordering::Set refuses a share that is not a
// finite number > 0.
//
// Pure: `now` passed in, no clock, no random draw; ties broken by name and id only. Thread safety:
// none (owned by the Scheduler). A PlacementOrder lives for one pass.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/ordering_preemption.h"
#include "core/ordering_usage.h"
#include "core/types.h"

namespace idlepool::core {

struct Quota {
  uint32_t max_slots = 0;  // 0: no limit
  uint32_t max_gpus = 0;   // 0: no limit
  auto operator<=>(const Quota&) const = default;
};

// A user's settings (admin `idlepool users set`; also the event that changes them).
struct UserSet {
  UserName user;
  double share = 1.0;  // > 0
  Quota quota;
};

// A user as a pass starts.
struct Standing {
  UserName user;
  double share = 1.0;
  Quota quota;
  double usage = 0;    // UsageLedger::Weighted as of the pass's `now`
  uint32_t slots = 0;  // held now, every attempt of the user
  uint32_t gpus = 0;
  bool starving = false;  // below half of its fair share now (FairPreemption::StarvingNow)
  auto operator<=>(const Standing&) const = default;
};

// A job with placeable pending tasks in this pass.
struct Candidate {
  JobId job = 0;
  UserName user;
  int32_t priority = 0;
  bool service = false;
  uint32_t pending = 0;  // its placeable pending tasks
  uint32_t slots = 1;    // per task (Resources::cpus)
  uint32_t gpus = 0;     // per task (Resources::gpus)
  auto operator<=>(const Candidate&) const = default;
};

enum class QuotaHold : uint8_t { kNone, kMaxSlots, kMaxGpus };

// Whether one more task needing `slots` and `gpus` would take a user holding `held_slots` and
// `held_gpus` past `quota` (kMaxSlots when both would).
QuotaHold HeldBy(const Quota& quota, uint32_t held_slots, uint32_t held_gpus, uint32_t slots,
                 uint32_t gpus);

// A user's place in the order among batch (or among service) work, lowest first.
struct UserKey {
  bool not_starving = true;
  double usage = 0;  // (usage + placed · lookahead) / share
  double slots = 0;  // held slots / share
  UserName user;
  auto operator<=>(const UserKey&) const = default;
};
// `placed_slots` and `placed_gpus`: placed for the user in this pass so far.
UserKey KeyOf(const Standing& s, uint32_t placed_slots, uint32_t placed_gpus,
              const UsageRule& rule);

struct QuotaHeld {
  JobId job = 0;
  QuotaHold by = QuotaHold::kNone;
  bool operator==(const QuotaHeld&) const = default;
};

// One placement pass. The caller asks Next(), tries that job's next pending task, and says what
// came of it: Placed (one task placed) or Skip (no worker for it in this pass: no fit, the tail
// rule). Next() answers the same job until then. With one of them after every Next(), the pass
// ends (Next() nullopt) within Σ pending + jobs calls, every job placed out, skipped or held.
class PlacementOrder {
 public:
  PlacementOrder(const UsageRule& rule, std::vector<Standing> users, std::vector<Candidate> jobs);

  std::optional<JobId> Next();
  void Placed(JobId job);  // its user holds the task's slots and GPUs, its pending - 1
  void Skip(JobId job);    // not handed out again in this pass
  // Pending tasks of the jobs first handed out before `job` (all handed out, if it never was):
  // the tail rule's "tasks ahead". O(jobs handed out).
  uint64_t Ahead(JobId job) const;
  // Jobs with pending tasks whose next task a quota holds now, by job id.
  std::vector<QuotaHeld> held() const;
  // A user as it stands now in this pass (held counts include this pass's placements).
  const Standing* StandingOf(const UserName& user) const;

 private:
  struct Job {
    Candidate c;
    uint64_t handed = 0;  // 0: not yet; else its first hand-out, counted from 1
    bool skipped = false;
  };
  using Rank = std::pair<int64_t, JobId>;  // (-priority, id): the order within a user
  struct Queue {
    std::vector<JobId> jobs;  // all the user's, by id
    std::set<Rank> tier[2];   // [0] services, [1] batch; live jobs only
    uint32_t placed_slots = 0;
    uint32_t placed_gpus = 0;
    std::optional<UserKey> key;
  };
  void Requeue(const UserName& user);
  bool Live(const Job& j) const;

  UsageRule rule_;
  std::map<UserName, Standing> users_;
  std::map<JobId, Job> jobs_;
  std::map<UserName, Queue> queues_;
  std::set<std::pair<int, UserKey>> order_;  // (tier, key) of every user with a live job there
  uint64_t handed_ = 0;
};

// Everything about ordering the Scheduler keeps: users' settings, usage, preemption state.
class Ordering {
 public:
  explicit Ordering(UsageRule usage = {}, FairPreemptionRule preemption = {})
      : usage_(usage), preemption_(preemption) {}

  // Sets a user's share and quota; false (nothing changed) when the share is not a finite
  // number > 0.
  [[nodiscard]] bool Set(const UserSet& u);
  UserSet SettingsOf(const UserName& user) const;  // the defaults for a user never set

  void Hold(const UserName& user, uint32_t slots, uint32_t gpus, MonoTime now) {
    usage_.Hold(user, slots, gpus, now);
  }
  void Free(const UserName& user, uint32_t slots, uint32_t gpus, MonoTime now) {
    usage_.Free(user, slots, gpus, now);
  }
  void Restore(const UserName& user, double slot_s, double gpu_s, MonoTime now) {
    usage_.Restore(user, slot_s, gpu_s, now);
  }

  // Starving: as the last FairPreemption::Starving call left it.
  Standing StandingOf(const UserName& user, MonoTime now) const;
  std::vector<Standing> Standings(MonoTime now) const;  // users set or with usage, by name
  // A pass over `jobs`, their users as they stand at `now`.
  PlacementOrder Begin(std::vector<Candidate> jobs, MonoTime now) const;

  FairPreemption& preemption() { return preemption_; }
  const FairPreemption& preemption() const { return preemption_; }
  const UsageLedger& usage() const { return usage_; }

 private:
  std::map<UserName, UserSet> users_;
  UsageLedger usage_;
  FairPreemption preemption_;
};

}  // namespace idlepool::core
