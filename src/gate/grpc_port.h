// A gRPC server's TCP port behind a gate::Listener: the listener accepts and admits, gRPC takes
// each admitted connection through its external connection acceptor (the TLS handshake and
// HTTP/2 are gRPC's, with the credentials given), and the server gets the bounds on connections
// that gRPC 1.51 has but does not set (docs/limits.md#descriptors):
//   - GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS: a connection that has not finished its TLS handshake
//     and HTTP/2 preface within `handshake_timeout` is closed (gRPC's default: 120 s);
//   - GRPC_ARG_MAX_CONNECTION_IDLE_MS: one with no call for `max_idle` is closed (GOAWAY).
// gRPC 1.51 has no cap on connections itself (GRPC_ARG_MAX_ALLOWED_INCOMING_CONNECTIONS came
// later), nor a way to retry accept(2) after EMFILE: both are the listener's.
//
// Thread safety: Add before BuildAndStart, Start after it, Stop before the server's Shutdown,
// all from one thread.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "gate/listener.h"
#include "grpcpp/server_builder.h"

namespace idlepool::gate {

struct GrpcPortOptions {
  ListenerOptions listener;
  std::chrono::milliseconds handshake_timeout{10000};
  std::chrono::milliseconds max_idle{0};  // 0: no bound
};

class GrpcPort {
 public:
  // Listens on `address` now (see Listener::Open for its forms and errors) and registers the
  // port with `builder`, which must not get a port of its own for the same address.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<GrpcPort>> Add(
      grpc::ServerBuilder& builder, const std::string& address,
      std::shared_ptr<grpc::ServerCredentials> credentials, const GrpcPortOptions& options);
  ~GrpcPort();

  int port() const { return listener_->port(); }
  // Starts accepting; the server must be started (gRPC closes what it is given before).
  void Start();
  // Stops accepting. Idempotent.
  void Stop();
  Listener::Counts counts() const { return listener_->counts(); }

 private:
  GrpcPort() = default;
  std::unique_ptr<Listener> listener_;
  std::unique_ptr<grpc::experimental::ExternalConnectionAcceptor> acceptor_;
};

}  // namespace idlepool::gate
