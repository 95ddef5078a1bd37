// The peer-to-peer tracker: where the chunks of each blob are among the connected workers, and
// which chunk the coordinator itself sends to a fetching worker.
//
// It knows three things, all volatile (rebuilt from hellos after a coordinator restart):
//   holders  - workers that hold a blob completely, from Hello.cached and CacheChange, kept only
//              while the worker's session is open (Connected/Disconnected, fenced by session id);
//   address  - each connected worker's Peer service address (empty: it serves no peers);
//   fetchers - workers currently fetching a blob, registered by Locate and Choose, forgotten after
//              `fetcher_ttl` without either (or when their session closes).
// Locate lists up to `max_peers` workers with a peer address other than the asker: complete
// holders first, then fetchers, each group rotated by a per-blob counter so that successive
// askers do not all get the same first peer.
// Choose picks the chunk the coordinator sends among those the asker wants: the one sent least
// often for this blob, ties broken by the asker's own starting point in the blob (spread by a
// per-blob ordinal), so N askers starting together each get different chunks and pass them on.
// Once a chunk was sent, it is sent again only when the asker has no peer to get it from, or
// after `resend_after` (its first receiver may have failed); until then Choose answers
// kResourceExhausted ("get it from a peer"). This is BitTorrent's super-seeding: the seed with the
// scarce uplink sends each piece about once and lets the swarm spread it.
//
// Pure: no I/O, no clocks (`now` is passed in), no randomness; deterministic for a given call
// sequence. Thread safety: none; the coordinator guards it with a mutex.
// Memory: per blob being fetched, 16 bytes per chunk plus its fetchers; a blob's state is dropped
// once it has no fetcher left.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/types.h"

namespace idlepool::coordinator {

struct TrackerOptions {
  // A fetcher silent this long is forgotten: several LocateBlob periods (swarm.h asks every
  // 1.5 s and fetches chunks far more often).
  core::Millis fetcher_ttl{10000};
  size_t max_peers = 16;  // per Locate (BitTorrent trackers hand out 50; a LAN pool needs fewer)
  // How long a sent chunk is left for the swarm to spread before the coordinator sends it again.
  core::Millis resend_after{5000};
};

struct PeerRef {
  std::string worker;
  std::string address;  // host:port of its Peer service
  bool complete = false;
};

class Tracker {
 public:
  // Blobs remembered per worker (a worker's Hello lists at most 20,000; later CacheChange
  // additions past this are ignored, so no worker can grow the coordinator's memory unbounded).
  static constexpr size_t kMaxBlobsPerWorker = 20000;

  explicit Tracker(TrackerOptions options = {}) : options_(options) {}

  // A worker's session was accepted: replaces what was known of `worker` (its blobs, its address).
  void Connected(const std::string& worker, uint64_t session, const std::string& peer_address,
                 const std::vector<std::string>& cached);
  // Its cache changed. Ignored unless `session` is the worker's current session.
  void CacheChanged(const std::string& worker, uint64_t session,
                    const std::vector<std::string>& added, const std::vector<std::string>& removed);
  // Its session closed: forgets it (blobs, address, fetches). Ignored for a superseded session.
  void Disconnected(const std::string& worker, uint64_t session);

  // Peers for `asker` fetching blob `sha256` of `chunk_count` chunks; registers the asker as a
  // fetcher until `now + fetcher_ttl`.
  std::vector<PeerRef> Locate(const std::string& sha256, uint32_t chunk_count,
                              const std::string& asker, core::MonoTime now);

  // The chunk to send `asker` among `wanted` (see the header comment); registers the asker as a
  // fetcher. kInvalidArgument when `wanted` is empty or an index is >= chunk_count;
  // kResourceExhausted when every wanted chunk was sent recently and the asker has peers it can
  // use (`no_usable_peer`: the asker says every peer it knows failed; then it is served).
  [[nodiscard]] absl::StatusOr<uint32_t> Choose(const std::string& sha256, uint32_t chunk_count,
                                                const std::vector<uint32_t>& wanted,
                                                const std::string& asker, core::MonoTime now,
                                                bool no_usable_peer = false);

  // Drops fetchers silent past fetcher_ttl and blobs nobody fetches. Locate and Choose call it.
  void Expire(core::MonoTime now);

  // For tests and status.
  bool IsHolder(const std::string& worker, const std::string& sha256) const;
  bool IsFetcher(const std::string& worker, const std::string& sha256) const;
  uint32_t SentCount(const std::string& sha256, uint32_t index) const;
  size_t tracked_blobs() const { return fetching_.size(); }

 private:
  struct WorkerState {
    uint64_t session = 0;
    std::string address;
    std::set<std::string> blobs;
  };
  struct Fetcher {
    core::MonoTime last_active{};
    uint32_t ordinal = 0;  // order of arrival for this blob: spreads starting chunks
    // Chunks sent to this worker, and when: with no_usable_peer, not sent to it again within
    // resend_after (its request for them may still be in flight).
    std::map<uint32_t, core::MonoTime> sent_to_it;
  };
  struct Fetching {
    uint32_t chunk_count = 0;
    std::vector<uint32_t> sent;              // times the coordinator sent each chunk
    std::vector<core::MonoTime> last_sent;   // when it last did
    std::map<std::string, Fetcher> fetchers;  // by worker name
    uint32_t next_ordinal = 0;
    uint64_t locates = 0;  // rotates the order of peers handed out
  };

  Fetching& Touch(const std::string& sha256, uint32_t chunk_count, const std::string& asker,
                  core::MonoTime now);
  // Another worker with a peer address holds or fetches `sha256`.
  bool HasPeers(const std::string& sha256, const Fetching& f, const std::string& asker) const;

  const TrackerOptions options_;
  std::map<std::string, WorkerState> workers_;                  // connected workers
  std::map<std::string, std::set<std::string>> holders_;         // sha256 -> workers
  std::map<std::string, Fetching> fetching_;                      // sha256 -> its fetch state
};

}  // namespace idlepool::coordinator
