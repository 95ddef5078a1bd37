#include "platform/beneath.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace idlepool::platform {
namespace {

constexpr size_t kMaxRelBytes = 4096;
constexpr int kFileFlags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
constexpr int kDirFlags = O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
constexpr uint64_t kResolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;

// Set once openat2 answered ENOSYS: the kernel has none, the walk does it all.
std::atomic<bool> g_no_openat2{false};

std::string Quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

absl::Status ErrnoError(std::string_view rel, int err) {
  if (err == ENOENT) return absl::NotFoundError(absl::StrCat(Quoted(rel), " does not exist"));
  const std::string msg = absl::StrCat(Quoted(rel), ": ", std::strerror(err));
  if (err == EMFILE || err == ENFILE) return absl::ResourceExhaustedError(msg);
  return absl::InternalError(msg);
}

absl::Status Refused(std::string_view rel, std::string_view why) {
  return absl::FailedPreconditionError(absl::StrCat(Quoted(rel), " ", std::string(why)));
}

// The components of `rel` (views into it).
absl::StatusOr<std::vector<std::string_view>> Components(std::string_view rel) {
  if (absl::Status st = CheckRelativePath(rel); !st.ok()) return st;
  return SplitPath(rel);
}

// The first `n` components of `rel`, as written.
std::string_view Prefix(std::string_view rel, const std::vector<std::string_view>& parts,
                        size_t n) {
  const std::string_view last = parts[n - 1];
  return rel.substr(0, static_cast<size_t>(last.data() - rel.data()) + last.size());
}

// openat2 beneath `dir_fd`, never following a symbolic link; -1 with errno (ENOSYS: none).
int Openat2(int dir_fd, std::string_view rel, int flags) {
  if (g_no_openat2.load(std::memory_order_relaxed)) {
    errno = ENOSYS;
    return -1;
  }
  struct open_how how {};
  how.flags = static_cast<uint64_t>(flags);
  how.resolve = kResolve;
  const std::string path(rel);
  const long fd = ::syscall(SYS_openat2, dir_fd, path.c_str(), &how, sizeof how);
  if (fd < 0 && errno == ENOSYS) g_no_openat2.store(true, std::memory_order_relaxed);
  return static_cast<int>(fd);
}

// Errors the walk would only repeat; anything else (ELOOP, ENOTDIR, EXDEV, EPERM from a seccomp
// filter, ...) is walked again, to name the component at fault.
bool Final(int err) { return err == ENOENT || err == EMFILE || err == ENFILE; }

// Why directory component `name` of `base` (the path `prefix`) did not open.
absl::Status WhyNotDirectory(int base, const std::string& name, std::string_view prefix, int err) {
  struct stat st;
  if ((err == ELOOP || err == ENOTDIR) &&
      ::fstatat(base, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode)) {
    return Refused(prefix, S_ISLNK(st.st_mode) ? "is a symbolic link" : "is not a directory");
  }
  return ErrnoError(prefix, err);
}

// Opens the first `n` components of `rel` one by one from `dir_fd`, each a real directory.
// Returns the last one's fd (invalid when n == 0: `dir_fd` itself).
absl::StatusOr<UniqueFd> WalkDirectories(int dir_fd, std::string_view rel,
                                         const std::vector<std::string_view>& parts, size_t n) {
  UniqueFd cur;
  for (size_t i = 0; i < n; ++i) {
    const int base = cur.valid() ? cur.get() : dir_fd;
    const std::string name(parts[i]);
    const int fd = ::openat(base, name.c_str(), kDirFlags);
    if (fd < 0) return WhyNotDirectory(base, name, Prefix(rel, parts, i + 1), errno);
    cur = UniqueFd(fd);
  }
  return cur;
}

absl::StatusOr<UniqueFd> WalkToFile(int dir_fd, std::string_view rel,
                                    const std::vector<std::string_view>& parts) {
  absl::StatusOr<UniqueFd> parent = WalkDirectories(dir_fd, rel, parts, parts.size() - 1);
  if (!parent.ok()) return parent.status();
  const int base = parent->valid() ? parent->get() : dir_fd;
  const std::string name(parts.back());
  const int fd = ::openat(base, name.c_str(), kFileFlags);
  if (fd >= 0) return UniqueFd(fd);
  const int err = errno;
  if (err == ELOOP) return Refused(rel, "is a symbolic link");  // O_NOFOLLOW at the end
  // A socket (ENXIO) or a device without a driver (ENODEV) does not open: say what it is.
  struct stat st;
  if (!Final(err) && ::fstatat(base, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
      !S_ISREG(st.st_mode)) {
    return Refused(rel, DescribeKind(st.st_mode));
  }
  return ErrnoError(rel, err);
}

EntryKind KindOfMode(mode_t mode) {
  if (S_ISREG(mode)) return EntryKind::kRegular;
  if (S_ISDIR(mode)) return EntryKind::kDirectory;
  if (S_ISLNK(mode)) return EntryKind::kSymlink;
  return EntryKind::kOther;
}

}  // namespace

std::vector<std::string_view> SplitPath(std::string_view path) {
  std::vector<std::string_view> parts;
  for (size_t start = 0;;) {
    const size_t slash = path.find('/', start);
    parts.push_back(path.substr(start, slash == std::string_view::npos ? slash : slash - start));
    if (slash == std::string_view::npos) return parts;
    start = slash + 1;
  }
}

absl::Status CheckRelativePath(std::string_view rel) {
  if (rel.empty()) return absl::InvalidArgumentError("'' is not a path (empty)");
  if (rel.size() > kMaxRelBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(Quoted(rel.substr(0, 64)), "... is longer than ", kMaxRelBytes, " bytes"));
  }
  if (rel.find('\0') != std::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat(Quoted(rel), " contains a NUL byte"));
  }
  if (rel.front() == '/') {
    return absl::InvalidArgumentError(absl::StrCat(Quoted(rel), " is absolute"));
  }
  for (std::string_view part : SplitPath(rel)) {
    if (part.empty() || part == "." || part == "..") {
      return absl::InvalidArgumentError(absl::StrCat(
          Quoted(rel), " is not a normalized relative path (an empty, '.' or '..' component)"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<UniqueFd> OpenDirectory(const std::string& path) {
  const int fd = ::open(path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoError(path, errno);
  return UniqueFd(fd);
}

absl::StatusOr<OpenedFile> OpenFileBeneath(int dir_fd, std::string_view rel, Resolver resolver) {
  absl::StatusOr<std::vector<std::string_view>> parts = Components(rel);
  if (!parts.ok()) return parts.status();
  UniqueFd fd;
  if (resolver == Resolver::kAuto) {
    const int got = Openat2(dir_fd, rel, kFileFlags);
    const int err = errno;
    if (got < 0 && Final(err)) return ErrnoError(rel, err);
    fd = UniqueFd(got);
  }
  if (!fd.valid()) {
    absl::StatusOr<UniqueFd> walked = WalkToFile(dir_fd, rel, *parts);
    if (!walked.ok()) return walked.status();
    fd = std::move(*walked);
  }
  OpenedFile out;
  if (::fstat(fd.get(), &out.st) != 0) return ErrnoError(rel, errno);
  if (!S_ISREG(out.st.st_mode)) return Refused(rel, DescribeKind(out.st.st_mode));
  if (out.st.st_nlink != 1) {
    return Refused(rel, absl::StrCat("has ", out.st.st_nlink, " hard links"));
  }
  out.fd = std::move(fd);
  return out;
}

absl::StatusOr<UniqueFd> OpenDirectoryBeneath(int dir_fd, std::string_view rel, Resolver resolver) {
  absl::StatusOr<std::vector<std::string_view>> parts = Components(rel);
  if (!parts.ok()) return parts.status();
  UniqueFd fd;
  if (resolver == Resolver::kAuto) {
    const int got = Openat2(dir_fd, rel, kDirFlags);
    const int err = errno;
    if (got < 0 && Final(err)) return ErrnoError(rel, err);
    fd = UniqueFd(got);
  }
  if (!fd.valid()) {
    absl::StatusOr<UniqueFd> walked = WalkDirectories(dir_fd, rel, *parts, parts->size());
    if (!walked.ok()) return walked.status();
    fd = std::move(*walked);
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return ErrnoError(rel, errno);
  if (!S_ISDIR(st.st_mode)) return Refused(rel, DescribeKind(st.st_mode));
  return fd;
}

absl::StatusOr<std::vector<DirEntry>> ListDirectory(int dir_fd) {
  const int fd = ::openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoError(".", errno);
  DIR* dir = ::fdopendir(fd);
  if (dir == nullptr) {
    const int err = errno;
    ::close(fd);
    return ErrnoError(".", err);
  }
  std::vector<DirEntry> out;
  errno = 0;
  for (struct dirent* e; (e = ::readdir(dir)) != nullptr; errno = 0) {
    const std::string_view name = e->d_name;
    if (name == "." || name == "..") continue;
    DirEntry entry{std::string(name), EntryKind::kOther};
    switch (e->d_type) {
      case DT_REG:
        entry.kind = EntryKind::kRegular;
        break;
      case DT_DIR:
        entry.kind = EntryKind::kDirectory;
        break;
      case DT_LNK:
        entry.kind = EntryKind::kSymlink;
        break;
      case DT_UNKNOWN: {
        absl::StatusOr<EntryKind> kind = KindOf(fd, entry.name);
        if (!kind.ok()) continue;  // gone meanwhile
        entry.kind = *kind;
        break;
      }
      default:
        break;
    }
    out.push_back(std::move(entry));
  }
  const int err = errno;
  ::closedir(dir);
  if (err != 0) return ErrnoError(".", err);
  std::sort(out.begin(), out.end(),
            [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
  return out;
}

absl::StatusOr<EntryKind> KindOf(int dir_fd, const std::string& name) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(Quoted(name), " is not one entry's name"));
  }
  struct stat st;
  if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    return ErrnoError(name, errno);
  }
  return KindOfMode(st.st_mode);
}

std::string_view DescribeKind(mode_t mode) {
  if (S_ISREG(mode)) return "is a regular file";
  if (S_ISLNK(mode)) return "is a symbolic link";
  if (S_ISDIR(mode)) return "is a directory";
  if (S_ISFIFO(mode)) return "is a FIFO";
  if (S_ISSOCK(mode)) return "is a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "is a device";
  return "is not a regular file";
}

}  // namespace idlepool::platform
