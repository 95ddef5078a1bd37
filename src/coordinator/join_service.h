// The Join service (proto): a worker joins with a join token and its public key and gets its
// certificate (JoinPool); renews it with its current certificate (RenewCertificate); and any
// member asks who it is (WhoAmI; `idlepool login` uses it to check a token).
//
// JoinPool checks, in order, without spending the token until all pass: the token (live, a join
// token), the name (the token's --name when it has one, else the request's; printable, 1-64
// bytes, and not a worker the CA certified and did not revoke), the public key. Then it spends
// one use, issues the certificate, records it in the credential store and tells the authorizer.
// Joins are serialized (one mutex) so two machines cannot take one name.
//
// Threads: gRPC handler threads. Holds references to the authorizer, the credential store, the
// CA and the clock (all must outlive it).
#pragma once

#include <mutex>

#include "coordinator/auth.h"
#include "grpcpp/grpcpp.h"
#include "idlepool.grpc.pb.h"
#include "platform/clock.h"
#include "trust.grpc.pb.h"
#include "trust/ca.h"
#include "trust/credential_store.h"

namespace idlepool::coordinator {

class JoinService final : public v1::Join::Service {
 public:
  // validity_s: the lifetime of each certificate issued (Options::worker_cert_validity_s).
  JoinService(Authorizer& authz, trust::CredentialStore& store,
              const trust::CertificateAuthority& ca, const platform::Clock& clock,
              int64_t validity_s = trust::kWorkerValiditySeconds)
      : authz_(authz), store_(store), ca_(ca), clock_(clock), validity_s_(validity_s) {}

  grpc::Status JoinPool(grpc::ServerContext* ctx, const v1::JoinRequest* req,
                        v1::JoinReply* reply) override;
  grpc::Status RenewCertificate(grpc::ServerContext* ctx, const v1::RenewRequest* req,
                                v1::JoinReply* reply) override;
  grpc::Status WhoAmI(grpc::ServerContext* ctx, const v1::WhoAmIRequest* req,
                      v1::WhoAmIReply* reply) override;

 private:
  grpc::Status Issue(const std::string& name, const std::string& public_key_pem, int64_t now,
                     v1::JoinReply* reply);

  Authorizer& authz_;
  trust::CredentialStore& store_;
  const trust::CertificateAuthority& ca_;
  const platform::Clock& clock_;
  const int64_t validity_s_;
  std::mutex join_mu_;
};

}  // namespace idlepool::coordinator
