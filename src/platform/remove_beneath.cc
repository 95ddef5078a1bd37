#include "platform/remove_beneath.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "platform/beneath.h"

namespace idlepool::platform {
namespace {

absl::Status Failure(const std::string& name, int err) {
  return absl::InternalError(absl::StrCat("cannot remove '", name, "': ", std::strerror(err)));
}

absl::Status RemoveBelow(int dir_fd, int depth);

// Empties and removes subdirectory `name` of `dir_fd`; a link swapped in meanwhile is unlinked.
absl::Status RemoveDirectory(int dir_fd, const std::string& name, int depth) {
  absl::Status st;
  ::fchmodat(dir_fd, name.c_str(), S_IRWXU, AT_SYMLINK_NOFOLLOW);  // fails on a link: fine
  const int sub = ::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (sub >= 0) {
    st = RemoveBelow(sub, depth + 1);
    ::close(sub);
  }
  if (::unlinkat(dir_fd, name.c_str(), AT_REMOVEDIR) == 0 || errno == ENOENT) return st;
  if (errno == ENOTDIR && ::unlinkat(dir_fd, name.c_str(), 0) == 0) return st;
  return st.ok() ? Failure(name, errno) : st;
}

absl::Status RemoveBelow(int dir_fd, int depth) {
  if (depth >= kMaxRemoveDepth) {
    return absl::OutOfRangeError(absl::StrCat("more than ", kMaxRemoveDepth, " levels"));
  }
  absl::StatusOr<std::vector<DirEntry>> entries = ListDirectory(dir_fd);
  if (!entries.ok()) return entries.status();
  absl::Status first;
  for (const DirEntry& e : *entries) {
    absl::Status st;
    if (e.kind == EntryKind::kDirectory) {
      st = RemoveDirectory(dir_fd, e.name, depth);
    } else if (::unlinkat(dir_fd, e.name.c_str(), 0) != 0 && errno != ENOENT) {
      st = errno == EISDIR ? RemoveDirectory(dir_fd, e.name, depth) : Failure(e.name, errno);
    }
    if (first.ok()) first = st;
  }
  return first;
}

}  // namespace

absl::Status RemoveContentsBeneath(int dir_fd) { return RemoveBelow(dir_fd, 0); }

}  // namespace idlepool::platform
