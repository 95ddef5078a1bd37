// gRPC credentials of the pool, in one place: what each listener serves with and what each
// caller presents. TLS everywhere (gRPC 1.51 over OpenSSL 3 negotiates TLS 1.3; it offers no
// knob to refuse 1.2, see docs/limits.md); the only plain-text listener is the admin socket, a
// Unix socket inside the data dir.
//
// Thread-safe (pure constructors of credential objects).
#pragma once

#include <memory>
#include <string>

#include "grpcpp/grpcpp.h"

namespace idlepool::trust {

// A machine's certificate: its key (PKCS#8 PEM), its certificate and the pool CA's.
struct TlsIdentity {
  std::string key_pem;
  std::string cert_pem;
  std::string ca_pem;
};

// The coordinator's port: serves `server` (its chain is cert + CA); asks for a client
// certificate and verifies it against the CA when one is sent (workers), but lets token holders
// in without one (their token is checked per call).
std::shared_ptr<grpc::ServerCredentials> CoordinatorServerCredentials(const TlsIdentity& server);
// A worker's peer port: serves the worker's certificate and requires a verified worker
// certificate of the pool from every caller.
std::shared_ptr<grpc::ServerCredentials> PeerServerCredentials(const TlsIdentity& worker);
// A worker calling the coordinator or a peer (mTLS).
std::shared_ptr<grpc::ChannelCredentials> WorkerChannelCredentials(const TlsIdentity& worker);
// The same two from files a worker rewrites when it renews its certificate (gRPC re-reads them
// every `refresh_s`; new connections use the new certificate). 5 s: three small files read,
// and a renewed certificate is in use well before the old one ends, even at the shortest
// lifetime a coordinator gives (--worker-cert-ttl 30s, renewed at 20 s).
struct TlsFiles {
  std::string key, cert, ca;
};
inline constexpr unsigned kTlsFilesRefreshSeconds = 5;
std::shared_ptr<grpc::ServerCredentials> PeerServerCredentials(
    const TlsFiles& worker, unsigned refresh_s = kTlsFilesRefreshSeconds);
std::shared_ptr<grpc::ChannelCredentials> WorkerChannelCredentials(
    const TlsFiles& worker, unsigned refresh_s = kTlsFilesRefreshSeconds);
// A token holder (CLI, scripts) or a joining worker: verifies the server against `ca_pem`,
// presents no certificate.
std::shared_ptr<grpc::ChannelCredentials> CaOnlyChannelCredentials(const std::string& ca_pem);

}  // namespace idlepool::trust
