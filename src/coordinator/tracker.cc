#include "coordinator/tracker.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace idlepool::coordinator {

void Tracker::Connected(const std::string& worker, uint64_t session,
                        const std::string& peer_address, const std::vector<std::string>& cached) {
  auto old = workers_.find(worker);
  if (old != workers_.end()) Disconnected(worker, old->second.session);
  WorkerState& w = workers_[worker];
  w.session = session;
  w.address = peer_address;
  for (const auto& sha : cached) {
    if (w.blobs.size() >= kMaxBlobsPerWorker) break;
    w.blobs.insert(sha);
    holders_[sha].insert(worker);
  }
}

void Tracker::CacheChanged(const std::string& worker, uint64_t session,
                           const std::vector<std::string>& added,
                           const std::vector<std::string>& removed) {
  auto it = workers_.find(worker);
  if (it == workers_.end() || it->second.session != session) return;
  for (const auto& sha : removed) {
    it->second.blobs.erase(sha);
    auto h = holders_.find(sha);
    if (h == holders_.end()) continue;
    h->second.erase(worker);
    if (h->second.empty()) holders_.erase(h);
  }
  for (const auto& sha : added) {
    if (it->second.blobs.size() >= kMaxBlobsPerWorker) break;  // bounded, whatever a worker says
    it->second.blobs.insert(sha);
    holders_[sha].insert(worker);
  }
}

void Tracker::Disconnected(const std::string& worker, uint64_t session) {
  auto it = workers_.find(worker);
  if (it == workers_.end() || it->second.session != session) return;
  for (const auto& sha : it->second.blobs) {
    auto h = holders_.find(sha);
    if (h == holders_.end()) continue;
    h->second.erase(worker);
    if (h->second.empty()) holders_.erase(h);
  }
  workers_.erase(it);
  for (auto f = fetching_.begin(); f != fetching_.end();) {
    f->second.fetchers.erase(worker);
    f = f->second.fetchers.empty() ? fetching_.erase(f) : std::next(f);
  }
}

void Tracker::Expire(core::MonoTime now) {
  for (auto f = fetching_.begin(); f != fetching_.end();) {
    auto& fetchers = f->second.fetchers;
    for (auto it = fetchers.begin(); it != fetchers.end();) {
      it = now - it->second.last_active >= options_.fetcher_ttl ? fetchers.erase(it)
                                                                  : std::next(it);
    }
    f = fetchers.empty() ? fetching_.erase(f) : std::next(f);
  }
}

Tracker::Fetching& Tracker::Touch(const std::string& sha256, uint32_t chunk_count,
                                  const std::string& asker, core::MonoTime now) {
  Fetching& f = fetching_[sha256];
  if (f.chunk_count != chunk_count || f.sent.size() != chunk_count) {
    f.chunk_count = chunk_count;
    f.sent.assign(chunk_count, 0);
    f.last_sent.assign(chunk_count, core::MonoTime{});
  }
  auto [it, inserted] = f.fetchers.try_emplace(asker);
  if (inserted) it->second.ordinal = f.next_ordinal++;
  it->second.last_active = now;
  return f;
}

bool Tracker::HasPeers(const std::string& sha256, const Fetching& f,
                       const std::string& asker) const {
  auto usable = [&](const std::string& w) {
    if (w == asker) return false;
    auto it = workers_.find(w);
    return it != workers_.end() && !it->second.address.empty();
  };
  if (auto h = holders_.find(sha256); h != holders_.end()) {
    for (const auto& w : h->second) {
      if (usable(w)) return true;
    }
  }
  for (const auto& [w, unused] : f.fetchers) {
    if (usable(w)) return true;
  }
  return false;
}

std::vector<PeerRef> Tracker::Locate(const std::string& sha256, uint32_t chunk_count,
                                     const std::string& asker, core::MonoTime now) {
  Expire(now);
  Fetching& f = Touch(sha256, chunk_count, asker, now);
  std::vector<PeerRef> complete, partial;
  auto add = [&](const std::string& w, bool whole, std::vector<PeerRef>* out) {
    if (w == asker) return;
    auto it = workers_.find(w);
    if (it == workers_.end() || it->second.address.empty()) return;
    out->push_back(PeerRef{w, it->second.address, whole});
  };
  auto h = holders_.find(sha256);
  if (h != holders_.end()) {
    for (const auto& w : h->second) add(w, true, &complete);
  }
  for (const auto& [w, unused] : f.fetchers) {
    if (h == holders_.end() || !h->second.contains(w)) add(w, false, &partial);
  }
  // Rotate each group (name order, then a per-blob counter) so askers spread over peers.
  const uint64_t turn = f.locates++;
  auto rotate = [&](std::vector<PeerRef>& v) {
    if (!v.empty()) std::rotate(v.begin(), v.begin() + static_cast<long>(turn % v.size()), v.end());
  };
  rotate(complete);
  rotate(partial);
  std::vector<PeerRef> out;
  for (auto* group : {&complete, &partial}) {
    for (auto& p : *group) {
      if (out.size() >= options_.max_peers) break;
      out.push_back(std::move(p));
    }
  }
  return out;
}

absl::StatusOr<uint32_t> Tracker::Choose(const std::string& sha256, uint32_t chunk_count,
                                         const std::vector<uint32_t>& wanted,
                                         const std::string& asker, core::MonoTime now,
                                         bool no_usable_peer) {
  if (wanted.empty()) return absl::InvalidArgumentError("FetchChunk.wanted is empty");
  for (uint32_t i : wanted) {
    if (i >= chunk_count) {
      return absl::InvalidArgumentError(absl::StrCat("FetchChunk.wanted: chunk ", i,
                                                     " is past the blob's last chunk (",
                                                     chunk_count, " chunks)"));
    }
  }
  Expire(now);
  Fetching& f = Touch(sha256, chunk_count, asker, now);
  const bool has_peers = !no_usable_peer && HasPeers(sha256, f, asker);
  // Where this asker starts in the blob: its arrival ordinal times the golden ratio (40503/65536),
  // so successive askers start far apart and the coordinator's picks for them seldom collide.
  const uint32_t ordinal = f.fetchers[asker].ordinal;
  const uint32_t start =
      static_cast<uint32_t>((uint64_t{ordinal} * chunk_count * 40503 / 65536) % chunk_count);
  bool found = false;
  uint32_t best = 0;
  std::pair<uint32_t, uint32_t> best_key;
  Fetcher& me = f.fetchers[asker];
  for (uint32_t i : wanted) {
    const bool resend_ok =
        f.sent[i] == 0 || !has_peers || now - f.last_sent[i] >= options_.resend_after;
    if (!resend_ok) continue;
    if (no_usable_peer && f.sent[i] > 0) {
      // Served despite recent sends because its peers fail, but never the same chunk to it twice
      // within resend_after: its concurrent requests would each get it.
      auto mine = me.sent_to_it.find(i);
      if (mine != me.sent_to_it.end() && now - mine->second < options_.resend_after) continue;
    }
    const std::pair<uint32_t, uint32_t> key{f.sent[i], (i + chunk_count - start) % chunk_count};
    if (!found || key < best_key) {
      found = true;
      best = i;
      best_key = key;
    }
  }
  if (!found) {
    return absl::ResourceExhaustedError(
        "every wanted chunk was sent to another worker moments ago; fetch it from a peer");
  }
  ++f.sent[best];
  f.last_sent[best] = now;
  me.sent_to_it[best] = now;
  return best;
}

bool Tracker::IsHolder(const std::string& worker, const std::string& sha256) const {
  auto h = holders_.find(sha256);
  return h != holders_.end() && h->second.contains(worker);
}

bool Tracker::IsFetcher(const std::string& worker, const std::string& sha256) const {
  auto f = fetching_.find(sha256);
  return f != fetching_.end() && f->second.fetchers.contains(worker);
}

uint32_t Tracker::SentCount(const std::string& sha256, uint32_t index) const {
  auto f = fetching_.find(sha256);
  if (f == fetching_.end() || index >= f->second.sent.size()) return 0;
  return f->second.sent[index];
}

}  // namespace idlepool::coordinator
