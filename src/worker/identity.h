// The worker's identity in its pool: its own key (made here; it never leaves the machine), the
// certificate the coordinator's CA issued for its name, and the CA, kept in WORK_DIR/identity/
// (0700; key 0600) with the coordinator's address.
//
// Join (k3s-style): with no identity yet, Join parses the join token, connects to the
// coordinator and checks its certificate chain against the token's CA pin BEFORE anything
// secret is sent (trust/pinned_fetch.h), makes a key, and calls Join.JoinPool over TLS verified
// against that CA. Later starts load the identity and connect with it (mTLS); the token is not
// needed again. Renew: at two thirds of the certificate's life, over the worker's own mTLS.
//
// Errors (each one line, for `idlepool worker` to print and exit 2): kInvalidArgument (a
// malformed token), kPermissionDenied (the coordinator is not the pool the token pins; nothing
// was sent), kUnauthenticated (an unknown, spent, expired or revoked token), kAlreadyExists (the
// name is taken), kUnavailable (cannot reach the coordinator), kDataLoss (a damaged identity
// dir, with the path). Blocking; thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "trust/grpc_tls.h"

namespace idlepool::worker {

struct Identity {
  std::string name;         // the certificate's CN: the worker's name in the pool
  std::string coordinator;  // host:port it joined
  trust::TlsIdentity tls;
  int64_t not_before = 0;  // of the certificate, Unix seconds
  int64_t not_after = 0;
};

// WORK_DIR/identity.
std::string IdentityDir(const std::string& work_dir);

// The identity kept in `dir`; nullopt when there is none yet.
absl::StatusOr<std::optional<Identity>> LoadIdentity(const std::string& dir);

// Joins the pool at `coordinator` with `token` ("ipj1_..."), as `name` (the token's own name
// wins when it has one), and keeps the identity in `dir`.
absl::StatusOr<Identity> Join(const std::string& coordinator, const std::string& token,
                              const std::string& name, const std::string& dir);

// True once `now` (Unix seconds) is past two thirds of the certificate's life.
bool RenewalDue(const Identity& id, int64_t now);

// A new key and certificate for the same name, over mTLS with the current one; replaces the
// files in `dir` and `*id`.
absl::Status Renew(Identity* id, const std::string& dir);

}  // namespace idlepool::worker
