// A throwaway pool CA and server certificate for tests that stand up their own gRPC server:
// clients verify it with ca_pem(), as they verify a real coordinator.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "grpcpp/grpcpp.h"
#include "trust/ca.h"
#include "trust/grpc_tls.h"

namespace idlepool::testing {

class TestTls {
 public:
  TestTls() {
    dir_ = std::filesystem::temp_directory_path() /
           ("idlepool-test-tls." + std::to_string(::getpid()) + "." + std::to_string(++count_));
    bool created = false;
    ca_ = std::move(
        trust::CertificateAuthority::LoadOrCreate(dir_.string(), 1'700'000'000, &created).value());
    const std::string key = trust::NewPrivateKeyPem().value();
    const auto cert =
        ca_->IssueServer(trust::PublicKeyPemOf(key).value(), {"127.0.0.1", "localhost"}, NowUnix())
            .value();
    server_ = trust::TlsIdentity{key, cert.cert_pem, ca_->cert_pem()};
  }
  ~TestTls() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  const std::string& ca_pem() const { return ca_->cert_pem(); }
  std::shared_ptr<grpc::ServerCredentials> ServerCredentials() const {
    return trust::CoordinatorServerCredentials(server_);
  }
  // A worker certificate of this CA for `name`, with its key.
  trust::TlsIdentity WorkerIdentity(const std::string& name) const {
    const std::string key = trust::NewPrivateKeyPem().value();
    const auto cert = ca_->IssueWorker(trust::PublicKeyPemOf(key).value(), name, NowUnix()).value();
    return trust::TlsIdentity{key, cert.cert_pem, ca_->cert_pem()};
  }

 private:
  static int64_t NowUnix() { return static_cast<int64_t>(::time(nullptr)); }
  static inline int count_ = 0;
  std::filesystem::path dir_;
  std::unique_ptr<trust::CertificateAuthority> ca_;
  trust::TlsIdentity server_;
};

}  // namespace idlepool::testing
