// A blob's manifest: its SHA-256, its size, and the SHA-256 of each of its chunks, so that every
// chunk can be verified on its own as it arrives (resumable and peer-to-peer transfers).
//
// Chunk i covers bytes [i * chunk_bytes, min(size, (i + 1) * chunk_bytes)); an empty blob has no
// chunks. chunk_bytes is always kChunkBytes (1 MiB): the wire contract (PutBlob's first message
// carries no chunk size) fixes it.
//
// Thread safety: Manifest is a value type; the functions share no state.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "blob/blob.h"
#include "idlepool.pb.h"

namespace idlepool::blob {

// The largest blob accepted (64 GiB): its manifest (65,536 chunk hashes, about 2.2 MiB) still
// fits one gRPC message under the default 4 MiB limit together with one chunk.
inline constexpr uint64_t kMaxBlobBytes = uint64_t{64} << 30;
inline constexpr size_t kHashBytes = 32;

struct Manifest {
  std::string sha256;  // lowercase hex of the whole blob
  uint64_t size = 0;   // bytes
  uint32_t chunk_bytes = kChunkBytes;
  std::vector<std::string> chunk_sha256;  // kHashBytes raw bytes each

  uint32_t chunk_count() const { return static_cast<uint32_t>(chunk_sha256.size()); }
  uint64_t ChunkOffset(uint32_t i) const { return uint64_t{i} * chunk_bytes; }
  // Bytes of chunk i (the last one may be short). Precondition: i < chunk_count().
  uint32_t ChunkSize(uint32_t i) const;
  friend bool operator==(const Manifest&, const Manifest&) = default;
};

// ceil(size / chunk_bytes).
uint64_t ChunkCountFor(uint64_t size, uint32_t chunk_bytes = kChunkBytes);

// Checks a manifest from anywhere (the wire, a file): lowercase hex sha256, size at most
// `max_size`, chunk_bytes == kChunkBytes, chunk count ceil(size / chunk_bytes), each chunk hash 32
// bytes. kInvalidArgument naming the field; kOutOfRange when size exceeds `max_size`.
[[nodiscard]] absl::Status Validate(const Manifest& m, uint64_t max_size = kMaxBlobBytes);

v1::BlobManifest ToProto(const Manifest& m);
// Validated (see Validate).
[[nodiscard]] absl::StatusOr<Manifest> FromProto(const v1::BlobManifest& p,
                                                 uint64_t max_size = kMaxBlobBytes);

// Reads a regular file once, streamed (memory O(chunk)), computing the whole SHA-256 and every
// chunk's. Same refusals as HashFile (FIFOs, and symlinks unless follow_symlinks); kOutOfRange
// for a file larger than kMaxBlobBytes.
[[nodiscard]] absl::StatusOr<Manifest> ManifestOfFile(const std::string& path,
                                                      bool follow_symlinks = true);
// The same of a file the caller opened (pread from offset 0; `fd` stays open); `name` only
// names it in messages.
[[nodiscard]] absl::StatusOr<Manifest> ManifestOfFd(int fd, const std::string& name);

}  // namespace idlepool::blob
