#include "coordinator/join_service.h"

#include "absl/strings/str_cat.h"
#include "coordinator/worker_input.h"
#include "spdlog/spdlog.h"
#include "trust/role.h"

namespace idlepool::coordinator {
namespace {

constexpr size_t kMaxNameBytes = 64;
constexpr size_t kMaxKeyPemBytes = 4096;

grpc::Status Refuse(grpc::StatusCode code, std::string msg) {
  return grpc::Status(code, std::move(msg));
}

grpc::Status FromAbsl(const absl::Status& st) {
  if (absl::IsNotFound(st) || absl::IsPermissionDenied(st) || absl::IsFailedPrecondition(st) ||
      absl::IsDeadlineExceeded(st)) {
    return Refuse(grpc::StatusCode::UNAUTHENTICATED, std::string(st.message()));
  }
  if (absl::IsInvalidArgument(st)) {
    return Refuse(grpc::StatusCode::INVALID_ARGUMENT, std::string(st.message()));
  }
  return Refuse(grpc::StatusCode::INTERNAL, std::string(st.message()));
}

}  // namespace

grpc::Status JoinService::JoinPool(grpc::ServerContext* ctx, const v1::JoinRequest* req,
                                   v1::JoinReply* reply) {
  if (auto st = authz_.Check(ctx, "/idlepool.v1.Join/JoinPool"); !st.ok()) return st;
  if (req->public_key_pem().empty() || req->public_key_pem().size() > kMaxKeyPemBytes) {
    return Refuse(grpc::StatusCode::INVALID_ARGUMENT, "JoinRequest.public_key_pem is missing");
  }
  std::lock_guard lock(join_mu_);
  const int64_t now = clock_.WallMs() / 1000;
  auto token = store_.CheckToken(req->token_id(), req->secret(), now, trust::TokenKind::kJoin);
  if (!token.ok()) return FromAbsl(token.status());
  if (token->role != trust::Role::kWorker) {
    return Refuse(grpc::StatusCode::UNAUTHENTICATED,
                  "this is an access token; a worker joins with a join token (--role worker)");
  }
  const std::string name = token->name.empty() ? req->name() : token->name;
  if (std::string p = WorkerNameProblem(name); !p.empty()) {
    return Refuse(grpc::StatusCode::INVALID_ARGUMENT, p);
  }
  if (name.size() > kMaxNameBytes) {  // a certificate's common name holds at most 64
    return Refuse(grpc::StatusCode::INVALID_ARGUMENT,
                  absl::StrCat("a worker name that joins has 1 to ", kMaxNameBytes, " bytes"));
  }
  if (auto w = store_.FindWorker(name); w && (w->revoked_at == 0 || w->revoked_at < w->issued)) {
    return Refuse(grpc::StatusCode::ALREADY_EXISTS,
                  absl::StrCat("a worker named ", name,
                               " already joined this pool; pick another --name, or run "
                               "`idlepool workers revoke ",
                               name, "` on the coordinator first"));
  }
  if (auto spent = store_.SpendToken(req->token_id(), req->secret(), now); !spent.ok()) {
    return FromAbsl(spent.status());
  }
  auto st = Issue(name, req->public_key_pem(), now, reply);
  if (st.ok()) spdlog::info("worker {} joined with token {}", name, req->token_id());
  return st;
}

grpc::Status JoinService::RenewCertificate(grpc::ServerContext* ctx, const v1::RenewRequest* req,
                                           v1::JoinReply* reply) {
  trust::Principal who;
  if (auto st = authz_.Check(ctx, "/idlepool.v1.Join/RenewCertificate", &who); !st.ok()) {
    return st;
  }
  if (req->public_key_pem().empty() || req->public_key_pem().size() > kMaxKeyPemBytes) {
    return Refuse(grpc::StatusCode::INVALID_ARGUMENT, "RenewRequest.public_key_pem is missing");
  }
  std::lock_guard lock(join_mu_);
  return Issue(who.name, req->public_key_pem(), clock_.WallMs() / 1000, reply);
}

grpc::Status JoinService::Issue(const std::string& name, const std::string& public_key_pem,
                                int64_t now, v1::JoinReply* reply) {
  auto cert = ca_.IssueWorker(public_key_pem, name, now, validity_s_);
  if (!cert.ok()) return FromAbsl(cert.status());
  if (auto st = store_.RecordWorkerCert(name, cert->serial_hex, now, cert->not_after); !st.ok()) {
    return FromAbsl(st);
  }
  authz_.CertIssued(name, cert->serial_hex);
  reply->set_name(name);
  reply->set_cert_pem(cert->cert_pem);
  reply->set_ca_pem(ca_.cert_pem());
  reply->set_not_before_unix_s(cert->not_before);
  reply->set_not_after_unix_s(cert->not_after);
  return grpc::Status::OK;
}

grpc::Status JoinService::WhoAmI(grpc::ServerContext* ctx, const v1::WhoAmIRequest*,
                                 v1::WhoAmIReply* reply) {
  trust::Principal who;
  if (auto st = authz_.Check(ctx, "/idlepool.v1.Join/WhoAmI", &who); !st.ok()) return st;
  reply->set_role(std::string(trust::RoleName(who.role)));
  reply->set_name(who.name);
  reply->set_token_id(who.token_id);
  reply->set_user(who.user);
  reply->set_rate_per_s(who.limit.rate_per_s);
  reply->set_concurrency(who.limit.concurrency);
  return grpc::Status::OK;
}

}  // namespace idlepool::coordinator
