#include "coordinator/auth.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "coordinator/method_roles.h"
#include "grpc/grpc_security_constants.h"
#include "trust/token.h"

namespace idlepool::coordinator {
namespace {

constexpr size_t kMaxParsedCerts = 4096;

grpc::Status Unauthenticated(std::string msg) {
  return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, std::move(msg));
}

std::string RolesOf(trust::RoleSet set) {
  std::vector<std::string> names;
  for (auto r : {trust::Role::kWorker, trust::Role::kSubmit, trust::Role::kOperator,
                 trust::Role::kRead, trust::Role::kAdmin}) {
    if (set.Has(r)) names.emplace_back(trust::RoleName(r));
  }
  return names.empty() ? "nobody" : absl::StrJoin(names, " or ");
}

// What a caller whose role is too low can do: the least role that may call.
std::string RoleAdvice(trust::RoleSet set) {
  for (auto r : {trust::Role::kRead, trust::Role::kSubmit, trust::Role::kAdmin}) {
    if (!set.Has(r)) continue;
    const std::string name(trust::RoleName(r));
    return absl::StrCat("it needs role ", name, "; ask the pool's admin for a token of role ", name,
                        " (`idlepool token create --role ", name, "`)");
  }
  return "only workers may (their certificate, from `idlepool worker --join`)";
}

std::string FirstProperty(const grpc::AuthContext& ac, const char* name) {
  auto values = ac.FindPropertyValues(name);
  return values.empty() ? std::string() : std::string(values.front().data(), values.front().size());
}

}  // namespace

Authorizer::Authorizer(trust::CredentialStore& store, const platform::Clock& clock)
    : store_(store), clock_(clock) {
  for (const auto& w : store_.ListWorkers()) {
    if (w.revoked_at > 0 && w.revoked_at >= w.issued) continue;
    workers_[w.name].current = w.serial_hex;
  }
}

void Authorizer::CertIssued(const std::string& name, const std::string& serial_hex) {
  std::lock_guard lock(mu_);
  auto& s = workers_[name];
  s.previous = s.current;
  s.current = serial_hex;
}

void Authorizer::Revoke(const std::string& name) {
  std::lock_guard lock(mu_);
  workers_.erase(name);
}

grpc::Status Authorizer::Check(const grpc::ServerContext* ctx, std::string_view full_method,
                               trust::Principal* who) const {
  const MethodRule* rule = FindMethodRule(full_method);
  if (rule == nullptr) {
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                        absl::StrCat(std::string(full_method), " is not open to anyone"));
  }
  if (rule->public_call) return grpc::Status::OK;
  trust::Principal p;
  if (auto st = Identify(ctx, &p); !st.ok()) return st;
  if (!rule->roles.Has(p.role)) {
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                        absl::StrCat(std::string(full_method), " is for ", RolesOf(rule->roles),
                                     "; ", std::string(trust::RoleName(p.role)), " ", p.name,
                                     " may not call it: ", RoleAdvice(rule->roles)));
  }
  if (who != nullptr) *who = std::move(p);
  return grpc::Status::OK;
}

grpc::Status Authorizer::Identify(const grpc::ServerContext* ctx, trust::Principal* who) const {
  auto ac = ctx->auth_context();
  if (ac && ac->IsPeerAuthenticated()) {
    std::string pem = FirstProperty(*ac, GRPC_X509_PEM_CERT_PROPERTY_NAME);
    if (!pem.empty()) return IdentifyWorker(pem, who);
  }
  const auto& md = ctx->client_metadata();
  auto it = md.find(kTokenKey);
  if (it == md.end()) {
    return Unauthenticated(
        "no credential: run `idlepool login HOST:PORT`, or set IDLEPOOL_TOKEN to an access "
        "token (`idlepool token create --role submit` on the coordinator)");
  }
  return IdentifyToken(std::string(it->second.data(), it->second.size()), who);
}

grpc::Status Authorizer::IdentifyWorker(const std::string& cert_pem, trust::Principal* who) const {
  trust::CertInfo info;
  {
    std::lock_guard lock(mu_);
    auto it = parsed_.find(cert_pem);
    if (it != parsed_.end()) info = it->second;
  }
  if (info.serial_hex.empty()) {
    auto parsed = trust::InspectCertificate(cert_pem);
    if (!parsed.ok()) return Unauthenticated("unreadable client certificate");
    info = *parsed;
    std::lock_guard lock(mu_);
    if (parsed_.size() >= kMaxParsedCerts) parsed_.clear();
    parsed_[cert_pem] = info;
  }
  if (info.role != "worker") {
    return Unauthenticated(absl::StrCat("a ", info.role, " certificate is not a worker's"));
  }
  std::lock_guard lock(mu_);
  auto it = workers_.find(info.common_name);
  if (it == workers_.end() ||
      (info.serial_hex != it->second.current && info.serial_hex != it->second.previous)) {
    return Unauthenticated(absl::StrCat("worker ", info.common_name,
                                        " was revoked or replaced; join again with a new token"));
  }
  who->role = trust::Role::kWorker;
  who->name = info.common_name;
  return grpc::Status::OK;
}

absl::StatusOr<trust::Principal> Authorizer::TokenPrincipal(std::string_view token) const {
  auto parts = trust::ParseToken(token);
  if (!parts.ok()) {
    if (token.rfind("ip", 0) != 0) {
      return absl::UnauthenticatedError(
          "this is a pool token from before idlepool's TLS pools; they are no longer accepted: "
          "on the coordinator run `idlepool token create --role submit --data-dir DIR` and use "
          "that (README: upgrading)");
    }
    return absl::UnauthenticatedError(parts.status().message());
  }
  if (parts->kind != trust::TokenKind::kAccess) {
    return absl::UnauthenticatedError(
        "a join token is for `idlepool worker --join`, not for calls");
  }
  auto rec = store_.CheckToken(parts->id, parts->secret, clock_.WallMs() / 1000);
  if (!rec.ok()) return absl::UnauthenticatedError(rec.status().message());
  trust::Principal who{rec->role, rec->name.empty() ? rec->id : rec->name, rec->id, rec->expires,
                       rec->user};
  if (who.user.empty()) who.user = who.name;  // a token made before users: its name or id
  who.limit = rec->limit;
  return who;
}

grpc::Status Authorizer::IdentifyToken(const std::string& token, trust::Principal* who) const {
  auto p = TokenPrincipal(token);
  if (!p.ok()) return Unauthenticated(std::string(p.status().message()));
  *who = std::move(*p);
  return grpc::Status::OK;
}

}  // namespace idlepool::coordinator
