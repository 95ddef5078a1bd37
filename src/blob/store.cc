#include "blob/store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "blob/file_util.h"

namespace idlepool::blob {
namespace fs = std::filesystem;
using internal::ErrnoStatus;

namespace {

constexpr uint64_t kMaxManifestFileBytes = 4 << 20;

absl::StatusOr<Manifest> ReadManifestFile(const std::string& path) {
  absl::StatusOr<std::string> bytes = internal::ReadSmallFile(path, kMaxManifestFileBytes);
  if (!bytes.ok()) return bytes.status();
  v1::BlobManifest p;
  if (!p.ParseFromString(*bytes)) {
    return absl::DataLossError(absl::StrCat(path, ": not a BlobManifest"));
  }
  return FromProto(p);
}

}  // namespace

BlobStore::BlobStore(std::string root, StoreOptions options)
    : root_(std::move(root)), options_(options) {}

absl::Status BlobStore::Init(int64_t now_unix_ms) {
  std::error_code ec;
  fs::remove_all(fs::path(root_) / "tmp", ec);
  fs::create_directories(fs::path(root_) / "tmp", ec);
  if (!ec) fs::create_directories(fs::path(root_) / "partial", ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot create ", root_, ": ", ec.message()));
  const fs::path partial_dir = fs::path(root_) / "partial";
  std::set<std::string> shas;
  for (fs::directory_iterator it(partial_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const std::string sha = name.substr(0, name.find('.'));
    const bool known = IsSha256Hex(sha) && (name == sha + ".data" || name == sha + ".manifest");
    if (known) {
      shas.insert(sha);
    } else {
      ::unlink(it->path().c_str());
    }
  }
  std::vector<PartialState> states;
  for (const std::string& sha : shas) {
    const PartialBlob::Paths paths = PartialPaths(sha);
    struct stat ms;
    if (::stat(paths.manifest.c_str(), &ms) != 0) {
      ::unlink(paths.data.c_str());  // a data file without its manifest cannot be resumed
      continue;
    }
    states.push_back(PartialState{sha, internal::LastWriteMs(paths.data, paths.manifest)});
    struct stat ds;
    if (::stat(paths.data.c_str(), &ds) == 0) {
      // Its apparent size is the declared size; what it holds is what is allocated.
      const uint64_t size = static_cast<uint64_t>(ds.st_size);
      ledger_.Set(sha, size, std::min<uint64_t>(uint64_t(ds.st_blocks) * 512, size));
    }
  }
  for (const std::string& sha : AbandonedPartials(states, now_unix_ms, options_.partial_max_age)) {
    const PartialBlob::Paths paths = PartialPaths(sha);
    ::unlink(paths.data.c_str());
    ::unlink(paths.manifest.c_str());
    ledger_.Forget(sha);
  }
  return absl::OkStatus();
}

std::string BlobStore::PathOf(const std::string& sha256) const {
  return absl::StrCat(root_, "/", sha256.substr(0, 2), "/", sha256);
}

bool BlobStore::Has(const std::string& sha256) const {
  if (!IsSha256Hex(sha256)) return false;
  struct stat st;
  return ::stat(PathOf(sha256).c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

absl::StatusOr<uint64_t> BlobStore::SizeOf(const std::string& sha256) const {
  if (!IsSha256Hex(sha256)) {
    return absl::InvalidArgumentError(absl::StrCat("not a SHA-256 hex digest: '",
                                                   sha256.substr(0, 80), "'"));
  }
  struct stat st;
  if (::stat(PathOf(sha256).c_str(), &st) != 0) {
    return absl::NotFoundError(absl::StrCat("no blob ", sha256));
  }
  return static_cast<uint64_t>(st.st_size);
}

absl::StatusOr<Manifest> BlobStore::GetManifest(const std::string& sha256) {
  absl::StatusOr<uint64_t> size = SizeOf(sha256);
  if (!size.ok()) return size.status();
  const std::string path = PathOf(sha256) + ".manifest";
  absl::StatusOr<Manifest> stored = ReadManifestFile(path);
  if (stored.ok() && stored->sha256 == sha256 && stored->size == *size) return stored;
  absl::StatusOr<Manifest> m = ManifestOfFile(PathOf(sha256), /*follow_symlinks=*/false);
  if (!m.ok()) return m.status();
  if (m->sha256 != sha256) {
    return absl::DataLossError(absl::StrCat("blob ", sha256, " on disk hashes to ", m->sha256));
  }
  if (absl::Status st = internal::WriteFileAtomic(path, ToProto(*m).SerializeAsString());
      !st.ok()) {
    return st;
  }
  return m;
}

PartialBlob::Paths BlobStore::PartialPaths(const std::string& sha256) const {
  PartialBlob::Paths p;
  p.data = absl::StrCat(root_, "/partial/", sha256, ".data");
  p.manifest = absl::StrCat(root_, "/partial/", sha256, ".manifest");
  p.dest = PathOf(sha256);
  p.dest_manifest = PathOf(sha256) + ".manifest";
  return p;
}

std::shared_ptr<BlobStore::Slot> BlobStore::SlotFor(const std::string& sha256) {
  std::lock_guard lock(mu_);
  auto& slot = slots_[sha256];
  if (!slot) slot = std::make_shared<Slot>();
  std::shared_ptr<Slot> out = slot;
  if (slots_.size() > kMaxIdlePartials) {
    // Forget idle partials (no transfer holds them); their files stay and resume on demand.
    for (auto it = slots_.begin(); it != slots_.end();) {
      std::unique_lock slock(it->second->mu, std::try_to_lock);
      const bool idle = it->second != out && it->second.use_count() == 1 && slock.owns_lock() &&
                        (!it->second->partial || it->second->partial.use_count() == 1);
      if (slock.owns_lock()) slock.unlock();
      it = idle ? slots_.erase(it) : std::next(it);
    }
  }
  return out;
}

absl::StatusOr<std::shared_ptr<PartialBlob>> BlobStore::OpenPartial(const Manifest& manifest) {
  if (absl::Status st = Validate(manifest, options_.max_blob_bytes); !st.ok()) return st;
  std::shared_ptr<Slot> slot = SlotFor(manifest.sha256);
  std::lock_guard lock(slot->mu);
  std::shared_ptr<PartialBlob>& cur = slot->partial;
  const bool live = cur && cur->usable();
  if (live && cur->manifest() == manifest) return cur;
  if (live && cur.use_count() > 1) {
    return absl::FailedPreconditionError(absl::StrCat(
        "blob ", manifest.sha256,
        ": another transfer with a different manifest is in progress (one of them lies)"));
  }
  absl::StatusOr<std::unique_ptr<PartialBlob>> opened =
      PartialBlob::Open(PartialPaths(manifest.sha256), manifest, &ledger_);
  if (!opened.ok()) return opened.status();
  cur = std::move(*opened);
  return cur;
}

uint64_t BlobStore::ResumeOffset(const std::string& sha256) {
  if (!IsSha256Hex(sha256) || Has(sha256)) return 0;
  // A partial in use always has its manifest file; most queried blobs have neither.
  const PartialBlob::Paths paths = PartialPaths(sha256);
  struct stat st;
  if (::stat(paths.manifest.c_str(), &st) != 0) return 0;
  std::shared_ptr<Slot> slot = SlotFor(sha256);
  {
    std::lock_guard lock(slot->mu);
    if (slot->partial && slot->partial->usable()) return slot->partial->verified_prefix();
  }
  absl::StatusOr<Manifest> m = ReadManifestFile(paths.manifest);
  if (!m.ok() || m->sha256 != sha256) return 0;
  absl::StatusOr<std::shared_ptr<PartialBlob>> p = OpenPartial(*m);
  return p.ok() ? (*p)->verified_prefix() : 0;
}

absl::Status BlobStore::Remove(const std::string& sha256) {
  if (!IsSha256Hex(sha256)) {
    return absl::InvalidArgumentError(absl::StrCat("not a SHA-256 hex digest: '",
                                                   sha256.substr(0, 80), "'"));
  }
  const std::string path = PathOf(sha256);
  // The manifest first: cut between the two, a blob without its manifest is whole (the manifest
  // is computed again when asked for), never a manifest without its blob.
  ::unlink((path + ".manifest").c_str());
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return ErrnoStatus(absl::StrCat("cannot remove ", path), errno);
  }
  internal::FsyncParentDir(path);
  return absl::OkStatus();
}

absl::StatusOr<v1::PutBlobReply> BlobStore::ReceiveUpload(
    const std::function<bool(v1::BlobChunk*)>& read) {
  v1::BlobChunk msg;
  if (!read(&msg)) return absl::InvalidArgumentError("empty upload");
  Manifest m;
  m.sha256 = msg.sha256();
  m.size = msg.size();
  if (static_cast<uint64_t>(msg.chunk_sha256_size()) != ChunkCountFor(m.size)) {
    return absl::InvalidArgumentError(
        absl::StrCat("upload of blob ", m.sha256.substr(0, 80), ": first message lists ",
                     msg.chunk_sha256_size(), " chunk_sha256 for size ", m.size,
                     " (expected one per ", kChunkBytes, "-byte chunk)"));
  }
  m.chunk_sha256.assign(msg.chunk_sha256().begin(), msg.chunk_sha256().end());
  if (absl::Status st = Validate(m, options_.max_blob_bytes); !st.ok()) {
    return absl::Status(st.code(), absl::StrCat("upload: ", st.message()));
  }
  v1::PutBlobReply reply;
  reply.set_sha256(m.sha256);
  reply.set_size(m.size);
  if (Has(m.sha256)) return reply;  // already stored and verified: the rest is not read
  const uint64_t offset = msg.offset();
  if (offset % kChunkBytes != 0 || offset > m.size) {
    return absl::InvalidArgumentError(absl::StrCat("upload of blob ", m.sha256, ": offset ",
                                                   offset, " is not a chunk boundary within ",
                                                   m.size, " bytes"));
  }
  absl::StatusOr<std::shared_ptr<PartialBlob>> partial = OpenUpload(m);
  if (!partial.ok()) return partial.status();
  uint64_t index = offset / kChunkBytes;
  bool first = true;
  do {
    // Only the first message may come without data (an empty blob, or nothing left to send).
    if (first && msg.data().empty() && (m.size == 0 || index == m.chunk_sha256.size())) {
      first = false;
      continue;
    }
    first = false;
    if (index >= m.chunk_sha256.size()) {
      return absl::DataLossError(absl::StrCat("upload of blob ", m.sha256,
                                              ": more chunks than its ", m.chunk_sha256.size()));
    }
    if (absl::Status st = PutUploadChunk(**partial, static_cast<uint32_t>(index), msg.data());
        !st.ok()) {
      return st;
    }
    ++index;
  } while (read(&msg));
  if (!(*partial)->complete()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "upload of blob ", m.sha256, " ended with ", (*partial)->held_count(), " of ",
        m.chunk_sha256.size(), " chunks; resume at offset ", (*partial)->verified_prefix()));
  }
  if (absl::Status st = (*partial)->Publish(); !st.ok()) return st;
  return reply;
}

absl::Status BlobStore::ServeRange(const v1::GetBlobRequest& req,
                                   const std::function<bool(const v1::BlobChunk&)>& write) {
  const std::string& sha = req.sha256();
  if (!IsSha256Hex(sha)) {
    return absl::InvalidArgumentError(absl::StrCat("GetBlob: sha256 is not a lowercase hex SHA-256: '",
                                                   sha.substr(0, 80), "'"));
  }
  const std::string path = PathOf(sha);
  absl::StatusOr<int> fd = internal::OpenRegularFile(path, /*follow_symlinks=*/false);
  if (!fd.ok()) {
    if (fd.status().code() == absl::StatusCode::kNotFound) {
      return absl::NotFoundError(absl::StrCat("no blob ", sha));
    }
    return fd.status();
  }
  struct stat st;
  ::fstat(*fd, &st);
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  const uint64_t begin = req.offset();
  const uint64_t end = req.length() == 0 ? size : begin + req.length();
  if (begin > size || end > size || end < begin) {
    ::close(*fd);
    return absl::OutOfRangeError(absl::StrCat("GetBlob of ", sha, ": range [", begin, ", +",
                                              req.length(), ") is past its ", size, " bytes"));
  }
  std::string buf(kChunkBytes, '\0');
  v1::BlobChunk out;
  absl::Status result;
  for (uint64_t off = begin; off < end;) {
    const uint64_t piece = std::min<uint64_t>(end, (off / kChunkBytes + 1) * kChunkBytes) - off;
    absl::StatusOr<size_t> n = internal::PreadFull(*fd, buf.data(), piece, off, path);
    if (!n.ok()) {
      result = n.status();
      break;
    }
    if (*n != piece) {
      result = absl::DataLossError(absl::StrCat("blob ", sha, " shrank while it was read"));
      break;
    }
    out.set_offset(off);
    out.set_data(buf.data(), piece);
    if (!write(out)) break;
    off += piece;
  }
  ::close(*fd);
  return result;
}

v1::HasBlobsReply BlobStore::Query(const v1::HasBlobsRequest& req) {
  v1::HasBlobsReply reply;
  for (const auto& sha : req.sha256()) {
    const bool present = Has(sha);
    if (present) Touch(sha);  // its grace starts again (collect.h)
    reply.add_present(present);
    reply.add_resume_offset(present ? 0 : ResumeOffset(sha));
  }
  return reply;
}

}  // namespace idlepool::blob

namespace idlepool::blob {

std::shared_ptr<PartialBlob> BlobStore::PartialInUse(const std::string& sha256) {
  std::shared_ptr<Slot> slot;
  {
    std::lock_guard lock(mu_);
    auto it = slots_.find(sha256);
    if (it == slots_.end()) return nullptr;
    slot = it->second;
  }
  std::lock_guard lock(slot->mu);
  if (slot->partial && slot->partial->usable()) return slot->partial;
  return nullptr;
}

absl::StatusOr<std::string> BlobStore::ReadChunk(const std::string& sha256, uint32_t index) {
  if (!IsSha256Hex(sha256)) {
    return absl::InvalidArgumentError(absl::StrCat("not a SHA-256 hex digest: '",
                                                   sha256.substr(0, 80), "'"));
  }
  // Twice: a partial published between the two looks is then a complete blob.
  for (int pass = 0; pass < 2; ++pass) {
    const std::string path = PathOf(sha256);
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd >= 0) {
      struct stat st;
      if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        return absl::NotFoundError(absl::StrCat("no blob ", sha256));
      }
      const uint64_t size = static_cast<uint64_t>(st.st_size);
      if (uint64_t{index} >= ChunkCountFor(size)) {
        ::close(fd);
        return absl::OutOfRangeError(absl::StrCat("blob ", sha256, " has no chunk ", index));
      }
      const uint64_t off = uint64_t{index} * kChunkBytes;
      const size_t len = static_cast<size_t>(std::min<uint64_t>(kChunkBytes, size - off));
      std::string buf(len, '\0');
      absl::StatusOr<size_t> n = internal::PreadFull(fd, buf.data(), len, off, path);
      ::close(fd);
      if (!n.ok()) return n.status();
      if (*n != len) return absl::NotFoundError(absl::StrCat("blob ", sha256, " shrank"));
      return buf;
    }
    std::shared_ptr<PartialBlob> partial = PartialInUse(sha256);
    if (!partial) break;
    absl::StatusOr<std::string> got = partial->ReadChunk(index);
    if (got.ok() || got.status().code() != absl::StatusCode::kFailedPrecondition) return got;
  }
  return absl::NotFoundError(absl::StrCat("no blob ", sha256));
}

absl::StatusOr<BlobStore::Holdings> BlobStore::HoldingsOf(const std::string& sha256) {
  if (!IsSha256Hex(sha256)) {
    return absl::InvalidArgumentError(absl::StrCat("not a SHA-256 hex digest: '",
                                                   sha256.substr(0, 80), "'"));
  }
  Holdings h;
  if (absl::StatusOr<uint64_t> size = SizeOf(sha256); size.ok()) {
    const uint64_t chunks = ChunkCountFor(*size);
    h.complete = true;
    h.bitmap.assign((chunks + 7) / 8, '\xff');
    if (chunks % 8 != 0) h.bitmap.back() = static_cast<char>((1 << (chunks % 8)) - 1);
    return h;
  }
  std::shared_ptr<PartialBlob> partial = PartialInUse(sha256);
  if (!partial) return absl::NotFoundError(absl::StrCat("no blob ", sha256));
  h.bitmap = partial->Bitmap();
  h.complete = false;
  return h;
}

}  // namespace idlepool::blob
