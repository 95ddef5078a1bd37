// Tokens as people and machines hold them: "<kind>1_<ca pin>_<id>.<secret>".
//
//   ipj1_...  a join token (role worker): spent by `idlepool worker --join`, which checks the
//             coordinator's CA against the pin before it sends the secret (k3s-style).
//   ipt1_...  an access token (role submit or read) for the CLI, scripts and the dashboard.
//
// The pin is 64 lowercase hex (trust/ca.h); the id is 12 lowercase hex (public: listed, used to
// revoke); the secret is 43 characters of base64url (256 bits), never stored: the coordinator
// keeps SHA-256(secret). Pure functions, thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace idlepool::trust {

enum class TokenKind { kJoin, kAccess };

struct TokenParts {
  TokenKind kind = TokenKind::kAccess;
  std::string pin;
  std::string id;
  std::string secret;
};

// kInvalidArgument naming what is wrong ("not an idlepool token: it should start with ipj1_ or
// ipt1_", "the CA pin should be 64 hex digits", ...); never echoes the secret.
absl::StatusOr<TokenParts> ParseToken(std::string_view text);
std::string FormatToken(const TokenParts& parts);
// A fresh id and secret from the OS's CSPRNG (OpenSSL RAND_bytes).
TokenParts NewToken(TokenKind kind, std::string pin);
// Lowercase hex SHA-256 of the secret: what the store keeps.
std::string HashSecret(std::string_view secret);
// Constant-time equality of two hex hashes.
bool SameHash(std::string_view a, std::string_view b);

}  // namespace idlepool::trust
