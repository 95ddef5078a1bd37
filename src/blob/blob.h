// Content-addressed blobs: SHA-256 hashing, a directory of verified blobs, and streaming them
// over the Blobs service's PutBlob/GetBlob calls in 1 MiB chunks (a blob is never held whole in
// memory). Manifests: manifest.h; partial transfers: partial.h; the server side and store:
// store.h; resumable client transfers: transfer.h.
//
// Thread safety: BlobDir may be used from any number of threads; writers of the same blob race
// harmlessly (each writes its own temp file; the verified rename is atomic and idempotent).
// Errors: kInvalidArgument for a malformed hash, kDataLoss when received bytes do not match
// their hash or size, kNotFound for a missing blob, kUnavailable for transport failures (retry),
// kResourceExhausted when the disk is full.
#pragma once

#include <cstdint>
#include <memory>
#include <functional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "idlepool.grpc.pb.h"

namespace idlepool::blob {

inline constexpr size_t kChunkBytes = 1 << 20;

bool IsSha256Hex(const std::string& s);
// Lowercase hex of raw bytes.
std::string ToHex(std::string_view raw);

// `n` deterministic bytes that no compressor shrinks (SHA-256 in counter mode): link probe payload.
std::string PseudoRandomBytes(size_t n);

// Streaming SHA-256 (OpenSSL EVP).
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void Update(const void* data, size_t n);
  std::string HexDigest();  // finishes; call once
  std::string RawDigest();  // finishes; call once; 32 raw bytes
 private:
  void* ctx_;
};

struct FileDigest {
  std::string sha256;
  uint64_t size = 0;
};
// Reads only regular files: a FIFO, device or socket at `path` is refused (kFailedPrecondition)
// without blocking, and with follow_symlinks = false so is a symlink (a task may swap a file for
// a link to a file of the lent machine between a directory scan and the read).
[[nodiscard]] absl::StatusOr<FileDigest> HashFile(const std::string& path,
                                                  bool follow_symlinks = true);
// The same of a file the caller opened (read with pread from offset 0; `fd` stays open and its
// offset untouched); `name` only names it in messages.
[[nodiscard]] absl::StatusOr<FileDigest> HashFd(int fd, const std::string& name);

// A directory of blobs, each at DIR/ab/abcdef... (its hash). Only verified bytes ever appear
// under a hash name.
class BlobDir {
 public:
  explicit BlobDir(std::string root);
  const std::string& root() const { return root_; }
  [[nodiscard]] absl::Status Init();
  bool Has(const std::string& sha256) const;
  std::string PathOf(const std::string& sha256) const;

  // Receives one blob piece by piece; Commit() verifies size and hash, fsyncs and publishes it.
  class Writer {
   public:
    ~Writer();
    [[nodiscard]] absl::Status Append(const void* data, size_t n);
    [[nodiscard]] absl::Status Commit();
   private:
    friend class BlobDir;
    Writer() = default;
    std::string final_path_, temp_path_, sha256_;
    uint64_t expected_size_ = 0, written_ = 0;
    int fd_ = -1;
    Sha256 hash_;
  };
  [[nodiscard]] absl::StatusOr<std::unique_ptr<Writer>> NewWriter(const std::string& sha256,
                                                                  uint64_t size);

 private:
  std::string root_;
};

// Client side of the blob calls (see transfer.h for the options and figures): resumable, and
// retried with backoff on kUnavailable (RetryPolicy's defaults). `token` goes into the call
// metadata. Regular files only, as HashFile.
[[nodiscard]] absl::Status UploadFile(idlepool::v1::Blobs::Stub* stub, const std::string& token,
                                      const std::string& path, const FileDigest& digest,
                                      bool follow_symlinks = true);
// Downloads into `dest` (through DEST.partial, published once verified). `cancelled`, if set,
// is asked after every chunk; when it says true the download stops with kCancelled and a later
// call resumes it.
[[nodiscard]] absl::Status DownloadBlob(idlepool::v1::Blobs::Stub* stub, const std::string& token,
                                        const std::string& sha256, uint64_t size,
                                        const std::string& dest,
                                        const std::function<bool()>& cancelled = {});

// Copies `src` to `dst` (creating parent dirs): a reflink where the file system has them, else
// an in-kernel copy. Never a hard link: a task may modify its inputs, the cache must not change.
[[nodiscard]] absl::Status CloneOrCopy(const std::string& src, const std::string& dst);

}  // namespace idlepool::blob
