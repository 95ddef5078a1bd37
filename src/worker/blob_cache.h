// The worker's blob cache: verified blobs under WORK_DIR/cache (a blob::BlobStore, so partial
// downloads survive a worker restart and resume), capped in bytes, evicted least recently used
// first.
//
// Cap: inserting a blob first evicts unpinned blobs, least recently used first, until the cache
// plus the new blob fits `cap_bytes`. A blob pinned by a running attempt (Acquire's Pin, held
// while the attempt stages it) is never evicted, so the cache exceeds its cap only while the
// pinned blobs alone exceed it.
// Recency is a use counter, not a clock. It is persisted in ROOT/index ("sha256 size use" lines,
// written atomically after every insert or eviction and every 32nd hit, so a crash loses at most
// the order of the last few hits); a missing or corrupt index is rebuilt from the directory
// (every blob equally old, in name order).
// Verified on read: the first Acquire of a blob after each start, and any Acquire that finds its
// size changed on disk, re-hashes it before it is staged; a corrupt blob is evicted (and fetched
// again).
// Changes (added, evicted) queue up until TakeChanges(); the worker sends them as CacheChange.
//
// Thread safety: every method may be called from any thread. Fetches of different blobs run in
// parallel; concurrent fetches of one blob share its partial download (blob::BlobStore).
// Errors: those of the fetch, kDataLoss for a fetched blob that does not verify,
// kInvalidArgument for a malformed hash.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "blob/store.h"
#include "idlepool.pb.h"

namespace idlepool::worker {

inline constexpr uint64_t kDefaultCacheBytes = uint64_t{10} << 30;  // 10 GiB
inline constexpr size_t kMaxHelloCached = 20000;                    // Hello.cached entries

struct CacheStats {
  uint64_t bytes = 0;  // of complete blobs
  uint64_t blobs = 0;
  uint64_t hits = 0;    // Acquires served from the cache (since start)
  uint64_t misses = 0;  // Acquires that fetched
};

class BlobCache {
 public:
  BlobCache(std::string root, uint64_t cap_bytes = kDefaultCacheBytes);
  ~BlobCache();

  // Creates ROOT, loads (or rebuilds) the index; keeps partial downloads younger than a day
  // (`now_unix_ms`, wall clock, see BlobStore::Init).
  [[nodiscard]] absl::Status Init(int64_t now_unix_ms);

  // Fetches blob `sha256` into the store (e.g. blob::DownloadToStore); returns bytes received.
  using Fetch = std::function<absl::StatusOr<uint64_t>(blob::BlobStore& store)>;

  // Keeps one blob from eviction while alive. Movable; release by destroying it.
  class Pin {
   public:
    Pin() = default;
    Pin(Pin&& o) noexcept;
    Pin& operator=(Pin&& o) noexcept;
    ~Pin();
    const std::string& path() const { return path_; }
    bool hit() const { return hit_; }                  // served from the cache
    uint64_t fetched_bytes() const { return fetched_; }  // received by the fetch

   private:
    friend class BlobCache;
    BlobCache* cache_ = nullptr;
    std::string sha256_, path_;
    bool hit_ = false;
    uint64_t fetched_ = 0;
  };

  // The verified blob `sha256` of `size` bytes, pinned: from the cache (a hit) or fetched with
  // `fetch` (a miss), making room for it first.
  [[nodiscard]] absl::StatusOr<Pin> Acquire(const std::string& sha256, uint64_t size,
                                            const Fetch& fetch);

  std::string PathOf(const std::string& sha256) const { return store_.PathOf(sha256); }
  // The store under the cache, for serving peers (blob::PeerServer reads it without pinning).
  blob::BlobStore& store() { return store_; }
  // Up to `max` blobs held, most recently used first (Hello.cached).
  std::vector<v1::CachedBlob> Contents(size_t max = kMaxHelloCached) const;
  // Changes since the last call (or since Init), in order; empty when none.
  v1::CacheChange TakeChanges();
  CacheStats stats() const;
  uint64_t cap_bytes() const { return cap_; }

 private:
  struct Entry {
    uint64_t size = 0;
    uint64_t last_use = 0;
    int pins = 0;
    bool verified = false;  // hashed since this start
  };
  void Unpin(const std::string& sha256);
  void EvictFor(uint64_t incoming) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RemoveLocked(const std::string& sha256) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SaveIndex() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool LoadIndex() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Rebuild() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string root_;
  const uint64_t cap_;
  blob::BlobStore store_;
  mutable std::mutex mu_;
  std::map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int> pending_pins_ ABSL_GUARDED_BY(mu_);  // pinned while fetched
  uint64_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t use_clock_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t hits_ ABSL_GUARDED_BY(mu_) = 0, misses_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t unsaved_hits_ ABSL_GUARDED_BY(mu_) = 0;
  v1::CacheChange changes_ ABSL_GUARDED_BY(mu_);
};

}  // namespace idlepool::worker
