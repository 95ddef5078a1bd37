// Host network in the pure scheduler core (issue 19): a task of a job that asks for the host
// network (Resources::host_network) is placed only on a worker whose capacity offers it (its
// owner policy allows it), backups and restored jobs included, and a job that waits only because
// every fitting worker refuses says so (JobSummary::host_network_refused). Explicit `now`
// values, no clocks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/scheduler.h"
#include "core/types.h"
#include "tests/unit/core_fixture.h"

namespace idlepool::core {
namespace {

Resources HostNet(uint32_t cpus = 1) {
  Resources r;
  r.cpus = cpus;
  r.host_network = true;
  return r;
}

// A worker's capacity: `allow` is its owner policy's allow_host_network.
Resources Cap(bool allow) {
  Resources r;
  r.host_network = allow;
  return r;
}

std::set<std::string> WorkersOf(const std::vector<Decision>& out) {
  std::set<std::string> w;
  for (const AssignAttempt& a : Only<AssignAttempt>(out)) w.insert(a.worker);
  return w;
}

class CoreNetworkTest : public CoreTest {};

TEST_F(CoreNetworkTest, HostNetworkTasksGoOnlyToAWorkerThatAllowsIt) {
  Hello("refuses", 1, 4, 0, {}, "boot1", Cap(false));
  Hello("allows", 2, 2, 0, {}, "boot1", Cap(true));
  // "refuses" has more free slots (it would be first); only "allows" takes the job's tasks.
  std::vector<Decision> out = Submit(1, 5, 0, HostNet());
  EXPECT_EQ(Only<AssignAttempt>(out).size(), 2u);
  EXPECT_EQ(WorkersOf(out), std::set<std::string>{"allows"});
  // Freed slots on "allows" take the rest; "refuses" never gets one.
  for (AttemptId a = 1; a <= 4; ++a) {
    out = Report("allows", 2, a, ReportResult::kSucceeded, 100 * a, {Out("o")});
    EXPECT_EQ(WorkersOf(out), (a <= 3 ? std::set<std::string>{"allows"} : std::set<std::string>{}))
        << "after #" << a;
  }
  // A job without it runs on either.
  out = Submit(2, 4, 500);
  EXPECT_EQ(WorkersOf(out).count("refuses"), 1u);
  EXPECT_EQ(JobOf(1).host_network_refused, 0u);
  EXPECT_TRUE(JobOf(1).host_network);
  EXPECT_FALSE(JobOf(2).host_network);
}

TEST_F(CoreNetworkTest, AJobWaitingOnlyForTheHostNetworkSaysHowManyRefuse) {
  Hello("r1", 1, 2, 0, {}, "boot1", Cap(false));
  Hello("r2", 2, 2, 0, {}, "boot1", Cap(false));
  EXPECT_THAT(Only<AssignAttempt>(Submit(1, 3, 0, HostNet())), IsEmpty());
  JobSummary j = JobOf(1);
  EXPECT_EQ(j.pending, 3u);
  EXPECT_FALSE(j.fits_no_worker);  // they fit it; they refuse it
  EXPECT_EQ(j.host_network_refused, 2u);
  // A worker that refuses but could not fit a task anyway is not counted.
  Submit(2, 1, 0, HostNet(2));
  Hello("small", 3, 1, 1, {}, "boot1", Cap(false));
  EXPECT_EQ(JobOf(2).host_network_refused, 2u);
  EXPECT_EQ(JobOf(1).host_network_refused, 3u);
  // A worker that allows it joins: the tasks go there, and nothing waits for that any more.
  std::vector<Decision> out = Hello("ok", 4, 8, 2, {}, "boot1", Cap(true));
  EXPECT_EQ(WorkersOf(out), std::set<std::string>{"ok"});
  EXPECT_EQ(Only<AssignAttempt>(out).size(), 4u);
  EXPECT_EQ(JobOf(1).host_network_refused, 0u);
  EXPECT_EQ(JobOf(2).host_network_refused, 0u);
}

TEST_F(CoreNetworkTest, TooBigForEveryWorkerIsSaidFirst) {
  Hello("r", 1, 2, 0, {}, "boot1", Cap(false));
  Submit(1, 1, 0, HostNet(4));
  EXPECT_TRUE(JobOf(1).fits_no_worker);
  EXPECT_EQ(JobOf(1).host_network_refused, 0u);
  // No worker at all: nothing refuses.
  Submit(2, 1, 0, HostNet());
  Do(SessionClosed{"r", 1}, 1);
  EXPECT_TRUE(JobOf(2).fits_no_worker);
  EXPECT_EQ(JobOf(2).host_network_refused, 0u);
}

TEST_F(CoreNetworkTest, AWorkerThatStopsAllowingItGetsNoMoreSuchTasks) {
  Hello("w", 1, 1, 0, {}, "boot1", Cap(true));
  ASSERT_EQ(WorkersOf(Submit(1, 2, 0, HostNet())), std::set<std::string>{"w"});
  // Its owner changes the policy and restarts it: a new hello without the permission.
  Do(SessionClosed{"w", 1}, 5);
  std::vector<Decision> out = Hello("w", 2, 1, 10, {}, "boot2", Cap(false));
  EXPECT_THAT(Only<AssignAttempt>(out), IsEmpty());
  EXPECT_EQ(JobOf(1).pending, 2u);
  EXPECT_EQ(JobOf(1).host_network_refused, 1u);
}

TEST_F(CoreNetworkTest, ARestoredJobKeepsAskingForIt) {
  RestoredState st;
  st.jobs.push_back(RestoredJob{JobSubmitted{1, 2, HostNet(), 3, Millis{0}}, JobState::kRunning});
  st.tasks = {RestoredTask{{1, 0}, TaskState::kPending, 0},
              RestoredTask{{1, 1}, TaskState::kPending, 0}};
  s_.Restore(st, At(0));
  EXPECT_THAT(Only<AssignAttempt>(Hello("r", 1, 4, 1, {}, "boot1", Cap(false))), IsEmpty());
  EXPECT_EQ(JobOf(1).host_network_refused, 1u);
  EXPECT_EQ(WorkersOf(Hello("a", 2, 4, 2, {}, "boot1", Cap(true))), std::set<std::string>{"a"});
}

// Random events under every policy (speculative backups, the tail rule, locality): no task of a
// host-network job is ever assigned to a worker whose last hello refused it, and a job whose
// every task is pending while only refusing workers fit it says so. Each seed replays exactly.
TEST(CoreNetworkRandomTest, NoHostNetworkTaskOnARefusingWorker) {
  const Policy policies[] = {Policy{}, Policy::Fifo()};
  int host_assigned = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    SCOPED_TRACE(::testing::Message() << "seed " << seed);
    std::mt19937_64 rng(seed);
    auto pick = [&](uint64_t n) { return static_cast<uint64_t>(rng() % n); };
    Options o{Millis{5000}};
    o.policy = policies[seed % 2];
    Scheduler s{o};
    const std::vector<std::string> names = {"a", "b", "c"};
    std::map<std::string, bool> allows;  // as its current session's hello said
    std::map<std::string, SessionId> session;
    std::map<JobId, bool> host;
    std::map<AttemptId, AssignAttempt> running;
    SessionId next_session = 1;
    JobId next_job = 1;
    int64_t now = 0;
    for (int step = 0; step < 400; ++step) {
      now += static_cast<int64_t>(pick(300));
      Event e = Tick{};
      const std::string w = names[pick(names.size())];
      switch (pick(6)) {
        case 0: {
          Resources r;
          r.host_network = pick(2) == 0;
          host[next_job] = r.host_network;
          e = JobSubmitted{next_job++, 1 + static_cast<uint32_t>(pick(6)), r, 2, Millis{0}};
          break;
        }
        case 1: {
          session[w] = next_session++;
          allows[w] = pick(2) == 0;
          Resources cap;
          cap.cpus = 1 + static_cast<uint32_t>(pick(3));
          cap.host_network = allows[w];
          // The same process (boot id) says hello again, the permission as its policy now says.
          e = WorkerHello{w, session[w], "boot-" + w, cap, {}};
          break;
        }
        case 2:
        case 3:
          if (!running.empty()) {
            auto it = running.begin();
            std::advance(it, static_cast<long>(pick(running.size())));
            const AssignAttempt a = it->second;
            running.erase(it);
            const ReportResult r = pick(4) == 0 ? ReportResult::kFailed : ReportResult::kSucceeded;
            e = AttemptReport{a.worker, a.session,        a.attempt, r,
                              0,        {test::Out("o")}, "",        std::nullopt};
          }
          break;
        case 4:
          if (session.count(w)) e = WorkerHeartbeat{w, session[w]};
          break;
        default:
          break;
      }
      for (const Decision& d : s.Apply(e, At(now))) {
        if (const auto* a = std::get_if<AssignAttempt>(&d)) {
          running[a->attempt] = *a;
          if (host[a->task.job]) {
            ++host_assigned;
            EXPECT_TRUE(allows[a->worker])
                << "job " << a->task.job << " task " << a->task.index << " on " << a->worker;
          }
        }
      }
      for (const JobSummary& j : s.Jobs()) {
        EXPECT_TRUE(j.host_network_refused == 0 || host[j.job]) << "job " << j.job;
      }
    }
  }
  EXPECT_GT(host_assigned, 100);  // the check above was exercised
}

}  // namespace
}  // namespace idlepool::core
