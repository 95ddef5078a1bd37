#include "http/sessions.h"

#include <openssl/rand.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <tuple>
#include <vector>

#include "absl/strings/escaping.h"

namespace idlepool::http {

std::string RandomToken(size_t bytes) {
  std::vector<unsigned char> buf(bytes);
  if (RAND_bytes(buf.data(), static_cast<int>(buf.size())) != 1) {
    std::fputs("RAND_bytes failed\n", stderr);
    std::abort();
  }
  return absl::WebSafeBase64Escape(
      absl::string_view(reinterpret_cast<const char*>(buf.data()), buf.size()));
}

Session SessionTable::Create(const trust::Principal& principal, core::MonoTime now) {
  Session s{RandomToken(32), RandomToken(32), principal};
  std::lock_guard lock(mu_);
  DropExpired(now);
  while (sessions_.size() >= std::max<size_t>(options_.max_sessions, 1)) EvictOldest();
  sessions_[s.id] = Entry{s, now};
  return s;
}

std::optional<Session> SessionTable::Find(std::string_view id, core::MonoTime now) {
  std::lock_guard lock(mu_);
  auto it = sessions_.find(std::string(id));
  if (it == sessions_.end()) return std::nullopt;
  if (now - it->second.last_used >= options_.idle_timeout) {
    sessions_.erase(it);
    return std::nullopt;
  }
  it->second.last_used = std::max(it->second.last_used, now);
  return it->second.session;
}

bool SessionTable::Remove(std::string_view id) {
  std::lock_guard lock(mu_);
  auto it = sessions_.find(std::string(id));
  if (it == sessions_.end()) return false;
  sessions_.erase(it);
  return true;
}

size_t SessionTable::RemoveToken(std::string_view token_id) {
  std::lock_guard lock(mu_);
  return absl::erase_if(sessions_, [&](const auto& kv) {
    return !token_id.empty() && kv.second.session.principal.token_id == token_id;
  });
}

size_t SessionTable::size() const {
  std::lock_guard lock(mu_);
  return sessions_.size();
}

void SessionTable::DropExpired(core::MonoTime now) {
  absl::erase_if(sessions_, [&](const auto& kv) {
    return now - kv.second.last_used >= options_.idle_timeout;
  });
}

void SessionTable::EvictOldest() {
  auto oldest = sessions_.begin();
  for (auto it = sessions_.begin(); it != sessions_.end(); ++it) {
    // Ties (same millisecond) broken by id, so hash order never picks.
    if (std::tie(it->second.last_used, it->first) <
        std::tie(oldest->second.last_used, oldest->first)) {
      oldest = it;
    }
  }
  if (oldest != sessions_.end()) sessions_.erase(oldest);
}

}  // namespace idlepool::http
