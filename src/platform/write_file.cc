#include "platform/write_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace idlepool::platform {
namespace {

absl::Status Failed(const std::string& what, const std::string& path, int err) {
  return absl::FailedPreconditionError(absl::StrCat(what, " ", path, ": ", std::strerror(err)));
}

}  // namespace

absl::Status WriteFileAtomically(const std::string& path, const std::string& data, mode_t mode) {
  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return Failed("cannot create", tmp, errno);
  ::fchmod(fd, mode);  // O_CREAT's mode passes through the umask; an existing file keeps its own
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      return Failed("cannot write", tmp, err);
    }
    done += static_cast<size_t>(n);
  }
  const bool synced = ::fsync(fd) == 0;
  const int err = errno;
  ::close(fd);
  if (!synced) return Failed("cannot sync", tmp, err);
  if (::rename(tmp.c_str(), path.c_str()) != 0) return Failed("cannot rename to", path, errno);
  return absl::OkStatus();
}

}  // namespace idlepool::platform
