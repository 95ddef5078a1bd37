// Failures steer placement (see "Health" in core/scheduler.h): a retry avoids the worker it
// failed on while another could take it, a job's held-off workers get none of its tasks, a
// command that cannot start holds its worker off at once without using an attempt, and a worker
// failing several jobs in a row is unhealthy for a backoff. Explicit `now` values, no clocks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/scheduler.h"
#include "core/types.h"
#include "core/worker_health.h"
#include "tests/unit/core_fixture.h"

namespace idlepool::core {
namespace {

using ::testing::HasSubstr;

class CoreHealthTest : public CoreTest {
 protected:
  CoreHealthTest() {
    Options o{Millis{5000}};
    o.policy = Policy::Fifo();  // placement by free slots and name only: easy to follow
    s_ = Scheduler(o);
  }
  std::vector<Decision> Job(JobId job, uint32_t tasks, int64_t ms, uint32_t hold_off_after = 3,
                            uint32_t max_attempts = 3) {
    JobSubmitted e{job, tasks, {}, max_attempts, Millis{0}};
    e.hold_off_after = hold_off_after;
    return Do(e, ms);
  }
  static std::vector<std::string> Placed(const std::vector<Decision>& out) {
    std::vector<std::string> s;
    for (const AssignAttempt& a : Only<AssignAttempt>(out)) {
      s.push_back(std::to_string(a.attempt) + " " + std::to_string(a.task.job) + "/" +
                  std::to_string(a.task.index) + "@" + a.worker);
    }
    return s;
  }
  std::vector<Decision> CannotStart(const std::string& worker, SessionId session, AttemptId id,
                                    int64_t ms) {
    AttemptReport r;
    r.worker = worker;
    r.session = session;
    r.attempt = id;
    r.result = ReportResult::kMachineFault;
    r.exit_code = 127;
    r.message = "cannot run 'blender' on worker " + worker + ": No such file or directory";
    r.cannot_start = true;
    return Do(r, ms);
  }
};

TEST_F(CoreHealthTest, ARetryAvoidsTheWorkerItFailedOnWhileAnotherCanTakeIt) {
  Hello("a", 1, 1);
  Hello("b", 2, 1);
  EXPECT_THAT(Placed(Job(1, 2, 0)), ElementsAre("1 1/0@a", "2 1/1@b"));
  // a fails fast and is free first: the retry waits for b instead of going straight back.
  EXPECT_THAT(Placed(Report("a", 1, 1, ReportResult::kFailed, 10)), IsEmpty());
  EXPECT_EQ(JobOf(1).pending, 1u);
  EXPECT_THAT(Placed(Report("b", 2, 2, ReportResult::kSucceeded, 20)), ElementsAre("3 1/0@b"));
}

TEST_F(CoreHealthTest, InAOneWorkerPoolTheRetryRunsThereAgain) {
  Hello("a", 1, 1);
  EXPECT_THAT(Placed(Job(1, 1, 0)), ElementsAre("1 1/0@a"));
  EXPECT_THAT(Placed(Report("a", 1, 1, ReportResult::kFailed, 10)), ElementsAre("2 1/0@a"));
}

TEST_F(CoreHealthTest, ALostWorkerHoldsTheRetryBackOnlyForTheAvoidWindow) {
  Hello("a", 1, 1);
  Hello("b", 2, 1);
  EXPECT_THAT(Placed(Job(1, 2, 0)), ElementsAre("1 1/0@a", "2 1/1@b"));
  Do(SessionClosed{"b", 2}, 5);  // b is cut off
  EXPECT_THAT(Placed(Report("a", 1, 1, ReportResult::kFailed, 10)), IsEmpty()) << "waits for b";
  Heartbeat("a", 1, 4999);
  // b is lost: its task goes to a (it never failed there); task 0 still waits for b.
  EXPECT_THAT(Placed(TickAt(5000)), ElementsAre("3 1/1@a"));
  EXPECT_THAT(Placed(Report("a", 1, 3, ReportResult::kSucceeded, 5010)), IsEmpty());
  EXPECT_THAT(Placed(Heartbeat("a", 1, 599999)), IsEmpty());
  // b, last seen at 0, has been gone for 10 minutes: nothing holds the retry back any more.
  EXPECT_THAT(Placed(Heartbeat("a", 1, 600000)), ElementsAre("4 1/0@a"));
}

// An assignment the coordinator never sent (too big) fails its attempt, but says nothing of the
// worker: it is neither avoided by the retry nor held off the job.
TEST_F(CoreHealthTest, AnUnsentAssignmentNeverCountsAgainstItsWorker) {
  Hello("a", 1, 1);
  Hello("b", 2, 1);
  EXPECT_THAT(Placed(Job(1, 2, 0, /*hold_off_after=*/1)), ElementsAre("1 1/0@a", "2 1/1@b"));
  AttemptReport r;
  r.worker = "a";
  r.session = 1;
  r.attempt = 1;
  r.result = ReportResult::kFailed;
  r.message = "the assignment of task 0 would be 150.0 MiB";
  r.unsent = true;
  EXPECT_THAT(Placed(Do(r, 10)), ElementsAre("3 1/0@a")) << "no retry held back from a";
  EXPECT_THAT(JobOf(1).held_off, IsEmpty());
}

TEST_F(CoreHealthTest, AWorkerThatLeftHoldsNothingBack) {
  Hello("a", 1, 1);
  Hello("b", 2, 1);
  EXPECT_THAT(Placed(Job(1, 2, 0)), ElementsAre("1 1/0@a", "2 1/1@b"));
  Do(WorkerLeaving{"b", 2, {2}}, 5);  // b leaves (its task goes back to pending)
  EXPECT_THAT(Placed(Report("a", 1, 1, ReportResult::kFailed, 10)), ElementsAre("3 1/0@a"));
}

TEST_F(CoreHealthTest, AJobThatFailedHoldOffAfterTimesOnAWorkerIsHeldOffIt) {
  Hello("a", 1, 1);
  Hello("b", 2, 1);
  EXPECT_THAT(Placed(Job(1, 4, 0, /*hold_off_after=*/2)), ElementsAre("1 1/0@a", "2 1/1@b"));
  EXPECT_THAT(Placed(Report("a", 1, 1, ReportResult::kFailed, 10)), ElementsAre("3 1/2@a"));
  // The job's second failure on a: a is held off it, nothing of it goes there.
  EXPECT_THAT(Placed(Report("a", 1, 3, ReportResult::kFailed, 20)), IsEmpty());
  const JobSummary j = JobOf(1);
  ASSERT_EQ(j.held_off.size(), 1u);
  EXPECT_EQ(j.held_off[0].worker, "a");
  EXPECT_EQ(j.held_off[0].failures, 2u);
  // Another job still runs on a.
  EXPECT_THAT(Placed(Job(2, 1, 30)), ElementsAre("4 2/0@a"));
  EXPECT_THAT(Placed(Report("b", 2, 2, ReportResult::kSucceeded, 40)), ElementsAre("5 1/0@b"));
  // With b gone, the hold is ignored: the job's tasks fail through max_attempts instead of
  // waiting forever.
  Do(WorkerLeaving{"b", 2, {5}}, 50);
  EXPECT_THAT(Placed(Report("a", 1, 4, ReportResult::kSucceeded, 60)), ElementsAre("6 1/0@a"));
}

TEST_F(CoreHealthTest, ACommandThatCannotStartHoldsItsWorkerOffAtOnceWithoutAnAttempt) {
  Hello("a", 1, 1);
  Hello("b", 2, 2);
  EXPECT_THAT(Placed(Job(1, 3, 0)), ElementsAre("1 1/0@b", "2 1/1@a", "3 1/2@b"));
  std::vector<Decision> out = CannotStart("a", 1, 2, 10);
  EXPECT_THAT(Placed(out), IsEmpty()) << "a is held off; task 1 waits for b";
  EXPECT_THAT(Strs(Only<TaskChanged>(out)), ElementsAre("task 1/1 pending f=0"));
  JobSummary j = JobOf(1);
  EXPECT_EQ(j.counters.failures, 0u);
  EXPECT_EQ(j.counters.machine_faults, 1u);
  ASSERT_EQ(j.held_off.size(), 1u);
  EXPECT_THAT(j.held_off[0].last_error, HasSubstr("cannot run 'blender' on worker a"));
  EXPECT_THAT(Placed(Report("b", 2, 1, ReportResult::kSucceeded, 20)), ElementsAre("4 1/1@b"));
}

TEST_F(CoreHealthTest, AWorkerFailingThreeJobsThatWorkElsewhereIsUnhealthyUntilItsBackoffEnds) {
  Hello("a", 1, 1);
  Hello("b", 2, 1);
  EXPECT_THAT(Placed(Job(1, 2, 0)), ElementsAre("1 1/0@a", "2 1/1@b"));
  Report("a", 1, 1, ReportResult::kFailed, 10);  // job 1 fails on a
  EXPECT_THAT(Placed(Job(2, 1, 20)), ElementsAre("3 2/0@a"));
  Report("a", 1, 3, ReportResult::kFailed, 30);  // job 2 fails on a
  EXPECT_THAT(Placed(Job(3, 1, 40)), ElementsAre("4 3/0@a"));
  Report("a", 1, 4, ReportResult::kFailed, 50);  // job 3 fails on a
  // Three jobs failed, but none has worked anywhere yet: it may be the jobs, not a.
  EXPECT_EQ(Worker("a").unhealthy, "");
  EXPECT_THAT(Placed(Report("b", 2, 2, ReportResult::kSucceeded, 60)), ElementsAre("5 1/0@b"));
  EXPECT_THAT(Placed(Report("b", 2, 5, ReportResult::kSucceeded, 70)), ElementsAre("6 2/0@b"));
  EXPECT_EQ(Worker("a").unhealthy, "") << "two jobs that work, failed on a";
  EXPECT_THAT(Placed(Report("b", 2, 6, ReportResult::kSucceeded, 80)), ElementsAre("7 3/0@b"));
  EXPECT_THAT(Placed(Report("b", 2, 7, ReportResult::kSucceeded, 90)), IsEmpty());
  // The third job that works elsewhere: a is unhealthy for 10 minutes.
  const WorkerView a = Worker("a");
  EXPECT_THAT(a.unhealthy, HasSubstr("job 3 task 0"));
  EXPECT_EQ(a.unhealthy_until, At(90 + 600000));
  EXPECT_THAT(Placed(Job(4, 2, 100)), ElementsAre("8 4/0@b")) << "nothing for a";
  Heartbeat("a", 1, 600088);
  Heartbeat("b", 2, 600088);
  EXPECT_THAT(Placed(TickAt(600089)), IsEmpty());
  EXPECT_THAT(Placed(TickAt(600090)), ElementsAre("9 4/1@a"));
  EXPECT_EQ(Worker("a").unhealthy, "");
  // Another failure before any success trips it again, for twice as long; a success clears it.
  Report("a", 1, 9, ReportResult::kFailed, 600100);
  EXPECT_EQ(Worker("a").unhealthy_until, At(600100 + 1200000));
  Do(WorkerReset{"a"}, 600200);
  EXPECT_EQ(Worker("a").unhealthy, "");
  EXPECT_THAT(JobOf(4).held_off, IsEmpty());
}

TEST_F(CoreHealthTest, PreemptionsLossesAndDiskFaultsNeverCount) {
  Hello("a", 1, 1);
  Hello("b", 2, 1);
  EXPECT_THAT(Placed(Job(1, 2, 0, /*hold_off_after=*/1)), ElementsAre("1 1/0@a", "2 1/1@b"));
  Report("a", 1, 1, ReportResult::kPreempted, 10);
  EXPECT_THAT(JobOf(1).held_off, IsEmpty());
  EXPECT_EQ(JobOf(1).running, 2u) << "a preempted task goes straight back to a";
}

TEST(WorkerHealth, BackoffDoublesUpToItsCap) {
  WorkerHealth h(HealthRule{1, Millis{1000}, Millis{3000}});
  const MonoTime t0{};
  EXPECT_TRUE(h.Succeeded(TaskKey{1, 0}, "b", t0).empty());
  EXPECT_TRUE(h.Failed(TaskKey{1, 1}, "a", 3, "exit code 1", t0));
  EXPECT_EQ(h.UnhealthyOf("a")->until, t0 + Millis{1000});
  EXPECT_FALSE(h.Failed(TaskKey{1, 2}, "a", 3, "exit code 1", t0 + Millis{10})) << "already out";
  EXPECT_THAT(h.Recover(t0 + Millis{1000}), ElementsAre("a"));
  EXPECT_TRUE(h.Failed(TaskKey{1, 3}, "a", 3, "exit code 1", t0 + Millis{1000}));
  EXPECT_EQ(h.UnhealthyOf("a")->until, t0 + Millis{3000});
  EXPECT_TRUE(h.IsHeldOff(1, "a")) << "three failures of job 1";
  h.ForgetJob(1);
  EXPECT_FALSE(h.IsHeldOff(1, "a"));
  EXPECT_FALSE(h.Marked(TaskKey{1, 1}));
}

}  // namespace
}  // namespace idlepool::core
