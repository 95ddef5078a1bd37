// The coordinator: the gRPC shell around the pure scheduler core.
//
// RPC threads turn calls into core events and post them to one core thread, which owns the
// Scheduler, applies events in batches, writes each batch's records to the store in one
// transaction (group commit), and only then sends the resulting messages to worker sessions.
// Blobs (inputs up, outputs down) live in DATA_DIR/blobs, addressed by SHA-256 and verified on
// receipt; the store is DATA_DIR/pool.db.
//
// Trust (docs/guide/security.md): the pool CA and the server certificate (server_identity.h),
// tokens and certified workers in DATA_DIR/trust.db (trust/credential_store.h). The port speaks
// only TLS; workers present their certificate (mTLS), people and scripts an access token
// (metadata "x-idlepool-token"); every RPC is checked against its roles (auth.h,
// method_roles.h). Administration is served on DATA_DIR/admin.sock only (admin_service.h); the
// data dir is made 0700.
//
// It is also the peer-to-peer tracker (tracker.h): LocateBlob tells a worker which workers hold
// or are fetching a blob, FetchChunk sends the chunk it has sent least (each about once while
// workers pass chunks on). Its knowledge comes from hellos and CacheChange and is not stored.
//
// Nothing a client or worker sends can crash the coordinator: malformed input gets an error
// status. A store write failure stops the coordinator (fail-stop; a restart recovers from the
// store) rather than let memory and disk disagree, except a full disk: the core loop then holds
// its batches and retries them until they commit (core_loop.h). Uploads and submissions are
// refused before they would eat into the reserve kept for the store's commits, and abandoned
// partial uploads are removed after `partial_idle_limit` (blob/space.h).
//
// Thread safety: Start/Shutdown from one thread; accessors from any thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "blob/collect.h"
#include "blob/space.h"
#include "core/defaults.h"
#include "core/ordering.h"
#include "core/types.h"
#include "core/worker_health.h"
#include "platform/clock.h"

namespace idlepool::coordinator {

struct Options {
  std::string listen = "127.0.0.1:7878";  // host:port; port 0 picks a free one
  std::string data_dir;                    // created if missing
  core::Millis lease_timeout = core::kDefaultLeaseTimeout;
  core::Millis heartbeat = core::kDefaultHeartbeat;  // told to workers in Welcome
  core::Millis tick{100};                  // how often leases and timeouts are checked
  // An unhealthy worker's first backoff (core::HealthRule::backoff; doubling up to 4 h).
  core::Millis unhealthy_backoff = core::HealthRule{}.backoff;
  // A partial upload with no bytes for this long is removed (at start, then while running).
  std::chrono::milliseconds partial_idle_limit = blob::kPartialIdleLimit;
  // A worker gone (left or lost, holding nothing) this long leaves the coordinator's memory; the
  // store keeps its history, and it starts afresh (average speed) if it comes back.
  core::Millis forget_workers_after = std::chrono::hours(1);
  // The dashboard, JSON API and /metrics (http/http_server.h): HOST:PORT, [V6]:PORT or PORT;
  // empty: no HTTP server. Port 0 picks a free one.
  std::string http;
  // false: when `http` cannot be bound, log a warning and run without it (the CLI's default
  // address); true: that is a startup error.
  bool http_required = true;
  // The serving gateway (serve_mount.h; issue 17): HOST:PORT; empty: none. Port 0 picks a free
  // one. `serve_required` false: when it cannot be bound, warn and run without it (the CLI's
  // default address); true: a startup error.
  std::string serve_listen;
  bool serve_required = true;
  // The names and addresses workers and people will use to reach this coordinator, for its
  // certificate; empty: this machine's host name and addresses (server_identity.h).
  std::vector<std::string> advertise;
  // Lifetime of the certificates given to workers (at join and renewal), seconds; a worker
  // renews at two thirds of it. Default: trust::kWorkerValiditySeconds (30 days).
  int64_t worker_cert_validity_s = 30LL * 86400;
  // Connections to the gRPC port (gate/connection_gate.h): at most this many at once, and from
  // one address (a site behind one NAT address: raise it, --max-connections-per-address). Both
  // are cut further when the descriptor limit is low: a quarter of the descriptors stay free.
  size_t max_connections = 4096;
  size_t max_connections_per_address = 128;
  // Collection (collector.h): finished jobs older than `keep_finished` are deleted (0: kept
  // until `idlepool delete`); unreferenced blobs go once untouched for `blob_grace`; both every
  // `gc_every`.
  std::chrono::milliseconds keep_finished{0};
  std::chrono::milliseconds blob_grace = blob::kDefaultBlobGrace;
  std::chrono::milliseconds gc_every = std::chrono::minutes(10);
  // A shared pool (core/ordering.h): how fast users' usage decays (--usage-half-life, default one
  // day) and when fair preemption vacates for a starving user (--fair-preemption-after, default
  // 10 min; nullopt: off).
  core::UsageRule usage{};
  core::FairPreemptionRule fair_preemption{};
};

class Coordinator {
 public:
  // Opens the store (restoring every job, task and running attempt), creates the pool CA on
  // first start, and starts serving (and the HTTP server when options.http is set; it logs
  // "dashboard at http://HOST:PORT/"). Errors: kFailedPrecondition (data dir unusable),
  // kUnavailable (cannot bind; for options.http only when http_required), kInvalidArgument (a
  // malformed options.http), store errors as they come.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Coordinator>> Start(
      const Options& options, const platform::Clock& clock = platform::SystemClock());
  virtual ~Coordinator() = default;

  virtual int port() const = 0;
  // The pool CA's pin (what tokens carry) and whether this start created the CA.
  virtual const std::string& ca_pin() const = 0;
  virtual const std::string& ca_pem() const = 0;
  virtual bool ca_created() const = 0;
  // The names in the server certificate (where workers may --join).
  virtual const std::vector<std::string>& server_names() const = 0;
  // A new token, as `idlepool token create` makes it (role worker, submit or read; ttl 0 never
  // expires; uses -1 unlimited): for the join command printed at start and for `idlepool run`.
  virtual absl::StatusOr<std::string> CreateToken(const std::string& role, int64_t ttl_s,
                                                  int64_t uses, const std::string& name) = 0;
  // DATA_DIR/admin.sock.
  virtual std::string admin_socket() const = 0;
  // Where the HTTP server listens; 0 and "" when there is none (off, or could not bind).
  virtual int http_port() const = 0;
  virtual std::string http_host() const = 0;
  // "https://host:port" of the serving gateway; "" when there is none (off, or not bound).
  virtual std::string serve_url() const = 0;
  // Stops serving, ends worker sessions, stops the core thread. Idempotent.
  virtual void Shutdown() = 0;
  // Blocks until Shutdown() or a fatal store error; returns the fatal error if there was one.
  virtual absl::Status Wait() = 0;
};

}  // namespace idlepool::coordinator
