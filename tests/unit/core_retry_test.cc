// Retries with backoff and pipelines (`after`) in the pure scheduler core (issue 18): a failed
// task waits backoff x 2^(failures-1) plus a hashed jitter before it is placeable again (a
// preemption does not wait); a job that runs after others waits until they succeed and is
// cancelled, with a reason, when one fails. Explicit `now` values, no clocks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "core/scheduler.h"
#include "core/types.h"
#include "tests/unit/core_fixture.h"

namespace idlepool::core {
namespace {

constexpr RetryBackoff kBackoff{Millis{1000}, Millis{60000}};

class CoreRetryTest : public CoreTest {
 protected:
  std::vector<Decision> Job(JobId job, uint32_t tasks, int64_t ms, RetryBackoff retry = {},
                            std::vector<JobId> after = {}, uint32_t max_attempts = 3) {
    JobSubmitted e{job, tasks, {}, max_attempts, Millis{0}};
    e.retry = retry;
    e.after = std::move(after);
    return Do(e, ms);
  }
  static std::vector<JobChanged> Jobs(const std::vector<Decision>& out) {
    return Only<JobChanged>(out);
  }
};

TEST(RetryWait, DoublesWithJitterUnderTheCapAndIsDeterministic) {
  const TaskKey t{7, 3};
  EXPECT_EQ(Scheduler::RetryWait(RetryBackoff{}, t, 1), Millis{0});
  for (uint32_t f = 1; f <= 6; ++f) {
    const int64_t base = 1000LL << (f - 1);
    const Millis w = Scheduler::RetryWait(kBackoff, t, f);
    EXPECT_GE(w.count(), base) << f;
    EXPECT_LT(w.count(), base + base / 4) << f;
    EXPECT_EQ(w, Scheduler::RetryWait(kBackoff, t, f)) << "same inputs, same wait";
  }
  EXPECT_EQ(Scheduler::RetryWait(kBackoff, t, 7), Millis{60000});  // 64 s capped at 60 s
  EXPECT_EQ(Scheduler::RetryWait(kBackoff, t, 90), Millis{60000});
  // The jitter spreads tasks that failed together.
  std::set<int64_t> waits;
  for (uint32_t i = 0; i < 20; ++i) {
    waits.insert(Scheduler::RetryWait(kBackoff, TaskKey{7, i}, 1).count());
  }
  EXPECT_GT(waits.size(), 15u);
}

TEST_F(CoreRetryTest, AFailedTaskWaitsItsBackoffThenRuns) {
  Hello("a", 1, 1);
  ASSERT_EQ(Only<AssignAttempt>(Job(1, 1, 0, kBackoff)).size(), 1u);
  std::vector<Decision> out = Report("a", 1, 1, ReportResult::kFailed, 100);
  EXPECT_THAT(Only<AssignAttempt>(out), IsEmpty()) << "not at once";
  EXPECT_EQ(JobOf(1).restarting, 1u);
  EXPECT_EQ(JobOf(1).pending, 1u);
  const int64_t first = Scheduler::RetryWait(kBackoff, TaskKey{1, 0}, 1).count();
  EXPECT_THAT(Only<AssignAttempt>(TickAt(100 + first - 1)), IsEmpty());
  ASSERT_EQ(Only<AssignAttempt>(TickAt(100 + first)).size(), 1u);
  EXPECT_EQ(JobOf(1).restarting, 0u);
  // The second failure waits about twice as long (heartbeats keep the worker's lease).
  Heartbeat("a", 1, 4000);
  out = Report("a", 1, 2, ReportResult::kTimedOut, 5000);
  Heartbeat("a", 1, 6000);
  const int64_t second = Scheduler::RetryWait(kBackoff, TaskKey{1, 0}, 2).count();
  EXPECT_GE(second, 2000);
  EXPECT_THAT(Only<AssignAttempt>(TickAt(5000 + second - 1)), IsEmpty());
  EXPECT_EQ(Only<AssignAttempt>(TickAt(5000 + second)).size(), 1u);
}

TEST_F(CoreRetryTest, PreemptionsAndZeroBackoffRetryAtOnce) {
  Hello("a", 1, 2);
  ASSERT_EQ(Only<AssignAttempt>(Job(1, 1, 0, kBackoff)).size(), 1u);
  EXPECT_EQ(Only<AssignAttempt>(Report("a", 1, 1, ReportResult::kPreempted, 10)).size(), 1u);
  ASSERT_EQ(Only<AssignAttempt>(Job(2, 1, 20)).size(), 1u);  // no backoff: today's behaviour
  EXPECT_EQ(Only<AssignAttempt>(Report("a", 1, 3, ReportResult::kFailed, 30)).size(), 1u);
}

TEST_F(CoreRetryTest, TheLastFailureFailsTheTaskWithoutWaiting) {
  Hello("a", 1, 1);
  Job(1, 1, 0, kBackoff, {}, /*max_attempts=*/1);
  const std::vector<Decision> out = Report("a", 1, 1, ReportResult::kFailed, 10);
  EXPECT_THAT(Strs(Jobs(out)), ElementsAre("job 1 failed"));
  EXPECT_EQ(JobOf(1).restarting, 0u);
}

TEST_F(CoreRetryTest, ACancelledJobDropsItsWaits) {
  Hello("a", 1, 1);
  Job(1, 1, 0, kBackoff);
  Report("a", 1, 1, ReportResult::kFailed, 10);
  EXPECT_THAT(Strs(Jobs(Do(JobCancelled{1}, 20))), ElementsAre("job 1 cancelled"));
  EXPECT_THAT(Only<AssignAttempt>(TickAt(100000)), IsEmpty());
}

TEST_F(CoreRetryTest, ARestoreRestartsTheWait) {
  RestoredState st;
  RestoredJob j;
  j.spec = JobSubmitted{1, 1, {}, 3, Millis{0}};
  j.spec.retry = kBackoff;
  st.jobs.push_back(j);
  st.tasks.push_back(RestoredTask{TaskKey{1, 0}, TaskState::kPending, 1});
  st.next_attempt_id = 5;
  s_.Restore(st, At(50000));
  EXPECT_THAT(Only<AssignAttempt>(Hello("a", 1, 1, 50000)), IsEmpty());
  EXPECT_EQ(JobOf(1).restarting, 1u);
  const int64_t wait = Scheduler::RetryWait(kBackoff, TaskKey{1, 0}, 1).count();
  EXPECT_THAT(Only<AssignAttempt>(TickAt(50000 + wait - 1)), IsEmpty());
  EXPECT_EQ(Only<AssignAttempt>(TickAt(50000 + wait)).size(), 1u);
}

TEST_F(CoreRetryTest, AJobWaitsForTheJobsItRunsAfter) {
  Hello("a", 1, 4);
  ASSERT_EQ(Only<AssignAttempt>(Job(1, 1, 0)).size(), 1u);
  ASSERT_EQ(Only<AssignAttempt>(Job(2, 1, 0)).size(), 1u);
  EXPECT_THAT(Only<AssignAttempt>(Job(3, 2, 10, {}, {1, 2})), IsEmpty());
  EXPECT_EQ(JobOf(3).waiting_on, (std::vector<JobId>{1, 2}));
  EXPECT_EQ(JobOf(3).after, (std::vector<JobId>{1, 2}));
  EXPECT_THAT(Only<AssignAttempt>(Report("a", 1, 1, ReportResult::kSucceeded, 20)), IsEmpty());
  EXPECT_EQ(JobOf(3).waiting_on, (std::vector<JobId>{2}));
  EXPECT_THAT(Only<AssignAttempt>(TickAt(30)), IsEmpty());
  // The last one's success places its tasks in the same batch.
  const std::vector<Decision> out = Report("a", 1, 2, ReportResult::kSucceeded, 40);
  EXPECT_EQ(Only<AssignAttempt>(out).size(), 2u);
  EXPECT_THAT(JobOf(3).waiting_on, IsEmpty());
}

TEST_F(CoreRetryTest, AFailedJobCancelsTheJobsAfterItInAChain) {
  Hello("a", 1, 1);
  Job(1, 1, 0, {}, {}, /*max_attempts=*/1);
  Job(2, 1, 0, {}, {1});
  Job(3, 1, 0, {}, {2});
  const std::vector<Decision> out = Report("a", 1, 1, ReportResult::kFailed, 10);
  const std::vector<JobChanged> jobs = Jobs(out);
  ASSERT_THAT(Strs(jobs), ElementsAre("job 1 failed", "job 2 cancelled", "job 3 cancelled"));
  EXPECT_EQ(jobs[1].reason, "job 1 failed");
  EXPECT_EQ(jobs[2].reason, "job 2 was cancelled");
  EXPECT_EQ(JobOf(2).cancelled, 1u);
}

TEST_F(CoreRetryTest, AfterAFinishedJobActsAtOnce) {
  Hello("a", 1, 1);
  Job(1, 1, 0);
  Report("a", 1, 1, ReportResult::kSucceeded, 10);
  Do(JobCancelled{2}, 10);  // unknown: ignored
  Job(2, 1, 20);
  Do(JobCancelled{2}, 30);
  EXPECT_EQ(Only<AssignAttempt>(Job(3, 1, 40, {}, {1})).size(), 1u);
  const std::vector<JobChanged> jobs = Jobs(Job(4, 1, 50, {}, {2}));
  ASSERT_THAT(Strs(jobs), ElementsAre("job 4 cancelled"));
  EXPECT_EQ(jobs[0].reason, "job 2 was cancelled");
  // A job cancelled by its user while it waits shows no reason.
  Job(5, 1, 60, {}, {3});
  EXPECT_EQ(Jobs(Do(JobCancelled{5}, 70)).at(0).reason, "");
}

TEST_F(CoreRetryTest, ARestoredJobStillWaits) {
  RestoredState st;
  st.jobs.push_back(RestoredJob{JobSubmitted{1, 1, {}, 3, Millis{0}}});
  RestoredJob after{JobSubmitted{2, 1, {}, 3, Millis{0}}};
  after.spec.after = {1};
  st.jobs.push_back(after);
  st.tasks = {RestoredTask{TaskKey{1, 0}}, RestoredTask{TaskKey{2, 0}}};
  s_.Restore(st, At(1000));
  const std::vector<Decision> out = Hello("a", 1, 2, 1000);
  EXPECT_THAT(Strs(Only<AssignAttempt>(out)), ElementsAre("assign #1 1/0 @a s1"));
  EXPECT_EQ(JobOf(2).waiting_on, (std::vector<JobId>{1}));
  EXPECT_EQ(Only<AssignAttempt>(Report("a", 1, 1, ReportResult::kSucceeded, 1100)).size(), 1u);
}

}  // namespace
}  // namespace idlepool::core
