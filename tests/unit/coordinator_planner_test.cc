// coordinator/planner.h: slots, the best-of-recent link filter, and Predict's use of the facts.
#include <gtest/gtest.h>

#include <cmath>

#include "coordinator/planner.h"

namespace idlepool::coordinator {
namespace {

TEST(SlotsFor, TheScarcestResourceDecides) {
  EXPECT_EQ(SlotsFor({8, 0, 0}, {1, 0, 0}), 8u);
  EXPECT_EQ(SlotsFor({8, 0, 0}, {3, 0, 0}), 2u);
  EXPECT_EQ(SlotsFor({8, 2, 0}, {1, 1, 0}), 2u);        // two GPUs, one per task
  EXPECT_EQ(SlotsFor({8, 0, 0}, {1, 1, 0}), 0u);        // needs a GPU it lacks
  EXPECT_EQ(SlotsFor({8, 0, 4096}, {1, 0, 1500}), 2u);  // memory: 4096 / 1500
  EXPECT_EQ(SlotsFor({8, 0, 0}, {1, 0, 1500}), 8u);     // memory not stated by the worker
  EXPECT_EQ(SlotsFor({2, 0, 0}, {4, 0, 0}), 0u);
}

TEST(BestOfRecentProbes, ContentionNeverWinsButOldProbesAge) {
  std::vector<LinkProbe> p = {{1000, 200, 12'000'000, 11'000'000}};
  // A contended probe (queueing: longer RTT, lower rate) does not lower the estimate.
  p.push_back({2000, 25'000, 300'000, 500'000});
  LinkProbe best = BestOfRecentProbes(p, 2000);
  EXPECT_EQ(best.rtt_us, 200);
  EXPECT_EQ(best.down_bytes_per_s, 12'000'000);
  EXPECT_EQ(best.up_bytes_per_s, 11'000'000);
  EXPECT_EQ(best.wall_ms, 2000);  // stamped with the newest probe
  // Three newer probes push the fast one out of the window: a link that really got slower shows.
  for (int64_t t : {3000, 4000, 5000}) p.push_back({t, 30'000, 400'000, 400'000});
  best = BestOfRecentProbes(p, 5000);
  EXPECT_EQ(p.size(), kLinkWindowProbes);
  EXPECT_EQ(best.rtt_us, 30'000);
  EXPECT_EQ(best.down_bytes_per_s, 400'000);
  // So does an hour: only the newest probe is left.
  p.push_back({5000 + kLinkWindowMs + 1, 40'000, 100'000, 100'000});
  best = BestOfRecentProbes(p, 5000 + kLinkWindowMs + 1);
  EXPECT_EQ(p.size(), 1u);
  EXPECT_EQ(best.down_bytes_per_s, 100'000);
  std::vector<LinkProbe> none;
  EXPECT_EQ(BestOfRecentProbes(none, 1).wall_ms, 0);
}

store::AttemptRecord Attempt(const std::string& worker, core::JobId job, int64_t run_ms,
                             bool resumed = false) {
  store::AttemptRecord a;
  a.worker = worker;
  a.task = {job, 0};
  a.outcome = core::AttemptOutcome::kSucceeded;
  a.started_ms = 10'000;
  a.ended_ms = 10'000 + run_ms + 10;
  a.timing.run_ms = static_cast<uint64_t>(run_ms);
  a.timing.stage_ms = 5;
  a.timing.resumed = resumed;
  return a;
}

PlanWorker Worker(const std::string& name, uint32_t cpus) {
  PlanWorker w;
  w.name = name;
  w.capacity.cpus = cpus;
  return w;
}

TEST(Predict, UsesSlotsAndSamplesAndSkipsResumedAttempts) {
  PlanJobFacts job;
  job.tasks = 8;
  job.resources.cpus = 1;
  // a: 2 slots, 2 s per task; b: 1 slot, no sample of its own (pool median: 2 s); c fits nothing.
  std::vector<PlanWorker> workers = {Worker("a", 2), Worker("b", 1), Worker("c", 0)};
  // A resumed attempt's run time covers part of a task: left out (else the median would be 1 s).
  std::vector<store::AttemptRecord> samples = {Attempt("a", 1, 2000), Attempt("a", 1, 2000),
                                               Attempt("a", 1, 100, true)};
  auto p = Predict(job, workers, samples, "test", 42);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->samples(), 2u);
  ASSERT_EQ(p->workers_size(), 2);  // c has no slot for this job
  EXPECT_EQ(p->workers(0).slots(), 2u);
  EXPECT_NEAR(p->workers(0).task_seconds(), 2.0, 1e-9);
  EXPECT_EQ(p->workers(1).task_s_source(), "pool median");
  // 8 tasks of 2 s on 3 slots: 3 rounds (6 s plus small overheads); one 2-slot machine: 4 rounds.
  EXPECT_GE(p->makespan_s(), 6.0);
  EXPECT_LT(p->makespan_s(), 7.0);
  EXPECT_GE(p->single_makespan_s(), 8.0);
  EXPECT_EQ(p->single_worker(), "a");
  EXPECT_EQ(p->made_ms(), 42);
  EXPECT_EQ(p->basis(), "test");
}

store::AttemptRecord Upload(int64_t end_ms, uint64_t upload_ms, uint64_t bytes) {
  store::AttemptRecord a = Attempt("w", 1, 500);
  a.ended_ms = end_ms;
  a.timing.upload_ms = upload_ms;
  a.transfer.output_bytes = bytes;
  return a;
}

TEST(DispatchGapS, MedianTimeFromAFreedSlotToTheNextStart) {
  // Worker w, one job: [0,1000] [1010,2000] [2030,3000]: gaps 10 and 30 ms -> median 20 ms. An
  // attempt starting 5 s after the last end (idle worker) and another worker's do not count.
  auto at = [](const std::string& w, int64_t start, int64_t end) {
    store::AttemptRecord a = Attempt(w, 1, end - start);
    a.started_ms = start;
    a.ended_ms = end;
    return a;
  };
  std::vector<store::AttemptRecord> s = {at("w", 0, 1000), at("w", 1010, 2000), at("w", 2030, 3000),
                                         at("w", 8000, 9000), at("v", 1001, 1500)};
  EXPECT_NEAR(DispatchGapS(s), 0.020, 1e-12);
  EXPECT_EQ(DispatchGapS({at("w", 0, 1000)}), 0.0);  // one attempt per worker: nothing to see
}

TEST(ConcurrentUploadRate, BytesOverTheSpanOfOverlappingUploads) {
  // Three 1 MB uploads overlapping over [1000, 4000] ms: 3 MB / 3 s = 1 MB/s. A lone upload later
  // does not count (one upload says nothing of sharing).
  std::vector<store::AttemptRecord> s = {
      Upload(3000, 2000, 1'000'000), Upload(4000, 2500, 1'000'000), Upload(3500, 2000, 1'000'000),
      Upload(9000, 500, 1'000'000)};
  EXPECT_NEAR(ConcurrentUploadRate(s, 2e6), 1e6, 1e-6);
  // Too small to have loaded the link (3 MB at 100 MB/s is 30 ms): 0.
  EXPECT_EQ(ConcurrentUploadRate(s, 100e6), 0.0);
  // Uploads that never overlapped: 0.
  EXPECT_EQ(ConcurrentUploadRate({Upload(1000, 500, 1'000'000), Upload(3000, 500, 1'000'000)}, 1e6),
            0.0);
  EXPECT_EQ(ConcurrentUploadRate({}, 1e6), 0.0);
}

TEST(Predict, ChurnEvidenceIsShrunkTowardAnHourUp) {
  PlanJobFacts job;
  job.tasks = 4;
  job.task_s = 10;
  PlanWorker w = Worker("a", 1);
  // Observed 60 s up, 2 s down, one up period ended (a restart): without the prior the mean up
  // period would be 60 s (heavy churn for 10 s tasks); with it (60 + 3600) / 2 = 1830 s.
  w.up_ms = 60'000;
  w.down_ms = 2'000;
  w.up_periods = 1;
  auto p = Predict(job, {w}, {}, "given", 0);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_NEAR(p->workers(0).mean_up_s(), 1830.0, 1e-9);
  EXPECT_NEAR(p->workers(0).up_fraction(), 3660.0 / 3662.0, 1e-12);
  // No period seen to end: no churn at all.
  w.up_periods = 0;
  p = Predict(job, {w}, {}, "given", 0);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(std::isinf(p->workers(0).mean_up_s()));
}

TEST(Predict, NothingToProfileOrNoWorkerIsAFailedPrecondition) {
  PlanJobFacts job;
  job.tasks = 4;
  auto none = Predict(job, {Worker("a", 1)}, {}, "", 0);
  EXPECT_EQ(none.status().code(), absl::StatusCode::kFailedPrecondition);
  job.task_s = 1;
  auto nobody = Predict(job, {}, {}, "", 0);
  EXPECT_EQ(nobody.status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace idlepool::coordinator
