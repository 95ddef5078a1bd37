// serve::KeyLimits, the gateway's per-key admission: properties over seeded random request
// streams (never more admitted than the bucket allows, never more at once than the concurrency,
// keys independent) and the exact Retry-After of a refusal.
#include "serve/key_limits.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace idlepool::serve {
namespace {

Time At(double seconds) { return Time{Micros{static_cast<int64_t>(seconds * 1e6)}}; }

TEST(KeyLimits, AKeyWithoutLimitsIsAlwaysAdmittedAndNotTracked) {
  KeyLimits limits;
  for (int i = 0; i < 1000; ++i) {
    Admission a = limits.Admit("free", KeyLimit{}, At(0));
    EXPECT_TRUE(a.admitted);
    EXPECT_FALSE(a.counted);
  }
  EXPECT_EQ(limits.tracked(), 0u);
}

TEST(KeyLimits, ARateAllowsABurstOfOneSecondThenRefusesWithRetryAfter) {
  KeyLimits limits;
  const KeyLimit two{2, 0};
  EXPECT_TRUE(limits.Admit("k", two, At(0)).admitted);
  EXPECT_TRUE(limits.Admit("k", two, At(0)).admitted);
  Admission refused = limits.Admit("k", two, At(0));
  EXPECT_FALSE(refused.admitted);
  EXPECT_STREQ(refused.why, "rate");
  EXPECT_EQ(refused.retry_after, Micros(500'000));  // one request's worth at 2/s
  EXPECT_FALSE(limits.Admit("k", two, At(0.4)).admitted);
  EXPECT_TRUE(limits.Admit("k", two, At(0.5)).admitted);
  // A slow rate still lets one request through at a time.
  const KeyLimit slow{0.1, 0};
  EXPECT_TRUE(limits.Admit("s", slow, At(0)).admitted);
  Admission wait = limits.Admit("s", slow, At(1));
  EXPECT_FALSE(wait.admitted);
  EXPECT_EQ(wait.retry_after, Micros(9'000'000));
}

TEST(KeyLimits, ConcurrencyCountsRequestsUntilReleasedAndSpendsNoRate) {
  KeyLimits limits;
  {
    KeyHold a(&limits, "k"), b(&limits, "k");
    ASSERT_TRUE(limits.Admit("k", KeyLimit{0, 2}, At(0)).counted);
    ASSERT_TRUE(limits.Admit("k", KeyLimit{0, 2}, At(0)).counted);
    Admission third = limits.Admit("k", KeyLimit{0, 2}, At(0));
    EXPECT_FALSE(third.admitted);
    EXPECT_STREQ(third.why, "concurrency");
    EXPECT_EQ(limits.in_flight("k"), 2u);
  }  // both holds released
  EXPECT_EQ(limits.in_flight("k"), 0u);
  EXPECT_TRUE(limits.Admit("k", KeyLimit{0, 2}, At(0)).admitted);
  // Refused for concurrency: the rate's token is not spent.
  KeyLimits l2;
  ASSERT_TRUE(l2.Admit("r", KeyLimit{1, 1}, At(0)).admitted);  // in flight, bucket empty
  EXPECT_STREQ(l2.Admit("r", KeyLimit{1, 1}, At(1)).why, "concurrency");
  l2.Release("r");
  EXPECT_TRUE(l2.Admit("r", KeyLimit{1, 1}, At(1)).admitted);
}

// Over random streams: in any window [t, t + w) a key is admitted at most rate * w + burst
// times; in flight never exceeds its concurrency; a key's refusals never change what another
// key is admitted (the same stream of key B gives the same answers with or without A's flood).
TEST(KeyLimits, PropertiesHoldOverSeededStreams) {
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    std::mt19937_64 rng(seed);
    const double rate = std::uniform_real_distribution<double>(0.5, 20)(rng);
    const uint32_t concurrency = std::uniform_int_distribution<uint32_t>(0, 4)(rng);
    const KeyLimit limit{rate, concurrency};
    KeyLimits with_flood, alone;
    std::vector<double> admitted_at;
    std::deque<double> ends;  // end times of A's requests in flight
    double t = 0;
    for (int i = 0; i < 400; ++i) {
      t += std::exponential_distribution<double>(rate * 1.5)(rng);
      while (!ends.empty() && ends.front() <= t) {
        with_flood.Release("A");
        alone.Release("A");
        ends.pop_front();
      }
      for (int f = 0; f < 3; ++f) (void)with_flood.Admit("flood", KeyLimit{1, 1}, At(t));
      Admission a = with_flood.Admit("A", limit, At(t));
      ASSERT_EQ(a.admitted, alone.Admit("A", limit, At(t)).admitted) << "seed " << seed;
      if (a.admitted) {
        admitted_at.push_back(t);
        const double end = t + std::uniform_real_distribution<double>(0.01, 1)(rng);
        ends.insert(std::upper_bound(ends.begin(), ends.end(), end), end);
        if (concurrency > 0) ASSERT_LE(with_flood.in_flight("A"), concurrency) << "seed " << seed;
      } else {
        EXPECT_GT(a.retry_after.count(), 0) << "seed " << seed;
      }
    }
    const double burst = rate < 1 ? 1 : rate;
    for (size_t i = 0; i < admitted_at.size(); ++i) {
      for (double w : {0.5, 1.0, 5.0}) {
        size_t n = 0;
        for (size_t j = i; j < admitted_at.size() && admitted_at[j] < admitted_at[i] + w; ++j) ++n;
        ASSERT_LE(static_cast<double>(n), rate * w + burst + 1e-9) << "seed " << seed;
      }
    }
  }
}

TEST(KeyLimits, ForgetsOnlyIdleFullKeysWhenFull) {
  KeyLimits limits;
  KeyHold busy(&limits, "busy");
  ASSERT_TRUE(limits.Admit("busy", KeyLimit{0, 1}, At(0)).counted);
  for (size_t i = 0; i < KeyLimits::kMaxTracked; ++i) {
    const std::string key = "k" + std::to_string(i);
    ASSERT_TRUE(limits.Admit(key, KeyLimit{1, 0}, At(0)).counted);
    limits.Release(key);  // its request ended
  }
  EXPECT_EQ(limits.tracked(), KeyLimits::kMaxTracked + 1) << "nothing is idle and full yet";
  // A minute later every bucket is full again: all but the busy key may be forgotten.
  (void)limits.Admit("new", KeyLimit{1, 0}, At(60));
  EXPECT_LE(limits.tracked(), 2u);
  EXPECT_EQ(limits.in_flight("busy"), 1u);
}

}  // namespace
}  // namespace idlepool::serve
