// The vocabulary of the serving router (serve/router.h): time, ids, a service's configuration,
// results and snapshots. Plain values, no behaviour. Standard library only.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace idlepool::serve {

// Monotonic time in microseconds. A clock type with no now(): the router cannot read time; the
// caller passes `now` (e.g. Time{Micros{platform::SteadyNanos() / 1000}}).
struct RouterClock {
  using rep = int64_t;
  using period = std::micro;
  using duration = std::chrono::microseconds;
  using time_point = std::chrono::time_point<RouterClock>;
  static constexpr bool is_steady = true;
};
using Time = RouterClock::time_point;
using Micros = std::chrono::microseconds;
inline constexpr Time kNoDeadline = Time::max();

using ReplicaId = uint64_t;  // the replica's attempt id (core::AttemptId): > 0, never reused
using RequestId = uint64_t;  // assigned by the router: > 0; a slot's number and its use count,
                             // so an id comes back only after 2^32 uses of one slot

// A request is retried at most this many times (ServiceConfig::retry_budget is capped to it), so
// the replicas that failed it fit in the request's own entry: no allocation per retry.
inline constexpr uint32_t kMaxRetryBudget = 7;

// One service's routing policy. Defaults and where they come from:
struct ServiceConfig {
  // Requests waiting for a free replica slot; past it Submit answers kRejected (HTTP 503 with
  // Retry-After). 1024: Envoy's default circuit breaker for pending requests
  // (max_pending_requests).
  uint32_t max_queue = 1024;
  // How long a request may wait in the queue (a Submit deadline can only shorten it). 30 s: the
  // time a replica of a small model takes to start on a machine that holds its weights, so a
  // request sent to a service scaled to zero still gets an answer (issue 17, scale from 0).
  Micros queue_deadline = std::chrono::seconds(30);
  // Requests one replica serves at once (the spec's max_concurrent); AddReplica may override it
  // per replica. 2: Ray Serve's default target of ongoing requests per replica.
  uint32_t max_concurrent = 2;
  // Retries of one request, each on a replica that has not failed it, while nothing has reached
  // the client (the caller's call); at most kMaxRetryBudget. Envoy's retry policy defaults to 1
  // retry; 2 here, because a replica on a lent machine may vanish with it (lid shut) at the same
  // time as another one fails.
  uint32_t retry_budget = 2;
  // Ejection (Envoy's outlier detection, consecutive 5xx): a replica whose last
  // `eject_after_errors` finished requests all failed upstream leaves the pick for a backoff
  // that doubles at each ejection from `eject_backoff` up to `eject_backoff_max`, then comes
  // back on probation (one more upstream error ejects it again at once; a success ends the
  // probation). Envoy ejects after 5 errors for 30 s x the ejection count, at most 300 s; a pool
  // has a handful of replicas, so 3 errors and 5 s catch a broken replica sooner and let a
  // replica that was only restarting back sooner. 0 errors: never eject. The backoff starts
  // over at `eject_backoff` once a replica has served for `eject_backoff_max` since it came back.
  uint32_t eject_after_errors = 3;
  Micros eject_backoff = std::chrono::seconds(5);
  Micros eject_backoff_max = std::chrono::minutes(5);
  // At most this share of a service's ready and ejected replicas is ejected at once, but always
  // one (Envoy's max_ejection_percent, default 10 %: with a pool's 2 to 8 replicas that is one,
  // so we allow half). 100: any number.
  uint32_t max_ejected_percent = 50;
};

struct RouterConfig {
  // Seeds the router's own generator (the two random choices). Same seed, same events, same
  // decisions. The gateway logs the seed it chose.
  uint64_t seed = 1;
};

// Errors of the router's calls: what the caller does next follows the code. `message` is a
// static string naming the field or the id that was wrong; never freed.
enum class Code : uint8_t {
  kOk,
  kNotFound,            // unknown service, replica or request (or a request already ended)
  kAlreadyExists,       // AddService / AddReplica of a name or id already there
  kInvalidArgument,     // a config field or a weight out of range (message names it)
  kFailedPrecondition,  // the call does not apply in the current state (message says which)
};
struct Status {
  Code code = Code::kOk;
  const char* message = "";
  bool ok() const { return code == Code::kOk; }
};

enum class ReplicaState : uint8_t {
  kStarting,  // added, not yet healthy: gets no request
  kReady,     // healthy: gets requests (while weight > 0 and below its capacity)
  kDraining,  // Drain called: no new request ever; in-flight requests finish
  kEjected,   // too many upstream errors: no new request until its backoff ends
};
const char* ReplicaStateName(ReplicaState s);  // "starting", "ready", "draining", "ejected"

// A queued request given to a replica: the caller sends it there now.
struct Dispatch {
  RequestId request = 0;
  ReplicaId replica = 0;
  bool operator==(const Dispatch&) const = default;
};

enum class SubmitKind : uint8_t {
  kRouted,          // send it to `replica` now
  kQueued,          // wait: a later call's `dispatched` (or Expire's `expired`) names it
  kRejected,        // queue full: answer 503 with Retry-After: retry_after
  kUnknownService,  // answer 404 with the service names (ServiceNames())
};
struct SubmitResult {
  SubmitKind kind = SubmitKind::kRejected;
  RequestId request = 0;                // kRouted, kQueued
  ReplicaId replica = 0;                // kRouted
  std::chrono::seconds retry_after{0};  // kRejected: >= 1
};

// How a routed request ended, as the caller saw it.
enum class Outcome : uint8_t {
  kOk,             // the replica answered (whatever the HTTP status its engine chose, < 500)
  kUpstreamError,  // 5xx, connection refused or reset, or a connect / first-byte / gap timeout
  kClientGone,     // the client left; the caller cancelled the upstream request. Not the
                   // replica's fault: counts neither for nor against it
};

// Calls that may hand queued requests to replicas return them here. The span points into the
// router and stays valid until the next non-const call.
struct FinishResult {
  Status status;
  std::span<const Dispatch> dispatched;
};

enum class RetryKind : uint8_t {
  kRouted,  // send it to `replica` now (never one that failed it)
  kQueued,  // wait, as after Submit
  kFailed,  // ended: the budget is spent or the service is gone; answer 502
};
struct RetryResult {
  Status status;
  RetryKind kind = RetryKind::kFailed;
  ReplicaId replica = 0;  // kRouted
  std::span<const Dispatch> dispatched;
};

struct ExpireResult {
  std::span<const RequestId> expired;   // ended: waited in the queue past their deadline (503)
  std::span<const ReplicaId> returned;  // ejected replicas back on probation
  std::span<const Dispatch> dispatched;
};

// Remove / RemoveService: requests that were on the removed replicas, now on none. Each stays
// open until the caller calls Retry (nothing reached its client yet) or Finish (it did).
struct RemoveResult {
  Status status;
  std::span<const RequestId> orphaned;
  std::span<const RequestId> failed;  // RemoveService: queued requests, ended (answer 503)
};

struct ReplicaSnapshot {
  ReplicaId id = 0;
  ReplicaState state = ReplicaState::kStarting;
  bool probation = false;
  uint32_t in_flight = 0;
  uint32_t capacity = 0;
  double weight = 1;      // SetWeight's factor
  double speed = 1;       // measured: service's mean time per unit / this replica's (0.25..4)
  uint64_t requests = 0;  // dispatched to it
  uint64_t ok = 0;
  uint64_t errors = 0;  // upstream errors
  uint64_t ejections = 0;
  Time ejected_until{};  // kEjected only
};

struct ServiceSnapshot {
  std::string name;
  ServiceConfig config;
  uint32_t queue_length = 0;
  uint64_t submitted = 0;
  uint64_t rejected = 0;  // queue full
  uint64_t expired = 0;   // waited past their deadline
  uint64_t failed = 0;    // retry budget spent, or service removed
  uint64_t ok = 0;
  uint64_t errors = 0;  // upstream errors, retried or not
  uint64_t client_gone = 0;
  uint64_t retries = 0;
  uint64_t drains = 0;
  uint64_t ejections = 0;
  double mean_request_us = 0;             // EWMA of a successful request's time, 0 before the first
  std::vector<ReplicaSnapshot> replicas;  // by id
};

struct RouterSnapshot {
  std::vector<ServiceSnapshot> services;  // by name
};

}  // namespace idlepool::serve
