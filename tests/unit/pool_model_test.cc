// Tests of the pool-prediction model (src/plan/pool_model.h). Each expectation is derived by
// hand in the comment next to it from the model's stated rules (one task's cycle = a round trip
// for assignment and report, half each way; the asset fetch before a worker's first task; the
// copy into the task dir; overhead + task_s; the output upload), so a change to a rule shows up
// as a failure here.
#include "plan/pool_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace idlepool::plan {
namespace {

WorkerModel Worker(std::string name, double task_s, int slots = 1) {
  WorkerModel w;
  w.name = std::move(name);
  w.task_s = task_s;
  w.slots = slots;
  w.rtt_s = 0.002;
  w.down_bytes_per_s = 12.5e6;
  w.up_bytes_per_s = 12.5e6;
  return w;
}

PoolModel Pool(int n, double task_s) {
  PoolModel p;
  for (int i = 0; i < n; ++i) p.workers.push_back(Worker("w" + std::to_string(i), task_s));
  p.coordinator_up_bytes_per_s = 12.5e6;
  p.coordinator_down_bytes_per_s = 12.5e6;
  return p;
}

JobModel Job(int64_t tasks) {
  JobModel j;
  j.tasks = tasks;
  j.per_task_overhead_s = 0.05;
  return j;
}

Prediction MustPredict(const PoolModel& pool, const JobModel& job) {
  auto p = Predict(pool, job);
  EXPECT_TRUE(p.ok()) << p.error;
  return p.value;
}

double TermsSum(const MakespanTerms& t) {
  return t.compute_s + t.coordinator_uplink_s + t.coordinator_downlink_s + t.worker_links_s +
         t.churn_s + t.tail_s;
}

// ---- Compute and the tail -------------------------------------------------------------------

TEST(PoolModel, EqualTasksOnEqualWorkersDivideByFour) {
  // 16 tasks of 10 s on 4 one-slot workers, no bytes, RTT 2 ms, overhead 0.05 s.
  // Cycle = 0.001 (assignment) + 10.05 + 0.001 (report) = 10.052 s; 4 rounds = 40.208 s.
  // Single: 16 x 10.05 = 160.8 s. Ideal speedup 4; compute term = 16 / (4 / 10.05) = 40.2 s;
  // the 8 ms of round trips are the worker links' term.
  Prediction p = MustPredict(Pool(4, 10), Job(16));
  EXPECT_NEAR(p.pool.makespan_s, 40.208, 1e-9);
  EXPECT_NEAR(p.single_makespan_s, 160.8, 1e-9);
  EXPECT_EQ(p.single_worker, "w0");
  EXPECT_NEAR(p.pool.speedup, 160.8 / 40.208, 1e-9);
  EXPECT_NEAR(p.pool.ideal_speedup, 4, 1e-12);
  EXPECT_NEAR(p.pool.efficiency, 160.8 / 40.208 / 4, 1e-9);
  EXPECT_NEAR(p.pool.terms.compute_s, 40.2, 1e-9);
  EXPECT_NEAR(p.pool.terms.worker_links_s, 0.008, 1e-9);
  EXPECT_NEAR(p.pool.terms.tail_s, 0, 1e-9);
  EXPECT_EQ(p.pool.bottleneck, Bottleneck::kCompute);
  EXPECT_EQ(BottleneckName(p.pool.bottleneck), "compute");
  for (const auto& w : p.pool.workers) EXPECT_EQ(w.tasks, 4) << w.name;
  EXPECT_EQ(p.verdict, Verdict::kPool);
  EXPECT_EQ(VerdictName(p.verdict), "pool");
  EXPECT_EQ(p.pool.lost_work_s, 0);
  EXPECT_EQ(p.pool.preemptions, 0);
  // Every rate and RTT was given, the coordinator's too: nothing assumed.
  EXPECT_TRUE(p.assumed.empty());
}

TEST(PoolModel, TenTasksOnEightWorkersTakeTwoRounds) {
  // 10 tasks of 10 s on 8 workers: 2 rounds, 2 x 10.052 = 20.104 s, though the fluid bound is
  // 10 / (8 / 10.05) = 12.5625 s: the tail holds 20.104 - 12.5625 - 0.004 (two round trips of
  // the links' term) = 7.5375 s.
  Prediction p = MustPredict(Pool(8, 10), Job(10));
  EXPECT_NEAR(p.pool.makespan_s, 20.104, 1e-9);
  EXPECT_NEAR(p.pool.terms.compute_s, 12.5625, 1e-9);
  EXPECT_NEAR(p.pool.terms.tail_s, 7.5375, 1e-9);
  EXPECT_NEAR(TermsSum(p.pool.terms), p.pool.makespan_s, 1e-9);
  int64_t tasks = 0;
  for (const auto& w : p.pool.workers) tasks += w.tasks;
  EXPECT_EQ(tasks, 10);
}

TEST(PoolModel, TailIsWhatWholeTasksAddToTheFluidBound) {
  // 9 tasks of 10 s on 8 workers: 2 rounds (20.104 s); fluid bound 9 x 10.05 / 8 = 11.30625 s;
  // links 2 x 0.002 = 0.004 s; tail 20.104 - 11.30625 - 0.004 = 8.79375 s. Compute is still the
  // larger term (56%).
  Prediction p = MustPredict(Pool(8, 10), Job(9));
  EXPECT_NEAR(p.pool.terms.tail_s, 8.79375, 1e-9);
  EXPECT_EQ(p.pool.bottleneck, Bottleneck::kCompute);
  EXPECT_NEAR(p.pool.bottleneck_fraction, 11.30625 / 20.104, 1e-9);
}

TEST(PoolModel, SlowWorkerLeftIdleInTheTail) {
  // fast: 1 s tasks (cycle 0.002 + 1.05 = 1.052 s), slow: 10 s tasks (cycle 10.052 s), 12 tasks.
  // Both start one at t = 0. At 10.052 s, when slow reports, fast has finished 9 and runs its
  // 10th (ends at 10.52 s); 1 task is pending. The tail rule: fast (9.6x faster) finishes it by
  // 11.572 s, before slow would (20.104 s), so slow stays idle. Makespan 11 x 1.052 = 11.572 s;
  // slow 1 task, fast 11. (Without the rule slow would take it: 20.104 s.)
  PoolModel pool;
  pool.workers = {Worker("fast", 1), Worker("slow", 10)};
  Prediction p = MustPredict(pool, Job(12));
  EXPECT_NEAR(p.pool.makespan_s, 11 * 1.052, 1e-9);
  EXPECT_EQ(p.pool.workers[0].tasks, 11);
  EXPECT_EQ(p.pool.workers[1].tasks, 1);
  // Single: fast alone, 12 x 1.05 = 12.6 s.
  EXPECT_EQ(p.single_worker, "fast");
  EXPECT_NEAR(p.single_makespan_s, 12.6, 1e-9);
}

// ---- Links ----------------------------------------------------------------------------------

TEST(PoolModel, OutputsThroughASlowCoordinatorDownlinkBoundTheJob) {
  // 20 tasks of 1 s, 10 MB of outputs each, 4 workers on 12.5 MB/s links, the coordinator's
  // downlink 1 MB/s: 200 MB must cross it, >= 200 s, against 20 x 1.05 / 4 = 5.25 s of compute.
  // The 4 workers run in lockstep: 0.001 + 1.05 + 0.004 (upload round trips) + 4 x 10 MB at
  // 1 MB/s shared (40 s) + 0.001 = 41.056 s per round, 5 rounds = 205.28 s. The link idles while
  // they compute: a slot is held until its upload ends.
  PoolModel pool = Pool(4, 1);
  pool.coordinator_down_bytes_per_s = 1e6;
  JobModel job = Job(20);
  job.output_bytes_per_task = 10e6;
  Prediction p = MustPredict(pool, job);
  EXPECT_NEAR(p.pool.makespan_s, 205.28, 1e-6);
  EXPECT_EQ(p.pool.bottleneck, Bottleneck::kCoordinatorDownlink);
  EXPECT_GT(p.pool.bottleneck_fraction, 0.9);
  EXPECT_NEAR(TermsSum(p.pool.terms), p.pool.makespan_s, 1e-6);
  // Single machine: 21 s, no network.
  EXPECT_NEAR(p.single_makespan_s, 21, 1e-9);
  EXPECT_EQ(p.verdict, Verdict::kSingleMachine);
  // At 1 GbE the 200 MB take 1.6 s: 5 rounds of 1.05 s + 10 MB / 31.25 MB/s (4 uploads share
  // 125 MB/s) + round trips, about 7 s, and the pool wins.
  EXPECT_LT(p.gigabit_links.makespan_s, 8);
  EXPECT_GT(p.gigabit_links.speedup, 2.5);
}

TEST(PoolModel, SharedAssetWithAndWithoutPeers) {
  // 100 MB asset, 8 workers on 10 Mbit/s (1.25 MB/s) links, the coordinator's as well; 8 tasks
  // of 1 s, RTT 2 ms, copy 100 MB at 1 GB/s = 0.1 s.
  // Centralized: 8 copies share the coordinator's uplink: 800 MB / 1.25 MB/s = 640 s. Each
  // worker starts fetching at 0.001 (assignment) + 3 x 0.002 (fetch round trips), so makespan =
  // 0.007 + 640 + 0.1 + 1.05 + 0.001 = 641.158 s.
  // Peer-to-peer (Kumar & Ross): max(S/u_c, S/d, nS/(u_c + 8u)) = max(80, 80, 71.1) = 80 s,
  // / 0.8 swarm efficiency = 100 s: makespan 101.158 s.
  PoolModel pool = Pool(8, 1);
  for (auto& w : pool.workers) {
    w.down_bytes_per_s = 1.25e6;
    w.up_bytes_per_s = 1.25e6;
  }
  pool.coordinator_up_bytes_per_s = 1.25e6;
  pool.coordinator_down_bytes_per_s = 1.25e6;
  JobModel job = Job(8);
  job.shared_asset_bytes = 100e6;

  pool.peer_to_peer = false;
  Prediction central = MustPredict(pool, job);
  EXPECT_NEAR(central.pool.makespan_s, 641.158, 1e-6);
  // Removing the coordinator's uplink leaves each worker its own 80 s: 560 s are its term.
  EXPECT_NEAR(central.pool.terms.coordinator_uplink_s, 560, 1e-6);
  EXPECT_EQ(central.pool.bottleneck, Bottleneck::kCoordinatorUplink);
  for (const auto& w : central.pool.workers) EXPECT_NEAR(w.assets_ready_s, 640.007, 1e-6);

  pool.peer_to_peer = true;
  Prediction p2p = MustPredict(pool, job);
  EXPECT_NEAR(p2p.pool.makespan_s, 101.158, 1e-6);
  // Either the coordinator's uplink (S/u_c) or each worker's downlink (S/d) alone gives 100 s;
  // removed in order, the second removal (worker links) is charged the 100 s.
  EXPECT_NEAR(p2p.pool.terms.worker_links_s, 100 + 0.008, 1e-6);

  // Single: 8 x 1.15 = 9.2 s: one machine wins either way.
  EXPECT_NEAR(p2p.single_makespan_s, 9.2, 1e-9);
  EXPECT_EQ(p2p.verdict, Verdict::kSingleMachine);
  EXPECT_EQ(central.verdict, Verdict::kSingleMachine);
  // Assets cached everywhere: one round, 1.151 + 0.1 copy... = 0.001 + 0.1 + 1.05 + 0.001.
  EXPECT_NEAR(p2p.assets_cached.makespan_s, 1.152, 1e-9);
}

TEST(PoolModel, SeedsAndTheCoordinatorFeedALateSwarm) {
  // Two workers, one holding the 100 MB asset: the other fetches alone with one seed:
  // max(S / (u_c + u_seed), S / d) = max(100e6 / 25e6, 100e6 / 12.5e6) = 8 s, / 0.8 = 10 s.
  PoolModel pool = Pool(2, 1);
  pool.workers[0].holds_assets = true;
  JobModel job = Job(2);
  job.shared_asset_bytes = 100e6;
  Prediction p = MustPredict(pool, job);
  EXPECT_EQ(p.pool.workers[0].assets_ready_s, 0);
  EXPECT_NEAR(p.pool.workers[1].assets_ready_s, 0.001 + 0.006 + 10, 1e-9);
}

TEST(PoolModel, SlowLinkWorkerLeftOutOfTheSubset) {
  // 4 fast workers (12.5 MB/s up) and one on 1.25 MB/s, same CPU; 8 tasks of 10 s, 50 MB of
  // outputs each, coordinator downlink 100 MB/s (the 5 concurrent uploads, 51.25 MB/s, fit).
  // Fast cycle: 0.001 + 10.05 + 0.004 (upload round trips) + 50/12.5 + 0.001 = 14.056 s; slow:
  // 0.001 + 10.05 + 0.004 + 40 + 0.001 = 50.056 s. All 5 start at t = 0; the fast ones run the
  // other 3 by 28.112 s; the slow worker's task ends at 50.056 s, the makespan. Without it:
  // 2 rounds of 14.056 = 28.112 s, 44% better. Single: 8 x 10.05 = 80.4 s.
  PoolModel pool = Pool(4, 10);
  WorkerModel slow = Worker("slow", 10);
  slow.up_bytes_per_s = 1.25e6;
  pool.workers.push_back(slow);
  pool.coordinator_down_bytes_per_s = 100e6;
  JobModel job = Job(8);
  job.output_bytes_per_task = 50e6;
  Prediction p = MustPredict(pool, job);
  EXPECT_NEAR(p.pool.makespan_s, 0.001 + 10.05 + 0.004 + 40 + 0.001, 1e-6);
  EXPECT_EQ(p.verdict, Verdict::kSubset);
  EXPECT_EQ(VerdictName(p.verdict), "pool with only these workers");
  EXPECT_EQ(p.subset, (std::vector<std::string>{"w0", "w1", "w2", "w3"}));
  EXPECT_NEAR(p.subset_makespan_s, 2 * (0.002 + 10.05 + 0.004 + 4), 1e-6);
  EXPECT_NEAR(p.subset_only.makespan_s, p.subset_makespan_s, 1e-12);
  EXPECT_NEAR(p.subset_only.speedup, p.single_makespan_s / p.subset_makespan_s, 1e-12);
}

TEST(PoolModel, UnknownLinksTakeDocumentedDefaultsAndSayWhich) {
  // Worker 1's link is unmeasured: 100 Mbit/s and 1 ms; the coordinator's rates default to the
  // largest worker rates. All listed in `assumed`.
  PoolModel pool = Pool(2, 1);
  pool.workers[1].rtt_s = 0;
  pool.workers[1].down_bytes_per_s = 0;
  pool.workers[1].up_bytes_per_s = 0;
  pool.coordinator_up_bytes_per_s = 0;
  pool.coordinator_down_bytes_per_s = 0;
  Prediction p = MustPredict(pool, Job(4));
  EXPECT_EQ(p.assumed,
            (std::vector<std::string>{
                "workers[1].rtt_s", "workers[1].down_bytes_per_s", "workers[1].up_bytes_per_s",
                "pool.coordinator_up_bytes_per_s", "pool.coordinator_down_bytes_per_s"}));
  // Worker 1's cycle: 0.001 + 1.05 = 1.051 s; worker 0's 1.052 s; 2 rounds each: 2.104 s.
  EXPECT_NEAR(p.pool.makespan_s, 2.104, 1e-9);
}

// ---- Churn ----------------------------------------------------------------------------------

TEST(PoolModel, ExpectedChurnCostFollowsTheRestartFormula) {
  // U (e^{t/U} - 1): t = 10, U = 10: 10 (e - 1) = 17.1828 s, e - 1 = 1.718 preemptions.
  ChurnCost c = ExpectedChurnCost(10, 10, 0);
  EXPECT_NEAR(c.up_seconds, 10 * (std::exp(1.0) - 1), 1e-9);
  EXPECT_NEAR(c.preemptions, std::exp(1.0) - 1, 1e-12);
  // Checkpoints every 4 s: 2 segments of 4 and one of 2.
  c = ExpectedChurnCost(10, 10, 4);
  EXPECT_NEAR(c.up_seconds, 2 * 10 * std::expm1(0.4) + 10 * std::expm1(0.2), 1e-9);
  // Never preempted: exactly t.
  c = ExpectedChurnCost(10, kNeverEnds, 0);
  EXPECT_EQ(c.up_seconds, 10);
  EXPECT_EQ(c.preemptions, 0);
  // A checkpoint interval at least the task is no checkpoint.
  EXPECT_EQ(ExpectedChurnCost(10, 10, 10).up_seconds, ExpectedChurnCost(10, 10, 0).up_seconds);
}

TEST(PoolModel, ShortUpPeriodsMakeTheSingleMachineWin) {
  // 4 workers up for 10 s on average, tasks of 100 s without checkpoints: each task needs
  // 10 (e^{100.05/10} - 1) = about 2.2e5 s of up time; the pool's 4 tasks take that long, the
  // user's own machine (no churn) 4 x 100.05 = 400.2 s.
  PoolModel pool = Pool(4, 100);
  for (auto& w : pool.workers) w.mean_up_s = 10;
  Prediction p = MustPredict(pool, Job(4));
  const double up = 10 * std::expm1(100.05 / 10);
  EXPECT_NEAR(p.pool.makespan_s, up + 0.002, 1e-6 * up);
  EXPECT_NEAR(p.pool.lost_work_s, 4 * (up - 100.05), 1e-6 * up);
  EXPECT_NEAR(p.pool.preemptions, 4 * std::expm1(100.05 / 10), 1e-6);
  EXPECT_EQ(p.pool.bottleneck, Bottleneck::kChurn);
  EXPECT_EQ(p.verdict, Verdict::kSingleMachine);
  // Without churn, one round: 100.052 s, speedup 400.2 / 100.052.
  EXPECT_NEAR(p.no_churn.makespan_s, 100.052, 1e-9);
  EXPECT_NEAR(p.no_churn.speedup, 400.2 / 100.052, 1e-9);
}

TEST(PoolModel, UpFractionStretchesTimeAndComesFromPeriodsWhenUnset) {
  // Up half the time, never preempted mid-task: each task takes 2 x 10.05 s of wall time.
  PoolModel pool = Pool(1, 10);
  pool.workers[0].up_fraction = 0.5;
  Prediction p = MustPredict(pool, Job(2));
  EXPECT_NEAR(p.pool.makespan_s, 2 * (0.002 + 20.1), 1e-9);
  // Unset: U / (U + D) = 3600 / (3600 + 3600) = 0.5, and preemptions at U = 3600 s.
  pool.workers[0].up_fraction.reset();
  pool.workers[0].mean_up_s = 3600;
  pool.workers[0].mean_down_s = 3600;
  p = MustPredict(pool, Job(2));
  EXPECT_NEAR(p.pool.makespan_s, 2 * (0.002 + 2 * 3600 * std::expm1(10.05 / 3600)), 1e-9);
}

// ---- Errors ---------------------------------------------------------------------------------

TEST(PoolModel, InvalidInputsNameTheField) {
  auto error = [](PoolModel pool, JobModel job) { return Predict(pool, job).error; };
  const PoolModel pool = Pool(2, 1);
  const JobModel job = Job(4);
  EXPECT_EQ(error(pool, Job(0)), "job.tasks must be >= 1");
  EXPECT_EQ(error(PoolModel{}, job), "pool.workers must not be empty");
  JobModel j = job;
  j.shared_asset_bytes = -1;
  EXPECT_EQ(error(pool, j), "job.shared_asset_bytes must be finite and >= 0");
  j = job;
  j.output_bytes_per_task = std::nan("");
  EXPECT_EQ(error(pool, j), "job.output_bytes_per_task must be finite and >= 0");
  j = job;
  j.stage_copy_bytes_per_s = 0;
  EXPECT_NE(error(pool, j).find("job.stage_copy_bytes_per_s"), std::string::npos);
  PoolModel p = pool;
  p.workers[1].task_s = std::nan("");
  EXPECT_EQ(error(p, job), "workers[1].task_s must be finite and > 0");
  p = pool;
  p.workers[0].slots = 0;
  EXPECT_EQ(error(p, job), "workers[0].slots must be >= 1");
  p = pool;
  p.workers[1].up_fraction = 1.5;
  EXPECT_EQ(error(p, job), "workers[1].up_fraction must be in (0, 1]");
  p = pool;
  p.workers[1].mean_up_s = 0;
  EXPECT_NE(error(p, job).find("workers[1].mean_up_s"), std::string::npos);
  p = pool;
  p.workers[1].name = "w0";
  EXPECT_EQ(error(p, job), "workers[1].name 'w0' is not unique");
  p = pool;
  p.workers[0].down_bytes_per_s = -5;
  EXPECT_EQ(error(p, job), "workers[0].down_bytes_per_s must be finite and >= 0");
  p = pool;
  p.coordinator_up_bytes_per_s = std::numeric_limits<double>::infinity();
  EXPECT_EQ(error(p, job), "pool.coordinator_up_bytes_per_s must be finite and >= 0");
  p = pool;
  p.protocol.swarm_efficiency = 0;
  EXPECT_EQ(error(p, job), "pool.protocol.swarm_efficiency must be in (0, 1]");
  EXPECT_TRUE(Predict(pool, job).ok());
}

// ---- Properties and scale -------------------------------------------------------------------

// Deterministic pseudo-random numbers in [0, 1) (a 64-bit LCG, Knuth's MMIX constants).
struct Lcg {
  uint64_t s;
  double Next() {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(s >> 11) / 9007199254740992.0;
  }
};

TEST(PoolModel, MakespanNeverBelowTheWorkBoundsAndTermsAddUp) {
  // For any pool: makespan >= the fluid bound tasks / sum(slots / (overhead + copy + task_s))
  // and >= the shortest single task (overhead + copy + task_s on the fastest worker); the
  // terms add up to the makespan; tasks sum to the job's.
  Lcg rng{42};
  for (int round = 0; round < 200; ++round) {
    PoolModel pool;
    const int n = 1 + static_cast<int>(rng.Next() * 8);
    for (int i = 0; i < n; ++i) {
      WorkerModel w = Worker("w" + std::to_string(i), 0.1 + rng.Next() * 20,
                             1 + static_cast<int>(rng.Next() * 4));
      w.rtt_s = rng.Next() * 0.05;
      w.down_bytes_per_s = 1e6 + rng.Next() * 1e8;
      w.up_bytes_per_s = 1e6 + rng.Next() * 1e8;
      if (rng.Next() < 0.3) w.mean_up_s = 50 + rng.Next() * 1000;
      if (rng.Next() < 0.3) w.up_fraction = 0.3 + 0.7 * rng.Next();
      w.holds_assets = rng.Next() < 0.2;
      pool.workers.push_back(w);
    }
    pool.peer_to_peer = rng.Next() < 0.5;
    pool.coordinator_up_bytes_per_s = rng.Next() < 0.5 ? 0 : 1e6 + rng.Next() * 1e8;
    JobModel job = Job(1 + static_cast<int64_t>(rng.Next() * 100));
    job.shared_asset_bytes = rng.Next() < 0.5 ? 0 : rng.Next() * 1e9;
    job.output_bytes_per_task = rng.Next() < 0.5 ? 0 : rng.Next() * 1e7;
    job.checkpoint_interval_s = rng.Next() < 0.5 ? 0 : 1 + rng.Next() * 10;
    Prediction p = MustPredict(pool, job);
    const double copy = job.shared_asset_bytes / job.stage_copy_bytes_per_s;
    double rate = 0;
    double shortest = std::numeric_limits<double>::infinity();
    for (const auto& w : pool.workers) {
      rate += w.slots / (job.per_task_overhead_s + copy + w.task_s);
      shortest = std::min(shortest, job.per_task_overhead_s + copy + w.task_s);
    }
    SCOPED_TRACE("round " + std::to_string(round));
    EXPECT_GE(p.pool.makespan_s, job.tasks / rate * (1 - 1e-12));
    EXPECT_GE(p.pool.makespan_s, shortest);
    EXPECT_NEAR(TermsSum(p.pool.terms), p.pool.makespan_s, 1e-6 * p.pool.makespan_s);
    EXPECT_LE(p.subset_makespan_s, p.pool.makespan_s);
    int64_t tasks = 0;
    for (const auto& w : p.pool.workers) tasks += w.tasks;
    EXPECT_EQ(tasks, job.tasks);
    EXPECT_GT(p.pool.efficiency, 0);
  }
}

TEST(PoolModel, HundredThousandTasksOnHundredWorkers) {
  // Scale: 100,000 tasks x 100 workers with outputs, an asset and churn (no timing asserted).
  // 100 workers x 2 slots at 10 s: the fluid bound 100000 x 10.05 / 200 = 5025 s.
  PoolModel pool;
  for (int i = 0; i < 100; ++i) {
    WorkerModel w = Worker("w" + std::to_string(i), 10, 2);
    w.mean_up_s = 20000;
    pool.workers.push_back(w);
  }
  pool.coordinator_down_bytes_per_s = 125e6;
  JobModel job = Job(100000);
  job.output_bytes_per_task = 1e5;
  job.shared_asset_bytes = 1e8;
  Prediction p = MustPredict(pool, job);
  EXPECT_GT(p.pool.makespan_s, 5025);
  EXPECT_LT(p.pool.makespan_s, 5025 * 1.2);
  int64_t tasks = 0;
  for (const auto& w : p.pool.workers) tasks += w.tasks;
  EXPECT_EQ(tasks, 100000);
}

// Regression: tiny outputs on fast links (2 bytes at ~1 GB/s, as a loopback pool measures) made
// a transfer's end time round onto the current time at large simulated times, so the shared
// link never saw it end and Predict spun forever (found by planning a 2-worker pool with
// --task-seconds 2). Every combination here must return, with the compute-bound answer.
TEST(PoolModel, TinyTransfersOnFastLinksAlwaysEnd) {
  for (double task_s : {1.0, 1.5, 2.0, 3.0, 10.0, 1000.0}) {
    for (double out : {1.0, 2.0, 3.0, 10.0, 20002.0}) {
      PoolModel pool;
      for (int i = 0; i < 2; ++i) {
        WorkerModel w = Worker("w" + std::to_string(i), task_s);
        w.rtt_s = 0.00015;
        w.down_bytes_per_s = 9.1e8 + i * 1.7e7;
        w.up_bytes_per_s = 8.7e8 + i * 2.3e7;
        pool.workers.push_back(w);
      }
      JobModel job = Job(8);
      job.output_bytes_per_task = out;
      job.per_task_overhead_s = 0.0008;
      Prediction p = MustPredict(pool, job);
      // 8 tasks on 2 slots: 4 rounds of the task, plus well under a second of overheads.
      EXPECT_GE(p.pool.makespan_s, 4 * task_s) << task_s << " s, " << out << " B";
      EXPECT_LT(p.pool.makespan_s, 4 * task_s + 1) << task_s << " s, " << out << " B";
    }
  }
}

}  // namespace
}  // namespace idlepool::plan
