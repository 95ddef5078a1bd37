#include "coordinator/admin_service.h"

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"
#include "status_convert.h"
#include "text/names.h"
#include "trust/role.h"
#include "trust/token.h"

namespace idlepool::coordinator {
namespace {

// Only calls over the Unix socket are the admin's.
grpc::Status OnlyLocal(const grpc::ServerContext* ctx) {
  if (ctx->peer().rfind("unix:", 0) == 0) return grpc::Status::OK;
  return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                      "administration is only served on the data dir's admin socket");
}

}  // namespace

absl::StatusOr<v1::CreateTokenReply> AdminService::Create(const v1::CreateTokenRequest& req) {
  auto role = trust::ParseRole(req.role());
  if (!role || *role == trust::Role::kAdmin) {
    return absl::InvalidArgumentError(
        absl::StrCat("--role must be worker, submit, operator or read, not \"", req.role(), "\""));
  }
  if (req.ttl_s() < 0 || req.uses() < -1 || req.uses() == 0) {
    return absl::InvalidArgumentError("--ttl must be >= 0 and --uses >= 1");
  }
  if (req.name().size() > 64) return absl::InvalidArgumentError("--name is at most 64 bytes");
  const auto kind =
      *role == trust::Role::kWorker ? trust::TokenKind::kJoin : trust::TokenKind::kAccess;
  const int64_t now = clock_.WallMs() / 1000;
  if (kind == trust::TokenKind::kJoin && !req.user().empty()) {
    return absl::InvalidArgumentError("--user is for access tokens: a worker acts for nobody");
  }
  if (!req.user().empty() && !trust::IsUserName(req.user())) {
    return absl::InvalidArgumentError(
        "--user: a user name is 1 to 64 letters, digits, '.', '_', '-' or '@'");
  }
  if (kind == trust::TokenKind::kJoin && (req.rate_per_s() != 0 || req.concurrency() != 0)) {
    return absl::InvalidArgumentError(
        "--rate and --concurrency are for access tokens: a worker sends no requests");
  }
  trust::NewTokenSpec spec{kind,
                           *role,
                           req.ttl_s(),
                           req.uses(),
                           req.name(),
                           req.user(),
                           trust::KeyLimit{req.rate_per_s(), req.concurrency()}};
  auto parts = store_.CreateToken(spec, ca_pin_, now);
  if (!parts.ok()) return parts.status();
  v1::CreateTokenReply reply;
  reply.set_token(trust::FormatToken(*parts));
  reply.set_id(parts->id);
  reply.set_expires_unix_s(req.ttl_s() == 0 ? 0 : now + req.ttl_s());
  spdlog::info("token {} created (role {}{}{})", parts->id, req.role(),
               req.name().empty() ? "" : absl::StrCat(", name ", req.name()),
               req.user().empty() ? "" : absl::StrCat(", user ", req.user()));
  return reply;
}

grpc::Status AdminService::CreateToken(grpc::ServerContext* ctx, const v1::CreateTokenRequest* req,
                                       v1::CreateTokenReply* reply) {
  if (auto st = OnlyLocal(ctx); !st.ok()) return st;
  auto r = Create(*req);
  if (!r.ok()) return wire::ToGrpc(r.status());
  *reply = std::move(*r);
  return grpc::Status::OK;
}

grpc::Status AdminService::ListTokens(grpc::ServerContext* ctx, const v1::ListTokensRequest*,
                                      v1::ListTokensReply* reply) {
  if (auto st = OnlyLocal(ctx); !st.ok()) return st;
  for (const auto& t : store_.ListTokens()) {
    auto* out = reply->add_tokens();
    out->set_id(t.id);
    out->set_role(std::string(trust::RoleName(t.role)));
    out->set_name(t.name);
    out->set_created_unix_s(t.created);
    out->set_expires_unix_s(t.expires);
    out->set_uses_left(t.uses_left);
    out->set_revoked(t.revoked);
    out->set_user(t.user);
    out->set_rate_per_s(t.limit.rate_per_s);
    out->set_concurrency(t.limit.concurrency);
  }
  return grpc::Status::OK;
}

grpc::Status AdminService::RevokeToken(grpc::ServerContext* ctx, const v1::RevokeTokenRequest* req,
                                       v1::RevokeTokenReply*) {
  if (auto st = OnlyLocal(ctx); !st.ok()) return st;
  if (auto st = store_.RevokeToken(req->id()); !st.ok()) return wire::ToGrpc(st);
  if (on_revoked_) on_revoked_(req->id());
  spdlog::info("token {} revoked", req->id());
  return grpc::Status::OK;
}

grpc::Status AdminService::RevokeWorker(grpc::ServerContext* ctx,
                                        const v1::RevokeWorkerRequest* req,
                                        v1::RevokeWorkerReply* reply) {
  if (auto st = OnlyLocal(ctx); !st.ok()) return st;
  if (auto st = store_.RevokeWorker(req->name(), clock_.WallMs() / 1000); !st.ok()) {
    return wire::ToGrpc(st);
  }
  authz_.Revoke(req->name());
  if (on_worker_revoked_) on_worker_revoked_(req->name());
  for (const auto& s : sessions_.OpenOf(req->name())) {
    v1::CoordinatorMessage m;
    m.mutable_refused()->set_reason("this worker was revoked by the pool's admin");
    s->Send(std::move(m), /*end=*/true);
    reply->set_was_connected(true);
  }
  spdlog::warn("worker {} revoked{}", req->name(),
               reply->was_connected() ? "; its session was cut" : "");
  return grpc::Status::OK;
}

grpc::Status AdminService::ResetWorker(grpc::ServerContext* ctx, const v1::ResetWorkerRequest* req,
                                       v1::ResetWorkerReply* reply) {
  if (auto st = OnlyLocal(ctx); !st.ok()) return st;
  if (!reset_worker_) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "no scheduler to reset");
  absl::StatusOr<bool> was = reset_worker_(req->name());
  if (!was.ok()) return wire::ToGrpc(was.status());
  reply->set_was_unhealthy(*was);
  spdlog::info("worker {} reset by the admin{}", text::VisibleText(req->name()),
               *was ? " (it was unhealthy)" : "");
  return grpc::Status::OK;
}

grpc::Status AdminService::SetUser(grpc::ServerContext* ctx, const v1::SetUserRequest* req,
                                   v1::SetUserReply* reply) {
  if (auto st = OnlyLocal(ctx); !st.ok()) return st;
  if (!set_user_) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "no users here");
  absl::StatusOr<v1::UserSettings> now = set_user_(*req);
  if (!now.ok()) return wire::ToGrpc(now.status());
  *reply->mutable_settings() = *now;
  return grpc::Status::OK;
}

}  // namespace idlepool::coordinator
