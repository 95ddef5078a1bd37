// BuildModels: measured samples and workers -> the pool model's inputs (plan/job_profile.h).
// Expected values are worked out by hand in each test's comment.
#include "plan/job_profile.h"

#include <gtest/gtest.h>

namespace idlepool::plan {
namespace {

AttemptSample Sample(const std::string& worker, double wall, double stage, double run,
                     double upload, double fetched = 0, double output = 0) {
  AttemptSample s;
  s.worker = worker;
  s.wall_s = wall;
  s.stage_s = stage;
  s.run_s = run;
  s.upload_s = upload;
  s.fetched_bytes = fetched;
  s.output_bytes = output;
  return s;
}

WorkerFacts Worker(const std::string& name, double score = 0, double rtt = 0.001) {
  WorkerFacts w;
  w.name = name;
  w.cpu_score = score;
  w.rtt_s = rtt;
  return w;
}

TEST(BuildModels, OwnSamplesGiveTaskTimesAndTheJobOverheadIsTheMedian) {
  // No assets (copy 0), 1 RTT of 1 ms per task. Overheads: a: 10.2-10-0.1-0.0 - 0.001 = 0.099;
  // a again: 0.099; b: 5.4-5-0.2-0.1(not a fetch: staging kept)+0.1 - 0.001 - 0 = 0.199.
  // Job overhead: median(0.099, 0.099, 0.199) = 0.099; b's own is 0.1 above it -> its task_s
  // is 5 + 0.1.
  std::vector<AttemptSample> samples = {Sample("a", 10.2, 0.0, 10.0, 0.1),
                                        Sample("a", 10.2, 0.0, 10.0, 0.1),
                                        Sample("b", 5.4, 0.1, 5.0, 0.2)};
  JobFacts job;
  job.tasks = 20;
  auto m = BuildModels(samples, {Worker("a"), Worker("b")}, job);
  ASSERT_TRUE(m.ok()) << m.error;
  EXPECT_NEAR(m.value.job.per_task_overhead_s, 0.099, 1e-9);
  EXPECT_NEAR(m.value.pool.workers[0].task_s, 10.0, 1e-9);
  EXPECT_NEAR(m.value.pool.workers[1].task_s, 5.1, 1e-9);
  EXPECT_EQ(m.value.sources[0], TaskTimeSource::kMeasured);
  EXPECT_EQ(m.value.samples[0], 2);
  EXPECT_EQ(m.value.samples[1], 1);
  EXPECT_EQ(m.value.total_samples, 3);
}

TEST(BuildModels, UnsampledWorkersAreScaledByCpuScore) {
  // a (score 100) ran 8 s: 800 score-seconds; b (score 200) ran 4 s: 800. c (score 50), never
  // sampled: 800 / 50 = 16 s. d without a score: the median run time, 6 s.
  std::vector<AttemptSample> samples = {Sample("a", 8.001, 0, 8, 0), Sample("b", 4.001, 0, 4, 0)};
  JobFacts job;
  job.tasks = 4;
  auto m =
      BuildModels(samples, {Worker("a", 100), Worker("b", 200), Worker("c", 50), Worker("d")}, job);
  ASSERT_TRUE(m.ok()) << m.error;
  EXPECT_NEAR(m.value.pool.workers[2].task_s, 16.0, 1e-9);
  EXPECT_EQ(m.value.sources[2], TaskTimeSource::kScaledByCpuScore);
  EXPECT_NEAR(m.value.pool.workers[3].task_s, 6.0, 1e-9);
  EXPECT_EQ(m.value.sources[3], TaskTimeSource::kPoolMedian);
}

TEST(BuildModels, AFetchIsNotOverheadButCopyingIsModelled) {
  // 100 MB asset, copy at 1e9 B/s = 0.1 s. The sample fetched: its 30 s stage is replaced by the
  // copy time, then the copy time is subtracted (the model adds it back):
  // 41.101 - 10 - 1 - 30 + 0.1 - 0.001 - 0.1 = 0.1. Output bytes: the median, 5e6.
  std::vector<AttemptSample> samples = {Sample("a", 41.101, 30, 10, 1, 100e6, 5e6)};
  JobFacts job;
  job.tasks = 3;
  job.shared_asset_bytes = 100e6;
  auto m = BuildModels(samples, {Worker("a")}, job);
  ASSERT_TRUE(m.ok()) << m.error;
  EXPECT_NEAR(m.value.job.per_task_overhead_s, 0.1, 1e-9);
  EXPECT_DOUBLE_EQ(m.value.job.output_bytes_per_task, 5e6);
  EXPECT_DOUBLE_EQ(m.value.job.shared_asset_bytes, 100e6);
}

TEST(BuildModels, GivenTaskTimeNeedsNoSamplesAndMeasurementsPassThrough) {
  JobFacts job;
  job.tasks = 10;
  job.task_s = 2.5;
  job.output_bytes_per_task = 1e6;
  WorkerFacts w = Worker("a", 0, 0.02);
  w.slots = 4;
  w.down_bytes_per_s = 1e6;
  w.up_bytes_per_s = 2e6;
  w.up_fraction = 0.5;
  w.mean_up_s = 600;
  w.holds_assets = true;
  auto m = BuildModels({}, {w}, job);
  ASSERT_TRUE(m.ok()) << m.error;
  const WorkerModel& wm = m.value.pool.workers[0];
  EXPECT_DOUBLE_EQ(wm.task_s, 2.5);
  EXPECT_EQ(m.value.sources[0], TaskTimeSource::kGiven);
  EXPECT_EQ(wm.slots, 4);
  EXPECT_DOUBLE_EQ(wm.rtt_s, 0.02);
  EXPECT_DOUBLE_EQ(wm.down_bytes_per_s, 1e6);
  EXPECT_DOUBLE_EQ(wm.up_bytes_per_s, 2e6);
  EXPECT_DOUBLE_EQ(*wm.up_fraction, 0.5);
  EXPECT_DOUBLE_EQ(wm.mean_up_s, 600);
  EXPECT_TRUE(wm.holds_assets);
  EXPECT_DOUBLE_EQ(m.value.job.output_bytes_per_task, 1e6);
  // And the result feeds the model.
  EXPECT_TRUE(Predict(m.value.pool, m.value.job).ok());
}

TEST(BuildModels, ErrorsNameWhatIsMissing) {
  JobFacts job;
  job.tasks = 5;
  auto none = BuildModels({}, {Worker("a")}, job);
  EXPECT_NE(none.error.find("no finished attempt"), std::string::npos) << none.error;
  EXPECT_NE(BuildModels({Sample("a", 1, 0, 1, 0)}, {}, job).error.find("no worker"),
            std::string::npos);
  EXPECT_NE(BuildModels({Sample("a", -1, 0, 1, 0)}, {Worker("a")}, job).error.find("samples[0]"),
            std::string::npos);
  EXPECT_NE(BuildModels({Sample("a", 1, 0, 1, 0)}, {Worker("")}, job).error.find("workers[0].name"),
            std::string::npos);
  job.tasks = 0;
  EXPECT_NE(BuildModels({Sample("a", 1, 0, 1, 0)}, {Worker("a")}, job).error.find("job.tasks"),
            std::string::npos);
}

}  // namespace
}  // namespace idlepool::plan
