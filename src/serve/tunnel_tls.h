// TLS of the worker tunnel (docs/guide/serving.md, "The worker tunnel"), shared by both ends:
// TLS 1.3 only, every certificate checked against the pool CA, each end's role in its subject's
// OU (trust/ca.h). The worker serves its worker certificate and requires a client certificate of
// OU "gateway" (CertificateAuthority::IssueGateway); the gateway presents that certificate and
// accepts only a worker certificate whose CN is the worker the coordinator expects there, so a
// worker cannot pose as another one.
//
// Contexts are built from PEM text (no files); each is immutable once built and may be shared by
// any number of connections on any thread (a renewal builds a new one). Errors: kInvalidArgument
// naming the PEM that OpenSSL refused (with its reason).
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"

struct ssl_st;

namespace boost::asio::ssl {
class context;
class verify_context;
}  // namespace boost::asio::ssl

namespace idlepool::serve {

// One end's identity: its certificate chain and private key (PEM), and the pool CA (PEM).
struct TunnelTls {
  std::string cert_chain_pem, key_pem, ca_pem;
  bool empty() const { return cert_chain_pem.empty(); }
};

// The worker's end: serves tls' certificate; a client without a certificate of the CA with OU
// "gateway" fails the handshake.
absl::StatusOr<std::shared_ptr<boost::asio::ssl::context>> TunnelServerContext(
    const TunnelTls& tls);
// The gateway's end: presents tls' certificate and verifies the worker's chain against the CA.
// Each connection adds ExpectWorker as its verify callback (the worker's name differs).
absl::StatusOr<std::shared_ptr<boost::asio::ssl::context>> TunnelClientContext(
    const TunnelTls& tls);

// A verify callback (asio's signature): the chain verified, and its leaf has OU "worker" and
// CN `name` (one of each).
struct ExpectWorker {
  std::string name;
  bool operator()(bool preverified, boost::asio::ssl::verify_context& ctx) const;
};

// The certificate the peer of `ssl` presented (PEM); "" when none.
std::string PeerCertificatePem(ssl_st* ssl);

// A plain HTTPS server context (the gateway's client listener): TLS 1.2 or 1.3, the chain and
// key given, no client certificate asked.
absl::StatusOr<std::shared_ptr<boost::asio::ssl::context>> HttpsServerContext(
    const std::string& cert_chain_pem, const std::string& key_pem);

}  // namespace idlepool::serve
