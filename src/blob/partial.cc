#include "blob/partial.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "blob/file_util.h"

namespace idlepool::blob {
namespace fs = std::filesystem;
using internal::ErrnoStatus;

namespace {

// A manifest file is at most this big (64 GiB of 1 MiB chunks, 34 bytes of framing per hash).
constexpr uint64_t kMaxManifestFileBytes = 4 << 20;

bool SameManifestOnDisk(const std::string& path, const Manifest& m) {
  absl::StatusOr<std::string> bytes = internal::ReadSmallFile(path, kMaxManifestFileBytes);
  if (!bytes.ok()) return false;
  v1::BlobManifest p;
  if (!p.ParseFromString(*bytes)) return false;
  absl::StatusOr<Manifest> on_disk = FromProto(p);
  return on_disk.ok() && *on_disk == m;
}

}  // namespace

PartialBlob::PartialBlob(Paths paths, Manifest manifest, PartialLedger* ledger)
    : paths_(std::move(paths)), manifest_(std::move(manifest)), ledger_(ledger) {
  held_.assign(manifest_.chunk_count(), false);
}

PartialBlob::~PartialBlob() {
  std::lock_guard lock(mu_);
  if (fd_ >= 0) ::close(fd_);
}

absl::StatusOr<std::unique_ptr<PartialBlob>> PartialBlob::Open(Paths paths, Manifest manifest,
                                                               PartialLedger* ledger) {
  if (absl::Status st = Validate(manifest); !st.ok()) return st;
  std::unique_ptr<PartialBlob> p(new PartialBlob(std::move(paths), std::move(manifest), ledger));
  std::error_code ec;
  fs::create_directories(fs::path(p->paths_.data).parent_path(), ec);
  fs::create_directories(fs::path(p->paths_.manifest).parent_path(), ec);
  const bool resume = SameManifestOnDisk(p->paths_.manifest, p->manifest_);
  std::lock_guard lock(p->mu_);
  if (!resume) {
    // Another manifest (one of them lied, or a different blob reused the name) or none: the
    // data file's bytes cannot be trusted to be this blob's.
    ::unlink(p->paths_.data.c_str());
    if (absl::Status st = internal::WriteFileAtomic(p->paths_.manifest,
                                                    ToProto(p->manifest_).SerializeAsString());
        !st.ok()) {
      return st;
    }
  }
  p->fd_ = ::open(p->paths_.data.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (p->fd_ < 0) return ErrnoStatus(absl::StrCat("cannot open ", p->paths_.data), errno);
  if (::ftruncate(p->fd_, static_cast<off_t>(p->manifest_.size)) != 0) {
    return ErrnoStatus(absl::StrCat("cannot size ", p->paths_.data), errno);
  }
  if (resume) {
    if (absl::Status st = p->Verify(); !st.ok()) return st;
  }
  if (ledger != nullptr) ledger->Set(p->manifest_.sha256, p->manifest_.size, p->held_bytes_);
  return p;
}

absl::Status PartialBlob::Verify() {
  std::string buf;
  for (uint32_t i = 0; i < manifest_.chunk_count(); ++i) {
    const uint64_t off = manifest_.ChunkOffset(i);
    const uint32_t len = manifest_.ChunkSize(i);
    // Chunks never written are holes: skip them without reading.
    off_t data = ::lseek(fd_, static_cast<off_t>(off), SEEK_DATA);
    if (data < 0 || static_cast<uint64_t>(data) >= off + len) continue;
    buf.resize(len);
    absl::StatusOr<size_t> n = internal::PreadFull(fd_, buf.data(), len, off, paths_.data);
    if (!n.ok()) return n.status();
    if (*n != len) continue;
    Sha256 h;
    h.Update(buf.data(), len);
    if (h.RawDigest() == manifest_.chunk_sha256[i]) {
      held_[i] = true;
      ++held_count_;
      held_bytes_ += len;
    }
  }
  return absl::OkStatus();
}

absl::Status PartialBlob::PutChunk(uint32_t index, std::string_view data) {
  if (index >= manifest_.chunk_count()) {
    return absl::OutOfRangeError(absl::StrCat("blob ", manifest_.sha256, ": chunk ", index,
                                              " is past its last chunk (", manifest_.chunk_count(),
                                              " chunks)"));
  }
  const uint32_t want = manifest_.ChunkSize(index);
  if (data.size() != want) {
    return absl::DataLossError(absl::StrCat("blob ", manifest_.sha256, ": chunk ", index, " has ",
                                            data.size(), " bytes, expected ", want));
  }
  Sha256 h;
  h.Update(data.data(), data.size());
  if (h.RawDigest() != manifest_.chunk_sha256[index]) {
    return absl::DataLossError(absl::StrCat("blob ", manifest_.sha256, ": chunk ", index,
                                            " does not match its SHA-256 in the manifest"));
  }
  std::lock_guard lock(mu_);
  if (published_) return absl::OkStatus();
  if (discarded_) {
    return absl::FailedPreconditionError(
        absl::StrCat("blob ", manifest_.sha256, ": the partial was discarded"));
  }
  if (held_[index]) return absl::OkStatus();
  if (absl::Status st = internal::PwriteFull(fd_, data, manifest_.ChunkOffset(index), paths_.data);
      !st.ok()) {
    return st;
  }
  held_[index] = true;
  ++held_count_;
  held_bytes_ += want;
  if (ledger_ != nullptr) ledger_->Set(manifest_.sha256, manifest_.size, held_bytes_);
  return absl::OkStatus();
}

bool PartialBlob::Has(uint32_t index) const {
  std::lock_guard lock(mu_);
  return published_ || (index < held_.size() && held_[index]);
}

uint32_t PartialBlob::held_count() const {
  std::lock_guard lock(mu_);
  return published_ ? manifest_.chunk_count() : held_count_;
}

uint64_t PartialBlob::held_bytes() const {
  std::lock_guard lock(mu_);
  return published_ ? manifest_.size : held_bytes_;
}

bool PartialBlob::complete() const { return held_count() == manifest_.chunk_count(); }

bool PartialBlob::published() const {
  std::lock_guard lock(mu_);
  return published_;
}

bool PartialBlob::usable() const {
  std::lock_guard lock(mu_);
  return !published_ && !discarded_;
}

uint64_t PartialBlob::verified_prefix() const {
  std::optional<uint32_t> next = NextMissing(0);
  return next ? manifest_.ChunkOffset(*next) : manifest_.size;
}

std::optional<uint32_t> PartialBlob::NextMissing(uint32_t from) const {
  std::lock_guard lock(mu_);
  if (published_) return std::nullopt;
  for (uint32_t i = from; i < held_.size(); ++i) {
    if (!held_[i]) return i;
  }
  return std::nullopt;
}

std::string PartialBlob::Bitmap() const {
  std::lock_guard lock(mu_);
  std::string bits((held_.size() + 7) / 8, '\0');
  for (size_t i = 0; i < held_.size(); ++i) {
    if (published_ || held_[i]) bits[i / 8] = static_cast<char>(bits[i / 8] | (1 << (i % 8)));
  }
  return bits;
}

absl::StatusOr<std::string> PartialBlob::ReadChunk(uint32_t index) const {
  if (index >= manifest_.chunk_count()) {
    return absl::OutOfRangeError(absl::StrCat("blob ", manifest_.sha256, ": no chunk ", index));
  }
  std::lock_guard lock(mu_);
  if (published_ || discarded_ || fd_ < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("blob ", manifest_.sha256, ": the partial is no longer in use"));
  }
  if (!held_[index]) {
    return absl::NotFoundError(absl::StrCat("blob ", manifest_.sha256, ": chunk ", index,
                                            " is not held yet"));
  }
  const uint32_t len = manifest_.ChunkSize(index);
  std::string buf(len, '\0');
  absl::StatusOr<size_t> n =
      internal::PreadFull(fd_, buf.data(), len, manifest_.ChunkOffset(index), paths_.data);
  if (!n.ok()) return n.status();
  if (*n != len) return absl::DataLossError(absl::StrCat(paths_.data, " is short"));
  return buf;
}

absl::Status PartialBlob::Publish() {
  std::lock_guard lock(mu_);
  if (published_) return absl::OkStatus();
  if (discarded_) {
    return absl::FailedPreconditionError(
        absl::StrCat("blob ", manifest_.sha256, ": the partial was discarded"));
  }
  if (held_count_ != manifest_.chunk_count()) {
    return absl::FailedPreconditionError(absl::StrCat("blob ", manifest_.sha256, ": holds ",
                                                      held_count_, " of ", manifest_.chunk_count(),
                                                      " chunks"));
  }
  Sha256 whole;
  std::string buf(std::min<uint64_t>(kChunkBytes, std::max<uint64_t>(manifest_.size, 1)), '\0');
  for (uint64_t off = 0; off < manifest_.size;) {
    absl::StatusOr<size_t> n = internal::PreadFull(fd_, buf.data(), buf.size(), off, paths_.data);
    if (!n.ok()) return n.status();
    if (*n == 0) break;
    whole.Update(buf.data(), *n);
    off += *n;
  }
  const std::string got = whole.HexDigest();
  if (got != manifest_.sha256) {
    DiscardLocked();
    return absl::DataLossError(absl::StrCat("blob ", manifest_.sha256,
                                            ": its verified chunks hash to ", got,
                                            " (the manifest does not describe this blob)"));
  }
  if (::fsync(fd_) != 0) return ErrnoStatus(absl::StrCat("fsync ", paths_.data), errno);
  std::error_code ec;
  fs::create_directories(fs::path(paths_.dest).parent_path(), ec);
  if (!paths_.dest_manifest.empty()) {
    if (absl::Status st = internal::WriteFileAtomic(paths_.dest_manifest,
                                                    ToProto(manifest_).SerializeAsString());
        !st.ok()) {
      return st;
    }
  }
  if (::rename(paths_.data.c_str(), paths_.dest.c_str()) != 0) {
    return ErrnoStatus(absl::StrCat("cannot publish ", paths_.dest), errno);
  }
  internal::FsyncParentDir(paths_.dest);
  ::unlink(paths_.manifest.c_str());
  ::close(fd_);
  fd_ = -1;
  published_ = true;
  if (ledger_ != nullptr) ledger_->Forget(manifest_.sha256);
  return absl::OkStatus();
}

void PartialBlob::Discard() {
  std::lock_guard lock(mu_);
  if (!published_) DiscardLocked();
}

void PartialBlob::DiscardLocked() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  ::unlink(paths_.data.c_str());
  ::unlink(paths_.manifest.c_str());
  discarded_ = true;
  if (ledger_ != nullptr) ledger_->Forget(manifest_.sha256);
}

}  // namespace idlepool::blob
