// The deterministic simulator (src/sim/simulator.h) and its DST harness (src/sim/dst.h):
// determinism, the lower bound, the work model under preemption, and that the invariant checks
// catch each planted core bug.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <set>
#include <string>

#include "sim/simulator.h"
#include "sim/workload.h"

namespace idlepool::sim {
namespace {

using PlantedBug = core::Options::PlantedBug;
using ::testing::HasSubstr;

SimWorker Always(const std::string& name, double speed = 1, uint32_t slots = 1) {
  SimWorker w;
  w.name = name;
  w.speed = speed;
  w.slots = slots;
  return w;
}

SimJob Tasks(std::vector<double> seconds) {
  SimJob j;
  j.task_seconds = std::move(seconds);
  return j;
}

SimConfig Base() {
  SimConfig c;
  c.latency_s = 0.001;
  c.check_invariants = true;
  c.trace_lines = 50;
  return c;
}

TEST(LowerBound, WorkOverCapacityOfAlwaysUpWorkers) {
  // 10 tasks x 60 s on speeds 1 + 2 (3 slots x speed ... one slot each): 600 / 3 = 200 s.
  std::vector<SimWorker> w = {Always("a", 1), Always("b", 2)};
  std::vector<SimJob> j = {Tasks(std::vector<double>(10, 60))};
  EXPECT_DOUBLE_EQ(MakespanLowerBound(w, j), 200.0);
  // Never below the longest task on the fastest worker.
  j = {Tasks({600, 1})};
  EXPECT_DOUBLE_EQ(MakespanLowerBound(w, j), 300.0);
}

TEST(LowerBound, IntegratesAvailabilityWithWrapAround) {
  SimWorker w;
  w.name = "lane";
  w.always_up = false;
  w.up = {{0, 10}, {20, 30}};  // up 20 s of every 40 s
  w.period_s = 40;
  // 35 s of work: 10 (0-10) + 10 (20-30) + 10 (40-50) + 5 (60-65) -> 65 s.
  EXPECT_DOUBLE_EQ(MakespanLowerBound({w}, {Tasks({5, 10, 10, 10})}), 65.0);
  EXPECT_TRUE(IsUp(w, 45));
  EXPECT_FALSE(IsUp(w, 55));
  w.phase_s = 10;  // reads the lane 10 s later: down at 0, up at 10
  EXPECT_FALSE(IsUp(w, 0));
  EXPECT_TRUE(IsUp(w, 10));
}

TEST(Simulator, SameSeedSameRunDifferentSeedDifferentRun) {
  auto run = [](uint64_t seed) {
    SimConfig c = DstScenario(seed, PlantedBug::kNone);
    auto r = RunSimulation(c);
    EXPECT_TRUE(r.ok());
    return *r;
  };
  const SimResult a = run(7), b = run(7), d = run(8);
  EXPECT_EQ(a.digest, b.digest);
  EXPECT_EQ(a.makespan_s, b.makespan_s);
  EXPECT_EQ(a.attempts, b.attempts);
  EXPECT_EQ(a.trace, b.trace);
  EXPECT_NE(a.digest, d.digest);
  EXPECT_GT(a.faults_injected, 0u);
}

TEST(Simulator, HomogeneousAlwaysUpPoolMeetsTheBound) {
  SimConfig c = Base();
  for (int i = 0; i < 4; ++i) c.workers.push_back(Always("w" + std::to_string(i)));
  c.jobs.push_back(Tasks(std::vector<double>(40, 30)));  // 10 rounds of 30 s
  auto r = RunSimulation(c);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->finished);
  EXPECT_TRUE(r->all_succeeded);
  EXPECT_DOUBLE_EQ(r->lower_bound_s, 300.0);
  EXPECT_NEAR(r->makespan_s, 300.0, 11 * 0.002 + 1e-9);  // + hello, then assign and report per round
  EXPECT_EQ(r->attempts, 40u);
  EXPECT_EQ(r->reassignments, 0u);
  EXPECT_EQ(r->lost_work_s, 0.0);
  EXPECT_THAT(r->violations, ::testing::IsEmpty());
}

TEST(Simulator, SpeedScalesRunningTime) {
  SimConfig c = Base();
  c.workers = {Always("fast", 4)};
  c.jobs = {Tasks({100})};
  auto r = RunSimulation(c);
  ASSERT_TRUE(r.ok());
  EXPECT_NEAR(r->makespan_s, 25.0, 0.01);
}

// One worker, up [0, 30) and [40, ...); one task of 50 s.
SimConfig Vacated(double checkpoint_interval, bool on_vacate) {
  SimConfig c = Base();
  SimWorker w;
  w.name = "laptop";
  w.always_up = false;
  w.up = {{0, 30}, {40, 1e9}};
  c.workers = {w};
  SimJob j = Tasks({50});
  j.max_attempts = 1;
  j.checkpoint_interval_s = checkpoint_interval;
  j.checkpoint_on_vacate = on_vacate;
  c.jobs = {j};
  return c;
}

TEST(Simulator, VacateWithoutCheckpointsLosesAllAndRestarts) {
  auto r = RunSimulation(Vacated(0, false));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->all_succeeded);  // max_attempts 1: the preemption did not count
  EXPECT_EQ(r->preemptions, 1u);
  EXPECT_EQ(r->failures, 0u);
  EXPECT_EQ(r->reassignments, 1u);
  EXPECT_NEAR(r->lost_work_s, 30.0, 0.01);
  EXPECT_NEAR(r->core_lost_work_s, 30.0, 0.01);  // the worker measured it for the core
  EXPECT_NEAR(r->makespan_s, 90.0, 0.1);         // back at 40, then all 50 s again
  EXPECT_THAT(r->violations, ::testing::IsEmpty());
}

TEST(Simulator, PeriodicCheckpointsBoundTheLoss) {
  // Checkpoints at 8, 16, 24 s: the vacate at 30 s loses 6 s; the next attempt resumes at 24.
  auto r = RunSimulation(Vacated(8, false));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->all_succeeded);
  EXPECT_NEAR(r->lost_work_s, 6.0, 0.05);
  EXPECT_NEAR(r->makespan_s, 40.0 + 26.0, 0.1);
}

TEST(Simulator, CheckpointOnVacateLosesNothing) {
  auto r = RunSimulation(Vacated(0, true));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->all_succeeded);
  EXPECT_NEAR(r->lost_work_s, 0.0, 1e-9);
  EXPECT_NEAR(r->makespan_s, 40.0 + 20.0, 0.1);
}

TEST(Simulator, SilentDownIsFoundByTheLeaseAndRequeued) {
  SimConfig c = Vacated(0, false);
  c.hard_down_fraction = 1.0;  // power loss: no goodbye
  c.workers.push_back(Always("desktop"));
  c.jobs[0].task_seconds = {50, 50};
  auto r = RunSimulation(c);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->all_succeeded);
  EXPECT_EQ(r->lost, 1u);         // the laptop's attempt ended kLost by the lease
  EXPECT_EQ(r->preemptions, 0u);
  EXPECT_EQ(r->failures, 0u);
  EXPECT_THAT(r->violations, ::testing::IsEmpty());
}

TEST(Simulator, RefusesConfigsItCannotRun) {
  SimConfig c = Base();
  EXPECT_FALSE(RunSimulation(c).ok());  // no workers
  c.workers = {Always("a")};
  EXPECT_FALSE(RunSimulation(c).ok());  // no jobs
  c.jobs = {Tasks({0})};
  EXPECT_THAT(std::string(RunSimulation(c).status().message()), HasSubstr("task 0"));
  c.jobs = {Tasks({1})};
  c.workers[0].speed = 0;
  EXPECT_THAT(std::string(RunSimulation(c).status().message()), HasSubstr("speed"));
}

TEST(Distribution, ParsesEveryFormAndNamesTheBadPart) {
  std::mt19937_64 rng(1);
  for (const char* ok : {"60", "const:60", "uniform:30:90", "loguniform:0.25:4", "exp:60",
                         "lognormal:60:0.5", "pareto:30:2.5", "tiers:0.5,1,2"}) {
    auto d = ParseDistribution(ok);
    ASSERT_TRUE(d.ok()) << ok << ": " << d.status();
    for (int i = 0; i < 100; ++i) EXPECT_GT(Draw(*d, rng), 0) << ok;
  }
  auto u = ParseDistribution("uniform:30:90");
  for (int i = 0; i < 1000; ++i) {
    const double v = Draw(*u, rng);
    EXPECT_GE(v, 30);
    EXPECT_LE(v, 90);
  }
  EXPECT_DOUBLE_EQ(Mean(*ParseDistribution("loguniform:1:1")), 1.0);
  EXPECT_THAT(std::string(ParseDistribution("gauss:1").status().message()),
              HasSubstr("unknown kind 'gauss'"));
  EXPECT_THAT(std::string(ParseDistribution("uniform:9:1").status().message()),
              HasSubstr("B must not be below A"));
  EXPECT_THAT(std::string(ParseDistribution("exp:-1").status().message()),
              HasSubstr("first parameter"));
  EXPECT_THAT(std::string(ParseDistribution("tiers:1,x").status().message()), HasSubstr("'x'"));
  EXPECT_FALSE(ParseDistribution("nan").ok());
}

TEST(Chunking, GroupsFramesAndAddsStartUpPerTask) {
  EXPECT_EQ(ChunkFrames({1, 2, 3, 4, 5}, 2, 10), (std::vector<double>{13, 17, 15}));
  EXPECT_EQ(ChunkFrames({1, 2}, 5, 0), (std::vector<double>{3}));
}

TEST(Chunking, AdaptiveAimsAtTheTargetButKeepsTheTailShort) {
  // 1,000,000 frames of 4 s, 20 s start-up, 100 slots: the target allows 70 frames a task, the
  // tail bound sqrt(1e6 * 20 / (100 * 4)) = 223: the target wins.
  const std::vector<double> many(1'000'000, 4.0);
  EXPECT_EQ(AdaptiveChunk(many, 300, 20, 100), 70u);
  // 10,000 frames on 1,000 slots: the tail bound sqrt(1e4 * 20 / (1e3 * 4)) = 7.07 wins.
  const std::vector<double> few(10'000, 4.0);
  EXPECT_EQ(AdaptiveChunk(few, 300, 20, 1000), 7u);
  // Never below one frame.
  EXPECT_EQ(AdaptiveChunk(few, 10, 20, 1000), 1u);
}

// ---------------------------------------------------------------------------------------------
// Deterministic simulation testing

// Seeds run per test; CI's `sim.dst` ctest runs 500 more through the CLI.
constexpr uint64_t kSeeds = 100;

TEST(Dst, EveryInvariantHoldsOnTheRealCore) {
  uint64_t faults = 0, restarts = 0;
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    auto r = RunSimulation(DstScenario(seed, PlantedBug::kNone));
    ASSERT_TRUE(r.ok());
    ASSERT_THAT(r->violations, ::testing::IsEmpty()) << "seed " << seed;
    EXPECT_TRUE(r->finished) << "seed " << seed;
    faults += r->faults_injected;
    restarts += r->coordinator_restarts;
  }
  // The scenarios really inject faults, coordinator restarts among them.
  EXPECT_GT(faults, kSeeds * 5);
  EXPECT_GT(restarts, 10u);
}

// The first seed (of at most `limit`) whose run reports a violation containing `what`.
uint64_t FirstCaught(PlantedBug bug, const std::string& what, uint64_t limit) {
  for (uint64_t seed = 1; seed <= limit; ++seed) {
    auto r = RunSimulation(DstScenario(seed, bug));
    if (!r.ok()) return 0;
    for (const std::string& v : r->violations) {
      if (v.find(what) != std::string::npos) {
        // The replay gives the same violation.
        auto again = RunSimulation(DstScenario(seed, bug));
        EXPECT_EQ(again->violations, r->violations);
        EXPECT_FALSE(r->trace.empty());
        return seed;
      }
    }
  }
  return 0;
}

TEST(Dst, CatchesAPlantedFencingBug) {
  EXPECT_NE(FirstCaught(PlantedBug::kNoFencing, "committed 2 times", 50), 0u);
}

TEST(Dst, CatchesAPlantedLostTask) {
  EXPECT_NE(FirstCaught(PlantedBug::kForgetLostTasks, "the task is lost", 50), 0u);
}

TEST(Dst, CatchesAPlantedLeaseThatNeverExpires) {
  EXPECT_NE(FirstCaught(PlantedBug::kNoLeaseExpiry, "ms of silence", 50), 0u);
}

TEST(Dst, CatchesPreemptionsCountedAsFailures) {
  EXPECT_NE(FirstCaught(PlantedBug::kCountPreemptions, "preemptions and losses never count", 50),
            0u);
}

TEST(Dst, CatchesPreemptionsCountedAsWorkersThatDied) {
  EXPECT_NE(FirstCaught(PlantedBug::kPreemptionsAsLosses, "different workers in a row", 50), 0u);
}

TEST(Dst, CatchesRetriesPinnedToTheFailingWorker) {
  EXPECT_NE(FirstCaught(PlantedBug::kPinRetries, "because of broken workers", 50), 0u);
}

TEST(Dst, CatchesFifoAcrossUsersAsStarvation) {
  EXPECT_NE(FirstCaught(PlantedBug::kFifoAcrossUsers, "starvation: user", 500), 0u);
}

TEST(Dst, ScenariosHaveUsersSharesAndQuotas) {
  uint64_t multi = 0, quotas = 0;
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    const SimConfig c = DstScenario(seed, PlantedBug::kNone);
    ASSERT_FALSE(c.users.empty());
    std::set<std::string> users;
    for (const SimJob& j : c.jobs) users.insert(j.user);
    multi += users.size() > 1;
    for (const core::UserSet& u : c.users) quotas += u.quota.max_slots != 0;
  }
  EXPECT_GT(multi, kSeeds / 5) << "two users with jobs in a good part of the scenarios";
  EXPECT_GT(quotas, kSeeds / 5);
}

TEST(Dst, ABrokenMachineNeverFailsAJobThatHasAHealthyWorker) {
  uint64_t broken = 0;
  for (uint64_t seed = 1; seed <= 100; ++seed) {
    const SimConfig c = DstScenario(seed, PlantedBug::kNone);
    if (c.jobs[0].broken_on.empty()) continue;
    ++broken;
    auto r = RunSimulation(c);
    ASSERT_TRUE(r.ok());
    EXPECT_THAT(r->violations, testing::IsEmpty()) << "seed " << seed;
  }
  EXPECT_GT(broken, 30u) << "the fault is drawn in about half the scenarios";
}

TEST(Dst, CatchesAStrandedTaskInTheLivenessPhase) {
  EXPECT_NE(FirstCaught(PlantedBug::kStrandPreempted, "liveness: job", 50), 0u);
}

}  // namespace
}  // namespace idlepool::sim
