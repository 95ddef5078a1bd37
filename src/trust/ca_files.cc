#include "trust/ca_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace idlepool::trust {
namespace {

// Reading fails with kDataLoss (the CA is there but unusable), writing with kFailedPrecondition
// (the data dir needs fixing).
absl::Status Errno(const std::string& what, const std::string& path, int err,
                   absl::StatusCode code = absl::StatusCode::kDataLoss) {
  return absl::Status(code, absl::StrCat(what, " ", path, ": ", std::strerror(err)));
}
absl::Status WriteErrno(const std::string& what, const std::string& path, int err) {
  return Errno(what, path, err, absl::StatusCode::kFailedPrecondition);
}

// Closes the descriptor on every path out.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// Writes `data` to `path` (mode `mode`, replacing any file there) and syncs it.
absl::Status WriteSynced(const std::string& path, const std::string& data, mode_t mode) {
  Fd f{::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode)};
  if (f.fd < 0) return WriteErrno("cannot create", path, errno);
  // A leftover file keeps its old mode through O_TRUNC.
  if (::fchmod(f.fd, mode) != 0) return WriteErrno("cannot chmod", path, errno);
  for (size_t done = 0; done < data.size();) {
    const ssize_t n = ::write(f.fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return WriteErrno("cannot write", path, errno);
    done += static_cast<size_t>(n);
  }
  if (::fsync(f.fd) != 0) return WriteErrno("cannot sync", path, errno);
  const int fd = f.fd;
  f.fd = -1;
  if (::close(fd) != 0) return WriteErrno("cannot close", path, errno);
  return absl::OkStatus();
}

absl::Status SyncDir(const std::string& dir) {
  Fd f{::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (f.fd < 0 || ::fsync(f.fd) != 0) return WriteErrno("cannot sync", dir, errno);
  return absl::OkStatus();
}

}  // namespace

CaFiles CaFilesIn(const std::string& dir) {
  return CaFiles{dir, absl::StrCat(dir, "/ca.key"), absl::StrCat(dir, "/ca.pem")};
}

absl::StatusOr<bool> FileExists(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) return true;
  if (errno == ENOENT) return false;
  return Errno("cannot stat", path, errno);
}

absl::StatusOr<std::string> ReadCaFile(const std::string& path) {
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) return Errno("cannot open", path, errno);
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(f.fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Errno("cannot read", path, errno);
    if (n == 0) return out;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > (1 << 20)) return absl::DataLossError(absl::StrCat(path, " is too big"));
  }
}

absl::Status WriteCaFiles(const CaFiles& files, const std::string& key_pem,
                          const std::string& cert_pem) {
  if (::mkdir(files.dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return WriteErrno("cannot create", files.dir, errno);
  }
  const std::string key_tmp = files.key_path + ".tmp", cert_tmp = files.cert_path + ".tmp";
  if (absl::Status s = WriteSynced(key_tmp, key_pem, 0600); !s.ok()) return s;
  if (absl::Status s = WriteSynced(cert_tmp, cert_pem, 0644); !s.ok()) return s;
  if (::rename(key_tmp.c_str(), files.key_path.c_str()) != 0) {
    return WriteErrno("cannot rename to", files.key_path, errno);
  }
  if (::rename(cert_tmp.c_str(), files.cert_path.c_str()) != 0) {
    return WriteErrno("cannot rename to", files.cert_path, errno);
  }
  return SyncDir(files.dir);
}

}  // namespace idlepool::trust
