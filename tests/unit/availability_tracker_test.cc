// The coordinator's availability bookkeeping (coordinator/availability.h), driven with a fake
// clock: plain millisecond values.
#include "coordinator/availability.h"

#include "gtest/gtest.h"

namespace idlepool::coordinator {
namespace {

TEST(AvailabilityTracker, UnknownWorkerHasNoSnapshot) {
  AvailabilityTracker t;
  EXPECT_FALSE(t.Get("w", 0).has_value());
}

TEST(AvailabilityTracker, OpenPeriodCountsTimeButNoEndedPeriod) {
  AvailabilityTracker t;
  EXPECT_TRUE(t.Observe("w", true, 1000));
  EXPECT_FALSE(t.Observe("w", true, 5000));  // no change
  auto s = t.Get("w", 11000);
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->up);
  EXPECT_EQ(s->since_ms, 10000);
  EXPECT_EQ(s->totals.up_ms, 10000);
  EXPECT_EQ(s->totals.down_ms, 0);
  EXPECT_EQ(s->totals.up_periods, 0u);
  EXPECT_DOUBLE_EQ(s->up_fraction(), 1.0);
  EXPECT_DOUBLE_EQ(s->mean_up_s(), 10.0);  // censored: the time so far
}

TEST(AvailabilityTracker, TransitionsEndPeriodsAndSplitTime) {
  AvailabilityTracker t;
  t.Observe("w", true, 0);
  EXPECT_TRUE(t.Observe("w", false, 60000));   // up 60 s, ended
  EXPECT_TRUE(t.Observe("w", true, 80000));    // down 20 s, ended
  EXPECT_TRUE(t.Observe("w", false, 200000));  // up 120 s, ended
  auto s = t.Get("w", 210000);                  // down 10 s so far
  ASSERT_TRUE(s);
  EXPECT_FALSE(s->up);
  EXPECT_EQ(s->totals.up_ms, 180000);
  EXPECT_EQ(s->totals.down_ms, 30000);
  EXPECT_EQ(s->totals.up_periods, 2u);
  EXPECT_EQ(s->totals.down_periods, 1u);
  EXPECT_DOUBLE_EQ(s->mean_up_s(), 90.0);
  EXPECT_DOUBLE_EQ(s->mean_down_s(), 30.0);
  EXPECT_DOUBLE_EQ(s->up_fraction(), 180.0 / 210.0);
  EXPECT_DOUBLE_EQ(s->observed_s(), 210.0);
}

TEST(AvailabilityTracker, WorkersAreKeptApart) {
  AvailabilityTracker t;
  t.Observe("a", true, 0);
  t.Observe("b", false, 0);
  t.Observe("a", false, 100);
  EXPECT_EQ(t.Get("a", 100)->totals.up_periods, 1u);
  EXPECT_EQ(t.Get("b", 100)->totals.down_periods, 0u);
  EXPECT_EQ(t.Get("b", 100)->totals.down_ms, 100);
  EXPECT_EQ(t.Workers(), (std::vector<std::string>{"a", "b"}));
}

TEST(AvailabilityTracker, TimeNeverRunsBackwards) {
  AvailabilityTracker t;
  t.Observe("w", true, 1000);
  t.Observe("w", true, 5000);
  t.Observe("w", false, 3000);  // earlier than seen: counts as 5000
  auto s = t.Get("w", 4000);
  EXPECT_EQ(s->totals.up_ms, 4000);
  EXPECT_EQ(s->totals.down_ms, 0);
  EXPECT_EQ(s->totals.up_periods, 1u);
}

// A coordinator restart: totals come back from the store, the time it was away counts neither
// way, and the period in progress restarts at the first observation.
TEST(AvailabilityTracker, RestartCountsNoTimeWhileAway) {
  AvailabilityTracker before;
  before.Observe("w", true, 0);
  before.Observe("w", false, 10000);
  before.Observe("w", true, 15000);
  AvailabilityTotals saved = before.Get("w", 20000)->totals;  // up 15 s, down 5 s
  EXPECT_EQ(saved.up_ms, 15000);

  // The new process's monotonic clock starts elsewhere; an hour passed meanwhile.
  AvailabilityTracker after;
  after.Restore("w", saved);
  auto restored = after.Get("w", 7);
  ASSERT_TRUE(restored);
  EXPECT_FALSE(restored->observed);
  EXPECT_EQ(restored->totals.up_ms, 15000);
  EXPECT_EQ(restored->totals.down_ms, 5000);
  EXPECT_TRUE(after.Observe("w", true, 100));  // first observation: a new period
  EXPECT_FALSE(after.Observe("w", true, 200));
  auto s = after.Get("w", 2100);
  EXPECT_EQ(s->totals.up_ms, 17000);
  EXPECT_EQ(s->totals.down_ms, 5000);
  EXPECT_EQ(s->totals.up_periods, 1u);  // the period open at the restart never ended
  EXPECT_EQ(s->totals.down_periods, 1u);
  after.Observe("w", false, 3100);
  EXPECT_EQ(after.Get("w", 3100)->totals.up_periods, 2u);
  EXPECT_EQ(after.Get("w", 3100)->totals.up_ms, 18000);
}

TEST(AvailabilityTracker, NothingObservedMeansZeroFraction) {
  AvailabilityTracker t;
  t.Restore("w", {});
  EXPECT_DOUBLE_EQ(t.Get("w", 0)->up_fraction(), 0.0);
  EXPECT_DOUBLE_EQ(t.Get("w", 0)->mean_up_s(), 0.0);
}

}  // namespace
}  // namespace idlepool::coordinator
