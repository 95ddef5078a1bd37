#include "serve/key_limits.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iterator>

namespace idlepool::serve {

void KeyLimits::Refill(State& s, double rate, Time now) {
  if (now > s.at) {
    const double seconds = std::chrono::duration<double>(now - s.at).count();
    s.tokens = std::min(Burst(rate), s.tokens + seconds * rate);
  }
  s.at = std::max(s.at, now);
  s.rate = rate;
}

Admission KeyLimits::Admit(const std::string& key, const KeyLimit& limit, Time now) {
  if (limit.none()) return {};
  if (keys_.size() >= kMaxTracked) Prune(now);
  auto [it, fresh] = keys_.try_emplace(key);
  State& s = it->second;
  if (fresh) s = State{Burst(limit.rate_per_s), now, 0, limit.rate_per_s};
  if (limit.concurrency > 0 && s.in_flight >= limit.concurrency) {
    // When one of them ends is unknown: a second is the smallest Retry-After there is.
    return {false, std::chrono::seconds(1), "concurrency", false};
  }
  if (limit.rate_per_s > 0) {
    Refill(s, limit.rate_per_s, now);
    if (s.tokens < 1) {
      const double wait_s = (1 - s.tokens) / limit.rate_per_s;
      return {false, Micros(static_cast<int64_t>(std::ceil(wait_s * 1e6))), "rate", false};
    }
    s.tokens -= 1;
  } else {
    s.rate = 0;
  }
  ++s.in_flight;
  return {true, Micros(0), "", true};
}

void KeyLimits::Release(const std::string& key) {
  auto it = keys_.find(key);
  if (it != keys_.end() && it->second.in_flight > 0) --it->second.in_flight;
}

uint32_t KeyLimits::in_flight(const std::string& key) const {
  auto it = keys_.find(key);
  return it == keys_.end() ? 0 : it->second.in_flight;
}

void KeyLimits::Prune(Time now) {
  for (auto it = keys_.begin(); it != keys_.end();) {
    State& s = it->second;
    bool idle = s.in_flight == 0;
    if (idle && s.rate > 0) {
      Refill(s, s.rate, now);
      idle = s.tokens >= Burst(s.rate);
    }
    it = idle ? keys_.erase(it) : std::next(it);
  }
}

}  // namespace idlepool::serve
