// Stalled attempts (core/stall.h, "Stalls" in core/scheduler.h): the limit from a job's own
// attempt times, and the core moving an attempt with no report and no checkpoint past it, keeping
// its worker from new work for a while; checkpoints and frozen time are not stalls.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "core/stall.h"
#include "tests/unit/core_fixture.h"

namespace idlepool::core {
namespace {

TEST(AttemptTimes, MedianOfTheLastSample) {
  AttemptTimes t;
  EXPECT_EQ(t.Median(), std::nullopt);
  for (int ms : {300, 100, 200}) t.Add(Millis(ms));
  EXPECT_EQ(t.Median(), Millis(200));
  t.Add(Millis(400));
  EXPECT_EQ(t.Median(), Millis(200));  // the lower of an even count
  for (size_t i = 0; i < kStallSample; ++i) t.Add(Millis(5000));
  EXPECT_EQ(t.Median(), Millis(5000));  // the early ones are forgotten
}

TEST(StallLimit, FactorTimesMedianAtLeastTheFloorPlusInputs) {
  const StallRule rule{.enabled = true};
  EXPECT_EQ(StallLimit(rule, Millis(200), 0), Millis(10000));          // the floor
  EXPECT_EQ(StallLimit(rule, Millis(60000), 0), Millis(600000));       // 10 x the median
  EXPECT_EQ(StallLimit(rule, std::nullopt, 0), Millis(3600000));       // nothing learned yet
  EXPECT_EQ(StallLimit(rule, Millis(200), 5'000'000), Millis(15000));  // 5 MB at 1 MB/s
  EXPECT_EQ(StallMessage(rule, Millis(12345), Millis(10000), Millis(200)),
            "stalled: no report or checkpoint for 12 s (limit 10 s; the job's median attempt "
            "takes 0.2 s)");
  EXPECT_EQ(StallMessage(rule, Millis(3601000), Millis(3600000), std::nullopt),
            "stalled: no report or checkpoint for 3601 s (limit 3600 s; no attempt of the job has "
            "succeeded yet)");
}

// Worker "a" runs what it gets; "b" takes attempts and never reports. FIFO placement (no backups,
// no waiting) so that only the stall rule moves b's attempts.
class StallTest : public CoreTest {
 protected:
  StallTest() {
    s_ = Scheduler(Options{.lease_timeout = Millis(5000),
                           .policy = Policy::Fifo(),
                           .stall = StallRule{.enabled = true}});
  }
  // Attempts assigned in `ds`, by worker.
  static std::map<std::string, std::vector<AttemptId>> Assigned(const std::vector<Decision>& ds) {
    std::map<std::string, std::vector<AttemptId>> out;
    for (const Decision& d : ds) {
      if (auto* a = std::get_if<AssignAttempt>(&d)) out[a->worker].push_back(a->attempt);
    }
    return out;
  }
  // Both workers heartbeat every second from `from` to `to` ms, with a tick after each; returns
  // every decision.
  std::vector<Decision> Live(int64_t from, int64_t to) {
    std::vector<Decision> all;
    for (int64_t ms = from; ms <= to; ms += 1000) {
      Heartbeat("a", 1, ms);
      Heartbeat("b", 2, ms);
      for (Decision& d : TickAt(ms)) all.push_back(std::move(d));
    }
    return all;
  }
  // "a" reports a success for each of `ids` at `ms`; returns what it was assigned next.
  std::vector<AttemptId> Succeed(const std::vector<AttemptId>& ids, int64_t ms) {
    std::vector<AttemptId> next;
    for (AttemptId id : ids) {
      auto assigned = Assigned(Report("a", 1, id, ReportResult::kSucceeded, ms));
      for (AttemptId n : assigned["a"]) next.push_back(n);
    }
    return next;
  }
  // Starts job 1 of 6 tasks with a and b (2 slots each) and lets a run its 4 in 2 rounds of
  // 200 ms: b holds 2 attempts (returned), a is idle, nothing is pending.
  std::vector<AttemptId> StartWithStallingB() {
    Hello("a", 1, 2);
    Hello("b", 2, 2);
    auto first = Assigned(Submit(1, 6));
    EXPECT_EQ(first["b"].size(), 2u);
    std::vector<AttemptId> a_runs = Succeed(first["a"], 200);
    Succeed(a_runs, 400);
    return first["b"];
  }
};

TEST_F(StallTest, AnAttemptQuietPastTheLimitIsMovedAndItsWorkerGetsNoMoreWork) {
  const std::vector<AttemptId> b = StartWithStallingB();
  // The job's median attempt is 200 ms: the limit is the 10 s floor.
  std::vector<Decision> quiet = Live(1000, 10000);
  EXPECT_TRUE(Assigned(quiet).empty());
  for (const Decision& d : quiet) EXPECT_FALSE(std::holds_alternative<AttemptEnded>(d)) << Str(d);
  std::vector<Decision> moved = Live(11000, 11000);
  std::vector<std::string> got = Strs(moved);
  for (AttemptId id : b) {
    EXPECT_NE(std::find(got.begin(), got.end(), "kill #" + std::to_string(id) + " @b s2 stale"),
              got.end())
        << ::testing::PrintToString(got);
  }
  int ended = 0;
  for (const Decision& d : moved) {
    if (auto* e = std::get_if<AttemptEnded>(&d)) {
      ++ended;
      EXPECT_EQ(e->worker, "b");
      EXPECT_EQ(e->outcome, AttemptOutcome::kLost);
      EXPECT_EQ(e->message.rfind("stalled: no report or checkpoint for 11 s (limit 10 s; the job's "
                                 "median attempt takes 0.2 s)",
                                 0),
                0u)
          << e->message;
    }
  }
  EXPECT_EQ(ended, 2);
  EXPECT_THAT(Worker("b").stalled, ::testing::StartsWith("stalled: "));
  EXPECT_EQ(Worker("b").attempts_running, 0u);
  EXPECT_EQ(Worker("a").stalled, "");
  // Their tasks went to a, which finishes them; b, idle and connected, got nothing.
  EXPECT_EQ(Assigned(moved)["a"].size(), 2u);
  EXPECT_EQ(Assigned(moved).count("b"), 0u);
  auto moved_to = Assigned(moved);
  Succeed(moved_to["a"], 11100);
  EXPECT_EQ(JobOf(1).state, JobState::kSucceeded);
  EXPECT_EQ(JobOf(1).counters.lost, 2u);
  EXPECT_EQ(JobOf(1).counters.failures, 0u);
}

TEST_F(StallTest, ACheckpointIsProgressAndFrozenTimeDoesNotCount) {
  const std::vector<AttemptId> b = StartWithStallingB();
  Live(1000, 8000);
  Do(CheckpointSaved{"b", 2, b[0], {}}, 8000);  // b[0] made progress at 8 s
  Do(OwnerStateChanged{"b", 2, false, "suspend", "owner active", {b[1]}}, 8000);  // b[1] frozen
  std::vector<Decision> later = Live(9000, 17000);
  for (const Decision& d : later) EXPECT_FALSE(std::holds_alternative<AttemptEnded>(d)) << Str(d);
  EXPECT_EQ(Worker("b").stalled, "");
  std::vector<std::string> moved = Strs(Live(18000, 19000));  // 10 s after its checkpoint
  EXPECT_THAT(moved, ::testing::Contains("kill #" + std::to_string(b[0]) + " @b s2 stale"));
  EXPECT_THAT(
      moved, ::testing::Not(::testing::Contains("kill #" + std::to_string(b[1]) + " @b s2 stale")));
}

TEST_F(StallTest, TheWorkerGetsWorkAgainAfterTheAvoidPeriod) {
  StartWithStallingB();
  auto moved_to = Assigned(Live(1000, 11000));
  Succeed(moved_to["a"], 11100);  // a runs b's moved tasks
  EXPECT_NE(Worker("b").stalled, "");
  Live(12000, 11000 + kStallAvoid.count() - 1000);
  EXPECT_NE(Worker("b").stalled, "");
  Live(11000 + kStallAvoid.count(), 11000 + kStallAvoid.count() + 1000);
  EXPECT_EQ(Worker("b").stalled, "");
  auto placed = Assigned(Submit(2, 4, 11000 + kStallAvoid.count() + 1500));
  EXPECT_EQ(placed["b"].size(), 2u);
}

TEST_F(StallTest, OffUnlessEnabled) {
  s_ = Scheduler(Options{.lease_timeout = Millis(5000), .policy = Policy::Fifo()});
  StartWithStallingB();
  for (const Decision& d : Live(1000, 30000)) {
    EXPECT_FALSE(std::holds_alternative<AttemptEnded>(d)) << Str(d);
  }
}

}  // namespace
}  // namespace idlepool::core
