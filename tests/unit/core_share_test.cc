// Fair share in the scheduler (core/ordering.h through Scheduler::Schedule): a user's small job
// submitted while another user's big job holds every slot gets the next slot that frees; within a
// user, priority then age; a single user's jobs keep submission order. Explicit `now`, no clocks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/scheduler.h"
#include "tests/unit/core_fixture.h"

namespace idlepool::core {
namespace {

using ::testing::ElementsAre;

class CoreShareTest : public CoreTest {
 protected:
  CoreShareTest() {
    Options o{Millis{5000}};
    o.policy = Policy::Fifo();  // placement by free slots and name only: easy to follow
    s_ = Scheduler(o);
  }
  void Job(JobId job, uint32_t tasks, const std::string& user, int64_t ms, int32_t priority = 0) {
    JobSubmitted e{job, tasks, {}, 3, Millis{0}};
    e.user = user;
    e.priority = priority;
    Do(e, ms);
  }
  // The tasks (job/index) each AssignAttempt of `out` starts.
  static std::vector<std::string> Tasks(const std::vector<Decision>& out) {
    std::vector<std::string> s;
    for (const AssignAttempt& a : Only<AssignAttempt>(out)) {
      s.push_back(std::to_string(a.task.job) + "/" + std::to_string(a.task.index));
    }
    return s;
  }
  std::vector<Decision> Succeed(AttemptId attempt, int64_t ms) {
    return Report("w", 1, attempt, ReportResult::kSucceeded, ms);
  }
};

TEST_F(CoreShareTest, AnotherUsersSmallJobTakesTheNextFreeSlot) {
  Job(1, 60, "alice", 0);
  EXPECT_THAT(Tasks(Hello("w", 1, 2, 0)), ElementsAre("1/0", "1/1"));
  Job(2, 2, "bob", 2000);  // every slot is alice's: bob waits for one to free
  EXPECT_THAT(Tasks(Succeed(1, 30000)), ElementsAre("2/0"));
  // bob holds one slot and has used less: the next free slot is his again.
  EXPECT_THAT(Tasks(Succeed(2, 30500)), ElementsAre("2/1"));
  // bob has nothing left: alice's job goes on.
  EXPECT_THAT(Tasks(Succeed(3, 60000)), ElementsAre("1/2"));
}

TEST_F(CoreShareTest, OneUsersJobsGoByPriorityThenAge) {
  Job(1, 1, "alice", 0);
  Job(2, 1, "alice", 0, /*priority=*/5);
  Job(3, 1, "alice", 0, /*priority=*/5);
  Job(4, 1, "alice", 0, /*priority=*/-1);
  EXPECT_THAT(Tasks(Hello("w", 1, 4, 0)), ElementsAre("2/0", "3/0", "1/0", "4/0"));
}

TEST_F(CoreShareTest, WithoutUsersJobsKeepSubmissionOrder) {
  Job(2, 2, "", 0);
  Job(1, 2, "", 0);
  EXPECT_THAT(Tasks(Hello("w", 1, 3, 0)), ElementsAre("1/0", "1/1", "2/0"));
}

TEST_F(CoreShareTest, ABurstOfFreeSlotsIsSharedBetweenUsers) {
  Job(1, 10, "alice", 0);
  Job(2, 10, "bob", 0);
  const std::vector<std::string> placed = Tasks(Hello("w", 1, 4, 0));
  int alice = 0, bob = 0;
  for (const std::string& t : placed) (t[0] == '1' ? alice : bob)++;
  EXPECT_EQ(alice, 2);
  EXPECT_EQ(bob, 2);
}

}  // namespace
}  // namespace idlepool::core
