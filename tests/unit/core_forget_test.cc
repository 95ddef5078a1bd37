// Scheduler::ForgetDeparted: departed workers that owe nothing leave the core's memory; workers
// that are connected, hold attempts or were seen recently stay (issue 21, point 6).
#include "tests/unit/core_fixture.h"

namespace idlepool::core {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// Each test source has its own copy of the fixture (core_fixture.h): its own suite name.
class CoreForgetTest : public CoreTest {};

TEST_F(CoreForgetTest, DepartedWorkersThatOweNothingAreForgottenAfterAWhile) {
  Submit(1, 1);
  Hello("busy", 1, 1, 0);    // takes the task, then goes silent: lost with it
  Hello("idle", 2, 1, 0);    // stays connected
  Hello("leaver", 3, 1, 0);  // says goodbye
  Hello("silent", 4, 1, 0);  // goes silent with nothing
  Do(WorkerLeaving{"leaver", 3, {}}, 100);
  Do(SessionClosed{"leaver", 3}, 100);
  Do(SessionClosed{"silent", 4}, 100);
  for (int64_t ms = 1000; ms <= 7000; ms += 1000) {
    Heartbeat("idle", 2, ms);
    TickAt(ms);
  }
  EXPECT_EQ(Worker("silent").state, WorkerState::kLost);
  EXPECT_EQ(s_.worker_count(), 4u);
  // Not yet: seen 100 ms ago, 10 s asked.
  EXPECT_THAT(s_.ForgetDeparted(At(7000), Millis{10000}), IsEmpty());
  // The lost worker that ran the task holds nothing any more (its attempt ended lost).
  EXPECT_THAT(s_.ForgetDeparted(At(10100), Millis{10000}), ElementsAre("busy", "leaver", "silent"));
  EXPECT_EQ(s_.worker_count(), 1u);
  EXPECT_FALSE(s_.Worker("silent").has_value());
  EXPECT_THAT(s_.ForgetDeparted(At(60000), Millis{10000}), IsEmpty());  // the connected one stays
  EXPECT_EQ(Worker("idle").state, WorkerState::kConnected);
  // A forgotten name that says hello again is a new worker, and gets work.
  Hello("silent", 5, 1, 61000, {}, "boot2");
  EXPECT_EQ(Worker("silent").state, WorkerState::kConnected);
  EXPECT_EQ(s_.worker_count(), 2u);
}

TEST_F(CoreForgetTest, AWorkerHoldingAnAttemptIsNeverForgotten) {
  Submit(1, 1);
  auto out = Hello("a", 1, 1, 0);
  ASSERT_THAT(Strs(Only<AssignAttempt>(out)), ElementsAre("assign #1 1/0 @a s1"));
  Do(WorkerLeaving{"a", 1, {}}, 10);  // leaving, but the attempt still runs there
  EXPECT_THAT(s_.ForgetDeparted(At(1000000), Millis{1}), IsEmpty());
  EXPECT_EQ(s_.worker_count(), 1u);
}

// Scheduler::ForgetJob (issue 18, `idlepool delete`): a finished job leaves the views; a running
// one is never forgotten; the other jobs are untouched.
TEST_F(CoreForgetTest, AFinishedJobIsForgottenARunningOneIsNot) {
  Submit(1, 1);
  Submit(2, 1);
  auto out = Hello("a", 1, 2, 0);
  ASSERT_THAT(Strs(Only<AssignAttempt>(out)),
              ElementsAre("assign #1 1/0 @a s1", "assign #2 2/0 @a s1"));
  EXPECT_FALSE(s_.ForgetJob(1));  // running
  Report("a", 1, 1, ReportResult::kSucceeded, 10, {{"out.txt", std::string(64, 'a'), 3}});
  ASSERT_EQ(s_.Job(1)->state, JobState::kSucceeded);
  EXPECT_TRUE(s_.ForgetJob(1));
  EXPECT_FALSE(s_.Job(1).has_value());
  ASSERT_EQ(s_.Jobs().size(), 1u);
  EXPECT_EQ(s_.Jobs()[0].job, 2u);
  EXPECT_TRUE(s_.ForgetJob(1));  // unknown: nothing to do
  // The other job still runs and finishes; the worker's slot is free for new work.
  Report("a", 1, 2, ReportResult::kSucceeded, 20);
  EXPECT_EQ(s_.Job(2)->state, JobState::kSucceeded);
  Submit(3, 2, 30);
  EXPECT_EQ(s_.Job(3)->running, 2u);
}

}  // namespace
}  // namespace idlepool::core
