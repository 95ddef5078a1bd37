// What the pool's admin revoked, as the workers' ports check it: the peer port (worker
// certificates) and the tunnel port (gateway certificates). The coordinator refuses revoked
// credentials itself (coordinator/auth.h); these ports are the workers', so the coordinator tells
// each worker the whole list on its session (Welcome.revocations, then a Revocations message at
// every revocation) and the worker checks the certificates its ports are shown against it.
//
//   - A revoked worker: `idlepool workers revoke NAME` at time R refuses every certificate the CA
//     issued to NAME before R. A port cannot see when a certificate was issued, only its
//     notBefore (issued less at most 5 minutes, trust/ca.h), so it refuses a worker certificate
//     of CN NAME whose notBefore is at or before R: every one issued before R, and also one
//     issued to a machine that joins again as NAME within 5 minutes of R (it fetches from the
//     coordinator instead until then; docs/limits.md).
//   - A revoked access token: a gateway certificate bound to it (its URI SAN, trust/ca.h) is
//     refused; revoking the token that `idlepool gateway` ran with revokes its certificate.
//
// Until the first list arrives (a worker that has not been welcomed yet) every certificate is
// refused: the worker cannot know whom the pool revoked.
//
// Thread-safe: Replace from the session's thread, Refusal from the ports' threads.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "trust/ca.h"

namespace idlepool::trust {

struct Revoked {
  std::map<std::string, int64_t> workers;  // name -> revoked at (Unix seconds)
  std::set<std::string> tokens;            // access token ids
};

class RevocationList {
 public:
  // The coordinator's list, replacing the last one.
  void Replace(Revoked revoked);
  // Why a certificate of `role` (already verified against the pool CA) is refused here, or
  // nullopt when it is not: its OU must be `role` exactly, and it must not be revoked.
  std::optional<std::string> Refusal(const CertInfo& cert, std::string_view role) const;
  bool known() const;

 private:
  mutable std::mutex mu_;
  std::optional<Revoked> revoked_ ABSL_GUARDED_BY(mu_);
};

}  // namespace idlepool::trust
