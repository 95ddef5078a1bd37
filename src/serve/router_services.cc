// Services in the router, and what it shows of itself: snapshots and the invariant check
// (serve/router.h).
#include <algorithm>
#include <string>
#include <vector>

#include "serve/router.h"
#include "serve/router_internal.h"

namespace idlepool::serve {

using detail::kNone;
using detail::Replica;
using detail::Request;
using detail::RequestState;
using detail::Service;

namespace {

Status Validate(std::string_view name, const ServiceConfig& c) {
  if (name.empty()) return {Code::kInvalidArgument, "service name: empty"};
  if (c.max_concurrent == 0) return {Code::kInvalidArgument, "max_concurrent: must be >= 1"};
  if (c.retry_budget > kMaxRetryBudget)
    return {Code::kInvalidArgument, "retry_budget: at most 7 (serve::kMaxRetryBudget)"};
  if (c.queue_deadline <= Micros::zero())
    return {Code::kInvalidArgument, "queue_deadline: must be > 0"};
  if (c.eject_backoff <= Micros::zero() || c.eject_backoff_max < c.eject_backoff)
    return {Code::kInvalidArgument, "eject_backoff: must be > 0 and <= eject_backoff_max"};
  if (c.max_ejected_percent > 100)
    return {Code::kInvalidArgument, "max_ejected_percent: at most 100"};
  return {};
}

}  // namespace

Status Router::AddService(std::string_view name, const ServiceConfig& config) {
  if (Status st = Validate(name, config); !st.ok()) return st;
  if (service_index_.contains(name)) return {Code::kAlreadyExists, "service: already added"};
  Service& s = services_.emplace_back();
  s.name = std::string(name);
  s.config = config;
  service_index_.emplace(s.name, static_cast<uint32_t>(services_.size() - 1));
  return {};
}

RemoveResult Router::RemoveService(std::string_view name) {
  ids_.clear();
  failed_.clear();
  auto it = service_index_.find(name);
  if (it == service_index_.end()) return {Status{Code::kNotFound, "service: unknown"}, {}, {}};
  uint32_t service = it->second;
  std::vector<uint32_t> replicas = services_[service].replicas;
  for (uint32_t replica : replicas) {
    Orphan(replica);
    ForgetReplica(replica);
  }
  Service& s = services_[service];
  while (s.queue_head != kNone) {
    failed_.push_back(IdOf(s.queue_head));
    ++s.failed;
    EndRequest(s.queue_head);
  }
  s.live = false;
  service_index_.erase(it);
  return {Status{}, ids_, failed_};
}

std::vector<std::string> Router::ServiceNames() const {
  std::vector<std::string> names;
  for (const auto& [name, index] : service_index_) names.push_back(name);
  std::sort(names.begin(), names.end());
  return names;
}

ReplicaSnapshot Router::SnapshotOf(const Replica& r) const {
  ReplicaSnapshot out;
  out.id = r.id;
  out.state = r.state;
  out.probation = r.probation;
  out.in_flight = r.in_flight;
  out.capacity = r.capacity;
  out.weight = r.weight;
  out.speed = r.speed;
  out.requests = r.requests;
  out.ok = r.ok;
  out.errors = r.errors;
  out.ejections = r.ejections;
  if (r.state == ReplicaState::kEjected) out.ejected_until = r.ejected_until;
  return out;
}

RouterSnapshot Router::Snapshot() const {
  RouterSnapshot out;
  for (const auto& [name, index] : service_index_) {
    const Service& s = services_[index];
    ServiceSnapshot& o = out.services.emplace_back();
    o.name = s.name;
    o.config = s.config;
    o.queue_length = s.queue_length;
    o.submitted = s.submitted;
    o.rejected = s.rejected;
    o.expired = s.expired;
    o.failed = s.failed;
    o.ok = s.ok;
    o.errors = s.errors;
    o.client_gone = s.client_gone;
    o.retries = s.retries;
    o.drains = s.drains;
    o.ejections = s.ejections;
    o.mean_request_us = s.request_us;
    for (uint32_t replica : s.replicas) o.replicas.push_back(SnapshotOf(replicas_[replica]));
    std::sort(o.replicas.begin(), o.replicas.end(),
              [](const auto& a, const auto& b) { return a.id < b.id; });
  }
  std::sort(out.services.begin(), out.services.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  return out;
}

namespace {

std::string Breach(const std::string& what, uint64_t id) {
  return what + " (" + std::to_string(id) + ")";
}

}  // namespace

std::string Router::CheckInvariants() const {
  std::vector<uint32_t> routed(replicas_.size(), 0);
  std::vector<uint32_t> queued(services_.size(), 0);
  for (const Request& q : requests_) {
    if (q.state == RequestState::kRouted) {
      if (q.replica >= replicas_.size() || !replicas_[q.replica].live)
        return Breach("request routed to a replica that is gone", q.replica);
      ++routed[q.replica];
    }
    if (q.state == RequestState::kQueued) ++queued[q.service];
  }
  for (uint32_t si = 0; si < services_.size(); ++si) {
    const Service& s = services_[si];
    uint32_t length = 0;
    uint32_t prev = kNone;
    for (uint32_t slot = s.queue_head; slot != kNone; slot = requests_[slot].next, ++length) {
      const Request& q = requests_[slot];
      if (q.state != RequestState::kQueued || q.service != si || q.prev != prev)
        return Breach("queue list broken at slot", slot);
      prev = slot;
    }
    if (prev != s.queue_tail) return Breach("queue tail wrong, service", si);
    if (length != s.queue_length || length != queued[si])
      return Breach("queue length wrong, service", si);
    uint64_t capacity = 0;
    for (uint32_t replica : s.replicas) {
      const Replica& r = replicas_[replica];
      if (!r.live || r.service != si) return Breach("service lists a foreign replica", r.id);
      if (r.in_flight > r.capacity) return Breach("in flight over capacity", r.id);
      if (r.in_flight != routed[replica]) return Breach("in flight != routed requests", r.id);
      bool routable = s.live && r.state == ReplicaState::kReady && r.weight > 0;
      if (routable != r.routable) return Breach("routable flag wrong", r.id);
      if (routable) capacity += r.capacity;
      bool pickable = routable && r.in_flight < r.capacity;
      if (pickable != (r.pickable_pos != kNone)) return Breach("pickable flag wrong", r.id);
      if (pickable && s.pickable[r.pickable_pos] != replica)
        return Breach("pickable position wrong", r.id);
    }
    if (capacity != s.routable_capacity) return Breach("routable capacity wrong, service", si);
    uint32_t listed = 0;
    for (uint32_t replica : s.replicas) listed += replicas_[replica].pickable_pos != kNone;
    if (listed != s.pickable.size()) return Breach("pickable set size wrong, service", si);
  }
  for (const auto& [id, replica] : replica_index_)
    if (replica >= replicas_.size() || replicas_[replica].id != id || !replicas_[replica].live)
      return Breach("replica index wrong", id);
  return "";
}

}  // namespace idlepool::serve
