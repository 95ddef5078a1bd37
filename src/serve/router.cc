// Requests through the router: submit, queue, dispatch, finish, retry, expire (serve/router.h).
#include "serve/router.h"

#include <algorithm>
#include <cmath>

#include "serve/router_internal.h"

namespace idlepool::serve {

using detail::kNone;
using detail::Replica;
using detail::Request;
using detail::RequestState;
using detail::Service;
using detail::Timer;

Router::Router(RouterConfig config) : rng_(config.seed) {}
Router::~Router() = default;

RequestId Router::IdOf(uint32_t slot) const {
  return (uint64_t{requests_[slot].generation} << 32) | slot;
}

Request* Router::Live(RequestId id) {
  uint64_t slot = id & 0xffffffffu;
  if (slot >= requests_.size()) return nullptr;
  Request& q = requests_[slot];
  if (q.state == RequestState::kFree || q.generation != (id >> 32)) return nullptr;
  return &q;
}

uint32_t Router::NewRequest(uint32_t service, Time expiry) {
  uint32_t slot;
  if (!free_requests_.empty()) {
    slot = free_requests_.back();
    free_requests_.pop_back();
  } else {
    slot = static_cast<uint32_t>(requests_.size());
    requests_.emplace_back();
  }
  Request& q = requests_[slot];
  ++q.generation;
  if (q.generation == 0) q.generation = 1;  // ids stay > 0
  q.service = service;
  q.replica = kNone;
  q.retries = 0;
  q.tried_count = 0;
  q.expiry = expiry;
  q.state = RequestState::kOrphaned;  // on no replica until routed or queued
  return slot;
}

void Router::EndRequest(uint32_t slot) {
  Request& q = requests_[slot];
  if (q.state == RequestState::kQueued) Unqueue(slot);
  if (q.state == RequestState::kRouted) Release(slot);
  q.state = RequestState::kFree;
  free_requests_.push_back(slot);
}

void Router::Enqueue(uint32_t slot, bool front) {
  Request& q = requests_[slot];
  Service& s = services_[q.service];
  q.state = RequestState::kQueued;
  if (front) {
    q.prev = kNone;
    q.next = s.queue_head;
    (s.queue_head == kNone ? s.queue_tail : requests_[s.queue_head].prev) = slot;
    s.queue_head = slot;
  } else {
    q.next = kNone;
    q.prev = s.queue_tail;
    (s.queue_tail == kNone ? s.queue_head : requests_[s.queue_tail].next) = slot;
    s.queue_tail = slot;
  }
  ++s.queue_length;
  queue_timers_.push_back(Timer{q.expiry, IdOf(slot), 0});
  std::push_heap(queue_timers_.begin(), queue_timers_.end());
}

void Router::Unqueue(uint32_t slot) {
  Request& q = requests_[slot];
  Service& s = services_[q.service];
  (q.prev == kNone ? s.queue_head : requests_[q.prev].next) = q.next;
  (q.next == kNone ? s.queue_tail : requests_[q.next].prev) = q.prev;
  q.prev = q.next = kNone;
  --s.queue_length;
  q.state = RequestState::kOrphaned;
}

// The service's virtual time follows the picks that the virtual time decided (a replica that won
// on load may be far ahead, when its weight is low); Refresh starts a returning replica there.
void Router::Route(uint32_t slot, Choice choice, Time now) {
  uint32_t replica = choice.replica;
  Request& q = requests_[slot];
  Replica& r = replicas_[replica];
  Service& s = services_[r.service];
  if (choice.by_share) s.vclock = std::max(s.vclock, r.vtime);
  r.vtime += 1 / (r.weight * r.speed);
  ++r.in_flight;
  ++r.requests;
  q.state = RequestState::kRouted;
  q.replica = replica;
  q.dispatched_at = now;
  Refresh(replica);
}

void Router::Release(uint32_t slot) {
  Request& q = requests_[slot];
  uint32_t replica = q.replica;
  q.replica = kNone;
  q.state = RequestState::kOrphaned;
  --replicas_[replica].in_flight;
  Refresh(replica);
}

// Hands queued requests, oldest first, to replicas with room. A request that has failed on
// every replica with room waits for another; one past its deadline is left for Expire.
void Router::Pump(uint32_t service, Time now) {
  Service& s = services_[service];
  uint32_t slot = s.queue_head;
  while (slot != kNone && !s.pickable.empty()) {
    Request& q = requests_[slot];
    uint32_t next = q.next;
    if (q.expiry > now) {
      Choice choice = Pick(service, q);
      if (choice.replica != kNone) {
        Unqueue(slot);
        Route(slot, choice, now);
        dispatched_.push_back(Dispatch{IdOf(slot), replicas_[choice.replica].id});
      }
    }
    slot = next;
  }
}

std::chrono::seconds Router::RetryAfter(const Service& s) const {
  double cap_s = std::ceil(std::chrono::duration<double>(s.config.queue_deadline).count());
  double wait_s = cap_s;
  if (s.routable_capacity > 0 && s.samples > 0 && s.request_us > 0) {
    double per_s = static_cast<double>(s.routable_capacity) / (s.request_us / 1e6);
    wait_s = std::ceil((s.queue_length + 1) / per_s);
  }
  return std::chrono::seconds(static_cast<int64_t>(std::clamp(wait_s, 1.0, std::max(cap_s, 1.0))));
}

SubmitResult Router::Submit(std::string_view service, Time now, Time deadline) {
  auto it = service_index_.find(service);
  if (it == service_index_.end()) return SubmitResult{.kind = SubmitKind::kUnknownService};
  uint32_t si = it->second;
  Service& s = services_[si];
  ++s.submitted;
  Time limit = now + s.config.queue_deadline;
  Time expiry = std::min(deadline, limit);
  if (s.pickable.empty() && s.queue_length >= s.config.max_queue) {
    ++s.rejected;
    return SubmitResult{.kind = SubmitKind::kRejected, .retry_after = RetryAfter(s)};
  }
  uint32_t slot = NewRequest(si, expiry);
  Choice choice = Pick(si, requests_[slot]);
  if (choice.replica != kNone) {
    Route(slot, choice, now);
    return SubmitResult{.kind = SubmitKind::kRouted,
                        .request = IdOf(slot),
                        .replica = replicas_[choice.replica].id};
  }
  Enqueue(slot, /*front=*/false);
  return SubmitResult{.kind = SubmitKind::kQueued, .request = IdOf(slot)};
}

FinishResult Router::Finish(RequestId id, Outcome outcome, Time now, uint64_t units) {
  dispatched_.clear();
  Request* q = Live(id);
  if (q == nullptr) return {Status{Code::kNotFound, "request: unknown or already ended"}, {}};
  if (q->state == RequestState::kQueued && outcome != Outcome::kClientGone)
    return {Status{Code::kFailedPrecondition, "request: queued; only kClientGone ends it"}, {}};
  Service& s = services_[q->service];
  uint32_t replica = q->state == RequestState::kRouted ? q->replica : kNone;
  switch (outcome) {
    case Outcome::kOk:
      ++s.ok;
      if (replica != kNone) {
        Replica& r = replicas_[replica];
        ++r.ok;
        r.consecutive_errors = 0;
        r.probation = false;
        RecordSpeed(replica, now - q->dispatched_at, units);
      }
      break;
    case Outcome::kUpstreamError:
      ++s.errors;
      if (replica != kNone) ChargeError(replica, now);
      break;
    case Outcome::kClientGone:
      ++s.client_gone;
      break;
  }
  uint32_t slot = static_cast<uint32_t>(id & 0xffffffffu);
  uint32_t service = q->service;
  EndRequest(slot);
  if (replica != kNone && s.live) Pump(service, now);
  return {Status{}, dispatched_};
}

RetryResult Router::Retry(RequestId id, Time now) {
  dispatched_.clear();
  Request* q = Live(id);
  if (q == nullptr)
    return {
        Status{Code::kNotFound, "request: unknown or already ended"}, RetryKind::kFailed, 0, {}};
  if (q->state == RequestState::kQueued)
    return {Status{Code::kFailedPrecondition, "request: queued, not on a replica"},
            RetryKind::kFailed,
            0,
            {}};
  uint32_t slot = static_cast<uint32_t>(id & 0xffffffffu);
  uint32_t service = q->service;
  Service& s = services_[service];
  uint32_t replica = q->replica;
  if (q->state == RequestState::kRouted) {
    ++s.errors;
    // Orphans are already marked tried (Remove) and not charged: the replica vanished.
    if (q->tried_count < q->tried.size()) q->tried[q->tried_count++] = replicas_[replica].id;
    Release(slot);
    ChargeError(replica, now);
  }
  if (!s.live || q->retries >= s.config.retry_budget) {
    ++s.failed;
    EndRequest(slot);
    if (s.live && replica != kNone) Pump(service, now);
    return {Status{}, RetryKind::kFailed, 0, dispatched_};
  }
  ++q->retries;
  ++s.retries;
  RetryResult result{Status{}, RetryKind::kQueued, 0, {}};
  Choice choice = Pick(service, *q);
  if (choice.replica != kNone) {
    Route(slot, choice, now);
    result.kind = RetryKind::kRouted;
    result.replica = replicas_[choice.replica].id;
  } else {
    Enqueue(slot, /*front=*/true);  // it was admitted before anything now in the queue
  }
  if (replica != kNone) Pump(service, now);
  result.dispatched = dispatched_;
  return result;
}

ExpireResult Router::Expire(Time now) {
  dispatched_.clear();
  ids_.clear();
  returned_.clear();
  while (!queue_timers_.empty() && queue_timers_.front().at <= now) {
    Timer t = queue_timers_.front();
    std::pop_heap(queue_timers_.begin(), queue_timers_.end());
    queue_timers_.pop_back();
    Request* q = Live(t.id);
    if (q == nullptr || q->state != RequestState::kQueued || q->expiry != t.at) continue;
    ++services_[q->service].expired;
    EndRequest(static_cast<uint32_t>(t.id & 0xffffffffu));
    ids_.push_back(t.id);
  }
  while (!eject_timers_.empty() && eject_timers_.front().at <= now) {
    Timer t = eject_timers_.front();
    std::pop_heap(eject_timers_.begin(), eject_timers_.end());
    eject_timers_.pop_back();
    Replica* r = FindLive(t.id);
    if (r == nullptr || r->state != ReplicaState::kEjected || r->ejection_seq != t.seq) continue;
    r->state = ReplicaState::kReady;
    r->probation = true;
    r->returned_at = now;
    Refresh(static_cast<uint32_t>(r - replicas_.data()));
    returned_.push_back(t.id);
    Pump(r->service, now);
  }
  return ExpireResult{ids_, returned_, dispatched_};
}

std::optional<Time> Router::NextDeadline() {
  auto prune = [](std::vector<Timer>& heap, auto&& stale) {
    while (!heap.empty() && stale(heap.front())) {
      std::pop_heap(heap.begin(), heap.end());
      heap.pop_back();
    }
  };
  prune(queue_timers_, [&](const Timer& t) {
    Request* q = Live(t.id);
    return q == nullptr || q->state != RequestState::kQueued || q->expiry != t.at;
  });
  prune(eject_timers_, [&](const Timer& t) {
    Replica* r = FindLive(t.id);
    return r == nullptr || r->state != ReplicaState::kEjected || r->ejection_seq != t.seq;
  });
  std::optional<Time> next;
  if (!queue_timers_.empty()) next = queue_timers_.front().at;
  if (!eject_timers_.empty() && (!next || eject_timers_.front().at < *next))
    next = eject_timers_.front().at;
  return next;
}

}  // namespace idlepool::serve
