// The recent latencies behind the Services page's time to first token (src/serve/recent_latency.h):
// percentiles by example, the window ending at `now`, the ring's bound, and seeded random
// sequences against a model that keeps every observation. A failure prints its seed.
#include "serve/recent_latency.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace idlepool::serve {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

Time At(milliseconds t) { return Time{t}; }

TEST(RecentLatencies, NothingObservedIsCountZero) {
  RecentLatencies r;
  LatencySummary s = r.Summarize(At(seconds(5)));
  EXPECT_EQ(s.count, 0u);
  EXPECT_EQ(s.p50, Micros{0});
  EXPECT_EQ(s.p95, Micros{0});
}

TEST(RecentLatencies, NearestRankPercentiles) {
  RecentLatencies r;
  // 1..100 ms, observed in a shuffled order: p50 is the 50th smallest, p95 the 95th.
  std::vector<int> ms(100);
  for (int i = 0; i < 100; ++i) ms[i] = i + 1;
  std::shuffle(ms.begin(), ms.end(), std::mt19937(7));
  for (int i = 0; i < 100; ++i) r.Observe(At(milliseconds(1000 + i)), milliseconds(ms[i]));
  LatencySummary s = r.Summarize(At(seconds(2)));
  EXPECT_EQ(s.count, 100u);
  EXPECT_EQ(s.p50, milliseconds(50));
  EXPECT_EQ(s.p95, milliseconds(95));
}

TEST(RecentLatencies, FewObservationsGiveTheLargestAsP95) {
  RecentLatencies r;
  r.Observe(At(seconds(1)), milliseconds(3));
  r.Observe(At(seconds(1)), milliseconds(9));
  r.Observe(At(seconds(1)), milliseconds(4));
  LatencySummary s = r.Summarize(At(seconds(1)));
  EXPECT_EQ(s.count, 3u);
  EXPECT_EQ(s.p50, milliseconds(4));
  EXPECT_EQ(s.p95, milliseconds(9));
}

TEST(RecentLatencies, OnlyTheWindowEndingNowCounts) {
  RecentLatencies r;
  for (int i = 0; i < 10; ++i) r.Observe(At(seconds(0)), seconds(1));        // slow, early
  for (int i = 0; i < 10; ++i) r.Observe(At(seconds(50)), milliseconds(2));  // fast, later
  EXPECT_EQ(r.Summarize(At(seconds(55))).count, 20u);
  EXPECT_EQ(r.Summarize(At(seconds(55))).p95, seconds(1));
  // At 60 s the slow ones are exactly one window old: out. Only the fast ones remain.
  LatencySummary s = r.Summarize(At(seconds(60)));
  EXPECT_EQ(s.count, 10u);
  EXPECT_EQ(s.p50, milliseconds(2));
  EXPECT_EQ(s.p95, milliseconds(2));
  EXPECT_EQ(r.Summarize(At(seconds(111))).count, 0u);               // all older than the window
  EXPECT_EQ(r.Summarize(At(seconds(55)), seconds(10)).count, 10u);  // a window passed in
}

TEST(RecentLatencies, KeepsOnlyTheLastCapacityObservations) {
  RecentLatencies r;
  const uint32_t n = RecentLatencies::kCapacity + 44;
  for (uint32_t i = 0; i < n; ++i) r.Observe(At(seconds(1)), Micros{i});
  LatencySummary s = r.Summarize(At(seconds(1)));
  EXPECT_EQ(s.count, RecentLatencies::kCapacity);
  // The kept ones are 44 .. n-1: the 128th smallest is 44 + 127.
  EXPECT_EQ(s.p50, Micros{44 + 127});
}

TEST(RecentLatencies, OutOfRangeLatenciesAreClamped) {
  RecentLatencies r;
  r.Observe(At(seconds(1)), Micros{-5});
  EXPECT_EQ(r.Summarize(At(seconds(1))).p95, Micros{0});
  r.Observe(At(seconds(1)), std::chrono::hours(100));
  EXPECT_EQ(r.Summarize(At(seconds(1))).p95, Micros{UINT32_MAX});
}

// The model: every observation kept; the last kCapacity of them, those in the window, sorted.
Micros ModelRank(const std::vector<std::pair<Time, Micros>>& all, Time now, double q,
                 uint32_t* count) {
  std::vector<int64_t> in;
  size_t first =
      all.size() > RecentLatencies::kCapacity ? all.size() - RecentLatencies::kCapacity : 0;
  for (size_t i = first; i < all.size(); ++i) {
    if (all[i].first > now - RecentLatencies::kWindow) in.push_back(all[i].second.count());
  }
  *count = static_cast<uint32_t>(in.size());
  if (in.empty()) return Micros{0};
  std::sort(in.begin(), in.end());
  auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(in.size())));
  return Micros{in[std::max<size_t>(rank, 1) - 1]};
}

TEST(RecentLatencies, RandomSequencesMatchTheModel) {
  for (uint32_t seed = 1; seed <= 100; ++seed) {
    SCOPED_TRACE(testing::Message() << "seed " << seed);
    std::mt19937_64 rng(seed);
    RecentLatencies r;
    std::vector<std::pair<Time, Micros>> all;
    Time now = At(seconds(1));
    const int steps = static_cast<int>(rng() % 1000);
    for (int i = 0; i < steps; ++i) {
      now += milliseconds(rng() % 2000);  // 0..2 s apart: the window holds 0..all of them
      Micros took{static_cast<int64_t>(rng() % 5'000'000)};
      r.Observe(now, took);
      all.emplace_back(now, took);
      if (rng() % 7 != 0) continue;
      Time look = now + milliseconds(rng() % 90'000);
      uint32_t count = 0;
      Micros p50 = ModelRank(all, look, 0.50, &count);
      Micros p95 = ModelRank(all, look, 0.95, &count);
      LatencySummary s = r.Summarize(look);
      ASSERT_EQ(s.count, count);
      ASSERT_EQ(s.p50, p50);
      ASSERT_EQ(s.p95, p95);
    }
  }
}

}  // namespace
}  // namespace idlepool::serve
