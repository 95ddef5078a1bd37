#include "cli/gateway_sync.h"

#include <set>

#include "coordinator/serve_bridge.h"
#include "spdlog/spdlog.h"
#include "text/host_port.h"

namespace idlepool::cli {

namespace {

void Warn(const serve::Status& st, const std::string& what) {
  if (!st.ok()) spdlog::warn("gateway: {}: {}", what, st.message);
}

}  // namespace

void GatewaySync::Apply(const v1::GatewayState& state) {
  ApplyServices(state);
  ApplyReplicas(state);
}

void GatewaySync::ApplyServices(const v1::GatewayState& state) {
  std::map<std::string, std::string> want;
  for (const auto& s : state.services()) want[s.name()] = s.spec().SerializeAsString();
  for (auto it = services_.begin(); it != services_.end();) {
    auto w = want.find(it->first);
    if (w != want.end() && w->second == it->second) {
      ++it;
      continue;
    }
    // Gone, or changed (a new job of the same name): removed, then added again below.
    for (auto r = replicas_.begin(); r != replicas_.end();) {
      r = r->second.service == it->first ? replicas_.erase(r) : std::next(r);
    }
    Warn(gateway_.RemoveService(it->first), "remove service " + it->first);
    it = services_.erase(it);
  }
  for (const auto& s : state.services()) {
    if (services_.count(s.name()) != 0) continue;
    serve::Status st = gateway_.AddService(coordinator::GatewayServiceSpec(s.name(), s.spec()));
    Warn(st, "service " + s.name());
    if (st.ok()) services_[s.name()] = s.spec().SerializeAsString();
  }
}

void GatewaySync::ApplyReplicas(const v1::GatewayState& state) {
  std::set<uint64_t> seen;
  for (const auto& s : state.services()) {
    if (services_.count(s.name()) == 0) continue;
    for (const auto& r : s.replicas()) {
      seen.insert(r.attempt());
      auto it = replicas_.find(r.attempt());
      if (it != replicas_.end() && it->second.tunnel != r.tunnel_address()) {
        Warn(gateway_.Remove(r.attempt()), "remove moved replica");  // its worker reconnected
        replicas_.erase(it);
        it = replicas_.end();
      }
      if (it == replicas_.end()) {
        auto hp = text::SplitHostPort(r.tunnel_address());
        if (!hp.ok()) continue;
        serve::Status st =
            gateway_.AddReplica(s.name(), r.attempt(), hp->host, static_cast<uint16_t>(hp->port), 0,
                                serve::TunnelRoute{r.worker(), r.attempt()});
        Warn(st, "replica " + std::to_string(r.attempt()));
        if (!st.ok()) continue;
        it =
            replicas_.emplace(r.attempt(), Replica{s.name(), r.worker(), r.tunnel_address()}).first;
      }
      Replica& have = it->second;
      if (r.draining() && !have.draining) {
        Warn(gateway_.Drain(r.attempt()), "drain");
        have.draining = true;
      }
      if (r.weight() != have.weight && r.weight() >= 0 && r.weight() <= 1) {
        Warn(gateway_.SetWeight(r.attempt(), r.weight()), "weight");
        have.weight = r.weight();
      }
    }
  }
  for (auto it = replicas_.begin(); it != replicas_.end();) {
    if (seen.count(it->first) != 0) {
      ++it;
      continue;
    }
    Warn(gateway_.Remove(it->first), "remove replica");
    it = replicas_.erase(it);
  }
}

}  // namespace idlepool::cli
