// Who may do what in a pool: the four roles every RPC and HTTP route is mapped to (see
// src/coordinator/authz.h), and the principal a call was authenticated as.
//
//   worker  a lent machine, authenticated by its certificate (mTLS); its name is the
//           certificate's common name and nothing else.
//   submit  a person or script that submits jobs, and cancels, deletes and scales its own
//           user's (a bearer token).
//   operator  as submit, and may act on every user's jobs and services (a bearer token).
//   read    reads jobs, workers and metrics only (a bearer token).
//   admin   creates and revokes tokens and workers; only over the Unix socket in the data dir.
//
// Pure values; thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace idlepool::trust {

enum class Role : uint8_t { kWorker = 1, kSubmit = 2, kRead = 4, kAdmin = 8, kOperator = 16 };

// A set of roles (bit i = Role value), e.g. RoleSet(Role::kSubmit) | Role::kRead.
class RoleSet {
 public:
  constexpr RoleSet() = default;
  constexpr RoleSet(Role r) : bits_(static_cast<uint8_t>(r)) {}  // NOLINT: implicit by design
  constexpr RoleSet operator|(Role r) const { return RoleSet(bits_ | static_cast<uint8_t>(r)); }
  constexpr bool Has(Role r) const { return (bits_ & static_cast<uint8_t>(r)) != 0; }
  constexpr bool empty() const { return bits_ == 0; }
  constexpr uint8_t bits() const { return bits_; }

 private:
  constexpr explicit RoleSet(int bits) : bits_(static_cast<uint8_t>(bits)) {}
  uint8_t bits_ = 0;
};

// "worker", "submit", "read", "admin", "operator".
std::string_view RoleName(Role role);
// The inverse of RoleName; nullopt for anything else.
std::optional<Role> ParseRole(std::string_view name);

// Who a call is from: a worker (name = its certificate's common name), a token holder (name =
// the token's id, or its --name when it has one), or the admin socket (name "admin").
// What one access token may send through a serving gateway: requests per second (a burst of one
// second's worth, at least one request) and requests at once; 0 is no limit.
struct KeyLimit {
  double rate_per_s = 0;
  uint32_t concurrency = 0;
  bool operator==(const KeyLimit&) const = default;
};
// The largest rate and concurrency a token may be given (far above what one gateway serves).
inline constexpr double kMaxKeyRate = 1e6;
inline constexpr uint32_t kMaxKeyConcurrency = 1'000'000;

struct Principal {
  Role role = Role::kRead;
  std::string name;
  std::string token_id;  // the token's id for token holders; empty for workers and admin
  int64_t token_expires = 0;  // token holders: when the token expires (Unix s; 0: never)
  // The person a token holder acts for: its --user, else its name (tokens made before users
  // existed). Jobs record it; a submit token acts only on its own user's jobs. Empty for workers
  // and the admin socket.
  std::string user;
  KeyLimit limit;  // token holders: their token's gateway limits
};

}  // namespace idlepool::trust
