// The Admin service (proto), served only on the Unix socket DATA_DIR/admin.sock: creating,
// listing and revoking tokens, and revoking workers. Reaching the socket is the credential (the
// data dir is 0700), so no admin secret ever crosses the network; each handler also checks that
// its call came over a Unix socket.
//
// RevokeWorker records the revocation in the credential store (it survives restarts), makes the
// authorizer refuse the worker's certificates at once, and ends its live sessions with a Refused
// message: the worker's next call is refused and it exits. Both revocations are then told to
// every worker (OnWorkerRevoked, OnTokenRevoked: revocation_book.h), whose peer and tunnel ports
// refuse the certificates they revoke.
//
// SetUser changes a user's share and quotas (`idlepool users set`) through OnSetUser's hook.
//
// ResetWorker clears a worker's failures in the scheduler core (no longer unhealthy, held off no
// job) through the hook the coordinator sets (OnResetWorker).
//
// Threads: gRPC handler threads. Holds references to the authorizer, the credential store, the
// session registry, the CA (for the pin tokens carry) and the clock.
#pragma once

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "coordinator/auth.h"
#include "coordinator/sessions.h"
#include "grpcpp/grpcpp.h"
#include "idlepool.grpc.pb.h"
#include "platform/clock.h"
#include "trust.grpc.pb.h"
#include "trust/credential_store.h"

namespace idlepool::coordinator {

class AdminService final : public v1::Admin::Service {
 public:
  AdminService(Authorizer& authz, trust::CredentialStore& store, SessionRegistry& sessions,
               std::string ca_pin, const platform::Clock& clock)
      : authz_(authz),
        store_(store),
        sessions_(sessions),
        ca_pin_(std::move(ca_pin)),
        clock_(clock) {}

  grpc::Status CreateToken(grpc::ServerContext* ctx, const v1::CreateTokenRequest* req,
                           v1::CreateTokenReply* reply) override;
  grpc::Status ListTokens(grpc::ServerContext* ctx, const v1::ListTokensRequest* req,
                          v1::ListTokensReply* reply) override;
  grpc::Status RevokeToken(grpc::ServerContext* ctx, const v1::RevokeTokenRequest* req,
                           v1::RevokeTokenReply* reply) override;
  grpc::Status RevokeWorker(grpc::ServerContext* ctx, const v1::RevokeWorkerRequest* req,
                            v1::RevokeWorkerReply* reply) override;
  grpc::Status ResetWorker(grpc::ServerContext* ctx, const v1::ResetWorkerRequest* req,
                           v1::ResetWorkerReply* reply) override;
  grpc::Status SetUser(grpc::ServerContext* ctx, const v1::SetUserRequest* req,
                       v1::SetUserReply* reply) override;

  // What CreateToken does, for the coordinator itself (the join command it prints at start,
  // and `idlepool run`'s in-process pool).
  absl::StatusOr<v1::CreateTokenReply> Create(const v1::CreateTokenRequest& req);
  // Called with a token's id once it is revoked (the dashboard ends its sessions). Set before
  // the admin socket serves, or from the thread that starts the coordinator.
  void OnTokenRevoked(std::function<void(const std::string&)> f) { on_revoked_ = std::move(f); }
  // Resets a worker in the core: whether it was unhealthy; kNotFound for an unknown worker. Set
  // before the admin socket serves.
  using ResetHook = std::function<absl::StatusOr<bool>(const std::string&)>;
  void OnResetWorker(ResetHook f) { reset_worker_ = std::move(f); }
  // Sets a user's share and quotas (user_book.h). Set before the admin socket serves.
  using SetUserHook = std::function<absl::StatusOr<v1::UserSettings>(const v1::SetUserRequest&)>;
  void OnSetUser(SetUserHook f) { set_user_ = std::move(f); }
  // Called with a worker's name once it is revoked (the workers are told); set as OnTokenRevoked.
  void OnWorkerRevoked(std::function<void(const std::string&)> f) {
    on_worker_revoked_ = std::move(f);
  }

 private:
  Authorizer& authz_;
  trust::CredentialStore& store_;
  SessionRegistry& sessions_;
  const std::string ca_pin_;
  const platform::Clock& clock_;
  std::function<void(const std::string&)> on_revoked_;
  ResetHook reset_worker_;
  SetUserHook set_user_;
  std::function<void(const std::string&)> on_worker_revoked_;
};

}  // namespace idlepool::coordinator
