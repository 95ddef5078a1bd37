// GatewaySync: keeps a serve::Gateway of `idlepool gateway` equal to the coordinator's state
// (Jobs.WatchGateway's GatewayState, each message the whole state): services added and
// removed, replicas added (through their workers' tunnels) and removed, drains and weights
// passed on. Errors of single gateway calls are logged and skipped; the next state retries.
//
// Thread safety: Apply from one thread (the watch loop); the gateway's own calls are
// thread-safe. Ownership: holds the gateway, which must outlive it.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "idlepool.pb.h"
#include "serve/gateway.h"

namespace idlepool::cli {

class GatewaySync {
 public:
  explicit GatewaySync(serve::Gateway& gateway) : gateway_(gateway) {}
  void Apply(const v1::GatewayState& state);
  size_t services() const { return services_.size(); }
  size_t replicas() const { return replicas_.size(); }

 private:
  struct Replica {
    std::string service, worker, tunnel;
    bool draining = false;
    double weight = 1;
  };
  void ApplyServices(const v1::GatewayState& state);
  void ApplyReplicas(const v1::GatewayState& state);

  serve::Gateway& gateway_;
  std::map<std::string, std::string> services_;  // name -> its spec, serialized (to see changes)
  std::map<uint64_t, Replica> replicas_;         // by attempt id
};

}  // namespace idlepool::cli
