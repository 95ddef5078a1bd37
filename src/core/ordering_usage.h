// Decayed usage per user: the history that fair share orders users by (core/ordering.h).
//
// A user's usage is slot-seconds (and, kept apart, GPU-seconds) that fade with a half-life, as
// HTCondor's accountant decays a user's accumulated usage (half-life one day by default) and
// Slurm's fair share decays its usage: what a user ran yesterday counts half as much as what it
// runs now, and after a quiet week almost nothing. The ledger keeps it exactly, in O(1) per
// change and with no periodic pass: while w units are held from t0 to t1 (Δ = t1 - t0, H the
// half-life),
//   U(t1) = U(t0)·2^(-Δ/H) + w·(H/ln2)·(1 - 2^(-Δ/H)),
// the closed form of dU/dt = w - U·ln2/H. So a user holding nothing halves per half-life, one
// holding w units for ever tends to w·H/ln2, and one step over [t0, t2] equals two steps over
// [t0, t1] and [t1, t2] (the ledger's answer does not depend on how often it is read or changed).
//
// Pure: `now` passed in, no clock. Time never runs back here: a `now` before a user's last change
// counts as that change's time (no decay, no accrual). Units: seconds of held slots (cpus) or
// GPU devices; MonoTime in milliseconds. Thread safety: none (owned by the Scheduler's Ordering).
// Memory: one entry per user ever seen (a user is a person: a pool has few).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/types.h"

namespace idlepool::core {

using UserName = std::string;  // "": work from before users existed (one anonymous user)

struct UsageRule {
  Millis half_life{86'400'000};  // coordinator --usage-half-life; HTCondor's default, one day
  double gpu_weight = 1.0;       // a GPU-second counts this many slot-seconds in Weighted
  // The usage a slot placed in a pass counts for, ahead, for the rest of that pass
  // (core/ordering.h, "Why this key"): about one attempt's length. 0: usage alone.
  Millis lookahead{600'000};
};

// Bad settings never crash a pass; they are taken as: a share that is not a finite number > 0 as
// the default 1, one outside [kMinShare, kMaxShare] as the nearest bound (so usage/share and the
// fair share pool·share/Σshare stay finite); a half-life under 1 ms as 1 ms; a gpu_weight that is
// not a finite number >= 0 as 1; a negative lookahead as 0.
inline constexpr double kMinShare = 1e-6;
inline constexpr double kMaxShare = 1e6;
double SaneShare(double share);
UsageRule SaneRule(UsageRule rule);

// U(t0 + dt) from U(t0) with `held` units held all along; `half_life` >= 1 ms, `dt` >= 0.
double Decayed(double usage, double held, Millis dt, Millis half_life);

class UsageLedger {
 public:
  // A user's usage as of some `now`, and what it holds then.
  struct Reading {
    double slot_s = 0;  // decayed slot-seconds
    double gpu_s = 0;   // decayed GPU-seconds
    uint32_t slots = 0;
    uint32_t gpus = 0;
    bool operator==(const Reading&) const = default;
  };

  explicit UsageLedger(UsageRule rule = {}) : rule_(SaneRule(rule)) {}

  // An attempt of `user` starts holding `slots` and `gpus` (placed, revived or re-adopted).
  void Hold(const UserName& user, uint32_t slots, uint32_t gpus, MonoTime now);
  // ... stops holding them (however it ended). More than held frees down to 0: the caller's
  // bookkeeping is wrong, but usage stays meaningful.
  void Free(const UserName& user, uint32_t slots, uint32_t gpus, MonoTime now);
  // Sets `user`'s usage to what the store kept, decayed by the caller to `now`; what the user
  // holds is unchanged. A value that is not a finite number >= 0 is taken as 0.
  void Restore(const UserName& user, double slot_s, double gpu_s, MonoTime now);

  // Const: a reading never changes a later one. An unknown user reads all zero.
  Reading At(const UserName& user, MonoTime now) const;
  double Weighted(const Reading& r) const { return r.slot_s + rule_.gpu_weight * r.gpu_s; }
  std::vector<UserName> Users() const;  // by name
  const UsageRule& rule() const { return rule_; }

 private:
  struct Account {
    Reading r;
    MonoTime as_of{};
  };
  Reading Advanced(const Account& a, MonoTime now) const;
  Account& Advance(const UserName& user, MonoTime now);

  UsageRule rule_;
  std::map<UserName, Account> users_;
};

}  // namespace idlepool::core
