// Client side of the blob calls: resumable uploads (PutBlob from the coordinator's
// resume_offset) and resumable downloads (GetManifest, then GetBlob of the missing chunks into a
// PartialBlob that survives a cut or a process restart), each retried with backoff while the
// coordinator is unreachable.
//
// Thread safety: the functions may run concurrently (one stub serves many calls). Two downloads
// into one BlobStore share the blob's partial (see BlobStore::OpenPartial); two DownloadToFile
// calls must not target the same `dest` at once.
//
// Errors: kUnavailable after the retry policy gave up (transport failures, deadline); kCancelled
// when `cancelled` said so; kDataLoss when received bytes, or the coordinator's verdict on sent
// bytes, do not match their hashes; kFailedPrecondition when a local file changed since it was
// hashed or is not a regular file; kNotFound for a blob the coordinator does not have; the
// coordinator's other codes as it gave them.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "blob/blob.h"
#include "blob/manifest.h"
#include "blob/store.h"
#include "idlepool.grpc.pb.h"

namespace idlepool::blob {

// How kUnavailable failures are retried: the next try resumes where the last one stopped.
struct RetryPolicy {
  int max_tries = 8;  // 0: until cancelled
  std::chrono::milliseconds initial_backoff{200};
  std::chrono::milliseconds max_backoff{5000};  // the backoff doubles up to this
  // Waits between tries; may return early (the worker's returns when it stops). Default:
  // platform::SleepFor.
  std::function<void(std::chrono::milliseconds)> wait;
};

struct TransferOptions {
  // Asked before each try and after every chunk; true stops the transfer with kCancelled (an
  // upload half-closes its call, so the coordinator keeps every chunk it was sent).
  std::function<bool()> cancelled;
  RetryPolicy retry;
  // Called on the transfer's thread with the blob bytes of each chunk sent or received (a
  // progress meter); a retried chunk counts again. Empty: nothing.
  std::function<void(uint64_t bytes)> moved;
  bool follow_symlinks = true;  // uploads: false refuses a symlink (see HashFile)
  // Uploads: read this open regular file (the caller's, left open; pread, so its offset does not
  // matter) instead of opening `path`, which then only names it in messages. -1: open `path`.
  int source_fd = -1;
};

struct TransferStats {
  uint64_t bytes_sent = 0;      // blob bytes written to PutBlob calls
  uint64_t bytes_received = 0;  // blob bytes read from GetBlob calls
  uint32_t calls = 0;           // PutBlob / GetBlob calls made
  bool already_present = false; // the other side had the whole blob: nothing moved
};

// Runs `once` until it returns anything but kUnavailable, `policy` gives up, or `cancelled`
// (may be empty) says so (kCancelled).
[[nodiscard]] absl::Status RetryUnavailable(const RetryPolicy& policy,
                                            const std::function<bool()>& cancelled,
                                            const std::function<absl::Status()>& once);

// Uploads the regular file at `path`, whose hash and size the caller computed (`digest`; an
// empty sha256 means "not computed"): nothing when the coordinator has the blob, else from its
// resume_offset. Reads the file once more to build its manifest.
[[nodiscard]] absl::StatusOr<TransferStats> UploadResumable(v1::Blobs::Stub* stub,
                                                            const std::string& token,
                                                            const std::string& path,
                                                            const FileDigest& digest,
                                                            const TransferOptions& options = {});

// Downloads blob `sha256` of `size` bytes into `dest`, through DEST.partial and
// DEST.partial.manifest (kept on failure: a later call, in this process or another, resumes).
[[nodiscard]] absl::StatusOr<TransferStats> DownloadToFile(v1::Blobs::Stub* stub,
                                                           const std::string& token,
                                                           const std::string& sha256, uint64_t size,
                                                           const std::string& dest,
                                                           const TransferOptions& options = {});

// Downloads blob `sha256` of `size` bytes into `store` (nothing when it has it already).
[[nodiscard]] absl::StatusOr<TransferStats> DownloadToStore(v1::Blobs::Stub* stub,
                                                            const std::string& token,
                                                            const std::string& sha256,
                                                            uint64_t size, BlobStore& store,
                                                            const TransferOptions& options = {});

// The coordinator's manifest of a complete blob (GetManifest), validated and checked to be
// `sha256`'s. One call, no retry; a 30 s deadline.
[[nodiscard]] absl::StatusOr<Manifest> FetchManifest(v1::Blobs::Stub* stub,
                                                     const std::string& token,
                                                     const std::string& sha256);

}  // namespace idlepool::blob
