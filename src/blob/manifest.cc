#include "blob/manifest.h"

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "blob/file_util.h"

namespace idlepool::blob {

uint32_t Manifest::ChunkSize(uint32_t i) const {
  const uint64_t start = ChunkOffset(i);
  return static_cast<uint32_t>(std::min<uint64_t>(chunk_bytes, size - start));
}

uint64_t ChunkCountFor(uint64_t size, uint32_t chunk_bytes) {
  return chunk_bytes == 0 ? 0 : (size + chunk_bytes - 1) / chunk_bytes;
}

absl::Status Validate(const Manifest& m, uint64_t max_size) {
  if (!IsSha256Hex(m.sha256)) {
    return absl::InvalidArgumentError(
        absl::StrCat("manifest sha256 is not a lowercase hex SHA-256: '", m.sha256.substr(0, 80),
                     "'"));
  }
  if (m.size > max_size) {
    return absl::OutOfRangeError(absl::StrCat("blob ", m.sha256, ": manifest size ", m.size,
                                              " bytes exceeds the limit of ", max_size));
  }
  if (m.chunk_bytes != kChunkBytes) {
    return absl::InvalidArgumentError(absl::StrCat("blob ", m.sha256, ": manifest chunk_bytes ",
                                                   m.chunk_bytes, " is not ", kChunkBytes));
  }
  const uint64_t want = ChunkCountFor(m.size, m.chunk_bytes);
  if (m.chunk_sha256.size() != want) {
    return absl::InvalidArgumentError(absl::StrCat("blob ", m.sha256, ": manifest lists ",
                                                   m.chunk_sha256.size(), " chunk_sha256 for ",
                                                   m.size, " bytes (expected ", want, ")"));
  }
  for (size_t i = 0; i < m.chunk_sha256.size(); ++i) {
    if (m.chunk_sha256[i].size() != kHashBytes) {
      return absl::InvalidArgumentError(absl::StrCat("blob ", m.sha256, ": manifest chunk_sha256[",
                                                     i, "] has ", m.chunk_sha256[i].size(),
                                                     " bytes, not ", kHashBytes));
    }
  }
  return absl::OkStatus();
}

v1::BlobManifest ToProto(const Manifest& m) {
  v1::BlobManifest p;
  p.set_sha256(m.sha256);
  p.set_size(m.size);
  p.set_chunk_bytes(m.chunk_bytes);
  for (const auto& h : m.chunk_sha256) p.add_chunk_sha256(h);
  return p;
}

absl::StatusOr<Manifest> FromProto(const v1::BlobManifest& p, uint64_t max_size) {
  Manifest m;
  m.sha256 = p.sha256();
  m.size = p.size();
  m.chunk_bytes = p.chunk_bytes();
  // Check the count before copying: a hostile manifest may list millions of hashes.
  if (static_cast<uint64_t>(p.chunk_sha256_size()) != ChunkCountFor(m.size, m.chunk_bytes)) {
    m.chunk_sha256.resize(std::min<size_t>(p.chunk_sha256_size(), 1));
  } else {
    m.chunk_sha256.assign(p.chunk_sha256().begin(), p.chunk_sha256().end());
  }
  if (absl::Status st = Validate(m, max_size); !st.ok()) {
    if (m.chunk_sha256.size() != static_cast<size_t>(p.chunk_sha256_size())) {
      return absl::InvalidArgumentError(
          absl::StrCat("blob ", m.sha256.substr(0, 80), ": manifest lists ", p.chunk_sha256_size(),
                       " chunk_sha256 for ", m.size, " bytes in chunks of ", m.chunk_bytes));
    }
    return st;
  }
  return m;
}

absl::StatusOr<Manifest> ManifestOfFile(const std::string& path, bool follow_symlinks) {
  absl::StatusOr<int> opened = internal::OpenRegularFile(path, follow_symlinks);
  if (!opened.ok()) return opened.status();
  absl::StatusOr<Manifest> m = ManifestOfFd(*opened, path);
  ::close(*opened);
  return m;
}

absl::StatusOr<Manifest> ManifestOfFd(int fd, const std::string& name) {
  Manifest m;
  Sha256 whole;
  std::string buf(kChunkBytes, '\0');
  while (true) {
    absl::StatusOr<size_t> n = internal::PreadFull(fd, buf.data(), buf.size(), m.size, name);
    if (!n.ok()) return n.status();
    if (*n == 0) break;
    whole.Update(buf.data(), *n);
    Sha256 chunk;
    chunk.Update(buf.data(), *n);
    m.chunk_sha256.push_back(chunk.RawDigest());
    m.size += *n;
    if (m.size > kMaxBlobBytes) {
      return absl::OutOfRangeError(
          absl::StrCat(name, " is larger than the blob limit of ", kMaxBlobBytes, " bytes"));
    }
    if (*n < buf.size()) break;
  }
  m.sha256 = whole.HexDigest();
  return m;
}

}  // namespace idlepool::blob
