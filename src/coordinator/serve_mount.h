// ServeMount: the coordinator's own gateway (issue 17, point 2): serve::Gateway listening on
// --serve-listen (default 127.0.0.1:7880) with the coordinator's TLS certificate (the pool CA's,
// as the dashboard), OpenAI clients' `Authorization: Bearer KEY` checked against the pool's
// access tokens (role submit), and a client certificate of its own (OU "gateway", issued by the
// pool CA at every start, kept in memory only) for the workers' tunnels. Attached to the
// ServeBridge, which tells it the services and replicas.
//
// Tokens: a key that checked out is remembered for kKeyCacheMs, so a request costs no store
// read on the gateway's io thread; a revoked token is refused within that time.
//
// Thread safety: Start/Stop from the coordinator's thread; PrometheusText from any thread.
// Errors: Start's kUnavailable when the address cannot be bound (the caller decides whether that
// stops the coordinator), kInvalidArgument for a malformed address, kInternal for a certificate.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "coordinator/auth.h"
#include "coordinator/serve_bridge.h"
#include "coordinator/server_identity.h"
#include "platform/clock.h"

namespace idlepool::serve {
class Gateway;
}  // namespace idlepool::serve

namespace idlepool::coordinator {

// How long a checked key is trusted without asking the credential store again.
inline constexpr int64_t kKeyCacheMs = 5000;

class ServeMount {
 public:
  static absl::StatusOr<std::unique_ptr<ServeMount>> Start(const std::string& listen,
                                                           const ServerIdentity& identity,
                                                           const Authorizer& authz,
                                                           const platform::Clock& clock,
                                                           ServeBridge& bridge);
  ~ServeMount();  // Stop()
  void Stop();

  std::string url() const { return url_; }
  std::string PrometheusText();

 private:
  class Keys;
  ServeMount() = default;
  std::unique_ptr<Keys> keys_;
  std::unique_ptr<serve::Gateway> gateway_;
  ServeBridge* bridge_ = nullptr;
  std::string url_;
};

}  // namespace idlepool::coordinator
