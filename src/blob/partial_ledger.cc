#include "blob/partial_ledger.h"

#include "absl/strings/str_cat.h"

namespace idlepool::blob {

absl::Status PartialLedger::Admit(const std::string& dir, const DiskReading& disk,
                                  const std::string& what, const std::string& sha256,
                                  uint64_t declared_bytes) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(sha256);
  const uint64_t held = it == entries_.end() ? 0 : it->second.held;
  const uint64_t mine = it == entries_.end() ? 0 : it->second.promise();
  if (it == entries_.end() && entries_.size() >= kMaxPartials) {
    return absl::ResourceExhaustedError(absl::StrCat(what, " refused: ", entries_.size(),
                                                     " partial uploads in ", dir,
                                                     " already (the most kept at a time)"));
  }
  RoomRequest req;
  req.what = what;
  req.bytes = declared_bytes > held ? declared_bytes - held : 0;
  req.promised_bytes = promised_ - mine;
  req.partials = entries_.size() - (it == entries_.end() ? 0 : 1);
  if (absl::Status st = CheckRoom(dir, disk, req); !st.ok()) return st;
  // An entry already there stays as its partial reported it (an upload with another manifest
  // for the same hash is refused when it opens the partial).
  if (it == entries_.end()) {
    entries_[sha256] = Entry{declared_bytes, 0};
    promised_ += declared_bytes;
  }
  return absl::OkStatus();
}

void PartialLedger::Set(const std::string& sha256, uint64_t declared_bytes, uint64_t held_bytes) {
  std::lock_guard lock(mu_);
  Entry& e = entries_[sha256];
  promised_ -= e.promise();
  e.declared = declared_bytes;
  e.held = held_bytes;
  promised_ += e.promise();
}

void PartialLedger::Forget(const std::string& sha256) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(sha256);
  if (it == entries_.end()) return;
  promised_ -= it->second.promise();
  entries_.erase(it);
}

uint64_t PartialLedger::Promised() const {
  std::lock_guard lock(mu_);
  return promised_;
}

size_t PartialLedger::size() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

std::vector<std::string> PartialLedger::Partials() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  out.reserve(entries_.size());
  for (const auto& [sha, e] : entries_) out.push_back(sha);
  return out;
}

}  // namespace idlepool::blob
