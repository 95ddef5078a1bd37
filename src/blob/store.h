// A directory of verified blobs plus the partial transfers into it, and the server side of the
// Blobs service's blob calls (PutBlob, GetBlob, HasBlobs, GetManifest) so that RPC handlers only
// adapt streams.
//
// Layout under ROOT:
//   ab/<sha256>            a complete, verified blob (nothing else ever appears under a hash)
//   ab/<sha256>.manifest   its manifest (v1::BlobManifest); computed lazily when missing
//   partial/<sha256>.data  a partial transfer (sparse) and partial/<sha256>.manifest
//   tmp/                   scratch for atomic writes; emptied by Init
// Disk garbage is bounded: Init removes partials untouched for `partial_max_age` (default 24 h;
// a client resuming later starts over) and partial data files without a manifest;
// RemoveAbandonedPartials does the same while the store runs (the coordinator calls it
// periodically with kPartialIdleLimit, space.h).
//
// Space (space.h): every partial is in a PartialLedger with what it still may write. An upload
// is admitted only when its declared size fits above the reserve once every partial's promise is
// counted, and stops before any chunk would eat into the reserve; CheckRoom gives other writers
// of the same disk (job submissions) the same check.
//
// Thread safety: every method may be called from any thread. One PartialBlob object exists per
// blob at a time in a process (OpenPartial hands out the same shared object to concurrent
// transfers of one blob, so they share its chunks and never write its files through two
// objects). Two processes must not share a ROOT (callers hold a lock on the dir above).
//
// Errors: kInvalidArgument for a malformed hash, manifest or offset (naming the field);
// kOutOfRange for a blob larger than the limit or a range past its end; kDataLoss for bytes that
// do not match their manifest or hash; kNotFound for a missing blob; kFailedPrecondition for an
// upload that ended before the blob was complete (it can be resumed) or a conflicting concurrent
// upload; kResourceExhausted when the disk is (or would be) full.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "blob/collect.h"
#include "blob/manifest.h"
#include "blob/partial.h"
#include "blob/partial_ledger.h"
#include "blob/space.h"
#include "idlepool.pb.h"

namespace idlepool::blob {

struct StoreOptions {
  std::chrono::milliseconds partial_max_age = std::chrono::hours(24);
  uint64_t max_blob_bytes = kMaxBlobBytes;
};

class BlobStore {
 public:
  explicit BlobStore(std::string root, StoreOptions options = {});

  // Creates the layout; removes scratch files and partials older than partial_max_age as of
  // `now_unix_ms` (wall clock, compared with file modification times).
  [[nodiscard]] absl::Status Init(int64_t now_unix_ms);

  const std::string& root() const { return root_; }
  bool Has(const std::string& sha256) const;
  std::string PathOf(const std::string& sha256) const;
  // Size of a complete blob (kNotFound when absent).
  [[nodiscard]] absl::StatusOr<uint64_t> SizeOf(const std::string& sha256) const;

  // The manifest of a complete blob, computed (whole hash checked) and stored when missing.
  // kNotFound when the blob is absent; kDataLoss when its bytes no longer match their hash.
  [[nodiscard]] absl::StatusOr<Manifest> GetManifest(const std::string& sha256);

  // The partial transfer of `manifest`'s blob: the one in use in this process if its manifest is
  // the same, else opened from disk (resumed) or created. kFailedPrecondition when a transfer
  // with a different manifest is in use. Precondition: !Has(manifest.sha256) (else the partial
  // is useless, but harmless).
  [[nodiscard]] absl::StatusOr<std::shared_ptr<PartialBlob>> OpenPartial(const Manifest& manifest);
  // Verified bytes held from the start of an incomplete transfer of `sha256` (a multiple of the
  // chunk size); 0 when there is none. May re-verify a partial left by an earlier process.
  uint64_t ResumeOffset(const std::string& sha256);
  // --- Serving chunks to peers (never opens a partial, never pins). ---
  // Chunk `index` of a complete blob, else a held chunk of the partial transfer of `sha256` in use
  // in this process. kInvalidArgument for a malformed hash; kNotFound when neither holds it (an
  // evicted blob, a chunk not received yet); kOutOfRange past the blob's last chunk.
  [[nodiscard]] absl::StatusOr<std::string> ReadChunk(const std::string& sha256, uint32_t index);
  // Which chunks of `sha256` this store holds: all (complete) or those of the partial in use.
  struct Holdings {
    bool complete = false;
    std::string bitmap;  // bit i of byte i / 8, least significant first (HaveChunksReply)
  };
  [[nodiscard]] absl::StatusOr<Holdings> HoldingsOf(const std::string& sha256);

  // Deletes a complete blob and its manifest (OK when absent).
  [[nodiscard]] absl::Status Remove(const std::string& sha256);

  // --- Collection (collect.h; store_collect.cc). ---
  // Every complete blob with its size and last touch (manifests, partials and scratch left out).
  std::vector<BlobFile> List() const;
  // Restarts `sha256`'s grace (its file's modification time set to now); nothing when absent.
  // Query (HasBlobs) touches every blob it reports present: a client that skips an upload
  // because the blob is there keeps it for the grace, until its SubmitJob references it.
  void Touch(const std::string& sha256) const;

  // --- Space (space.h). ---
  // OK when `bytes` more fit on ROOT's disk above the reserve, every partial's promise counted;
  // kResourceExhausted naming ROOT and the numbers otherwise (and when the disk cannot be read).
  // `reserve_multiple`: RoomRequest's (kSubmitReserveMultiple for a job submission).
  [[nodiscard]] absl::Status CheckRoom(uint64_t bytes, const std::string& what,
                                       uint64_t reserve_multiple = 1) const;
  // Removes the partials whose files had no write for `partial_max_age` as of `now_unix_ms`
  // (a transfer still holding one fails its next chunk with kFailedPrecondition).
  struct Removed {
    size_t partials = 0;
    uint64_t bytes = 0;  // allocated bytes freed
  };
  Removed RemoveAbandonedPartials(int64_t now_unix_ms);
  // What the partials still may write, and how many there are.
  uint64_t promised_bytes() const { return ledger_.Promised(); }
  size_t partial_count() const { return ledger_.size(); }

  // --- Server side of the wire calls. `read` / `write` are the RPC stream's. ---
  // PutBlob: see BlobChunk in the proto. Verifies every chunk as it arrives; publishes only a
  // blob whose whole hash matches. An upload that ends early keeps its verified chunks.
  [[nodiscard]] absl::StatusOr<v1::PutBlobReply> ReceiveUpload(
      const std::function<bool(v1::BlobChunk*)>& read);
  // GetBlob: bytes [offset, offset + length) (length 0: to the end) in messages that end on chunk
  // boundaries, each with its offset. OK when `write` fails (the client left).
  [[nodiscard]] absl::Status ServeRange(const v1::GetBlobRequest& req,
                                        const std::function<bool(const v1::BlobChunk&)>& write);
  v1::HasBlobsReply Query(const v1::HasBlobsRequest& req);

 private:
  struct Slot {
    std::mutex mu;  // held while the slot's partial is opened
    // Kept open between transfers (a resume needs no re-verification); at most
    // kMaxIdlePartials idle ones are kept.
    std::shared_ptr<PartialBlob> partial ABSL_GUARDED_BY(mu);
  };
  PartialBlob::Paths PartialPaths(const std::string& sha256) const;
  // The partial of `sha256` in use in this process, if any (creates no slot).
  std::shared_ptr<PartialBlob> PartialInUse(const std::string& sha256);
  std::shared_ptr<Slot> SlotFor(const std::string& sha256);
  // Admits an upload of `m` (space.h), then opens its partial.
  absl::StatusOr<std::shared_ptr<PartialBlob>> OpenUpload(const Manifest& m);
  // The bytes of chunk `index` of an upload into `partial`, once room is checked.
  absl::Status PutUploadChunk(PartialBlob& partial, uint32_t index, std::string_view data);
  static constexpr size_t kMaxIdlePartials = 64;

  const std::string root_;
  const StoreOptions options_;
  PartialLedger ledger_;  // before slots_: their partials report to it
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<Slot>> slots_ ABSL_GUARDED_BY(mu_);
};

}  // namespace idlepool::blob
