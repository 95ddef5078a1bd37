#include "sandbox/mounts.h"

#include <fcntl.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"

namespace idlepool::sandbox {
namespace {

// linux/mount.h (not included: it clashes with glibc's sys/mount.h in bookworm).
struct MountAttr {
  uint64_t attr_set;
  uint64_t attr_clr;
  uint64_t propagation;
  uint64_t userns_fd;
};
constexpr uint64_t kAttrRdonly = 0x1;
constexpr uint64_t kAttrNosuid = 0x2;
constexpr uint64_t kAttrNodev = 0x4;
constexpr unsigned kAtRecursive = 0x8000;
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif
// Where the host's root stays, inside the task's new root, until the init has mounted its /proc
// (a fresh proc may be mounted in a user namespace only while a full one is visible in it).
constexpr char kOldRoot[] = "/.oldroot";

absl::Status Errno(const std::string& what, const std::string& path) {
  return absl::InternalError(absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
}

absl::Status SetAttr(const std::string& path, uint64_t set, uint64_t clear, bool recursive) {
  MountAttr attr{set, clear, 0, 0};
  if (::syscall(SYS_mount_setattr, AT_FDCWD, path.c_str(), recursive ? kAtRecursive : 0, &attr,
                sizeof attr) != 0) {
    if (errno == ENOSYS) {
      return absl::FailedPreconditionError("the sandbox needs Linux 5.12 or later (mount_setattr)");
    }
    return Errno("cannot change the mount flags of", path);
  }
  return absl::OkStatus();
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

bool Under(const std::string& path, const std::string& dir) {
  return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
                         (dir == "/" || path[dir.size()] == '/'));
}

// mkdir -p (the parents land in a tmpfs of ours, or exist).
absl::Status MakeDirs(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot create ", path, ": ", ec.message()));
  return absl::OkStatus();
}

// An empty file or dir at `path` to bind a node of that kind onto.
absl::Status MakeMountPoint(const std::string& path, bool dir) {
  if (dir) return MakeDirs(path);
  if (absl::Status st = MakeDirs(std::filesystem::path(path).parent_path()); !st.ok()) return st;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0 && errno != EEXIST) return Errno("cannot create", path);
  if (fd >= 0) ::close(fd);
  return absl::OkStatus();
}

absl::StatusOr<Source> Open(const std::string& path, bool required) {
  Source s{path, ::open(path.c_str(), O_PATH | O_CLOEXEC), false};
  if (s.fd < 0) {
    if (!required && errno == ENOENT) return s;
    return Errno("cannot open", path);
  }
  struct stat st;
  if (::fstat(s.fd, &st) == 0) s.dir = S_ISDIR(st.st_mode);
  return s;
}

absl::Status Bind(const Source& s, bool writable) {
  if (s.fd < 0) return absl::OkStatus();
  if (absl::Status st = MakeMountPoint(s.target, s.dir); !st.ok()) return st;
  const std::string from = absl::StrCat(kOldRoot, "/proc/self/fd/", s.fd);
  if (::mount(from.c_str(), s.target.c_str(), nullptr, MS_BIND, nullptr) != 0) {
    return Errno("cannot bind", s.target);
  }
  // A bind inherits the read-only flag its source got above.
  return SetAttr(s.target, writable ? kAttrNosuid : kAttrRdonly | kAttrNosuid,
                 writable ? kAttrRdonly : 0, false);
}

absl::Status Tmpfs(const std::string& path, const char* mode, uint64_t size = 0) {
  std::string opts = absl::StrCat("mode=", mode);
  if (size > 0) absl::StrAppend(&opts, ",size=", size);
  if (::mount("tmpfs", path.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, opts.c_str()) != 0) {
    return Errno("cannot mount a tmpfs on", path);
  }
  return absl::OkStatus();
}

// /dev: a tmpfs with the listed nodes bound in, the usual links, and /dev/shm left to scratch.
absl::Status MakeDev(const std::vector<Source>& devices) {
  if (absl::Status st = MakeDirs("/dev"); !st.ok()) return st;
  if (::mount("tmpfs", "/dev", "tmpfs", MS_NOSUID, "mode=0755") != 0) {
    return Errno("cannot mount a tmpfs on", "/dev");
  }
  for (const Source& d : devices) {
    if (absl::Status st = Bind(d, /*writable=*/true); !st.ok()) return st;
  }
  const std::pair<const char*, const char*> links[] = {{"/proc/self/fd", "/dev/fd"},
                                                       {"/proc/self/fd/0", "/dev/stdin"},
                                                       {"/proc/self/fd/1", "/dev/stdout"},
                                                       {"/proc/self/fd/2", "/dev/stderr"}};
  for (const auto& [to, at] : links) {
    if (::symlink(to, at) != 0) return Errno("cannot create", at);
  }
  return MakeDirs("/dev/shm");
}

// The task's root: an empty tmpfs, made the root of this mount namespace with the host's root
// kept at kOldRoot (MountProc detaches it). Everything the task sees is then put in on purpose.
absl::Status StageRoot() {
  if (::mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") != 0) {
    return Errno("cannot mount the sandbox's root on", "/tmp");
  }
  const std::string old = absl::StrCat("/tmp", kOldRoot);
  if (::mkdir(old.c_str(), 0700) != 0) return Errno("cannot create", old);
  const char* put_old = kOldRoot + 1;  // relative to the new root, our cwd
  if (::chdir("/tmp") != 0 || ::syscall(SYS_pivot_root, ".", put_old) != 0 || ::chdir("/") != 0) {
    return Errno("cannot make the sandbox's root of", "/tmp");
  }
  return absl::OkStatus();
}

// Shows the host's `path` at the same place, read-only, with what is mounted below it; a
// symbolic link (/bin -> usr/bin) is made again as the same link. Absent on the host: skipped.
absl::Status ShowHostPath(const std::string& path) {
  const std::string host = kOldRoot + path;
  struct stat st;
  if (::lstat(host.c_str(), &st) != 0) return absl::OkStatus();
  if (S_ISLNK(st.st_mode)) {
    if (Exists(path)) return absl::OkStatus();
    std::error_code ec;
    const auto to = std::filesystem::read_symlink(host, ec);
    if (ec) return absl::InternalError(absl::StrCat("cannot read the link ", path));
    if (absl::Status s = MakeDirs(std::filesystem::path(path).parent_path()); !s.ok()) return s;
    if (::symlink(to.c_str(), path.c_str()) != 0) return Errno("cannot create", path);
    return absl::OkStatus();
  }
  if (absl::Status s = MakeMountPoint(path, S_ISDIR(st.st_mode)); !s.ok()) return s;
  if (::mount(host.c_str(), path.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0) {
    return Errno("cannot show", path);
  }
  return SetAttr(path, kAttrRdonly | kAttrNosuid | kAttrNodev, 0, /*recursive=*/true);
}

// Covers a hidden path: a dir by an empty read-only tmpfs, anything else by /dev/null.
absl::Status Cover(const std::string& path, bool dir) {
  if (dir) return Tmpfs(path, "0755");
  if (::mount("/dev/null", path.c_str(), nullptr, MS_BIND, nullptr) != 0) {
    return Errno("cannot hide", path);
  }
  return SetAttr(path, kAttrRdonly | kAttrNosuid, 0, false);
}

}  // namespace

absl::StatusOr<Sources> OpenSources(const Config& c) {
  Sources out;
  auto slot = Open(c.slot_dir, /*required=*/true);
  if (!slot.ok()) return slot.status();
  out.slot = *slot;
  std::vector<Source>& devices = out.devices;
  std::vector<Source>& ro = out.ro;
  const std::vector<std::string> base_devices = BaseDevices();  // always the host's own
  for (const auto& d : c.devices) {
    const bool base = std::find(base_devices.begin(), base_devices.end(), d) != base_devices.end();
    auto s = Open(base ? d : c.device_root + d, /*required=*/false);
    if (!s.ok()) return s.status();
    s->target = d;
    devices.push_back(*s);
  }
  for (const auto& p : c.ro_binds) {
    auto s = Open(p, /*required=*/false);
    if (!s.ok()) return s.status();
    ro.push_back(*s);
  }
  for (const auto& p : c.writable) {
    auto s = Open(p, /*required=*/true);
    if (!s.ok()) return s.status();
    out.rw.push_back(*s);
  }
  return out;
}

absl::Status ApplyMounts(const Config& c, Sources& sources) {
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    return Errno("cannot make private", "/");
  }
  if (absl::Status st = SetAttr("/", kAttrRdonly | kAttrNosuid, 0, /*recursive=*/true); !st.ok()) {
    return st;
  }
  if (absl::Status st = StageRoot(); !st.ok()) return st;
  for (const auto& p : c.show) {
    if (absl::Status st = ShowHostPath(p); !st.ok()) return st;
  }
  // Empty, as on a machine without them: programs that look there find nothing.
  for (const char* d : {"/proc", "/home", "/root", "/run", "/mnt", "/media", "/srv", "/var"}) {
    if (absl::Status st = MakeDirs(d); !st.ok()) return st;
  }
  if (absl::Status st = MakeDev(sources.devices); !st.ok()) return st;
  // Covers, outermost first; one inside another is already covered.
  std::map<std::string, bool> covers;  // path -> writable (scratch)
  for (const auto& p : c.hide) covers.emplace(p, false);
  for (const auto& p : c.scratch) covers[p] = true;
  std::vector<std::string> mounted, hidden;
  for (const auto& [path, writable] : covers) {
    if (std::any_of(mounted.begin(), mounted.end(),
                    [&](const std::string& m) { return Under(path, m); })) {
      continue;
    }
    struct stat st;
    const bool there = ::stat(path.c_str(), &st) == 0;
    if (!there && !writable) continue;
    if (writable) {
      if (absl::Status s = MakeDirs(path); !s.ok()) return s;
      if (absl::Status s = Tmpfs(path, "1777", c.scratch_bytes); !s.ok()) return s;
    } else if (absl::Status s = Cover(path, S_ISDIR(st.st_mode)); !s.ok()) {
      return s;
    }
    mounted.push_back(path);
    if (!writable && S_ISDIR(st.st_mode)) hidden.push_back(path);
  }
  sources.slot.target = c.slot_dir;
  if (absl::Status st = Bind(sources.slot, /*writable=*/false); !st.ok()) return st;
  for (const Source& s : sources.rw) {
    if (absl::Status st = Bind(s, /*writable=*/true); !st.ok()) return st;
  }
  for (const Source& s : sources.ro) {
    if (absl::Status st = Bind(s, /*writable=*/false); !st.ok()) return st;
  }
  for (const auto& h : hidden) {
    if (absl::Status st = SetAttr(h, kAttrRdonly, 0, false); !st.ok()) return st;
  }
  if (absl::Status st = SetAttr("/dev", kAttrRdonly, 0, false); !st.ok()) return st;
  return absl::OkStatus();
}

Sources::~Sources() {
  for (const Source& s : devices) ::close(s.fd);
  for (const Source& s : ro) ::close(s.fd);
  for (const Source& s : rw) ::close(s.fd);
  if (slot.fd >= 0) ::close(slot.fd);
}

absl::Status MountProc() {
  if (::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
    return Errno("cannot mount the sandbox's own", "/proc");
  }
  // The host's root goes for good; the task's root (a tmpfs of ours) is then made read-only.
  if (::umount2(kOldRoot, MNT_DETACH) != 0) return Errno("cannot detach", kOldRoot);
  if (::rmdir(kOldRoot) != 0) return Errno("cannot remove", kOldRoot);
  return SetAttr("/", kAttrRdonly | kAttrNosuid | kAttrNodev, 0, /*recursive=*/false);
}

absl::Status BringUpLoopback() {
  const int s = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) return Errno("cannot open a socket for", "lo");
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
  int rc = ::ioctl(s, SIOCGIFFLAGS, &ifr);
  if (rc == 0) {
    ifr.ifr_flags |= IFF_UP;
    rc = ::ioctl(s, SIOCSIFFLAGS, &ifr);
  }
  const int err = errno;
  ::close(s);
  errno = err;
  return rc == 0 ? absl::OkStatus() : Errno("cannot bring up", "lo");
}

std::vector<std::string> VisiblePaths(const std::vector<std::string>& extra) {
  std::set<std::string> out = {"/usr",
                               "/bin",
                               "/sbin",
                               "/lib",
                               "/lib32",
                               "/lib64",
                               "/libx32",
                               "/etc",
                               "/opt",
                               "/sys",
                               "/var/cache/fontconfig",
                               "/var/lib/texmf"};
  for (const auto& p : extra) {
    const std::string clean = std::filesystem::path(p).lexically_normal().string();
    if (!clean.empty() && clean[0] == '/' && clean != "/") out.insert(clean);
  }
  return {out.begin(), out.end()};
}

std::vector<std::string> HiddenPaths(const std::string& work_dir, const std::string& home,
                                     const std::vector<std::string>& other_homes,
                                     const std::vector<std::string>& visible) {
  // Secrets of the system inside /etc: readable by root only, hidden all the same.
  std::set<std::string> out = {"/etc/shadow",      "/etc/shadow-",
                               "/etc/gshadow",     "/etc/gshadow-",
                               "/etc/sudoers",     "/etc/sudoers.d",
                               "/etc/ssl/private", "/etc/krb5.keytab",
                               "/etc/wireguard",   "/etc/NetworkManager/system-connections"};
  auto add = [&](const std::string& p) {
    const std::string clean = std::filesystem::path(p).lexically_normal().string();
    // A "home" at / or a system dir (daemons' homes: /bin, /usr/sbin...) is not hidden
    // wholesale: only real dirs below the first level, and only where a task could see them.
    if (clean.empty() || clean[0] != '/' || std::count(clean.begin(), clean.end(), '/') < 2) return;
    for (const char* sys : {"/bin", "/sbin", "/usr", "/lib", "/etc", "/dev", "/proc", "/sys"}) {
      if (Under(clean, sys)) return;
    }
    if (std::any_of(visible.begin(), visible.end(),
                    [&](const std::string& v) { return Under(clean, v); })) {
      out.insert(clean);
    }
  };
  // The worker's work dir (its identity, its key) is hidden wherever it lies in what a task sees,
  // a system dir too (e.g. /usr/local/var/idlepool).
  const std::string work = std::filesystem::path(work_dir).lexically_normal().string();
  if (!work.empty() && work[0] == '/' && work != "/" &&
      std::any_of(visible.begin(), visible.end(),
                  [&](const std::string& v) { return Under(work, v); })) {
    out.insert(work);
  }
  add(home);
  for (const auto& h : other_homes) add(h);
  return {out.begin(), out.end()};
}

std::vector<std::string> BaseDevices() {
  return {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"};
}

}  // namespace idlepool::sandbox
