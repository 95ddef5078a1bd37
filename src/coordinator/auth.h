// Who is calling, and may they: every coordinator RPC starts with Authorizer::Check(ctx, method).
//
// A call is from
//   - a worker, when its TLS connection presented a client certificate that gRPC verified against
//     the pool CA, whose OU is "worker", and whose serial is one the CA issued to that name and
//     not revoked since (workers are listed in the credential store; this class keeps them in
//     memory). The worker's name is the certificate's CN and nothing else.
//   - a token holder, when the metadata "x-idlepool-token" holds a live access token (ipt1_...).
// Then the method's rule (method_roles.h) decides. Errors: UNAUTHENTICATED (no credential, an
// unknown, expired or revoked token, a revoked worker), PERMISSION_DENIED (the role may not call
// this method), each with one line saying what to do. A pre-step-9 pool token gets a message
// naming the upgrade.
//
// Thread-safe: gRPC handler threads call Check concurrently; the worker table has its own lock.
// Holds references to the credential store and the clock (both must outlive it).
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"
#include "platform/clock.h"
#include "trust/ca.h"
#include "trust/credential_store.h"
#include "trust/role.h"

namespace idlepool::coordinator {

inline constexpr const char* kTokenKey = "x-idlepool-token";

class Authorizer {
 public:
  Authorizer(trust::CredentialStore& store, const platform::Clock& clock);

  // OK and `*who` (when given) filled, or the refusal. `full_method` as in method_roles.h.
  [[nodiscard]] grpc::Status Check(const grpc::ServerContext* ctx, std::string_view full_method,
                                   trust::Principal* who = nullptr) const;

  // The principal of an access token ("ipt1_..."), for the gRPC port and the dashboard alike;
  // kUnauthenticated with what is wrong (never the secret).
  [[nodiscard]] absl::StatusOr<trust::Principal> TokenPrincipal(std::string_view token) const;

  // The CA issued `serial_hex` to `name` (join or renewal): it is accepted from now on, along
  // with the one it replaces (a worker renews while its old certificate is still in use).
  void CertIssued(const std::string& name, const std::string& serial_hex);
  // Refuses every certificate issued to `name` so far.
  void Revoke(const std::string& name);

 private:
  grpc::Status Identify(const grpc::ServerContext* ctx, trust::Principal* who) const;
  grpc::Status IdentifyWorker(const std::string& cert_pem, trust::Principal* who) const;
  grpc::Status IdentifyToken(const std::string& token, trust::Principal* who) const;

  struct Serials {
    std::string current, previous;
  };
  trust::CredentialStore& store_;
  const platform::Clock& clock_;
  mutable std::mutex mu_;
  std::map<std::string, Serials> workers_ ABSL_GUARDED_BY(mu_);
  // Certificates already parsed (PEM -> CN, OU, serial): a worker's calls present the same one.
  mutable std::map<std::string, trust::CertInfo> parsed_ ABSL_GUARDED_BY(mu_);
};

}  // namespace idlepool::coordinator
