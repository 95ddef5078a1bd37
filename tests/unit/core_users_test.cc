// A shared pool in the Scheduler beyond the order itself (core_share_test.cc): the lender's choice
// of users, quotas held at placement, a job's priority changed while it runs, fair preemption,
// and users restored after a restart. Explicit `now`, no clocks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/scheduler.h"
#include "tests/unit/core_fixture.h"

namespace idlepool::core {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

class CoreUsersTest : public CoreTest {
 protected:
  explicit CoreUsersTest(std::optional<Millis> preempt_after = std::nullopt) {
    Options o{Millis{600000}};
    o.policy = Policy::Fifo();
    o.fair_preemption.after = preempt_after;
    s_ = Scheduler(o);
  }
  void Job(JobId job, uint32_t tasks, const std::string& user, int64_t ms, uint32_t gpus = 0) {
    JobSubmitted e{job, tasks, {}, 3, Millis{0}};
    e.resources.gpus = gpus;
    e.user = user;
    Do(e, ms);
  }
  std::vector<Decision> Lend(const std::string& worker, uint32_t cpus, int64_t ms,
                             std::vector<UserName> accept, std::vector<UserName> refuse = {}) {
    WorkerHello h{worker, 1, "boot1", Resources{cpus}};
    h.accept_users = std::move(accept);
    h.refuse_users = std::move(refuse);
    return Do(h, ms);
  }
  static std::vector<std::string> Tasks(const std::vector<Decision>& out) {
    std::vector<std::string> s;
    for (const AssignAttempt& a : Only<AssignAttempt>(out)) {
      s.push_back(a.worker + ":" + std::to_string(a.task.job) + "/" + std::to_string(a.task.index));
    }
    return s;
  }
};

TEST_F(CoreUsersTest, AMachineKeptToItsTeamRunsOnlyTheTeamsTasks) {
  Job(1, 2, "outsider", 0);
  EXPECT_THAT(Tasks(Lend("lab", 2, 0, {"alice", "bob"})), IsEmpty());
  Job(2, 1, "alice", 10);
  EXPECT_THAT(Tasks(Lend("lab", 2, 20, {"alice", "bob"})), ElementsAre("lab:2/0"));
  // Anyone's machine takes the outsider's work.
  EXPECT_THAT(Tasks(Hello("open", 1, 2, 30)), ElementsAre("open:1/0", "open:1/1"));
  EXPECT_EQ(s_.Worker("lab")->accept_users, (std::vector<UserName>{"alice", "bob"}));
}

TEST_F(CoreUsersTest, ARefusedUserNeverRunsThereEvenWhenAccepted) {
  Job(1, 1, "mallory", 0);
  EXPECT_THAT(Tasks(Lend("w", 1, 0, {"mallory"}, {"mallory"})), IsEmpty());
  Job(2, 1, "alice", 10);
  EXPECT_THAT(Tasks(Lend("w", 1, 20, {}, {"mallory"})), ElementsAre("w:2/0"));
}

TEST_F(CoreUsersTest, AQuotaOfSlotsHoldsTheRestOfTheUsersTasks) {
  Do(UserSet{"alice", 1.0, Quota{2, 0}}, 0);
  Job(1, 5, "alice", 0);
  EXPECT_THAT(Tasks(Hello("w", 1, 4, 0)), ElementsAre("w:1/0", "w:1/1"));
  // A slot frees: the quota lets one more in, never a third at once.
  EXPECT_THAT(Tasks(Report("w", 1, 1, ReportResult::kSucceeded, 1000)), ElementsAre("w:1/2"));
  EXPECT_EQ(s_.Users(At(1000)).front().usage.slots, 2u);
  // Raised: the free slots fill.
  EXPECT_THAT(Tasks(Do(UserSet{"alice", 1.0, Quota{0, 0}}, 2000)), ElementsAre("w:1/3", "w:1/4"));
}

TEST_F(CoreUsersTest, AQuotaOfGpusHoldsGpuTasks) {
  Do(UserSet{"alice", 1.0, Quota{0, 1}}, 0);
  Job(1, 3, "alice", 0, /*gpus=*/1);
  Resources cap{4};
  cap.gpus = 2;
  EXPECT_THAT(Tasks(Hello("w", 1, 4, 0, {}, "boot1", cap)), ElementsAre("w:1/0"));
}

TEST_F(CoreUsersTest, APriorityChangedWhileQueuedReordersTheUsersJobs) {
  Job(1, 1, "alice", 0);
  Job(2, 1, "alice", 0);
  Do(JobPriority{2, 7}, 10);
  EXPECT_THAT(Tasks(Hello("w", 1, 1, 20)), ElementsAre("w:2/0"));
  Do(JobPriority{9, 7}, 30);  // unknown job: ignored
}

TEST_F(CoreUsersTest, UsersSettingsAndUsageSurviveARestore) {
  RestoredState st;
  st.users.push_back(UserSet{"alice", 3.0, Quota{1, 0}});
  st.usage.push_back(RestoredUsage{"bob", 7200.0, 0});
  s_.Restore(st, At(0));
  const std::vector<UserView> users = s_.Users(At(0));
  ASSERT_EQ(users.size(), 2u);
  EXPECT_EQ(users[0].settings.share, 3.0);
  EXPECT_EQ(users[0].settings.quota.max_slots, 1u);
  EXPECT_DOUBLE_EQ(users[1].usage.slot_s, 7200.0);
  // bob's past usage puts alice first.
  Job(1, 1, "bob", 0);
  Job(2, 1, "alice", 0);
  EXPECT_THAT(Tasks(Hello("w", 1, 1, 10)), ElementsAre("w:2/0"));
}

TEST_F(CoreUsersTest, RestoredAttemptsCountTowardTheQuotaBeforeTheirWorkerIsBack) {
  RestoredState st;
  st.users.push_back(UserSet{"alice", 1.0, Quota{2, 0}});
  JobSubmitted spec{1, 4, {}, 3, Millis{0}};
  spec.user = "alice";
  st.jobs.push_back(RestoredJob{spec});
  for (uint32_t i = 0; i < 2; ++i) {
    st.tasks.push_back(RestoredTask{TaskKey{1, i}, TaskState::kRunning});
    st.running.push_back(RestoredAttempt{i + 1, TaskKey{1, i}, "a"});
  }
  s_.Restore(st, At(0));
  EXPECT_EQ(s_.Users(At(0)).front().usage.slots, 2u);
  // Another worker comes first: alice already holds her 2 slots on "a", which is not back yet.
  EXPECT_THAT(Tasks(Hello("b", 1, 2, 10)), IsEmpty());
  // "a" is back holding both: still 2, not 4.
  EXPECT_THAT(Tasks(Hello("a", 2, 2, 20, {1, 2})), IsEmpty());
  EXPECT_EQ(s_.Users(At(20)).front().usage.slots, 2u);
  // One ends: one more may start.
  EXPECT_THAT(Tasks(Report("a", 2, 1, ReportResult::kSucceeded, 30)), ElementsAre("b:1/2"));
}

TEST_F(CoreUsersTest, ARestoredAttemptNeverReadoptedFreesItsUsersSlots) {
  RestoredState st;
  st.users.push_back(UserSet{"alice", 1.0, Quota{1, 0}});
  JobSubmitted spec{1, 2, {}, 3, Millis{0}};
  spec.user = "alice";
  st.jobs.push_back(RestoredJob{spec});
  st.tasks.push_back(RestoredTask{TaskKey{1, 0}, TaskState::kRunning});
  st.running.push_back(RestoredAttempt{1, TaskKey{1, 0}, "gone"});
  s_.Restore(st, At(0));
  EXPECT_THAT(Tasks(Hello("b", 1, 2, 10)), IsEmpty());
  // Past the lease, the orphan ends lost: its slot is free and the quota lets one task in.
  EXPECT_THAT(Tasks(Do(Tick{}, 600'001)), ::testing::SizeIs(1));
  EXPECT_EQ(s_.Users(At(600'001)).front().usage.slots, 1u);
}

class CoreFairPreemptionTest : public CoreUsersTest {
 protected:
  CoreFairPreemptionTest() : CoreUsersTest(Millis{5000}) {}
};

TEST_F(CoreFairPreemptionTest, AStarvingUsersTaskGetsASlotVacatedAfterTheDelay) {
  Job(1, 4, "alice", 0);
  EXPECT_THAT(Tasks(Hello("w", 1, 4, 0)), ElementsAre("w:1/0", "w:1/1", "w:1/2", "w:1/3"));
  Job(2, 2, "bob", 1000);
  TickAt(1000);  // the coordinator ticks every 100 ms: bob starves from here
  EXPECT_THAT(Only<KillAttempt>(TickAt(3000)), IsEmpty());  // starving for 2 s only
  const std::vector<Decision> out = TickAt(6500);
  const std::vector<KillAttempt> kills = Only<KillAttempt>(out);
  ASSERT_EQ(kills.size(), 1u);  // one per worker per window
  EXPECT_EQ(kills[0].reason, KillReason::kFairShare);
  const std::vector<AttemptEnded> ended = Only<AttemptEnded>(out);
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].outcome, AttemptOutcome::kPreempted);
  EXPECT_EQ(ended[0].attempt, 4u);  // the newest start loses least: all started at 0, highest id
  EXPECT_THAT(Tasks(out), ElementsAre("w:2/0"));
  EXPECT_EQ(s_.Job(1)->counters.preemptions, 1u);
  EXPECT_EQ(s_.Job(1)->counters.failures, 0u);
  // bob holds 1 of his fair 2 (half): no longer starving, so no more vacates.
  EXPECT_THAT(Only<KillAttempt>(TickAt(20000)), IsEmpty());
}

TEST_F(CoreFairPreemptionTest, AServiceReplicaIsNeverVacated) {
  JobSubmitted svc{1, 2, {}, 3, Millis{0}};
  svc.user = "alice";
  svc.service = ServiceShape{2, 2};
  Do(svc, 0);
  EXPECT_THAT(Tasks(Hello("w", 1, 2, 0)), ElementsAre("w:1/0", "w:1/1"));
  Job(2, 1, "bob", 1000);
  EXPECT_THAT(Only<KillAttempt>(TickAt(60000)), IsEmpty());
}

TEST_F(CoreFairPreemptionTest, OffNeverVacates) {
  Options off{Millis{600000}};
  off.fair_preemption.after = std::nullopt;
  s_ = Scheduler(off);
  Job(1, 2, "alice", 0);
  Hello("w", 1, 2, 0);
  Job(2, 1, "bob", 0);
  EXPECT_THAT(Only<KillAttempt>(TickAt(3'600'000)), IsEmpty());
}

}  // namespace
}  // namespace idlepool::core
