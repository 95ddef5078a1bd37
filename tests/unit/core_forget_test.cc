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

}  // namespace
}  // namespace idlepool::core
