// The pool's revocations as the workers are told them (trust/revocations.h): revoked worker
// names with when, and revoked access tokens (gateway certificates bound to one are refused by
// the workers' tunnel ports). Read from the credential store at start and after each
// revocation; sent in every Welcome and, when it changes, to every open session.
//
// Order: the list in a Welcome and a change's broadcast are both sent under the book's lock, so a
// session never gets an older list after a newer one.
//
// Threads: Welcome from the core thread, Changed from the admin socket's handlers. Holds a
// reference to the credential store (which must outlive it).
#pragma once

#include <mutex>

#include "absl/base/thread_annotations.h"
#include "coordinator/sessions.h"
#include "idlepool.grpc.pb.h"
#include "trust/credential_store.h"

namespace idlepool::coordinator {

class RevocationBook {
 public:
  explicit RevocationBook(trust::CredentialStore& store);

  // Sets welcome's revocations to the current list and sends it to `session`.
  void Welcome(Session& session, v1::CoordinatorMessage welcome);
  // A revocation was recorded: reads the list again and sends it to every open session.
  void Changed(SessionRegistry& sessions);

 private:
  v1::Revocations Read() const;

  trust::CredentialStore& store_;
  std::mutex mu_;
  v1::Revocations current_ ABSL_GUARDED_BY(mu_);
};

}  // namespace idlepool::coordinator
