// The serving gateway's routing decisions: which replica gets a request, when it waits, when it
// is retried elsewhere, when a replica stops getting requests (drain, ejection). Issue 17,
// points 3, 4 and 6.
//
// Pure: events in, decisions out, `now` passed in (serve::Time, monotonic microseconds). No
// I/O, no threads, no clocks; randomness only from the router's own generator, seeded by
// RouterConfig::seed, so the same events at the same times give the same decisions. The caller
// (the asynchronous HTTP gateway) does every send, answer and timer.
//
// Thread safety: none. One owner (the gateway's event loop) calls it; a Snapshot is a copy that
// may be handed to other threads. Spans in results point into the router and stay valid until
// its next non-const call. Errors come back as Status (router_types.h); no call throws or
// aborts on bad input, and a stale or unknown id is kNotFound.
//
// Requests. Submit(service, now, deadline) routes, queues or rejects. A request then ends
// exactly once, by one of: Submit's kRejected (it never got an id), Finish, Retry's kFailed,
// Expire's `expired`, RemoveService's `failed`. Its id is dead afterwards (kNotFound).
//   - Pick: among the service's replicas that are ready (not starting, draining or ejected),
//     have a weight > 0 and are below their capacity, two are drawn at random, each with a
//     probability proportional to its weight x speed; the one with fewer requests in flight for
//     its capacity x weight x speed wins (least outstanding requests with two random choices:
//     Mitzenmacher 2001; Envoy's LEAST_REQUEST). A tie (two idle replicas, typically) goes to the
//     one further behind in virtual time: each dispatch advances a replica's by
//     1 / (weight x speed) (start time fair queuing), so at light load the shares follow
//     weight x speed to within a few percent and equal replicas get equal counts; a replica that
//     comes back (ready, weight above 0, ejection over) starts at the service's virtual time,
//     owed no burst. O(1) per pick (rejection sampling against a bound on the weights), no
//     allocation.
//   - Queue: FIFO per service, at most max_queue (Submit past it: kRejected with a Retry-After
//     from the queue length and the measured rate, queue_length / (sum of capacities / mean
//     request time), 1 s .. queue_deadline). A known service with no replica queues, never 404.
//     A request leaves the queue for a replica as soon as one has room (the `dispatched` of the
//     call that made room), or is ended by Expire once `deadline` (min of Submit's and
//     now + queue_deadline) has passed; it is never dispatched after its deadline.
//   - Retry(request): the attempt failed before anything reached the client. The replica is
//     charged an upstream error, and the request goes to a replica that has not failed it, or
//     waits at the head of the queue (it was admitted: it may take the queue past max_queue),
//     or fails when retry_budget retries are spent.
//   - Finish(request, outcome): ok, upstream error (the replica is charged; nothing is retried),
//     or client gone (cancelled; the replica is not charged). A queued request may only end
//     kClientGone.
// Replicas (id = attempt id): AddReplica (starting) -> SetReady (health answered 200) -> ready;
// Drain: no new request from this call on, in-flight ones finish, Drained() when none is left
// (the caller stops it then, or at drain_seconds, and calls Remove); Remove: the replica is
// gone; its in-flight requests are orphaned (Retry them, or Finish them if something reached
// the client). SetWeight(0..1): the machine's state (a hot GPU, a busy owner); 0 = no new
// request. Speed: an EWMA (alpha 0.2, about the last 10 requests) of each ok request's time per
// unit (Finish's `units`: tokens, or 0 = per request; one kind per service), relative to the
// service's (its mean, taken again every 256 picks), in 0.25..4, 1 until a replica has 3
// samples; it scales the share like the weight. Weights and speeds move the share; they do not
// lower a replica's capacity, so under saturation every slot stays busy.
// Timers: NextDeadline() is the earliest queue deadline or ejection end; arm one timer for it
// and call Expire(now) when it fires.
//
// Costs: Submit and Finish do no allocation once the request pool has grown to the peak number
// of open requests (ids index a slot pool; the service lookup is one hash of its name); about
// 150 ns for the pair on 16 replicas (router_test's RouterCost). A queued request costs one
// entry in a binary heap (log n). Linear scans, all rare: Remove (the open requests), a retried
// request's pick (the service's replicas), a queue whose head requests have failed on every
// replica with room (those requests), an ejection (the service's replicas).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "serve/router_types.h"

namespace idlepool::serve {

namespace detail {
struct Service;
struct Replica;
struct Request;
struct Timer;
}  // namespace detail

// A pick: the replica's slot (detail::kNone: none), and whether the virtual time decided it.
struct Choice {
  uint32_t replica = UINT32_MAX;
  bool by_share = false;
};

// What FindReplica says about one replica (ReplicaSnapshot plus its service's name).
struct ReplicaView {
  std::string_view service;
  ReplicaSnapshot replica;
};

class Router {
 public:
  explicit Router(RouterConfig config = {});
  ~Router();
  Router(const Router&) = delete;
  Router& operator=(const Router&) = delete;

  // Services. AddService: kAlreadyExists, kInvalidArgument (max_concurrent 0, retry_budget over
  // kMaxRetryBudget, queue_deadline or a backoff <= 0, max_ejected_percent over 100, an empty
  // name). RemoveService removes its replicas (their requests orphaned) and ends its queue.
  [[nodiscard]] Status AddService(std::string_view name, const ServiceConfig& config);
  [[nodiscard]] RemoveResult RemoveService(std::string_view name);
  std::vector<std::string> ServiceNames() const;  // sorted

  // Requests. `deadline` bounds the wait in the queue (kNoDeadline: queue_deadline alone).
  [[nodiscard]] SubmitResult Submit(std::string_view service, Time now,
                                    Time deadline = kNoDeadline);
  // `units`: the work the answer held (tokens), for the speed measure; 0 = count the request.
  [[nodiscard]] FinishResult Finish(RequestId request, Outcome outcome, Time now,
                                    uint64_t units = 0);
  // kFailedPrecondition for a queued request.
  [[nodiscard]] RetryResult Retry(RequestId request, Time now);
  [[nodiscard]] ExpireResult Expire(Time now);
  // The earliest queue deadline or ejection end still pending; nullopt: no timer needed.
  // Drops timers of requests and ejections that ended meanwhile (hence not const).
  std::optional<Time> NextDeadline();

  // Replicas. capacity 0: the service's max_concurrent.
  [[nodiscard]] Status AddReplica(std::string_view service, ReplicaId id, uint32_t capacity = 0);
  // kFailedPrecondition unless starting (a ready replica stays ready: ok, no-op).
  [[nodiscard]] FinishResult SetReady(ReplicaId id, Time now);
  [[nodiscard]] Status Drain(ReplicaId id);
  [[nodiscard]] RemoveResult Remove(ReplicaId id);
  // weight in [0, 1]; kInvalidArgument otherwise (NaN too).
  [[nodiscard]] FinishResult SetWeight(ReplicaId id, double weight, Time now);
  // Draining with nothing in flight: the caller may stop it. False for an unknown id.
  bool Drained(ReplicaId id) const;
  std::optional<ReplicaView> FindReplica(ReplicaId id) const;

  RouterSnapshot Snapshot() const;
  // Checks the router's internal bookkeeping (in flight vs capacity and vs its requests, the
  // pickable sets, the queues): "" when sound, else the first breach. O(everything): for tests.
  std::string CheckInvariants() const;

 private:
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using NameMap = std::unordered_map<std::string, uint32_t, NameHash, std::equal_to<>>;

  // router.cc: requests.
  uint32_t NewRequest(uint32_t service, Time expiry);
  void EndRequest(uint32_t slot);
  detail::Request* Live(RequestId id);
  RequestId IdOf(uint32_t slot) const;
  void Enqueue(uint32_t slot, bool front);
  void Unqueue(uint32_t slot);
  void Route(uint32_t slot, Choice choice, Time now);
  void Release(uint32_t slot);
  void Pump(uint32_t service, Time now);
  std::chrono::seconds RetryAfter(const detail::Service& s) const;
  // router_pick.cc: the choice.
  Choice Pick(uint32_t service, const detail::Request& request);
  Choice PickExcluding(uint32_t service, const detail::Request& request) const;
  Choice Better(uint32_t a, uint32_t b) const;
  uint32_t DrawCandidate(detail::Service& s, uint32_t not_this);
  uint64_t Draw(uint64_t n);
  // router_replicas.cc: replica state.
  detail::Replica* FindLive(ReplicaId id);
  void Refresh(uint32_t replica);
  void ChargeError(uint32_t replica, Time now);
  void Eject(uint32_t replica, Time now);
  void RecordSpeed(uint32_t replica, Micros took, uint64_t units);
  void SetSpeed(detail::Replica& r);
  void Reweigh(uint32_t service);
  void Orphan(uint32_t replica);
  void ForgetReplica(uint32_t replica);
  // router_snapshot.cc.
  ReplicaSnapshot SnapshotOf(const detail::Replica& r) const;

  uint64_t rng_;
  NameMap service_index_;
  std::vector<detail::Service> services_;  // never shrinks: a removed service is a tombstone
  std::unordered_map<ReplicaId, uint32_t> replica_index_;
  std::vector<detail::Replica> replicas_;
  std::vector<uint32_t> free_replicas_;
  std::vector<detail::Request> requests_;
  std::vector<uint32_t> free_requests_;
  std::vector<detail::Timer> queue_timers_;  // min-heap of queue deadlines
  std::vector<detail::Timer> eject_timers_;  // min-heap of ejection ends
  // What results point into.
  std::vector<Dispatch> dispatched_;
  std::vector<RequestId> ids_;
  std::vector<RequestId> failed_;
  std::vector<ReplicaId> returned_;
};

}  // namespace idlepool::serve
