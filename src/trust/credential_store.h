// The pool's credentials, kept in DATA_DIR/trust.db (SQLite, 0600): tokens (hashed, with role,
// name, expiry and uses left) and the workers the CA has certified, with their revocations.
// Survives restarts; a revoked worker stays revoked.
//
// Times are Unix seconds passed in. Thread-safe (one internal mutex; every call is one SQLite
// transaction). Errors: kNotFound "unknown token ID", kPermissionDenied "wrong secret for token
// ID", kFailedPrecondition "token ID was revoked"/"token ID is spent", kDeadlineExceeded "token
// ID expired at ...", kInternal for SQLite failures (with the path). Messages never hold a secret.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "trust/role.h"
#include "trust/token.h"

namespace idlepool::trust {

struct TokenRecord {
  std::string id;
  Role role = Role::kRead;
  std::string name;  // --name; for a join token, the worker name it is bound to ("" any)
  std::string user;  // access tokens: the user it acts for (--user; "" for tokens made before)
  int64_t created = 0;
  int64_t expires = 0;     // 0: never
  int64_t uses_left = -1;  // -1: unlimited (access tokens); a join token's --uses counts down
  bool revoked = false;
  KeyLimit limit;  // access tokens: what the key may send through a gateway
};

struct WorkerRecord {
  std::string name;
  std::string serial_hex;  // of the newest certificate issued
  int64_t issued = 0;
  int64_t not_after = 0;
  int64_t revoked_at = 0;  // 0: not revoked; certificates issued before it are refused
};

// What CreateToken makes. `ttl` 0 = never expires, `uses` -1 = unlimited.
struct NewTokenSpec {
  TokenKind kind = TokenKind::kAccess;
  Role role = Role::kRead;
  int64_t ttl = 0;
  int64_t uses = -1;
  std::string name;
  std::string user;  // access tokens only: the user it acts for ("" = its name; see CreateToken)
  KeyLimit limit;    // access tokens only (--rate, --concurrency)
};

// A user's name as tokens and jobs carry it: 1..64 of letters, digits, '.', '_', '-', '@'.
bool IsUserName(std::string_view user);

class CredentialStore {
 public:
  static absl::StatusOr<std::unique_ptr<CredentialStore>> Open(const std::string& path);
  ~CredentialStore();

  // A new token. Returns the parts (the only time the secret exists outside the holder). An
  // access token's user defaults to its name, else its id; a join token has none.
  // kInvalidArgument for a role its kind cannot have, a bad ttl, uses, pin or user name.
  absl::StatusOr<TokenParts> CreateToken(const NewTokenSpec& spec, const std::string& pin,
                                         int64_t now);
  // A token's record when id and secret match and it is live (not revoked, expired or spent)
  // and of `kind` (a join token is checked this way before its use is spent).
  absl::StatusOr<TokenRecord> CheckToken(const std::string& id, const std::string& secret,
                                         int64_t now, TokenKind kind = TokenKind::kAccess) const;
  // Spends one use of a join token atomically (checks as CheckToken, then uses_left - 1; a token
  // with no uses left is "spent").
  absl::StatusOr<TokenRecord> SpendToken(const std::string& id, const std::string& secret,
                                         int64_t now);
  std::vector<TokenRecord> ListTokens() const;
  // kNotFound for an unknown id; revoking twice is OK.
  absl::Status RevokeToken(const std::string& id);

  // Records a certificate issued to worker `name` (a renewal replaces the serial).
  absl::Status RecordWorkerCert(const std::string& name, const std::string& serial_hex,
                                int64_t issued, int64_t not_after);
  std::optional<WorkerRecord> FindWorker(const std::string& name) const;
  std::vector<WorkerRecord> ListWorkers() const;
  // Marks the worker revoked at `now`: every certificate issued to it before then is refused.
  // kNotFound when the CA never certified that name.
  absl::Status RevokeWorker(const std::string& name, int64_t now);

 private:
  struct Db;
  explicit CredentialStore(std::unique_ptr<Db> db);
  std::unique_ptr<Db> db_;
};

}  // namespace idlepool::trust
