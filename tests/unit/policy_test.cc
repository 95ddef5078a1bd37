// Unit tests of the scheduler's placement policies (core::Policy): each rule shown by a small
// exact scenario driven through Scheduler::Apply, and the same events under Policy::Fifo() where
// the difference is the point. No sleeps, no threads, no clocks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "core/scheduler.h"
#include "core/types.h"
#include "tests/unit/core_test_util.h"

namespace idlepool::core {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

using test::At;
using test::Key;
using test::KillReasonName;
using test::Out;
using test::Overloaded;

// One line per decision, so whole batches can be asserted exactly and in order.
std::string Str(const Decision& d) {
  return std::visit(
      Overloaded{
          [](const AttemptCreated& x) {
            return "created #" + std::to_string(x.attempt) + " " + Key(x.task) + " @" + x.worker;
          },
          [](const AttemptEnded& x) {
            return "ended #" + std::to_string(x.attempt) + " " + Key(x.task) + " @" + x.worker +
                   " " + ToString(x.outcome);
          },
          [](const TaskChanged& x) {
            std::string s = "task " + Key(x.task) + " " + ToString(x.state) +
                            " f=" + std::to_string(x.failures);
            if (x.committed_attempt != 0) s += " commit #" + std::to_string(x.committed_attempt);
            return s;
          },
          [](const JobChanged& x) {
            return "job " + std::to_string(x.job) + " " + ToString(x.state);
          },
          [](const WorkerLost& x) { return "lost " + x.worker; },
          [](const AttemptSuspended& x) { return "suspended #" + std::to_string(x.attempt); },
          [](const TaskCheckpointed& x) { return "checkpoint " + Key(x.task); },
          [](const AssignAttempt& x) {
            return "assign #" + std::to_string(x.attempt) + " " + Key(x.task) + " @" + x.worker;
          },
          [](const KillAttempt& x) {
            return "kill #" + std::to_string(x.attempt) + " @" + x.worker + " " + KillReasonName(x.reason);
          },
          [](const AckReport& x) {
            return "ack #" + std::to_string(x.attempt) + " @" + x.worker +
                   (x.accepted ? " ok" : " refused");
          },
          [](const RefuseSession& x) { return "refuse " + x.worker; },
      },
      d);
}

std::vector<std::string> Strs(const std::vector<Decision>& ds) {
  std::vector<std::string> out;
  for (const Decision& d : ds) out.push_back(Str(d));
  return out;
}

template <class D>
std::vector<std::string> Only(const std::vector<Decision>& ds) {
  std::vector<std::string> out;
  for (const Decision& d : ds) {
    if (std::holds_alternative<D>(d)) out.push_back(Str(d));
  }
  return out;
}


// A scheduler under one policy, with the event helpers the scenarios use. Worker sessions: the
// n-th Hello of the test gets session n.
class Pool {
 public:
  explicit Pool(Policy policy) : s_(Options{.lease_timeout = Millis{5000}, .policy = policy}) {}

  std::vector<Decision> Do(const Event& e, int64_t ms) { return s_.Apply(e, At(ms)); }
  std::vector<Decision> Hello(const std::string& w, int64_t ms, const std::string& boot = "boot1",
                              uint32_t cpus = 1) {
    sessions_[w] = ++next_session_;
    return Do(WorkerHello{w, sessions_[w], boot, Resources{cpus, 0, 0}, {}}, ms);
  }
  std::vector<Decision> Submit(JobId job, uint32_t tasks, int64_t ms, uint32_t max_attempts = 3) {
    return Do(JobSubmitted{job, tasks, Resources{1, 0, 0}, max_attempts, Millis{0}}, ms);
  }
  std::vector<Decision> Report(const std::string& w, AttemptId id, int64_t ms,
                               ReportResult result = ReportResult::kSucceeded) {
    AttemptReport r;
    r.worker = w;
    r.session = sessions_[w];
    r.attempt = id;
    r.result = result;
    r.exit_code = result == ReportResult::kFailed ? 1 : 0;
    if (result == ReportResult::kSucceeded) r.outputs = {Out("out-" + std::to_string(id))};
    return Do(r, ms);
  }
  std::vector<Decision> Heartbeat(const std::string& w, int64_t ms) {
    return Do(WorkerHeartbeat{w, sessions_[w]}, ms);
  }
  // The worker says it is leaving (its owner took the machine back) and closes its stream.
  std::vector<Decision> Leave(const std::string& w, int64_t ms, std::vector<AttemptId> vacated = {}) {
    std::vector<Decision> out = Do(WorkerLeaving{w, sessions_[w], std::move(vacated)}, ms);
    for (Decision& d : Do(SessionClosed{w, sessions_[w]}, ms)) out.push_back(std::move(d));
    return out;
  }
  WorkerView Worker(const std::string& name) const {
    for (const WorkerView& w : s_.Workers()) {
      if (w.worker == name) return w;
    }
    ADD_FAILURE() << "no worker " << name;
    return {};
  }
  JobSummary Job(JobId id) const { return s_.Job(id).value_or(JobSummary{}); }
  Scheduler& s() { return s_; }

 private:
  Scheduler s_;
  std::map<std::string, SessionId> sessions_;
  SessionId next_session_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Names

TEST(PolicyNames, EachNameSelectsItsRules) {
  EXPECT_EQ(PolicyNamed("fifo"), Policy::Fifo());
  EXPECT_EQ(PolicyNamed("default"), Policy{});
  EXPECT_EQ(Options{}.policy, Policy{}) << "the coordinator's Options{} must get the default";
  const Policy fast = *PolicyNamed("fast");
  EXPECT_TRUE(fast.fast && !fast.speculate && !fast.churn_aware);
  const Policy spec = *PolicyNamed("speculative");
  EXPECT_TRUE(!spec.fast && spec.speculate && !spec.churn_aware);
  const Policy churn = *PolicyNamed("churn");
  EXPECT_TRUE(!churn.fast && !churn.speculate && churn.churn_aware);
  const Policy fifo = Policy::Fifo();
  EXPECT_TRUE(!fifo.fast && !fifo.speculate && !fifo.churn_aware);
  EXPECT_FALSE(PolicyNamed("FIFO").has_value());
  EXPECT_FALSE(PolicyNamed("").has_value());
  EXPECT_EQ(PolicyNames(), "fifo, fast, speculative, churn, default");
}

// ---------------------------------------------------------------------------------------------
// Learned speed and the fast policy

// Two one-slot workers: "a" (slow: 4 s per task) and "b" (fast: 1 s per task). Job 1 has
// `tasks` tasks; a runs task 0 from 0 to 4 s while b runs tasks 1-4 back to back. At 4 s tasks
// 5.. are pending and only a is free. Returns the decisions of a's report at 4 s.
std::vector<Decision> SlowAndFast(Pool& p, uint32_t tasks = 6) {
  p.Hello("a", 0);
  p.Hello("b", 0);
  EXPECT_THAT(Only<AssignAttempt>(p.Submit(1, tasks, 0)),
              ElementsAre("assign #1 1/0 @a", "assign #2 1/1 @b"));
  EXPECT_THAT(Only<AssignAttempt>(p.Report("b", 2, 1000)), ElementsAre("assign #3 1/2 @b"));
  EXPECT_THAT(Only<AssignAttempt>(p.Report("b", 3, 2000)), ElementsAre("assign #4 1/3 @b"));
  EXPECT_THAT(Only<AssignAttempt>(p.Report("b", 4, 3000)), ElementsAre("assign #5 1/4 @b"));
  return p.Report("a", 1, 4000);
}

TEST(PolicyFast, SpeedIsLearnedFromSucceededAttempts) {
  Pool p(Policy::Fifo());  // learning happens under every policy; only its use differs
  SlowAndFast(p);
  // b's three 1 s tasks: the job mean is 1 s and b runs at 1.0. a's 4 s task moves the mean to
  // 1.75 s: a = (1 + 1) / (4 / 1.75 + 1), one observation shrunk toward 1.0 by the prior.
  EXPECT_DOUBLE_EQ(p.Worker("b").speed, 1.0);
  EXPECT_NEAR(p.Worker("a").speed, 2.0 / (4.0 / 1.75 + 1.0), 1e-12);
  EXPECT_LT(p.Worker("a").speed, 0.65);
}

TEST(PolicyFast, TailTaskWaitsForTheFasterWorker) {
  Pool p(*PolicyNamed("fast"));
  // a is free with one task pending, but b (1.64x a's speed) is expected to free in 0.75 s and
  // finish it 2.5 s from now, before a would (1.75 s / 0.61 = 2.9 s): the task waits.
  auto out = SlowAndFast(p);
  EXPECT_THAT(Strs(out), ElementsAre("ended #1 1/0 @a succeeded", "task 1/0 succeeded f=0 commit #1",
                                     "ack #1 @a ok"));
  EXPECT_EQ(p.Job(1).pending, 1u);
  EXPECT_EQ(p.Worker("a").slots_busy, 0u);
  // Heartbeats change nothing; b's report frees it and it takes the task.
  EXPECT_THAT(p.Heartbeat("a", 4500), IsEmpty());
  EXPECT_THAT(Only<AssignAttempt>(p.Report("b", 5, 5000)), ElementsAre("assign #6 1/5 @b"));
}

TEST(PolicyFast, FifoGivesTheTailTaskToTheFreeSlowWorker) {
  Pool p(Policy::Fifo());
  EXPECT_THAT(Only<AssignAttempt>(SlowAndFast(p)), ElementsAre("assign #6 1/5 @a"));
}

TEST(PolicyFast, FreeWorkersAreTakenFastestFirst) {
  for (const bool fast : {true, false}) {
    SCOPED_TRACE(fast ? "fast" : "fifo");
    Pool p(fast ? *PolicyNamed("fast") : Policy::Fifo());
    SlowAndFast(p);
    p.Report("b", 5, 5000);
    p.Report(fast ? "b" : "a", 6, 6000);  // job 1 done; both free
    ASSERT_EQ(p.Job(1).state, JobState::kSucceeded);
    // A new job: b ranks above a (learned speed), although "a" sorts first by name.
    EXPECT_THAT(Only<AssignAttempt>(p.Submit(2, 1, 7000)),
                ElementsAre(fast ? "assign #7 2/0 @b" : "assign #7 2/0 @a"));
  }
}

TEST(PolicyFast, BulkPhaseStaysWorkConserving) {
  Pool p(*PolicyNamed("fast"));
  // 35 tasks pending: b cannot finish them all before a would finish one, so a takes one.
  EXPECT_THAT(Only<AssignAttempt>(SlowAndFast(p, 40)), ElementsAre("assign #6 1/5 @a"));
}

TEST(PolicyFast, OneJobsTailDoesNotIdleTheWorkerForAnother) {
  Pool p(*PolicyNamed("fast"));
  SlowAndFast(p);
  // Job 1's last task waits for b; a takes work of job 2, whose 40 tasks are its bulk phase.
  EXPECT_THAT(Only<AssignAttempt>(p.Submit(2, 40, 4100)), ElementsAre("assign #6 2/0 @a"));
  EXPECT_EQ(p.Job(1).pending, 1u);
  EXPECT_THAT(Only<AssignAttempt>(p.Report("b", 5, 5000)), ElementsAre("assign #7 1/5 @b"));
}

// ---------------------------------------------------------------------------------------------
// Speculative backups (LATE)

// Workers "a" and "b", one slot each; job 1 has 4 tasks. a runs task 0 from 0 on; b runs tasks
// 1-3 in 1 s each, so by 3 s nothing is pending, b is free and a's attempt #1 is the straggler.
void Straggler(Pool& p, uint32_t max_attempts = 3) {
  p.Hello("a", 0);
  p.Hello("b", 0);
  p.Submit(1, 4, 0, max_attempts);
  p.Report("b", 2, 1000);
  p.Report("b", 3, 2000);
  // At 3 s: a has run 3 mean tasks' time (its speed, censored, 1/3): it is expected to need
  // 1.5 s more, and a backup on b 1.5 s, not enough sooner (the gain margin is 25%).
  EXPECT_THAT(Only<AttemptCreated>(p.Report("b", 4, 3000)), IsEmpty());
  EXPECT_THAT(p.Heartbeat("b", 3500), IsEmpty());  // the next pass is 1 s after the last
}

TEST(PolicySpeculate, BackupLaunchedFirstFinisherCommitsOtherKilled) {
  Pool p(*PolicyNamed("speculative"));
  Straggler(p);
  // At 6 s a is expected to need 3 s more, a backup on b 1.5 s: launched.
  auto out = p.Heartbeat("b", 6000);
  EXPECT_THAT(Strs(out), ElementsAre("created #5 1/0 @b", "assign #5 1/0 @b"));
  EXPECT_EQ(p.s().CurrentAttempt({1, 0}), AttemptId{1});
  EXPECT_EQ(p.Job(1).counters.backups, 1u);
  EXPECT_EQ(p.Job(1).counters.attempts, 5u);
  EXPECT_EQ(p.Job(1).running, 1u);
  EXPECT_EQ(p.Worker("b").slots_busy, 1u);

  // The backup finishes first: it commits; the original ends cancelled (not failed, not
  // preempted) and is killed as superseded.
  out = p.Report("b", 5, 7500);
  EXPECT_THAT(Strs(out), ElementsAre("ended #5 1/0 @b succeeded", "ended #1 1/0 @a cancelled",
                                     "task 1/0 succeeded f=0 commit #5", "job 1 succeeded",
                                     "kill #1 @a superseded", "ack #5 @b ok"));
  for (const Decision& d : out) {
    if (const auto* e = std::get_if<AttemptEnded>(&d); e != nullptr && e->attempt == 1) {
      EXPECT_THAT(e->message, HasSubstr("superseded"));
      EXPECT_EQ(e->lost, Millis{0});
    }
  }
  const JobSummary j = p.Job(1);
  EXPECT_EQ(j.counters.failures, 0u);
  EXPECT_EQ(j.counters.preemptions, 0u);
  EXPECT_EQ(j.counters.lost, 0u);
  EXPECT_EQ(p.Worker("a").slots_busy, 0u);

  // The original's late success is refused: the task's outputs are committed once.
  EXPECT_THAT(Strs(p.Report("a", 1, 8000)),
              ElementsAre("ack #1 @a refused", "kill #1 @a stale"));
  EXPECT_EQ(p.Job(1).succeeded, 4u);
}

TEST(PolicySpeculate, OriginalFinishingFirstSupersedesTheBackup) {
  Pool p(*PolicyNamed("speculative"));
  Straggler(p);
  p.Heartbeat("b", 6000);  // backup #5 on b
  EXPECT_THAT(Strs(p.Report("a", 1, 6500)),
              ElementsAre("ended #1 1/0 @a succeeded", "ended #5 1/0 @b cancelled",
                          "task 1/0 succeeded f=0 commit #1", "job 1 succeeded",
                          "kill #5 @b superseded", "ack #1 @a ok"));
}

TEST(PolicySpeculate, FifoLaunchesNoBackup) {
  Pool p(Policy::Fifo());
  Straggler(p);
  EXPECT_THAT(p.Heartbeat("b", 6000), IsEmpty());
  EXPECT_THAT(p.Heartbeat("b", 60000), IsEmpty());
  EXPECT_EQ(p.Job(1).counters.backups, 0u);
}

TEST(PolicySpeculate, BackupFailureDoesNotFailTheTask) {
  Pool p(*PolicyNamed("speculative"));
  Straggler(p, /*max_attempts=*/1);
  p.Heartbeat("b", 6000);  // backup #5 on b
  // With max_attempts 1, a failure would fail the task, but its original still runs: the
  // failure is counted and the task keeps running.
  EXPECT_THAT(Strs(p.Report("b", 5, 6500, ReportResult::kFailed)),
              ElementsAre("ended #5 1/0 @b failed", "task 1/0 running f=1", "ack #5 @b ok"));
  EXPECT_EQ(p.s().CurrentAttempt({1, 0}), AttemptId{1});
  EXPECT_EQ(p.Job(1).running, 1u);
  EXPECT_EQ(p.Job(1).counters.failures, 1u);
  // The original then succeeds and commits.
  EXPECT_THAT(Strs(p.Report("a", 1, 9000)),
              ElementsAre("ended #1 1/0 @a succeeded", "task 1/0 succeeded f=1 commit #1",
                          "job 1 succeeded", "ack #1 @a ok"));
}

TEST(PolicySpeculate, LastAttemptFailingAfterMaxFailuresFailsTheTask) {
  Pool p(*PolicyNamed("speculative"));
  Straggler(p, /*max_attempts=*/1);
  p.Heartbeat("b", 6000);
  p.Report("b", 5, 6500, ReportResult::kFailed);
  EXPECT_THAT(Strs(p.Report("a", 1, 7000, ReportResult::kFailed)),
              ElementsAre("ended #1 1/0 @a failed", "task 1/0 failed f=2", "job 1 failed",
                          "ack #1 @a ok"));
}

TEST(PolicySpeculate, OriginalPreemptedLeavesTheBackupRunning) {
  Pool p(*PolicyNamed("speculative"));
  Straggler(p);
  p.Heartbeat("b", 6000);  // backup #5 on b
  // a's owner takes the machine back: #1 ends preempted, the task runs on in #5.
  EXPECT_THAT(Strs(p.Leave("a", 6200, {1})), ElementsAre("ended #1 1/0 @a preempted"));
  EXPECT_EQ(p.s().CurrentAttempt({1, 0}), AttemptId{5});
  EXPECT_EQ(p.Job(1).running, 1u);
  EXPECT_EQ(p.Job(1).pending, 0u);
  EXPECT_EQ(p.Job(1).counters.preemptions, 1u);
  EXPECT_THAT(Strs(p.Report("b", 5, 7500)),
              ElementsAre("ended #5 1/0 @b succeeded", "task 1/0 succeeded f=0 commit #5",
                          "job 1 succeeded", "ack #5 @b ok"));
}

TEST(PolicySpeculate, CancellingAJobKillsBothAttempts) {
  Pool p(*PolicyNamed("speculative"));
  Straggler(p);
  p.Heartbeat("b", 6000);
  EXPECT_THAT(Strs(p.Do(JobCancelled{1}, 6500)),
              ElementsAre("ended #5 1/0 @b cancelled", "ended #1 1/0 @a cancelled",
                          "task 1/0 cancelled f=0", "job 1 cancelled", "kill #5 @b cancelled",
                          "kill #1 @a cancelled"));
  EXPECT_EQ(p.Worker("a").slots_busy, 0u);
  EXPECT_EQ(p.Worker("b").slots_busy, 0u);
}

TEST(PolicySpeculate, RestoreKeepsBothAttemptsOfATask) {
  Pool p(*PolicyNamed("speculative"));
  RestoredState st;
  st.jobs.push_back(RestoredJob{JobSubmitted{1, 2, Resources{1, 0, 0}, 3, Millis{0}},
                                JobState::kRunning, {}, {}});
  st.tasks = {{{1, 0}, TaskState::kRunning, 0}, {{1, 1}, TaskState::kSucceeded, 0}};
  st.running = {{7, {1, 0}, "a"}, {9, {1, 0}, "b"}};
  st.next_attempt_id = 10;
  p.s().Restore(st, At(0));
  EXPECT_EQ(p.s().CurrentAttempt({1, 0}), AttemptId{7});
  // Both workers come back holding their attempt: both are re-adopted.
  EXPECT_THAT(p.Do(WorkerHello{"a", 1, "boot", Resources{1, 0, 0}, {7}}, 100), IsEmpty());
  EXPECT_THAT(p.Do(WorkerHello{"b", 2, "boot", Resources{1, 0, 0}, {9}}, 100), IsEmpty());
  EXPECT_EQ(p.Worker("a").attempts_running, 1u);
  EXPECT_EQ(p.Worker("b").attempts_running, 1u);
  AttemptReport r{"b", 2, 9, ReportResult::kSucceeded};
  EXPECT_THAT(Strs(p.Do(r, 200)),
              ElementsAre("ended #9 1/0 @b succeeded", "ended #7 1/0 @a cancelled",
                          "task 1/0 succeeded f=0 commit #9", "job 1 succeeded",
                          "kill #7 @a superseded", "ack #9 @b ok"));
}

TEST(PolicySpeculate, RestoredAttemptsGetNoBackup) {
  // How far an attempt that ran before a coordinator restart got is unknown: no backup for it,
  // however long it seems to run (a worker that was cut off while the coordinator was down
  // often holds a finished attempt whose report is on its way).
  Pool p(*PolicyNamed("speculative"));
  RestoredState st;
  st.jobs.push_back(RestoredJob{JobSubmitted{1, 3, Resources{1, 0, 0}, 3, Millis{0}},
                                JobState::kRunning, {}, {}});
  st.tasks = {{{1, 0}, TaskState::kRunning, 0}};
  st.running = {{7, {1, 0}, "a"}};
  st.next_attempt_id = 10;
  p.s().Restore(st, At(0));
  p.Do(WorkerHello{"a", 1, "boot", Resources{1, 0, 0}, {7}}, 0);
  EXPECT_THAT(Only<AssignAttempt>(p.Do(WorkerHello{"b", 2, "boot", Resources{1, 0, 0}, {}}, 0)),
              ElementsAre("assign #10 1/1 @b"));
  EXPECT_THAT(Only<AssignAttempt>(p.Do(AttemptReport{"b", 2, 10}, 1000)),
              ElementsAre("assign #11 1/2 @b"));
  p.Do(AttemptReport{"b", 2, 11}, 2000);  // nothing pending, b free, a's #7 running 2 s
  EXPECT_THAT(p.Do(WorkerHeartbeat{"b", 2}, 10000), IsEmpty());
  EXPECT_THAT(p.Do(WorkerHeartbeat{"b", 2}, 60000), IsEmpty());
  EXPECT_EQ(p.Job(1).counters.backups, 0u);
}

// ---------------------------------------------------------------------------------------------
// Churn-aware ranking

// "flaky" comes and goes (three 10 s up periods), "steady" has been up since 0. Job 1 (one
// 5 s task) teaches the core a runtime. Returns the placement of job 2's one task at 100 s.
std::vector<Decision> FlakyAndSteady(Pool& p) {
  p.Hello("flaky", 0, "f1");
  p.Hello("steady", 0, "s1");
  p.Leave("flaky", 10000);  // each time a new boot: a new up period
  p.Hello("flaky", 11000, "f2");
  p.Leave("flaky", 21000);
  p.Hello("flaky", 22000, "f3");
  p.Leave("flaky", 32000);
  p.Hello("flaky", 33000, "f4");
  EXPECT_EQ(p.Worker("flaky").up_periods_ended, 3u);
  EXPECT_EQ(p.Worker("steady").up_periods_ended, 0u);
  // Nothing learned about runtimes yet: every worker ranks the same, "flaky" first by name.
  EXPECT_THAT(Only<AssignAttempt>(p.Submit(1, 1, 40000)), ElementsAre("assign #1 1/0 @flaky"));
  p.Report("flaky", 1, 45000);
  return p.Submit(2, 1, 100000);
}

TEST(PolicyChurn, TaskAvoidsTheWorkerLikelyToLeave) {
  Pool p(*PolicyNamed("churn"));
  EXPECT_THAT(Only<AssignAttempt>(FlakyAndSteady(p)), ElementsAre("assign #2 2/0 @steady"));
}

TEST(PolicyChurn, FifoIgnoresHistory) {
  Pool p(Policy::Fifo());
  EXPECT_THAT(Only<AssignAttempt>(FlakyAndSteady(p)), ElementsAre("assign #2 2/0 @flaky"));
}

TEST(PolicyChurn, NoHistoryIsNeutral) {
  // No up period has ended anywhere: churn-aware placement is fifo's.
  Pool p(*PolicyNamed("churn"));
  p.Hello("flaky", 0);
  p.Hello("steady", 0);
  p.Submit(1, 1, 0);
  p.Report("flaky", 1, 5000);
  EXPECT_THAT(Only<AssignAttempt>(p.Submit(2, 2, 6000)),
              ElementsAre("assign #2 2/0 @flaky", "assign #3 2/1 @steady"));
}

// ---------------------------------------------------------------------------------------------
// Determinism

TEST(PolicyDefault, SameEventsGiveSameDecisions) {
  auto run = [] {
    Pool p(Policy{});
    std::vector<std::string> all;
    auto add = [&](const std::vector<Decision>& ds) {
      for (const std::string& x : Strs(ds)) all.push_back(x);
    };
    add(p.Hello("a", 0));
    add(p.Hello("b", 0));
    add(p.Hello("c", 0, "boot1", 2));
    add(p.Submit(1, 12, 0));
    int64_t t = 0;
    for (AttemptId id = 1; id <= 12; ++id) {
      t += 700;
      for (const char* w : {"a", "b", "c"}) add(p.Report(w, id, t + (w[0] - 'a') * 300));
      add(p.Heartbeat("c", t + 1000));
    }
    return all;
  };
  const std::vector<std::string> first = run();
  EXPECT_EQ(first, run());
  EXPECT_GT(first.size(), 40u);
}

}  // namespace
}  // namespace idlepool::core
