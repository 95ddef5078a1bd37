// A blob being received chunk by chunk, in any order, into a sparse data file, verified chunk by
// chunk against its manifest before anything is written, and published once complete.
//
// On disk: `paths.data` (sparse, the blob's size; chunk i at its offset) and `paths.manifest`
// (the manifest, a serialized v1::BlobManifest). Which chunks are held is not stored: Open
// re-verifies what the data file holds (hashes each chunk that is not a hole; a chunk that does
// not match is simply missing), so a partial survives a process restart or a power cut and
// resumes from the chunks it verifiably has. Publish, once every chunk is held, re-reads the
// whole file and checks the blob's SHA-256 (a manifest can lie: chunk hashes that match the data
// but not the blob), fsyncs, stores the manifest at `paths.dest_manifest` (when set), renames the
// data to `paths.dest` and fsyncs its directory. A whole-hash mismatch discards the partial.
//
// Thread safety: every method may be called from any thread. Several writers may share one
// PartialBlob (the design for concurrent transfers of one blob in a process: they share the
// object through BlobStore::OpenPartial, and a chunk received twice is written once). Two
// PartialBlob objects must never be opened on the same files at once; BlobStore ensures that.
//
// Errors: kDataLoss for a chunk whose size or hash does not match the manifest, and for a blob
// whose whole hash does not; kOutOfRange for a chunk index past the end; kFailedPrecondition for
// Publish before every chunk is held, or for use after the partial was discarded;
// kResourceExhausted when the disk is full; kInternal for other I/O errors (naming the file).
//
// Space: when given a PartialLedger (BlobStore gives its own), the partial tells it its declared
// size and held bytes when opened and after each write, and forgets itself once its files are
// gone (published or discarded); the ledger must outlive the partial.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "blob/manifest.h"
#include "blob/partial_ledger.h"

namespace idlepool::blob {

class PartialBlob {
 public:
  struct Paths {
    std::string data;            // sparse file receiving the chunks
    std::string manifest;        // the persisted manifest of the partial
    std::string dest;            // where the verified blob is published
    std::string dest_manifest;   // where its manifest is kept once published; empty: not kept
  };

  // Opens (resuming when `paths.manifest` holds the same manifest, starting afresh when it holds
  // another or none) a partial of the blob `manifest` describes. Precondition: Validate(manifest).
  // Re-verification reads every non-hole chunk of an existing data file.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<PartialBlob>> Open(
      Paths paths, Manifest manifest, PartialLedger* ledger = nullptr);
  ~PartialBlob();
  PartialBlob(const PartialBlob&) = delete;
  PartialBlob& operator=(const PartialBlob&) = delete;

  const Manifest& manifest() const { return manifest_; }
  const Paths& paths() const { return paths_; }

  // Verifies chunk `index` against the manifest, then writes it. A chunk already held is not
  // written again (OK). After Publish: OK without writing.
  [[nodiscard]] absl::Status PutChunk(uint32_t index, std::string_view data);

  bool Has(uint32_t index) const;
  uint32_t held_count() const;
  uint64_t held_bytes() const;
  bool complete() const;
  bool published() const;
  // Neither published nor discarded: chunks may still be added.
  bool usable() const;
  // Bytes of the longest run of held chunks from the start (where an in-order upload resumes).
  uint64_t verified_prefix() const;
  // The first chunk not held at or after `from`; nullopt when there is none.
  std::optional<uint32_t> NextMissing(uint32_t from = 0) const;
  // Bit i of byte i / 8 (least significant first) is chunk i (HaveChunksReply.bitmap).
  std::string Bitmap() const;
  // The bytes of held chunk `index` (serving a peer while the transfer goes on). kNotFound when
  // it is not held; kOutOfRange past the end; kFailedPrecondition once published or discarded
  // (read the published blob instead).
  [[nodiscard]] absl::StatusOr<std::string> ReadChunk(uint32_t index) const;

  // Verifies the whole blob and publishes it (see above). Idempotent: OK once published.
  [[nodiscard]] absl::Status Publish();
  // Removes the partial's files; later PutChunk/Publish fail with kFailedPrecondition.
  void Discard();

 private:
  PartialBlob(Paths paths, Manifest manifest, PartialLedger* ledger);
  absl::Status Verify() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DiscardLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Paths paths_;
  const Manifest manifest_;
  PartialLedger* const ledger_;  // may be null
  mutable std::mutex mu_;
  int fd_ ABSL_GUARDED_BY(mu_) = -1;
  std::vector<bool> held_ ABSL_GUARDED_BY(mu_);
  uint32_t held_count_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t held_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  bool published_ ABSL_GUARDED_BY(mu_) = false;
  bool discarded_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace idlepool::blob
