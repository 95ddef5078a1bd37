// The worker's end of the worker tunnel (issue 17; docs/guide/serving.md, "The worker tunnel"):
// a TLS 1.3 listener that lets the pool's gateways (client certificate of OU "gateway") reach a
// replica listening on this worker's loopback or inside its sandbox. A gateway sends
// `CONNECT <attempt-id> HTTP/1.1\r\n\r\n`; the server opens a stream to that attempt's replica
// (options.open), answers `HTTP/1.1 200 OK` and from then on copies bytes both ways until either
// side closes; else 404 (no such replica), 503 (it does not accept) or 400 (a malformed preface),
// each with Content-Length: 0, and closes.
//
// Bounds: connections pass the gate of the gRPC ports (gated_acceptor.h): at most max_connections
// at once and max_connections_per_address from one address, a quarter of the descriptor limit
// kept free for the worker's tasks (more are reset at accept, one summary log line per 10 s); the
// handshake and the preface together within preface_timeout, the preface at most
// kTunnelPrefaceMax bytes; 64 KiB of buffer per direction of a spliced connection. A gateway's
// half-close (TLS close_notify or TCP FIN) is passed on to the replica as a write shutdown, which
// may still answer; the replica's end of stream ends the tunnel (close_notify after its last byte);
// any error closes both sides.
//
// Threads: one io thread (every connection lives there) and one opener thread that calls
// options.open, one call at a time, so a slow open never stalls the io thread. Start, port,
// SetCertificate and Stop may be called from any thread; the destructor stops.
//
// Errors: Start returns kInvalidArgument for a bad listen address or certificate (the message
// names it), kUnavailable when the address cannot be bound. Connections that fail are closed and
// logged at debug level; nothing else is reported.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "platform/unique_fd.h"
#include "serve/tunnel_tls.h"

namespace idlepool::serve {

struct TunnelServerOptions {
  // host:port ([v6]:port); port 0: any free one (see port()). The worker announces it in
  // Hello.tunnel_address.
  std::string listen = "0.0.0.0:0";
  TunnelTls tls;  // the worker's certificate and key, and the pool CA
  // Connections open at once, handshakes included; more are reset at accept. 1024: a gateway
  // keeps a few idle connections per replica (GatewayOptions::upstream_idle_max bounds it) and a
  // worker runs a handful of replicas; each costs two descriptors and ~150 KiB at most.
  size_t max_connections = 1024;
  // From one address (IPv6: one /64). A gateway keeps at most upstream_idle_max (256) idle
  // connections per replica; a worker runs a handful. An address past it is reset at accept.
  size_t max_connections_per_address = 256;
  // From the accept to the whole preface (TLS handshake included); past it the connection is
  // closed. 10 s: a gateway sends its preface at once; a slow WAN handshake takes < 1 s.
  std::chrono::milliseconds preface_timeout{10'000};
  // Opens a stream to the replica of `attempt`: a connected stream socket (TCP or Unix) the
  // server then owns. Called on the opener thread, one call at a time; it may block briefly (a
  // loopback connect). kNotFound: no such replica here (404); any other error: 503. Required.
  std::function<absl::StatusOr<platform::UniqueFd>(uint64_t attempt)> open;
  // Called on the io thread with the client's certificate (PEM, verified against the CA with OU
  // "gateway") once its handshake ends: a reason refuses it (the connection is closed before its
  // preface is read), nullopt admits it. Unset: every gateway certificate of the CA is admitted
  // (tests); the worker refuses what the pool revoked (trust/revocations.h).
  std::function<std::optional<std::string>(const std::string& cert_pem)> check_client;
};

class TunnelServer {
 public:
  // Binds options.listen and starts both threads.
  static absl::StatusOr<std::unique_ptr<TunnelServer>> Start(TunnelServerOptions options);
  ~TunnelServer();  // Stop()
  TunnelServer(const TunnelServer&) = delete;
  TunnelServer& operator=(const TunnelServer&) = delete;

  uint16_t port() const;  // the bound port
  // A renewed certificate and key (PEM) for the connections accepted from now on; a bad pair is
  // logged and the old one kept.
  void SetCertificate(std::string cert_chain_pem, std::string key_pem);
  // Closes the listener and every connection, and joins both threads (waiting for an open call
  // in progress). Idempotent.
  void Stop();

  struct Impl;

 private:
  explicit TunnelServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace idlepool::serve
