#include "coordinator/revocation_book.h"

namespace idlepool::coordinator {

RevocationBook::RevocationBook(trust::CredentialStore& store) : store_(store) {
  v1::Revocations first = Read();
  std::lock_guard lock(mu_);
  current_ = std::move(first);
}

v1::Revocations RevocationBook::Read() const {
  v1::Revocations out;
  for (const trust::WorkerRecord& w : store_.ListWorkers()) {
    if (w.revoked_at == 0) continue;
    v1::RevokedWorker* r = out.add_workers();
    r->set_name(w.name);
    r->set_revoked_unix_s(w.revoked_at);
  }
  for (const trust::TokenRecord& t : store_.ListTokens()) {
    if (t.revoked) out.add_token_ids(t.id);
  }
  return out;
}

void RevocationBook::Welcome(Session& session, v1::CoordinatorMessage welcome) {
  std::lock_guard lock(mu_);
  *welcome.mutable_welcome()->mutable_revocations() = current_;
  session.Send(std::move(welcome));
}

void RevocationBook::Changed(SessionRegistry& sessions) {
  v1::Revocations now = Read();
  std::lock_guard lock(mu_);
  current_ = std::move(now);
  for (const std::shared_ptr<Session>& s : sessions.All()) {
    v1::CoordinatorMessage m;
    *m.mutable_revocations() = current_;
    s->Send(std::move(m));
  }
}

}  // namespace idlepool::coordinator
