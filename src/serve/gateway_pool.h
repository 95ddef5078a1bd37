// The gateway's upstream connections, kept alive and reused per replica (issue 17, point 3):
// where each replica is reached (its address, and its worker tunnel when it has one), and its
// idle connections. A connection is taken for one request and given back once its answer was
// read in full with keep-alive; any other end closes it. Owned by the gateway's io thread; no
// locking.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "serve/gateway.h"
#include "serve/gateway_stream.h"
#include "serve/router_types.h"

namespace idlepool::serve {

class UpstreamPool {
 public:
  using Stream = GatewayStream;
  explicit UpstreamPool(uint32_t idle_max) : idle_max_(idle_max) {}

  // `at`: the replica, or its worker's tunnel port when `tunnel` is set.
  void AddReplica(ReplicaId id, boost::asio::ip::tcp::endpoint at,
                  std::optional<TunnelRoute> tunnel = std::nullopt);
  // Closes its idle connections and forgets it.
  void RemoveReplica(ReplicaId id);
  std::optional<boost::asio::ip::tcp::endpoint> Endpoint(ReplicaId id) const;
  // "ADDRESS:PORT" of Endpoint (the Host header of a request to it, formatted once), or null.
  // Valid until the replica is removed.
  const std::string* HostHeader(ReplicaId id) const;
  // Its tunnel, or null (none, or no such replica). Valid until the replica is removed.
  const TunnelRoute* Tunnel(ReplicaId id) const;

  // An idle connection to the replica (most recently used first), or null. Shared: a pending
  // operation holds its stream until its handler ran, even after the exchange dropped it.
  std::shared_ptr<Stream> Take(ReplicaId id);
  // Back after an answer read in full on a keep-alive connection; closed when the replica is
  // gone or already holds idle_max idle ones.
  void Give(ReplicaId id, std::shared_ptr<Stream> stream);
  size_t IdleCount(ReplicaId id) const;
  void CloseAll();

 private:
  struct Replica {
    boost::asio::ip::tcp::endpoint at;
    std::string host_header;
    std::optional<TunnelRoute> tunnel;
    std::vector<std::shared_ptr<Stream>> idle;
  };
  uint32_t idle_max_;
  std::unordered_map<ReplicaId, Replica> replicas_;
};

}  // namespace idlepool::serve
