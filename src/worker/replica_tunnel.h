// ReplicaTunnel: the worker's end of the gateway's tunnels to its service replicas (issue 17;
// the wire in docs/guide/serving.md, "The worker tunnel"). A replica listens only on loopback
// (the worker's, or its sandbox's own under network "none"); the gateway reaches it through a
// TLS connection to this port, authenticated both ways by the pool CA (the worker's
// certificate; the gateway's, OU "gateway"), naming the attempt. The tunnel opens a stream to
// that attempt's port: through the slot's sandbox agent (SandboxSlots::ConnectLoopback) when
// the replica runs sandboxed without the host network, else a TCP connect to 127.0.0.1:port.
// Only a running replica of this worker is reachable: any other attempt id is 404, a replica
// not listening (yet) 503.
//
// Thread safety: Start/Stop from the worker's Run thread; SetCertificate from any thread;
// OpenReplica from the tunnel's own threads. Ownership: holds the lookup function and the
// sandbox slots (null: --no-sandbox), which must outlive it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "platform/unique_fd.h"
#include "worker/attempt.h"
#include "worker/sandbox_slots.h"

namespace idlepool::serve {
class TunnelServer;
}  // namespace idlepool::serve

namespace idlepool::worker {

// A stream to replica `a` (see the header): kNotFound when `a` is not a running replica,
// kUnavailable when nothing listens on its port yet. Blocking (a loopback connect).
absl::StatusOr<platform::UniqueFd> OpenReplica(Attempt& a, SandboxSlots* slots);

class ReplicaTunnel {
 public:
  struct Config {
    std::string listen = "0.0.0.0:0";                        // --tunnel-listen
    std::string key_pem, cert_pem, ca_pem;                   // the worker's identity
    std::function<std::shared_ptr<Attempt>(uint64_t)> find;  // null when not held
    SandboxSlots* slots = nullptr;
    // A gateway certificate (PEM) the pool revoked: the reason (serve::TunnelServerOptions).
    std::function<std::optional<std::string>(const std::string&)> check_gateway;
  };
  // kFailedPrecondition naming --tunnel-listen when it cannot listen.
  static absl::StatusOr<std::unique_ptr<ReplicaTunnel>> Start(Config config);
  ~ReplicaTunnel();

  // What the Hello announces: "host:port" (host 0.0.0.0: the address it connects from).
  std::string address() const;
  void SetCertificate(const std::string& cert_pem, const std::string& key_pem);
  void Stop();

 private:
  ReplicaTunnel() = default;
  std::unique_ptr<serve::TunnelServer> server_;
  std::string host_;
};

}  // namespace idlepool::worker
