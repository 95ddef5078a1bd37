// Replicas in the router: their states, weights, speeds and ejections (serve/router.h).
#include <algorithm>
#include <cmath>

#include "serve/router.h"
#include "serve/router_internal.h"

namespace idlepool::serve {

using detail::kNone;
using detail::Replica;
using detail::Request;
using detail::RequestState;
using detail::Service;
using detail::Timer;

const char* ReplicaStateName(ReplicaState s) {
  switch (s) {
    case ReplicaState::kStarting:
      return "starting";
    case ReplicaState::kReady:
      return "ready";
    case ReplicaState::kDraining:
      return "draining";
    case ReplicaState::kEjected:
      return "ejected";
  }
  return "unknown";
}

Replica* Router::FindLive(ReplicaId id) {
  auto it = replica_index_.find(id);
  return it == replica_index_.end() ? nullptr : &replicas_[it->second];
}

// Puts the replica in or out of its service's pickable set and routable capacity, after any
// change to its state, weight or in-flight count.
void Router::Refresh(uint32_t replica) {
  Replica& r = replicas_[replica];
  Service& s = services_[r.service];
  bool routable = r.live && s.live && r.state == ReplicaState::kReady && r.weight > 0;
  if (routable != r.routable) {
    if (routable) {
      s.routable_capacity += r.capacity;
      r.vtime = std::max(r.vtime, s.vclock);  // back from a pause: owed no burst
    } else {
      s.routable_capacity -= r.capacity;
    }
    r.routable = routable;
  }
  bool pickable = routable && r.in_flight < r.capacity;
  if (pickable && r.pickable_pos == kNone) {
    r.pickable_pos = static_cast<uint32_t>(s.pickable.size());
    s.pickable.push_back(replica);
  } else if (!pickable && r.pickable_pos != kNone) {
    uint32_t last = s.pickable.back();
    s.pickable[r.pickable_pos] = last;
    replicas_[last].pickable_pos = r.pickable_pos;
    s.pickable.pop_back();
    r.pickable_pos = kNone;
  }
}

// A replica's speed against its service's reference; raises the service's weight bound.
void Router::SetSpeed(Replica& r) {
  Service& s = services_[r.service];
  r.speed = 1;
  if (r.samples >= detail::kSpeedMinSamples && r.unit_us > 0 && s.ref_unit_us > 0)
    r.speed = std::clamp(s.ref_unit_us / r.unit_us, detail::kSpeedMin, detail::kSpeedMax);
  s.weight_bound = std::max(s.weight_bound, r.weight * r.speed);
}

// Sets every speed of the service against its current mean, and the weight bound to the
// largest weight x speed of its replicas. O(replicas), every kReweighEvery picks.
void Router::Reweigh(uint32_t service) {
  Service& s = services_[service];
  s.ref_unit_us = s.unit_us;
  s.weight_bound = 0;
  for (uint32_t replica : s.replicas) SetSpeed(replicas_[replica]);
  s.until_reweigh = detail::kReweighEvery;
}

void Router::RecordSpeed(uint32_t replica, Micros took, uint64_t units) {
  Replica& r = replicas_[replica];
  Service& s = services_[r.service];
  double us = static_cast<double>(std::max<int64_t>(took.count(), 0));
  double per_unit = us / static_cast<double>(std::max<uint64_t>(units, 1));
  auto ewma = [](double& avg, double sample, bool first) {
    avg = first ? sample : avg + detail::kSpeedAlpha * (sample - avg);
  };
  ewma(r.unit_us, per_unit, r.samples == 0);
  ewma(s.unit_us, per_unit, s.samples == 0);
  ewma(s.request_us, us, s.samples == 0);
  ++r.samples;
  ++s.samples;
  if (s.ref_unit_us == 0) s.ref_unit_us = s.unit_us;
  SetSpeed(r);
}

void Router::ChargeError(uint32_t replica, Time now) {
  Replica& r = replicas_[replica];
  ++r.errors;
  ++r.consecutive_errors;
  const ServiceConfig& c = services_[r.service].config;
  if (r.state != ReplicaState::kReady || c.eject_after_errors == 0) return;
  if (r.probation || r.consecutive_errors >= c.eject_after_errors) Eject(replica, now);
}

void Router::Eject(uint32_t replica, Time now) {
  Replica& r = replicas_[replica];
  Service& s = services_[r.service];
  const ServiceConfig& c = s.config;
  uint32_t pool = 0;
  uint32_t ejected = 0;
  for (uint32_t i : s.replicas) {
    ReplicaState st = replicas_[i].state;
    pool += st == ReplicaState::kReady || st == ReplicaState::kEjected;
    ejected += st == ReplicaState::kEjected;
  }
  uint32_t allowed = std::max<uint32_t>(1, pool * c.max_ejected_percent / 100);
  if (ejected + 1 > allowed) return;  // stays in; its next error tries again
  if (r.ejection_level > 0 && now - r.returned_at >= c.eject_backoff_max) r.ejection_level = 0;
  Micros backoff = c.eject_backoff;
  for (uint32_t i = 0; i < r.ejection_level && backoff < c.eject_backoff_max; ++i) backoff *= 2;
  backoff = std::min(backoff, c.eject_backoff_max);
  r.ejection_level = std::min<uint32_t>(r.ejection_level + 1, 32);
  r.state = ReplicaState::kEjected;
  r.probation = false;
  r.consecutive_errors = 0;
  r.ejected_until = now + backoff;
  ++r.ejection_seq;
  ++r.ejections;
  ++s.ejections;
  eject_timers_.push_back(Timer{r.ejected_until, r.id, r.ejection_seq});
  std::push_heap(eject_timers_.begin(), eject_timers_.end());
  Refresh(replica);
}

// Takes the replica's in-flight requests off it (into ids_), each marked as tried there.
void Router::Orphan(uint32_t replica) {
  for (uint32_t slot = 0; slot < requests_.size(); ++slot) {
    Request& q = requests_[slot];
    if (q.state != RequestState::kRouted || q.replica != replica) continue;
    if (q.tried_count < q.tried.size()) q.tried[q.tried_count++] = replicas_[replica].id;
    Release(slot);
    ids_.push_back(IdOf(slot));
  }
}

void Router::ForgetReplica(uint32_t replica) {
  Replica& r = replicas_[replica];
  r.live = false;
  Refresh(replica);
  auto& list = services_[r.service].replicas;
  list.erase(std::find(list.begin(), list.end(), replica));
  replica_index_.erase(r.id);
  free_replicas_.push_back(replica);
}

Status Router::AddReplica(std::string_view service, ReplicaId id, uint32_t capacity) {
  if (id == 0) return {Code::kInvalidArgument, "replica id: must be > 0"};
  auto it = service_index_.find(service);
  if (it == service_index_.end()) return {Code::kNotFound, "service: unknown"};
  if (replica_index_.contains(id)) return {Code::kAlreadyExists, "replica id: already added"};
  uint32_t slot;
  if (!free_replicas_.empty()) {
    slot = free_replicas_.back();
    free_replicas_.pop_back();
  } else {
    slot = static_cast<uint32_t>(replicas_.size());
    replicas_.emplace_back();
  }
  Service& s = services_[it->second];
  Replica& r = replicas_[slot];
  r = Replica{};
  r.live = true;
  r.id = id;
  r.service = it->second;
  r.capacity = capacity > 0 ? capacity : s.config.max_concurrent;
  r.vtime = s.vclock;
  SetSpeed(r);
  s.replicas.push_back(slot);
  replica_index_.emplace(id, slot);
  return {};
}

FinishResult Router::SetReady(ReplicaId id, Time now) {
  dispatched_.clear();
  Replica* r = FindLive(id);
  if (r == nullptr) return {Status{Code::kNotFound, "replica: unknown"}, {}};
  if (r->state == ReplicaState::kDraining)
    return {Status{Code::kFailedPrecondition, "replica: draining, never ready again"}, {}};
  if (r->state != ReplicaState::kStarting) return {Status{}, {}};
  r->state = ReplicaState::kReady;
  Refresh(static_cast<uint32_t>(r - replicas_.data()));
  Pump(r->service, now);
  return {Status{}, dispatched_};
}

Status Router::Drain(ReplicaId id) {
  Replica* r = FindLive(id);
  if (r == nullptr) return {Code::kNotFound, "replica: unknown"};
  if (r->state == ReplicaState::kDraining) return {};
  r->state = ReplicaState::kDraining;
  r->probation = false;
  ++services_[r->service].drains;
  Refresh(static_cast<uint32_t>(r - replicas_.data()));
  return {};
}

RemoveResult Router::Remove(ReplicaId id) {
  ids_.clear();
  auto it = replica_index_.find(id);
  if (it == replica_index_.end()) return {Status{Code::kNotFound, "replica: unknown"}, {}, {}};
  uint32_t replica = it->second;
  Orphan(replica);
  ForgetReplica(replica);
  return {Status{}, ids_, {}};
}

FinishResult Router::SetWeight(ReplicaId id, double weight, Time now) {
  dispatched_.clear();
  if (!(weight >= 0 && weight <= 1))
    return {Status{Code::kInvalidArgument, "weight: must be in [0, 1]"}, {}};
  Replica* r = FindLive(id);
  if (r == nullptr) return {Status{Code::kNotFound, "replica: unknown"}, {}};
  r->weight = weight;
  SetSpeed(*r);
  Refresh(static_cast<uint32_t>(r - replicas_.data()));
  Pump(r->service, now);
  return {Status{}, dispatched_};
}

bool Router::Drained(ReplicaId id) const {
  auto it = replica_index_.find(id);
  if (it == replica_index_.end()) return false;
  const Replica& r = replicas_[it->second];
  return r.state == ReplicaState::kDraining && r.in_flight == 0;
}

std::optional<ReplicaView> Router::FindReplica(ReplicaId id) const {
  auto it = replica_index_.find(id);
  if (it == replica_index_.end()) return std::nullopt;
  const Replica& r = replicas_[it->second];
  return ReplicaView{services_[r.service].name, SnapshotOf(r)};
}

}  // namespace idlepool::serve
