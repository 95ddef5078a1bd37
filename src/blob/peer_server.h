// The Peer service (proto: service Peer): serves the chunks of a BlobStore to the other workers
// of the pool: chunks of complete blobs, and verified chunks of partial transfers in use in this
// process (a worker passes on chunks while it is still downloading). The port speaks only TLS
// and serves only callers with a verified worker certificate of the pool (its subject's one OU
// is exactly "worker", as parsed from the certificate) that the pool did not revoke
// (trust/revocations.h), else PERMISSION_DENIED (a caller without any certificate fails the
// handshake).
//
// Serving never pins or opens a blob for longer than one read: an evicted blob, or a chunk not
// held yet, is NOT_FOUND. At most `max_concurrent` calls are served at once; more get
// RESOURCE_EXHAUSTED (the asker tries another peer), which bounds the disk reads and memory
// (one chunk, 1 MiB, per call) a peer can cause. Indices are checked against the blob's size, so
// no call reads outside it; a malformed hash is INVALID_ARGUMENT.
//
// Connections are accepted by a gate::GrpcPort (gate/grpc_port.h): at most max_connections at
// once and max_connections_per_address from one address, a quarter of the descriptor limit kept
// free for the worker's tasks, a 10 s handshake timeout and 60 s without a call; past a bound a
// connection is reset, and the listener survives running out of descriptors.
//
// Thread safety: Start/Shutdown from one thread; calls are served on gRPC's threads; the store
// is shared with the worker's cache (BlobStore is thread-safe).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "blob/store.h"

namespace grpc {
class Server;
class ServerCredentials;
}  // namespace grpc

namespace idlepool::gate {
class GrpcPort;
}  // namespace idlepool::gate

namespace idlepool::trust {
class RevocationList;
}  // namespace idlepool::trust

namespace idlepool::blob {

struct PeerServerOptions {
  // host:port to listen on; port 0 picks a free one. 0.0.0.0: every interface (the coordinator
  // tells other workers the address this worker connects from).
  std::string listen = "0.0.0.0:0";
  // TLS with the worker's certificate, requiring a verified client certificate of the pool
  // (trust::PeerServerCredentials); Admit also checks the caller is a worker (OU "worker").
  std::shared_ptr<grpc::ServerCredentials> credentials;
  // What the pool revoked, as the coordinator told this worker; a caller it refuses (or any, until
  // it is known) gets PERMISSION_DENIED. Null: only the role is checked (tests).
  std::shared_ptr<const trust::RevocationList> revocations;
  int max_concurrent = 8;   // calls served at once (a few peers' worth of pipelined requests)
  // Connections at once, and from one address (gate/connection_gate.h; cut further when the
  // descriptor limit is low, so that a flood of them leaves the worker descriptors for its
  // tasks). Each other worker needs one or two.
  size_t max_connections = 256;
  size_t max_connections_per_address = 16;
};

class PeerServer {
 public:
  // Starts serving `store` (which must outlive the server). kUnavailable when it cannot listen;
  // kInvalidArgument without credentials.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<PeerServer>> Start(
      BlobStore& store, const PeerServerOptions& options);
  ~PeerServer();

  int port() const;
  // What to announce (Hello.peer_address): the listen host with the bound port.
  std::string address() const;
  uint64_t bytes_served() const;
  // Stops serving (in-flight calls get a second to finish). Idempotent.
  void Shutdown();

 private:
  class Service;
  PeerServer() = default;
  std::unique_ptr<Service> service_;
  std::unique_ptr<gate::GrpcPort> grpc_port_;  // stopped before server_, destroyed after it
  std::unique_ptr<grpc::Server> server_;
  std::string host_;
  int port_ = 0;
};

}  // namespace idlepool::blob
