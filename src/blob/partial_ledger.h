// The partial transfers of a blob store and the space each still may take: its declared size
// minus the bytes it holds (sparse files: what is written is what is allocated). An upload is
// admitted against the sum of these promises (space.h), so many sparse partials cannot each
// pass the free-space check alone and together overfill the disk.
//
// Thread safety: every method may be called from any thread (one mutex, never held while calling
// out). Kept by BlobStore; PartialBlob reports its writes, publication and removal to it.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "blob/space.h"

namespace idlepool::blob {

class PartialLedger {
 public:
  // Admits a partial of `declared_bytes` for `sha256` (already held bytes: its entry's) when
  // space::CheckRoom allows it at `disk`, and records it in the same step, so that two uploads
  // checked at once cannot both take the same free bytes. An entry already present is admitted
  // against what it still promises. kResourceExhausted (space.h's message, or kMaxPartials
  // partials already) otherwise.
  [[nodiscard]] absl::Status Admit(const std::string& dir, const DiskReading& disk,
                                   const std::string& what, const std::string& sha256,
                                   uint64_t declared_bytes);
  // Records (or updates) a partial: its declared size and the bytes it holds.
  void Set(const std::string& sha256, uint64_t declared_bytes, uint64_t held_bytes);
  // The partial's files are gone (published, discarded or removed).
  void Forget(const std::string& sha256);

  // What every partial still may write, bytes.
  uint64_t Promised() const;
  size_t size() const;
  std::vector<std::string> Partials() const;  // their hashes, sorted

 private:
  struct Entry {
    uint64_t declared = 0;
    uint64_t held = 0;
    uint64_t promise() const { return declared > held ? declared - held : 0; }
  };
  mutable std::mutex mu_;
  std::map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
  uint64_t promised_ ABSL_GUARDED_BY(mu_) = 0;  // sum of the entries' promises
};

}  // namespace idlepool::blob
