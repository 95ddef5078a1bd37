// The serving router (src/serve/router.h) by example: balance, weights and speed, ejection,
// retries, the queue and its 503, zero replicas, drain and removal, deadlines, bad input.
#include "serve/router.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace idlepool::serve {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

Time Ms(int64_t ms) { return Time{milliseconds(ms)}; }

ServiceConfig Config(uint32_t max_concurrent) {
  ServiceConfig c;
  c.max_concurrent = max_concurrent;
  return c;
}

// A service "m" with `n` ready replicas, ids 1..n.
void AddReady(Router& router, uint32_t n, const ServiceConfig& config) {
  ASSERT_TRUE(router.AddService("m", config).ok());
  for (ReplicaId id = 1; id <= n; ++id) {
    ASSERT_TRUE(router.AddReplica("m", id).ok());
    ASSERT_TRUE(router.SetReady(id, Time{}).status.ok());
  }
}

SubmitResult MustRoute(Router& router, Time now) {
  SubmitResult s = router.Submit("m", now);
  EXPECT_EQ(s.kind, SubmitKind::kRouted);
  return s;
}

// Drives `count` requests into "m" from `start`, one every `gap`, each taking `took(replica)`;
// returns the requests each replica got.
template <typename Took>
std::map<ReplicaId, int> Drive(Router& router, int count, Micros gap, Took took,
                               Time start = Time{}) {
  std::map<ReplicaId, int> got;
  std::multimap<Time, RequestId> due;  // finish time -> request
  std::map<RequestId, ReplicaId> where;
  auto finish_until = [&](Time now) {
    while (!due.empty() && due.begin()->first <= now) {
      auto [at, id] = *due.begin();
      due.erase(due.begin());
      FinishResult f = router.Finish(id, Outcome::kOk, at);
      EXPECT_TRUE(f.status.ok());
      for (const Dispatch& d : f.dispatched) {
        ++got[d.replica];
        due.emplace(at + took(d.replica), d.request);
      }
    }
  };
  Time now = start;
  for (int i = 0; i < count; ++i, now += gap) {
    finish_until(now);
    SubmitResult s = router.Submit("m", now);
    EXPECT_NE(s.kind, SubmitKind::kRejected);
    if (s.kind == SubmitKind::kRouted) {
      ++got[s.replica];
      due.emplace(now + took(s.replica), s.request);
    }
  }
  finish_until(now + std::chrono::hours(1));
  EXPECT_EQ(router.CheckInvariants(), "");
  return got;
}

double MaxOverMin(const std::map<ReplicaId, int>& got, size_t replicas) {
  EXPECT_EQ(got.size(), replicas);
  auto [lo, hi] = std::minmax_element(got.begin(), got.end(),
                                      [](auto& a, auto& b) { return a.second < b.second; });
  return static_cast<double>(hi->second) / std::max(lo->second, 1);
}

TEST(RouterBalance, FourReplicasOfOneSlotTakeFourRequests) {
  Router router;
  AddReady(router, 4, Config(1));
  std::set<ReplicaId> busy;
  std::vector<SubmitResult> routed;
  for (int i = 0; i < 4; ++i) {
    routed.push_back(MustRoute(router, Time{}));
    busy.insert(routed.back().replica);
  }
  EXPECT_EQ(busy.size(), 4u);
  SubmitResult fifth = router.Submit("m", Time{});
  EXPECT_EQ(fifth.kind, SubmitKind::kQueued);
  // The first slot to free takes the queued request.
  FinishResult f = router.Finish(routed[2].request, Outcome::kOk, Ms(5));
  ASSERT_EQ(f.dispatched.size(), 1u);
  EXPECT_EQ(f.dispatched[0], (Dispatch{fifth.request, routed[2].replica}));
  EXPECT_EQ(router.FindReplica(routed[2].replica)->replica.in_flight, 1u);
}

TEST(RouterBalance, SixteenReplicasAtASteadyRateStayWithinTwentyPercent) {
  // Light load (each request done before the next) and a load of about 8 in flight.
  for (Micros took : {Micros(500), Micros(8000)}) {
    Router router(RouterConfig{.seed = 7});
    AddReady(router, 16, Config(2));
    auto got = Drive(router, 16000, milliseconds(1), [&](ReplicaId) { return took; });
    // The bar is 1.2; the virtual time on ties keeps it within a few percent (random
    // ties alone give 1.05 to 1.1 here).
    double ratio = MaxOverMin(got, 16);
    EXPECT_LE(ratio, 1.03) << "request time " << took.count() << " us";
  }
}

TEST(RouterWeights, ALowerWeightGetsLessTrafficAndZeroGetsNone) {
  // Light load: the share follows the weight. About 2.5 in flight: less, still well under.
  for (Micros took : {Micros(500), Micros(2500)}) {
    Router router(RouterConfig{.seed = 3});
    AddReady(router, 4, Config(2));
    ASSERT_TRUE(router.SetWeight(4, 0.25, Time{}).status.ok());
    auto got = Drive(router, 8000, milliseconds(1), [&](ReplicaId) { return took; });
    double share = got[4] / ((got[1] + got[2] + got[3]) / 3.0);
    if (took == Micros(500)) {
      EXPECT_NEAR(share, 0.25, 0.02);
    } else {
      EXPECT_LT(share, 0.4);
      EXPECT_GT(share, 0.1);
    }
  }
  Router router;
  AddReady(router, 4, Config(2));

  ASSERT_TRUE(router.SetWeight(4, 0, Time{}).status.ok());
  for (int i = 0; i < 6; ++i) EXPECT_NE(MustRoute(router, Time{}).replica, 4u);
  EXPECT_EQ(router.Submit("m", Time{}).kind, SubmitKind::kQueued);
}

TEST(RouterWeights, AReplicaBackFromAPauseIsOwedNoBurst) {
  Router router(RouterConfig{.seed = 9});
  AddReady(router, 4, Config(2));
  ASSERT_TRUE(router.SetWeight(4, 0, Time{}).status.ok());
  auto before = Drive(router, 4000, milliseconds(1), [](ReplicaId) { return Micros(500); });
  EXPECT_EQ(before.count(4), 0u);
  ASSERT_TRUE(router.SetWeight(4, 1, Ms(5000)).status.ok());
  auto after = Drive(
      router, 400, milliseconds(1), [](ReplicaId) { return Micros(500); }, Ms(5000));
  EXPECT_NEAR(after[4], 100, 10);  // its quarter, not the 2/4 of a replica winning every tie
}

TEST(RouterWeights, ASlowerReplicaGetsLessTraffic) {
  Router router(RouterConfig{.seed = 5});
  AddReady(router, 4, Config(4));
  auto got = Drive(router, 8000, milliseconds(1),
                   [](ReplicaId r) { return r == 1 ? Micros(8000) : Micros(2000); });
  double others = (got[2] + got[3] + got[4]) / 3.0;
  EXPECT_LT(got[1], 0.6 * others);
  EXPECT_GT(router.FindReplica(2)->replica.speed, router.FindReplica(1)->replica.speed);
}

TEST(RouterEjection, ThreeErrorsEjectThenProbationThenDoubledBackoff) {
  Router router;
  AddReady(router, 2, Config(4));
  ASSERT_TRUE(router.SetWeight(2, 0, Time{}).status.ok());  // everything goes to replica 1
  for (int i = 0; i < 3; ++i) {
    SubmitResult s = MustRoute(router, Ms(i));
    ASSERT_EQ(s.replica, 1u);
    EXPECT_EQ(router.FindReplica(1)->replica.state, ReplicaState::kReady);
    ASSERT_TRUE(router.Finish(s.request, Outcome::kUpstreamError, Ms(10 + i)).status.ok());
  }
  auto r1 = router.FindReplica(1)->replica;
  EXPECT_EQ(r1.state, ReplicaState::kEjected);
  EXPECT_EQ(r1.ejected_until, Ms(12) + seconds(5));
  EXPECT_EQ(router.NextDeadline(), Ms(12) + seconds(5));
  SubmitResult waiting = router.Submit("m", Ms(20));
  EXPECT_EQ(waiting.kind, SubmitKind::kQueued);

  ExpireResult early = router.Expire(Ms(12) + seconds(5) - Micros(1));
  EXPECT_TRUE(early.returned.empty());
  ExpireResult back = router.Expire(Ms(12) + seconds(5));
  ASSERT_EQ(back.returned.size(), 1u);
  EXPECT_EQ(back.returned[0], 1u);
  ASSERT_EQ(back.dispatched.size(), 1u);
  EXPECT_EQ(back.dispatched[0], (Dispatch{waiting.request, 1}));
  EXPECT_TRUE(router.FindReplica(1)->replica.probation);

  // On probation one error is enough, and the backoff doubles.
  Time t = Ms(6000);
  ASSERT_TRUE(router.Finish(waiting.request, Outcome::kUpstreamError, t).status.ok());
  EXPECT_EQ(router.FindReplica(1)->replica.state, ReplicaState::kEjected);
  EXPECT_EQ(router.FindReplica(1)->replica.ejected_until, t + seconds(10));
  EXPECT_EQ(router.Expire(t + seconds(10)).returned.size(), 1u);
  SubmitResult ok = MustRoute(router, t + seconds(10));
  ASSERT_TRUE(router.Finish(ok.request, Outcome::kOk, t + seconds(11)).status.ok());
  EXPECT_FALSE(router.FindReplica(1)->replica.probation);
  EXPECT_EQ(router.Snapshot().services[0].ejections, 2u);

  // Back for eject_backoff_max (5 min) since its return: the backoff starts over at 5 s.
  Time later = t + seconds(10) + std::chrono::minutes(5);
  for (int i = 0; i < 3; ++i) {
    SubmitResult s = MustRoute(router, later);
    ASSERT_TRUE(router.Finish(s.request, Outcome::kUpstreamError, later).status.ok());
  }
  EXPECT_EQ(router.FindReplica(1)->replica.ejected_until, later + seconds(5));
}

TEST(RouterEjection, AtMostHalfTheReplicasAreEjected) {
  Router router;
  AddReady(router, 2, Config(8));
  for (int i = 0; i < 12; ++i) {
    SubmitResult s = MustRoute(router, Ms(i));
    ASSERT_TRUE(router.Finish(s.request, Outcome::kUpstreamError, Ms(i)).status.ok());
  }
  int ejected = 0;
  RouterSnapshot snap = router.Snapshot();
  for (const auto& r : snap.services[0].replicas) ejected += r.state == ReplicaState::kEjected;
  EXPECT_EQ(ejected, 1);
  MustRoute(router, Ms(20));  // the other one still serves
}

TEST(RouterRetry, NeverTheSameReplicaAndAtMostTheBudget) {
  Router router;
  AddReady(router, 4, Config(1));
  SubmitResult s = MustRoute(router, Time{});
  std::set<ReplicaId> tried = {s.replica};
  for (int i = 0; i < 2; ++i) {
    RetryResult r = router.Retry(s.request, Ms(i + 1));
    ASSERT_EQ(r.kind, RetryKind::kRouted);
    EXPECT_FALSE(tried.contains(r.replica));
    tried.insert(r.replica);
  }
  RetryResult last = router.Retry(s.request, Ms(3));
  EXPECT_EQ(last.kind, RetryKind::kFailed);
  EXPECT_EQ(router.Finish(s.request, Outcome::kOk, Ms(4)).status.code, Code::kNotFound);
  EXPECT_EQ(router.Snapshot().services[0].retries, 2u);
  EXPECT_EQ(router.Snapshot().services[0].failed, 1u);
  EXPECT_EQ(router.CheckInvariants(), "");
}

TEST(RouterRetry, WaitsForAnotherReplicaRatherThanTheOneThatFailedIt) {
  Router router;
  AddReady(router, 2, Config(1));
  SubmitResult a = MustRoute(router, Time{});
  SubmitResult b = MustRoute(router, Time{});
  RetryResult r = router.Retry(a.request, Ms(1));  // a's replica is free now, but failed it
  EXPECT_EQ(r.kind, RetryKind::kQueued);
  EXPECT_TRUE(r.dispatched.empty());
  SubmitResult c = router.Submit("m", Ms(2));  // a newcomer takes the free slot
  ASSERT_EQ(c.kind, SubmitKind::kRouted);
  EXPECT_EQ(c.replica, a.replica);
  FinishResult f = router.Finish(b.request, Outcome::kOk, Ms(3));
  ASSERT_EQ(f.dispatched.size(), 1u);
  EXPECT_EQ(f.dispatched[0], (Dispatch{a.request, b.replica}));
  // A replica added later also serves a retried request.
  ASSERT_TRUE(router.AddReplica("m", 9).ok());
  RetryResult again = router.Retry(a.request, Ms(4));
  EXPECT_EQ(again.kind, RetryKind::kQueued);
  FinishResult ready = router.SetReady(9, Ms(5));
  ASSERT_EQ(ready.dispatched.size(), 1u);
  EXPECT_EQ(ready.dispatched[0], (Dispatch{a.request, 9}));
}

TEST(RouterQueue, FullQueueRejectsWithRetryAfterFromTheMeasuredRate) {
  ServiceConfig c = Config(1);
  c.max_queue = 10;
  Router router;
  AddReady(router, 2, c);
  // Unmeasured: Retry-After is the queue deadline.
  for (int i = 0; i < 12; ++i) EXPECT_NE(router.Submit("m", Time{}).kind, SubmitKind::kRejected);
  SubmitResult full = router.Submit("m", Time{});
  EXPECT_EQ(full.kind, SubmitKind::kRejected);
  EXPECT_EQ(full.retry_after, seconds(30));
  EXPECT_EQ(full.request, 0u);

  // Each request takes 1 s on 2 replicas of 1 slot: 2 per second, 11 ahead -> 6 s.
  Router measured;
  AddReady(measured, 2, c);
  std::vector<RequestId> open;
  for (int i = 0; i < 12; ++i) open.push_back(measured.Submit("m", Time{}).request);
  Time now{};
  for (int i = 0; i < 2; ++i) {
    now += seconds(1);
    for (RequestId id : std::vector<RequestId>(open.begin() + 2 * i, open.begin() + 2 * i + 2))
      ASSERT_TRUE(measured.Finish(id, Outcome::kOk, now).status.ok());
    open.push_back(measured.Submit("m", now).request);
    open.push_back(measured.Submit("m", now).request);
  }
  SubmitResult r = measured.Submit("m", now);
  EXPECT_EQ(r.kind, SubmitKind::kRejected);
  EXPECT_EQ(r.retry_after, seconds(6));
  EXPECT_EQ(measured.Snapshot().services[0].rejected, 1u);
}

TEST(RouterQueue, KnownServiceWithoutReplicasQueuesUnknownIsNotFound) {
  Router router;
  ASSERT_TRUE(router.AddService("m", Config(1)).ok());
  ASSERT_TRUE(router.AddService("a", Config(1)).ok());
  EXPECT_EQ(router.Submit("nope", Time{}).kind, SubmitKind::kUnknownService);
  EXPECT_EQ(router.ServiceNames(), (std::vector<std::string>{"a", "m"}));
  SubmitResult s = router.Submit("m", Time{});
  EXPECT_EQ(s.kind, SubmitKind::kQueued);
  ASSERT_TRUE(router.AddReplica("m", 5).ok());
  EXPECT_EQ(router.Snapshot().services[1].queue_length, 1u);  // starting: nothing yet
  FinishResult ready = router.SetReady(5, seconds(20) + Time{});
  ASSERT_EQ(ready.dispatched.size(), 1u);
  EXPECT_EQ(ready.dispatched[0], (Dispatch{s.request, 5}));
}

TEST(RouterQueue, ExpireEndsRequestsPastTheirDeadlineAndNoneBefore) {
  Router router;
  ASSERT_TRUE(router.AddService("m", Config(1)).ok());
  SubmitResult own = router.Submit("m", Time{}, Ms(1000));  // its own, shorter deadline
  SubmitResult std_ = router.Submit("m", Ms(10));           // queue_deadline: 30 s
  EXPECT_EQ(router.NextDeadline(), Ms(1000));
  EXPECT_TRUE(router.Expire(Ms(999)).expired.empty());
  ExpireResult e = router.Expire(Ms(1000));
  ASSERT_EQ(e.expired.size(), 1u);
  EXPECT_EQ(e.expired[0], own.request);
  EXPECT_EQ(router.NextDeadline(), Ms(10) + seconds(30));
  // Past its deadline a request is not dispatched, even when a replica comes.
  ASSERT_TRUE(router.AddReplica("m", 1).ok());
  EXPECT_TRUE(router.SetReady(1, Ms(10) + seconds(30)).dispatched.empty());
  ExpireResult late = router.Expire(Ms(10) + seconds(31));
  ASSERT_EQ(late.expired.size(), 1u);
  EXPECT_EQ(late.expired[0], std_.request);
  EXPECT_EQ(router.NextDeadline(), std::nullopt);
  EXPECT_EQ(router.Retry(own.request, Ms(2000)).status.code, Code::kNotFound);
  EXPECT_EQ(router.Snapshot().services[0].expired, 2u);
}

TEST(RouterQueue, AClientThatLeavesWhileQueuedLeavesTheQueue) {
  Router router;
  ASSERT_TRUE(router.AddService("m", Config(1)).ok());
  SubmitResult s = router.Submit("m", Time{});
  EXPECT_EQ(router.Finish(s.request, Outcome::kOk, Ms(1)).status.code, Code::kFailedPrecondition);
  EXPECT_EQ(router.Retry(s.request, Ms(1)).status.code, Code::kFailedPrecondition);
  ASSERT_TRUE(router.Finish(s.request, Outcome::kClientGone, Ms(1)).status.ok());
  EXPECT_EQ(router.Snapshot().services[0].queue_length, 0u);
  EXPECT_EQ(router.Snapshot().services[0].client_gone, 1u);
  EXPECT_EQ(router.NextDeadline(), std::nullopt);
}

TEST(RouterDrain, NoNewRequestFromTheCallOnAndDrainedWhenEmpty) {
  Router router;
  AddReady(router, 2, Config(4));
  std::vector<SubmitResult> on1;
  for (int i = 0; i < 8; ++i) {
    SubmitResult s = router.Submit("m", Time{});
    if (s.replica == 1) on1.push_back(s);
  }
  ASSERT_FALSE(on1.empty());
  ASSERT_TRUE(router.Drain(1).ok());
  EXPECT_FALSE(router.Drained(1));
  EXPECT_EQ(router.FindReplica(1)->replica.state, ReplicaState::kDraining);
  for (size_t i = 0; i < on1.size(); ++i) {
    FinishResult f = router.Finish(on1[i].request, Outcome::kOk, Ms(1));
    for (const Dispatch& d : f.dispatched) EXPECT_NE(d.replica, 1u);
    EXPECT_EQ(router.Submit("m", Ms(1)).replica == 1, false);
  }
  EXPECT_TRUE(router.Drained(1));
  EXPECT_EQ(router.SetReady(1, Ms(2)).status.code, Code::kFailedPrecondition);
  EXPECT_EQ(router.Snapshot().services[0].drains, 1u);
  EXPECT_EQ(router.Remove(1).orphaned.size(), 0u);
  EXPECT_FALSE(router.FindReplica(1).has_value());
}

TEST(RouterRemove, InFlightRequestsComeBackToRetryElsewhere) {
  Router router;
  AddReady(router, 2, Config(2));
  ASSERT_TRUE(router.SetWeight(2, 0, Time{}).status.ok());
  SubmitResult a = MustRoute(router, Time{});
  SubmitResult b = MustRoute(router, Time{});
  ASSERT_EQ(a.replica, 1u);
  ASSERT_TRUE(router.SetWeight(2, 1, Time{}).status.ok());
  RemoveResult gone = router.Remove(1);
  ASSERT_TRUE(gone.status.ok());
  std::vector<RequestId> orphans(gone.orphaned.begin(), gone.orphaned.end());
  EXPECT_EQ(orphans, (std::vector<RequestId>{a.request, b.request}));
  RetryResult r = router.Retry(a.request, Ms(1));
  EXPECT_EQ(r.kind, RetryKind::kRouted);
  EXPECT_EQ(r.replica, 2u);
  ASSERT_TRUE(router.Finish(b.request, Outcome::kUpstreamError, Ms(1)).status.ok());  // streamed
  EXPECT_EQ(router.FindReplica(2)->replica.errors, 0u);
  EXPECT_EQ(router.CheckInvariants(), "");
  EXPECT_EQ(router.Remove(1).status.code, Code::kNotFound);
}

TEST(RouterRemove, RemovingAServiceEndsItsQueueAndOrphansItsRequests) {
  Router router;
  AddReady(router, 1, Config(1));
  SubmitResult a = MustRoute(router, Time{});
  SubmitResult b = router.Submit("m", Time{});
  RemoveResult r = router.RemoveService("m");
  ASSERT_EQ(r.orphaned.size(), 1u);
  EXPECT_EQ(r.orphaned[0], a.request);
  ASSERT_EQ(r.failed.size(), 1u);
  EXPECT_EQ(r.failed[0], b.request);
  EXPECT_EQ(router.Retry(a.request, Ms(1)).kind, RetryKind::kFailed);
  EXPECT_EQ(router.Submit("m", Ms(1)).kind, SubmitKind::kUnknownService);
  EXPECT_TRUE(router.AddService("m", Config(1)).ok());
  EXPECT_EQ(router.CheckInvariants(), "");
}

TEST(RouterDeterminism, SameSeedSameChoices) {
  auto picks = [](uint64_t seed) {
    Router router(RouterConfig{.seed = seed});
    AddReady(router, 8, Config(4));
    std::vector<ReplicaId> out;
    for (int i = 0; i < 200; ++i) out.push_back(router.Submit("m", Time{}).replica);
    return out;
  };
  EXPECT_EQ(picks(11), picks(11));
  EXPECT_NE(picks(11), picks(12));
}

TEST(RouterInput, BadConfigAndUnknownIdsAreErrorsNamingTheField) {
  Router router;
  ServiceConfig c;
  c.max_concurrent = 0;
  Status st = router.AddService("m", c);
  EXPECT_EQ(st.code, Code::kInvalidArgument);
  EXPECT_STREQ(st.message, "max_concurrent: must be >= 1");
  c = ServiceConfig{};
  c.retry_budget = 8;
  EXPECT_EQ(router.AddService("m", c).code, Code::kInvalidArgument);
  c = ServiceConfig{};
  c.queue_deadline = Micros(0);
  EXPECT_EQ(router.AddService("m", c).code, Code::kInvalidArgument);
  EXPECT_EQ(router.AddService("", ServiceConfig{}).code, Code::kInvalidArgument);
  ASSERT_TRUE(router.AddService("m", ServiceConfig{}).ok());
  EXPECT_EQ(router.AddService("m", ServiceConfig{}).code, Code::kAlreadyExists);
  EXPECT_EQ(router.AddReplica("x", 1).code, Code::kNotFound);
  EXPECT_EQ(router.AddReplica("m", 0).code, Code::kInvalidArgument);
  ASSERT_TRUE(router.AddReplica("m", 1).ok());
  EXPECT_EQ(router.AddReplica("m", 1).code, Code::kAlreadyExists);
  EXPECT_EQ(router.SetWeight(1, std::nan(""), Time{}).status.code, Code::kInvalidArgument);
  EXPECT_EQ(router.SetWeight(1, 1.5, Time{}).status.code, Code::kInvalidArgument);
  EXPECT_EQ(router.SetWeight(2, 0.5, Time{}).status.code, Code::kNotFound);
  EXPECT_EQ(router.Drain(2).code, Code::kNotFound);
  EXPECT_EQ(router.SetReady(2, Time{}).status.code, Code::kNotFound);
  EXPECT_EQ(router.Finish(0, Outcome::kOk, Time{}).status.code, Code::kNotFound);
  EXPECT_EQ(router.Finish(12345678901, Outcome::kOk, Time{}).status.code, Code::kNotFound);
  EXPECT_FALSE(router.Drained(2));
  EXPECT_EQ(router.CheckInvariants(), "");
}

TEST(RouterSnapshot, CountsPerServiceAndReplica) {
  Router router;
  AddReady(router, 2, Config(1));
  SubmitResult a = MustRoute(router, Time{});
  SubmitResult b = MustRoute(router, Time{});
  SubmitResult c = router.Submit("m", Time{});
  ASSERT_TRUE(router.Finish(a.request, Outcome::kOk, Ms(4)).status.ok());
  ASSERT_TRUE(router.Finish(b.request, Outcome::kClientGone, Ms(4)).status.ok());
  RouterSnapshot snap = router.Snapshot();
  ASSERT_EQ(snap.services.size(), 1u);
  const ServiceSnapshot& s = snap.services[0];
  EXPECT_EQ(s.name, "m");
  EXPECT_EQ(s.submitted, 3u);
  EXPECT_EQ(s.ok, 1u);
  EXPECT_EQ(s.client_gone, 1u);
  EXPECT_EQ(s.queue_length, 0u);
  EXPECT_EQ(s.mean_request_us, 4000);
  ASSERT_EQ(s.replicas.size(), 2u);
  EXPECT_EQ(s.replicas[0].id, 1u);
  EXPECT_EQ(s.replicas[0].requests + s.replicas[1].requests, 3u);
  EXPECT_EQ(s.replicas[0].in_flight + s.replicas[1].in_flight, 1u);
  EXPECT_STREQ(ReplicaStateName(s.replicas[0].state), "ready");
  (void)c;
}

// A figure, not a check (no wall-clock assertion): the cost of one Submit plus one Finish.
TEST(RouterCost, SubmitAndFinishPerRequest) {
  Router router;
  AddReady(router, 16, Config(4));
  std::vector<RequestId> open;
  constexpr int kRequests = 1'000'000;
  auto start = std::chrono::steady_clock::now();
  Time now{};
  for (int i = 0; i < kRequests; ++i, now += Micros(10)) {
    SubmitResult s = router.Submit("m", now);
    open.push_back(s.request);
    if (open.size() == 32) {
      for (RequestId id : open) (void)router.Finish(id, Outcome::kOk, now);
      open.clear();
    }
  }
  double ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count() /
      kRequests;
  std::printf("router: %.0f ns per Submit + Finish (16 replicas)\n", ns);
  EXPECT_EQ(router.CheckInvariants(), "");
}

}  // namespace
}  // namespace idlepool::serve
