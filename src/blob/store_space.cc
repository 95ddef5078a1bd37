// BlobStore's space keeping (store.h, "Space"): admission of uploads against the reserve and the
// partials' promises, the check before each uploaded chunk, and the removal of abandoned
// partials.
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "absl/strings/str_cat.h"
#include "blob/file_util.h"
#include "blob/store.h"

namespace idlepool::blob {

namespace internal {

int64_t LastWriteMs(const std::string& a, const std::string& b) {
  int64_t newest = 0;
  for (const std::string* path : {&a, &b}) {
    struct stat st;
    if (::stat(path->c_str(), &st) != 0) continue;
    newest = std::max<int64_t>(
        newest, static_cast<int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000);
  }
  return newest;
}

}  // namespace internal

namespace {

absl::StatusOr<DiskReading> ReadDisk(const std::string& dir) {
  struct statvfs vfs;
  if (::statvfs(dir.c_str(), &vfs) != 0) {
    return internal::ErrnoStatus(absl::StrCat("cannot read the free space of ", dir), errno);
  }
  DiskReading d;
  d.total_bytes = uint64_t{vfs.f_blocks} * vfs.f_frsize;
  d.free_bytes = uint64_t{vfs.f_bavail} * vfs.f_frsize;
  d.total_inodes = vfs.f_files;
  d.free_inodes = vfs.f_favail;
  return d;
}

uint64_t AllocatedBytes(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? uint64_t(st.st_blocks) * 512 : 0;
}

}  // namespace

absl::Status BlobStore::CheckRoom(uint64_t bytes, const std::string& what,
                                  uint64_t reserve_multiple) const {
  absl::StatusOr<DiskReading> disk = ReadDisk(root_);
  if (!disk.ok()) return disk.status();
  RoomRequest req;
  req.what = what;
  req.bytes = bytes;
  req.promised_bytes = ledger_.Promised();
  req.partials = ledger_.size();
  req.reserve_multiple = reserve_multiple;
  return blob::CheckRoom(root_, *disk, req);
}

absl::StatusOr<std::shared_ptr<PartialBlob>> BlobStore::OpenUpload(const Manifest& m) {
  absl::StatusOr<DiskReading> disk = ReadDisk(root_);
  if (!disk.ok()) return disk.status();
  if (absl::Status st =
          ledger_.Admit(root_, *disk, absl::StrCat("upload of blob ", m.sha256), m.sha256, m.size);
      !st.ok()) {
    return st;
  }
  return OpenPartial(m);
}

absl::Status BlobStore::PutUploadChunk(PartialBlob& partial, uint32_t index,
                                       std::string_view data) {
  if (!partial.Has(index)) {
    absl::StatusOr<DiskReading> disk = ReadDisk(root_);
    if (!disk.ok()) return disk.status();
    if (absl::Status st = CheckWrite(
            root_, *disk, absl::StrCat("upload of blob ", partial.manifest().sha256), data.size());
        !st.ok()) {
      return st;
    }
  }
  return partial.PutChunk(index, data);
}

BlobStore::Removed BlobStore::RemoveAbandonedPartials(int64_t now_unix_ms) {
  std::vector<PartialState> states;
  for (const std::string& sha : ledger_.Partials()) {
    const PartialBlob::Paths paths = PartialPaths(sha);
    states.push_back(PartialState{sha, internal::LastWriteMs(paths.data, paths.manifest)});
  }
  Removed out;
  for (const std::string& sha : AbandonedPartials(states, now_unix_ms, options_.partial_max_age)) {
    const PartialBlob::Paths paths = PartialPaths(sha);
    std::shared_ptr<Slot> slot = SlotFor(sha);
    std::lock_guard lock(slot->mu);
    // Written to since it was looked at: in use after all.
    if (AbandonedPartials({{sha, internal::LastWriteMs(paths.data, paths.manifest)}}, now_unix_ms,
                          options_.partial_max_age)
            .empty()) {
      continue;
    }
    out.bytes += AllocatedBytes(paths.data) + AllocatedBytes(paths.manifest);
    ++out.partials;
    if (slot->partial && slot->partial->usable()) {
      slot->partial->Discard();  // closes its file too: the space is freed now
    } else {
      ::unlink(paths.data.c_str());
      ::unlink(paths.manifest.c_str());
    }
    slot->partial.reset();
    ledger_.Forget(sha);
  }
  return out;
}

}  // namespace idlepool::blob
