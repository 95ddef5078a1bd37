// The dashboard's login sessions. POST /login exchanges a read or submit token for a session: a
// random id (256 bits from OpenSSL's RAND_bytes, base64url) that becomes the cookie, and a CSRF
// token (as random) that the dashboard sends back with every state change. The token itself is
// never kept: a session holds the principal it was authenticated as.
//
// Sessions live in memory only (a coordinator restart logs everyone out). One unused for
// `idle_timeout` is gone; at `max_sessions` a new login evicts the least recently used one.
// Times are passed in (the server's clock). Thread-safe: one mutex, held for a lookup or a scan
// of at most max_sessions entries.
#pragma once

#include <chrono>
#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "core/types.h"
#include "trust/role.h"

namespace idlepool::http {

struct Session {
  std::string id;    // the cookie's value: 43 characters of base64url
  std::string csrf;  // what X-Idlepool-CSRF must carry: 43 characters of base64url
  trust::Principal principal;
};

struct SessionOptions {
  std::chrono::milliseconds idle_timeout = std::chrono::hours(12);
  size_t max_sessions = 256;  // at least 1
};

class SessionTable {
 public:
  explicit SessionTable(SessionOptions options) : options_(options) {}

  // A new session for `principal`, last used `now`.
  Session Create(const trust::Principal& principal, core::MonoTime now);
  // The live session with this id, now marked used at `now`; nullopt for an unknown or expired
  // id (an expired one is dropped).
  std::optional<Session> Find(std::string_view id, core::MonoTime now);
  // Ends one session (logout); false if there was none.
  bool Remove(std::string_view id);
  // Ends every session made with token `token_id` (the token was revoked); how many.
  size_t RemoveToken(std::string_view token_id);
  size_t size() const;

 private:
  struct Entry {
    Session session;
    core::MonoTime last_used;
  };
  void DropExpired(core::MonoTime now);  // mu_ held
  void EvictOldest();                    // mu_ held

  const SessionOptions options_;
  mutable std::mutex mu_;
  absl::flat_hash_map<std::string, Entry> sessions_;
};

// `bytes` random bytes from OpenSSL's CSPRNG, base64url without padding. Aborts if the CSPRNG
// fails (it does not on a supported Linux).
std::string RandomToken(size_t bytes);

}  // namespace idlepool::http
