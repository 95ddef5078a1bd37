#include "http/connection_table.h"

#include <algorithm>
#include <utility>

namespace idlepool::http {

ConnectionTable::ConnectionTable(size_t max_connections, Kick kick)
    : max_(std::max<size_t>(max_connections, 1)), kick_(std::move(kick)) {}

uint64_t ConnectionTable::Admit(int fd, core::MonoTime now) {
  std::lock_guard lock(mu_);
  if (stopping_ || (counts_.live >= max_ && !KickLongestWaiting())) {
    ++counts_.refused;
    return 0;
  }
  const uint64_t id = next_id_++;
  entries_[id] = Entry{fd, false, false, now};
  ++counts_.live;
  ++counts_.admitted;
  return id;
}

void ConnectionTable::SetBusy(uint64_t id) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end() || it->second.kicked || it->second.busy) return;
  it->second.busy = true;
  ++counts_.busy;
}

bool ConnectionTable::SetWaiting(uint64_t id, core::MonoTime now) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end() || it->second.kicked) return false;
  Entry& e = it->second;
  if (e.busy) --counts_.busy;
  e.busy = false;
  e.since = now;
  if (stopping_) {
    e.kicked = true;
    --counts_.live;
    ++counts_.kicked;
    kick_(e.fd);
    return false;
  }
  return true;
}

void ConnectionTable::Remove(uint64_t id) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  if (!it->second.kicked) --counts_.live;
  if (it->second.busy) --counts_.busy;
  entries_.erase(it);
}

void ConnectionTable::Stop() {
  std::lock_guard lock(mu_);
  stopping_ = true;
  for (auto& [id, e] : entries_) {
    if (e.busy || e.kicked) continue;
    e.kicked = true;
    --counts_.live;
    ++counts_.kicked;
    kick_(e.fd);
  }
}

ConnectionTable::Counts ConnectionTable::counts() const {
  std::lock_guard lock(mu_);
  return counts_;
}

bool ConnectionTable::KickLongestWaiting() {
  Entry* victim = nullptr;
  for (auto& [id, e] : entries_) {  // ties: the earlier admitted
    if (!e.busy && !e.kicked && (victim == nullptr || e.since < victim->since)) victim = &e;
  }
  if (victim == nullptr) return false;
  victim->kicked = true;
  --counts_.live;
  ++counts_.kicked;
  kick_(victim->fd);
  return true;
}

}  // namespace idlepool::http
