#include "serve/recent_latency.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace idlepool::serve {

namespace {

// The nearest-rank percentile of sorted values: the smallest one with at least q of them at or
// below it.
uint32_t Rank(const uint32_t* sorted, uint32_t n, double q) {
  auto rank = static_cast<uint32_t>(std::ceil(q * n));
  return sorted[std::clamp<uint32_t>(rank, 1, n) - 1];
}

}  // namespace

void RecentLatencies::Observe(Time now, Micros took) {
  const int64_t us = std::clamp<int64_t>(took.count(), 0, std::numeric_limits<uint32_t>::max());
  at_us_[next_] = now.time_since_epoch().count();
  took_us_[next_] = static_cast<uint32_t>(us);
  next_ = (next_ + 1) % kCapacity;
  size_ = std::min(size_ + 1, kCapacity);
}

LatencySummary RecentLatencies::Summarize(Time now, Micros window) const {
  const int64_t since = (now - window).time_since_epoch().count();
  std::array<uint32_t, kCapacity> in{};
  uint32_t n = 0;
  for (uint32_t i = 0; i < size_; ++i) {
    if (at_us_[i] > since) in[n++] = took_us_[i];
  }
  LatencySummary s;
  if (n == 0) return s;
  std::sort(in.begin(), in.begin() + n);
  s.count = n;
  s.p50 = Micros{Rank(in.data(), n, 0.50)};
  s.p95 = Micros{Rank(in.data(), n, 0.95)};
  return s;
}

}  // namespace idlepool::serve
