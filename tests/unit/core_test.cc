// Unit tests of the pure scheduler core: drive events with explicit `now` values and assert the
// decisions exactly. No sleeps, no threads, no clocks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <map>
#include <random>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "core/scheduler.h"
#include "core/types.h"
#include "tests/unit/core_fixture.h"
#include "tests/unit/core_test_util.h"

namespace idlepool::core {
namespace {

// ---------------------------------------------------------------------------------------------
// Placement

TEST_F(CoreTest, SubmitCreatesPendingTasksWithoutRecords) {
  EXPECT_THAT(Submit(1, 3), IsEmpty());
  JobSummary j = JobOf(1);
  EXPECT_EQ(j.state, JobState::kRunning);
  EXPECT_EQ(j.tasks, 3u);
  EXPECT_EQ(j.pending, 3u);
  EXPECT_EQ(j.running, 0u);
  EXPECT_FALSE(s_.CurrentAttempt({1, 0}).has_value());
  EXPECT_FALSE(s_.Job(2).has_value());
}

TEST_F(CoreTest, DuplicateJobIdIsIgnored) {
  Submit(1, 2);
  EXPECT_THAT(Submit(1, 5, 0, Resources{2, 0, 0}), IsEmpty());
  EXPECT_EQ(JobOf(1).tasks, 2u);
  auto out = Hello("a", 1, 8);
  EXPECT_THAT(Strs(Only<AssignAttempt>(out)),
              ElementsAre("assign #1 1/0 @a s1", "assign #2 1/1 @a s1"));
  EXPECT_EQ(Worker("a").slots_busy, 2u);  // the first submission's cpus=1 stands
}

TEST_F(CoreTest, PlacesPendingTasksInJobThenIndexOrder) {
  Submit(2, 2);
  Submit(1, 2);
  auto out = Hello("a", 7, 3);
  EXPECT_THAT(Strs(out), ElementsAre("created #1 1/0 @a", "task 1/0 running f=0",
                                     "created #2 1/1 @a", "task 1/1 running f=0",
                                     "created #3 2/0 @a", "task 2/0 running f=0",
                                     "assign #1 1/0 @a s7", "assign #2 1/1 @a s7",
                                     "assign #3 2/0 @a s7"));
  EXPECT_EQ(JobOf(2).pending, 1u);
  EXPECT_EQ(s_.CurrentAttempt({2, 0}), 3u);
  EXPECT_FALSE(s_.CurrentAttempt({2, 1}).has_value());
}

TEST_F(CoreTest, ChoosesMostFreeSlotsThenName) {
  Hello("b", 1, 2);
  Hello("a", 2, 2);
  Hello("c", 3, 4);
  auto out = Submit(1, 5);
  std::vector<std::string> placed;
  for (const AssignAttempt& a : Only<AssignAttempt>(out)) placed.push_back(a.worker);
  // Free slots a2 b2 c4: c -> c -> (a2 b2 c2 tie) a -> (b2 c2 tie) b -> c.
  EXPECT_THAT(placed, ElementsAre("c", "c", "a", "b", "c"));
  EXPECT_EQ(Worker("a").slots_busy, 1u);
  EXPECT_EQ(Worker("b").slots_busy, 1u);
  EXPECT_EQ(Worker("c").slots_busy, 3u);
}

TEST_F(CoreTest, TasksThatFitNowhereStayPending) {
  Hello("a", 1, 1);
  auto out = Submit(1, 3);
  EXPECT_EQ(Only<AssignAttempt>(out).size(), 1u);
  EXPECT_EQ(JobOf(1).pending, 2u);
  // A second worker picks up the next one in order.
  out = Hello("b", 2, 1);
  EXPECT_THAT(Strs(out),
              ElementsAre("created #2 1/1 @b", "task 1/1 running f=0", "assign #2 1/1 @b s2"));
}

TEST_F(CoreTest, TwoCpuTaskTakesTwoSlots) {
  Hello("a", 1, 3);
  auto out = Submit(1, 2, 0, Resources{2, 0, 0});
  EXPECT_THAT(Strs(Only<AssignAttempt>(out)), ElementsAre("assign #1 1/0 @a s1"));
  EXPECT_EQ(Worker("a").slots_busy, 2u);
  EXPECT_EQ(Worker("a").attempts_running, 1u);
  // A one-slot task of a later job still fits in the remaining slot.
  out = Submit(2, 1);
  EXPECT_THAT(Strs(Only<AssignAttempt>(out)), ElementsAre("assign #2 2/0 @a s1"));
  EXPECT_EQ(Worker("a").slots_busy, 3u);
  // Freeing the two slots lets the second two-slot task run.
  out = Report("a", 1, 1, ReportResult::kSucceeded);
  EXPECT_THAT(Strs(Only<AssignAttempt>(out)), ElementsAre("assign #3 1/1 @a s1"));
  EXPECT_EQ(Worker("a").slots_busy, 3u);
}

TEST_F(CoreTest, GpuAndMemoryMustFit) {
  Resources big{8, 0, 0};
  Hello("cpu", 1, 8, 0, {}, "boot1", big);
  Hello("gpu", 2, 1, 0, {}, "boot1", Resources{1, 1, 0});
  auto out = Submit(1, 2, 0, Resources{1, 1, 0});
  EXPECT_THAT(Strs(Only<AssignAttempt>(out)), ElementsAre("assign #1 1/0 @gpu s2"));
  EXPECT_EQ(JobOf(1).pending, 1u);  // only one GPU in the pool

  // Memory: a worker with too little stated memory is skipped; 0 (not stated) always fits.
  Hello("small", 3, 16, 0, {}, "boot1", Resources{16, 0, 500});
  out = Submit(2, 1, 0, Resources{1, 0, 1000});
  EXPECT_THAT(Strs(Only<AssignAttempt>(out)), ElementsAre("assign #2 2/0 @cpu s1"));
  Hello("roomy", 4, 16, 0, {}, "boot1", Resources{16, 0, 1500});
  out = Submit(3, 2, 0, Resources{1, 0, 1000});
  // small has the most free slots but too little memory; roomy takes one, then is out of
  // memory; cpu (memory not stated) takes the other.
  EXPECT_THAT(Strs(Only<AssignAttempt>(out)),
              ElementsAre("assign #3 3/0 @roomy s4", "assign #4 3/1 @cpu s1"));
}

TEST_F(CoreTest, AttemptIdsAreUniqueAcrossManyPlacements) {
  Hello("a", 1, 4);
  Hello("b", 2, 3);
  Submit(1, 50, 0, {}, /*max_attempts=*/100);
  std::set<AttemptId> seen;
  AttemptId last = 0;
  int round = 0;
  // No Tick is applied, so no lease expires. Each step fails, preempts or succeeds (in turn) the
  // running attempt of the lowest task index.
  for (int64_t t = 1; JobOf(1).state == JobState::kRunning && t < 10000; ++t) {
    for (uint32_t i = 0; i < 50; ++i) {
      auto cur = s_.CurrentAttempt({1, i});
      if (!cur) continue;
      const ReportResult r = round % 3 == 0   ? ReportResult::kFailed
                             : round % 3 == 1 ? ReportResult::kPreempted
                                              : ReportResult::kSucceeded;
      ++round;
      // Find the worker by trying both: exactly one accepts.
      auto out = Report("a", 1, *cur, r, t);
      if (!Only<AckReport>(out).at(0).accepted) out = Report("b", 2, *cur, r, t);
      ASSERT_TRUE(Only<AckReport>(out).at(0).accepted);
      for (const AttemptCreated& c : Only<AttemptCreated>(out)) {
        EXPECT_TRUE(seen.insert(c.attempt).second) << "attempt id reused: " << c.attempt;
        EXPECT_GT(c.attempt, last);
        last = c.attempt;
      }
      break;
    }
  }
  EXPECT_EQ(JobOf(1).state, JobState::kSucceeded);
  EXPECT_EQ(JobOf(1).counters.attempts, seen.size() + 7);  // the first 7 came from Submit
  EXPECT_EQ(s_.next_attempt_id(), JobOf(1).counters.attempts + 1);
  EXPECT_GT(seen.size(), 100u);
}

// ---------------------------------------------------------------------------------------------
// Fencing

TEST_F(CoreTest, LateReportFromLostWorkerIsRefusedAndKilled) {
  Hello("a", 1, 1, 0);
  Submit(1, 1, 0);
  Hello("b", 2, 1, 3000);  // b connects later; its lease runs from 3000
  auto out = TickAt(5000);
  EXPECT_THAT(Strs(out), ElementsAre("lost a", "ended #1 1/0 @a lost", "task 1/0 pending f=0",
                                     "created #2 1/0 @b", "task 1/0 running f=0",
                                     "assign #2 1/0 @b s2"));

  out = Report("a", 1, 1, ReportResult::kSucceeded, 5100, {Out("frame1.png")});
  EXPECT_THAT(Strs(out), ElementsAre("ack #1 @a s1 refused", "kill #1 @a s1 stale"));
  EXPECT_FALSE(Only<AckReport>(out)[0].reason.empty());
  EXPECT_EQ(s_.CurrentAttempt({1, 0}), 2u);
  JobSummary j = JobOf(1);
  EXPECT_EQ(j.running, 1u);
  EXPECT_EQ(j.succeeded, 0u);
  EXPECT_EQ(j.state, JobState::kRunning);

  // The current attempt commits its own outputs, once.
  out = Report("b", 2, 2, ReportResult::kSucceeded, 5200, {Out("b1.png"), Out("b2.png")});
  EXPECT_THAT(Strs(out), ElementsAre("ended #2 1/0 @b succeeded",
                                     "task 1/0 succeeded f=0 commit #2 outputs=2",
                                     "job 1 succeeded", "ack #2 @b s2 ok"));
  auto tc = Only<TaskChanged>(out).at(0);
  EXPECT_EQ(tc.outputs, (std::vector<OutputFile>{Out("b1.png"), Out("b2.png")}));
}

TEST_F(CoreTest, DuplicateSuccessReportIsRefused) {
  Hello("a", 1, 1);
  Submit(1, 2);
  auto out = Report("a", 1, 1, ReportResult::kSucceeded, 10, {Out("x")});
  EXPECT_THAT(Strs(out), ElementsAre("ended #1 1/0 @a succeeded",
                                     "task 1/0 succeeded f=0 commit #1 outputs=1",
                                     "created #2 1/1 @a", "task 1/1 running f=0",
                                     "ack #1 @a s1 ok", "assign #2 1/1 @a s1"));
  out = Report("a", 1, 1, ReportResult::kSucceeded, 20, {Out("y")});
  EXPECT_THAT(Strs(out), ElementsAre("ack #1 @a s1 refused", "kill #1 @a s1 stale"));
  EXPECT_EQ(JobOf(1).succeeded, 1u);
  EXPECT_EQ(JobOf(1).running, 1u);
  EXPECT_EQ(Worker("a").slots_busy, 1u);
}

TEST_F(CoreTest, ReportFromWrongWorkerIsRefused) {
  Hello("a", 1, 1);
  Hello("b", 2, 1);
  Submit(1, 1);  // goes to a (tie, name order)
  ASSERT_EQ(s_.CurrentAttempt({1, 0}), 1u);
  auto out = Report("b", 2, 1, ReportResult::kFailed);
  EXPECT_THAT(Strs(out), ElementsAre("ack #1 @b s2 refused", "kill #1 @b s2 stale"));
  EXPECT_EQ(JobOf(1).counters.failures, 0u);
  EXPECT_EQ(Worker("a").slots_busy, 1u);
  out = Report("a", 1, 1, ReportResult::kSucceeded);
  EXPECT_TRUE(Only<AckReport>(out).at(0).accepted);
  EXPECT_EQ(JobOf(1).state, JobState::kSucceeded);
}

TEST_F(CoreTest, GarbageFromWorkersIsHandledGracefully) {
  // Nothing known at all.
  EXPECT_THAT(Strs(Report("ghost", 9, 42, ReportResult::kSucceeded)),
              ElementsAre("ack #42 @ghost s9 refused", "kill #42 @ghost s9 stale"));
  EXPECT_THAT(Strs(Report("ghost", 9, 0, ReportResult::kPreempted)),
              ElementsAre("ack #0 @ghost s9 refused", "kill #0 @ghost s9 stale"));
  EXPECT_THAT(Heartbeat("ghost", 9, 1), IsEmpty());
  EXPECT_THAT(Do(SessionClosed{"ghost", 9}, 1), IsEmpty());
  EXPECT_THAT(Do(JobCancelled{77}, 1), IsEmpty());
  EXPECT_THAT(TickAt(100000), IsEmpty());
  EXPECT_TRUE(s_.Workers().empty());
  EXPECT_FALSE(s_.CurrentAttempt({5, 5}).has_value());
  // Known worker, heartbeat on a wrong session, close of a wrong session: ignored.
  Hello("a", 1, 1, 100000);
  Heartbeat("a", 99, 101000);
  EXPECT_EQ(Worker("a").last_seen, At(100000));
  Do(SessionClosed{"a", 99}, 101000);
  EXPECT_EQ(Worker("a").state, WorkerState::kConnected);
  // An attempt id never handed out, while real attempts run.
  Submit(1, 1, 101000);
  EXPECT_FALSE(Only<AckReport>(Report("a", 1, 12345, ReportResult::kSucceeded, 101000))
                   .at(0)
                   .accepted);
  EXPECT_EQ(JobOf(1).running, 1u);
}

// ---------------------------------------------------------------------------------------------
// Liveness

TEST_F(CoreTest, WorkerLostExactlyAtLeaseTimeout) {
  Hello("a", 1, 2, 1000);
  Submit(1, 2, 1000);
  EXPECT_THAT(TickAt(5999), IsEmpty());
  EXPECT_EQ(Worker("a").state, WorkerState::kConnected);
  auto out = TickAt(6000);
  EXPECT_THAT(Strs(out), ElementsAre("lost a", "ended #1 1/0 @a lost", "task 1/0 pending f=0",
                                     "ended #2 1/1 @a lost", "task 1/1 pending f=0"));
  WorkerView w = Worker("a");
  EXPECT_EQ(w.state, WorkerState::kLost);
  EXPECT_EQ(w.slots_busy, 0u);
  EXPECT_EQ(w.attempts_running, 0u);
  JobSummary j = JobOf(1);
  EXPECT_EQ(j.pending, 2u);
  EXPECT_EQ(j.counters.lost, 2u);
  EXPECT_EQ(j.counters.failures, 0u);
  EXPECT_EQ(j.workers_lost, 1u);
  // Lost once is enough.
  EXPECT_THAT(TickAt(20000), IsEmpty());
  // A heartbeat from the lost worker's old session does not revive it.
  Heartbeat("a", 1, 20001);
  EXPECT_EQ(Worker("a").state, WorkerState::kLost);
  EXPECT_EQ(Worker("a").last_seen, At(1000));
  EXPECT_EQ(JobOf(1).pending, 2u);
  // Saying hello again makes it usable.
  out = Hello("a", 2, 2, 20002);
  EXPECT_EQ(Only<AssignAttempt>(out).size(), 2u);
  EXPECT_EQ(JobOf(1).workers_lost, 1u);
}

TEST_F(CoreTest, HeartbeatExtendsLease) {
  Hello("a", 1, 1, 0);
  Submit(1, 1, 0);
  Heartbeat("a", 1, 4000);
  EXPECT_EQ(Worker("a").last_seen, At(4000));
  EXPECT_THAT(TickAt(5000), IsEmpty());
  EXPECT_THAT(TickAt(8999), IsEmpty());
  Heartbeat("a", 2, 8999);  // wrong session: no extension
  auto out = TickAt(9000);
  EXPECT_THAT(Strs(out), ElementsAre("lost a", "ended #1 1/0 @a lost", "task 1/0 pending f=0"));
}

TEST_F(CoreTest, SessionClosedKeepsLeaseAndStopsScheduling) {
  Hello("a", 1, 2, 0);
  Submit(1, 1, 0);
  EXPECT_THAT(Do(SessionClosed{"a", 1}, 1000), IsEmpty());
  EXPECT_EQ(Worker("a").state, WorkerState::kDisconnected);
  EXPECT_EQ(Worker("a").attempts_running, 1u);
  // A free slot on a disconnected worker is not used.
  EXPECT_THAT(Submit(2, 1, 1000), IsEmpty());
  EXPECT_THAT(TickAt(4999), IsEmpty());
  auto out = TickAt(5000);
  EXPECT_THAT(Strs(out), ElementsAre("lost a", "ended #1 1/0 @a lost", "task 1/0 pending f=0"));
}

TEST_F(CoreTest, ReconnectWithSameBootIdReadoptsAttempts) {
  Hello("a", 1, 2, 0);
  Submit(1, 2, 0);
  Do(SessionClosed{"a", 1}, 1000);
  auto out = Hello("a", 2, 2, 4000, {1, 2});
  EXPECT_THAT(out, IsEmpty());
  WorkerView w = Worker("a");
  EXPECT_EQ(w.state, WorkerState::kConnected);
  EXPECT_EQ(w.slots_busy, 2u);
  EXPECT_EQ(w.attempts_running, 2u);
  EXPECT_EQ(w.last_seen, At(4000));
  EXPECT_EQ(s_.CurrentAttempt({1, 0}), 1u);
  // The lease now runs from the hello.
  EXPECT_THAT(TickAt(8999), IsEmpty());
  // Reports on the new session are accepted.
  out = Report("a", 2, 1, ReportResult::kSucceeded, 8999);
  EXPECT_THAT(Strs(out), ElementsAre("ended #1 1/0 @a succeeded",
                                     "task 1/0 succeeded f=0 commit #1 outputs=0",
                                     "ack #1 @a s2 ok"));
  // Messages now go to the new session.
  out = Do(JobCancelled{1}, 8999);
  EXPECT_THAT(Strs(Only<KillAttempt>(out)), ElementsAre("kill #2 @a s2 cancelled"));
}

TEST_F(CoreTest, ReconnectWithSameBootIdWhileSessionOpenReplacesSession) {
  Hello("a", 1, 1, 0);
  Submit(1, 1, 0);
  EXPECT_THAT(Hello("a", 2, 1, 100, {1}), IsEmpty());
  Heartbeat("a", 1, 3000);  // the old session is dead
  EXPECT_EQ(Worker("a").last_seen, At(100));
  Heartbeat("a", 2, 3000);
  EXPECT_EQ(Worker("a").last_seen, At(3000));
  Do(SessionClosed{"a", 1}, 3000);  // closing the old one changes nothing
  EXPECT_EQ(Worker("a").state, WorkerState::kConnected);
}

TEST_F(CoreTest, NewBootIdRequeuesAtOnce) {
  Hello("a", 1, 1, 0);
  Hello("b", 3, 1, 0);
  Submit(1, 1, 0);
  Do(SessionClosed{"a", 1}, 1000);
  // Its process died running the task: the task goes elsewhere (Options::machine_fault_avoid).
  auto out = Hello("a", 2, 1, 1500, {1}, "boot2");
  EXPECT_THAT(Strs(out),
              ElementsAre("ended #1 1/0 @a lost", "task 1/0 pending f=0", "created #2 1/0 @b",
                          "task 1/0 running f=0", "kill #1 @a s2 stale", "assign #2 1/0 @b s3"));
  EXPECT_EQ(Worker("a").boot_id, "boot2");
  EXPECT_EQ(Worker("a").slots_busy, 0u);
  JobSummary j = JobOf(1);
  EXPECT_EQ(j.counters.lost, 1u);
  EXPECT_EQ(j.counters.failures, 0u);
  EXPECT_EQ(j.counters.attempts, 2u);
  EXPECT_EQ(j.workers_lost, 1u);
}

TEST_F(CoreTest, NameClashWithLiveWorkerIsRefused) {
  Hello("a", 1, 1, 0, {}, "boot1");
  Submit(1, 1, 0);
  auto out = Hello("a", 2, 8, 100, {}, "boot-other");
  EXPECT_THAT(Strs(out), ElementsAre("refuse a s2"));
  EXPECT_FALSE(Only<RefuseSession>(out)[0].reason.empty());
  WorkerView w = Worker("a");
  EXPECT_EQ(w.boot_id, "boot1");
  EXPECT_EQ(w.capacity.cpus, 1u);
  EXPECT_EQ(w.attempts_running, 1u);
  EXPECT_EQ(w.last_seen, At(0));
  // The original session still works.
  Heartbeat("a", 1, 200);
  EXPECT_EQ(Worker("a").last_seen, At(200));
  EXPECT_TRUE(Only<AckReport>(Report("a", 1, 1, ReportResult::kSucceeded, 200)).at(0).accepted);
}

TEST_F(CoreTest, HeldButStaleAttemptsAreKilled) {
  Hello("a", 1, 1, 0);
  Hello("b", 2, 2, 0);
  Submit(1, 3, 0);  // #1 -> b, #2 -> a, #3 -> b
  ASSERT_EQ(s_.CurrentAttempt({1, 1}), 2u);
  Report("b", 2, 3, ReportResult::kSucceeded, 10);  // #3 has ended
  Do(SessionClosed{"a", 1}, 20);
  // a comes back claiming its own #2, b's running #1, the ended #3 and an unknown #99.
  auto out = Hello("a", 3, 1, 30, {99, 3, 2, 1});
  EXPECT_THAT(Strs(out), ElementsAre("kill #1 @a s3 obsolete", "kill #3 @a s3 obsolete",
                                     "kill #99 @a s3 obsolete"));
  EXPECT_EQ(s_.CurrentAttempt({1, 0}), 1u);  // b's attempt untouched
  EXPECT_EQ(s_.CurrentAttempt({1, 1}), 2u);
  EXPECT_EQ(Worker("b").attempts_running, 1u);
  EXPECT_EQ(Worker("a").attempts_running, 1u);
}

TEST_F(CoreTest, AttemptsMissingFromHeldAreRequeued) {
  Hello("a", 1, 2, 0);
  Submit(1, 2, 0);
  auto out = Hello("a", 2, 2, 100, {1});
  EXPECT_THAT(Strs(out), ElementsAre("ended #2 1/1 @a lost", "task 1/1 pending f=0",
                                     "created #3 1/1 @a", "task 1/1 running f=0",
                                     "assign #3 1/1 @a s2"));
  EXPECT_EQ(s_.CurrentAttempt({1, 0}), 1u);
  EXPECT_EQ(Worker("a").slots_busy, 2u);
  EXPECT_EQ(JobOf(1).counters.lost, 1u);
}

TEST_F(CoreTest, CapacityFromHelloMayChangeOnReconnect) {
  Hello("a", 1, 1, 0);
  Submit(1, 3, 0);
  EXPECT_EQ(JobOf(1).running, 1u);
  auto out = Hello("a", 2, 3, 100, {1});
  EXPECT_EQ(Only<AssignAttempt>(out).size(), 2u);
  EXPECT_EQ(Worker("a").capacity.cpus, 3u);
  EXPECT_EQ(Worker("a").slots_busy, 3u);
  // Shrinking below what is busy keeps the attempts and places nothing new.
  out = Hello("a", 3, 1, 200, {1, 2, 3});
  EXPECT_THAT(out, IsEmpty());
  EXPECT_EQ(Worker("a").slots_busy, 3u);
  Submit(2, 1, 200);
  EXPECT_EQ(JobOf(2).pending, 1u);
}

// ---------------------------------------------------------------------------------------------
// Failures, preemptions, timeouts

TEST_F(CoreTest, PreemptionsNeverConsumeMaxAttempts) {
  Hello("a", 1, 1, 0);
  Submit(1, 1, 0, {}, /*max_attempts=*/2);
  for (AttemptId id = 1; id <= 5; ++id) {
    auto out = Report("a", 1, id, ReportResult::kPreempted, 10 * id);
    EXPECT_THAT(Strs(out),
                ElementsAre("ended #" + std::to_string(id) + " 1/0 @a preempted",
                            "task 1/0 pending f=0",
                            "created #" + std::to_string(id + 1) + " 1/0 @a",
                            "task 1/0 running f=0", "ack #" + std::to_string(id) + " @a s1 ok",
                            "assign #" + std::to_string(id + 1) + " 1/0 @a s1"));
  }
  JobSummary j = JobOf(1);
  EXPECT_EQ(j.counters.preemptions, 5u);
  EXPECT_EQ(j.counters.failures, 0u);
  EXPECT_EQ(j.counters.attempts, 6u);
  // One failure still leaves one more try.
  auto out = Report("a", 1, 6, ReportResult::kFailed, 100);
  EXPECT_THAT(Strs(Only<TaskChanged>(out)),
              ElementsAre("task 1/0 pending f=1", "task 1/0 running f=1"));
  out = Report("a", 1, 7, ReportResult::kSucceeded, 110);
  EXPECT_THAT(Strs(out), ElementsAre("ended #7 1/0 @a succeeded",
                                     "task 1/0 succeeded f=1 commit #7 outputs=0",
                                     "job 1 succeeded", "ack #7 @a s1 ok"));
}

TEST_F(CoreTest, FailuresReachingMaxAttemptsFailTaskWhileOthersContinue) {
  Hello("a", 1, 2, 0);
  Submit(1, 2, 0, {}, /*max_attempts=*/2);  // #1 -> task 0, #2 -> task 1
  auto out = Report("a", 1, 1, ReportResult::kFailed, 10);
  EXPECT_THAT(Strs(out), ElementsAre("ended #1 1/0 @a failed", "task 1/0 pending f=1",
                                     "created #3 1/0 @a", "task 1/0 running f=1",
                                     "ack #1 @a s1 ok", "assign #3 1/0 @a s1"));
  out = Report("a", 1, 3, ReportResult::kTimedOut, 20);  // timed out counts as a failure
  EXPECT_THAT(Strs(out), ElementsAre("ended #3 1/0 @a timed_out", "task 1/0 failed f=2",
                                     "ack #3 @a s1 ok"));
  JobSummary j = JobOf(1);
  EXPECT_EQ(j.state, JobState::kRunning);
  EXPECT_EQ(j.failed, 1u);
  EXPECT_EQ(j.running, 1u);
  EXPECT_EQ(j.counters.failures, 2u);
  EXPECT_FALSE(s_.CurrentAttempt({1, 0}).has_value());
  out = Report("a", 1, 2, ReportResult::kSucceeded, 30);
  EXPECT_THAT(Strs(out), ElementsAre("ended #2 1/1 @a succeeded",
                                     "task 1/1 succeeded f=0 commit #2 outputs=0", "job 1 failed",
                                     "ack #2 @a s1 ok"));
  EXPECT_EQ(JobOf(1).state, JobState::kFailed);
}

TEST_F(CoreTest, MaxAttemptsOneFailsOnFirstFailure) {
  Hello("a", 1, 1, 0);
  Submit(1, 1, 0, {}, /*max_attempts=*/1);
  auto out = Report("a", 1, 1, ReportResult::kFailed, 10);
  EXPECT_THAT(Strs(out), ElementsAre("ended #1 1/0 @a failed", "task 1/0 failed f=1",
                                     "job 1 failed", "ack #1 @a s1 ok"));
}

TEST_F(CoreTest, TimeoutBackstopKillsAttempt) {
  Hello("a", 1, 1, 0);
  Submit(1, 1, 0, {}, 3, Millis{10000});
  // Heartbeats keep the worker alive; the backstop is started (0) + timeout + timeout_grace.
  for (int64_t t = 1000; t <= 29000; t += 1000) {
    Heartbeat("a", 1, t);
    EXPECT_THAT(TickAt(t), IsEmpty());
  }
  EXPECT_THAT(TickAt(29999), IsEmpty());
  auto out = TickAt(30000);
  EXPECT_THAT(Strs(out), ElementsAre("ended #1 1/0 @a timed_out", "task 1/0 pending f=1",
                                     "created #2 1/0 @a", "task 1/0 running f=1",
                                     "kill #1 @a s1 timed_out", "assign #2 1/0 @a s1"));
  EXPECT_EQ(JobOf(1).counters.failures, 1u);
  // The new attempt's clock starts at its own placement.
  Heartbeat("a", 1, 34000);
  EXPECT_THAT(TickAt(38000), IsEmpty());
  // A late report from the killed attempt is stale.
  out = Report("a", 1, 1, ReportResult::kSucceeded, 38001);
  EXPECT_THAT(Strs(out), ElementsAre("ack #1 @a s1 refused", "kill #1 @a s1 stale"));
}

TEST_F(CoreTest, NoTimeoutMeansNoBackstop) {
  Hello("a", 1, 1, 0);
  Submit(1, 1, 0);
  for (int64_t t = 1000; t <= 100000; t += 1000) {
    Heartbeat("a", 1, t);
    EXPECT_THAT(TickAt(t), IsEmpty());
  }
  EXPECT_EQ(s_.CurrentAttempt({1, 0}), 1u);
}

// ---------------------------------------------------------------------------------------------
// Cancel

TEST_F(CoreTest, CancelKillsRunningAndCancelsPending) {
  Hello("a", 1, 2, 0);
  Submit(1, 3, 0);
  Submit(2, 1, 0);
  auto out = Do(JobCancelled{1}, 10);
  EXPECT_THAT(Strs(out), ElementsAre("ended #1 1/0 @a cancelled", "task 1/0 cancelled f=0",
                                     "ended #2 1/1 @a cancelled", "task 1/1 cancelled f=0",
                                     "task 1/2 cancelled f=0", "job 1 cancelled",
                                     "created #3 2/0 @a", "task 2/0 running f=0",
                                     "kill #1 @a s1 cancelled", "kill #2 @a s1 cancelled",
                                     "assign #3 2/0 @a s1"));
  JobSummary j = JobOf(1);
  EXPECT_EQ(j.state, JobState::kCancelled);
  EXPECT_EQ(j.cancelled, 3u);
  EXPECT_EQ(j.running + j.pending, 0u);
  EXPECT_EQ(Worker("a").slots_busy, 1u);
  // Late reports for cancelled attempts are stale.
  out = Report("a", 1, 1, ReportResult::kSucceeded, 20, {Out("late")});
  EXPECT_THAT(Strs(out), ElementsAre("ack #1 @a s1 refused", "kill #1 @a s1 stale"));
  EXPECT_EQ(JobOf(1).succeeded, 0u);
  // Cancelling again, or cancelling a finished job: nothing.
  EXPECT_THAT(Do(JobCancelled{1}, 30), IsEmpty());
  Report("a", 1, 3, ReportResult::kSucceeded, 40);
  ASSERT_EQ(JobOf(2).state, JobState::kSucceeded);
  EXPECT_THAT(Do(JobCancelled{2}, 50), IsEmpty());
  EXPECT_EQ(JobOf(2).state, JobState::kSucceeded);
}

// ---------------------------------------------------------------------------------------------
// Restore

RestoredState SampleRestore() {
  RestoredState st;
  RestoredJob job;
  job.spec = JobSubmitted{1, 3, Resources{1, 0, 0}, 3, Millis{0}};
  job.counters = JobCounters{8, 1, 2, 1};
  job.workers_lost = {"old"};
  st.jobs.push_back(job);
  RestoredJob done;
  done.spec = JobSubmitted{2, 1, Resources{1, 0, 0}, 3, Millis{0}};
  done.state = JobState::kSucceeded;
  done.counters = JobCounters{1, 0, 0, 0};
  st.jobs.push_back(done);
  st.tasks = {{{1, 0}, TaskState::kSucceeded, 1},
              {{1, 1}, TaskState::kRunning, 0},
              {{1, 2}, TaskState::kRunning, 0},
              {{2, 0}, TaskState::kSucceeded, 0}};
  st.running = {{7, {1, 1}, "a"}, {8, {1, 2}, "b"}};
  st.next_attempt_id = 12;  // #9..#11 ended before the restart
  return st;
}

TEST_F(CoreTest, RestoreReadoptsAndExpiresOrphans) {
  s_.Restore(SampleRestore(), At(100000));
  EXPECT_EQ(s_.next_attempt_id(), 12u);
  JobSummary j = JobOf(1);
  EXPECT_EQ(j.state, JobState::kRunning);
  EXPECT_EQ(j.succeeded, 1u);
  EXPECT_EQ(j.running, 2u);
  EXPECT_EQ(j.counters, (JobCounters{8, 1, 2, 1}));
  EXPECT_EQ(j.workers_lost, 1u);
  EXPECT_EQ(JobOf(2).state, JobState::kSucceeded);
  EXPECT_EQ(s_.CurrentAttempt({1, 1}), 7u);
  EXPECT_TRUE(s_.Workers().empty());

  // b reports before saying hello: refused, and the orphan stays.
  auto out = Report("b", 5, 8, ReportResult::kSucceeded, 100500);
  EXPECT_THAT(Strs(out), ElementsAre("ack #8 @b s5 refused", "kill #8 @b s5 stale"));
  EXPECT_EQ(s_.CurrentAttempt({1, 2}), 8u);

  // a comes back holding #7: re-adopted, its slot counted.
  out = Hello("a", 1, 1, 101000, {7});
  EXPECT_THAT(out, IsEmpty());
  EXPECT_EQ(Worker("a").slots_busy, 1u);
  EXPECT_EQ(Worker("a").attempts_running, 1u);

  Heartbeat("a", 1, 104000);
  EXPECT_THAT(TickAt(104999), IsEmpty());
  out = TickAt(105000);  // b never came back
  EXPECT_THAT(Strs(out), ElementsAre("ended #8 1/2 @b lost", "task 1/2 pending f=0"));
  j = JobOf(1);
  EXPECT_EQ(j.counters.lost, 2u);
  EXPECT_EQ(j.workers_lost, 2u);
  EXPECT_EQ(j.pending, 1u);
  // The re-adopted attempt is no orphan: it survives past the deadline and reports normally.
  EXPECT_EQ(s_.CurrentAttempt({1, 1}), 7u);
  out = Report("a", 1, 7, ReportResult::kSucceeded, 105100, {Out("f")});
  EXPECT_THAT(Strs(out), ElementsAre("ended #7 1/1 @a succeeded",
                                     "task 1/1 succeeded f=0 commit #7 outputs=1",
                                     "created #12 1/2 @a", "task 1/2 running f=0",
                                     "ack #7 @a s1 ok", "assign #12 1/2 @a s1"));
  // b now returns too late: its #8 is stale.
  out = Hello("b", 6, 1, 105200, {8});
  EXPECT_THAT(Strs(out), ElementsAre("kill #8 @b s6 stale"));
  out = Report("a", 1, 12, ReportResult::kSucceeded, 105300);
  EXPECT_THAT(Strs(Only<JobChanged>(out)), ElementsAre("job 1 succeeded"));
  EXPECT_EQ(JobOf(1).counters.attempts, 9u);  // 8 restored + 1
}

TEST_F(CoreTest, RestoredAttemptNotHeldByItsWorkerIsLostAtHello) {
  s_.Restore(SampleRestore(), At(0));
  auto out = Hello("a", 1, 1, 10, {});
  EXPECT_THAT(Strs(out), ElementsAre("ended #7 1/1 @a lost", "task 1/1 pending f=0",
                                     "created #12 1/1 @a", "task 1/1 running f=0",
                                     "assign #12 1/1 @a s1"));
  // The other orphan is untouched until its own deadline.
  EXPECT_EQ(s_.CurrentAttempt({1, 2}), 8u);
}

TEST_F(CoreTest, RestoreOrphanCancelledBeforeItsWorkerReturns) {
  s_.Restore(SampleRestore(), At(0));
  auto out = Do(JobCancelled{1}, 10);
  // No worker is known, so no kill messages yet; the hello kills the attempts as stale.
  EXPECT_THAT(Strs(out), ElementsAre("ended #7 1/1 @a cancelled", "task 1/1 cancelled f=0",
                                     "ended #8 1/2 @b cancelled", "task 1/2 cancelled f=0",
                                     "job 1 cancelled"));
  out = Hello("a", 1, 1, 20, {7});
  EXPECT_THAT(Strs(out), ElementsAre("kill #7 @a s1 obsolete"));
  EXPECT_EQ(Worker("a").slots_busy, 0u);
}

// ---------------------------------------------------------------------------------------------
// Completion, counters, views, determinism

TEST_F(CoreTest, JobCompletesOnceWhenAllTasksSucceed) {
  Hello("a", 1, 3, 0);
  Submit(1, 3, 0);
  EXPECT_THAT(Only<JobChanged>(Report("a", 1, 1, ReportResult::kSucceeded, 1)), IsEmpty());
  EXPECT_THAT(Only<JobChanged>(Report("a", 1, 3, ReportResult::kSucceeded, 2)), IsEmpty());
  auto out = Report("a", 1, 2, ReportResult::kSucceeded, 3);
  EXPECT_THAT(Strs(Only<JobChanged>(out)), ElementsAre("job 1 succeeded"));
  JobSummary j = JobOf(1);
  EXPECT_EQ(j.state, JobState::kSucceeded);
  EXPECT_EQ(j.succeeded, 3u);
  EXPECT_EQ(Worker("a").slots_busy, 0u);
  EXPECT_EQ(Worker("a").attempts_running, 0u);
}

TEST_F(CoreTest, CountersAndViews) {
  Hello("b", 2, 1, 0);
  Hello("a", 1, 2, 0);
  Submit(1, 4, 0);  // #1 -> a (2 free), #2 -> a (tie a1 b1, by name), #3 -> b; 1/3 pending
  Submit(2, 1, 0);
  std::vector<JobSummary> jobs = s_.Jobs();
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].job, 1u);
  EXPECT_EQ(jobs[1].job, 2u);
  EXPECT_EQ(jobs[0].running, 3u);
  EXPECT_EQ(jobs[0].pending, 1u);
  EXPECT_EQ(jobs[1].pending, 1u);
  std::vector<WorkerView> ws = s_.Workers();
  ASSERT_EQ(ws.size(), 2u);
  EXPECT_EQ(ws[0].worker, "a");
  EXPECT_EQ(ws[0].slots_busy, 2u);
  EXPECT_EQ(ws[0].attempts_running, 2u);
  EXPECT_EQ(ws[0].capacity.cpus, 2u);
  EXPECT_EQ(ws[0].boot_id, "boot1");
  EXPECT_EQ(ws[1].worker, "b");
  EXPECT_EQ(ws[1].slots_busy, 1u);

  Report("a", 1, 1, ReportResult::kFailed, 1);     // -> #4 (1/0 again) on a
  Report("a", 1, 2, ReportResult::kPreempted, 2);  // -> #5 (1/1) on a
  Report("b", 2, 3, ReportResult::kSucceeded, 3);  // -> #6 (1/3) on b
  Heartbeat("a", 1, 4000);
  TickAt(5000);  // b lost: #6 lost, 1/3 pending again; a is full
  JobSummary j = JobOf(1);
  EXPECT_EQ(j.counters, (JobCounters{6, 1, 1, 1}));
  EXPECT_EQ(j.workers_lost, 1u);
  EXPECT_EQ(j.running, 2u);
  EXPECT_EQ(j.pending, 1u);
  EXPECT_EQ(j.succeeded, 1u);
  EXPECT_EQ(Worker("b").state, WorkerState::kLost);
  EXPECT_EQ(Worker("b").slots_busy, 0u);
  EXPECT_EQ(Worker("a").slots_busy, 2u);
  EXPECT_EQ(JobOf(2).counters, JobCounters{});
}

TEST_F(CoreTest, SameEventsGiveSameDecisions) {
  auto run = [] {
    Scheduler s{Options{Millis{5000}}};
    std::vector<std::string> all;
    auto apply = [&](const Event& e, int64_t ms) {
      for (const std::string& x : Strs(s.Apply(e, At(ms)))) all.push_back(x);
    };
    for (const char* w : {"w3", "w1", "w2", "w0"}) {
      apply(WorkerHello{w, static_cast<SessionId>(w[1]), "boot", Resources{2, 0, 0}, {}}, 0);
    }
    apply(JobSubmitted{3, 7, {}, 2, Millis{0}}, 0);
    apply(JobSubmitted{1, 5, {}, 2, Millis{0}}, 0);
    for (AttemptId id = 1; id <= 8; ++id) {
      for (const char* w : {"w0", "w1", "w2", "w3"}) {
        apply(AttemptReport{w, static_cast<SessionId>(w[1]), id,
                            id % 2 ? ReportResult::kFailed : ReportResult::kSucceeded, 0, {}, "",
                            std::nullopt, Millis{0}},
              10 * id);
      }
    }
    apply(WorkerHeartbeat{"w1", '1'}, 4000);
    apply(Tick{}, 5000);
    return all;
  };
  std::vector<std::string> first = run();
  EXPECT_EQ(first, run());
  EXPECT_GT(first.size(), 50u);
}

TEST(CoreTypes, ToStringWords) {
  EXPECT_STREQ(ToString(TaskState::kPending), "pending");
  EXPECT_STREQ(ToString(TaskState::kRunning), "running");
  EXPECT_STREQ(ToString(TaskState::kSucceeded), "succeeded");
  EXPECT_STREQ(ToString(TaskState::kFailed), "failed");
  EXPECT_STREQ(ToString(TaskState::kCancelled), "cancelled");
  EXPECT_STREQ(ToString(JobState::kRunning), "running");
  EXPECT_STREQ(ToString(JobState::kSucceeded), "succeeded");
  EXPECT_STREQ(ToString(JobState::kFailed), "failed");
  EXPECT_STREQ(ToString(JobState::kCancelled), "cancelled");
  EXPECT_STREQ(ToString(AttemptOutcome::kRunning), "running");
  EXPECT_STREQ(ToString(AttemptOutcome::kSucceeded), "succeeded");
  EXPECT_STREQ(ToString(AttemptOutcome::kFailed), "failed");
  EXPECT_STREQ(ToString(AttemptOutcome::kTimedOut), "timed_out");
  EXPECT_STREQ(ToString(AttemptOutcome::kPreempted), "preempted");
  EXPECT_STREQ(ToString(AttemptOutcome::kLost), "lost");
  EXPECT_STREQ(ToString(AttemptOutcome::kCancelled), "cancelled");
  EXPECT_STREQ(ToString(AttemptOutcome::kMachineFault), "machine_fault");
}

// ---------------------------------------------------------------------------------------------
// Data plane: late successes, machine faults, transfer counters, locality

// a runs task 1/0, goes silent past its lease (say its Wi-Fi dropped while it uploaded the
// outputs), and the task is rerun on b as attempt #2.
class CoreLateTest : public CoreTest {
 protected:
  void SetUp() override {
    Hello("a", 1, 1, 0);
    Submit(1, 1, 0);
    Hello("b", 2, 1, 3000);
    auto out = TickAt(5000);
    ASSERT_THAT(Strs(out), ElementsAre("lost a", "ended #1 1/0 @a lost", "task 1/0 pending f=0",
                                       "created #2 1/0 @b", "task 1/0 running f=0",
                                       "assign #2 1/0 @b s2"));
    ASSERT_EQ(JobOf(1).counters.lost, 1u);
  }
};

TEST_F(CoreLateTest, SuccessDeliveredAfterReconnectCommitsAndSupersedesTheRerun) {
  // a comes back (same process) still holding #1, finished: the hello kills it as stale (it no
  // longer runs anything there), but its report, sent right behind the hello, commits.
  auto out = Hello("a", 3, 1, 6000, {1});
  EXPECT_THAT(Strs(out), ElementsAre("kill #1 @a s3 stale"));
  AttemptReport r{"a", 3, 1, ReportResult::kSucceeded, 0, {Out("frame1.png")}};
  r.transfer.output_bytes = 10;
  out = Do(r, 6001);
  EXPECT_THAT(Strs(out), ElementsAre("ended #1 1/0 @a succeeded", "ended #2 1/0 @b cancelled",
                                     "task 1/0 succeeded f=0 commit #1 outputs=1",
                                     "job 1 succeeded", "kill #2 @b s2 superseded",
                                     "ack #1 @a s3 ok"));
  EXPECT_TRUE(Only<AttemptEnded>(out).at(0).late);
  EXPECT_FALSE(Only<AttemptEnded>(out).at(1).late);
  JobSummary j = JobOf(1);
  EXPECT_EQ(j.counters.lost, 0u);  // it was not lost after all
  EXPECT_EQ(j.counters.lost_work, Millis{0});
  EXPECT_EQ(j.counters.transfer.output_bytes, 10u);
  EXPECT_EQ(Worker("b").slots_busy, 0u);
  // b's own success now comes too late: refused, nothing committed twice.
  out = Report("b", 2, 2, ReportResult::kSucceeded, 6100, {Out("other.png")});
  EXPECT_THAT(Strs(out), ElementsAre("ack #2 @b s2 refused", "kill #2 @b s2 stale"));
}

TEST_F(CoreLateTest, OnlyASuccessFromTheSameWorkerWhileTheTaskIsOpenCounts) {
  Hello("a", 3, 1, 6000);
  Hello("c", 4, 1, 6000);
  // Not a success: refused.
  auto out = Report("a", 3, 1, ReportResult::kFailed, 6001);
  EXPECT_THAT(Strs(out), ElementsAre("ack #1 @a s3 refused", "kill #1 @a s3 stale"));
  // Another worker cannot claim it.
  out = Report("c", 4, 1, ReportResult::kSucceeded, 6002, {Out("x")});
  EXPECT_THAT(Strs(out), ElementsAre("ack #1 @c s4 refused", "kill #1 @c s4 stale"));
  // An old session of a cannot either.
  out = Report("a", 1, 1, ReportResult::kSucceeded, 6003, {Out("x")});
  EXPECT_THAT(Strs(out), ElementsAre("ack #1 @a s1 refused", "kill #1 @a s1 stale"));
  // Once the rerun succeeded, the late one is refused.
  Report("b", 2, 2, ReportResult::kSucceeded, 6004, {Out("b")});
  out = Report("a", 3, 1, ReportResult::kSucceeded, 6005, {Out("x")});
  EXPECT_THAT(Strs(out), ElementsAre("ack #1 @a s3 refused", "kill #1 @a s3 stale"));
  EXPECT_EQ(JobOf(1).counters.lost, 1u);
}

TEST_F(CoreLateTest, LateSuccessOfAPendingTaskCommits) {
  // b is lost too: the task waits, pending, when a's success arrives.
  TickAt(8001);
  ASSERT_EQ(JobOf(1).pending, 1u);
  Hello("a", 3, 1, 9000);  // takes the pending task at once as #3...
  auto out = Report("a", 3, 1, ReportResult::kSucceeded, 9001, {Out("x")});
  // ...which the late success of #1 supersedes.
  EXPECT_THAT(Strs(out), ElementsAre("ended #1 1/0 @a succeeded", "ended #3 1/0 @a cancelled",
                                     "task 1/0 succeeded f=0 commit #1 outputs=1",
                                     "job 1 succeeded", "kill #3 @a s3 superseded",
                                     "ack #1 @a s3 ok"));
}

TEST_F(CoreLateTest, SurvivesACoordinatorRestartThroughTheStore) {
  RestoredState st;
  st.jobs.push_back(RestoredJob{JobSubmitted{1, 1}, JobState::kRunning, JobOf(1).counters, {"a"}});
  st.tasks.push_back(RestoredTask{{1, 0}, TaskState::kRunning, 0});
  st.running.push_back(RestoredAttempt{2, {1, 0}, "b"});
  st.lost.push_back(RestoredLost{1, {1, 0}, "a", Millis{4000}});
  st.next_attempt_id = 3;
  Scheduler fresh{Options{Millis{5000}}};
  fresh.Restore(st, At(10000));
  (void)fresh.Apply(WorkerHello{"a", 7, "boot1", Resources{}, {}}, At(10001));
  auto out = fresh.Apply(AttemptReport{"a", 7, 1, ReportResult::kSucceeded, 0, {Out("x")}},
                         At(10002));
  EXPECT_THAT(Strs(out), ElementsAre("ended #1 1/0 @a succeeded", "ended #2 1/0 @b cancelled",
                                     "task 1/0 succeeded f=0 commit #1 outputs=1",
                                     "job 1 succeeded", "ack #1 @a s7 ok"));
}

TEST_F(CoreTest, AWorkerBackWithItsLostAttemptGetsItBackWhileTheTaskWaits) {
  Hello("a", 1, 1, 0);
  Submit(1, 1, 0);
  TickAt(5000);  // a lost; nobody else can take the task
  ASSERT_EQ(JobOf(1).pending, 1u);
  auto out = Hello("a", 2, 1, 6000, {1});
  EXPECT_THAT(Strs(out), ElementsAre("created #1 1/0 @a", "task 1/0 running f=0"));
  EXPECT_TRUE(Only<AttemptCreated>(out).at(0).revived);
  EXPECT_EQ(JobOf(1).counters.lost, 0u);
  EXPECT_EQ(JobOf(1).counters.attempts, 1u);
  EXPECT_EQ(Worker("a").slots_busy, 1u);
  out = Report("a", 2, 1, ReportResult::kSucceeded, 6001, {Out("x")});
  EXPECT_THAT(Strs(out), ElementsAre("ended #1 1/0 @a succeeded",
                                     "task 1/0 succeeded f=0 commit #1 outputs=1",
                                     "job 1 succeeded", "ack #1 @a s2 ok"));
}

TEST_F(CoreTest, ALostAttemptIsNotRevivedByANewProcessOrOnceTheTaskMovedOn) {
  Hello("a", 1, 1, 0);
  Submit(1, 1, 0);
  TickAt(5000);
  // A new boot id: its processes are gone, whatever it says it holds.
  auto out = Hello("a", 2, 1, 6000, {1}, "boot2");
  EXPECT_THAT(Strs(out), ElementsAre("created #2 1/0 @a", "task 1/0 running f=0",
                                     "kill #1 @a s2 stale", "assign #2 1/0 @a s2"));
}

TEST_F(CoreTest, ARestartedWorkerDeliveringAnAttemptFromItsOutboxGetsItBack) {
  Hello("a", 1, 1, 0);
  Submit(1, 1, 0);
  Do(SessionClosed{"a", 1}, 500);  // SIGKILLed
  WorkerHello h{"a", 2, "boot2", Resources{}, {1}};
  h.delivering = {1};
  auto out = Do(h, 1000);
  // Its processes are gone (new boot id), but attempt #1 finished and is being delivered.
  EXPECT_THAT(Strs(out), ElementsAre("ended #1 1/0 @a lost", "task 1/0 pending f=0",
                                     "created #1 1/0 @a", "task 1/0 running f=0"));
  EXPECT_EQ(JobOf(1).counters.attempts, 1u);
  EXPECT_EQ(JobOf(1).counters.lost, 0u);
}

TEST_F(CoreTest, MachineFaultRequeuesWithoutCountingAgainstTheTask) {
  Hello("a", 1, 1);
  Hello("b", 2, 1);
  Submit(1, 1, 0, {}, /*max_attempts=*/1);
  // The disk-full worker says it accepts nothing first, then reports.
  Do(OwnerStateChanged{"a", 1, false, "suspend", "disk full", {}}, 5);
  auto out = Report("a", 1, 1, ReportResult::kMachineFault, 10);
  EXPECT_THAT(Strs(out), ElementsAre("ended #1 1/0 @a machine_fault", "task 1/0 pending f=0",
                                     "created #2 1/0 @b", "task 1/0 running f=0",
                                     "ack #1 @a s1 ok", "assign #2 1/0 @b s2"));
  JobSummary j = JobOf(1);
  EXPECT_EQ(j.counters.machine_faults, 1u);
  EXPECT_EQ(j.counters.failures, 0u);
  Report("b", 2, 2, ReportResult::kSucceeded, 20, {Out("x")});
  EXPECT_EQ(JobOf(1).state, JobState::kSucceeded);  // max_attempts 1, yet it succeeds
}

TEST_F(CoreTest, AMachineFaultKeepsTheTaskOffThatWorkerForAWhile) {
  Hello("a", 1, 1);
  Submit(1, 2);
  Report("a", 1, 1, ReportResult::kMachineFault, 10);  // task 1/0 filled a's disk
  // a takes other work (task 1/1) but not 1/0, which waits for another worker...
  EXPECT_EQ(s_.CurrentAttempt({1, 1}), 2u);
  Report("a", 1, 2, ReportResult::kSucceeded, 20, {Out("x")});
  EXPECT_EQ(JobOf(1).pending, 1u);
  Heartbeat("a", 1, 599000);
  EXPECT_THAT(Strs(TickAt(600000)), IsEmpty());
  // ...or until the avoidance ends (Options::machine_fault_avoid, 10 min after the fault).
  auto out = TickAt(600010);
  EXPECT_THAT(Strs(Only<AssignAttempt>(out)), ElementsAre("assign #3 1/0 @a s1"));
}

TEST_F(CoreTest, ATaskThatFillsEveryDiskFailsAfterMaxMachineFaults) {
  for (int i = 0; i < 5; ++i) Hello("w" + std::to_string(i), 1 + i, 1);
  Submit(1, 1);
  // Each fault moves the task to a worker it has not faulted on; the fifth fault fails it.
  for (AttemptId id = 1; id <= 5; ++id) {
    const std::string worker = "w" + std::to_string(id - 1);
    auto out = Report(worker, id, id, ReportResult::kMachineFault, 10 * id);
    if (id < 5) {
      EXPECT_EQ(JobOf(1).state, JobState::kRunning);
    } else {
      EXPECT_THAT(Strs(out), ::testing::Contains("task 1/0 failed f=0"));
    }
  }
  EXPECT_EQ(JobOf(1).state, JobState::kFailed);
  EXPECT_EQ(JobOf(1).counters.machine_faults, 5u);
  EXPECT_EQ(JobOf(1).counters.failures, 0u);
}

TEST_F(CoreTest, TransferCountersSumOverReports) {
  Hello("a", 1, 2);
  Submit(1, 2);
  AttemptReport r{"a", 1, 1, ReportResult::kSucceeded, 0, {Out("x")}};
  r.transfer = Transfer{100, 100, 0, 0, 5, 1, 0};
  Do(r, 10);
  r.attempt = 2;
  r.result = ReportResult::kFailed;
  r.outputs.clear();
  r.transfer = Transfer{100, 0, 60, 40, 0, 0, 1};
  Do(r, 11);
  EXPECT_EQ(JobOf(1).counters.transfer, (Transfer{200, 100, 60, 40, 5, 1, 1}));
}

// Timing is carried from each report to its AttemptEnded record, whatever the outcome, and
// changes nothing else: a second scheduler given the same reports without timing decides the same.
TEST_F(CoreTest, TimingIsCarriedToTheAttemptRecordAndDecidesNothing) {
  Scheduler plain{Options{Millis{5000}}};
  auto both = [&](const Event& timed, const Event& untimed, int64_t ms) {
    auto out = Do(timed, ms);
    EXPECT_EQ(Strs(out), Strs(plain.Apply(untimed, At(ms))));
    return out;
  };
  const Event hello = WorkerHello{"a", 1, "boot1", Resources{2, 0, 0}, {}};
  const Event submit = JobSubmitted{1, 2, {}, 3, Millis{0}};
  both(hello, hello, 0);
  both(submit, submit, 0);
  AttemptReport ok{"a", 1, 1, ReportResult::kSucceeded, 0, {Out("x")}};
  AttemptReport pre{"a", 1, 2, ReportResult::kPreempted, 0, {}};
  AttemptReport ok_timed = ok, pre_timed = pre;
  ok_timed.timing = AttemptTiming{1200, 34000, 560, false};
  pre_timed.timing = AttemptTiming{7, 800, 90, true};
  auto ended = Only<AttemptEnded>(both(ok_timed, ok, 10));
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].timing, ok_timed.timing);
  ended = Only<AttemptEnded>(both(pre_timed, pre, 11));
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].timing, pre_timed.timing);
}

class CoreLocalityTest : public CoreTest {
 protected:
  static BlobRef Blob(char c, uint64_t size) { return BlobRef{std::string(64, c), size}; }
  std::vector<Decision> HelloCached(const std::string& worker, SessionId session,
                                    std::vector<BlobRef> cached, int64_t ms = 0) {
    WorkerHello h{worker, session, "boot1", Resources{}, {}};
    h.cached = std::move(cached);
    return Do(h, ms);
  }
  std::vector<Decision> SubmitWithInputs(JobId job, uint32_t tasks, std::vector<BlobRef> inputs,
                                         int64_t ms = 0) {
    JobSubmitted j{job, tasks};
    j.inputs = std::move(inputs);
    return Do(j, ms);
  }
};

TEST_F(CoreLocalityTest, PrefersTheWorkerThatHoldsTheInputs) {
  HelloCached("a", 1, {});
  HelloCached("b", 2, {Blob('x', 1 << 30)});
  // By name "a" would come first; b holds the 1 GiB input.
  auto out = SubmitWithInputs(1, 1, {Blob('x', 1 << 30)});
  EXPECT_THAT(Strs(Only<AssignAttempt>(out)), ElementsAre("assign #1 1/0 @b s2"));
  EXPECT_EQ(Worker("b").cache_bytes, 1u << 30);
  EXPECT_EQ(Worker("b").cache_blobs, 1u);
}

TEST_F(CoreLocalityTest, NoInputsOrNoHolderKeepsThePolicyOrder) {
  HelloCached("a", 1, {});
  HelloCached("b", 2, {Blob('x', 100)});
  auto out = SubmitWithInputs(1, 1, {});
  EXPECT_THAT(Strs(Only<AssignAttempt>(out)), ElementsAre("assign #1 1/0 @a s1"));
  out = SubmitWithInputs(2, 1, {Blob('y', 100)});
  EXPECT_THAT(Strs(Only<AssignAttempt>(out)), ElementsAre("assign #2 2/0 @b s2"));
}

TEST_F(CoreLocalityTest, EvictionIsHeardAndTheInputsFollowTheFirstPlacement) {
  HelloCached("a", 1, {});
  HelloCached("b", 2, {Blob('x', 1000)});
  Do(CacheChanged{"b", 2, {}, {std::string(64, 'x')}}, 1);
  EXPECT_EQ(Worker("b").cache_blobs, 0u);
  // Nobody holds it: a by name. The next task of the job then prefers a, which is fetching it.
  auto out = SubmitWithInputs(1, 2, {Blob('x', 1000)}, 2);
  EXPECT_THAT(Strs(Only<AssignAttempt>(out)), ElementsAre("assign #1 1/0 @a s1",
                                                          "assign #2 1/1 @b s2"));
  Report("a", 1, 1, ReportResult::kSucceeded, 3, {Out("o")});
  Report("b", 2, 2, ReportResult::kSucceeded, 4, {Out("o")});
  out = SubmitWithInputs(2, 1, {Blob('x', 1000)}, 5);
  EXPECT_THAT(Strs(Only<AssignAttempt>(out)), ElementsAre("assign #3 2/0 @a s1"));
  // A stale session's change is ignored.
  Do(CacheChanged{"a", 99, {}, {std::string(64, 'x')}}, 6);
  Do(CacheChanged{"b", 2, {Blob('z', 5)}, {}}, 7);
  EXPECT_EQ(Worker("b").cache_bytes, 5u);
}

// ---------------------------------------------------------------------------------------------
// Owners: not accepting, suspensions, checkpoints, lost work

class CoreOwnerTest : public CoreTest {
 protected:
  std::vector<Decision> Owner(const std::string& worker, SessionId session, bool accepting,
                              int64_t ms, std::vector<AttemptId> suspended = {}) {
    return Do(OwnerStateChanged{worker, session, accepting, accepting ? "run" : "suspend",
                                "test", std::move(suspended)},
              ms);
  }
  std::vector<Decision> Checkpoint(const std::string& worker, SessionId session,
                                   AttemptId attempt, int64_t ms, size_t files = 1) {
    std::vector<OutputFile> f;
    for (size_t i = 0; i < files; ++i) f.push_back(Out("c" + std::to_string(i)));
    return Do(CheckpointSaved{worker, session, attempt, std::move(f)}, ms);
  }
  std::vector<Decision> Preempt(const std::string& worker, SessionId session, AttemptId attempt,
                                int64_t ms, std::optional<size_t> checkpoint_files,
                                Millis lost) {
    AttemptReport r;
    r.worker = worker;
    r.session = session;
    r.attempt = attempt;
    r.result = ReportResult::kPreempted;
    if (checkpoint_files) {
      r.checkpoint.emplace();
      for (size_t i = 0; i < *checkpoint_files; ++i) r.checkpoint->push_back(Out("k"));
    }
    r.lost = lost;
    return Do(r, ms);
  }
};

TEST_F(CoreOwnerTest, NotAcceptingWorkerGetsNoWorkUntilItAcceptsAgain) {
  Hello("a", 1, 2);
  Owner("a", 1, false, 10);
  EXPECT_THAT(Only<AssignAttempt>(Submit(1, 2, 20)), IsEmpty());
  EXPECT_FALSE(Worker("a").accepting);
  EXPECT_EQ(Worker("a").owner_state, "suspend");
  // Pending tasks that the worker could fit are not "fits no worker": it is only busy.
  EXPECT_FALSE(JobOf(1).fits_no_worker);
  EXPECT_THAT(Strs(Only<AssignAttempt>(Owner("a", 1, true, 30))),
              ElementsAre("assign #1 1/0 @a s1", "assign #2 1/1 @a s1"));
}

TEST_F(CoreOwnerTest, HelloThatDoesNotAcceptGetsNoWork) {
  Submit(1, 1);
  WorkerHello h{"a", 1, "boot1", Resources{4, 0, 0}, {}};
  h.accepting = false;
  EXPECT_THAT(Only<AssignAttempt>(Do(h, 0)), IsEmpty());
  // Another worker that accepts takes it.
  EXPECT_THAT(Strs(Only<AssignAttempt>(Hello("b", 2, 1, 5))), ElementsAre("assign #1 1/0 @b s2"));
}

TEST_F(CoreOwnerTest, OwnerStateFromAnOldSessionIsIgnored) {
  Hello("a", 1, 1);
  Hello("a", 2, 1, 10);  // same boot, new session replaces the old one
  Owner("a", 1, false, 20);
  EXPECT_TRUE(Worker("a").accepting);
}

TEST_F(CoreOwnerTest, SuspensionsAreCountedOncePerListedRunningAttempt) {
  Submit(1, 2);
  Hello("a", 1, 2);  // attempts 1 and 2
  auto out = Owner("a", 1, false, 10, {1, 2, 2, 99});
  EXPECT_THAT(Strs(out), ElementsAre("suspended #1 1/0", "suspended #2 1/1"));
  EXPECT_EQ(JobOf(1).counters.suspensions, 2u);
  // Resumed: no new suspension; a stale session's list counts nothing.
  EXPECT_THAT(Owner("a", 1, true, 20), IsEmpty());
  EXPECT_THAT(Do(OwnerStateChanged{"a", 9, false, "suspend", "x", {1}}, 30), IsEmpty());
  EXPECT_EQ(JobOf(1).counters.suspensions, 2u);
  // Suspended attempts keep their leases while the worker heartbeats.
  Heartbeat("a", 1, 4000);
  EXPECT_THAT(Only<WorkerLost>(TickAt(8000)), IsEmpty());
}

TEST_F(CoreOwnerTest, VacatedAttemptIsRequeuedAtOnceWithItsCheckpointAndLostWork) {
  Submit(1, 1, 0, {}, /*max_attempts=*/1);
  Hello("a", 1, 1);
  Hello("b", 2, 1);
  Owner("a", 1, false, 5);
  auto out = Preempt("a", 1, 1, 10, 2, Millis{1234});
  EXPECT_THAT(Strs(out), ElementsAre("checkpoint 1/0 #1 files=2", "ended #1 1/0 @a preempted",
                                     "task 1/0 pending f=0", "created #2 1/0 @b",
                                     "task 1/0 running f=0", "ack #1 @a s1 ok",
                                     "assign #2 1/0 @b s2"));
  EXPECT_EQ(Only<AttemptEnded>(out)[0].lost, Millis{1234});
  EXPECT_EQ(JobOf(1).counters.lost_work, Millis{1234});
  EXPECT_EQ(JobOf(1).counters.preemptions, 1u);
  EXPECT_EQ(JobOf(1).counters.failures, 0u);
}

TEST_F(CoreOwnerTest, TaskPreemptedTwentyTimesStillSucceeds) {
  Submit(1, 1, 0, {}, /*max_attempts=*/1);
  Hello("a", 1, 1);
  AttemptId id = 1;
  for (int i = 0; i < 20; ++i) {
    auto out = Preempt("a", 1, id, 10 + i, std::nullopt, Millis{10});
    auto assigned = Only<AssignAttempt>(out);
    ASSERT_EQ(assigned.size(), 1u) << "round " << i;
    id = assigned[0].attempt;
  }
  Report("a", 1, id, ReportResult::kSucceeded, 100, {Out("x")});
  EXPECT_EQ(JobOf(1).state, JobState::kSucceeded);
  EXPECT_EQ(JobOf(1).counters.preemptions, 20u);
  EXPECT_EQ(JobOf(1).counters.lost_work, Millis{200});
}

TEST_F(CoreOwnerTest, CheckpointFromCurrentAttemptIsRecordedAndStaleOneKilled) {
  Submit(1, 1);
  Hello("a", 1, 1);
  EXPECT_THAT(Strs(Checkpoint("a", 1, 1, 10, 3)), ElementsAre("checkpoint 1/0 #1 files=3"));
  // An empty checkpoint is a checkpoint too (the task cleared its dir).
  EXPECT_THAT(Strs(Checkpoint("a", 1, 1, 11, 0)), ElementsAre("checkpoint 1/0 #1 files=0"));
  EXPECT_THAT(Strs(Checkpoint("a", 2, 1, 12)), ElementsAre("kill #1 @a s2 stale"));
  EXPECT_THAT(Strs(Checkpoint("b", 1, 1, 13)), ElementsAre("kill #1 @b s1 stale"));
  Report("a", 1, 1, ReportResult::kSucceeded, 20, {Out("x")});
  EXPECT_THAT(Strs(Checkpoint("a", 1, 1, 30)), ElementsAre("kill #1 @a s1 stale"));
}

TEST_F(CoreOwnerTest, LostWorkerLosesWorkSinceItsLastCheckpointUntilItsLastHeartbeat) {
  Submit(1, 2);
  Hello("a", 1, 2, 1000);   // attempts 1 and 2 start at 1000
  Checkpoint("a", 1, 1, 3000);  // attempt 1 saved progress at 3000
  Heartbeat("a", 1, 4000);
  auto out = TickAt(9000);  // silent since 4000: lost
  auto ended = Only<AttemptEnded>(out);
  ASSERT_EQ(ended.size(), 2u);
  EXPECT_EQ(ended[0].lost, Millis{1000});  // 3000 -> 4000
  EXPECT_EQ(ended[1].lost, Millis{3000});  // 1000 -> 4000
  EXPECT_EQ(JobOf(1).counters.lost_work, Millis{4000});
}

TEST_F(CoreOwnerTest, FrozenTimeDoesNotCountTowardTheTimeoutBackstop) {
  // timeout 10 s, backstop at timeout + 20 s grace = 30 s of running time.
  Submit(1, 1, 0, {}, 3, Millis{10000});
  Hello("a", 1, 1);
  Owner("a", 1, false, 1000, {1});  // frozen at 1 s
  for (int64_t t = 2000; t <= 60000; t += 2000) Heartbeat("a", 1, t);
  EXPECT_THAT(Only<KillAttempt>(TickAt(60000)), IsEmpty()) << "killed while frozen";
  Owner("a", 1, true, 60000);  // thawed after 59 s frozen: 1 s of running so far
  Heartbeat("a", 1, 62000);
  EXPECT_THAT(Only<KillAttempt>(TickAt(62000)), IsEmpty());
  for (int64_t t = 64000; t <= 88000; t += 2000) Heartbeat("a", 1, t);
  EXPECT_THAT(Only<KillAttempt>(TickAt(88000)), IsEmpty());
  Heartbeat("a", 1, 89000);
  EXPECT_THAT(Strs(Only<KillAttempt>(TickAt(89000))), ElementsAre("kill #1 @a s1 timed_out"));
}

TEST_F(CoreOwnerTest, RestartedCoordinatorLearnsFrozenAttemptsFromHello) {
  Submit(1, 1, 0, {}, 3, Millis{10000});
  Hello("a", 1, 1);  // attempt 1 starts at 0
  RestoredState st;
  st.jobs.push_back(RestoredJob{JobSubmitted{1, 1, {}, 3, Millis{10000}}, JobState::kRunning, {}, {}});
  st.tasks.push_back(RestoredTask{{1, 0}, TaskState::kRunning, 0});
  st.running.push_back(RestoredAttempt{1, {1, 0}, "a"});
  st.next_attempt_id = 2;
  Scheduler restarted{Options{Millis{5000}}};
  restarted.Restore(st, At(1000));
  WorkerHello h{"a", 2, "boot1", Resources{1, 0, 0}, {1}};
  h.accepting = false;
  h.frozen = {1};
  EXPECT_THAT(restarted.Apply(h, At(1000)), IsEmpty());
  for (int64_t t = 2000; t <= 60000; t += 2000) {
    (void)restarted.Apply(WorkerHeartbeat{"a", 2}, At(t));
    EXPECT_THAT(Only<KillAttempt>(restarted.Apply(Tick{}, At(t))), IsEmpty()) << "at " << t;
  }
  // Thawed at 60 s: 0 s of running so far, so the backstop comes 30 s later.
  (void)restarted.Apply(OwnerStateChanged{"a", 2, true, "run", "", {}}, At(60000));
  (void)restarted.Apply(WorkerHeartbeat{"a", 2}, At(89000));
  EXPECT_THAT(Only<KillAttempt>(restarted.Apply(Tick{}, At(89000))), IsEmpty());
  (void)restarted.Apply(WorkerHeartbeat{"a", 2}, At(90000));
  EXPECT_THAT(Strs(Only<KillAttempt>(restarted.Apply(Tick{}, At(90000)))),
              ElementsAre("kill #1 @a s2 timed_out"));
}

// Placement is work-conserving under any mix of events: after every Apply, no pending task
// fits on a connected, accepting worker with free slots (a stale placement index would leave
// tasks pending next to a free slot). Random events, fixed seeds; each seed replays exactly.
// The one deliberate exception: a job's task may wait for another worker than one the job failed
// on, and an unhealthy worker takes nothing (see "Health" in core/scheduler.h).
TEST(CoreRandomTest, PlacementNeverLeavesATaskPendingNextToAFreeSlot) {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    SCOPED_TRACE(::testing::Message() << "seed " << seed);
    std::mt19937_64 rng(seed);
    auto pick = [&](uint64_t n) { return static_cast<uint64_t>(rng() % n); };
    // FIFO: the default policy deliberately leaves a slow worker idle in a job's tail.
    Options fifo{Millis{5000}};
    fifo.policy = Policy::Fifo();
    Scheduler s{fifo};
    std::map<JobId, uint32_t> job_cpus;
    std::map<std::string, SessionId> session;     // current session per worker
    std::vector<AssignAttempt> running;            // assigned, not yet reported
    std::set<std::pair<JobId, std::string>> failed_on;  // (job, worker) of failed attempts
    SessionId next_session = 1;
    JobId next_job = 1;
    int64_t now = 0;
    const std::vector<std::string> names = {"a", "b", "c", "d", "e"};
    for (int step = 0; step < 400; ++step) {
      now += static_cast<int64_t>(pick(300));
      Event e = Tick{};
      const std::string w = names[pick(names.size())];
      switch (pick(9)) {
        case 0: {
          const uint32_t cpus = 1 + static_cast<uint32_t>(pick(3));
          job_cpus[next_job] = cpus;
          e = JobSubmitted{next_job++, 1 + static_cast<uint32_t>(pick(6)), Resources{cpus, 0, 0},
                           2, Millis{0}};
          break;
        }
        case 1: {
          session[w] = next_session++;
          WorkerHello h{w, session[w], "boot-" + w, Resources{1 + static_cast<uint32_t>(pick(4)), 0, 0}, {}};
          for (const AssignAttempt& a : running) {
            if (a.worker == w) h.held.push_back(a.attempt);
          }
          h.accepting = pick(4) != 0;
          e = h;
          break;
        }
        case 2:
          if (session.count(w)) e = OwnerStateChanged{w, session[w], pick(2) == 0, "x", "y", {}};
          break;
        case 3:
          if (session.count(w)) e = SessionClosed{w, session[w]};
          break;
        case 4: case 5: case 6:
          if (!running.empty()) {
            const size_t k = pick(running.size());
            const AssignAttempt a = running[k];
            running.erase(running.begin() + static_cast<long>(k));
            const ReportResult r = pick(3) == 0 ? ReportResult::kPreempted
                                   : pick(4) == 0 ? ReportResult::kFailed
                                                  : ReportResult::kSucceeded;
            AttemptReport rep{a.worker, a.session, a.attempt, r, 0, {}, "", std::nullopt, Millis{0}};
            if (r == ReportResult::kSucceeded) rep.outputs = {Out("o")};
            e = rep;
          }
          break;
        case 7:
          if (session.count(w)) e = WorkerHeartbeat{w, session[w]};
          break;
        default:
          break;  // Tick
      }
      for (const Decision& d : s.Apply(e, At(now))) {
        if (const auto* a = std::get_if<AssignAttempt>(&d)) running.push_back(*a);
        if (const auto* x = std::get_if<AttemptEnded>(&d);
            x != nullptr && x->outcome == AttemptOutcome::kFailed) {
          failed_on.insert({x->task.job, x->worker});
        }
      }
      // Attempts no longer running (lost, killed) leave `running` when the core says so.
      std::erase_if(running, [&](const AssignAttempt& a) {
        const auto cur = s.CurrentAttempt(a.task);
        return !cur || *cur != a.attempt;
      });
      for (const JobSummary& j : s.Jobs()) {
        if (j.pending == 0) continue;
        for (const WorkerView& v : s.Workers()) {
          const bool open = v.state == WorkerState::kConnected && v.accepting &&
                            v.unhealthy.empty() && failed_on.count({j.job, v.worker}) == 0;
          const uint32_t free = v.capacity.cpus > v.slots_busy ? v.capacity.cpus - v.slots_busy : 0;
          // A connected worker whose session closed is kDisconnected, so `open` covers it.
          ASSERT_FALSE(open && free >= job_cpus[j.job])
              << "step " << step << ": job " << j.job << " has " << j.pending
              << " pending tasks of " << job_cpus[j.job] << " cpus while " << v.worker << " has "
              << free << " free slots";
        }
      }
    }
  }
}

TEST_F(CoreOwnerTest, FailedAndSucceededAttemptsLoseNothing) {
  Submit(1, 2);
  Hello("a", 1, 2);
  AttemptReport r{"a", 1, 1, ReportResult::kFailed, 1, {}, "exit 1", std::nullopt, Millis{0}};
  r.lost = Millis{500};  // ignored: only preemptions carry lost work
  auto out = Do(r, 10);
  EXPECT_EQ(Only<AttemptEnded>(out)[0].lost, Millis{0});
  EXPECT_EQ(JobOf(1).counters.lost_work, Millis{0});
}

}  // namespace
}  // namespace idlepool::core

// ---------------------------------------------------------------------------------------------
// Leaving (the owner stopped the worker)

namespace idlepool::core {
namespace {

TEST_F(CoreTest, LeavingVacatesListedAttemptsAtOnceAndTakesNoMoreWork) {
  Hello("a", 1, 2, 0);
  Hello("b", 2, 1, 0);
  Submit(1, 3, 0);  // most free slots first: #1 1/0 @a, #2 1/1 @a, #3 1/2 @b
  ASSERT_EQ(Worker("a").attempts_running, 2u);
  // a finished #2 (its report is on the way) and vacated #1.
  auto out = Do(WorkerLeaving{"a", 1, {1}}, 100);
  EXPECT_THAT(Strs(out), ElementsAre("ended #1 1/0 @a preempted", "task 1/0 pending f=0"));
  EXPECT_EQ(Worker("a").state, WorkerState::kLeft);
  // The requeued task waits for a worker that is not leaving, even though a has a free slot.
  out = Report("b", 2, 3, ReportResult::kSucceeded, 200);
  EXPECT_THAT(Strs(Only<AssignAttempt>(out)), ElementsAre("assign #4 1/0 @b s2"));
  // The report of the attempt it finished before leaving is still accepted.
  out = Report("a", 1, 2, ReportResult::kSucceeded, 300);
  EXPECT_THAT(Strs(Only<AckReport>(out)), ElementsAre("ack #2 @a s1 ok"));
  JobSummary j = JobOf(1);
  EXPECT_EQ(j.counters.preemptions, 1u);
  EXPECT_EQ(j.counters.failures, 0u);
  EXPECT_EQ(j.counters.lost, 0u);
  EXPECT_EQ(j.workers_lost, 0u);
}

TEST_F(CoreTest, LeftWorkerOwingNothingIsNeverDeclaredLost) {
  Hello("a", 1, 1, 0);
  Do(WorkerLeaving{"a", 1, {}}, 10);
  Do(SessionClosed{"a", 1}, 20);
  EXPECT_THAT(TickAt(60'000), IsEmpty());
  EXPECT_EQ(Worker("a").state, WorkerState::kLeft);
  // It can come back.
  Submit(1, 1, 60'000);
  auto out = Hello("a", 2, 1, 60'001, {}, "boot2");
  EXPECT_THAT(Strs(Only<AssignAttempt>(out)), ElementsAre("assign #1 1/0 @a s2"));
}

TEST_F(CoreTest, LeftWorkerStillOwingAReportIsLostAfterTheLease) {
  Hello("a", 1, 1, 0);
  Submit(1, 1, 0);                      // #1 on a
  Do(WorkerLeaving{"a", 1, {}}, 10);    // #1 finished; its report never arrives
  EXPECT_THAT(TickAt(5009), IsEmpty());
  auto out = TickAt(5010);
  EXPECT_THAT(Strs(out), ElementsAre("lost a", "ended #1 1/0 @a lost", "task 1/0 pending f=0"));
}

TEST_F(CoreTest, LeavingFromAnOldSessionOrForAnotherWorkersAttemptIsIgnored) {
  Hello("a", 1, 1, 0);
  Hello("b", 2, 1, 0);
  Submit(1, 2, 0);  // #1 @a, #2 @b
  EXPECT_THAT(Do(WorkerLeaving{"a", 99, {1}}, 10), IsEmpty());  // stale session
  EXPECT_EQ(Worker("a").state, WorkerState::kConnected);
  auto out = Do(WorkerLeaving{"a", 1, {2}}, 20);  // #2 is b's: not a's to vacate
  EXPECT_THAT(out, IsEmpty());
  EXPECT_EQ(s_.CurrentAttempt({1, 1}), AttemptId{2});
  EXPECT_EQ(Worker("a").state, WorkerState::kLeft);
}

}  // namespace
}  // namespace idlepool::core

namespace idlepool::core {
namespace {

TEST(CoreStallTest, CoordinatorStallIsNotChargedToLeases) {
  Scheduler s(Options{.lease_timeout = Millis{5000}, .stall_threshold = Millis{2500}});
  (void)s.Apply(WorkerHello{"a", 1, "boot", Resources{1, 0, 0}, {}}, At(0));
  (void)s.Apply(JobSubmitted{1, 1, Resources{}, 3, Millis{0}}, At(0));
  (void)s.Apply(Tick{}, At(100));
  (void)s.Apply(WorkerHeartbeat{"a", 1}, At(1000));
  // The coordinator was frozen from 1100 to 9100: 8 s with no tick and no heartbeat read.
  (void)s.Apply(Tick{}, At(1100));
  EXPECT_TRUE(s.Apply(Tick{}, At(9100)).empty()) << "a healthy worker was declared lost";
  EXPECT_EQ(s.Workers()[0].state, WorkerState::kConnected);
  // Its lease runs again from the stall's end: lost 5 s after its last heartbeat, gap excluded.
  for (int64_t t = 9200; t < 13000; t += 100) EXPECT_TRUE(s.Apply(Tick{}, At(t)).empty());
  bool lost = false;
  for (int64_t t = 13000; t <= 14000 && !lost; t += 100) {
    for (const Decision& d : s.Apply(Tick{}, At(t))) lost |= std::holds_alternative<WorkerLost>(d);
  }
  EXPECT_TRUE(lost);
}

TEST(CoreStallTest, WithoutStallDetectionTheSameGapLosesTheWorker) {
  Scheduler s(Options{.lease_timeout = Millis{5000}});
  (void)s.Apply(WorkerHello{"a", 1, "boot", Resources{1, 0, 0}, {}}, At(0));
  (void)s.Apply(WorkerHeartbeat{"a", 1}, At(1000));
  (void)s.Apply(Tick{}, At(1100));
  auto out = s.Apply(Tick{}, At(9100));
  ASSERT_FALSE(out.empty());
  EXPECT_TRUE(std::holds_alternative<WorkerLost>(out[0]));
}

TEST(CoreFitTest, JobThatFitsNoWorkerIsFlagged) {
  Scheduler s;
  (void)s.Apply(WorkerHello{"a", 1, "boot", Resources{2, 0, 0}, {}}, At(0));
  (void)s.Apply(JobSubmitted{1, 1, Resources{4, 0, 0}, 3, Millis{0}}, At(0));
  (void)s.Apply(JobSubmitted{2, 1, Resources{1, 1, 0}, 3, Millis{0}}, At(0));
  (void)s.Apply(JobSubmitted{3, 3, Resources{2, 0, 0}, 3, Millis{0}}, At(0));
  EXPECT_TRUE(s.Job(1)->fits_no_worker);   // 4 cpus > 2 slots
  EXPECT_TRUE(s.Job(2)->fits_no_worker);   // no GPUs anywhere
  EXPECT_FALSE(s.Job(3)->fits_no_worker);  // waits for slots, but fits
  (void)s.Apply(WorkerHello{"big", 2, "boot", Resources{8, 1, 0}, {}}, At(1));
  EXPECT_FALSE(s.Job(1)->fits_no_worker);
  EXPECT_FALSE(s.Job(2)->fits_no_worker);
}

TEST(CoreFenceTest, ReportFromARefusedImpostorSessionIsRefused) {
  Scheduler s;
  (void)s.Apply(WorkerHello{"w1", 1, "real", Resources{1, 0, 0}, {}}, At(0));
  (void)s.Apply(JobSubmitted{1, 1, Resources{}, 3, Millis{0}}, At(0));  // attempt #1 on w1
  auto refused = s.Apply(WorkerHello{"w1", 2, "impostor", Resources{1, 0, 0}, {}}, At(1));
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<RefuseSession>(refused[0]));
  AttemptReport forged;
  forged.worker = "w1";
  forged.session = 2;
  forged.attempt = 1;
  forged.outputs = {OutputFile{"out.txt", std::string(64, 'b'), 6}};
  auto out = s.Apply(forged, At(2));
  ASSERT_EQ(out.size(), 2u);
  ASSERT_TRUE(std::holds_alternative<AckReport>(out[0]));
  EXPECT_FALSE(std::get<AckReport>(out[0]).accepted);
  EXPECT_EQ(s.Job(1)->succeeded, 0u);
  EXPECT_EQ(s.CurrentAttempt({1, 0}), AttemptId{1});
}

}  // namespace
}  // namespace idlepool::core

