// Jobs.WatchGateway (issue 17): the state a gateway process of its own routes (`idlepool
// gateway`), pushed whenever it changes, and its tunnel certificate. See serve.proto.
//
// The certificate is bound to the access token the call came with (trust/ca.h, a URI SAN): it
// ends no later than the token, and revoking the token revokes it on every worker's tunnel port
// (trust/revocations.h). The token is checked again at every keepalive: a revoked one ends the
// stream (UNAUTHENTICATED).
#include <algorithm>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "coordinator/job_service.h"
#include "spdlog/spdlog.h"
#include "text/utf8.h"
#include "trust/ca.h"

namespace idlepool::coordinator {

namespace {

// A full state at least this often, so a gateway sees a dead stream within its own timeout.
constexpr std::chrono::milliseconds kWatchKeepalive{15000};
// How often a waiting call looks at whether its client left or the coordinator stops.
constexpr std::chrono::milliseconds kWatchPoll{1000};
constexpr size_t kMaxGatewayName = 64;

}  // namespace

grpc::Status JobService::WatchGateway(grpc::ServerContext* ctx, const v1::WatchGatewayRequest* req,
                                      grpc::ServerWriter<v1::GatewayState>* writer) {
  trust::Principal who;
  if (auto st = d_.authz.Check(ctx, "/idlepool.v1.Jobs/WatchGateway", &who); !st.ok()) return st;
  if (d_.serve == nullptr) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "this coordinator does not serve");
  }
  const std::string name = req->name().empty() ? "gateway" : req->name();
  if (name.size() > kMaxGatewayName || text::PrintableText(name) != name) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat("field 'name': a gateway name is 1 to ", kMaxGatewayName,
                                     " printable characters"));
  }
  v1::GatewayState state;
  if (!req->public_key_pem().empty()) {
    if (d_.ca == nullptr) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "no pool CA");
    const int64_t now_s = d_.clock.WallMs() / 1000;
    int64_t validity = trust::kWorkerValiditySeconds;
    if (who.token_expires > 0) validity = std::min(validity, who.token_expires - now_s);
    if (validity <= 0) {
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "the access token has expired");
    }
    auto cert = d_.ca->IssueGateway(req->public_key_pem(), name, now_s, validity, who.token_id);
    if (!cert.ok()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          absl::StrCat("field 'public_key_pem': ", cert.status().message()));
    }
    state.set_certificate_pem(cert->cert_pem);
    state.set_ca_pem(d_.ca->cert_pem());
  }
  spdlog::info("gateway '{}' watches the services (as {})", name, who.name);
  // While it watches, a retiring replica keeps its whole drain (its requests are not seen here).
  d_.serve->Watching(+1);
  absl::Cleanup unwatch = [this] { d_.serve->Watching(-1); };
  uint64_t sent = 0;
  int64_t sent_ms = 0, checked_ms = d_.clock.WallMs();
  while (!ctx->IsCancelled()) {
    const uint64_t version = d_.serve->Export(&state);
    const int64_t now = d_.clock.WallMs();
    if (now - checked_ms >= kWatchKeepalive.count()) {
      if (auto st = d_.authz.Check(ctx, "/idlepool.v1.Jobs/WatchGateway"); !st.ok()) {
        spdlog::warn("gateway '{}' stopped: {}", name, st.error_message());
        return st;
      }
      checked_ms = now;
    }
    if (version != sent || now - sent_ms >= kWatchKeepalive.count()) {
      if (!writer->Write(state)) break;
      sent = version;
      sent_ms = now;
    }
    state.Clear();
    d_.serve->WaitChange(sent, kWatchPoll);
  }
  spdlog::info("gateway '{}' stopped watching", name);
  return grpc::Status::OK;
}

}  // namespace idlepool::coordinator
