// A task that crashes its worker: Options::max_workers_lost_in_a_row, on the core's fixture.
#include "tests/unit/core_fixture.h"

namespace idlepool::core {
namespace {

// ---------------------------------------------------------------------------------------------
// A task that crashes its worker (Options::max_workers_lost_in_a_row)

class CoreCrashTest : public CoreTest {
 protected:
  // Workers a, b, c, ... with one slot each, session 1, 2, 3, ... (the letter's rank).
  void Workers(int n) {
    for (int i = 0; i < n; ++i) Hello(std::string(1, static_cast<char>('a' + i)), 1 + i, 1);
  }
  static SessionId SessionOf(const std::string& w) { return 1 + (w[0] - 'a'); }
  // `worker`'s process dies at `ms` (its stream ends; `closed` false: it goes silent instead, as
  // a machine put to sleep), and its lease runs out while every other worker still connected
  // heartbeats. Returns the decisions of the tick that declares it lost.
  std::vector<Decision> Die(const std::string& worker, int64_t ms, bool closed = true) {
    if (closed) Do(SessionClosed{worker, SessionOf(worker)}, ms);
    for (const WorkerView& w : s_.Workers()) {
      if (w.worker != worker && w.state != WorkerState::kLost) {
        Heartbeat(w.worker, w.session, ms + 9000);
      }
    }
    return TickAt(ms + 10000);
  }
  std::string RunningOn(TaskKey task) {
    for (const WorkerView& w : s_.Workers()) {
      if (w.attempts_running > 0 && w.state != WorkerState::kLost) return w.worker;
    }
    ADD_FAILURE() << "task " << Key(task) << " runs nowhere";
    return "";
  }
};

TEST_F(CoreCrashTest, ATaskWhoseWorkerDiesOnThreeWorkersInARowFails) {
  Workers(4);
  Submit(1, 1);
  EXPECT_THAT(Strs(Die("a", 0)),
              ElementsAre("lost a", "ended #1 1/0 @a lost", "task 1/0 pending f=0",
                          "created #2 1/0 @b", "task 1/0 running f=0", "assign #2 1/0 @b s2"));
  Die("b", 10010);
  auto out = Die("c", 20020);
  EXPECT_THAT(Strs(out),
              ElementsAre("lost c", "ended #3 1/0 @c lost", "task 1/0 failed f=0", "job 1 failed"));
  // The reason is the last attempt's message, which the store keeps and `status` shows.
  EXPECT_EQ(Only<AttemptEnded>(out).at(0).message,
            "worker lost; the task fails: lost with 3 different workers in a row (a, b, c), each "
            "of which died while running it: a task that crashes its worker?");
  EXPECT_EQ(JobOf(1).counters.failures, 0u);  // losses are still not failures
  EXPECT_EQ(JobOf(1).counters.lost, 3u);
  EXPECT_EQ(Worker("d").slots_busy, 0u);  // d was spared
}

TEST_F(CoreCrashTest, AWorkerThatComesBackWithANewBootIdDied) {
  Workers(3);
  Submit(1, 1);
  for (const char* w : {"a", "b"}) {
    // Killed, then restarted by its service manager before its lease ran out: it takes other
    // work again, but not this task (Options::machine_fault_avoid), which goes elsewhere.
    ASSERT_EQ(RunningOn({1, 0}), w);
    Do(SessionClosed{w, SessionOf(w)}, 1000 * SessionOf(w));
    auto out = Hello(w, 10 + SessionOf(w), 1, 1000 * SessionOf(w) + 1, {}, "boot2");
    EXPECT_THAT(Strs(Only<AttemptEnded>(out)),
                ElementsAre("ended #" + std::to_string(SessionOf(w)) + " 1/0 @" + w + " lost"));
    EXPECT_EQ(JobOf(1).state, JobState::kRunning);
  }
  ASSERT_EQ(RunningOn({1, 0}), "c");
  Do(SessionClosed{"c", 3}, 3000);
  auto out = Hello("c", 13, 1, 3001, {}, "boot2");
  EXPECT_THAT(Strs(Only<AttemptEnded>(out)), ElementsAre("ended #3 1/0 @c lost"));
  EXPECT_THAT(Strs(Only<TaskChanged>(out)), ElementsAre("task 1/0 failed f=0"));
  EXPECT_THAT(Only<AttemptEnded>(out).at(0).message,
              ::testing::StartsWith("worker restarted (new boot id); the task fails: lost with 3 "
                                    "different workers in a row (a, b, c)"));
  EXPECT_EQ(JobOf(1).state, JobState::kFailed);
}

TEST_F(CoreCrashTest, OnlyWorkersThatDiedCount) {
  Workers(4);
  Submit(1, 1);
  Die("a", 0);
  Die("b", 10010, /*closed=*/false);  // silent: asleep or cut off, not proof of a crash
  ASSERT_EQ(RunningOn({1, 0}), "c");
  Die("c", 20020);
  EXPECT_EQ(JobOf(1).state, JobState::kRunning);  // a and c: two
  ASSERT_EQ(RunningOn({1, 0}), "d");
  auto out = Die("d", 30030);
  EXPECT_THAT(Strs(out), ::testing::Contains("job 1 failed"));
  EXPECT_THAT(Only<AttemptEnded>(out).at(0).message, ::testing::HasSubstr("(a, c, d)"));
}

TEST_F(CoreCrashTest, TheSameWorkerCountsOnceAndWaitsBeforeItGetsTheTaskBack) {
  Workers(2);
  Submit(1, 1);
  Die("a", 0);
  Hello("a", 11, 1, 10001, {}, "boot2");  // back, a new process; the task is on b
  Die("b", 10010);                        // a and b
  // Only a is left, and it killed the task's worker ten seconds ago: the task waits.
  EXPECT_EQ(JobOf(1).pending, 1u);
  Heartbeat("a", 11, 609000);
  EXPECT_THAT(Strs(TickAt(609999)), IsEmpty());
  auto out = TickAt(610000);  // Options::machine_fault_avoid after a was found dead with it
  ASSERT_THAT(Strs(Only<AssignAttempt>(out)), ElementsAre("assign #3 1/0 @a s11"));
  // a dies with it again, and is restarted: still two different workers.
  Do(SessionClosed{"a", 11}, 610010);
  Hello("a", 12, 1, 610011, {}, "boot3");
  EXPECT_EQ(JobOf(1).state, JobState::kRunning);
  EXPECT_EQ(JobOf(1).counters.lost, 3u);
  Hello("c", 21, 1, 610020);
  ASSERT_EQ(RunningOn({1, 0}), "c");
  Do(SessionClosed{"c", 21}, 610030);
  out = Hello("c", 22, 1, 610031, {}, "boot2");
  EXPECT_THAT(Only<AttemptEnded>(out).at(0).message, ::testing::HasSubstr("(a, b, c)"));
  EXPECT_EQ(JobOf(1).state, JobState::kFailed);
}

TEST_F(CoreCrashTest, PreemptionsNeitherCountNorBreakTheRun) {
  Workers(4);
  Submit(1, 1);
  Die("a", 0);
  ASSERT_EQ(RunningOn({1, 0}), "b");
  // b's owner takes the machine back: vacated, requeued, never counted.
  auto out = Do(WorkerLeaving{"b", 2, {2}}, 10010);
  EXPECT_THAT(Strs(Only<AttemptEnded>(out)), ElementsAre("ended #2 1/0 @b preempted"));
  Die("c", 10020);
  EXPECT_EQ(JobOf(1).state, JobState::kRunning);  // a and c
  EXPECT_EQ(JobOf(1).counters.preemptions, 1u);
  out = Die("d", 20030);
  EXPECT_THAT(Strs(out), ::testing::Contains("task 1/0 failed f=0"));
  EXPECT_THAT(Only<AttemptEnded>(out).at(0).message, ::testing::HasSubstr("(a, c, d)"));
}

TEST_F(CoreCrashTest, AFailureStartsTheCountOver) {
  Workers(5);
  Submit(1, 1);
  Die("a", 0);
  Die("b", 10010);
  ASSERT_EQ(RunningOn({1, 0}), "c");
  // The task ran to an end on c, which outlived it: whatever killed a and b, it was not this.
  Report("c", 3, 3, ReportResult::kFailed, 20020);
  EXPECT_EQ(JobOf(1).counters.failures, 1u);
  // The retry avoids c, where it just failed, while d and e can take it.
  ASSERT_EQ(RunningOn({1, 0}), "d");
  Die("d", 20030);
  ASSERT_EQ(RunningOn({1, 0}), "e");
  Die("e", 30040);
  EXPECT_EQ(JobOf(1).state, JobState::kRunning);  // d and e: two since the failure
  // Every other worker died with the task (each kept off it for 10 minutes): it waits for them
  // rather than go back to c, where it failed...
  EXPECT_EQ(JobOf(1).pending, 1u);
  // ...until they have been gone for 10 minutes.
  Heartbeat("c", 3, 640040);
  ASSERT_EQ(RunningOn({1, 0}), "c");
  auto out = Die("c", 640050);
  EXPECT_THAT(Only<AttemptEnded>(out).at(0).message, ::testing::HasSubstr("(d, e, c)"));
}

TEST_F(CoreCrashTest, ARevivedAttemptMeansItsWorkerWasAliveAfterAll) {
  Workers(1);
  Submit(1, 1);
  Die("a", 0);  // its connection was reset and it took longer than the lease to come back
  ASSERT_EQ(JobOf(1).pending, 1u);
  auto out = Hello("a", 7, 1, 10010, {1});  // the same process, still running #1
  ASSERT_TRUE(Only<AttemptCreated>(out).at(0).revived);
  Hello("b", 8, 1, 10020);
  Hello("c", 9, 1, 10030);
  // The run starts over: a, then b and c die with the task; two so far.
  Do(SessionClosed{"a", 7}, 10040);
  for (auto [w, sess] : {std::pair<const char*, SessionId>{"b", 8}, {"c", 9}}) {
    Heartbeat(w, sess, 19000);
  }
  TickAt(20040);
  ASSERT_EQ(RunningOn({1, 0}), "b");
  Do(SessionClosed{"b", 8}, 20050);
  Heartbeat("c", 9, 29000);
  TickAt(30050);
  EXPECT_EQ(JobOf(1).state, JobState::kRunning);
}

TEST(CoreCrashRule, ZeroTurnsTheRuleOff) {
  Options o{Millis{5000}};
  o.max_workers_lost_in_a_row = 0;
  Scheduler s{o};
  (void)s.Apply(JobSubmitted{1, 1}, At(0));
  int64_t now = 0;
  for (int i = 0; i < 5; ++i) {
    const std::string w = "w" + std::to_string(i);
    (void)s.Apply(WorkerHello{w, static_cast<SessionId>(i + 1), "boot", Resources{}, {}}, At(now));
    (void)s.Apply(SessionClosed{w, static_cast<SessionId>(i + 1)}, At(now + 1));
    now += 5001;
    (void)s.Apply(Tick{}, At(now));
  }
  EXPECT_EQ(s.Job(1)->state, JobState::kRunning);
  EXPECT_EQ(s.Job(1)->counters.lost, 5u);
}

}  // namespace
}  // namespace idlepool::core
