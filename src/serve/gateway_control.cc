// Gateway::Impl's control calls, on the io thread: services, replicas, drain, removal, weight.
#include <boost/asio/ip/address.hpp>

#include "serve/gateway_exchange.h"
#include "serve/gateway_health.h"
#include "serve/gateway_impl.h"
#include "spdlog/spdlog.h"

namespace idlepool::serve {

Status Gateway::Impl::AddService(const ServiceSpec& spec) {
  if (spec.name.empty() || spec.name.find_first_of("/?# ") != std::string::npos) {
    return {Code::kInvalidArgument, "service name: empty or with '/', '?', '#' or a space"};
  }
  if (!spec.health.empty() &&
      (spec.health[0] != '/' || spec.health.find_first_of(" \r\n") != std::string::npos)) {
    return {Code::kInvalidArgument, "health: not a path ('/...', without spaces)"};
  }
  if (services.contains(spec.name)) return {Code::kAlreadyExists, "service name already added"};
  if (spec.protocol == Protocol::kOpenAI) {
    if (spec.model.empty()) return {Code::kInvalidArgument, "model: empty for an openai service"};
    if (model_services.contains(spec.model)) {
      return {Code::kAlreadyExists, "model: another openai service serves it"};
    }
  }
  Status s = router.AddService(spec.name, spec.routing);
  if (!s.ok()) return s;
  services[spec.name] = ServiceInfo{spec.protocol, spec.model, spec.health};
  metrics.ServiceAdded(spec.name);
  if (spec.protocol == Protocol::kOpenAI) model_services[spec.model] = spec.name;
  spdlog::info("gateway: service {} ({}{})", spec.name,
               spec.protocol == Protocol::kOpenAI ? "openai, model " : "http", spec.model);
  return s;
}

Status Gateway::Impl::RemoveService(const std::string& name) {
  std::vector<ReplicaId> replicas;
  for (const ServiceSnapshot& s : router.Snapshot().services) {
    if (s.name != name) continue;
    for (const ReplicaSnapshot& r : s.replicas) replicas.push_back(r.id);
  }
  RemoveResult r = router.RemoveService(name);
  if (!r.status.ok()) return r.status;
  std::vector<RequestId> orphaned(r.orphaned.begin(), r.orphaned.end());
  std::vector<RequestId> failed(r.failed.begin(), r.failed.end());
  auto it = services.find(name);
  if (it != services.end()) {
    model_services.erase(it->second.model);
    services.erase(it);
  }
  metrics.ServiceRemoved(name);
  for (ReplicaId id : replicas) {
    StopProbe(id);
    metrics.ReplicaRemoved(id);
    pool.RemoveReplica(id);
    drain_watchers.erase(id);
  }
  EndUnanswered(failed, "the service was removed");
  Orphans(orphaned);  // their Retry finds the service gone: 502, or an error event
  return r.status;
}

Status Gateway::Impl::AddReplica(const std::string& service, ReplicaId id, const std::string& host,
                                 uint16_t port, uint32_t capacity,
                                 std::optional<TunnelRoute> tunnel) {
  boost::system::error_code ec;
  auto address = boost::asio::ip::make_address(host, ec);
  if (ec || port == 0) return {Code::kInvalidArgument, "replica address: not IP:PORT"};
  if (tunnel && !tunnel_ctx) {
    return {Code::kFailedPrecondition, "tunnel: the gateway has no tunnel certificate"};
  }
  if (tunnel && (tunnel->worker.empty() || tunnel->attempt == 0)) {
    return {Code::kInvalidArgument, "tunnel: no worker name or attempt"};
  }
  Status s = router.AddReplica(service, id, capacity);
  if (!s.ok()) return s;
  pool.AddReplica(id, boost::asio::ip::tcp::endpoint(address, port), std::move(tunnel));
  metrics.ReplicaAdded(id);
  auto it = services.find(service);
  if (it != services.end() && !it->second.health.empty()) {
    auto probe = std::make_shared<HealthProbe>(*this, id, it->second.health);
    probes[id] = probe;
    probe->Start();
  }
  return s;
}

void Gateway::Impl::StopProbe(ReplicaId id) {
  auto it = probes.find(id);
  if (it == probes.end()) return;
  it->second->Stop();
  probes.erase(it);
}

Status Gateway::Impl::SetReady(ReplicaId id) {
  FinishResult r = router.SetReady(id, Now());
  if (!r.status.ok()) return r.status;
  StopProbe(id);
  Dispatch(r.dispatched);
  return r.status;
}

Status Gateway::Impl::Drain(ReplicaId id, std::function<void()> drained) {
  Status s = router.Drain(id);
  if (!s.ok()) return s;
  if (drained) drain_watchers[id] = std::move(drained);
  CheckDrained(id);
  return s;
}

Status Gateway::Impl::Remove(ReplicaId id) {
  RemoveResult r = router.Remove(id);
  if (!r.status.ok()) return r.status;
  std::vector<RequestId> orphaned(r.orphaned.begin(), r.orphaned.end());
  StopProbe(id);
  pool.RemoveReplica(id);
  metrics.ReplicaRemoved(id);
  drain_watchers.erase(id);
  Orphans(orphaned);
  return r.status;
}

Status Gateway::Impl::SetWeight(ReplicaId id, double weight) {
  FinishResult r = router.SetWeight(id, weight, Now());
  if (!r.status.ok()) return r.status;
  Dispatch(r.dispatched);
  return r.status;
}

void Gateway::Impl::CheckDrained(ReplicaId id) {
  auto it = drain_watchers.find(id);
  if (it == drain_watchers.end() || !router.Drained(id)) return;
  std::function<void()> fn = std::move(it->second);
  drain_watchers.erase(it);
  fn();
}

void Gateway::Impl::Orphans(std::span<const RequestId> ids) {
  for (RequestId id : ids) {
    auto it = open.find(id);
    if (it == open.end()) continue;
    std::shared_ptr<Exchange> x = it->second;
    x->Orphaned();
  }
}

}  // namespace idlepool::serve
