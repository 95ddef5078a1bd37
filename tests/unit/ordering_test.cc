// Unit tests of the ordering of a shared pool (core/ordering.h): decayed usage, the order of a
// placement pass, quotas and fair preemption, each rule by a small exact example. Seeded
// properties over random inputs are in ordering_property_test.cc.
#include "core/ordering.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numbers>
#include <string>
#include <vector>

namespace idlepool::core {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr Millis kHour{3'600'000};
constexpr Millis kDay{86'400'000};

MonoTime At(int64_t ms) { return MonoTime{Millis{ms}}; }

Candidate Job(JobId id, const UserName& user, uint32_t pending, int32_t priority = 0) {
  Candidate c;
  c.job = id;
  c.user = user;
  c.pending = pending;
  c.priority = priority;
  return c;
}

Standing User(const UserName& user, double share = 1, double usage = 0, uint32_t slots = 0) {
  Standing s;
  s.user = user;
  s.share = share;
  s.usage = usage;
  s.slots = slots;
  return s;
}

// Next() then Placed() until the pass ends or `n` tasks are placed: the jobs, in order.
std::vector<JobId> Place(PlacementOrder& order, int n) {
  std::vector<JobId> out;
  while (static_cast<int>(out.size()) < n) {
    std::optional<JobId> j = order.Next();
    if (!j) break;
    out.push_back(*j);
    order.Placed(*j);
  }
  return out;
}

// --- usage ---

TEST(UsageLedger, HoldingNothingHalvesPerHalfLife) {
  UsageLedger ledger(UsageRule{.half_life = kDay});
  ledger.Restore("ann", 1000, 10, At(0));
  EXPECT_DOUBLE_EQ(ledger.At("ann", At(kDay.count())).slot_s, 500);
  EXPECT_DOUBLE_EQ(ledger.At("ann", At(2 * kDay.count())).slot_s, 250);
  EXPECT_DOUBLE_EQ(ledger.At("ann", At(2 * kDay.count())).gpu_s, 2.5);
}

TEST(UsageLedger, AConstantHoldTendsToItsLimit) {
  UsageLedger ledger(UsageRule{.half_life = kHour});
  ledger.Hold("ann", 4, 0, At(0));
  const double limit = 4 * 3600 / std::numbers::ln2;
  EXPECT_NEAR(ledger.At("ann", At(kHour.count())).slot_s, limit / 2, 1e-6);
  EXPECT_NEAR(ledger.At("ann", At(40 * kHour.count())).slot_s, limit, 1e-6);
  // Short holds count their plain slot-seconds: 4 slots for 1 s of a 1 h half-life.
  EXPECT_NEAR(ledger.At("ann", At(1000)).slot_s, 4.0, 1e-3);
}

TEST(UsageLedger, OneStepEqualsAnySplitOfIt) {
  UsageLedger split(UsageRule{.half_life = kHour});
  UsageLedger whole(UsageRule{.half_life = kHour});
  split.Hold("ann", 3, 1, At(0));
  whole.Hold("ann", 3, 1, At(0));
  for (int64_t t = 7; t < 5'000'000; t += 123'457) split.Hold("ann", 0, 0, At(t));
  const double a = split.At("ann", At(5'000'000)).slot_s;
  const double b = whole.At("ann", At(5'000'000)).slot_s;
  EXPECT_NEAR(a, b, 1e-10 * b);
}

TEST(UsageLedger, HoldAndFreeAtOneTimeChangeNothing) {
  UsageLedger ledger;
  ledger.Hold("ann", 2, 1, At(0));
  ledger.Hold("ann", 5, 2, At(60'000));
  ledger.Free("ann", 5, 2, At(60'000));
  UsageLedger plain;
  plain.Hold("ann", 2, 1, At(0));
  const UsageLedger::Reading a = ledger.At("ann", At(120'000));
  const UsageLedger::Reading b = plain.At("ann", At(120'000));
  EXPECT_EQ(a.slots, b.slots);
  EXPECT_EQ(a.gpus, b.gpus);
  EXPECT_NEAR(a.slot_s, b.slot_s, 1e-12 * b.slot_s);
  EXPECT_NEAR(a.gpu_s, b.gpu_s, 1e-12 * b.gpu_s);
}

TEST(UsageLedger, WeightedCountsGpuSecondsByTheirWeight) {
  UsageLedger ledger(UsageRule{.gpu_weight = 8});
  ledger.Restore("ann", 100, 10, At(0));
  EXPECT_DOUBLE_EQ(ledger.Weighted(ledger.At("ann", At(0))), 180);
}

TEST(UsageLedger, BadInputIsTakenAsDocumented) {
  UsageLedger ledger(
      UsageRule{.half_life = Millis{-5}, .gpu_weight = std::numeric_limits<double>::quiet_NaN()});
  EXPECT_EQ(ledger.rule().half_life, Millis{1});
  EXPECT_EQ(ledger.rule().gpu_weight, 1.0);
  ledger.Hold("ann", 1, 0, At(0));
  ledger.Free("ann", 3, 4, At(10));  // more than held: down to 0
  EXPECT_EQ(ledger.At("ann", At(10)).slots, 0u);
  ledger.Restore("bob", std::numeric_limits<double>::infinity(), -1, At(0));
  EXPECT_EQ(ledger.At("bob", At(0)).slot_s, 0);
  EXPECT_EQ(ledger.At("bob", At(0)).gpu_s, 0);
  EXPECT_EQ(ledger.At("nobody", At(0)), UsageLedger::Reading{});
}

TEST(UsageLedger, ANowBeforeTheLastChangeCountsAsNoTime) {
  UsageLedger ledger;
  ledger.Hold("ann", 1, 0, At(10'000));
  ledger.Hold("ann", 1, 0, At(5'000));  // late: as if at 10 s
  EXPECT_EQ(ledger.At("ann", At(10'000)).slot_s, 0);
  EXPECT_NEAR(ledger.At("ann", At(11'000)).slot_s, 2.0, 1e-4);
}

// --- the order of a pass ---

TEST(PlacementOrder, ServicesComeBeforeBatchWhateverTheirUser) {
  Candidate svc = Job(9, "heavy", 2);
  svc.service = true;
  PlacementOrder order(UsageRule{}, {User("heavy", 1, 1e9), User("light")},
                       {Job(1, "light", 2), svc});
  EXPECT_THAT(Place(order, 4), ElementsAre(9, 9, 1, 1));
}

TEST(PlacementOrder, LowestUsageOverShareFirst) {
  // bob used more but has three times the share: 900/3 < 400/1.
  PlacementOrder order(UsageRule{.lookahead = Millis{0}},
                       {User("ann", 1, 400), User("bob", 3, 900)},
                       {Job(1, "ann", 1), Job(2, "bob", 1)});
  EXPECT_THAT(Place(order, 2), ElementsAre(2, 1));
}

TEST(PlacementOrder, EqualUsageDealsSlotsByShares) {
  PlacementOrder order(UsageRule{}, {User("ann", 2), User("bob", 1)},
                       {Job(1, "ann", 10), Job(2, "bob", 10)});
  EXPECT_THAT(Place(order, 9), ElementsAre(1, 2, 1, 1, 2, 1, 1, 2, 1));
}

TEST(PlacementOrder, SlotsHeldBeforeThePassDoNotChargeTheKey) {
  // ann holds 13 of 20 slots, bob 6, usage 2:1 by the shares; one slot frees. Charging held
  // slots would give it back to ann for ever (13·L/2 < 7·L); usage alone gives it to the user
  // behind, here bob.
  PlacementOrder order(UsageRule{}, {User("ann", 2, 2000, 13), User("bob", 1, 999, 6)},
                       {Job(1, "ann", 5), Job(2, "bob", 5)});
  EXPECT_THAT(Place(order, 1), ElementsAre(2));
}

TEST(PlacementOrder, AStarvingUserGoesFirstAfterServices) {
  Standing starved = User("old", 1, 1e6);
  starved.starving = true;
  Candidate svc = Job(3, "new", 1);
  svc.service = true;
  PlacementOrder order(UsageRule{}, {starved, User("new")},
                       {Job(1, "old", 2), Job(2, "new", 2), svc});
  EXPECT_THAT(Place(order, 5), ElementsAre(3, 1, 1, 2, 2));
}

TEST(PlacementOrder, TheLiteralRuleGivesTheLowerUsageEveryFreeSlot) {
  // lookahead 0: usage alone leads; one slot-second less takes the whole pass.
  PlacementOrder order(UsageRule{.lookahead = Millis{0}},
                       {User("ann", 1, 100), User("bob", 1, 101)},
                       {Job(1, "ann", 3), Job(2, "bob", 3)});
  EXPECT_THAT(Place(order, 6), ElementsAre(1, 1, 1, 2, 2, 2));
}

TEST(PlacementOrder, ANewcomerTakesTheNextFreeSlotsWhileALongJobRuns) {
  // The measurement: ann's 60-task job fills a 2-slot worker; bob submits a 2-task job
  // 2 s later. Each of the next two free slots goes to bob (usage 0.5 slot-s against 5.5).
  Ordering ordering;
  ordering.Hold("ann", 1, 0, At(0));
  ordering.Hold("ann", 1, 0, At(0));
  ordering.Free("ann", 1, 0, At(2'500));  // one of ann's tasks ends
  PlacementOrder first = ordering.Begin({Job(1, "ann", 58), Job(2, "bob", 2)}, At(2'500));
  EXPECT_THAT(Place(first, 1), ElementsAre(2));
  ordering.Hold("bob", 1, 0, At(2'500));
  ordering.Free("ann", 1, 0, At(3'000));
  PlacementOrder second = ordering.Begin({Job(1, "ann", 58), Job(2, "bob", 1)}, At(3'000));
  EXPECT_THAT(Place(second, 1), ElementsAre(2));
}

TEST(PlacementOrder, WithinAUserHighestPriorityThenOldest) {
  PlacementOrder order(
      UsageRule{}, {User("ann")},
      {Job(5, "ann", 1, 0), Job(3, "ann", 1, -10), Job(7, "ann", 1, 50), Job(4, "ann", 1, 0)});
  EXPECT_THAT(Place(order, 10), ElementsAre(7, 4, 5, 3));
}

TEST(PlacementOrder, AQuotaHoldsTheJobWhoseNextTaskWouldExceedIt) {
  Standing ann = User("ann", 1, 0, 1);
  ann.quota.max_slots = 4;
  Candidate wide = Job(1, "ann", 5, 10);
  wide.slots = 2;
  PlacementOrder order(UsageRule{}, {ann}, {wide, Job(2, "ann", 5)});
  // 1 held + 2 + 1 = 4: then the 2-slot job is held, the 1-slot one is too.
  EXPECT_THAT(Place(order, 10), ElementsAre(1, 2));
  EXPECT_THAT(order.held(),
              ElementsAre(QuotaHeld{1, QuotaHold::kMaxSlots}, QuotaHeld{2, QuotaHold::kMaxSlots}));
  EXPECT_EQ(order.StandingOf("ann")->slots, 4u);
}

TEST(PlacementOrder, AGpuQuotaHoldsOnlyGpuJobs) {
  Standing ann = User("ann");
  ann.quota.max_gpus = 1;
  Candidate gpu = Job(1, "ann", 3, 5);
  gpu.gpus = 1;
  PlacementOrder order(UsageRule{}, {ann}, {gpu, Job(2, "ann", 2)});
  EXPECT_THAT(Place(order, 10), ElementsAre(1, 2, 2));
  EXPECT_THAT(order.held(), ElementsAre(QuotaHeld{1, QuotaHold::kMaxGpus}));
  EXPECT_EQ(HeldBy(Quota{}, 1000, 1000, 1000, 1000), QuotaHold::kNone);
}

TEST(PlacementOrder, ASkippedJobIsNotHandedOutAgain) {
  PlacementOrder order(UsageRule{}, {}, {Job(1, "ann", 3), Job(2, "ann", 1)});
  EXPECT_EQ(order.Next(), 1u);
  EXPECT_EQ(order.Next(), 1u);  // the same until told
  order.Skip(1);
  EXPECT_EQ(order.Next(), 2u);
  order.Placed(2);
  EXPECT_EQ(order.Next(), std::nullopt);
  EXPECT_THAT(order.held(), IsEmpty());
}

TEST(PlacementOrder, AheadCountsThePendingTasksOfJobsHandedOutBefore) {
  PlacementOrder order(UsageRule{}, {User("ann", 1, 0), User("bob", 1, 50)},
                       {Job(1, "ann", 3), Job(2, "bob", 2), Job(3, "ann", 4)});
  EXPECT_EQ(order.Next(), 1u);
  EXPECT_EQ(order.Ahead(1), 0u);
  order.Skip(1);  // 3 tasks still pending, ahead of everything after it
  EXPECT_EQ(order.Next(), 3u);
  EXPECT_EQ(order.Ahead(3), 3u);
  EXPECT_EQ(order.Ahead(2), 7u);  // not handed out yet: everything handed out is ahead
}

TEST(PlacementOrder, BadInputDoesNotCrashAndDuplicatesCountOnce) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  PlacementOrder order(UsageRule{.half_life = Millis{0}},
                       {User("ann", nan, nan), User("ann", -1), User("bob", 0, 1e300)},
                       {Job(1, "ann", 1), Job(1, "bob", 5), Job(2, "bob", 0), Job(3, "bob", 1)});
  order.Placed(42);
  order.Skip(42);
  EXPECT_EQ(order.Ahead(42), 0u);
  // Job 1 is ann's (the lowest duplicate); the shares count as 1; bob's huge usage goes last.
  EXPECT_THAT(Place(order, 10), ElementsAre(1, 3));
  EXPECT_EQ(order.StandingOf("ann")->share, 1.0);
}

// --- fair preemption ---

Demand D(const UserName& user, uint32_t slots, uint32_t pending, double share = 1) {
  return Demand{user, share, slots, pending};
}

Running R(AttemptId id, const UserName& user, const WorkerName& worker, int64_t started_ms,
          int64_t progress_ms = 0) {
  Running r;
  r.attempt = id;
  r.user = user;
  r.worker = worker;
  r.started = At(started_ms);
  r.progress = At(progress_ms);
  r.fits_starving = true;
  return r;
}

TEST(FairPreemption, FairSharesCountActiveUsersOnly) {
  EXPECT_THAT(FairShares(12, {D("ann", 8, 0, 2), D("bob", 0, 4, 1), D("idle", 0, 0, 5)}),
              ElementsAre(std::pair<const UserName, double>{"ann", 8},
                          std::pair<const UserName, double>{"bob", 4}));
}

TEST(FairPreemption, AUserStarvesOnlyAfterTheRuleWithoutABreak) {
  FairPreemption p(FairPreemptionRule{Millis{5000}});
  const std::vector<Demand> starved = {D("ann", 10, 50), D("bob", 0, 2)};
  EXPECT_EQ(p.Starving(10, starved, At(0)), std::nullopt);
  EXPECT_EQ(p.StarvingSince("bob"), At(0));
  EXPECT_EQ(p.Starving(10, starved, At(4999)), std::nullopt);
  EXPECT_EQ(p.Starving(10, starved, At(5000)), "bob");
  // bob reaches half of his fair share (5): the clock stops, and starts over after.
  EXPECT_EQ(p.Starving(10, {D("ann", 7, 50), D("bob", 3, 2)}, At(6000)), std::nullopt);
  EXPECT_EQ(p.Starving(10, starved, At(7000)), std::nullopt);
  EXPECT_EQ(p.StarvingSince("bob"), At(7000));
}

TEST(FairPreemption, OffNeverStarvesNorChooses) {
  FairPreemption p(FairPreemptionRule{std::nullopt});
  EXPECT_EQ(p.Starving(10, {D("ann", 10, 50), D("bob", 0, 2)}, At(1'000'000)), std::nullopt);
  EXPECT_THAT(p.Choose("bob", 10, {D("ann", 10, 50), D("bob", 0, 2)}, {R(1, "ann", "w1", 0)},
                       At(1'000'000)),
              IsEmpty());
}

TEST(FairPreemption, ChoosesTheLeastLossFirst) {
  FairPreemption p(FairPreemptionRule{Millis{5000}});
  // loss at 100 s: #1 100 s, #2 10 s (checkpointed at 90 s), #3 40 s, #4 10 s (started at 90 s).
  std::vector<Running> running = {R(1, "ann", "w1", 0), R(2, "ann", "w2", 0, 90'000),
                                  R(3, "ann", "w3", 60'000), R(4, "ann", "w4", 90'000)};
  EXPECT_THAT(p.Choose("bob", 8, {D("ann", 8, 10), D("bob", 0, 3)}, running, At(100'000)),
              ElementsAre(4, 2, 3));
}

TEST(FairPreemption, NeverAServiceNorTheStarvingUsersOwnNorAVictimUnderItsShare) {
  FairPreemption p(FairPreemptionRule{Millis{5000}});
  Running replica = R(1, "ann", "w1", 99'000);
  replica.service = true;
  Running useless = R(5, "cid", "w5", 99'000);
  useless.fits_starving = false;
  std::vector<Running> running = {replica, R(2, "bob", "w2", 99'000), R(3, "cid", "w3", 0),
                                  R(4, "cid", "w4", 10'000), useless};
  // fair: 3 each; ann holds 4 (over by 1), cid 5 (over by 2), bob 0 wants 3.
  const std::vector<Demand> users = {D("ann", 4, 9), D("bob", 0, 3), D("cid", 5, 9)};
  EXPECT_THAT(p.Choose("bob", 9, users, running, At(100'000)), ElementsAre(4, 3));
}

TEST(FairPreemption, AtMostOnePerWorkerPerWindowAndNeverTwiceForOneNeed) {
  FairPreemption p(FairPreemptionRule{Millis{5000}});
  std::vector<Running> running = {R(1, "ann", "w1", 0), R(2, "ann", "w1", 1000),
                                  R(3, "ann", "w2", 0)};
  const std::vector<Demand> users = {D("ann", 4, 9), D("bob", 0, 3)};
  EXPECT_THAT(p.Choose("bob", 4, users, running, At(10'000)), ElementsAre(2, 3));
  // The chosen ones still run (not yet vacated): they count toward bob's deficit of 2.
  EXPECT_THAT(p.Choose("bob", 4, users, running, At(20'000)), IsEmpty());
  // #2 vacated, bob got its slot; the window of w1 is over by then, and #3 still counts.
  running = {R(1, "ann", "w1", 0), R(3, "ann", "w2", 0)};
  EXPECT_THAT(p.Choose("bob", 4, {D("ann", 3, 9), D("bob", 1, 2)}, running, At(20'000)), IsEmpty());
  running = {R(1, "ann", "w1", 0)};
  EXPECT_THAT(p.Choose("bob", 4, {D("ann", 2, 9), D("bob", 2, 1)}, running, At(21'000)),
              IsEmpty());  // bob has his fair share
}

TEST(FairPreemption, TheWindowKeepsAWorkerFromGivingUpTwice) {
  FairPreemption p(FairPreemptionRule{Millis{5000}});
  const std::vector<Demand> users = {D("ann", 8, 9), D("bob", 0, 4)};
  EXPECT_THAT(p.Choose("bob", 8, users, {R(1, "ann", "w1", 0)}, At(10'000)), ElementsAre(1));
  EXPECT_THAT(p.Choose("bob", 8, users, {R(2, "ann", "w1", 0)}, At(14'999)), IsEmpty());
  EXPECT_THAT(p.Choose("bob", 8, users, {R(2, "ann", "w1", 0)}, At(15'000)), ElementsAre(2));
  p.ForgetWorker("w1");
  EXPECT_THAT(p.Choose("bob", 8, users, {R(3, "ann", "w1", 0)}, At(15'001)), ElementsAre(3));
}

// --- the Scheduler's member ---

TEST(Ordering, SetRefusesABadShareAndKeepsTheOldOne) {
  Ordering ordering;
  EXPECT_TRUE(ordering.Set(UserSet{"ann", 2.5, Quota{4, 1}}));
  EXPECT_FALSE(ordering.Set(UserSet{"ann", 0, Quota{}}));
  EXPECT_FALSE(ordering.Set(UserSet{"ann", std::numeric_limits<double>::quiet_NaN(), Quota{}}));
  EXPECT_EQ(ordering.SettingsOf("ann").share, 2.5);
  EXPECT_EQ(ordering.SettingsOf("ann").quota, (Quota{4, 1}));
  EXPECT_EQ(ordering.SettingsOf("bob").share, 1.0);
}

TEST(Ordering, StandingsJoinSettingsAndUsage) {
  Ordering ordering(UsageRule{.half_life = kHour, .gpu_weight = 2});
  ASSERT_TRUE(ordering.Set(UserSet{"ann", 2, Quota{8, 0}}));
  ordering.Hold("bob", 2, 1, At(0));
  const std::vector<Standing> all = ordering.Standings(At(1000));
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].user, "ann");
  EXPECT_EQ(all[0].share, 2);
  EXPECT_EQ(all[0].usage, 0);
  EXPECT_EQ(all[1].user, "bob");
  EXPECT_EQ(all[1].slots, 2u);
  EXPECT_NEAR(all[1].usage, 4.0, 1e-3);  // 2 slot-s + 2 x 1 GPU-s
}

}  // namespace
}  // namespace idlepool::core
