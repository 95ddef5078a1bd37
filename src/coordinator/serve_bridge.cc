#include "coordinator/serve_bridge.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "coordinator/replica_weight.h"
#include "serve/gateway.h"
#include "spdlog/spdlog.h"
#include "text/host_port.h"

namespace idlepool::coordinator {

namespace {

void Warn(const serve::Status& st, const std::string& what) {
  if (!st.ok()) spdlog::warn("gateway: {}: {}", what, st.message);
}

std::string ServiceName(core::JobId job, const v1::JobSpec& spec) {
  return spec.name().empty() ? absl::StrCat("job-", job) : spec.name();
}

}  // namespace

void ServeBridge::Attach(serve::Gateway* gateway, std::string url) {
  std::lock_guard lock(mu_);
  gateway_ = gateway;
  url_ = gateway ? std::move(url) : "";
  for (auto& [job, s] : services_) s.added = false;
  for (auto& [id, r] : replicas_) r.added = false;
  if (!gateway_) return;
  for (auto& [job, s] : services_) AddService(job, s);
  for (auto& [id, r] : replicas_) AddReplica(id, r);
}

std::string ServeBridge::url() const {
  std::lock_guard lock(mu_);
  return url_;
}

std::vector<serve::ServedCount> ServeBridge::TakeServed() {
  std::lock_guard lock(mu_);
  return gateway_ ? gateway_->TakeServed() : std::vector<serve::ServedCount>{};
}

serve::ServiceSpec GatewayServiceSpec(const std::string& name, const v1::ServiceSpec& spec) {
  serve::ServiceSpec g;
  g.name = name;
  g.protocol = spec.protocol() == "openai" ? serve::Protocol::kOpenAI : serve::Protocol::kHttp;
  g.model = spec.model();
  g.health = spec.health();
  g.routing.max_concurrent = spec.max_concurrent() == 0 ? 1 : spec.max_concurrent();
  return g;
}

void ServeBridge::AddService(core::JobId job, Service& s) {
  if (!gateway_ || s.added) return;
  serve::Status st = gateway_->AddService(GatewayServiceSpec(s.name, s.spec.service()));
  Warn(st, absl::StrCat("service ", s.name, " (job ", job, ")"));
  s.added = st.ok();
}

void ServeBridge::AddReplica(core::AttemptId attempt, Replica& r) {
  if (!gateway_ || r.added) return;
  auto s = services_.find(r.job);
  if (s == services_.end() || !s->second.added) return;
  auto t = tunnels_.find(r.worker);
  if (t == tunnels_.end()) return;  // added when its worker announces a tunnel
  auto hp = text::SplitHostPort(t->second);
  if (!hp.ok()) return;
  serve::Status st =
      gateway_->AddReplica(s->second.name, attempt, hp->host, static_cast<uint16_t>(hp->port), 0,
                           serve::TunnelRoute{r.worker, attempt});
  Warn(st, absl::StrCat("replica ", attempt, " on ", r.worker));
  r.added = st.ok();
  if (r.added && r.draining) DrainInGateway(attempt, r);
  auto m = machines_.find(r.worker);
  if (r.added && m != machines_.end() && m->second.weight < 1) {
    Warn(gateway_->SetWeight(attempt, m->second.weight), "weight");
  }
}

void ServeBridge::WorkerSensors(const std::string& worker, const v1::SensorReadings& sensors) {
  std::lock_guard lock(mu_);
  machines_[worker].sensors = sensors;
  Reweigh(worker);
}

void ServeBridge::WorkerGpus(const std::string& worker, const std::vector<v1::GpuDevice>& gpus) {
  std::lock_guard lock(mu_);
  Machine& m = machines_[worker];
  m.gpus.Clear();
  for (const auto& g : gpus) *m.gpus.Add() = g;
  Reweigh(worker);
}

void ServeBridge::Reweigh(const std::string& worker) {
  constexpr double kWeightStep = 0.05;  // readings jitter; a router update per wiggle is waste
  Machine& m = machines_[worker];
  const double w = ReplicaWeight(m.sensors, m.gpus);
  if (std::abs(w - m.weight) < kWeightStep && !(w == 1 && m.weight != 1)) return;
  m.weight = w;
  Changed();
  for (auto& [id, r] : replicas_) {
    if (r.worker == worker && r.added && gateway_) Warn(gateway_->SetWeight(id, w), "weight");
  }
}

void ServeBridge::RemoveReplica(core::AttemptId attempt, Replica& r) {
  if (gateway_ && r.added) Warn(gateway_->Remove(attempt), absl::StrCat("remove ", attempt));
  r.added = false;
}

void ServeBridge::ServiceStarted(core::JobId job, const v1::JobSpec& spec) {
  std::lock_guard lock(mu_);
  Changed();
  auto [s, fresh] = services_.try_emplace(job);
  if (!fresh) return;
  s->second.name = ServiceName(job, spec);
  s->second.spec = spec;
  EndClashing(job);
  AddService(job, s->second);
}

void ServeBridge::ReplicaCreated(core::JobId job, const v1::JobSpec& spec, core::AttemptId attempt,
                                 uint32_t index, const std::string& worker) {
  std::lock_guard lock(mu_);
  Changed();
  auto [s, fresh] = services_.try_emplace(job);
  if (fresh) {
    s->second.name = ServiceName(job, spec);
    s->second.spec = spec;
    EndClashing(job);
    AddService(job, s->second);
  }
  Replica& r = replicas_[attempt];
  r.job = job;
  r.index = index;
  r.worker = worker;
  ++starts_[{job, index}];
  AddReplica(attempt, r);
}

void ServeBridge::ReplicaEnded(core::AttemptId attempt, bool retire) {
  std::lock_guard lock(mu_);
  Changed();
  auto it = replicas_.find(attempt);
  if (it == replicas_.end() || it->second.retiring) return;
  if (retire && StartRetiring(attempt, it->second)) return;
  // Its worker drains what no gateway can reach: Sweep tells it to stop now.
  if (retire) stop_now_.emplace_back(it->second.worker, attempt);
  RemoveReplica(attempt, it->second);
  replicas_.erase(it);
}

void ServeBridge::ServiceEnded(core::JobId job) {
  std::lock_guard lock(mu_);
  Changed();
  auto s = services_.find(job);
  if (s == services_.end()) return;
  bool retiring = false;
  for (auto it = replicas_.begin(); it != replicas_.end();) {
    if (it->second.job != job || it->second.retiring) {
      retiring = retiring || it->second.job == job;
      ++it;
      continue;
    }
    RemoveReplica(it->first, it->second);
    it = replicas_.erase(it);
  }
  if (retiring) {  // Sweep removes it with its last retiring replica
    s->second.ending = true;
    return;
  }
  if (gateway_ && s->second.added) Warn(gateway_->RemoveService(s->second.name), "remove service");
  services_.erase(s);
}

void ServeBridge::WorkerTunnel(const std::string& worker, const std::string& address) {
  std::lock_guard lock(mu_);
  Changed();
  auto old = tunnels_.find(worker);
  if (old != tunnels_.end() && old->second == address) return;
  for (auto& [id, r] : replicas_) {
    if (r.worker == worker) RemoveReplica(id, r);
  }
  if (address.empty()) {
    tunnels_.erase(worker);
    return;
  }
  tunnels_[worker] = address;
  for (auto& [id, r] : replicas_) {
    if (r.worker == worker) AddReplica(id, r);
  }
}

void ServeBridge::Draining(const std::string& worker, const std::vector<uint64_t>& attempts) {
  std::lock_guard lock(mu_);
  Changed();
  for (uint64_t id : attempts) {
    auto it = replicas_.find(id);
    if (it == replicas_.end() || it->second.worker != worker || it->second.draining) continue;
    it->second.draining = true;
    if (gateway_ && it->second.added) DrainInGateway(id, it->second);
  }
}

std::vector<ServeBridge::ReplicaView> ServeBridge::Replicas(core::JobId job) const {
  std::lock_guard lock(mu_);
  std::vector<ReplicaView> out;
  for (const auto& [id, r] : replicas_) {
    if (r.job != job) continue;
    out.push_back({id, r.index, r.worker, r.draining, tunnels_.count(r.worker) > 0});
  }
  return out;
}

uint32_t ServeBridge::Starts(core::JobId job, uint32_t index) const {
  std::lock_guard lock(mu_);
  auto it = starts_.find({job, index});
  return it == starts_.end() ? 0 : it->second;
}

std::string ServeBridge::GatewaySnapshot() const {
  std::lock_guard lock(mu_);
  return gateway_ ? gateway_->SnapshotJson() : "";
}

uint64_t ServeBridge::Export(v1::GatewayState* out) const {
  std::lock_guard lock(mu_);
  out->set_version(version_);
  for (const auto& [job, s] : services_) {
    v1::GatewayService* g = out->add_services();
    g->set_job(job);
    g->set_name(s.name);
    *g->mutable_spec() = s.spec.service();
    for (const auto& [id, r] : replicas_) {
      auto t = tunnels_.find(r.worker);
      if (r.job != job || t == tunnels_.end()) continue;
      v1::GatewayReplica* x = g->add_replicas();
      x->set_attempt(id);
      x->set_worker(r.worker);
      x->set_tunnel_address(t->second);
      x->set_draining(r.draining);
      auto m = machines_.find(r.worker);
      x->set_weight(m == machines_.end() ? 1.0 : m->second.weight);
    }
  }
  return version_;
}

uint64_t ServeBridge::WaitChange(uint64_t seen, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mu_);
  changed_.wait_for(lock, timeout, [&] { return version_ != seen; });
  return version_;
}

}  // namespace idlepool::coordinator
