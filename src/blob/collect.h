// Which blobs a collection removes (the mark rule of `idlepool gc` and `idlepool delete`), and
// the blob store's listing it works on. Pure: the listing, the references and `now` come in,
// the blobs to remove go out.
//
// The rule (docs/design.md, "Collecting blobs"): a complete blob is removed when nothing
// references it (no job's inputs or task inputs, no output, no checkpoint: Store::
// ReferencedBlobs) AND it was last touched (published, or reported present by HasBlobs: the
// file's modification time) more than `grace` ago. The grace covers the blobs that are about to
// be referenced: clients upload a job's inputs before SubmitJob, workers their outputs and
// checkpoints before their report. A blob that a deleted job released may go before its grace
// ends when it was last touched no later than that job finished: nobody asked for it since. Partial
// uploads are never in the listing (they are the sweeper's: space.h).
//
// Thread safety: value types and functions without shared state.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace idlepool::blob {

// The default grace: an hour outlasts a client's uploads before its SubmitJob (it asks HasBlobs
// again right before submitting, which touches them) and a worker's report after its uploads,
// a coordinator restart included. Set by `idlepool coordinator --blob-grace`.
inline constexpr std::chrono::milliseconds kDefaultBlobGrace = std::chrono::hours(1);

// A complete blob on disk.
struct BlobFile {
  std::string sha256;
  uint64_t size = 0;          // bytes (its manifest's bytes not counted)
  int64_t last_touch_ms = 0;  // wall clock, Unix ms: the file's modification time
  bool operator==(const BlobFile&) const = default;
};

struct MarkInput {
  int64_t now_ms = 0;  // wall clock, Unix ms
  std::chrono::milliseconds grace = kDefaultBlobGrace;
  // Blobs released by jobs deleted just now, each with the latest finish time (wall clock,
  // Unix ms) of those jobs: it may go within the grace when last touched before that.
  std::map<std::string, int64_t> released;
};

// The blobs of `on_disk` to remove, in the order given. A touch in the future (a clock step)
// is recent.
std::vector<BlobFile> Unreferenced(const std::vector<BlobFile>& on_disk,
                                   const std::set<std::string>& referenced, const MarkInput& in);

}  // namespace idlepool::blob
