#include "trust/revocations.h"

#include "absl/strings/str_cat.h"

namespace idlepool::trust {

void RevocationList::Replace(Revoked revoked) {
  std::lock_guard lock(mu_);
  revoked_ = std::move(revoked);
}

bool RevocationList::known() const {
  std::lock_guard lock(mu_);
  return revoked_.has_value();
}

std::optional<std::string> RevocationList::Refusal(const CertInfo& cert,
                                                   std::string_view role) const {
  if (cert.role != role) {
    return absl::StrCat("a certificate of role '", cert.role.substr(0, 64), "', not ",
                        std::string(role));
  }
  if (cert.token_id == kSeveralTokens) return "a certificate bound to several tokens";
  std::lock_guard lock(mu_);
  if (!revoked_) return "this worker has not been told the pool's revocations yet";
  if (role == "worker") {
    auto it = revoked_->workers.find(cert.common_name);
    if (it != revoked_->workers.end() && cert.not_before <= it->second) {
      return absl::StrCat("worker ", cert.common_name.substr(0, 64), " was revoked");
    }
  }
  if (!cert.token_id.empty() && revoked_->tokens.count(cert.token_id) > 0) {
    return absl::StrCat("the token ", cert.token_id, " this certificate was issued for is revoked");
  }
  return std::nullopt;
}

}  // namespace idlepool::trust
