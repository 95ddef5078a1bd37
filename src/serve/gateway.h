// The serving gateway (issue 17, points 2, 3 and 8): one HTTP/1.1 endpoint in front of a pool's
// service replicas. OpenAI routes (POST /v1/chat/completions, /v1/completions, /v1/embeddings by
// the body's `model`; GET /v1/models) and /services/NAME/... passed to an `http` service. Each
// request is routed by serve::Router (least outstanding requests with two random choices, a
// bounded queue, retries, ejection, drain) and proxied over kept-alive upstream connections;
// answers, server-sent events included, pass through as they arrive. docs/guide/serving.md lists
// the routes and error codes; docs/limits.md what it does not do yet.
//
// Threads: the gateway runs on one io thread of its own (Start); every connection, the router and
// the upstream pool live there, so nothing is locked. The control calls below may be called from
// any other thread: each is posted onto the io thread and waits for its result there (a few
// microseconds when the loop is idle), so when Drain returns no new request goes to that replica.
// Calling them from the io thread itself (inside a callback) runs them at once. After Stop (or
// before Start) they answer kFailedPrecondition.
//
// Errors: control calls return serve::Status (router_types.h) with a static message naming what
// was wrong; nothing throws across this interface except Start (the listen address: a
// boost::system::system_error).
//
// TLS: the client listener is HTTPS when tls_cert_chain_pem/tls_key_pem are set (the handshake
// before the first request, within idle_timeout). A replica added with a TunnelRoute is reached
// through its worker's tunnel (docs/guide/serving.md, "The worker tunnel"): each new upstream
// connection is TCP to the worker's tunnel port, TLS 1.3 with tunnel_tls (the worker must present
// a worker certificate of the pool naming TunnelRoute::worker), `CONNECT <attempt>` and its 200,
// all within connect_timeout; then it is kept alive and reused like any other. A 404 or 503 from
// the tunnel is an upstream error of that attempt (retried elsewhere).
//
// Health: a service with ServiceSpec::health gets each of its starting replicas probed (GET, a
// new connection each time, through its tunnel if it has one) every health_interval until one
// answers 200; then the replica is ready. Removing the replica (or its service) ends its probe.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "serve/key_limits.h"
#include "serve/router_types.h"
#include "serve/served_usage.h"
#include "serve/tunnel_tls.h"

namespace idlepool::serve {

enum class Protocol { kOpenAI, kHttp };

// A client key that checked out: whom its requests are accounted to and what it may send.
struct KeyGrant {
  std::string key_id;  // limits are kept by it (a token's id, never its secret)
  std::string user;    // its requests are this user's (ServedUsage)
  KeyLimit limit;      // over it: 429 with Retry-After, before any replica is touched
};

struct GatewayOptions {
  // host:port to listen on ("127.0.0.1:0": any free port; see Gateway::port()). The coordinator's
  // --serve-listen default is 127.0.0.1:7880 (issue 17).
  std::string listen = "127.0.0.1:7880";
  // Every route needs `Authorization: Bearer KEY` with authenticate(KEY) a grant, else 401. Unset:
  // every request is refused (a gateway is never open by mistake). Runs on the io thread: it must
  // not block for long (callers cache what checked out).
  std::function<std::optional<KeyGrant>(std::string_view bearer_token)> authenticate;
  // A request body over this is answered 413. 8 MiB: a long chat context (128k tokens of text is
  // about 0.5 MiB) with room for base64 images; llama-server and the fake engine use the same.
  uint64_t body_bytes_max = 8 << 20;
  // Deadlines per upstream attempt; each one that passes is an upstream error (retried while
  // nothing reached the client, else the stream ends with an error event).
  //   connect: a replica on the worker's loopback (or its tunnel) accepts in well under a
  //     millisecond; 5 s covers a loaded machine and is Envoy's default connect_timeout order.
  //   first byte: from the request sent to the first byte of the answer's body. A replica gets
  //     requests only once healthy (the model loaded), so this bounds prompt processing, not a
  //     load: 120 s is a 100k-token prompt at ~1k tokens/s on a consumer GPU, and half of
  //     LiteLLM's 600 s default, which lets stuck engines hold clients 10 minutes.
  //   gap: between two pieces of the body once it flows; a healthy engine emits a token every
  //     10-100 ms, so 30 s is a stalled engine (--hang-after), not a slow one.
  std::chrono::milliseconds connect_timeout{5000};
  std::chrono::milliseconds first_byte_timeout{120'000};
  std::chrono::milliseconds gap_timeout{30'000};
  // A client connection idle between requests is closed after this (nginx keepalive_timeout 75 s);
  // a request of a client whose key checked out must arrive whole within it too.
  std::chrono::milliseconds idle_timeout{75'000};
  // Before a connection's first key checked out: from its accept to the end of its first
  // request's head (the TLS handshake included), as the gRPC ports' handshake timeout. The key
  // is checked from the head, before any body is read: a request without a valid key is
  // answered 401 and its connection closed, its body never read (at most kLingerMs spent
  // discarding what the client sends meanwhile, so that it reads the 401 rather than a reset).
  std::chrono::milliseconds request_timeout{10'000};
  // Client connections at once, and from one address (IPv6: one /64): the gate of the gRPC
  // ports (gate/connection_gate.h: cut further when the descriptor limit is low, a quarter of it
  // kept free, and one address never more than a quarter of what is left). Past either a
  // connection is reset at accept; refusals are summed up in one log line per 10 s. 1024 from one
  // address: an application server or an office NAT in front of many users holds hundreds of
  // streams at once; an idle one costs a descriptor and a few KiB for request_timeout.
  size_t max_connections = 4096;
  size_t max_connections_per_address = 1024;
  // Idle upstream connections kept per replica for reuse (more are closed when returned).
  uint32_t upstream_idle_max = 256;
  // Seeds the router's two random choices; logged at start.
  uint64_t seed = 1;
  // Both set: the client listener is HTTPS with this chain and key (PEM); empty: plain HTTP.
  std::string tls_cert_chain_pem, tls_key_pem;
  // This gateway's client certificate for worker tunnels (CertificateAuthority::IssueGateway)
  // and the pool CA. Empty: no replica may have a TunnelRoute.
  TunnelTls tunnel_tls;
  // Between two health probes of a starting replica. 500 ms: a model that loads in seconds gets
  // its first request within half a second of being ready, for a few probes per second per
  // starting replica (Kubernetes' readiness probes default to 10 s; a pool starts few at once).
  std::chrono::milliseconds health_interval{500};
};

// A replica reached through its worker's tunnel: the worker's name (its certificate's CN) and
// the replica's attempt id (the CONNECT preface).
struct TunnelRoute {
  std::string worker;
  uint64_t attempt = 0;
};

// A service as the gateway routes it.
struct ServiceSpec {
  std::string name;
  Protocol protocol = Protocol::kOpenAI;
  std::string model;      // kOpenAI: the name clients send; unique over openai services
  ServiceConfig routing;  // max_concurrent, queue and its deadline, retries, ejection
  // Non-empty (a path, "/health"): starting replicas are probed with GET every health_interval
  // and made ready on a 200. Empty: the caller calls SetReady.
  std::string health;
};

class Gateway {
 public:
  explicit Gateway(GatewayOptions options);
  ~Gateway();  // Stop()
  Gateway(const Gateway&) = delete;
  Gateway& operator=(const Gateway&) = delete;

  // Binds options.listen and starts the io thread. Throws boost::system::system_error when the
  // address cannot be bound or a certificate or key of the options is not valid PEM.
  void Start();
  // Closes the listener and every connection (in-flight requests are cut) and joins the thread.
  void Stop();
  uint16_t port() const;  // the bound port, after Start

  // Control (any thread). kAlreadyExists for a duplicate name, id or model; kNotFound for an
  // unknown one; kInvalidArgument for a bad field (the message names it).
  [[nodiscard]] Status AddService(const ServiceSpec& spec);
  // Its queued requests get 503, its in-flight ones are cut (502 or an error event).
  [[nodiscard]] Status RemoveService(std::string_view name);
  // A replica, starting (no request until SetReady or its health probe's 200), reached at
  // host:port (an IP address): the replica itself, or with `tunnel` its worker's tunnel port.
  // capacity 0: the service's max_concurrent. kFailedPrecondition: a tunnel without tunnel_tls.
  [[nodiscard]] Status AddReplica(std::string_view service, ReplicaId id, std::string_view host,
                                  uint16_t port, uint32_t capacity = 0,
                                  std::optional<TunnelRoute> tunnel = std::nullopt);
  [[nodiscard]] Status SetReady(ReplicaId id);  // its health check answered 200 (ends a probe)
  // No new request from the call's return on; `drained` runs (on the io thread, once) when its
  // last in-flight request has ended, at once if none is. The caller then Removes it (or at
  // drain_seconds, cutting what is left).
  [[nodiscard]] Status Drain(ReplicaId id, std::function<void()> drained = {});
  // The replica is gone (vanished, stopped): its in-flight requests that sent nothing to their
  // clients yet are retried on others; the rest end with an error event (or a cut). Its idle
  // upstream connections are closed.
  [[nodiscard]] Status Remove(ReplicaId id);
  // The machine's state: 1 full share .. 0 no new request (see Router::SetWeight).
  [[nodiscard]] Status SetWeight(ReplicaId id, double weight);

  // What was served since the last call, by user and worker (served_usage.h); empty after Stop.
  std::vector<ServedCount> TakeServed();

  // Metrics rendered on the io thread's state (any thread; "" after Stop).
  std::string PrometheusText();
  std::string SnapshotJson();

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace idlepool::serve
