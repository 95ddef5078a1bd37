// A new upstream connection of the gateway (internal to gateway*.cc), for an exchange or a
// health probe: TCP to the replica's address, and for a replica behind a worker tunnel the TLS
// handshake (the worker must be TunnelRoute::worker), the CONNECT preface and its 200. All of it
// within the deadline the caller set on the stream (expires_after). Io thread only.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "serve/gateway_impl.h"
#include "serve/gateway_stream.h"

namespace idlepool::serve {

// An unconnected stream for the replica: TLS when it has a tunnel (null when the replica is
// gone, or has a tunnel but the gateway no tunnel certificate).
std::shared_ptr<GatewayStream> NewUpstream(Gateway::Impl& g, ReplicaId id);

// On a TCP-connected TLS stream: handshake, preface, answer. done(ec, what): ec set (and `what`
// saying what failed: a refused handshake, "the tunnel answered 404") unless the tunnel is open.
void EnterTunnel(const std::shared_ptr<GatewayStream>& up, const TunnelRoute& route,
                 std::function<void(boost::system::error_code, std::string what)> done);

// Connects `up` (from NewUpstream) to replica `id`, through its tunnel if it has one. Handler:
// void(error_code, std::string what). The plain path costs what a bare async_connect does.
template <class Handler>
void ConnectUpstream(Gateway::Impl& g, ReplicaId id, const std::shared_ptr<GatewayStream>& up,
                     Handler&& done) {
  std::optional<boost::asio::ip::tcp::endpoint> at = g.pool.Endpoint(id);
  if (!at) return done(make_error_code(boost::system::errc::host_unreachable), "no address");
  up->tcp().async_connect(
      *at, [&g, id, up, done = std::forward<Handler>(done)](boost::system::error_code ec) mutable {
        if (ec) return done(ec, "connect: " + ec.message());
        boost::system::error_code ignored;
        up->socket().set_option(boost::asio::ip::tcp::no_delay(true), ignored);
        const TunnelRoute* route = g.pool.Tunnel(id);
        if (route == nullptr || up->tls() == nullptr) return done(ec, std::string());
        EnterTunnel(up, *route, std::move(done));
      });
}

}  // namespace idlepool::serve
