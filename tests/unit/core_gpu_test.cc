// GPUs in the pure scheduler core: which devices an attempt gets (best fit, memory and API
// filters), that they are freed however the attempt ends, that a restart restores them, that a
// job no worker can fit says so, and a randomized check that two running attempts never share a
// device. Explicit `now` values, no clocks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "core/scheduler.h"
#include "core/types.h"
#include "tests/unit/core_test_util.h"

namespace idlepool::core {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using test::At;
using test::Only;

using Gpus = std::vector<uint32_t>;

GpuDevice Dev(uint32_t index, uint64_t mb, std::vector<std::string> apis = {"cuda"}) {
  return GpuDevice{index, mb, std::move(apis)};
}

Resources Need(uint32_t gpus, uint64_t mb = 0, std::string api = "") {
  Resources r;
  r.gpus = gpus;
  r.gpu_memory_mb = mb;
  r.gpu_api = std::move(api);
  return r;
}

class CoreGpuTest : public ::testing::Test {
 protected:
  std::vector<Decision> Do(const Event& e, int64_t ms) { return s_.Apply(e, At(ms)); }

  std::vector<Decision> Hello(const std::string& w, SessionId session, std::vector<GpuDevice> gpus,
                              int64_t ms = 0, std::vector<AttemptId> held = {},
                              const std::string& boot = "boot1", uint32_t cpus = 8) {
    WorkerHello h{w, session, boot, Resources{cpus, 0, 0}, std::move(held)};
    h.gpus = std::move(gpus);
    return Do(h, ms);
  }
  std::vector<Decision> Submit(JobId job, uint32_t tasks, Resources need, int64_t ms = 0,
                               Millis timeout = Millis{0}) {
    return Do(JobSubmitted{job, tasks, need, 3, timeout}, ms);
  }
  std::vector<Decision> Report(const std::string& w, SessionId session, AttemptId a,
                               ReportResult r, int64_t ms) {
    AttemptReport rep{w, session, a, r, r == ReportResult::kFailed ? 1 : 0, {}, "", std::nullopt};
    if (r == ReportResult::kSucceeded) rep.outputs = {test::Out("o")};
    return Do(rep, ms);
  }
  // The GPUs of each assignment in `out`, in order.
  static std::vector<Gpus> Assigned(const std::vector<Decision>& out) {
    std::vector<Gpus> g;
    for (const AssignAttempt& a : Only<AssignAttempt>(out)) g.push_back(a.gpus);
    return g;
  }
  WorkerView Worker(const std::string& name) const {
    for (const WorkerView& v : s_.Workers()) {
      if (v.worker == name) return v;
    }
    ADD_FAILURE() << "no worker " << name;
    return {};
  }

  Scheduler s_{[] {
    Options o;
    o.policy = Policy::Fifo();
    return o;
  }()};
};

TEST_F(CoreGpuTest, BestFitTakesTheSmallestDeviceThatFitsThenTheLowestIndex) {
  Hello("a", 1,
        {Dev(0, 24000), Dev(1, 8000, {"cuda", "opencl"}), Dev(2, 8000), Dev(3, 16000, {"opencl"})});
  EXPECT_THAT(Assigned(Submit(1, 1, Need(1, 8000), 1)), ElementsAre(Gpus{1}));
  EXPECT_THAT(Assigned(Submit(2, 1, Need(1, 8000), 2)), ElementsAre(Gpus{2}));
  // Memory filter: 3 (16 GB, OpenCL only) before 0 (24 GB); API filter: only 0 does CUDA.
  EXPECT_THAT(Assigned(Submit(3, 1, Need(1, 0, "cuda"), 3)), ElementsAre(Gpus{0}));
  EXPECT_THAT(Assigned(Submit(4, 1, Need(1, 0, "opencl"), 4)), ElementsAre(Gpus{3}));
  EXPECT_THAT(Worker("a").gpus_busy, ElementsAre(0, 1, 2, 3));
  // Nothing left: the next one waits, and it is not a job that fits no worker.
  EXPECT_THAT(Assigned(Submit(5, 1, Need(1), 5)), IsEmpty());
  EXPECT_FALSE(s_.Job(5)->fits_no_worker);
}

TEST_F(CoreGpuTest, HeldDeviceGetsNoNewAttemptUntilFreed) {
  Hello("a", 1, {Dev(0, 8000), Dev(1, 8000)});
  // The owner uses device 0 (GpusHeld): the first attempt gets 1, the next one waits.
  EXPECT_THAT(Do(GpusHeld{"a", 1, {0}}, 1), IsEmpty());
  EXPECT_TRUE(Worker("a").gpus[0].held);
  EXPECT_THAT(Assigned(Submit(1, 2, Need(1), 2)), ElementsAre(Gpus{1}));
  EXPECT_EQ(s_.Job(1)->pending, 1u);
  EXPECT_FALSE(s_.Job(1)->fits_no_worker);  // held for now, not unfit
  // An old session's word and unknown indexes are ignored.
  EXPECT_THAT(Assigned(Do(GpusHeld{"a", 7, {}}, 3)), IsEmpty());
  EXPECT_THAT(Assigned(Do(GpusHeld{"a", 1, {0, 9}}, 4)), IsEmpty());
  // Freed: the waiting task gets device 0 at once.
  EXPECT_THAT(Assigned(Do(GpusHeld{"a", 1, {}}, 5)), ElementsAre(Gpus{0}));
  EXPECT_FALSE(Worker("a").gpus[0].held);
}

TEST_F(CoreGpuTest, HoldingADeviceAnAttemptOwnsLeavesItsAttemptRunning) {
  Hello("a", 1, {Dev(0, 8000)});
  EXPECT_THAT(Assigned(Submit(1, 1, Need(1), 1)), ElementsAre(Gpus{0}));
  const std::vector<Decision> out = Do(GpusHeld{"a", 1, {0}}, 2);
  EXPECT_TRUE(Only<KillAttempt>(out).empty());
  EXPECT_THAT(Worker("a").gpus_busy, ElementsAre(0));
  // It ends; the device is free of its attempt but still held: the next task waits.
  Report("a", 1, 1, ReportResult::kSucceeded, 3);
  EXPECT_THAT(Assigned(Submit(2, 1, Need(1), 4)), IsEmpty());
  EXPECT_THAT(Assigned(Do(GpusHeld{"a", 1, {}}, 5)), ElementsAre(Gpus{0}));
}

TEST_F(CoreGpuTest, SeveralDevicesPerAttemptAreChosenTogetherInIndexOrder) {
  Hello("a", 1, {Dev(0, 40000), Dev(1, 8000), Dev(2, 8000), Dev(5, 16000)});
  EXPECT_THAT(Assigned(Submit(1, 1, Need(3, 8000), 1)), ElementsAre(Gpus{1, 2, 5}));
  EXPECT_THAT(Assigned(Submit(2, 2, Need(1), 2)), ElementsAre(Gpus{0}));
  // A task needing more devices than are free waits, though slots are free.
  EXPECT_THAT(Assigned(Submit(3, 1, Need(2), 3)), IsEmpty());
  EXPECT_EQ(s_.Job(2)->pending, 1u);
}

TEST_F(CoreGpuTest, JobThatNoWorkersGpusFitIsFlagged) {
  Hello("a", 1, {Dev(0, 8000, {"cuda", "opencl"}), Dev(1, 8000)});
  Submit(1, 1, Need(3), 1);                 // count
  Submit(2, 1, Need(1, 16000), 1);          // memory
  Submit(3, 1, Need(1, 0, "rocm"), 1);      // API
  Submit(4, 1, Need(2, 0, "opencl"), 1);    // only one device does OpenCL
  Submit(5, 2, Need(2, 8000, "cuda"), 1);   // fits (one runs, one waits)
  for (JobId j : {1, 2, 3, 4}) EXPECT_TRUE(s_.Job(j)->fits_no_worker) << "job " << j;
  EXPECT_FALSE(s_.Job(5)->fits_no_worker);
  // A bigger worker joins.
  Hello("b", 2, {Dev(0, 16000, {"rocm", "opencl"}), Dev(1, 16000, {"opencl"}), Dev(2, 1)}, 2);
  EXPECT_FALSE(s_.Job(2)->fits_no_worker);
  EXPECT_FALSE(s_.Job(3)->fits_no_worker);
  EXPECT_FALSE(s_.Job(4)->fits_no_worker);
  EXPECT_FALSE(s_.Job(1)->fits_no_worker);  // three devices, each fits "any"
}

TEST_F(CoreGpuTest, AWorkerWithoutADeviceListOffersItsCountAsAnonymousDevices) {
  WorkerHello h{"a", 1, "boot", Resources{4, 2, 0}, {}};
  EXPECT_THAT(Assigned(Do(h, 0)), IsEmpty());
  EXPECT_THAT(Assigned(Submit(1, 3, Need(1), 1)), ElementsAre(Gpus{0}, Gpus{1}));
  // Anonymous devices have no known memory or API.
  Submit(2, 1, Need(1, 1), 2);
  EXPECT_TRUE(s_.Job(2)->fits_no_worker);
}

// Every way an attempt can end frees its devices: the next GPU task gets device 0 again.
enum class EndPath {
  kSucceeded, kFailed, kTimedOutReport, kPreempted, kMachineFault, kLostWorker, kCancelled,
  kLeaving, kRestartedWorker, kNoLongerHeld, kTimeoutBackstop
};

class CoreGpuEndTest : public CoreGpuTest, public ::testing::WithParamInterface<EndPath> {};

TEST_P(CoreGpuEndTest, DevicesAreFreeAfterTheAttemptEnds) {
  Hello("a", 1, {Dev(0, 8000)});
  ASSERT_THAT(Assigned(Submit(1, 1, Need(1), 0, Millis{1000})), ElementsAre(Gpus{0}));
  Submit(2, 1, Need(1), 1);
  EXPECT_THAT(Worker("a").gpus_busy, ElementsAre(0));
  std::vector<Decision> out;
  SessionId session = 1;
  switch (GetParam()) {
    case EndPath::kSucceeded: out = Report("a", 1, 1, ReportResult::kSucceeded, 10); break;
    case EndPath::kFailed: out = Report("a", 1, 1, ReportResult::kFailed, 10); break;
    case EndPath::kTimedOutReport: out = Report("a", 1, 1, ReportResult::kTimedOut, 10); break;
    case EndPath::kPreempted: out = Report("a", 1, 1, ReportResult::kPreempted, 10); break;
    case EndPath::kMachineFault: out = Report("a", 1, 1, ReportResult::kMachineFault, 10); break;
    case EndPath::kLostWorker:
      EXPECT_THAT(Only<WorkerLost>(Do(Tick{}, 6000)), testing::SizeIs(1));
      EXPECT_THAT(Worker("a").gpus_busy, IsEmpty());
      session = 2;
      out = Hello("a", 2, {Dev(0, 8000)}, 6001, {}, "boot2");
      break;
    case EndPath::kCancelled: out = Do(JobCancelled{1}, 10); break;
    case EndPath::kLeaving:
      Do(WorkerLeaving{"a", 1, {1}}, 10);
      EXPECT_THAT(Worker("a").gpus_busy, IsEmpty());
      Do(SessionClosed{"a", 1}, 11);
      session = 2;
      out = Hello("a", 2, {Dev(0, 8000)}, 20, {}, "boot2");
      break;
    case EndPath::kRestartedWorker:
      Do(SessionClosed{"a", 1}, 10);
      session = 2;
      out = Hello("a", 2, {Dev(0, 8000)}, 20, {1}, "boot2");  // new boot id: its attempts are gone
      break;
    case EndPath::kNoLongerHeld:
      Do(SessionClosed{"a", 1}, 10);
      session = 2;
      out = Hello("a", 2, {Dev(0, 8000)}, 20, {}, "boot1");
      break;
    case EndPath::kTimeoutBackstop:
      // Past timeout + timeout_grace with no report: the core kills it itself.
      for (int64_t t = 1000; t <= 21000; t += 1000) Do(WorkerHeartbeat{"a", 1}, t);
      out = Do(Tick{}, 21001);
      ASSERT_THAT(Only<KillAttempt>(out), testing::SizeIs(1));
      break;
  }
  const std::vector<AssignAttempt> assigned = Only<AssignAttempt>(out);
  ASSERT_FALSE(assigned.empty());
  // Job 2's task (or job 1's again, requeued first) got device 0 back.
  EXPECT_EQ(assigned.back().gpus, Gpus{0});
  EXPECT_EQ(assigned.back().session, session);
  EXPECT_THAT(Worker("a").gpus_busy, ElementsAre(0));
  EXPECT_EQ(Worker("a").attempts_running, 1u);
}

INSTANTIATE_TEST_SUITE_P(
    EveryEnd, CoreGpuEndTest,
    ::testing::Values(EndPath::kSucceeded, EndPath::kFailed, EndPath::kTimedOutReport,
                      EndPath::kPreempted, EndPath::kMachineFault, EndPath::kLostWorker,
                      EndPath::kCancelled, EndPath::kLeaving, EndPath::kRestartedWorker,
                      EndPath::kNoLongerHeld, EndPath::kTimeoutBackstop));

TEST_F(CoreGpuTest, SupersededBackupFreesItsDevices) {
  // Speculation on: a slow original gets a backup on the other worker; the first success frees
  // both attempts' devices.
  Scheduler s;  // default policy (speculate)
  auto hello = [&](const std::string& w, SessionId id, int64_t ms) {
    WorkerHello h{w, id, "boot", Resources{1, 0, 0}, {}};
    h.gpus = {Dev(0, 8000)};
    return s.Apply(h, At(ms));
  };
  hello("a", 1, 0);
  hello("b", 2, 0);
  // Teach the job's mean with quick tasks, then leave one running for long.
  std::map<AttemptId, std::string> where;
  std::map<AttemptId, SessionId> session_of;
  auto track = [&](const std::vector<Decision>& out) {
    for (const AssignAttempt& a : Only<AssignAttempt>(out)) {
      where[a.attempt] = a.worker;
      session_of[a.attempt] = a.session;
    }
  };
  track(s.Apply(JobSubmitted{1, 3, Need(1), 3, Millis{0}}, At(0)));
  for (AttemptId a : {1, 2}) {
    track(s.Apply(AttemptReport{where[a], session_of[a], a, ReportResult::kSucceeded, 0,
                                {test::Out("o")}, "", std::nullopt},
                  At(100)));
  }
  // #3 runs on one worker; the other is free. Heartbeats, ticks until a backup starts.
  ASSERT_EQ(where.count(3), 1u);
  AttemptId backup = 0;
  for (int64_t t = 200; t < 20000 && backup == 0; t += 200) {
    std::vector<Decision> out = s.Apply(WorkerHeartbeat{"a", 1}, At(t));
    for (const Event& e : {Event{WorkerHeartbeat{"b", 2}}, Event{Tick{}}}) {
      for (Decision& d : s.Apply(e, At(t))) out.push_back(std::move(d));
    }
    for (const AssignAttempt& a : Only<AssignAttempt>(out)) {
      backup = a.attempt;
      EXPECT_EQ(a.gpus, Gpus{0});
      EXPECT_NE(a.worker, where[3]);
      where[a.attempt] = a.worker;
      session_of[a.attempt] = a.session;
    }
  }
  ASSERT_NE(backup, 0u) << "no backup attempt was launched";
  auto out = s.Apply(AttemptReport{where[backup], session_of[backup], backup,
                                   ReportResult::kSucceeded, 0, {test::Out("o")}, "",
                                   std::nullopt},
                     At(30000));
  EXPECT_THAT(Only<KillAttempt>(out), testing::SizeIs(1));  // the original, superseded
  for (const WorkerView& v : s.Workers()) EXPECT_THAT(v.gpus_busy, IsEmpty()) << v.worker;
}

TEST_F(CoreGpuTest, RestartRestoresTheDevicesOfRunningAttempts) {
  RestoredState st;
  JobSubmitted spec{1, 3, Need(1), 3, Millis{0}};
  st.jobs.push_back(RestoredJob{spec, JobState::kRunning, {}, {}});
  st.tasks = {RestoredTask{{1, 0}, TaskState::kRunning, 0},
              RestoredTask{{1, 1}, TaskState::kRunning, 0},
              RestoredTask{{1, 2}, TaskState::kPending, 0}};
  // #1 on device 1; #2 claims device 1 as well (a damaged store): only one may have it.
  st.running = {RestoredAttempt{1, {1, 0}, "a", {1}}, RestoredAttempt{2, {1, 1}, "a", {1}}};
  st.next_attempt_id = 3;
  s_.Restore(st, At(0));
  auto out = Hello("a", 7, {Dev(0, 8000), Dev(1, 8000)}, 10, {1, 2});
  // #1 keeps device 1, #2 is dropped, and the pending tasks get device 0 (one of them).
  std::vector<KillAttempt> kills = Only<KillAttempt>(out);
  ASSERT_EQ(kills.size(), 1u);
  EXPECT_EQ(kills[0].attempt, 2u);
  ASSERT_EQ(Only<AttemptEnded>(out).size(), 1u);
  EXPECT_EQ(Only<AttemptEnded>(out)[0].attempt, 2u);
  EXPECT_THAT(Assigned(out), ElementsAre(Gpus{0}));
  EXPECT_THAT(Worker("a").gpus_busy, ElementsAre(0, 1));
  // #1 ends: device 1 goes to the last pending task.
  EXPECT_THAT(Assigned(Report("a", 7, 1, ReportResult::kSucceeded, 20)), ElementsAre(Gpus{1}));
}

TEST_F(CoreGpuTest, ARevivedAttemptGetsItsOwnDevicesBackOrIsKilled) {
  Hello("a", 1, {Dev(0, 8000), Dev(1, 8000)});
  ASSERT_THAT(Assigned(Submit(1, 1, Need(1), 0)), ElementsAre(Gpus{0}));
  // a goes silent and is lost; it comes back (same process) still running #1 on device 0.
  Do(Tick{}, 6000);
  auto out = Hello("a", 2, {Dev(0, 8000), Dev(1, 8000)}, 6001, {1}, "boot1");
  ASSERT_THAT(Only<AttemptCreated>(out), testing::SizeIs(1));
  EXPECT_TRUE(Only<AttemptCreated>(out)[0].revived);
  EXPECT_EQ(Only<AttemptCreated>(out)[0].gpus, Gpus{0});
  EXPECT_THAT(Worker("a").gpus_busy, ElementsAre(0));

}

TEST_F(CoreGpuTest, ALostAttemptWhoseDeviceWasTakenIsNotRevived) {
  Hello("a", 1, {Dev(0, 8000)});
  ASSERT_THAT(Assigned(Submit(2, 1, Need(1), 0)), ElementsAre(Gpus{0}));  // #1 of job 2
  Submit(1, 1, Need(1), 1);  // job 1 waits for the device (placed first once it frees)
  Do(Tick{}, 6000);          // a is lost: #1 ends kLost, job 2's task is pending again
  // a says hello without #1 (it was still starting it up): job 1 takes device 0.
  ASSERT_THAT(Assigned(Hello("a", 2, {Dev(0, 8000)}, 6001, {}, "boot1")), ElementsAre(Gpus{0}));
  // Then it lists #1 after all: its task is pending, but its device is #2's now.
  auto out = Hello("a", 3, {Dev(0, 8000)}, 6002, {1, 2}, "boot1");
  EXPECT_THAT(Only<AttemptCreated>(out), IsEmpty());
  ASSERT_EQ(Only<KillAttempt>(out).size(), 1u);
  EXPECT_EQ(Only<KillAttempt>(out)[0].attempt, 1u);
  EXPECT_THAT(Worker("a").gpus_busy, ElementsAre(0));
  EXPECT_EQ(s_.Job(2)->pending, 1u);
}

// Random events: after every Apply, the running attempts on each worker own disjoint devices,
// each of the worker's devices that the core counts busy is owned by exactly one running
// attempt, every assignment gets as many devices as its job asks, each one meeting its memory
// and API, and when nothing runs every device is free. Each seed replays exactly.
TEST(CoreGpuRandomTest, TwoRunningAttemptsNeverShareADevice) {
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    SCOPED_TRACE(::testing::Message() << "seed " << seed);
    std::mt19937_64 rng(seed);
    auto pick = [&](uint64_t n) { return static_cast<uint64_t>(rng() % n); };
    Options o{Millis{5000}};
    if (seed % 2 == 0) o.policy = Policy::Fifo();  // odd seeds: default policy, with backups
    Scheduler s{o};
    const std::vector<std::string> names = {"a", "b", "c", "d"};
    const std::vector<std::string> apis = {"cuda", "opencl", "rocm"};
    std::map<std::string, std::vector<GpuDevice>> devices;  // as last said in a hello
    std::map<std::string, SessionId> session;
    std::map<std::string, std::string> boot;
    std::map<JobId, Resources> need;
    struct Live {
      std::string worker;
      Gpus gpus;
    };
    std::map<AttemptId, Live> live;  // created, not ended
    std::map<AttemptId, AssignAttempt> assigned;  // still to report
    SessionId next_session = 1;
    JobId next_job = 1;
    int64_t now = 0;
    for (int step = 0; step < 500; ++step) {
      now += static_cast<int64_t>(pick(8) == 0 ? 6000 : pick(400));
      Event e = Tick{};
      const std::string w = names[pick(names.size())];
      switch (pick(12)) {
        case 0:
        case 1: {
          Resources r;
          r.cpus = 1;
          r.gpus = static_cast<uint32_t>(pick(3));
          if (r.gpus > 0 && pick(2) == 0) r.gpu_memory_mb = 4000 * (1 + pick(4));
          if (r.gpus > 0 && pick(3) == 0) r.gpu_api = apis[pick(apis.size())];
          need[next_job] = r;
          e = JobSubmitted{next_job++, 1 + static_cast<uint32_t>(pick(5)), r, 2, Millis{0}};
          break;
        }
        case 2: {
          session[w] = next_session++;
          if (!boot.count(w) || pick(4) == 0) boot[w] = "boot" + std::to_string(next_session);
          std::vector<GpuDevice> d;
          const uint32_t n = static_cast<uint32_t>(pick(5));
          for (uint32_t i = 0; i < n; ++i) {
            std::vector<std::string> a = {apis[pick(apis.size())]};
            if (pick(2) == 0) a.push_back(apis[pick(apis.size())]);
            d.push_back(GpuDevice{i * 2 + static_cast<uint32_t>(pick(2)), 4000 * (1 + pick(4)), a});
          }
          WorkerHello h{w, session[w], boot[w], Resources{1 + static_cast<uint32_t>(pick(4)), 0, 0},
                        {}};
          h.gpus = d;
          for (const auto& [id, a] : assigned) {
            if (a.worker == w && pick(5) != 0) h.held.push_back(id);
          }
          h.accepting = pick(5) != 0;
          e = h;
          break;
        }
        case 3:
          if (session.count(w)) e = SessionClosed{w, session[w]};
          break;
        case 4:
          if (session.count(w)) {
            WorkerLeaving l{w, session[w], {}};
            for (const auto& [id, a] : assigned) {
              if (a.worker == w) l.vacated.push_back(id);
            }
            e = l;
          }
          break;
        case 5:
          if (next_job > 1 && pick(3) == 0) e = JobCancelled{1 + pick(next_job - 1)};
          break;
        case 6: case 7: case 8:
          if (!assigned.empty()) {
            auto it = assigned.begin();
            std::advance(it, static_cast<long>(pick(assigned.size())));
            const AssignAttempt a = it->second;
            assigned.erase(it);
            const ReportResult results[] = {ReportResult::kSucceeded, ReportResult::kFailed,
                                            ReportResult::kTimedOut, ReportResult::kPreempted,
                                            ReportResult::kMachineFault};
            const ReportResult r = results[pick(5)];
            AttemptReport rep{a.worker, a.session, a.attempt, r, 0, {}, "", std::nullopt};
            if (r == ReportResult::kSucceeded) rep.outputs = {test::Out("o")};
            e = rep;
          }
          break;
        case 9:
        case 10:
          for (const auto& [name, id] : session) (void)s.Apply(WorkerHeartbeat{name, id}, At(now));
          break;
        default:
          break;  // Tick
      }
      const std::vector<Decision> out = s.Apply(e, At(now));
      if (const auto* h = std::get_if<WorkerHello>(&e)) {
        // The device list the core now has (a refused hello changes nothing).
        const bool refused = std::any_of(out.begin(), out.end(), [](const Decision& d) {
          return std::holds_alternative<RefuseSession>(d);
        });
        if (!refused) devices[h->worker] = h->gpus;
      }
      for (const Decision& d : out) {
        if (const auto* c = std::get_if<AttemptCreated>(&d)) {
          ASSERT_EQ(live.count(c->attempt), 0u);
          live[c->attempt] = Live{c->worker, c->gpus};
        } else if (const auto* x = std::get_if<AttemptEnded>(&d)) {
          live.erase(x->attempt);
          assigned.erase(x->attempt);
        } else if (const auto* a = std::get_if<AssignAttempt>(&d)) {
          assigned[a->attempt] = *a;
          const Resources& r = need.at(a->task.job);
          ASSERT_EQ(a->gpus.size(), r.gpus);
          ASSERT_EQ(live.at(a->attempt).gpus, a->gpus);
          for (uint32_t g : a->gpus) {
            auto dev = std::find_if(devices[a->worker].begin(), devices[a->worker].end(),
                                    [&](const GpuDevice& x) { return x.index == g; });
            ASSERT_NE(dev, devices[a->worker].end()) << "device " << g << " not offered";
            ASSERT_GE(dev->memory_mb, r.gpu_memory_mb);
            if (!r.gpu_api.empty()) {
              ASSERT_NE(std::find(dev->apis.begin(), dev->apis.end(), r.gpu_api), dev->apis.end());
            }
          }
        }
      }
      // The invariant.
      std::map<std::string, std::multiset<uint32_t>> owned;
      for (const auto& [id, l] : live) owned[l.worker].insert(l.gpus.begin(), l.gpus.end());
      for (const WorkerView& v : s.Workers()) {
        const std::multiset<uint32_t>& mine = owned[v.worker];
        for (uint32_t g : mine) {
          ASSERT_EQ(mine.count(g), 1u) << "step " << step << ": device " << g << " of "
                                       << v.worker << " owned by two running attempts";
        }
        ASSERT_EQ(std::vector<uint32_t>(mine.begin(), mine.end()), v.gpus_busy)
            << "step " << step << ": " << v.worker;
        if (live.empty()) {
          ASSERT_THAT(v.gpus_busy, IsEmpty());
        }
      }
    }
  }
}

}  // namespace
}  // namespace idlepool::core
