// Fair preemption: which running attempts to vacate so a user kept out of the pool gets in
// (issue 32 point 4; the rest of the ordering is in core/ordering.h).
//
// Fair share of a user: fair_u = pool_slots · share_u / Σ share over the active users (those with
// running or pending work), Slurm's normalised share applied to the pool as it is now. A user is
// starving while it has pending work and holds less than half of its fair share; once one has
// starved for `after` without a break, attempts of users above their fair share are vacated for
// it. Half, not all: a user a slot short of its share is served by the next free slot at no cost;
// only a user the order cannot serve (tasks that run for hours, a pool that never frees) is worth
// losing work for. The rules of Choose, each for a reason:
//   - least loss first: loss = now - max(started, last checkpoint), the work a vacate throws
//     away; ties: the newest start, then the highest attempt id;
//   - only attempts whose vacating would let the starving user's next task fit on that worker
//     (Running::fits_starving, computed by the caller): anything else loses work for nobody;
//   - never the starving user's own, never a service replica (a replica serves requests; it is
//     never "done" and its gateway would lose capacity);
//   - never leaving the victim under its fair share (it is preempted down to its share, no
//     further), and no more slots than the starving user's deficit min(fair - held, pending);
//   - at most one vacate per WORKER per `after` (stricter than the "one per slot"): a
//     vacate costs its whole machine a checkpoint upload and a restage, and the pool as a whole
//     then gives up at most one attempt per worker per window, so a starving user still gains up
//     to one slot per worker per `after` while no machine is churned;
//   - vacates already chosen whose attempts still run (their slots are not free until the worker
//     reports) count toward the deficit and against their victims: calling Choose every tick
//     never vacates twice for one need.
// `after` nullopt turns it off (Starving and Choose answer nothing); a negative one counts as 0.
//
// Pure: `now` passed in, no clock. Deterministic: the answers depend on the inputs as sets, never
// on their order (duplicates of one user or attempt: the lowest by all fields counts). Thread
// safety: none (owned by the Scheduler's Ordering). Memory: an entry per starving user, per worker
// that vacated within the last `after`, per chosen attempt still running.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "core/ordering_usage.h"
#include "core/types.h"

namespace idlepool::core {

struct FairPreemptionRule {
  std::optional<Millis> after = Millis{600'000};  // --fair-preemption-after; nullopt: off
};

// A user with work, as the pool stands now. Share as in ordering.h (SaneShare).
struct Demand {
  UserName user;
  double share = 1.0;
  uint32_t slots = 0;          // held by its running attempts
  uint32_t pending_slots = 0;  // slots its eligible pending tasks need
  auto operator<=>(const Demand&) const = default;
};

// A running attempt that could be vacated.
struct Running {
  AttemptId attempt = 0;
  UserName user;
  WorkerName worker;
  uint32_t slots = 1;
  MonoTime started{};
  MonoTime progress{};         // its last checkpoint; before `started` (or {}) when none
  bool service = false;        // a replica: never vacated
  bool fits_starving = false;  // vacating it lets the starving user's next task fit its worker
  auto operator<=>(const Running&) const = default;
};

// fair_u of every active user, by name.
std::map<UserName, double> FairShares(uint64_t pool_slots, const std::vector<Demand>& users);

class FairPreemption {
 public:
  explicit FairPreemption(FairPreemptionRule rule = {});

  // Updates since when each user starves (a break starts it over); returns the user starving for
  // at least `after`, the lowest held/fair first, then by name; nullopt: none.
  std::optional<UserName> Starving(uint64_t pool_slots, const std::vector<Demand>& users,
                                   MonoTime now);
  // The attempts to vacate now for `starving`, in the order chosen (non-decreasing loss).
  std::vector<AttemptId> Choose(const UserName& starving, uint64_t pool_slots,
                                const std::vector<Demand>& users, std::vector<Running> running,
                                MonoTime now);
  // The worker left the pool: its window is moot.
  void ForgetWorker(const WorkerName& worker) { last_vacate_.erase(worker); }

  std::optional<MonoTime> StarvingSince(const UserName& user) const;
  // Whether `user` still counts as starving when it holds `slots` now: it did at the last
  // Starving() and still holds less than half of the fair share found then. Placement reads this
  // between two Ticks, so a user that got its slot stops going first at once.
  bool StarvingNow(const UserName& user, uint32_t slots) const;
  const FairPreemptionRule& rule() const { return rule_; }

 private:
  struct Vacating {
    UserName user;
    uint32_t slots = 0;
  };
  // Drops chosen attempts that no longer run; the slots still vacating, in all and by user.
  uint64_t StillVacating(const std::vector<Running>& running,
                         std::map<UserName, uint64_t>& by_user);
  bool WindowOpen(const WorkerName& worker, MonoTime now) const;

  FairPreemptionRule rule_;
  std::map<UserName, MonoTime> starving_since_;
  std::map<UserName, double> half_share_;  // of the users in starving_since_
  std::map<WorkerName, MonoTime> last_vacate_;
  std::map<AttemptId, Vacating> vacating_;
};

}  // namespace idlepool::core
