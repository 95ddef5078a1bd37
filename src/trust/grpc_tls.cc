#include "trust/grpc_tls.h"

#include "grpcpp/security/server_credentials.h"
#include "grpcpp/security/tls_certificate_provider.h"
#include "grpcpp/security/tls_credentials_options.h"

namespace idlepool::trust {
namespace {

std::shared_ptr<grpc::ServerCredentials> ServerCredentials(
    const TlsIdentity& id, grpc_ssl_client_certificate_request_type request) {
  grpc::SslServerCredentialsOptions o(request);
  o.pem_root_certs = id.ca_pem;
  // The chain: the certificate, then the CA's, so a joining machine can pin the CA.
  o.pem_key_cert_pairs.push_back({id.key_pem, id.cert_pem + id.ca_pem});
  return grpc::SslServerCredentials(o);
}

}  // namespace

std::shared_ptr<grpc::ServerCredentials> CoordinatorServerCredentials(const TlsIdentity& server) {
  return ServerCredentials(server, GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY);
}

std::shared_ptr<grpc::ServerCredentials> PeerServerCredentials(const TlsIdentity& worker) {
  return ServerCredentials(worker, GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
}

std::shared_ptr<grpc::ChannelCredentials> WorkerChannelCredentials(const TlsIdentity& worker) {
  grpc::SslCredentialsOptions o;
  o.pem_root_certs = worker.ca_pem;
  o.pem_private_key = worker.key_pem;
  o.pem_cert_chain = worker.cert_pem;
  return grpc::SslCredentials(o);
}

std::shared_ptr<grpc::ChannelCredentials> CaOnlyChannelCredentials(const std::string& ca_pem) {
  grpc::SslCredentialsOptions o;
  o.pem_root_certs = ca_pem;
  return grpc::SslCredentials(o);
}

namespace {

std::shared_ptr<grpc::experimental::CertificateProviderInterface> Watcher(const TlsFiles& f,
                                                                          unsigned refresh_s) {
  return std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(f.key, f.cert, f.ca,
                                                                              refresh_s);
}

}  // namespace

std::shared_ptr<grpc::ServerCredentials> PeerServerCredentials(const TlsFiles& worker,
                                                               unsigned refresh_s) {
  grpc::experimental::TlsServerCredentialsOptions o(Watcher(worker, refresh_s));
  o.watch_root_certs();
  o.watch_identity_key_cert_pairs();
  o.set_cert_request_type(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  return grpc::experimental::TlsServerCredentials(o);
}

std::shared_ptr<grpc::ChannelCredentials> WorkerChannelCredentials(const TlsFiles& worker,
                                                                   unsigned refresh_s) {
  grpc::experimental::TlsChannelCredentialsOptions o;
  o.set_certificate_provider(Watcher(worker, refresh_s));
  o.watch_root_certs();
  o.watch_identity_key_cert_pairs();
  return grpc::experimental::TlsCredentials(o);
}

}  // namespace idlepool::trust
