#include "core/ordering_usage.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace idlepool::core {

double SaneShare(double share) {
  if (!std::isfinite(share) || share <= 0) return 1.0;
  return std::clamp(share, kMinShare, kMaxShare);
}

UsageRule SaneRule(UsageRule rule) {
  rule.half_life = std::max(rule.half_life, Millis{1});
  if (!std::isfinite(rule.gpu_weight) || rule.gpu_weight < 0) rule.gpu_weight = 1.0;
  rule.lookahead = std::max(rule.lookahead, Millis{0});
  return rule;
}

double Decayed(double usage, double held, Millis dt, Millis half_life) {
  if (dt <= Millis{0}) return usage;
  const double halvings = static_cast<double>(dt.count()) / static_cast<double>(half_life.count());
  const double kept = std::exp2(-halvings);
  // 1 - 2^(-x) as -expm1: exact for short steps, where 1 - kept would lose the digits.
  const double gained = -std::expm1(-halvings * std::numbers::ln2);
  const double limit_s = static_cast<double>(half_life.count()) / 1000.0 / std::numbers::ln2;
  return usage * kept + held * limit_s * gained;
}

namespace {

double SaneUsage(double v) { return std::isfinite(v) && v > 0 ? v : 0.0; }

}  // namespace

UsageLedger::Reading UsageLedger::Advanced(const Account& a, MonoTime now) const {
  Reading r = a.r;
  const Millis dt = now > a.as_of ? now - a.as_of : Millis{0};
  r.slot_s = Decayed(r.slot_s, r.slots, dt, rule_.half_life);
  r.gpu_s = Decayed(r.gpu_s, r.gpus, dt, rule_.half_life);
  return r;
}

UsageLedger::Account& UsageLedger::Advance(const UserName& user, MonoTime now) {
  auto [it, added] = users_.try_emplace(user, Account{Reading{}, now});
  Account& a = it->second;
  if (!added && now > a.as_of) {
    a.r = Advanced(a, now);
    a.as_of = now;
  }
  return a;
}

void UsageLedger::Hold(const UserName& user, uint32_t slots, uint32_t gpus, MonoTime now) {
  Account& a = Advance(user, now);
  a.r.slots += slots;
  a.r.gpus += gpus;
}

void UsageLedger::Free(const UserName& user, uint32_t slots, uint32_t gpus, MonoTime now) {
  Account& a = Advance(user, now);
  a.r.slots -= std::min(slots, a.r.slots);
  a.r.gpus -= std::min(gpus, a.r.gpus);
}

void UsageLedger::Restore(const UserName& user, double slot_s, double gpu_s, MonoTime now) {
  Account& a = Advance(user, now);
  a.r.slot_s = SaneUsage(slot_s);
  a.r.gpu_s = SaneUsage(gpu_s);
}

UsageLedger::Reading UsageLedger::At(const UserName& user, MonoTime now) const {
  auto it = users_.find(user);
  return it == users_.end() ? Reading{} : Advanced(it->second, now);
}

std::vector<UserName> UsageLedger::Users() const {
  std::vector<UserName> out;
  out.reserve(users_.size());
  for (const auto& [name, a] : users_) out.push_back(name);
  return out;
}

}  // namespace idlepool::core
