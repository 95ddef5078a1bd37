#include "platform/task_child.h"

#include <fcntl.h>
#include <linux/keyctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace idlepool::platform {

int CloseOnExecAbove2() {
  if (::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) == 0) return 0;
  struct rlimit rl {};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return errno;
  constexpr rlim_t kMaxFds = rlim_t{1} << 20;  // the most the worker ever raises its limit to
  const rlim_t end = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > kMaxFds ? kMaxFds : rl.rlim_max;
  for (rlim_t fd = 3; fd < end; ++fd) {
    ::fcntl(static_cast<int>(fd), F_SETFD, FD_CLOEXEC);  // EBADF for the closed ones
  }
  return 0;
}

int JoinNewSessionKeyring() {
  if (::syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, nullptr) >= 0) return 0;
  if (errno == ENOSYS || errno == EPERM) return 0;
  return errno;
}

}  // namespace idlepool::platform
