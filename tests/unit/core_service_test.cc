// Services in the pure scheduler core (issue 17): replicas are placed like tasks, at most
// per_machine on one worker; they never finish: an exit or a failure restarts them after a
// backoff that doubles, a preemption or a loss at once and elsewhere; failures never fail a
// service; ScaleService parks and unparks replicas; only a cancel ends it. Explicit `now`
// values, no clocks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/scheduler.h"
#include "core/types.h"
#include "tests/unit/core_fixture.h"

namespace idlepool::core {
namespace {

class CoreServiceTest : public CoreTest {
 protected:
  std::vector<Decision> Service(JobId job, uint32_t max, uint32_t replicas, int64_t ms = 0,
                                uint32_t per_machine = 1) {
    JobSubmitted e{job, max, {}, 3, Millis{0}};
    e.service = ServiceShape{replicas, per_machine};
    return Do(e, ms);
  }
  // Worker -> replicas assigned in `out`.
  static std::map<std::string, int> Placed(const std::vector<Decision>& out) {
    std::map<std::string, int> n;
    for (const AssignAttempt& a : Only<AssignAttempt>(out)) ++n[a.worker];
    return n;
  }
};

TEST_F(CoreServiceTest, OneReplicaPerMachineUnlessAsked) {
  Hello("a", 1, 4);
  Hello("b", 2, 4);
  std::vector<Decision> out = Service(1, 4, 3);
  EXPECT_EQ(Placed(out), (std::map<std::string, int>{{"a", 1}, {"b", 1}}));
  EXPECT_EQ(JobOf(1).running, 2u);
  out = Hello("c", 3, 4, 10);
  EXPECT_EQ(Placed(out), (std::map<std::string, int>{{"c", 1}}));
  // Two per machine when asked: the second service fills two slots on each.
  out = Service(2, 6, 6, 20, /*per_machine=*/2);
  EXPECT_EQ(Placed(out), (std::map<std::string, int>{{"a", 2}, {"b", 2}, {"c", 2}}));
}

// A service submitted below its max (min_replicas < max_replicas, or 0: autoscaled) runs only
// the replicas it wants; the others stay parked until it is scaled, however many machines are
// free.
TEST_F(CoreServiceTest, ASubmittedServiceRunsOnlyTheReplicasItWants) {
  Hello("a", 1, 4);
  Hello("b", 2, 4);
  Hello("c", 3, 4);
  EXPECT_THAT(Only<AssignAttempt>(Service(1, 3, 0)), IsEmpty());
  EXPECT_EQ(Placed(Service(2, 3, 1, 10)).size(), 1u);
  EXPECT_EQ(JobOf(1).running, 0u);
  EXPECT_EQ(JobOf(2).running, 1u);
  EXPECT_THAT(Only<AssignAttempt>(TickAt(20)), IsEmpty());
  EXPECT_EQ(Only<AssignAttempt>(Do(ScaleService{1, 2}, 30)).size(), 2u);
  EXPECT_EQ(JobOf(1).running, 2u);
}

TEST_F(CoreServiceTest, AnExitedReplicaRestartsAfterABackoffThatDoublesAndNeverFails) {
  Hello("a", 1, 1);
  std::vector<Decision> out = Service(1, 1, 1);
  ASSERT_EQ(Only<AssignAttempt>(out).size(), 1u);
  AttemptId id = Only<AssignAttempt>(out)[0].attempt;
  int64_t t = 0;
  Millis backoff{1000};
  for (int crash = 0; crash < 6; ++crash) {  // twice max_attempts: a service never fails
    t += 100;
    out = Report("a", 1, id, crash % 2 ? ReportResult::kFailed : ReportResult::kSucceeded, t);
    EXPECT_THAT(Only<AssignAttempt>(out), IsEmpty()) << "restarted before its backoff, #" << crash;
    EXPECT_EQ(JobOf(1).restarting, 1u);
    Heartbeat("a", 1, t + backoff.count() - 1);  // the worker stays; only the backoff waits
    EXPECT_THAT(Only<AssignAttempt>(TickAt(t + backoff.count() - 1)), IsEmpty());
    t += backoff.count();
    out = TickAt(t);
    ASSERT_EQ(Only<AssignAttempt>(out).size(), 1u) << "not restarted after " << backoff.count();
    id = Only<AssignAttempt>(out)[0].attempt;
    backoff *= 2;
  }
  const JobSummary j = JobOf(1);
  EXPECT_EQ(j.state, JobState::kRunning);
  EXPECT_EQ(j.succeeded + j.failed, 0u);
  EXPECT_EQ(j.counters.failures, 3u);
  // A replica that ran healthy for a while starts its count over: 1 s again.
  t += 60000;
  Heartbeat("a", 1, t);
  Report("a", 1, id, ReportResult::kFailed, t);
  EXPECT_EQ(Only<AssignAttempt>(TickAt(t + 1000)).size(), 1u);
}

TEST_F(CoreServiceTest, APreemptedOrLostReplicaStartsAgainAtOnceElsewhere) {
  Hello("a", 1, 1);
  Hello("b", 2, 1);
  Hello("c", 3, 1);
  std::vector<Decision> out = Service(1, 2, 2);
  std::map<std::string, int> placed = Placed(out);
  ASSERT_EQ(placed.size(), 2u);
  const std::string first = Only<AssignAttempt>(out)[0].worker;
  const AttemptId id = Only<AssignAttempt>(out)[0].attempt;
  out = Do(WorkerLeaving{first, first == "a" ? 1u : first == "b" ? 2u : 3u, {id}}, 100);
  ASSERT_EQ(Only<AssignAttempt>(out).size(), 1u);
  EXPECT_NE(Only<AssignAttempt>(out)[0].worker, first);
  EXPECT_EQ(JobOf(1).counters.preemptions, 1u);
  EXPECT_EQ(JobOf(1).running, 2u);
  // A machine that vanishes: its replica is lost when its lease runs out, and restarted at once
  // on the one worker left that does not run one.
  for (const auto& [name, session] : std::map<std::string, SessionId>{{"a", 1}, {"b", 2}, {"c", 3}}) {
    if (name != first) Heartbeat(name, session, 4000);
  }
  out = TickAt(9000);  // `first` left; both others silent past the lease since 4000
  EXPECT_EQ(JobOf(1).state, JobState::kRunning);
  EXPECT_EQ(JobOf(1).counters.lost, 2u);
}

TEST_F(CoreServiceTest, ScalingParksAndUnparksReplicas) {
  Hello("a", 1, 1);
  Hello("b", 2, 1);
  Hello("c", 3, 1);
  std::vector<Decision> out = Service(1, 3, 3);
  ASSERT_EQ(Only<AssignAttempt>(out).size(), 3u);
  out = Do(ScaleService{1, 1}, 100);
  const std::vector<KillAttempt> killed = Only<KillAttempt>(out);
  ASSERT_EQ(killed.size(), 2u);
  for (const KillAttempt& k : killed) EXPECT_EQ(k.reason, KillReason::kCancelled);
  EXPECT_THAT(Only<AssignAttempt>(out), IsEmpty());
  EXPECT_EQ(JobOf(1).running, 1u);
  EXPECT_EQ(JobOf(1).replicas, 1u);
  EXPECT_EQ(JobOf(1).state, JobState::kRunning);
  for (SessionId s = 1; s <= 3; ++s) Heartbeat(std::string(1, static_cast<char>('a' + s - 1)), s, 60000);
  EXPECT_THAT(Only<AssignAttempt>(TickAt(60000)), IsEmpty());  // parked, not restarting
  out = Do(ScaleService{1, 9}, 60100);  // clamped to its 3 tasks
  EXPECT_EQ(Only<AssignAttempt>(out).size(), 2u);
  EXPECT_EQ(JobOf(1).replicas, 3u);
  // Scaling a batch job or an unknown one does nothing.
  Submit(2, 2, 60200);
  EXPECT_THAT(Do(ScaleService{2, 0}, 60300), IsEmpty());
  EXPECT_THAT(Do(ScaleService{7, 0}, 60300), IsEmpty());
}

TEST_F(CoreServiceTest, OnlyACancelEndsAService) {
  Hello("a", 1, 1);
  std::vector<Decision> out = Service(1, 3, 2);
  const AttemptId id = Only<AssignAttempt>(out)[0].attempt;
  Report("a", 1, id, ReportResult::kFailed, 100);  // restarting
  out = Do(JobCancelled{1}, 200);
  EXPECT_EQ(JobOf(1).state, JobState::kCancelled);
  EXPECT_EQ(JobOf(1).cancelled, 3u);
  EXPECT_EQ(JobOf(1).restarting, 0u);
  EXPECT_THAT(Only<AssignAttempt>(TickAt(5000)), IsEmpty());
}

TEST_F(CoreServiceTest, ARestoredServiceKeepsItsParkedReplicasParked) {
  RestoredState st;
  RestoredJob rj;
  rj.spec = JobSubmitted{1, 4, {}, 3, Millis{0}};
  rj.spec.service = ServiceShape{2, 1};
  st.jobs.push_back(rj);
  s_.Restore(st, At(0));
  std::vector<Decision> out = Hello("a", 1, 1, 10);
  out = Hello("b", 2, 1, 20);
  out = Hello("c", 3, 1, 30);
  EXPECT_EQ(JobOf(1).running, 2u);
  EXPECT_EQ(JobOf(1).pending, 2u);
  EXPECT_EQ(Worker("c").slots_busy, 0u);
}

}  // namespace
}  // namespace idlepool::core
