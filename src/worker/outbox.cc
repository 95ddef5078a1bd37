#include "worker/outbox.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "platform/beneath.h"
#include "spdlog/spdlog.h"

namespace idlepool::worker {
namespace fs = std::filesystem;

namespace {

absl::Status ErrnoStatus(const std::string& what, int err) {
  std::string msg = absl::StrCat(what, ": ", std::strerror(err));
  if (err == ENOSPC || err == EDQUOT) return absl::ResourceExhaustedError(msg);
  if (err == ENOENT) return absl::NotFoundError(msg);
  return absl::InternalError(msg);
}

absl::Status FromErrorCode(const std::string& what, const std::error_code& ec) {
  return ErrnoStatus(what, ec.value());
}

void SyncDir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

// Writes `data` to `path`: temp file, then rename; with `sync`, fsync of the file before the
// rename and of its dir after it.
absl::Status WriteReport(const std::string& path, const std::string& data, bool sync) {
  const std::string temp = path + ".tmp";
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus(absl::StrCat("cannot create ", temp), errno);
  const char* p = data.data();
  size_t left = data.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      ::unlink(temp.c_str());
      return ErrnoStatus(absl::StrCat("cannot write ", temp), err);
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (sync && ::fsync(fd) != 0) {
    int err = errno;
    ::close(fd);
    ::unlink(temp.c_str());
    return ErrnoStatus(absl::StrCat("cannot sync ", temp), err);
  }
  ::close(fd);
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(temp.c_str());
    return ErrnoStatus(absl::StrCat("cannot rename ", temp), err);
  }
  if (sync) SyncDir(fs::path(path).parent_path().string());
  return absl::OkStatus();
}

// Whether losing `r` to a power cut would cost more work than syncing it (kSyncReportAfterMs).
bool WorthSyncing(const v1::AttemptReport& r) {
  return r.timing().stage_ms() + r.timing().run_ms() >= kSyncReportAfterMs;
}

// The attempt an outbox name is of: "ID" (an entry dir) or "ID.pb" (a bare report); 0 if none.
uint64_t AttemptOfName(absl::string_view name, bool* bare) {
  *bare = absl::ConsumeSuffix(&name, ".pb");
  uint64_t id = 0;
  return absl::SimpleAtoi(name, &id) ? id : 0;
}

// Moves output `rel` out of the task dir (`task_fd`) to `dst`: renamed from its parent dir,
// opened beneath the task dir, then checked to be the file that was hashed. Two patterns list
// the same file only once (the worker dedups), so a rename suffices.
absl::Status MoveOutput(int task_fd, const std::string& rel, const std::string& dst,
                        const HashedOutputs& hashed) {
  const auto it = hashed.find(rel);
  if (it == hashed.end()) return absl::InternalError(absl::StrCat("output '", rel, "' not hashed"));
  std::error_code ec;
  fs::create_directories(fs::path(dst).parent_path(), ec);
  if (ec) return FromErrorCode(absl::StrCat("cannot create dir for ", dst), ec);
  const size_t slash = rel.rfind('/');
  platform::UniqueFd parent;
  if (slash != std::string::npos) {
    absl::StatusOr<platform::UniqueFd> p =
        platform::OpenDirectoryBeneath(task_fd, std::string_view(rel).substr(0, slash));
    if (!p.ok()) {
      return absl::Status(p.status().code(),
                          absl::StrCat("output '", rel, "': ", p.status().message()));
    }
    parent = std::move(*p);
  }
  const std::string name = rel.substr(slash == std::string::npos ? 0 : slash + 1);
  if (::renameat(parent.valid() ? parent.get() : task_fd, name.c_str(), AT_FDCWD, dst.c_str()) !=
      0) {
    return ErrnoStatus(absl::StrCat("cannot move output ", rel), errno);
  }
  struct stat st;
  if (::lstat(dst.c_str(), &st) != 0) return ErrnoStatus(absl::StrCat("cannot stat ", dst), errno);
  if (!S_ISREG(st.st_mode) || st.st_nlink != 1 ||
      !(FileIdentity{st.st_dev, st.st_ino} == it->second)) {
    return absl::FailedPreconditionError(
        absl::StrCat("output '", rel, "' was replaced after it was hashed"));
  }
  return absl::OkStatus();
}

}  // namespace

Outbox::Outbox(std::string dir) : dir_(std::move(dir)) {}

std::string Outbox::EntryDir(uint64_t attempt) const {
  return absl::StrCat(dir_, "/", attempt);
}

std::string Outbox::PathOf(uint64_t attempt, const std::string& rel) const {
  return absl::StrCat(EntryDir(attempt), "/files/", rel);
}

std::string Outbox::BarePath(uint64_t attempt) const {
  return absl::StrCat(dir_, "/", attempt, ".pb");
}

absl::StatusOr<std::vector<v1::AttemptReport>> Outbox::Open() {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return FromErrorCode(absl::StrCat("cannot create ", dir_), ec);
  std::map<uint64_t, std::string> reports;  // attempt -> its report's path
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    bool bare = false;
    const uint64_t id = AttemptOfName(it->path().filename().string(), &bare);
    if (id == 0 || reports.contains(id)) {
      fs::remove_all(it->path(), ec);  // not ours (a stray temp, a duplicate): garbage
      ec.clear();
      continue;
    }
    reports[id] = bare ? BarePath(id) : EntryDir(id) + "/report.pb";
  }
  std::vector<v1::AttemptReport> out;
  for (const auto& [id, report_path] : reports) {
    std::ifstream in(report_path, std::ios::binary);
    v1::AttemptReport r;
    if (!in || !r.ParseFromIstream(&in) || r.attempt() != id) {
      if (in) spdlog::warn("outbox: {} is unreadable; dropping the entry", report_path);
      Remove(id);  // incomplete: the worker died while filing it (or a power cut tore it)
      continue;
    }
    out.push_back(std::move(r));
  }
  return out;
}

absl::Status Outbox::File(const v1::AttemptReport& report, const std::string& task_dir,
                          const HashedOutputs& hashed) {
  std::string data;
  if (!report.SerializeToString(&data)) return absl::InternalError("cannot serialize report");
  const bool sync = WorthSyncing(report);
  if (report.outputs_size() == 0) {
    absl::Status st = WriteReport(BarePath(report.attempt()), data, sync);
    if (!st.ok()) Remove(report.attempt());
    return st;
  }
  const std::string entry = EntryDir(report.attempt());
  std::error_code ec;
  fs::remove_all(entry, ec);
  fs::create_directories(entry + "/files", ec);
  if (ec) return FromErrorCode(absl::StrCat("cannot create ", entry), ec);
  absl::StatusOr<platform::UniqueFd> task = platform::OpenDirectory(task_dir);
  absl::Status st = task.status();
  for (int i = 0; st.ok() && i < report.outputs_size(); ++i) {
    const std::string& rel = report.outputs(i).path();
    st = MoveOutput(task->get(), rel, PathOf(report.attempt(), rel), hashed);
  }
  if (st.ok()) st = WriteReport(entry + "/report.pb", data, sync);
  if (!st.ok()) Remove(report.attempt());
  return st;
}

void Outbox::Remove(uint64_t attempt) {
  if (::unlink(BarePath(attempt).c_str()) == 0) return;
  std::error_code ec;
  fs::remove_all(EntryDir(attempt), ec);
  if (ec) spdlog::warn("outbox: cannot remove {}: {}", EntryDir(attempt), ec.message());
}

std::optional<uint64_t> FreeDiskBytes(const std::string& path) {
  struct statvfs st;
  if (::statvfs(path.c_str(), &st) != 0) return std::nullopt;
  return static_cast<uint64_t>(st.f_bavail) * static_cast<uint64_t>(st.f_frsize);
}

std::optional<uint64_t> FreeDiskInodes(const std::string& path) {
  struct statvfs st;
  if (::statvfs(path.c_str(), &st) != 0 || st.f_files == 0) return std::nullopt;
  return static_cast<uint64_t>(st.f_favail);
}

}  // namespace idlepool::worker
